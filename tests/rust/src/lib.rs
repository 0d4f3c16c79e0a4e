//! The crate layout opgen's Rust output expects, as candle-core has it: core types at the
//! root (`core.rs`, hand-written here), the backend traits in `backend` (generated), each
//! backend's types in `<backend>_backend` (mock storages that record the calls they get, or
//! the generated dummy where the backend's feature is off), and the generated files as modules. The tests are in `tests/`.
#![deny(warnings)]

// candle's other crates (candle-nn, candle-pyo3) name candle-core `candle`; so does the
// generated code meant for them (python_device.rs)
extern crate self as candle;

#[path = "../../../generated/rust/backend_error.rs"]
#[macro_use]
mod backend_error;
#[path = "../../../generated/rust/test_device.rs"]
#[macro_use]
mod test_device;

#[path = "../../../generated/rust/backend.rs"]
pub mod backend;
pub mod conv;
mod core;
pub mod op;
pub mod scalar;

pub use crate::core::{DType, Error, FloatDType, Layout, NdArray, Result, Shape, WithDType};
pub mod utils;

pub mod cpu_backend;
#[cfg(feature = "cuda")]
pub mod cuda_backend;
// with the feature off, the backend's dummy (generated): every enum keeps its variant
#[cfg(not(feature = "cuda"))]
#[path = "../../../generated/rust/dummy_cuda_backend.rs"]
pub mod cuda_backend;
#[cfg(feature = "metal")]
pub mod metal_backend;
// with the feature off, the backend's dummy (generated): every enum keeps its variant
#[cfg(not(feature = "metal"))]
#[path = "../../../generated/rust/dummy_metal_backend.rs"]
pub mod metal_backend;
#[cfg(feature = "rocm")]
pub mod rocm_backend;
// with the feature off, the backend's dummy (generated): every enum keeps its variant
#[cfg(not(feature = "rocm"))]
#[path = "../../../generated/rust/dummy_rocm_backend.rs"]
pub mod rocm_backend;
// A backend of the registry with no mock here yet: its generated dummy (see build.rs).
include!(concat!(env!("OUT_DIR"), "/unmocked_backends.rs"));
pub mod mock;

#[path = "../../../generated/rust/backends.rs"]
mod backends;
pub use backends::*;

#[path = "../../../generated/rust/custom_op.rs"]
mod custom_op;
pub use custom_op::{CustomOp1, CustomOp2, CustomOp3, InplaceOp1, InplaceOp2, InplaceOp3};

#[path = "../../../generated/rust/device.rs"]
mod device;
pub use device::{Device, DeviceLocation};

#[path = "../../../generated/rust/storage.rs"]
mod storage;
pub use storage::Storage;

#[path = "../../../generated/rust/to_device.rs"]
mod to_device;

pub mod quantized;

#[path = "../../../generated/rust/comm.rs"]
#[rustfmt::skip] // generated: `gen --check` owns its layout
mod comm;
pub use comm::{Comm, CommBackend, Reduction};

#[path = "../../../generated/rust/launch.rs"]
pub mod launch;

#[path = "../../../generated/rust/nn_ops.rs"]
pub mod nn_ops;
pub mod nn_mock;
pub mod ug;

// candle-pyo3's device, over the pyo3 stand-in beside this crate
#[path = "../../../generated/rust/python_device.rs"]
pub mod python_device;

#[path = "../../../generated/rust/switches.rs"]
pub mod switches;

#[cfg(test)]
mod tests;
