// Reductions: sum, min, max, argmin, argmax (Candle's fast_sum / fast_min / ... family).
//
//   fast_<op>_<dt>(src_numel, el_to_sum_per_block, num_dims, info, src, dst)
//
// The caller moves the reduced dims last (a permuted view, no copy): the source view
// then is dst_numel = src_numel / el_to_sum_per_block consecutive groups of
// el_to_sum_per_block elements, each reduced to one dst element. info: dims and
// strides of that permuted view (so any set of reduced dims, any strides), or nullptr
// when it is contiguous (reducing the last dims of a contiguous tensor). argmin /
// argmax write u32: the row-major index within the group (runtime/cpu.py's
// reduce_op). el_to_sum_per_block must be >= 1 (an empty reduction is the caller's:
// sum -> zeros, the others -> an error, as the CPU reference).
//
// Launch: any grid (blocks loop over groups), blockDim.x <= 1024 (any size; a power of
// two is fastest). One block per group, threads striding over the group (coalesced when
// the reduced dims are contiguous), then a shared-memory tree.
//
// Semantics (runtime/cpu.py): integer sums wrap; bf16/f16 sum in f32 and round once;
// min / max propagate NaN; argmin / argmax return the first NaN if any, else the first
// extreme element. Float sums are not in numpy's (pairwise) order: compare with a
// tolerance. First version: no warp shuffles, no multi-group-per-block path for short
// groups.
#include "compat.h"

namespace {

struct sum_op {};
struct min_op {};
struct max_op {};
struct argmin_op {};
struct argmax_op {};

constexpr unsigned int kMaxBlock = 1024;
constexpr uint32_t kEmpty = 0xffffffffu;

// Tree reduction over the block of v (every thread passes one); all threads get the result.
template <typename V, typename Combine>
__device__ __forceinline__ V block_reduce(V v, V* sh, Combine comb) {
    const unsigned int tid = threadIdx.x, n = blockDim.x;
    sh[tid] = v;
    __syncthreads();
    unsigned int p = 1;
    while (p < n) p <<= 1;
    for (unsigned int s = p >> 1; s > 0; s >>= 1) {
        if (tid < s && tid + s < n) sh[tid] = comb(sh[tid], sh[tid + s]);
        __syncthreads();
    }
    const V r = sh[0];
    __syncthreads();  // sh is reused by the next group
    return r;
}

template <typename A> struct add_combine {
    __device__ __forceinline__ A operator()(A a, A b) const { return a + b; }
};

template <typename C> struct arg_state {
    C v;
    uint32_t i;  // kEmpty: no element seen
};

// Keeps the preferred of two (value, index) states: NaN first, then the smaller
// (larger) value, then the smaller index.
template <typename C, bool IsMax> struct arg_combine {
    __device__ __forceinline__ arg_state<C> operator()(arg_state<C> a, arg_state<C> b) const {
        if (b.i == kEmpty) return a;
        if (a.i == kEmpty) return b;
        const bool an = opgen::is_nan(a.v), bn = opgen::is_nan(b.v);
        if (an || bn) {
            if (an && bn) return b.i < a.i ? b : a;
            return an ? a : b;
        }
        if (a.v != b.v) return (IsMax ? b.v > a.v : b.v < a.v) ? b : a;
        return b.i < a.i ? b : a;
    }
};

__device__ __forceinline__ size_t source_index(size_t linear, bool contiguous, size_t num_dims, const size_t* info) {
    return contiguous ? linear : opgen::get_strided_index(linear, num_dims, info, info + num_dims);
}

template <typename T, typename O>
__device__ __forceinline__ void sum_kernel(const size_t src_numel, const size_t el, const size_t num_dims,
                                           const size_t* info, const T* src, O* dst) {
    typedef opgen::accum_t<T> A;
    __shared__ A sh[kMaxBlock];
    if (el == 0 || blockDim.x > kMaxBlock) return;
    const bool contiguous = info == nullptr || opgen::is_contiguous(num_dims, info, info + num_dims);
    const size_t dst_numel = src_numel / el;
    for (size_t g = blockIdx.x; g < dst_numel; g += gridDim.x) {
        A acc = A(0);
        for (size_t k = threadIdx.x; k < el; k += blockDim.x) {
            acc = acc + (A)opgen::to_compute(src[source_index(g * el + k, contiguous, num_dims, info)]);
        }
        acc = block_reduce(acc, sh, add_combine<A>{});
        if (threadIdx.x == 0) dst[g] = opgen::from_compute<T>((opgen::compute_t<T>)acc);
    }
}

template <bool IsMax, bool Arg, typename T, typename O>
__device__ __forceinline__ void extreme_kernel(const size_t src_numel, const size_t el, const size_t num_dims,
                                               const size_t* info, const T* src, O* dst) {
    typedef opgen::compute_t<T> C;
    __shared__ arg_state<C> sh[kMaxBlock];
    if (el == 0 || blockDim.x > kMaxBlock) return;
    const bool contiguous = info == nullptr || opgen::is_contiguous(num_dims, info, info + num_dims);
    const size_t dst_numel = src_numel / el;
    const arg_combine<C, IsMax> comb{};
    for (size_t g = blockIdx.x; g < dst_numel; g += gridDim.x) {
        arg_state<C> acc;
        acc.v = C(0);
        acc.i = kEmpty;
        for (size_t k = threadIdx.x; k < el; k += blockDim.x) {
            arg_state<C> x;
            x.v = opgen::to_compute(src[source_index(g * el + k, contiguous, num_dims, info)]);
            x.i = (uint32_t)k;
            acc = comb(acc, x);
        }
        acc = block_reduce(acc, sh, comb);
        if (threadIdx.x == 0) {
            if constexpr (Arg) {
                dst[g] = acc.i;
            } else {
                dst[g] = opgen::from_compute<T>(acc.v);
            }
        }
    }
}

template <typename Op> struct reducer;
template <> struct reducer<sum_op> {
    template <typename T, typename O>
    static __device__ __forceinline__ void run(size_t n, size_t el, size_t nd, const size_t* info, const T* s, O* d) {
        sum_kernel<T, O>(n, el, nd, info, s, d);
    }
};
template <> struct reducer<min_op> {
    template <typename T, typename O>
    static __device__ __forceinline__ void run(size_t n, size_t el, size_t nd, const size_t* info, const T* s, O* d) {
        extreme_kernel<false, false, T, O>(n, el, nd, info, s, d);
    }
};
template <> struct reducer<max_op> {
    template <typename T, typename O>
    static __device__ __forceinline__ void run(size_t n, size_t el, size_t nd, const size_t* info, const T* s, O* d) {
        extreme_kernel<true, false, T, O>(n, el, nd, info, s, d);
    }
};
template <> struct reducer<argmin_op> {
    template <typename T, typename O>
    static __device__ __forceinline__ void run(size_t n, size_t el, size_t nd, const size_t* info, const T* s, O* d) {
        extreme_kernel<false, true, T, O>(n, el, nd, info, s, d);
    }
};
template <> struct reducer<argmax_op> {
    template <typename T, typename O>
    static __device__ __forceinline__ void run(size_t n, size_t el, size_t nd, const size_t* info, const T* s, O* d) {
        extreme_kernel<true, true, T, O>(n, el, nd, info, s, d);
    }
};

template <typename Op, typename T, typename O>
__device__ __forceinline__ void reduce_kernel(const size_t src_numel, const size_t el_to_sum_per_block,
                                              const size_t num_dims, const size_t* info, const T* src, O* dst) {
    reducer<Op>::template run<T, O>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}

}  // namespace

extern "C" __global__ void fast_sum_u8(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const uint8_t* src, uint8_t* dst) {
    reduce_kernel<sum_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_sum_u32(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const uint32_t* src, uint32_t* dst) {
    reduce_kernel<sum_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_sum_i64(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const int64_t* src, int64_t* dst) {
    reduce_kernel<sum_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_sum_bf16(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const bf16_t* src, bf16_t* dst) {
    reduce_kernel<sum_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_sum_f16(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const f16_t* src, f16_t* dst) {
    reduce_kernel<sum_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_sum_f32(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const float* src, float* dst) {
    reduce_kernel<sum_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_sum_f64(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const double* src, double* dst) {
    reduce_kernel<sum_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_min_u8(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const uint8_t* src, uint8_t* dst) {
    reduce_kernel<min_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_min_u32(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const uint32_t* src, uint32_t* dst) {
    reduce_kernel<min_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_min_i64(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const int64_t* src, int64_t* dst) {
    reduce_kernel<min_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_min_bf16(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const bf16_t* src, bf16_t* dst) {
    reduce_kernel<min_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_min_f16(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const f16_t* src, f16_t* dst) {
    reduce_kernel<min_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_min_f32(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const float* src, float* dst) {
    reduce_kernel<min_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_min_f64(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const double* src, double* dst) {
    reduce_kernel<min_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_max_u8(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const uint8_t* src, uint8_t* dst) {
    reduce_kernel<max_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_max_u32(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const uint32_t* src, uint32_t* dst) {
    reduce_kernel<max_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_max_i64(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const int64_t* src, int64_t* dst) {
    reduce_kernel<max_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_max_bf16(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const bf16_t* src, bf16_t* dst) {
    reduce_kernel<max_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_max_f16(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const f16_t* src, f16_t* dst) {
    reduce_kernel<max_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_max_f32(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const float* src, float* dst) {
    reduce_kernel<max_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_max_f64(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const double* src, double* dst) {
    reduce_kernel<max_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmin_u8(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const uint8_t* src, uint32_t* dst) {
    reduce_kernel<argmin_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmin_u32(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const uint32_t* src, uint32_t* dst) {
    reduce_kernel<argmin_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmin_i64(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const int64_t* src, uint32_t* dst) {
    reduce_kernel<argmin_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmin_bf16(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const bf16_t* src, uint32_t* dst) {
    reduce_kernel<argmin_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmin_f16(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const f16_t* src, uint32_t* dst) {
    reduce_kernel<argmin_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmin_f32(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const float* src, uint32_t* dst) {
    reduce_kernel<argmin_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmin_f64(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const double* src, uint32_t* dst) {
    reduce_kernel<argmin_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmax_u8(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const uint8_t* src, uint32_t* dst) {
    reduce_kernel<argmax_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmax_u32(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const uint32_t* src, uint32_t* dst) {
    reduce_kernel<argmax_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmax_i64(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const int64_t* src, uint32_t* dst) {
    reduce_kernel<argmax_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmax_bf16(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const bf16_t* src, uint32_t* dst) {
    reduce_kernel<argmax_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmax_f16(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const f16_t* src, uint32_t* dst) {
    reduce_kernel<argmax_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmax_f32(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const float* src, uint32_t* dst) {
    reduce_kernel<argmax_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
extern "C" __global__ void fast_argmax_f64(const size_t src_numel, const size_t el_to_sum_per_block, const size_t num_dims, const size_t* info, const double* src, uint32_t* dst) {
    reduce_kernel<argmax_op>(src_numel, el_to_sum_per_block, num_dims, info, src, dst);
}
