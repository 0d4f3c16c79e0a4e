//! The core types generated code names, shaped as candle-core's: DType, Shape, Layout, the
//! Error variants the dispatch returns, WithDType.
use crate::DeviceLocation;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    U8,
    U32,
    I64,
    BF16,
    F16,
    F32,
    F64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shape(pub Vec<usize>);

impl Shape {
    pub fn dims(&self) -> &[usize] {
        &self.0
    }

    pub fn elem_count(&self) -> usize {
        self.0.iter().product()
    }

    /// The two dims of a rank-2 shape.
    pub fn dims2(&self) -> Result<(usize, usize)> {
        match self.0[..] {
            [a, b] => Ok((a, b)),
            _ => Err(Error::Msg(format!("expected a rank-2 shape, got {:?}", self.0))),
        }
    }
}

impl From<Vec<usize>> for Shape {
    fn from(dims: Vec<usize>) -> Self {
        Self(dims)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    shape: Shape,
    stride: Vec<usize>,
    start_offset: usize,
}

impl Layout {
    pub fn contiguous(dims: &[usize]) -> Self {
        let mut stride = vec![1; dims.len()];
        for i in (0..dims.len().saturating_sub(1)).rev() {
            stride[i] = stride[i + 1] * dims[i + 1];
        }
        Self { shape: Shape(dims.to_vec()), stride, start_offset: 0 }
    }

    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Row-major with no gaps (an offset allowed).
    pub fn is_contiguous(&self) -> bool {
        *self == Self { start_offset: self.start_offset, ..Self::contiguous(&self.shape.0) }
    }

    /// A view of `dims` with these strides from `start_offset` (a transpose, a slice).
    pub fn strided(dims: &[usize], stride: Vec<usize>, start_offset: usize) -> Self {
        Self { shape: Shape(dims.to_vec()), stride, start_offset }
    }

    pub fn start_offset(&self) -> usize {
        self.start_offset
    }
}

error_with_backends! {
    /// The errors of candle-core's Error that the generated dispatch returns, and the one it
    /// adds (NotImplementedForBackend); the backends' variants are generated
    /// (backend_error.rs).
    #[derive(Debug, Clone, PartialEq, thiserror::Error)]
    pub enum Error {
        DeviceMismatchBinaryOp { lhs: DeviceLocation, rhs: DeviceLocation, op: &'static str },
        DTypeMismatchBinaryOp { lhs: DType, rhs: DType, op: &'static str },
        ShapeMismatchBinaryOp { lhs: Shape, rhs: Shape, op: &'static str },
        UnsupportedDTypeForOp(DType, &'static str),
        NotImplementedForBackend { op: &'static str, backend: &'static str },
        /// What a mock backend reports for a call it refuses (never one the tests expect).
        Mock(String),
        /// What `bail!` returns: a message (candle-core's Error::Msg).
        Msg(String),
    }
}

impl Error {
    /// candle-core attaches a backtrace here; the mock has none to attach.
    pub fn bt(self) -> Self {
        self
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// Element types of host slices.
pub trait WithDType: Copy + 'static {
    const DTYPE: DType;

    /// A host storage holding `data` (the mock records the call and the length).
    fn to_cpu_storage_owned(data: Vec<Self>) -> crate::CpuStorage {
        crate::CpuStorage { device: crate::CpuDevice, dtype: Self::DTYPE, len: data.len(), calls: vec!["cpu.to_cpu_storage_owned".into()] }
    }
}

/// Float element types (candle-core's FloatDType).
pub trait FloatDType: WithDType {
    fn to_f64(self) -> f64;
}

impl FloatDType for f32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
}

impl FloatDType for f64 {
    fn to_f64(self) -> f64 {
        self
    }
}

/// Host arrays a storage can be made from (candle-core's NdArray).
pub trait NdArray {
    fn to_cpu_storage(&self) -> crate::CpuStorage;
}

impl<S: WithDType> NdArray for Vec<S> {
    fn to_cpu_storage(&self) -> crate::CpuStorage {
        S::to_cpu_storage_owned(self.clone())
    }
}

impl WithDType for u8 {
    const DTYPE: DType = DType::U8;
}

impl WithDType for u32 {
    const DTYPE: DType = DType::U32;
}

impl WithDType for i64 {
    const DTYPE: DType = DType::I64;
}

impl WithDType for f32 {
    const DTYPE: DType = DType::F32;
}

impl WithDType for f64 {
    const DTYPE: DType = DType::F64;
}
