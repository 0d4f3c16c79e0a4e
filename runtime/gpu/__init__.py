"""The GPU runtime shared by the cuda and rocm backends (runtime/cuda.py, runtime/rocm.py).

One module per concern: the vendor layer a backend supplies (driver), buffers and pools
(memory), the compile cache (compile, errors), launches (launch), the storage ops by family
(elementwise, reduce, conv, indexing, matmul) that GpuRuntime (runtime) combines, candle-nn's
ops (nn), quantized storage (quant), zero-copy exchange (interop), and the runtime functions
a vendor module exports (exports). Nothing is imported
here: importing runtime.gpu.compile alone must not load a vendor library."""
