//! A numbered GPU backend, mocked: devices metal:0, metal:1, ...
use crate::mock::{MockDevice, MockQStorage, MockStorage};
use crate::{DeviceLocation, Result};

#[derive(Debug, Clone, PartialEq)] // not Copy: a GPU device handle is not
pub struct MetalDevice {
    pub ordinal: usize,
}

impl MockDevice for MetalDevice {
    const BACKEND: &'static str = "metal";
    fn mock_location(&self) -> DeviceLocation {
        DeviceLocation::Metal { gpu_id: self.ordinal }
    }
    fn mock_new(ordinal: usize) -> Result<Self> {
        Ok(Self { ordinal })
    }
}

pub type MetalStorage = MockStorage<MetalDevice>;
pub type QMetalStorage = MockQStorage<MetalDevice>;
