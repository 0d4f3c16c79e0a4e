//! The backends the generated Rust names in `#[cfg(feature = "...")]` are expected cfg values,
//! whether or not this crate declares them as features: a backend just added to the registry
//! (`gen new-backend`) compiles with its arms left out until the crate has a mock of it.
use std::{env, fs, path::Path};

fn main() {
    let generated = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).join("../../generated/rust");
    println!("cargo::rerun-if-changed={}", generated.display());
    let mut names: Vec<String> = Vec::new();
    for entry in fs::read_dir(&generated).expect("generated/rust: run gen").flatten() {
        let text = fs::read_to_string(entry.path()).unwrap_or_default();
        for piece in text.split("feature = \"").skip(1) {
            if let Some(end) = piece.find('"') {
                let name = &piece[..end];
                if !names.iter().any(|n| n == name) {
                    names.push(name.to_string());
                }
            }
        }
    }
    names.sort();
    let values: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    println!("cargo::rustc-check-cfg=cfg(feature, values({}))", values.join(", "));
}
