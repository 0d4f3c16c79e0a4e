//! The backend traits the generated dispatch calls through, mirroring candle-core's
//! BackendStorage and BackendDevice with the registry's op names and parameter types (and a
//! QBackendStorage for quantized storage, whose methods candle-core calls inherently).
use std::borrow::Cow;

use crate::conv::{ParamsConv1D, ParamsConv2D, ParamsConvTranspose1D, ParamsConvTranspose2D};
use crate::op::{BinaryOpT, CmpOp, ReduceOp, UnaryOpT};
use crate::quantized::GgmlDType;
use crate::scalar::Scalar;
use crate::{CpuStorage, DType, DeviceLocation, Layout, Result, Shape, WithDType};

pub trait BackendStorage: Sized {
    type Device: BackendDevice;

    fn try_clone(&self, layout: &Layout) -> Result<Self>;
    fn dtype(&self) -> DType;
    fn device(&self) -> &Self::Device;
    fn const_set(&mut self, value: Scalar, layout: &Layout) -> Result<()>;
    fn affine(&self, layout: &Layout, mul: f64, add: f64) -> Result<Self>;
    fn powf(&self, layout: &Layout, exponent: f64) -> Result<Self>;
    fn elu(&self, layout: &Layout, alpha: f64) -> Result<Self>;
    fn cmp(&self, op: CmpOp, rhs: &Self, lhs_layout: &Layout, rhs_layout: &Layout) -> Result<Self>;
    fn reduce_op(&self, op: ReduceOp, layout: &Layout, dims: &[usize]) -> Result<Self>;
    fn to_dtype(&self, layout: &Layout, dtype: DType) -> Result<Self>;
    fn unary_impl<B: UnaryOpT>(&self, layout: &Layout) -> Result<Self>;
    fn binary_impl<B: BinaryOpT>(&self, rhs: &Self, lhs_layout: &Layout, rhs_layout: &Layout) -> Result<Self>;
    fn where_cond(&self, layout: &Layout, t: &Self, tl: &Layout, f: &Self, fl: &Layout) -> Result<Self>;
    fn conv1d(&self, l: &Layout, k: &Self, kl: &Layout, p: &ParamsConv1D) -> Result<Self>;
    fn conv_transpose1d(&self, l: &Layout, k: &Self, kl: &Layout, p: &ParamsConvTranspose1D) -> Result<Self>;
    fn conv2d(&self, l: &Layout, k: &Self, kl: &Layout, p: &ParamsConv2D) -> Result<Self>;
    fn conv_transpose2d(&self, l: &Layout, k: &Self, kl: &Layout, p: &ParamsConvTranspose2D) -> Result<Self>;
    fn avg_pool2d(&self, l: &Layout, kernel_size: (usize, usize), stride: (usize, usize)) -> Result<Self>;
    fn max_pool2d(&self, l: &Layout, kernel_size: (usize, usize), stride: (usize, usize)) -> Result<Self>;
    fn upsample_nearest1d(&self, l: &Layout, size: usize) -> Result<Self>;
    fn upsample_nearest2d(&self, l: &Layout, h: usize, w: usize) -> Result<Self>;
    fn upsample_bilinear2d(&self, l: &Layout, h: usize, w: usize, ac: bool, sh: Option<f64>, sw: Option<f64>)
        -> Result<Self>;
    fn gather(&self, l: &Layout, ids: &Self, ids_l: &Layout, dim: usize) -> Result<Self>;
    fn scatter_set(&mut self, l: &Layout, ids: &Self, ids_l: &Layout, src: &Self, src_l: &Layout, dim: usize)
        -> Result<()>;
    fn scatter_add_set(&mut self, l: &Layout, ids: &Self, ids_l: &Layout, src: &Self, src_l: &Layout, dim: usize)
        -> Result<()>;
    fn index_select(&self, ids: &Self, l: &Layout, ids_l: &Layout, dim: usize) -> Result<Self>;
    fn index_add(&self, l: &Layout, ids: &Self, ids_l: &Layout, src: &Self, src_l: &Layout, dim: usize)
        -> Result<Self>;
    fn matmul(&self, rhs: &Self, bmnk: (usize, usize, usize, usize), l: &Layout, rl: &Layout) -> Result<Self>;
    fn copy_strided_src(&self, dst: &mut Self, dst_offset: usize, src_l: &Layout) -> Result<()>;
    #[allow(clippy::too_many_arguments)]
    fn copy2d(&self, dst: &mut Self, d1: usize, d2: usize, ss: usize, ds: usize, so: usize, do_: usize)
        -> Result<()>;
    fn to_cpu_storage(&self) -> Result<CpuStorage>;
    fn transfer_to_device(&self, device: &Self::Device) -> Result<Self>;
}

pub trait BackendDevice: Sized + std::fmt::Debug + Clone {
    type Storage: BackendStorage;
    type QStorage;

    fn location(&self) -> DeviceLocation;
    fn same_device(&self, rhs: &Self) -> bool;
    fn new(ordinal: usize) -> Result<Self>;
    fn zeros_impl(&self, shape: &Shape, dtype: DType) -> Result<Self::Storage>;
    fn ones(&self, shape: &Shape, dtype: DType) -> Result<Self::Storage>;
    /// # Safety
    ///
    /// The storage is not initialized.
    unsafe fn alloc_uninit(&self, shape: &Shape, dtype: DType) -> Result<Self::Storage>;
    fn storage_from_slice<T: WithDType>(&self, data: &[T]) -> Result<Self::Storage>;
    fn rand_uniform(&self, shape: &Shape, dtype: DType, low: f64, high: f64) -> Result<Self::Storage>;
    fn rand_normal(&self, shape: &Shape, dtype: DType, mean: f64, std: f64) -> Result<Self::Storage>;
    fn set_seed(&self, seed: u64) -> Result<()>;
    fn get_current_seed(&self) -> Result<u64>;
    fn synchronize(&self) -> Result<()>;
    fn supports_bf16(&self) -> bool;
    fn quantize<T: WithDType>(&self, data: &[T], format: GgmlDType) -> Result<Self::QStorage>;
    fn qzeros(&self, elem_count: usize, format: GgmlDType) -> Result<Self::QStorage>;
    fn qstorage_from_bytes<T: WithDType>(&self, data: &[T], format: GgmlDType) -> Result<Self::QStorage>;
    fn storage_from_cpu_storage(&self, storage: &CpuStorage) -> Result<Self::Storage>;
    fn storage_from_cpu_storage_owned(&self, storage: CpuStorage) -> Result<Self::Storage>;
}

pub trait QBackendStorage: Sized {
    type Storage;
    type Device;

    fn from_data(device: &Self::Device, data: Cow<'_, [u8]>, dtype: GgmlDType) -> Result<Self>;
    fn dtype(&self) -> GgmlDType;
    fn block_size(&self) -> usize;
    fn device(&self) -> &Self::Device;
    fn quantize(&mut self, src: &Self::Storage) -> Result<()>;
    fn quantize_imatrix(&mut self, src: &Self::Storage, imatrix: &[f32], n_per_row: usize) -> Result<()>;
    fn quantize_onto(&mut self, src: &CpuStorage) -> Result<()>;
    fn quantize_imatrix_onto(&mut self, src: &CpuStorage, imatrix: &[f32], n_per_row: usize) -> Result<()>;
    fn device_ptr(&self) -> Result<*const u8>;
    fn size_in_bytes(&self) -> usize;
    fn data(&self) -> Result<Cow<'_, [u8]>>;
    fn dequantize(&self, elem_count: usize) -> Result<Self::Storage>;
    fn dequantize_f16(&self, elem_count: usize) -> Result<Self::Storage>;
    fn matmul(&self, x: &Self::Storage, x_layout: &Layout, shape: (usize, usize)) -> Result<Self::Storage>;
}
