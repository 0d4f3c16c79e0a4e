//! As candle-core's quantized/mod.rs would hold it: the GGML formats by hand, the backend
//! dispatch (QStorage and the Device methods that make one) generated.
#[path = "../../../generated/rust/quantized.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
mod dispatch;
pub use dispatch::QStorage;

/// The GGML block formats of the registry (ops.yaml `quantized:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgmlDType {
    F32,
    F16,
    BF16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2K,
    Q3K,
    Q4K,
    Q5K,
    Q6K,
    Q8K,
}
