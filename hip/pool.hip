// Pooling and nearest upsampling over (b, c, ...) tensors, one thread per output
// element (Candle's avg_pool2d / max_pool2d / upsample_nearest* kernels).
//
//   avg_pool2d_<dt>(dst_numel, w_k, h_k, w_stride, h_stride, info, src, dst)
//   max_pool2d_<dt>(dst_numel, w_k, h_k, w_stride, h_stride, info, src, dst)
//       src (b, c, h, w) -> dst (b, c, (h - h_k) / h_stride + 1, (w - w_k) / w_stride + 1),
//       no padding. info: src dims[4], src strides[4].
//   upsample_nearest1d_<dt>(dst_numel, l_out, info, src, dst)
//       src (b, c, l) -> dst (b, c, l_out), source index floor(o * l / l_out);
//       info: src dims[3], strides[3].
//   upsample_nearest2d_<dt>(dst_numel, w_out, h_out, info, src, dst)
//       src (b, c, h, w) -> dst (b, c, h_out, w_out), floor(o * in / out) per axis;
//       info: src dims[4], strides[4]. (Candle passes float scales; the exact integer
//       form is runtime/cpu/nn.py's and avoids off-by-one at exact multiples.)
//
// dst is contiguous; the first parameter is dst's element count. Semantics
// (runtime/cpu/nn.py): avg_pool2d sums floats in f64 and divides once, rounding to the
// dtype as numpy / ml_dtypes do; integers sum exactly (64-bit) and truncate the mean
// toward zero; max_pool2d propagates NaN and computes bf16/f16 in f32.
#include "compat.h"

namespace {

template <typename T, bool IsFloat = opgen::is_float_type<T>::value> struct window_mean;
template <typename T> struct window_mean<T, true> {
    typedef double acc;
    static __device__ __forceinline__ double of(T x) { return (double)opgen::to_compute(x); }
    static __device__ __forceinline__ T mean(double sum, size_t n) { return opgen::from_double<T>(sum / (double)n); }
};
template <> struct window_mean<int64_t, false> {
    typedef uint64_t acc;  // wraps as numpy's int64 sum; reinterpreted as signed below
    static __device__ __forceinline__ uint64_t of(int64_t x) { return (uint64_t)x; }
    static __device__ __forceinline__ int64_t mean(uint64_t sum, size_t n) { return (int64_t)sum / (int64_t)n; }
};
template <typename T> struct window_mean<T, false> {  // u8, u32
    typedef uint64_t acc;
    static __device__ __forceinline__ uint64_t of(T x) { return (uint64_t)x; }
    static __device__ __forceinline__ T mean(uint64_t sum, size_t n) { return (T)(sum / (uint64_t)n); }
};

template <bool IsMax, typename T>
__device__ __forceinline__ void pool2d_kernel(const size_t dst_numel, const size_t w_k, const size_t h_k,
                                              const size_t w_stride, const size_t h_stride, const size_t* info,
                                              const T* src, T* dst) {
    const size_t* d = info;  // b, c, h, w
    const size_t* s = info + 4;
    const size_t c = d[1], h_out = (d[2] - h_k) / h_stride + 1, w_out = (d[3] - w_k) / w_stride + 1;
    for (size_t i = opgen::global_thread_id(); i < dst_numel; i += opgen::grid_threads()) {
        const size_t b = i / (c * h_out * w_out), ch = i / (h_out * w_out) % c;
        const size_t oy = i / w_out % h_out, ox = i % w_out;
        const T* base = src + b * s[0] + ch * s[1] + oy * h_stride * s[2] + ox * w_stride * s[3];
        if constexpr (IsMax) {
            opgen::compute_t<T> m = opgen::to_compute(base[0]);
            for (size_t ky = 0; ky < h_k; ky++) {
                for (size_t kx = 0; kx < w_k; kx++) m = opgen::max_nan(m, opgen::to_compute(base[ky * s[2] + kx * s[3]]));
            }
            dst[i] = opgen::from_compute<T>(m);
        } else {
            typedef window_mean<T> W;
            typename W::acc sum = 0;
            for (size_t ky = 0; ky < h_k; ky++) {
                for (size_t kx = 0; kx < w_k; kx++) sum += W::of(base[ky * s[2] + kx * s[3]]);
            }
            dst[i] = W::mean(sum, h_k * w_k);
        }
    }
}

template <typename T>
__device__ __forceinline__ void upsample_nearest1d_kernel(const size_t dst_numel, const size_t l_out,
                                                          const size_t* info, const T* src, T* dst) {
    const size_t* d = info;  // b, c, l
    const size_t* s = info + 3;
    const size_t c = d[1], l_in = d[2];
    for (size_t i = opgen::global_thread_id(); i < dst_numel; i += opgen::grid_threads()) {
        const size_t b = i / (c * l_out), ch = i / l_out % c, o = i % l_out;
        dst[i] = src[b * s[0] + ch * s[1] + (o * l_in / l_out) * s[2]];
    }
}

template <typename T>
__device__ __forceinline__ void upsample_nearest2d_kernel(const size_t dst_numel, const size_t w_out,
                                                          const size_t h_out, const size_t* info, const T* src,
                                                          T* dst) {
    const size_t* d = info;  // b, c, h, w
    const size_t* s = info + 4;
    const size_t c = d[1], h_in = d[2], w_in = d[3];
    for (size_t i = opgen::global_thread_id(); i < dst_numel; i += opgen::grid_threads()) {
        const size_t b = i / (c * h_out * w_out), ch = i / (h_out * w_out) % c;
        const size_t oy = i / w_out % h_out, ox = i % w_out;
        dst[i] = src[b * s[0] + ch * s[1] + (oy * h_in / h_out) * s[2] + (ox * w_in / w_out) * s[3]];
    }
}

}  // namespace

// avg_pool2d
// max_pool2d
// upsample_nearest1d
// upsample_nearest2d

// The entry points, one per (pattern, values) of ops.yaml's `kernel:` patterns: generated by gen
// from templates/hip/pool.h.j2.
#include "pool_entries.h"
