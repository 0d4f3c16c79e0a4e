//! Custom ops: a <backend>_fwd the op defines runs on its backend's storages; one it does
//! not define errs naming the op and the backend, for every trait and every backend.
use super::{backend, devices, last, layout, zeros};
use crate::{CpuStorage, CustomOp1, CustomOp2, CustomOp3, DType, Error, InplaceOp1, InplaceOp2, InplaceOp3, Layout, Result, Shape};

/// Implements nothing but its name.
struct Bare;

impl CustomOp1 for Bare {
    fn name(&self) -> &'static str {
        "bare1"
    }
}
impl CustomOp2 for Bare {
    fn name(&self) -> &'static str {
        "bare2"
    }
}
impl CustomOp3 for Bare {
    fn name(&self) -> &'static str {
        "bare3"
    }
}
impl InplaceOp1 for Bare {
    fn name(&self) -> &'static str {
        "ibare1"
    }
}
impl InplaceOp2 for Bare {
    fn name(&self) -> &'static str {
        "ibare2"
    }
}
impl InplaceOp3 for Bare {
    fn name(&self) -> &'static str {
        "ibare3"
    }
}

#[test]
fn every_default_fwd_names_the_op_and_its_backend() {
    let l = layout(&[2, 3]);
    for device in devices(false) {
        let b = backend(&device);
        let missing = |op| Error::NotImplementedForBackend { op, backend: b };
        let mut x = zeros(&device, DType::F32);
        let y = zeros(&device, DType::F32);
        let z = zeros(&device, DType::F32);
        assert_eq!(x.apply_op1(&l, &Bare).unwrap_err(), missing("bare1"));
        assert_eq!(x.apply_op2(&l, &y, &l, &Bare).unwrap_err(), missing("bare2"));
        assert_eq!(x.apply_op3(&l, &y, &l, &z, &l, &Bare).unwrap_err(), missing("bare3"));
        assert_eq!(x.inplace_op1(&l, &Bare).unwrap_err(), missing("ibare1"));
        assert_eq!(x.inplace_op2(&l, &y, &l, &Bare).unwrap_err(), missing("ibare2"));
        assert_eq!(x.inplace_op3(&l, &y, &l, &z, &l, &Bare).unwrap_err(), missing("ibare3"));
    }
}

/// Defines every backend's hook: each records which one ran.
struct Everywhere;

macro_rules! fwd1 {
    ($fwd:ident, $storage:ty) => {
        fn $fwd(&self, s: &$storage, _: &Layout) -> Result<($storage, Shape)> {
            let mut out = s.clone();
            out.calls.push(format!("{}", stringify!($fwd)));
            Ok((out, Shape(vec![7])))
        }
    };
}

impl CustomOp1 for Everywhere {
    fn name(&self) -> &'static str {
        "everywhere"
    }
    fwd1!(cpu_fwd, CpuStorage);
    #[cfg(feature = "cuda")]
    fwd1!(cuda_fwd, crate::CudaStorage);
    #[cfg(feature = "rocm")]
    fwd1!(rocm_fwd, crate::RocmStorage);
    #[cfg(feature = "metal")]
    fwd1!(metal_fwd, crate::MetalStorage);
}

macro_rules! ifwd2 {
    ($fwd:ident, $storage:ty) => {
        fn $fwd(&self, s: &mut $storage, _: &Layout, t: &$storage, _: &Layout) -> Result<()> {
            s.calls.push(format!("{}:{}", stringify!($fwd), t.calls.len()));
            Ok(())
        }
    };
}

impl InplaceOp2 for Everywhere {
    fn name(&self) -> &'static str {
        "everywhere"
    }
    ifwd2!(cpu_fwd, CpuStorage);
    #[cfg(feature = "cuda")]
    ifwd2!(cuda_fwd, crate::CudaStorage);
    #[cfg(feature = "rocm")]
    ifwd2!(rocm_fwd, crate::RocmStorage);
    #[cfg(feature = "metal")]
    ifwd2!(metal_fwd, crate::MetalStorage);
}

#[test]
fn a_defined_fwd_runs_on_its_backend() {
    let l = layout(&[2, 3]);
    for device in devices(false) {
        let b = backend(&device);
        let mut x = zeros(&device, DType::F32);
        let (out, shape) = x.apply_op1(&l, &Everywhere).unwrap();
        assert_eq!((last(&out), shape), ((b, format!("{b}_fwd")), Shape(vec![7])));
        let y = zeros(&device, DType::F32);
        x.inplace_op2(&l, &y, &l, &Everywhere).unwrap();
        assert_eq!(last(&x), (b, format!("{b}_fwd:1")));
    }
}

#[test]
fn custom_ops_over_two_devices_get_the_mismatch_error() {
    let l = layout(&[2, 3]);
    let all = devices(true);
    for a in &all {
        for b in all.iter().filter(|b| !b.same_device(a)) {
            let mut x = zeros(a, DType::F32);
            let y = zeros(b, DType::F32);
            let near = zeros(a, DType::F32);
            let mismatch = |op| Error::DeviceMismatchBinaryOp { lhs: a.location(), rhs: b.location(), op };
            assert_eq!(x.apply_op2(&l, &y, &l, &Bare).unwrap_err(), mismatch("apply_op2"));
            assert_eq!(x.apply_op3(&l, &near, &l, &y, &l, &Bare).unwrap_err(), mismatch("apply_op3"));
            assert_eq!(x.inplace_op2(&l, &y, &l, &Everywhere).unwrap_err(), mismatch("inplace_op2"));
            assert_eq!(x.inplace_op3(&l, &y, &l, &near, &l, &Bare).unwrap_err(), mismatch("inplace_op3"));
        }
    }
}

#[test]
fn ug_op_runs_where_a_backend_compiles_it_and_errs_elsewhere() {
    let l = layout(&[2, 3]);
    let op = crate::ug::UgIOp1::new("ug_exp");
    for device in devices(false) {
        let b = backend(&device);
        let mut x = zeros(&device, DType::F32);
        match b {
            "cuda" | "metal" => {
                x.inplace_op1(&l, &op).unwrap();
                assert_eq!(last(&x), (b, format!("{b}.ug:ug_exp:6")));
            }
            _ => assert_eq!(x.inplace_op1(&l, &op).unwrap_err(), Error::NotImplementedForBackend { op: "ug_exp", backend: b }),
        }
    }
}
