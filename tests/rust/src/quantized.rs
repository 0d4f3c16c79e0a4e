//! As candle-core's quantized/mod.rs would hold it: the GGML formats (GgmlDType) and the
//! backend dispatch (QStorage and the Device methods that make one), both generated.
#[path = "../../../generated/rust/quantized.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
mod dispatch;
pub use dispatch::{GgmlDType, QStorage};
