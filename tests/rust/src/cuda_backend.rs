//! A numbered GPU backend, mocked: devices cuda:0, cuda:1, ...
use crate::mock::{MockComm, MockDevice, MockQStorage, MockStorage};
use crate::{DeviceLocation, Result};

#[derive(Debug, Clone, PartialEq)] // not Copy: a GPU device handle is not
pub struct CudaDevice {
    pub ordinal: usize,
}

impl MockDevice for CudaDevice {
    const BACKEND: &'static str = "cuda";
    fn mock_location(&self) -> DeviceLocation {
        DeviceLocation::Cuda { gpu_id: self.ordinal }
    }
    fn mock_new(ordinal: usize) -> Result<Self> {
        Ok(Self { ordinal })
    }
}

pub type CudaStorage = MockStorage<CudaDevice>;
pub type QCudaStorage = MockQStorage<CudaDevice>;
pub type CudaComm = MockComm<CudaDevice>;
