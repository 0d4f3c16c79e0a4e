// affine, powf, elu: elementwise ops with scalar parameters (Candle's affine / upowf / uelu).
//
//   affine_<dt>(numel, num_dims, info, inp, out, mul, add)     every dtype
//   powf_<dt>(numel, num_dims, info, exponent, inp, out)       float dtypes
//   elu_<dt>(numel, num_dims, info, alpha, inp, out)           float dtypes
//
// info: dims[num_dims] then strides[num_dims] of the input view, or nullptr when it is
// contiguous; out is contiguous. Semantics are runtime/cpu/__init__.py's:
//   affine: x * mul + add with mul and add already converted to the dtype (Rust `as`,
//           done by the caller); integers wrap; bf16/f16 round to the dtype after the
//           multiply and after the add (Candle's half types do); f32/f64 round after
//           each (compile with FP contraction off: runtime/gpu/compile.py does).
//   powf:   pow(x, exponent) in compute_t: the exponent is passed as compute_t<dt>
//           (float for bf16/f16, not rounded to the half type, as the CPU reference).
//   elu:    x if x's sign bit is clear, else alpha * (exp(x) - 1); alpha is passed as
//           the dtype (rounded to it, as the CPU reference).
#include "compat.h"
#include "elementwise.h"

namespace {

template <typename T> struct affine_op {
    T mul, add;
    __device__ __forceinline__ T operator()(T x) const {
        typedef opgen::compute_t<T> C;
        typedef opgen::accum_t<T> A;  // unsigned for integers: wraps without UB
        const T p = opgen::from_compute<T>((C)((A)opgen::to_compute(x) * (A)opgen::to_compute(mul)));
        return opgen::from_compute<T>((C)((A)opgen::to_compute(p) + (A)opgen::to_compute(add)));
    }
};

template <typename T> struct powf_op {
    opgen::compute_t<T> e;
    __device__ __forceinline__ T operator()(T x) const { return opgen::from_compute<T>(pow(opgen::to_compute(x), e)); }
};

template <typename T> struct elu_op {
    opgen::compute_t<T> alpha;
    __device__ __forceinline__ T operator()(T x) const {
        typedef opgen::compute_t<T> C;
        const C c = opgen::to_compute(x);
        return opgen::from_compute<T>(opgen::sign_bit(c) ? (exp(c) - C(1)) * alpha : c);
    }
};

template <typename T>
__device__ __forceinline__ void affine_kernel(const size_t numel, const size_t num_dims, const size_t* info,
                                              const T* inp, T* out, const T mul, const T add) {
    opgen::map1<T, T>(affine_op<T>{mul, add}, numel, num_dims, info, inp, out);
}

template <typename T>
__device__ __forceinline__ void powf_kernel(const size_t numel, const size_t num_dims, const size_t* info,
                                            const opgen::compute_t<T> e, const T* inp, T* out) {
    opgen::map1<T, T>(powf_op<T>{e}, numel, num_dims, info, inp, out);
}

template <typename T>
__device__ __forceinline__ void elu_kernel(const size_t numel, const size_t num_dims, const size_t* info,
                                           const T alpha, const T* inp, T* out) {
    opgen::map1<T, T>(elu_op<T>{opgen::to_compute(alpha)}, numel, num_dims, info, inp, out);
}

}  // namespace

extern "C" __global__ void affine_u8(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* inp, uint8_t* out, const uint8_t mul, const uint8_t add) {
    affine_kernel(numel, num_dims, info, inp, out, mul, add);
}
extern "C" __global__ void affine_u32(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* inp, uint32_t* out, const uint32_t mul, const uint32_t add) {
    affine_kernel(numel, num_dims, info, inp, out, mul, add);
}
extern "C" __global__ void affine_i64(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* inp, int64_t* out, const int64_t mul, const int64_t add) {
    affine_kernel(numel, num_dims, info, inp, out, mul, add);
}
extern "C" __global__ void affine_bf16(const size_t numel, const size_t num_dims, const size_t* info, const bf16_t* inp, bf16_t* out, const bf16_t mul, const bf16_t add) {
    affine_kernel(numel, num_dims, info, inp, out, mul, add);
}
extern "C" __global__ void affine_f16(const size_t numel, const size_t num_dims, const size_t* info, const f16_t* inp, f16_t* out, const f16_t mul, const f16_t add) {
    affine_kernel(numel, num_dims, info, inp, out, mul, add);
}
extern "C" __global__ void affine_f32(const size_t numel, const size_t num_dims, const size_t* info, const float* inp, float* out, const float mul, const float add) {
    affine_kernel(numel, num_dims, info, inp, out, mul, add);
}
extern "C" __global__ void affine_f64(const size_t numel, const size_t num_dims, const size_t* info, const double* inp, double* out, const double mul, const double add) {
    affine_kernel(numel, num_dims, info, inp, out, mul, add);
}
extern "C" __global__ void powf_bf16(const size_t numel, const size_t num_dims, const size_t* info, const float param, const bf16_t* inp, bf16_t* out) {
    powf_kernel(numel, num_dims, info, param, inp, out);
}
extern "C" __global__ void powf_f16(const size_t numel, const size_t num_dims, const size_t* info, const float param, const f16_t* inp, f16_t* out) {
    powf_kernel(numel, num_dims, info, param, inp, out);
}
extern "C" __global__ void powf_f32(const size_t numel, const size_t num_dims, const size_t* info, const float param, const float* inp, float* out) {
    powf_kernel(numel, num_dims, info, param, inp, out);
}
extern "C" __global__ void powf_f64(const size_t numel, const size_t num_dims, const size_t* info, const double param, const double* inp, double* out) {
    powf_kernel(numel, num_dims, info, param, inp, out);
}
extern "C" __global__ void elu_bf16(const size_t numel, const size_t num_dims, const size_t* info, const bf16_t param, const bf16_t* inp, bf16_t* out) {
    elu_kernel(numel, num_dims, info, param, inp, out);
}
extern "C" __global__ void elu_f16(const size_t numel, const size_t num_dims, const size_t* info, const f16_t param, const f16_t* inp, f16_t* out) {
    elu_kernel(numel, num_dims, info, param, inp, out);
}
extern "C" __global__ void elu_f32(const size_t numel, const size_t num_dims, const size_t* info, const float param, const float* inp, float* out) {
    elu_kernel(numel, num_dims, info, param, inp, out);
}
extern "C" __global__ void elu_f64(const size_t numel, const size_t num_dims, const size_t* info, const double param, const double* inp, double* out) {
    elu_kernel(numel, num_dims, info, param, inp, out);
}
