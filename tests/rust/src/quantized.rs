//! As candle-core's quantized/mod.rs would hold it: the GGML formats (GgmlDType) and the
//! backend dispatch (QStorage and the Device methods that make one), both generated.
#[path = "../../../generated/rust/quantized.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
mod dispatch;
pub use dispatch::{GgmlDType, QStorage};

/// candle-core's quantized tensor, as far as its generated custom op reads it: the blocks and
/// the weight's shape (n, k).
pub struct QTensor {
    storage: QStorage,
    shape: crate::Shape,
}

impl QTensor {
    pub fn new(storage: QStorage, shape: crate::Shape) -> Self {
        Self { storage, shape }
    }
}

// QTensor's CustomOp1 (generated), a child module as in candle-core: it reads QTensor's fields
#[path = "../../../generated/rust/qtensor_op.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
mod qtensor_op;
