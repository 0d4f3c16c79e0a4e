"""The runtime functions of a GPU backend, written once for cuda and rocm: what the generated
arms call as runtime.cuda.<name> and runtime.rocm.<name>, each bound to that vendor's
GpuRuntime. A vendor module makes its runtime, then star-imports this module:

    _rt = GpuRuntime(CudaDriver())
    export(_rt)
    from runtime.gpu.exports import *

`export` (runtime/gpu/runtime.py) hands `_rt` over and drops this module from sys.modules, so
that each vendor's import runs the body below again, for its own runtime: the names become
plain attributes of the vendor module (bound methods and partials, called as directly as when
each vendor listed them). The import itself is static: mypy follows it when it checks each
vendor module against its Protocol in generated/contract.py, and `gen` follows it too
(generator/registry/runtime_scan.py) to decide which arms are implemented.

Every public name here is exported (no `__all__`): what is not one of the runtime functions
is imported under a private name."""

import functools as _functools

from runtime.gpu import interop as _interop, nn as _nn, quant as _quant
from runtime.gpu.runtime import GpuRuntime as _GpuRuntime, exported as _exported

_rt: _GpuRuntime = _exported()

# Memory and device methods, storage ops (runtime/gpu/runtime.py and the family modules it combines).
availability = _rt.availability
to_host = _rt.to_host
from_host = _rt.from_host
to_numpy = _rt.to_numpy
to_device = _rt.to_device
zeros = _rt.zeros
ones = _rt.ones
alloc_uninit = _rt.alloc_uninit
storage_from_slice = _rt.storage_from_slice
synchronize = _rt.synchronize
location = _rt.location
supports_bf16 = _rt.supports_bf16
set_seed = _rt.set_seed
rand_uniform = _rt.rand_uniform
rand_normal = _rt.rand_normal
try_clone = _rt.try_clone
dtype = _rt.dtype
device = _rt.device
unary = _rt.unary
binary = _rt.binary
cmp = _rt.cmp
affine = _rt.affine
powf = _rt.powf
elu = _rt.elu
to_dtype = _rt.to_dtype
where_cond = _rt.where_cond
const_set = _rt.const_set
copy_strided_src = _rt.copy_strided_src
copy2d = _rt.copy2d
reduce_op = _rt.reduce_op
matmul = _rt.matmul
conv1d = _rt.conv1d
conv_transpose1d = _rt.conv_transpose1d
conv2d = _rt.conv2d
conv_transpose2d = _rt.conv_transpose2d
avg_pool2d = _rt.avg_pool2d
max_pool2d = _rt.max_pool2d
upsample_nearest1d = _rt.upsample_nearest1d
upsample_nearest2d = _rt.upsample_nearest2d
gather = _rt.gather
scatter_set = _rt.scatter_set
scatter_add = _rt.scatter_add
index_select = _rt.index_select
index_add = _rt.index_add

# The process-wide switches (runtime/gpu/switches.py): Candle's set_gemm_reduced_precision_*,
# TF32 convolutions, cuDNN autotuning, QMatMul's exact x; each with its getter.
gemm_reduced_precision_f32 = _rt.gemm_reduced_precision_f32
set_gemm_reduced_precision_f32 = _rt.set_gemm_reduced_precision_f32
gemm_reduced_precision_f16 = _rt.gemm_reduced_precision_f16
set_gemm_reduced_precision_f16 = _rt.set_gemm_reduced_precision_f16
gemm_reduced_precision_bf16 = _rt.gemm_reduced_precision_bf16
set_gemm_reduced_precision_bf16 = _rt.set_gemm_reduced_precision_bf16
conv_reduced_precision_f32 = _rt.conv_reduced_precision_f32
set_conv_reduced_precision_f32 = _rt.set_conv_reduced_precision_f32
autotune = _rt.autotune
set_autotune = _rt.set_autotune
qmatmul_exact_x = _rt.qmatmul_exact_x
set_qmatmul_exact_x = _rt.set_qmatmul_exact_x

# candle-nn's ops (runtime/gpu/nn.py), called by the hooks of generated/nn.py.
sigmoid = _functools.partial(_nn.sigmoid, _rt)
softmax_last_dim = _functools.partial(_nn.softmax_last_dim, _rt)
rms_norm = _functools.partial(_nn.rms_norm, _rt)
layer_norm = _functools.partial(_nn.layer_norm, _rt)
rope_i = _functools.partial(_nn.rope_i, _rt)
rope = _functools.partial(_nn.rope, _rt)
rope_thd = _functools.partial(_nn.rope_thd, _rt)
sdpa = _functools.partial(_nn.sdpa, _rt)
arg_sort = _functools.partial(_nn.arg_sort, _rt)

# Quantized storage (runtime/gpu/quant.py): Device's quantize, qzeros, qstorage_from_bytes
# and QStorage's q_<method>.
quantize = _functools.partial(_quant.quantize, _rt)
qzeros = _functools.partial(_quant.qzeros, _rt)
qstorage_from_bytes = _functools.partial(_quant.qstorage_from_bytes, _rt)
q_dtype = _functools.partial(_quant.q_dtype, _rt)
q_device = _functools.partial(_quant.q_device, _rt)
q_size_in_bytes = _functools.partial(_quant.q_size_in_bytes, _rt)
q_data = _functools.partial(_quant.q_data, _rt)
q_dequantize = _functools.partial(_quant.q_dequantize, _rt)
q_dequantize_f16 = _functools.partial(_quant.q_dequantize_f16, _rt)
q_matmul = _functools.partial(_quant.q_matmul, _rt)

# Zero-copy exchange (runtime/gpu/interop.py), called by generated View and from_dlpack
# (the CUDA Array Interface is CUDA's: runtime/cuda.py adds it).
dlpack_device = _functools.partial(_interop.dlpack_device, _rt)
to_dlpack = _functools.partial(_interop.to_dlpack, _rt)
from_dlpack = _functools.partial(_interop.from_dlpack, _rt)
