//! QStorage: made on each backend by the Device methods, its methods reach that backend.
use super::{backend, devices, last, layout, zeros};
use crate::quantized::{GgmlDType, QStorage};
use crate::{DType, Error};

fn blocks(q: &QStorage) -> (&'static str, Vec<String>) {
    match q {
        QStorage::Cpu(s) => ("cpu", s.calls.clone()),
        #[cfg(feature = "cuda")]
        QStorage::Cuda(s) => ("cuda", s.calls.clone()),
        #[cfg(feature = "rocm")]
        QStorage::Rocm(s) => ("rocm", s.calls.clone()),
        #[cfg(feature = "metal")]
        QStorage::Metal(s) => ("metal", s.calls.clone()),
        #[allow(unreachable_patterns)] // every backend compiled: none is a dummy
        _ => unreachable!("a dummy backend makes no quantized storage"),
    }
}

#[test]
fn qstorage_is_made_and_used_on_its_backend() {
    for device in devices(true) {
        let b = backend(&device);
        let q = QStorage::from_data(vec![0u8; 64].into(), &device, GgmlDType::Q4_0).unwrap();
        assert_eq!(blocks(&q), (b, vec![format!("{b}.q.from_data")]));
        let z = device.qzeros(32, GgmlDType::Q8_0).unwrap();
        assert_eq!(blocks(&z), (b, vec![format!("{b}.qzeros")]));
        let raw = QStorage::from_data(vec![0u8; 18].into(), &device, GgmlDType::Q4_0).unwrap();
        assert_eq!(z.dtype(), GgmlDType::Q8_0);
        assert!(q.device().same_device(&device));
        assert_eq!(z.size_in_bytes(), 32);
        assert_eq!(raw.data().unwrap().len(), 18);
        assert_eq!(last(&q.dequantize(64).unwrap()), (b, format!("{b}.q.dequantize")));
        let f16 = q.dequantize_f16(64).unwrap();
        assert_eq!((last(&f16), f16.dtype()), ((b, format!("{b}.q.dequantize_f16")), DType::F16));
        let x = zeros(&device, DType::F32);
        let y = q.matmul(&x, &layout(&[2, 3]), (4, 3)).unwrap();
        assert_eq!(last(&y), (b, format!("{b}.q.matmul:(4, 3)")));
    }
}

#[test]
fn qmatmul_checks_device_and_dtype() {
    let l = layout(&[2, 3]);
    let all = devices(true);
    for a in &all {
        let q = a.qzeros(32, GgmlDType::Q4_0).unwrap();
        let half = zeros(a, DType::F16);
        assert_eq!(q.matmul(&half, &l, (4, 3)).unwrap_err(), Error::UnsupportedDTypeForOp(DType::F16, "QStorage.matmul"));
        for b in all.iter().filter(|b| !b.same_device(a)) {
            let x = zeros(b, DType::F32);
            let expected = Error::DeviceMismatchBinaryOp { lhs: a.location(), rhs: b.location(), op: "QStorage.matmul" };
            assert_eq!(q.matmul(&x, &l, (4, 3)).unwrap_err(), expected);
        }
    }
}

#[test]
fn ggml_formats_round_trip_their_type_ids() {
    for (id, format, block, bytes) in [(2, GgmlDType::Q4_0, 32, 18), (8, GgmlDType::Q8_0, 32, 34), (12, GgmlDType::Q4K, 256, 144)] {
        assert_eq!(GgmlDType::from_u32(id).unwrap(), format);
        assert_eq!(format.to_u32(), id);
        assert_eq!((format.block_size(), format.type_size()), (block, bytes));
    }
    assert_eq!(GgmlDType::from_u32(99).unwrap_err(), Error::Msg("unknown GGML type id 99".into()));
}
