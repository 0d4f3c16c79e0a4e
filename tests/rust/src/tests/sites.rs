//! The sites around the dispatch: the Python binding's device, the per-backend test macro,
//! the backends' errors, the NN ops' hooks (host: the storage's method; GPU: the kernel's
//! launch wrapper, its arguments from the inputs' layout) and the capability predicates.
use super::{backend, devices, shape};
use crate::mock::MockStorage;
use crate::nn_ops::{RmsNorm, Sigmoid, SoftmaxLastDim};
use crate::python_device::PyDevice;
use crate::{CpuStorage, CustomOp1, CustomOp2, DType, Device, Error, Layout, Result};
use pyo3::prelude::*;

const NAMES: [&str; 4] = ["cpu", "cuda", "rocm", "metal"];

fn py(name: &str) -> PyAny {
    PyAny(name.to_owned())
}

#[test]
fn every_backend_name_round_trips_through_python() {
    for name in NAMES {
        let any = py(name);
        let device: PyDevice = Borrowed::new(&any).extract().unwrap();
        assert_eq!(device.name(), name);
        let back = Python::with_gil(|p| device.into_pyobject(p).map(|b| b.get().0.clone())).unwrap();
        assert_eq!(back, name);
    }
}

#[test]
fn an_unknown_device_name_is_a_type_error_listing_the_names() {
    let any = py("tpu");
    let err = Borrowed::new(&any).extract::<PyDevice>().unwrap_err();
    assert_eq!(err.kind, "PyTypeError");
    assert!(err.message.contains("'tpu'"), "{}", err.message);
    for name in NAMES {
        assert!(err.message.contains(name), "{name}: {}", err.message);
    }
}

#[test]
fn python_devices_are_the_compiled_devices_and_the_others_err() {
    for device in devices(false) {
        let b = backend(&device);
        let py_device = PyDevice::from_device(&device);
        assert_eq!(py_device.name(), b);
        let made = py_device.as_device().unwrap();
        assert!(made.same_device(&device), "{made:?} {device:?}");
        assert!(py_device.as_device().unwrap().same_device(&made), "the device is made once, then shared");
    }
    let compiled: Vec<&str> = devices(false).iter().map(backend).collect();
    for name in NAMES.iter().filter(|n| !compiled.contains(n)) {
        let any = py(name);
        let err = Borrowed::new(&any).extract::<PyDevice>().unwrap().as_device().unwrap_err();
        assert_eq!(err.kind, "PyValueError");
        assert!(err.message.contains("NotCompiledWith"), "{name}: {}", err.message);
    }
}

fn zeros_on(device: &Device) -> Result<()> {
    let s = device.zeros(&shape(&[2, 3]), DType::F32)?;
    assert!(s.device().same_device(device));
    Ok(())
}

test_device!(zeros_on);

#[cfg(every_backend_mocked)]
fn ones_like_zeros(device: &Device) -> Result<()> {
    zeros_on(device)
}

// the form candle's tests call, one name per backend (the registry's and the profile's order)
#[cfg(every_backend_mocked)]
test_device!(ones_like_zeros, ones_cpu, ones_cuda, ones_rocm, ones_metal);

#[test]
#[allow(clippy::vec_init_then_push)] // one push per backend compiled
fn a_backend_whose_feature_is_off_answers_not_compiled() {
    #[cfg(not(feature = "cuda"))]
    assert_eq!(Device::new_cuda(0).unwrap_err(), Error::NotCompiledWithCudaSupport);
    #[cfg(not(feature = "rocm"))]
    assert_eq!(Device::new_rocm(0).unwrap_err(), Error::NotCompiledWithRocmSupport);
    #[cfg(not(feature = "metal"))]
    assert_eq!(Device::new_metal(0).unwrap_err(), Error::NotCompiledWithMetalSupport);
    let failure = crate::mock::BackendFailure("out of memory".into());
    #[allow(unused_mut)] // cpu alone: no backend error to wrap
    let mut wrapped: Vec<(Error, &str)> = vec![];
    #[cfg(feature = "cuda")]
    wrapped.push((Error::Cuda(failure.clone()), "Cuda(BackendFailure(\"out of memory\"))"));
    #[cfg(feature = "rocm")]
    wrapped.push((Error::Rocm(failure.clone()), "Rocm(BackendFailure(\"out of memory\"))"));
    #[cfg(feature = "metal")]
    wrapped.push((Error::Metal(failure.clone()), "Metal(BackendFailure(\"out of memory\"))"));
    for (err, debug) in wrapped {
        assert_eq!(format!("{err:?}"), debug);
    }
    drop(failure);
}

#[test]
fn accelerators_are_every_backend_but_the_host() {
    for device in devices(true) {
        assert_eq!(device.is_accelerator(), backend(&device) != "cpu", "{device:?}");
    }
}

fn cpu(dtype: DType, n: usize) -> CpuStorage {
    MockStorage { device: crate::CpuDevice, dtype, len: n, calls: vec![] }
}

#[test]
fn the_host_hooks_call_the_host_storage() {
    let l = Layout::contiguous(&[2, 3]);
    let (out, shape_out) = SoftmaxLastDim.cpu_fwd(&cpu(DType::F32, 6), &l).unwrap();
    assert_eq!(out.calls, vec!["cpu.softmax_last_dim"]);
    assert_eq!(shape_out, shape(&[2, 3]));
    let err = Sigmoid.cpu_fwd(&cpu(DType::F32, 6), &l).unwrap_err();
    assert_eq!(err, Error::NotImplementedForBackend { op: "sigmoid", backend: "cpu" });
    let err = RmsNorm { eps: 1e-5 }.cpu_fwd(&cpu(DType::F32, 6), &l, &cpu(DType::F32, 3), &l).unwrap_err();
    assert_eq!(err, Error::NotImplementedForBackend { op: "rms_norm", backend: "cpu" });
}

#[cfg(any(feature = "cuda", feature = "rocm"))]
mod launches {
    use super::*;
    use crate::launch::KernelArg;
    use crate::nn_mock::take_launches;
    use crate::nn_ops::{LayerNorm, RotaryEmb, RotaryEmbThd, Sdpa};
    use crate::CustomOp3;

    /// The launch hooks of one HIP backend, checked with its storage type.
    macro_rules! hip_backend_launches {
        ($module:ident, $storage:ty, $device:expr, $fwd1:ident, $fwd2:ident, $fwd3:ident, $name:expr) => {
            mod $module {
                use super::*;

                fn gpu(dtype: DType, n: usize) -> $storage {
                    MockStorage { device: $device, dtype, len: n, calls: vec![] }
                }

                fn ptr(offset: u64) -> KernelArg {
                    KernelArg::Ptr(0x1000 + 8 * offset)
                }

                #[test]
                fn rms_norm_launches_its_kernel_over_rows_of_the_last_dim() {
                    let (x, alpha) = (Layout::contiguous(&[2, 3, 4]), Layout::contiguous(&[4]));
                    take_launches();
                    for (dtype, kernel) in [(DType::F32, "rms_norm_f32"), (DType::BF16, "rms_norm_bf16")] {
                        let (out, s) = RmsNorm { eps: 0.25 }.$fwd2(&gpu(dtype, 24), &x, &gpu(dtype, 4), &alpha).unwrap();
                        assert_eq!((out.dtype, out.len, s), (dtype, 24, shape(&[2, 3, 4])));
                        let args = vec![KernelArg::Usize(6), KernelArg::Usize(4), KernelArg::F64(0.25), ptr(0), ptr(0), KernelArg::Ptr(0x8000)];
                        assert_eq!(take_launches(), vec![(kernel, args)]);
                    }
                    let err = RmsNorm { eps: 0.25 }.$fwd2(&gpu(DType::U8, 24), &x, &gpu(DType::U8, 4), &alpha).unwrap_err();
                    assert_eq!(err, Error::UnsupportedDTypeForOp(DType::U8, "rms_norm"));
                    let transposed = Layout::strided(&[2, 4, 3], vec![12, 1, 4], 0);
                    let err = RmsNorm { eps: 0.25 }.$fwd2(&gpu(DType::F32, 24), &transposed, &gpu(DType::F32, 4), &alpha).unwrap_err();
                    assert!(matches!(&err, Error::Msg(m) if m.contains("contiguous")), "{err:?}");
                    assert!(take_launches().is_empty());
                }

                #[test]
                fn rope_kernels_get_the_dims_of_their_layouts() {
                    let (x, cs) = (Layout::contiguous(&[2, 3, 5, 8]), Layout::contiguous(&[5, 4]));
                    let (g, c) = (gpu(DType::F16, 240), gpu(DType::F16, 20));
                    take_launches();
                    RotaryEmb.$fwd3(&g, &x, &c, &cs, &c, &cs).unwrap();
                    RotaryEmbThd.$fwd3(&g, &x, &c, &cs, &c, &cs).unwrap();
                    let out = KernelArg::Ptr(0x8000);
                    let rope = vec![KernelArg::Usize(6), KernelArg::Usize(40), KernelArg::Usize(8), ptr(0), ptr(0), ptr(0), out];
                    let thd = vec![KernelArg::Usize(2), KernelArg::Usize(3), KernelArg::Usize(5), KernelArg::Usize(8), ptr(0), ptr(0), ptr(0), out];
                    assert_eq!(take_launches(), vec![("rope_f16", rope), ("rope_thd_f16", thd)]);
                }

                #[test]
                fn sigmoid_reads_any_layout_through_its_info() {
                    let offset = Layout::strided(&[3, 4], vec![1, 3], 5);
                    take_launches();
                    let (out, _) = Sigmoid.$fwd1(&gpu(DType::F64, 20), &offset).unwrap();
                    assert_eq!(out.len, 12);
                    let args = vec![KernelArg::Usize(12), KernelArg::Usize(2), KernelArg::Ptr(0xf000), ptr(5), KernelArg::Ptr(0x8000)];
                    assert_eq!(take_launches(), vec![("sigmoid_f64", args)]);
                }

                #[test]
                fn ops_of_several_launches_call_the_storage() {
                    let l = Layout::contiguous(&[1, 2, 4, 8]);
                    let g = gpu(DType::F32, 64);
                    let err = Sdpa { scale: 0.5, causal: true }.$fwd3(&g, &l, &g, &l, &g, &l).unwrap_err();
                    assert_eq!(err, Error::NotImplementedForBackend { op: "sdpa", backend: $name });
                    let norm = LayerNorm { eps: 1e-5 }.$fwd3(&g, &l, &g, &l, &g, &l);
                    assert!(norm.is_ok());
                    assert_eq!(take_launches()[0].0, "layer_norm_f32");
                }
            }
        };
    }

    #[cfg(feature = "cuda")]
    hip_backend_launches!(cuda, crate::CudaStorage, crate::CudaDevice { ordinal: 0 }, cuda_fwd, cuda_fwd, cuda_fwd, "cuda");
    #[cfg(feature = "rocm")]
    hip_backend_launches!(rocm, crate::RocmStorage, crate::RocmDevice { ordinal: 0 }, rocm_fwd, rocm_fwd, rocm_fwd, "rocm");
}

#[cfg(feature = "metal")]
#[test]
fn metal_hooks_call_the_metal_storage_and_launch_nothing() {
    let l = Layout::contiguous(&[2, 3]);
    crate::nn_mock::take_launches();
    let m: crate::MetalStorage = MockStorage { device: crate::MetalDevice { ordinal: 0 }, dtype: DType::F32, len: 6, calls: vec![] };
    let (out, _) = SoftmaxLastDim.metal_fwd(&m, &l).unwrap();
    assert_eq!(out.calls, vec!["metal.softmax_last_dim"]);
    assert!(crate::nn_mock::take_launches().is_empty());
}

#[test]
fn host_values_are_borrowed_on_the_host_and_copied_from_a_device() {
    for device in devices(false) {
        let storage = super::zeros(&device, DType::F32);
        let host = storage.to_cpu_storage().unwrap();
        let b = backend(&device);
        match (&host, b) {
            (std::borrow::Cow::Borrowed(_), "cpu") => {}
            (std::borrow::Cow::Owned(copied), _) if b != "cpu" => {
                assert_eq!(copied.calls.last().unwrap(), &format!("{b}.to_cpu_storage"), "{device:?}");
            }
            _ => panic!("{b}: {host:?}"),
        }
        assert_eq!(host.dtype, DType::F32);
    }
}

#[test]
fn locations_print_as_python_names_devices() {
    assert_eq!(Device::Cpu.location().to_string(), "cpu");
    for device in devices(true).into_iter().skip(1) {
        let b = backend(&device);
        let debug = format!("{:?}", device.location()); // Cuda { gpu_id: 1 }
        let gpu_id: String = debug.chars().filter(char::is_ascii_digit).collect();
        assert_eq!(device.location().to_string(), format!("{b}:{gpu_id}"));
    }
}
