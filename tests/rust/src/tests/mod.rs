//! Tests of the generated dispatch against the mock backends, under whichever features the
//! crate is built with (cpu alone, each GPU backend alone, all).
mod candle_api;
mod comm;
mod custom_op;
mod device;
mod launch;
mod quantized;
mod storage;
mod switches;

use crate::mock::MockStorage;
use crate::{DType, Device, Layout, Shape, Storage};

/// One device of every backend compiled in, the host first; `second` adds a second device
/// of each numbered backend (cuda:1), for mismatches within a backend.
pub fn devices(second: bool) -> Vec<Device> {
    #[allow(unused_mut)] // cpu alone: nothing more to add
    let mut out = vec![Device::Cpu];
    for ordinal in 0..(if second { 2 } else { 1 }) {
        let _ = ordinal;
        #[cfg(feature = "cuda")]
        out.push(Device::Cuda(crate::CudaDevice { ordinal }));
        #[cfg(feature = "rocm")]
        out.push(Device::Rocm(crate::RocmDevice { ordinal }));
        #[cfg(feature = "metal")]
        out.push(Device::Metal(crate::MetalDevice { ordinal }));
    }
    out
}

/// The backend a device is of, as its mock storages record it.
pub fn backend(device: &Device) -> &'static str {
    match device {
        Device::Cpu => "cpu",
        #[cfg(feature = "cuda")]
        Device::Cuda(_) => "cuda",
        #[cfg(feature = "rocm")]
        Device::Rocm(_) => "rocm",
        #[cfg(feature = "metal")]
        Device::Metal(_) => "metal",
        #[allow(unreachable_patterns)] // every backend compiled: none is a dummy
        _ => unreachable!("a dummy backend makes no device"),
    }
}

/// The calls a storage's mock recorded, and the backend of the variant it sits in.
pub fn calls(storage: &Storage) -> (&'static str, &Vec<String>) {
    fn of<D>(m: &MockStorage<D>) -> &Vec<String> {
        &m.calls
    }
    match storage {
        Storage::Cpu(s) => ("cpu", of(s)),
        #[cfg(feature = "cuda")]
        Storage::Cuda(s) => ("cuda", of(s)),
        #[cfg(feature = "rocm")]
        Storage::Rocm(s) => ("rocm", of(s)),
        #[cfg(feature = "metal")]
        Storage::Metal(s) => ("metal", of(s)),
        #[allow(unreachable_patterns)] // every backend compiled: none is a dummy
        _ => unreachable!("a dummy backend makes no storage"),
    }
}

/// The variant's backend and the last call of the storage.
pub fn last(storage: &Storage) -> (&'static str, String) {
    let (b, calls) = calls(storage);
    (b, calls.last().cloned().unwrap_or_default())
}

pub fn shape(dims: &[usize]) -> Shape {
    Shape(dims.to_vec())
}

pub fn layout(dims: &[usize]) -> Layout {
    Layout::contiguous(dims)
}

pub fn zeros(device: &Device, dtype: DType) -> Storage {
    device.zeros(&shape(&[2, 3]), dtype).expect("zeros")
}
