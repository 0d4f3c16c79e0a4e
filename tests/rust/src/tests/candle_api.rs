//! The methods the Candle profile adds: constructors and accessors once per backend, the
//! generic and host-side Device methods, QStorage's quantize and from_data family.
use super::{backend, devices, last, shape, zeros};
use crate::quantized::{GgmlDType, QStorage};
use crate::{DType, Device};

#[test]
fn per_backend_constructors_and_accessors() {
    #[cfg(feature = "cuda")]
    {
        let d = Device::new_cuda(1).unwrap();
        assert_eq!(d.as_cuda_device().unwrap().ordinal, 1);
        assert_eq!(Device::Cpu.as_cuda_device().unwrap_err(), crate::Error::Msg("expected a cuda device, got cpu".into()));
        assert!(Device::cuda_if_available(0).unwrap().is_cuda());
        assert!(Device::new_cuda_with_stream(0).unwrap().is_cuda());
    }
    #[cfg(feature = "metal")]
    {
        assert_eq!(Device::new_metal(2).unwrap().as_metal_device().unwrap().ordinal, 2);
        assert!(Device::metal_if_available(0).unwrap().is_metal());
    }
    #[cfg(feature = "rocm")]
    {
        let d = Device::new_rocm(0).unwrap();
        assert_eq!(d.as_rocm_device().unwrap().ordinal, 0);
        assert!(Device::rocm_if_available(0).unwrap().is_rocm());
        assert!(Device::new_rocm_with_stream(0).unwrap().is_rocm());
    }
}

#[test]
fn device_methods_of_the_profile_reach_the_device_backend() {
    let s = shape(&[2, 2]);
    for device in devices(false) {
        let b = backend(&device);
        assert_eq!(device.with_context(|| 7), 7);
        assert!(device.get_current_seed().is_ok());
        let want = if b == "cpu" { DType::F32 } else { DType::BF16 };
        assert_eq!(device.bf16_default_to_f32(), want);
        let u = device.rand_uniform(0f32, 1f32, &s).unwrap();
        assert_eq!((last(&u), u.dtype()), ((b, format!("{b}.rand_uniform:0:1")), DType::F32));
        let n = device.rand_normal(0f64, 2f64, &s).unwrap();
        assert_eq!((last(&n), n.dtype()), ((b, format!("{b}.rand_normal:0:2")), DType::F64));
        let owned = device.storage_owned(vec![1u32, 2, 3]).unwrap();
        let array = device.storage(vec![1u8, 2]).unwrap();
        for st in [owned, array] {
            let (got, call) = last(&st);
            assert_eq!(got, b);
            let expected = if b == "cpu" { "cpu.to_cpu_storage_owned".to_string() } else { format!("{b}.storage_from_cpu_storage") };
            assert_eq!(call, expected);
        }
    }
}

#[test]
fn qstorage_methods_of_the_profile_reach_the_backend() {
    for device in devices(false) {
        let b = backend(&device);
        let mut q = QStorage::from_data(vec![1u8, 2, 3].into(), &device, GgmlDType::Q8_0).unwrap();
        assert_eq!((q.block_size(), q.size_in_bytes()), (32, 3));
        assert!(q.device().same_device(&device));
        let x = zeros(&device, DType::F32);
        q.quantize(&x).unwrap();
        q.quantize_imatrix(&x, &[1.0; 3], 3).unwrap();
        q.quantize_onto(&zeros(&Device::Cpu, DType::F32)).unwrap();
        q.quantize_imatrix_onto(&zeros(&Device::Cpu, DType::F32), &[1.0; 2], 3).unwrap();
        assert!(q.device_ptr().is_ok());
        let calls = match &q {
            QStorage::Cpu(s) => s.calls.clone(),
            #[cfg(feature = "cuda")]
            QStorage::Cuda(s) => s.calls.clone(),
            #[cfg(feature = "rocm")]
            QStorage::Rocm(s) => s.calls.clone(),
            #[cfg(feature = "metal")]
            QStorage::Metal(s) => s.calls.clone(),
            #[allow(unreachable_patterns)] // every backend compiled: none is a dummy
            _ => unreachable!("a dummy backend makes no quantized storage"),
        };
        let want: Vec<String> = ["q.from_data", "q.quantize:6", "q.quantize_imatrix:6:3:3", "q.quantize_onto:6", "q.quantize_imatrix_onto:6:2:3"]
            .iter()
            .map(|c| format!("{b}.{c}"))
            .collect();
        assert_eq!(calls, want);
    }
}

#[test]
fn a_backend_compiled_out_is_a_dummy_that_says_so() {
    // Every variant exists whatever the features (candle-core's dummies); only its constructor errs.
    #[cfg(not(feature = "cuda"))]
    assert_eq!(Device::new_cuda(0).unwrap_err(), crate::Error::NotCompiledWithCudaSupport);
    #[cfg(not(feature = "metal"))]
    assert_eq!(Device::new_metal(0).unwrap_err(), crate::Error::NotCompiledWithMetalSupport);
    #[cfg(not(feature = "rocm"))]
    assert_eq!(Device::new_rocm_with_stream(0).unwrap_err(), crate::Error::NotCompiledWithRocmSupport);
    assert!(!Device::Cpu.is_cuda() && !Device::Cpu.is_metal() && !Device::Cpu.is_rocm());
    assert!(Device::Cpu.as_metal_device().is_err());
}
