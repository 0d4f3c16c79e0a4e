//! QStorage: made on each backend by the Device methods, its methods reach that backend.
use super::{backend, devices, last, layout, zeros};
use crate::quantized::{GgmlDType, QStorage, QTensor};
use crate::{DType, Error, Shape};

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

#[test]
fn qtensor_multiplies_through_its_backends_hook() {
    let all = devices(true);
    for a in &all {
        let b = backend(a);
        let w = QTensor::new(a.qzeros(12, GgmlDType::Q4_0).unwrap(), Shape(vec![4, 3]));
        let x = zeros(a, DType::F32);
        let (y, out) = x.apply_op1(&layout(&[2, 5, 3]), &w).unwrap();
        assert_eq!((last(&y), out), ((b, format!("{b}.q.matmul:(4, 3)")), Shape(vec![2, 5, 4])));
        let wrong_k = Error::Msg("qmatmul: x of shape Shape([5, 2]) does not end in the weight's k = 3".into());
        assert_eq!(x.apply_op1(&layout(&[5, 2]), &w).unwrap_err(), wrong_k);
        for other in all.iter().filter(|o| !o.same_device(a)) {
            let x = zeros(other, DType::F32);
            let expected = Error::DeviceMismatchBinaryOp { lhs: a.location(), rhs: other.location(), op: "qmatmul" };
            assert_eq!(x.apply_op1(&layout(&[2, 3]), &w).unwrap_err(), expected);
        }
    }
}

#[test]
fn qstorage_embedding_and_moe_reach_the_blocks_backend() {
    let all = devices(true);
    for a in &all {
        let b = backend(a);
        let q = a.qzeros(64, GgmlDType::Q8_0).unwrap();
        let ids = zeros(a, DType::U32);
        let rows = q.embedding(&ids, &layout(&[2, 3]), 2, 32).unwrap();
        assert_eq!(last(&rows), (b, format!("{b}.q.embedding:2:32")));
        let x = zeros(a, DType::F32);
        let (y, out) = q.indexed_moe_forward(&Shape(vec![2, 32]), &x, &layout(&[2, 3]), &ids, &layout(&[2, 3])).unwrap();
        assert_eq!((last(&y), out), ((b, format!("{b}.q.indexed_moe_forward({b})")), Shape(vec![2, 32])));
        // another backend's ids (the pairing is by backend; QTensor moves ids to its device first)
        for other in all.iter().filter(|o| backend(o) != b) {
            let ids = zeros(other, DType::U32);
            let expected = Error::DeviceMismatchBinaryOp { lhs: a.location(), rhs: other.location(), op: "embedding" };
            assert_eq!(q.embedding(&ids, &layout(&[2, 3]), 2, 32).unwrap_err(), expected);
        }
    }
}

#[test]
fn raw_bytes_become_a_storage_of_the_device() {
    for device in devices(true) {
        let b = backend(&device);
        let s = device.storage_from_raw_bytes(&[1, 2, 3, 4], DType::U8).unwrap();
        assert_eq!((last(&s), s.dtype()), ((b, format!("{b}.storage_from_raw_bytes")), DType::U8));
    }
}
