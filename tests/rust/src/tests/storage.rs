//! Every storage op reaches the backend of its storages, and only that backend; operands on
//! different devices, dtypes or shapes get the typed errors, naming the op.
use super::{backend, calls, devices, last, layout, zeros};
use crate::conv::{ParamsConv1D, ParamsConv2D, ParamsConvTranspose1D, ParamsConvTranspose2D};
use crate::op::{Add, CmpOp, Exp, Mul, ReduceOp};
use crate::scalar::Scalar;
use crate::{DType, Device, DeviceLocation, Error, Storage};

/// `op` applied to fresh f32 storages (ids: u32) on `device`: the storage it returns or writes.
fn run(op: &str, device: &Device) -> Storage {
    let l = layout(&[2, 3]);
    let x = zeros(device, DType::F32);
    let y = zeros(device, DType::F32);
    let ids = zeros(device, DType::U32);
    let r = match op {
        "try_clone" => x.try_clone(&l),
        "affine" => x.affine(&l, 2.0, 1.0),
        "powf" => x.powf(&l, 2.0),
        "elu" => x.elu(&l, 1.0),
        "cmp" => x.cmp(CmpOp::Lt, &y, &l, &l),
        "reduce_op" => x.reduce_op(ReduceOp::Max, &l, &[1]),
        "to_dtype" => x.to_dtype(&l, DType::BF16),
        "unary" => x.unary_impl::<Exp>(&l),
        "binary" => x.binary_impl::<Add>(&y, &l, &l),
        "upsample_bilinear2d" => x.upsample_bilinear2d(&l, 4, 6, true, Some(2.0), None),
        "where_cond" => ids.where_cond(&l, &x, &l, &y, &l),
        "conv1d" => x.conv1d(&l, &y, &l, &ParamsConv1D::default()),
        "conv_transpose1d" => x.conv_transpose1d(&l, &y, &l, &ParamsConvTranspose1D::default()),
        "conv2d" => x.conv2d(&l, &y, &l, &ParamsConv2D::default()),
        "conv_transpose2d" => x.conv_transpose2d(&l, &y, &l, &ParamsConvTranspose2D::default()),
        "avg_pool2d" => x.avg_pool2d(&l, (2, 2), (1, 1)),
        "max_pool2d" => x.max_pool2d(&l, (2, 2), (1, 1)),
        "upsample_nearest1d" => x.upsample_nearest1d(&l, 4),
        "upsample_nearest2d" => x.upsample_nearest2d(&l, 4, 6),
        "gather" => x.gather(&l, &ids, &l, 1),
        "index_select" => x.index_select(&ids, &l, &l, 0),
        "index_add" => x.index_add(&l, &ids, &l, &y, &l, 0),
        "matmul" => x.matmul(&y, (1, 2, 3, 3), &l, &l),
        "const_set" | "scatter_set" | "scatter_add" => {
            let mut x = x;
            match op {
                "const_set" => x.const_set(Scalar::F64(1.0), &l),
                "scatter_set" => x.scatter_set(&l, &ids, &l, &y, &l, 1),
                _ => x.scatter_add(&l, &ids, &l, &y, &l, 1),
            }
            .map(|()| x)
        }
        "copy_strided_src" | "copy2d" => {
            let mut dst = y;
            match op {
                "copy_strided_src" => x.copy_strided_src(&mut dst, 3, &l),
                _ => x.copy2d(&mut dst, 2, 3, 3, 4, 0, 1),
            }
            .map(|()| dst)
        }
        other => panic!("no test for storage op {other}"),
    };
    r.unwrap_or_else(|e| panic!("{op} on {device:?}: {e:?}"))
}

const OPS: &[(&str, &str)] = &[
    ("try_clone", "try_clone"),
    ("affine", "affine"),
    ("powf", "powf"),
    ("elu", "elu"),
    ("cmp", "cmp:Lt(B)"),
    ("reduce_op", "reduce_op:Max:[1]"),
    ("to_dtype", "to_dtype"),
    ("unary", "unary:Exp"),
    ("binary", "binary:Add(B)"),
    ("where_cond", "where_cond(B,B)"),
    ("conv1d", "conv1d(B)"),
    ("conv_transpose1d", "conv_transpose1d(B)"),
    ("conv2d", "conv2d(B)"),
    ("conv_transpose2d", "conv_transpose2d(B)"),
    ("avg_pool2d", "avg_pool2d:(2, 2):(1, 1)"),
    ("max_pool2d", "max_pool2d:(2, 2):(1, 1)"),
    ("upsample_nearest1d", "upsample_nearest1d:4"),
    ("upsample_nearest2d", "upsample_nearest2d:4:6"),
    ("upsample_bilinear2d", "upsample_bilinear2d:4:6:true:Some(2.0):None"),
    ("gather", "gather:1(B)"),
    ("index_select", "index_select:0(B)"),
    ("index_add", "index_add:0(B,B)"),
    ("matmul", "matmul:(1, 2, 3, 3)(B)"),
    ("const_set", "const_set"),
    ("scatter_set", "scatter_set:1"),
    ("scatter_add", "scatter_add:1"),
    ("copy_strided_src", "copy_strided_src:3"),
    ("copy2d", "copy2d:2:3:3:4:0:1"),
];

#[test]
fn every_storage_op_reaches_the_backend_of_its_storages() {
    for device in devices(false) {
        let b = backend(&device);
        for (op, call) in OPS {
            let out = run(op, &device);
            let expected = format!("{b}.{}", call.replace('B', b));
            assert_eq!(last(&out), (b, expected), "{op} on {b}");
            let (_, history) = calls(&out);
            assert!(history.iter().all(|c| c.starts_with(&format!("{b}."))), "{op} on {b}: {history:?}");
        }
    }
}

#[test]
fn getters_answer_for_the_storage_backend() {
    for device in devices(true) {
        let x = zeros(&device, DType::BF16);
        assert_eq!(x.dtype(), DType::BF16);
        assert!(x.device().same_device(&device), "{device:?}");
        assert_eq!(x.device().location(), device.location());
    }
}

/// Every op over two storages or more, with its second storage on `other`.
fn mixed(op: &str, device: &Device, other: &Device) -> Error {
    let l = layout(&[2, 3]);
    let mut x = zeros(device, DType::F32);
    let ids = zeros(device, DType::U32);
    let y = zeros(other, DType::F32);
    let oids = zeros(other, DType::U32);
    let mut oy = zeros(other, DType::F32);
    let r = match op {
        "cmp" => x.cmp(CmpOp::Eq, &y, &l, &l).map(drop),
        "binary" => x.binary_impl::<Mul>(&y, &l, &l).map(drop),
        "where_cond" => ids.where_cond(&l, &x, &l, &y, &l).map(drop),
        "conv1d" => x.conv1d(&l, &y, &l, &ParamsConv1D::default()).map(drop),
        "conv_transpose1d" => x.conv_transpose1d(&l, &y, &l, &ParamsConvTranspose1D::default()).map(drop),
        "conv2d" => x.conv2d(&l, &y, &l, &ParamsConv2D::default()).map(drop),
        "conv_transpose2d" => x.conv_transpose2d(&l, &y, &l, &ParamsConvTranspose2D::default()).map(drop),
        "gather" => x.gather(&l, &oids, &l, 0).map(drop),
        "scatter_set" => x.scatter_set(&l, &ids, &l, &y, &l, 0),
        "scatter_add" => x.scatter_add(&l, &oids, &l, &zeros(device, DType::F32), &l, 0),
        "index_select" => x.index_select(&oids, &l, &l, 0).map(drop),
        "index_add" => x.index_add(&l, &ids, &l, &y, &l, 0).map(drop),
        "matmul" => x.matmul(&y, (1, 2, 3, 3), &l, &l).map(drop),
        "copy_strided_src" => x.copy_strided_src(&mut oy, 0, &l),
        "copy2d" => x.copy2d(&mut oy, 1, 1, 1, 1, 0, 0),
        other => panic!("no mismatch test for {other}"),
    };
    r.expect_err(op)
}

#[test]
fn operands_on_different_devices_get_the_typed_mismatch_error() {
    let ops = [
        "cmp", "binary", "where_cond", "conv1d", "conv_transpose1d", "conv2d", "conv_transpose2d", "gather",
        "scatter_set", "scatter_add", "index_select", "index_add", "matmul", "copy_strided_src", "copy2d",
    ];
    let all = devices(true);
    for a in &all {
        for b in all.iter().filter(|b| !b.same_device(a)) {
            for op in ops {
                let expected = Error::DeviceMismatchBinaryOp { lhs: a.location(), rhs: b.location(), op };
                assert_eq!(mixed(op, a, b), expected, "{op}: {a:?} with {b:?}");
            }
        }
    }
}

#[test]
fn the_mismatch_error_names_the_first_device_that_differs() {
    let cpu = Device::Cpu;
    let err = Device::mismatch("where_cond", &[cpu.clone(), cpu.clone(), cpu.clone()]);
    assert_eq!(err, Error::DeviceMismatchBinaryOp { lhs: DeviceLocation::Cpu, rhs: DeviceLocation::Cpu, op: "where_cond" });
    for other in devices(true).iter().skip(1) {
        let err = Device::mismatch("where_cond", &[cpu.clone(), cpu.clone(), other.clone()]);
        assert_eq!(err, Error::DeviceMismatchBinaryOp { lhs: DeviceLocation::Cpu, rhs: other.location(), op: "where_cond" });
    }
}

#[test]
fn dtypes_are_checked_before_dispatch() {
    let l = layout(&[2, 3]);
    let short = layout(&[3, 2, 1]);
    for device in devices(false) {
        let f = zeros(&device, DType::F32);
        let u = zeros(&device, DType::U8);
        let h = zeros(&device, DType::F16);
        let unsupported = |dtype, op| Error::UnsupportedDTypeForOp(dtype, op);
        assert_eq!(u.powf(&l, 2.0).unwrap_err(), unsupported(DType::U8, "powf"));
        assert_eq!(u.elu(&l, 1.0).unwrap_err(), unsupported(DType::U8, "elu"));
        assert_eq!(u.matmul(&u, (1, 2, 3, 3), &l, &l).unwrap_err(), unsupported(DType::U8, "matmul"));
        assert_eq!(f.where_cond(&l, &f, &l, &f, &l).unwrap_err(), unsupported(DType::F32, "where_cond"));
        assert_eq!(f.gather(&l, &f, &l, 0).unwrap_err(), unsupported(DType::F32, "gather"));
        assert_eq!(f.index_select(&h, &l, &l, 0).unwrap_err(), unsupported(DType::F16, "index_select"));
        let mismatch = |lhs, rhs, op| Error::DTypeMismatchBinaryOp { lhs, rhs, op };
        assert_eq!(f.binary_impl::<Add>(&h, &l, &l).unwrap_err(), mismatch(DType::F32, DType::F16, "binary"));
        assert_eq!(f.cmp(CmpOp::Eq, &u, &l, &l).unwrap_err(), mismatch(DType::F32, DType::U8, "cmp"));
        assert_eq!(u.where_cond(&l, &f, &l, &h, &l).unwrap_err(), mismatch(DType::F32, DType::F16, "where_cond"));
        assert_eq!(f.matmul(&h, (1, 2, 3, 3), &l, &l).unwrap_err(), mismatch(DType::F32, DType::F16, "matmul"));
        let mut dst = zeros(&device, DType::U8);
        assert_eq!(f.copy_strided_src(&mut dst, 0, &l).unwrap_err(), mismatch(DType::F32, DType::U8, "copy_strided_src"));
        let shapes = Error::ShapeMismatchBinaryOp { lhs: l.shape().clone(), rhs: short.shape().clone(), op: "binary" };
        assert_eq!(f.binary_impl::<Add>(&f, &l, &short).unwrap_err(), shapes);
        let (_, history) = calls(&dst);
        assert_eq!(history.len(), 1, "a refused op reaches no backend: {history:?}");
    }
}

#[test]
fn to_device_covers_every_pair_of_backends() {
    for src in devices(true) {
        for dst in devices(true) {
            let s = zeros(&src, DType::F32);
            let out = s.to_device(&dst).unwrap();
            assert!(out.device().same_device(&dst), "{src:?} -> {dst:?}: on {:?}", out.device());
            let (b, history) = calls(&out);
            let (sb, db) = (backend(&src), backend(&dst));
            assert_eq!(b, db);
            let path: Vec<String> = match (sb, db) {
                ("cpu", "cpu") => vec!["cpu.to_cpu_storage".into()],
                (s, "cpu") => vec![format!("{s}.to_cpu_storage")],
                ("cpu", d) => vec![format!("{d}.storage_from_cpu_storage")],
                (s, d) if s == d => vec![format!("{d}.transfer_to_device")],
                (s, d) => vec![format!("{s}.to_cpu_storage"), format!("{d}.storage_from_cpu_storage")],
            };
            assert_eq!(history[1..].to_vec(), path, "{src:?} -> {dst:?}");
        }
    }
}
