//! The host backend: one device, unnumbered (candle-core's `Device::Cpu`).
use crate::mock::{MockComm, MockDevice, MockQStorage, MockStorage};
use crate::{DeviceLocation, Result};

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuDevice;

impl MockDevice for CpuDevice {
    const BACKEND: &'static str = "cpu";
    fn mock_location(&self) -> DeviceLocation {
        DeviceLocation::Cpu
    }
    fn mock_new(_: usize) -> Result<Self> {
        Ok(CpuDevice)
    }
}

pub type CpuStorage = MockStorage<CpuDevice>;
pub type QCpuStorage = MockQStorage<CpuDevice>;
pub type CpuComm = MockComm<CpuDevice>;
