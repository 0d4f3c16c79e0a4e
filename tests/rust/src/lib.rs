//! The crate layout opgen's Rust output expects, as candle-core has it: core types at the
//! root (`core.rs`, hand-written here), the backend traits in `backend`, each backend's
//! types in `<backend>_backend` (mock storages that record the calls they get), and the
//! generated files as modules. The tests are in `tests/`.
#![deny(warnings)]

pub mod backend;
pub mod conv;
mod core;
pub mod op;
pub mod scalar;

pub use crate::core::{DType, Error, Layout, Result, Shape, WithDType};

pub mod cpu_backend;
#[cfg(feature = "cuda")]
pub mod cuda_backend;
#[cfg(feature = "rocm")]
pub mod rocm_backend;
mod mock;

#[path = "../../../generated/rust/backends.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
mod backends;
pub use backends::*;

#[path = "../../../generated/rust/custom_op.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
mod custom_op;
pub use custom_op::{CustomOp1, CustomOp2, CustomOp3, InplaceOp1, InplaceOp2, InplaceOp3};

#[path = "../../../generated/rust/device.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
mod device;
pub use device::{Device, DeviceLocation};

#[path = "../../../generated/rust/storage.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
mod storage;
pub use storage::Storage;

#[path = "../../../generated/rust/to_device.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
mod to_device;

pub mod quantized;

#[path = "../../../generated/rust/comm.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
mod comm;
pub use comm::{Comm, CommBackend, Reduction};

#[path = "../../../generated/rust/launch.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
pub mod launch;

#[cfg(test)]
mod tests;
