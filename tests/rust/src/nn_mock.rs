//! The NN ops' backend side, mocked: every storage computes none of them itself but the
//! host's softmax (recorded), and a GPU storage launches the kernels through a launcher that
//! records each launch (kernel and arguments) for the tests to read.
use std::cell::RefCell;

use crate::launch::{DevicePtr, DevicePtrMut, Kernel, KernelArg, KernelLauncher, LaunchConfig};
use crate::mock::{MockDevice, MockStorage};
use crate::nn_ops::{KernelStorage, NnStorage};
use crate::{DType, Layout, Result, Shape};

thread_local! {
    static LAUNCHES: RefCell<Vec<(&'static str, Vec<KernelArg>)>> = const { RefCell::new(Vec::new()) };
}

/// The launches of this thread since the last call (kernel name and arguments), in order.
pub fn take_launches() -> Vec<(&'static str, Vec<KernelArg>)> {
    LAUNCHES.with(|l| std::mem::take(&mut *l.borrow_mut()))
}

/// Records every launch.
pub struct RecordingLauncher;

impl KernelLauncher for RecordingLauncher {
    fn launch(&self, kernel: Kernel, _: &LaunchConfig, args: &[KernelArg]) -> Result<()> {
        LAUNCHES.with(|l| l.borrow_mut().push((kernel.name, args.to_vec())));
        Ok(())
    }
}

/// Mock addresses: element offsets scaled by 8 bytes, on a base per storage role.
const INPUT_BASE: u64 = 0x1000;
const OUTPUT_BASE: u64 = 0x8000;
const INFO_BASE: u64 = 0xf000;

impl<D: MockDevice> NnStorage for MockStorage<D> {
    const BACKEND: &'static str = D::BACKEND;

    fn softmax_last_dim(&self, l1: &Layout) -> Result<(Self, Shape)> {
        let mut calls = self.calls.clone();
        calls.push(format!("{}.softmax_last_dim", D::BACKEND));
        Ok((Self { calls, ..self.clone() }, l1.shape().clone()))
    }
}

impl<D: MockDevice> KernelStorage for MockStorage<D> {
    type Launcher = RecordingLauncher;

    fn launcher(&self) -> &RecordingLauncher {
        &RecordingLauncher
    }
    fn dtype(&self) -> DType {
        self.dtype
    }
    fn alloc(&self, shape: &Shape, dtype: DType) -> Result<Self> {
        let calls = vec![format!("{}.alloc", D::BACKEND)];
        Ok(Self { device: self.device.clone(), dtype, len: shape.elem_count(), calls })
    }
    fn ptr<T>(&self, layout: &Layout) -> DevicePtr<T> {
        DevicePtr::new(INPUT_BASE + 8 * layout.start_offset() as u64)
    }
    fn ptr_mut<T>(&mut self) -> DevicePtrMut<T> {
        DevicePtrMut::new(OUTPUT_BASE)
    }
    fn layout_info(&self, _: &Layout) -> Result<DevicePtr<usize>> {
        Ok(DevicePtr::new(INFO_BASE))
    }
    fn launch_config(&self, _: &str, numel: usize) -> LaunchConfig {
        let blocks = numel.div_ceil(256) as u32;
        LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
    }
}
