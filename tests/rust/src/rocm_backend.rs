//! A numbered GPU backend, mocked: devices rocm:0, rocm:1, ...
use crate::mock::{MockComm, MockDevice, MockQStorage, MockStorage};
use crate::{DeviceLocation, Result};

#[derive(Debug, Clone, PartialEq)] // not Copy: a GPU device handle is not
pub struct RocmDevice {
    pub ordinal: usize,
}

impl MockDevice for RocmDevice {
    const BACKEND: &'static str = "rocm";
    fn mock_location(&self) -> DeviceLocation {
        DeviceLocation::Rocm { gpu_id: self.ordinal }
    }
    fn mock_new(ordinal: usize) -> Result<Self> {
        Ok(Self { ordinal })
    }
}

pub type RocmStorage = MockStorage<RocmDevice>;
pub type QRocmStorage = MockQStorage<RocmDevice>;
pub type RocmComm = MockComm<RocmDevice>;
