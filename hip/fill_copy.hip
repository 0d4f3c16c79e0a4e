// const_set, copy_strided, copy2d: filling and copying views (Candle's const_set_*,
// ucopy_*, copy2d_*).
//
//   const_set_<dt>(numel, num_dims, info, v, out)      out[view] = v, in place; info:
//                                                      dims, strides of out's view
//                                                      (nullptr: contiguous)
//   copy_strided_<dt>(numel, num_dims, info, inp, out) the input view, contiguous into out
//   copy2d_<dt>(src, dst, d1, d2, src_s, dst_s)        for i < d1: dst[i*dst_s + j] =
//                                                      src[i*src_s + j], j < d2 (sizes
//                                                      are size_t here, u32 in Candle)
//
// Pointers point at the first element (offsets applied by the caller).
#include "compat.h"
#include "elementwise.h"

namespace {

template <typename T>
__device__ __forceinline__ void const_set_kernel(const size_t numel, const size_t num_dims, const size_t* info,
                                                 const T v, T* out) {
    const size_t start = opgen::global_thread_id(), step = opgen::grid_threads();
    if (info == nullptr || opgen::is_contiguous(num_dims, info, info + num_dims)) {
        constexpr int N = opgen::pack_width<T>::value;
        size_t done = 0;
        if (N > 1 && opgen::aligned16(out)) {
            opgen::pack<T, N> p;
#pragma unroll
            for (int k = 0; k < N; k++) p.v[k] = v;
            const size_t nvec = numel / N;
            for (size_t i = start; i < nvec; i += step) opgen::store_pack<T, N>(out + i * N, p);
            done = nvec * N;
        }
        for (size_t i = done + start; i < numel; i += step) out[i] = v;
    } else {
        // A stride-0 (broadcast) view writes one element many times, always with v.
        for (size_t i = start; i < numel; i += step) out[opgen::get_strided_index(i, num_dims, info, info + num_dims)] = v;
    }
}

template <typename T> struct identity_op {
    __device__ __forceinline__ T operator()(T x) const { return x; }
};

template <typename T>
__device__ __forceinline__ void copy_strided_kernel(const size_t numel, const size_t num_dims, const size_t* info,
                                                    const T* inp, T* out) {
    opgen::map1<T, T>(identity_op<T>{}, numel, num_dims, info, inp, out);
}

template <typename T>
__device__ __forceinline__ void copy2d_kernel(const T* src, T* dst, const size_t d1, const size_t d2,
                                              const size_t src_s, const size_t dst_s) {
    const size_t start = opgen::global_thread_id(), step = opgen::grid_threads();
    constexpr int N = opgen::pack_width<T>::value;
    if (N > 1 && opgen::aligned16(src) && opgen::aligned16(dst) && d2 % N == 0 && src_s % N == 0 && dst_s % N == 0) {
        // Every row starts 16-byte aligned: move 16 bytes at a time.
        const size_t row = d2 / N, total = d1 * row;
        for (size_t i = start; i < total; i += step) {
            const size_t r = i / row, c = (i % row) * N;
            opgen::store_pack<T, N>(dst + r * dst_s + c, opgen::load_pack<T, N>(src + r * src_s + c));
        }
    } else {
        const size_t total = d1 * d2;
        for (size_t i = start; i < total; i += step) {
            const size_t r = i / d2, c = i % d2;
            dst[r * dst_s + c] = src[r * src_s + c];
        }
    }
}

}  // namespace

extern "C" __global__ void const_set_u8(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t v, uint8_t* out) {
    const_set_kernel(numel, num_dims, info, v, out);
}
extern "C" __global__ void const_set_u32(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t v, uint32_t* out) {
    const_set_kernel(numel, num_dims, info, v, out);
}
extern "C" __global__ void const_set_i64(const size_t numel, const size_t num_dims, const size_t* info, const int64_t v, int64_t* out) {
    const_set_kernel(numel, num_dims, info, v, out);
}
extern "C" __global__ void const_set_bf16(const size_t numel, const size_t num_dims, const size_t* info, const bf16_t v, bf16_t* out) {
    const_set_kernel(numel, num_dims, info, v, out);
}
extern "C" __global__ void const_set_f16(const size_t numel, const size_t num_dims, const size_t* info, const f16_t v, f16_t* out) {
    const_set_kernel(numel, num_dims, info, v, out);
}
extern "C" __global__ void const_set_f32(const size_t numel, const size_t num_dims, const size_t* info, const float v, float* out) {
    const_set_kernel(numel, num_dims, info, v, out);
}
extern "C" __global__ void const_set_f64(const size_t numel, const size_t num_dims, const size_t* info, const double v, double* out) {
    const_set_kernel(numel, num_dims, info, v, out);
}
extern "C" __global__ void copy_strided_u8(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* inp, uint8_t* out) {
    copy_strided_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void copy_strided_u32(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* inp, uint32_t* out) {
    copy_strided_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void copy_strided_i64(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* inp, int64_t* out) {
    copy_strided_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void copy_strided_bf16(const size_t numel, const size_t num_dims, const size_t* info, const bf16_t* inp, bf16_t* out) {
    copy_strided_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void copy_strided_f16(const size_t numel, const size_t num_dims, const size_t* info, const f16_t* inp, f16_t* out) {
    copy_strided_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void copy_strided_f32(const size_t numel, const size_t num_dims, const size_t* info, const float* inp, float* out) {
    copy_strided_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void copy_strided_f64(const size_t numel, const size_t num_dims, const size_t* info, const double* inp, double* out) {
    copy_strided_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void copy2d_u8(const uint8_t* src, uint8_t* dst, const size_t d1, const size_t d2, const size_t src_s, const size_t dst_s) {
    copy2d_kernel(src, dst, d1, d2, src_s, dst_s);
}
extern "C" __global__ void copy2d_u32(const uint32_t* src, uint32_t* dst, const size_t d1, const size_t d2, const size_t src_s, const size_t dst_s) {
    copy2d_kernel(src, dst, d1, d2, src_s, dst_s);
}
extern "C" __global__ void copy2d_i64(const int64_t* src, int64_t* dst, const size_t d1, const size_t d2, const size_t src_s, const size_t dst_s) {
    copy2d_kernel(src, dst, d1, d2, src_s, dst_s);
}
extern "C" __global__ void copy2d_bf16(const bf16_t* src, bf16_t* dst, const size_t d1, const size_t d2, const size_t src_s, const size_t dst_s) {
    copy2d_kernel(src, dst, d1, d2, src_s, dst_s);
}
extern "C" __global__ void copy2d_f16(const f16_t* src, f16_t* dst, const size_t d1, const size_t d2, const size_t src_s, const size_t dst_s) {
    copy2d_kernel(src, dst, d1, d2, src_s, dst_s);
}
extern "C" __global__ void copy2d_f32(const float* src, float* dst, const size_t d1, const size_t d2, const size_t src_s, const size_t dst_s) {
    copy2d_kernel(src, dst, d1, d2, src_s, dst_s);
}
extern "C" __global__ void copy2d_f64(const double* src, double* dst, const size_t d1, const size_t d2, const size_t src_s, const size_t dst_s) {
    copy2d_kernel(src, dst, d1, d2, src_s, dst_s);
}
