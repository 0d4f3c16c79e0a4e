//! As candle-core's quantized/mod.rs would hold it: the GGML formats by hand, the backend
//! dispatch (QStorage and the Device methods that make one) generated.
#[path = "../../../generated/rust/quantized.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
mod dispatch;
pub use dispatch::QStorage;

/// The GGML block formats of the registry (ops.yaml `quantized:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgmlDType {
    Q4_0,
    Q4_1,
    Q8_0,
    Q4K,
    Q6K,
}

impl GgmlDType {
    /// Values a block holds (ops.yaml `quantized: <format>: block`).
    pub fn block_size(&self) -> usize {
        match self {
            Self::Q4_0 | Self::Q4_1 | Self::Q8_0 => 32,
            Self::Q4K | Self::Q6K => 256,
        }
    }
}
