//! Launch wrappers pass their typed arguments, in the kernel's order, to the launcher.
use std::cell::RefCell;

use crate::launch::*;
use crate::Result;

#[derive(Default)]
struct Recorder {
    launches: RefCell<Vec<(Kernel, LaunchConfig, Vec<KernelArg>)>>,
}

impl KernelLauncher for Recorder {
    fn launch(&self, kernel: Kernel, cfg: &LaunchConfig, args: &[KernelArg]) -> Result<()> {
        self.launches.borrow_mut().push((kernel, *cfg, args.to_vec()));
        Ok(())
    }
}

const CFG: LaunchConfig = LaunchConfig { grid_dim: (3, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };

fn one(r: &Recorder) -> (Kernel, LaunchConfig, Vec<KernelArg>) {
    let mut l = r.launches.borrow_mut();
    assert_eq!(l.len(), 1);
    l.pop().unwrap()
}

#[test]
fn a_generated_elementwise_kernel() {
    let r = Recorder::default();
    launch_unary_exp_f32(&r, &CFG, 600, 2, DevicePtr::new(0x10), DevicePtr::new(0x20), DevicePtrMut::new(0x30)).unwrap();
    let (kernel, cfg, args) = one(&r);
    assert_eq!(kernel, Kernel { name: "unary_exp_f32", source: "elementwise.hip" });
    assert_eq!(cfg, CFG);
    use KernelArg as A;
    assert_eq!(args, vec![A::Usize(600), A::Usize(2), A::Ptr(0x10), A::Ptr(0x20), A::Ptr(0x30)]);
}

#[test]
fn hand_written_kernels_with_scalars_after_pointers() {
    use KernelArg as A;
    let r = Recorder::default();
    launch_affine_f64(&r, &CFG, 6, 1, DevicePtr::new(1), DevicePtr::new(2), DevicePtrMut::new(3), 2.5, -1.0).unwrap();
    let (kernel, _, args) = one(&r);
    assert_eq!(kernel, Kernel { name: "affine_f64", source: "affine.hip" });
    assert_eq!(args, vec![A::Usize(6), A::Usize(1), A::Ptr(1), A::Ptr(2), A::Ptr(3), A::F64(2.5), A::F64(-1.0)]);

    launch_const_set_bf16(&r, &CFG, 6, 2, DevicePtr::new(8), Bf16(0x3f80), DevicePtrMut::new(9)).unwrap();
    let (kernel, _, args) = one(&r);
    assert_eq!(kernel.name, "const_set_bf16");
    assert_eq!(args, vec![A::Usize(6), A::Usize(2), A::Ptr(8), A::Bf16(Bf16(0x3f80)), A::Ptr(9)]);
}

#[test]
fn pointer_types_follow_the_kernel_element_types() {
    // The bindings' types are the wrapper's parameter types: u32 ids and f16 data, as the
    // kernel declares them (indexing.hip), then its four sizes and the u32 flag word it sets
    // for an id out of range.
    use KernelArg as A;
    let r = Recorder::default();
    let info: DevicePtr<usize> = DevicePtr::new(7);
    let ids: DevicePtr<u32> = DevicePtr::new(4);
    let inp: DevicePtr<F16> = DevicePtr::new(5);
    let out: DevicePtrMut<F16> = DevicePtrMut::new(6);
    let bad: DevicePtrMut<u32> = DevicePtrMut::new(8);
    launch_index_select_u32_f16(&r, &CFG, 12, 2, info, ids, inp, out, 1, 5, 3, 4, bad).unwrap();
    let (kernel, _, args) = one(&r);
    assert_eq!(kernel, Kernel { name: "index_select_u32_f16", source: "indexing.hip" });
    assert_eq!(args, vec![A::Usize(12), A::Usize(2), A::Ptr(7), A::Ptr(4), A::Ptr(5), A::Ptr(6), A::Usize(1), A::Usize(5), A::Usize(3), A::Usize(4), A::Ptr(8)]);
}
