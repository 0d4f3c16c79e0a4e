// where_cond: out = cond != 0 ? on_true : on_false (Candle's where_<cond>_<dtype>).
//
//   where_cond_<cond>_<dt>(numel, num_dims, info, ids, t, f, out)
//
// cond (ids) is u8, u32 or i64; t, f and out have the value dtype (every dtype).
// info: dims[num_dims], then the strides of ids, t and f (4 * num_dims), or nullptr
// when all three are contiguous; out is contiguous.
#include "compat.h"
#include "elementwise.h"

namespace {

template <typename C, typename T> struct where_op {
    __device__ __forceinline__ T operator()(C c, T t, T f) const { return c != C(0) ? t : f; }
};

template <typename C, typename T>
__device__ __forceinline__ void where_kernel(const size_t numel, const size_t num_dims, const size_t* info,
                                             const C* ids, const T* t, const T* f, T* out) {
    opgen::map3<T, C, T, T>(where_op<C, T>{}, numel, num_dims, info, ids, t, f, out);
}

}  // namespace

extern "C" __global__ void where_cond_u8_u8(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* ids, const uint8_t* t, const uint8_t* f, uint8_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u8_u32(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* ids, const uint32_t* t, const uint32_t* f, uint32_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u8_i64(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* ids, const int64_t* t, const int64_t* f, int64_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u8_bf16(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* ids, const bf16_t* t, const bf16_t* f, bf16_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u8_f16(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* ids, const f16_t* t, const f16_t* f, f16_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u8_f32(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* ids, const float* t, const float* f, float* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u8_f64(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* ids, const double* t, const double* f, double* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u32_u8(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* ids, const uint8_t* t, const uint8_t* f, uint8_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u32_u32(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* ids, const uint32_t* t, const uint32_t* f, uint32_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u32_i64(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* ids, const int64_t* t, const int64_t* f, int64_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u32_bf16(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* ids, const bf16_t* t, const bf16_t* f, bf16_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u32_f16(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* ids, const f16_t* t, const f16_t* f, f16_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u32_f32(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* ids, const float* t, const float* f, float* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_u32_f64(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* ids, const double* t, const double* f, double* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_i64_u8(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* ids, const uint8_t* t, const uint8_t* f, uint8_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_i64_u32(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* ids, const uint32_t* t, const uint32_t* f, uint32_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_i64_i64(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* ids, const int64_t* t, const int64_t* f, int64_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_i64_bf16(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* ids, const bf16_t* t, const bf16_t* f, bf16_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_i64_f16(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* ids, const f16_t* t, const f16_t* f, f16_t* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_i64_f32(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* ids, const float* t, const float* f, float* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
extern "C" __global__ void where_cond_i64_f64(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* ids, const double* t, const double* f, double* out) {
    where_kernel(numel, num_dims, info, ids, t, f, out);
}
