//! Device methods reach the device's backend; location, same_device and is_<backend>.
use super::{backend, calls, devices, last, shape};
use crate::mock::SEEDS;
use crate::{DType, Device, DeviceLocation};

#[test]
fn every_device_method_reaches_the_device_backend() {
    let s = shape(&[4, 5]);
    for device in devices(true) {
        let b = backend(&device);
        let made = [
            (device.zeros(&s, DType::F16).unwrap(), "zeros"),
            // SAFETY: the mock storage holds no memory.
            (unsafe { device.alloc_uninit(&s, DType::F16) }.unwrap(), "alloc_uninit"),
            (device.rand_uniform_f64(-1.0, 2.0, &s, DType::F16).unwrap(), "rand_uniform:-1:2"),
            (device.rand_normal_f64(0.5, 3.0, &s, DType::F16).unwrap(), "rand_normal:0.5:3"),
        ];
        for (storage, call) in made {
            assert_eq!(last(&storage), (b, format!("{b}.{call}")));
            assert!(storage.device().same_device(&device), "{call} on {device:?}");
            assert_eq!(storage.dtype(), DType::F16);
        }
        let from = device.storage_from_slice(&[1i64, 2, 3]).unwrap();
        assert_eq!(last(&from), (b, format!("{b}.storage_from_slice")));
        assert_eq!(from.dtype(), DType::I64);
        SEEDS.with(|r| r.borrow_mut().clear());
        device.set_seed(42).unwrap();
        device.synchronize().unwrap();
        assert_eq!(SEEDS.with(|r| r.borrow().clone()), vec![format!("{b}.set_seed:42"), format!("{b}.synchronize")]);
        assert_eq!(device.supports_bf16(), b != "cpu");
        let _ = calls;
    }
}

#[test]
fn location_and_same_device_follow_the_backends() {
    let all = devices(true);
    for (i, a) in all.iter().enumerate() {
        for (j, b) in all.iter().enumerate() {
            assert_eq!(a.same_device(b), i == j, "{a:?} {b:?}");
            assert_eq!(a.location() == b.location(), i == j, "{a:?} {b:?}");
        }
    }
    assert_eq!(Device::Cpu.location(), DeviceLocation::Cpu);
    #[cfg(feature = "cuda")]
    assert_eq!(Device::Cuda(crate::CudaDevice { ordinal: 1 }).location(), DeviceLocation::Cuda { gpu_id: 1 });
    #[cfg(feature = "rocm")]
    assert_eq!(Device::Rocm(crate::RocmDevice { ordinal: 1 }).location(), DeviceLocation::Rocm { gpu_id: 1 });
    #[cfg(feature = "metal")]
    assert_eq!(Device::Metal(crate::MetalDevice { ordinal: 1 }).location(), DeviceLocation::Metal { gpu_id: 1 });
}

#[test]
fn is_backend_is_true_for_its_backend_only() {
    for device in devices(true) {
        let b = backend(&device);
        assert_eq!(device.is_cpu(), b == "cpu");
        assert_eq!(device.is_cuda(), b == "cuda");
        assert_eq!(device.is_rocm(), b == "rocm");
        assert_eq!(device.is_metal(), b == "metal");
    }
}
