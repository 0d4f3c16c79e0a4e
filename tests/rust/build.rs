//! What the crate takes from the generated Rust beyond the files lib.rs names, so that a
//! backend just added to the registry (`gen new-backend`) compiles before the crate has a mock
//! of it: the backends the generated code names in `#[cfg(feature = "...")]` are expected cfg
//! values, and a backend with a generated dummy (generated/rust/dummy_<name>_backend.rs) but no
//! mock here (src/<name>_backend.rs) gets the dummy as its module and `<name>_is_available()`
//! answering false (written to OUT_DIR, included by lib.rs and utils.rs).
use std::{env, fs, path::Path};

fn main() {
    let crate_dir = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap()).to_path_buf();
    let generated = crate_dir.join("../../generated/rust").canonicalize().expect("generated/rust: run gen");
    println!("cargo::rerun-if-changed={}", generated.display());
    println!("cargo::rerun-if-changed=src");
    let mut features: Vec<String> = Vec::new();
    let mut unmocked: Vec<String> = Vec::new();
    let mut files: Vec<_> = fs::read_dir(&generated).unwrap().flatten().map(|e| e.path()).collect();
    files.sort();
    for path in files {
        let text = fs::read_to_string(&path).unwrap_or_default();
        for piece in text.split("feature = \"").skip(1) {
            if let Some(end) = piece.find('"') {
                if !features.iter().any(|n| n == &piece[..end]) {
                    features.push(piece[..end].to_string());
                }
            }
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if let Some(backend) = name.strip_prefix("dummy_").and_then(|n| n.strip_suffix("_backend.rs")) {
            if !crate_dir.join("src").join(format!("{backend}_backend.rs")).exists() {
                unmocked.push(backend.to_string());
            }
        }
    }
    features.sort();
    let values: Vec<String> = features.iter().map(|n| format!("\"{n}\"")).collect();
    println!("cargo::rustc-check-cfg=cfg(feature, values({}))", values.join(", "));
    let out = Path::new(&env::var("OUT_DIR").unwrap()).to_path_buf();
    let modules: String = unmocked
        .iter()
        .map(|b| format!("#[path = {:?}]\npub mod {b}_backend;\n", generated.join(format!("dummy_{b}_backend.rs"))))
        .collect();
    let available: String = unmocked.iter().map(|b| format!("pub fn {b}_is_available() -> bool {{\n    false\n}}\n")).collect();
    fs::write(out.join("unmocked_backends.rs"), modules).unwrap();
    fs::write(out.join("unmocked_utils.rs"), available).unwrap();
    let errors: String = unmocked
        .iter()
        .map(|b| {
            let camel: String = b.split('_').map(|w| w[..1].to_uppercase() + &w[1..]).collect();
            format!("    #[allow(non_upper_case_globals)]\n    pub const NotCompiledWith{camel}Support: Error = Error::NotCompiledWith({b:?});\n")
        })
        .collect();
    fs::write(out.join("unmocked_errors.rs"), format!("impl Error {{\n{errors}}}\n")).unwrap();
}
