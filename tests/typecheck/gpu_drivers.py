"""Checked by mypy in `make lint`, never run: each vendor driver is a runtime.gpu.driver.Driver,
and the cuda one also prepares launches (PreparingDriver) and finds a pointer's device
(ArrayInterfaceDriver). The runtime modules themselves are
checked against the backend contract in generated/contract.py."""

from runtime.cuda import CudaDriver
from runtime.gpu.driver import ArrayInterfaceDriver, Driver, PreparingDriver
from runtime.rocm import HipDriver

_cuda: PreparingDriver = CudaDriver()
_rocm: Driver = HipDriver()
_cuda_arrays: ArrayInterfaceDriver = CudaDriver()
