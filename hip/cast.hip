// to_dtype: cast_<src>_<dst> for every pair of the seven dtypes (Candle's cast_*).
//
//   cast_<src>_<dst>(numel, num_dims, info, inp, out)
//
// info: dims, strides of the input view, or nullptr when contiguous; out is
// contiguous. Semantics are runtime/cpu/__init__.py's to_dtype, bit for bit:
//   float -> int    Rust `as`: truncate toward zero, saturate at the bounds, NaN -> 0
//   int -> int      wraps (C conversion to the target's width), as Rust `as`
//   int -> f32/f64  one rounding (to nearest even)
//   int -> f16      through f64, then ONE rounding to f16 (numpy's float64 -> float16)
//   int -> bf16     through f64 and f32, then bf16 (ml_dtypes rounds f64 -> f32 -> bf16)
//   f64 -> f16      one rounding; f64 -> bf16 through f32 (as ml_dtypes)
//   other floats    widening is exact; narrowing rounds to nearest even; overflow -> inf
#include "compat.h"
#include "elementwise.h"

namespace {

// Rust `as` from a float (every float dtype is exact in double) to an integer type.
template <typename D> struct float_to_int;
template <> struct float_to_int<uint8_t> {
    static __device__ __forceinline__ uint8_t apply(double x) {
        if (!(x > 0.0)) return 0;  // NaN, negative, zero
        if (x >= 255.0) return 255;
        return (uint8_t)x;
    }
};
template <> struct float_to_int<uint32_t> {
    static __device__ __forceinline__ uint32_t apply(double x) {
        if (!(x > 0.0)) return 0u;
        if (x >= 4294967295.0) return 4294967295u;
        return (uint32_t)x;
    }
};
template <> struct float_to_int<int64_t> {
    static __device__ __forceinline__ int64_t apply(double x) {
        if (x != x) return 0;
        if (x >= 9223372036854775808.0) return (int64_t)0x7fffffffffffffffll;  // 2^63: first double above i64::MAX
        if (x <= -9223372036854775808.0) return (int64_t)(-0x7fffffffffffffffll - 1);
        return (int64_t)x;
    }
};

// Any dtype to double: exact for every float dtype, one rounding for i64.
template <typename S> __device__ __forceinline__ double to_double(S x) { return (double)opgen::to_compute(x); }

// The general case: integer -> integer (wrap) and the identity.
template <typename S, typename D, bool SF = opgen::is_float_type<S>::value, bool DF = opgen::is_float_type<D>::value>
struct cast_impl {
    static __device__ __forceinline__ D apply(S x) { return (D)x; }
};
// float -> int: saturating Rust `as`.
template <typename S, typename D> struct cast_impl<S, D, true, false> {
    static __device__ __forceinline__ D apply(S x) { return float_to_int<D>::apply(to_double(x)); }
};
// int or float -> float, by target.
template <typename S, bool SF> struct cast_impl<S, double, SF, true> {
    static __device__ __forceinline__ double apply(S x) { return to_double(x); }
};
template <typename S, bool SF> struct cast_impl<S, float, SF, true> {
    // int -> f32 converts directly (one rounding, as numpy); f64 -> f32 rounds once;
    // half types widen exactly.
    static __device__ __forceinline__ float apply(S x) { return (float)opgen::to_compute(x); }
};
template <typename S, bool SF> struct cast_impl<S, f16_t, SF, true> {
    static __device__ __forceinline__ f16_t apply(S x) {
        if (opgen::is_same<S, float>::value || opgen::is_same<S, bf16_t>::value) {
            return opgen::float_to_f16((float)opgen::to_compute(x));  // exact in float: one rounding
        }
        return opgen::double_to_f16(to_double(x));  // f64 and integers: one rounding from double
    }
};
template <typename S, bool SF> struct cast_impl<S, bf16_t, SF, true> {
    static __device__ __forceinline__ bf16_t apply(S x) {
        // f32, f16: one rounding; f64 and integers: through double then float, as ml_dtypes.
        return opgen::float_to_bf16((float)to_double(x));
    }
};
template <> struct cast_impl<f16_t, f16_t, true, true> {
    static __device__ __forceinline__ f16_t apply(f16_t x) { return x; }
};
template <> struct cast_impl<bf16_t, bf16_t, true, true> {
    static __device__ __forceinline__ bf16_t apply(bf16_t x) { return x; }
};
template <> struct cast_impl<float, float, true, true> {
    static __device__ __forceinline__ float apply(float x) { return x; }
};
template <> struct cast_impl<double, double, true, true> {
    static __device__ __forceinline__ double apply(double x) { return x; }
};

template <typename S, typename D> struct cast_op {
    __device__ __forceinline__ D operator()(S x) const { return cast_impl<S, D>::apply(x); }
};

template <typename S, typename D>
__device__ __forceinline__ void cast_kernel(const size_t numel, const size_t num_dims, const size_t* info,
                                            const S* inp, D* out) {
    opgen::map1<D, S>(cast_op<S, D>{}, numel, num_dims, info, inp, out);
}

}  // namespace

extern "C" __global__ void cast_u8_u8(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* inp, uint8_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u8_u32(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* inp, uint32_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u8_i64(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* inp, int64_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u8_bf16(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* inp, bf16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u8_f16(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* inp, f16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u8_f32(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* inp, float* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u8_f64(const size_t numel, const size_t num_dims, const size_t* info, const uint8_t* inp, double* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u32_u8(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* inp, uint8_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u32_u32(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* inp, uint32_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u32_i64(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* inp, int64_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u32_bf16(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* inp, bf16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u32_f16(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* inp, f16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u32_f32(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* inp, float* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_u32_f64(const size_t numel, const size_t num_dims, const size_t* info, const uint32_t* inp, double* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_i64_u8(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* inp, uint8_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_i64_u32(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* inp, uint32_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_i64_i64(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* inp, int64_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_i64_bf16(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* inp, bf16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_i64_f16(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* inp, f16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_i64_f32(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* inp, float* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_i64_f64(const size_t numel, const size_t num_dims, const size_t* info, const int64_t* inp, double* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_bf16_u8(const size_t numel, const size_t num_dims, const size_t* info, const bf16_t* inp, uint8_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_bf16_u32(const size_t numel, const size_t num_dims, const size_t* info, const bf16_t* inp, uint32_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_bf16_i64(const size_t numel, const size_t num_dims, const size_t* info, const bf16_t* inp, int64_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_bf16_bf16(const size_t numel, const size_t num_dims, const size_t* info, const bf16_t* inp, bf16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_bf16_f16(const size_t numel, const size_t num_dims, const size_t* info, const bf16_t* inp, f16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_bf16_f32(const size_t numel, const size_t num_dims, const size_t* info, const bf16_t* inp, float* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_bf16_f64(const size_t numel, const size_t num_dims, const size_t* info, const bf16_t* inp, double* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f16_u8(const size_t numel, const size_t num_dims, const size_t* info, const f16_t* inp, uint8_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f16_u32(const size_t numel, const size_t num_dims, const size_t* info, const f16_t* inp, uint32_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f16_i64(const size_t numel, const size_t num_dims, const size_t* info, const f16_t* inp, int64_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f16_bf16(const size_t numel, const size_t num_dims, const size_t* info, const f16_t* inp, bf16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f16_f16(const size_t numel, const size_t num_dims, const size_t* info, const f16_t* inp, f16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f16_f32(const size_t numel, const size_t num_dims, const size_t* info, const f16_t* inp, float* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f16_f64(const size_t numel, const size_t num_dims, const size_t* info, const f16_t* inp, double* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f32_u8(const size_t numel, const size_t num_dims, const size_t* info, const float* inp, uint8_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f32_u32(const size_t numel, const size_t num_dims, const size_t* info, const float* inp, uint32_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f32_i64(const size_t numel, const size_t num_dims, const size_t* info, const float* inp, int64_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f32_bf16(const size_t numel, const size_t num_dims, const size_t* info, const float* inp, bf16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f32_f16(const size_t numel, const size_t num_dims, const size_t* info, const float* inp, f16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f32_f32(const size_t numel, const size_t num_dims, const size_t* info, const float* inp, float* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f32_f64(const size_t numel, const size_t num_dims, const size_t* info, const float* inp, double* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f64_u8(const size_t numel, const size_t num_dims, const size_t* info, const double* inp, uint8_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f64_u32(const size_t numel, const size_t num_dims, const size_t* info, const double* inp, uint32_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f64_i64(const size_t numel, const size_t num_dims, const size_t* info, const double* inp, int64_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f64_bf16(const size_t numel, const size_t num_dims, const size_t* info, const double* inp, bf16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f64_f16(const size_t numel, const size_t num_dims, const size_t* info, const double* inp, f16_t* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f64_f32(const size_t numel, const size_t num_dims, const size_t* info, const double* inp, float* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
extern "C" __global__ void cast_f64_f64(const size_t numel, const size_t num_dims, const size_t* info, const double* inp, double* out) {
    cast_kernel(numel, num_dims, info, inp, out);
}
