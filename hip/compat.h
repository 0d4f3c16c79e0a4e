// opgen's compat header: the ONE place in hip/ that tells NVIDIA from AMD.
//
// Every kernel source includes this first. It is compiled by NVRTC (CUDA) and by
// hiprtc (ROCm), neither needing a GPU; the offline branches (nvcc / hipcc) are
// written but not exercised yet. It gives the kernels one vocabulary on both vendors:
//
//   uint8_t .. int64_t, size_t   fixed-width integers (the RTCs have no <cstdint>)
//   f16_t, bf16_t                the registry's half types, as device storage types
//   opgen::compute_t<T>          the type a kernel computes T in (float for the
//                                half types, T otherwise), with opgen::to_compute(x)
//                                and opgen::from_compute<T>(c) (round to nearest even)
//   opgen::accum_t<T>            the accumulator of sums and dot products: float for
//                                half types, T for f32/f64, the unsigned type of the
//                                same or larger width for integers (wraps, as numpy)
//   exp, log, tanh, erf, ...     float / double overloads of the C math functions
//                                (the RTCs provide them; `abs` works for int64_t too;
//                                `round` rounds half away from zero)
//   opgen::load_pack / store_pack    16-byte (or narrower, aligned) vector accesses
//   opgen::shfl_down             warp shuffle of any 4n-byte value, both vendors
//   opgen::get_strided_index     Candle's strided index: info = dims[num_dims]
//                                followed by strides[num_dims], element strides
//
// Conventions of every kernel in hip/: a storage's start offset is applied by the
// caller (the pointer passed points at the view's first element); strides count
// elements; a stride of 0 broadcasts. Strides are size_t: a negative stride works
// when passed as its two's complement (index arithmetic wraps modulo 2^64).
#pragma once

// --------------------------------------------------------------------------- vendor switch

#if defined(__HIPCC_RTC__) || defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__)
#define OPGEN_HIP 1
#define OPGEN_CUDA 0
#elif defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define OPGEN_HIP 0
#define OPGEN_CUDA 1
#else
#error "hip/compat.h: compile with NVRTC / nvcc (CUDA) or hiprtc / hipcc (ROCm)"
#endif

#if OPGEN_HIP
// hiprtc (ROCm 5.x and 6.x) has the HIP runtime header and __half built in; including
// <hip/hip_runtime.h> fails there. Offline (hipcc) they must be included.
#if !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#endif
#else
#include <cuda_fp16.h>  // NVRTC: from the CUDA include dir (-I), see runtime/gpu/compile.py
#include <cuda_bf16.h>
#endif

// --------------------------------------------------------------------------- integers

#if defined(__HIPCC_RTC__) || defined(__CUDACC_RTC__)
// The same types HIP's own RTC headers use (__hip_internal): redeclaring a typedef
// to the same type is allowed, so this is safe where a newer RTC defines them too.
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef signed short int16_t;
typedef unsigned short uint16_t;
typedef signed int int32_t;
typedef unsigned int uint32_t;
typedef signed long long int64_t;
typedef unsigned long long uint64_t;
#else
#include <stdint.h>
#include <stddef.h>
#endif

static_assert(sizeof(size_t) == 8, "opgen kernels assume a 64-bit size_t");
static_assert(sizeof(int64_t) == 8 && sizeof(uint32_t) == 4 && sizeof(uint8_t) == 1, "fixed-width ints");

// --------------------------------------------------------------------------- half types

typedef __half f16_t;

#if OPGEN_CUDA
typedef __nv_bfloat16 bf16_t;
#define OPGEN_BF16_NATIVE 1
#elif defined(OPGEN_HIP_NATIVE_BF16)
// Opt-in (define it with -DOPGEN_HIP_NATIVE_BF16) where the ROCm hiprtc has
// __hip_bfloat16 built in (ROCm 6.x). ROCm 5.2's hiprtc has no bf16 type at all;
// the default below is bit-identical and works on every ROCm.
typedef __hip_bfloat16 bf16_t;
#define OPGEN_BF16_NATIVE 1
#else
// The project's own bf16: the 16 high bits of an IEEE float. Conversions from float
// round to nearest even and keep NaN a (quiet) NaN of the same sign, as ml_dtypes.
struct opgen_bf16 {
    unsigned short bits;
};
typedef opgen_bf16 bf16_t;
#define OPGEN_BF16_NATIVE 0
#endif

static_assert(sizeof(f16_t) == 2 && sizeof(bf16_t) == 2, "half types are 16-bit");

namespace opgen {

__device__ __forceinline__ float bf16_to_float(bf16_t v) {
#if OPGEN_BF16_NATIVE
    return __bfloat162float(v);
#else
    return __uint_as_float(((unsigned int)v.bits) << 16);
#endif
}

__device__ __forceinline__ bf16_t float_to_bf16(float f) {
#if OPGEN_BF16_NATIVE
    return __float2bfloat16(f);  // round to nearest even
#else
    unsigned int u = __float_as_uint(f);
    bf16_t r;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        r.bits = (unsigned short)((u >> 16) | 0x0040u);  // NaN: quiet, sign kept
    } else {
        u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
        r.bits = (unsigned short)(u >> 16);
    }
    return r;
#endif
}

__device__ __forceinline__ float f16_to_float(f16_t v) { return __half2float(v); }
__device__ __forceinline__ f16_t float_to_f16(float f) { return __float2half(f); }  // nearest even

// double -> f16 with ONE rounding (to nearest even), as numpy's float64 -> float16
// (double -> float -> half would round twice). Done on the bits: portable to both
// vendors and every architecture.
__device__ __forceinline__ f16_t double_to_f16(double d) {
    unsigned long long u = (unsigned long long)__double_as_longlong(d);
    unsigned short sign = (unsigned short)((u >> 48) & 0x8000u);
    unsigned long long a = u & 0x7fffffffffffffffull;
    unsigned short h;
    if (a > 0x7ff0000000000000ull) {
        h = (unsigned short)(sign | 0x7e00u | (unsigned short)((a >> 42) & 0x1ffu));  // NaN
    } else if (a >= 0x40effe0000000000ull) {
        h = (unsigned short)(sign | 0x7c00u);  // >= 65520 (and inf): inf
    } else {
        int e = (int)(a >> 52) - 1023;  // unbiased exponent
        unsigned long long m = (a & 0x000fffffffffffffull) | 0x0010000000000000ull;  // 53 bits
        if (a == 0) {
            h = sign;
        } else {
            // f16 value = m * 2^(e - 52); target: integer q = value / 2^-24 (subnormal
            // units) or, if normal, with 10 fraction bits.
            int shift;  // how many low bits of m to drop
            unsigned short expbits;
            if (e < -14) {  // subnormal (or underflow to 0)
                shift = 52 - 24 - e;  // value / 2^-24 = m * 2^(e - 52 + 24)
                expbits = 0;
            } else {
                shift = 42;  // keep 11 bits (implicit 1 + 10)
                expbits = (unsigned short)(e + 15);
            }
            unsigned long long q;
            if (shift >= 64) {
                q = 0;
            } else {
                unsigned long long rem = m & ((1ull << shift) - 1ull);
                unsigned long long half = 1ull << (shift - 1);
                q = m >> shift;
                if (rem > half || (rem == half && (q & 1ull))) q += 1ull;
            }
            if (expbits == 0) {
                h = (unsigned short)(sign | (unsigned short)q);  // q may reach 0x400: min normal
            } else {
                // q in [0x400, 0x800]; 0x800 carries into the exponent (still < inf here).
                unsigned int bits = ((unsigned int)expbits << 10) + (unsigned int)(q - 0x400ull);
                h = (unsigned short)(sign | bits);
            }
        }
    }
    return __ushort_as_half(h);
}

// --------------------------------------------------------------------------- compute types

template <typename T> struct compute_type { typedef T type; };
template <> struct compute_type<f16_t> { typedef float type; };
template <> struct compute_type<bf16_t> { typedef float type; };
template <typename T> using compute_t = typename compute_type<T>::type;

template <typename T> __device__ __forceinline__ T to_compute(T x) { return x; }
__device__ __forceinline__ float to_compute(f16_t x) { return f16_to_float(x); }
__device__ __forceinline__ float to_compute(bf16_t x) { return bf16_to_float(x); }

template <typename T> struct from_compute_impl {
    static __device__ __forceinline__ T apply(compute_t<T> x) { return x; }
};
template <> struct from_compute_impl<f16_t> {
    static __device__ __forceinline__ f16_t apply(float x) { return float_to_f16(x); }
};
template <> struct from_compute_impl<bf16_t> {
    static __device__ __forceinline__ bf16_t apply(float x) { return float_to_bf16(x); }
};
// from_compute<T>(c): the T nearest to c (round to nearest even for the half types).
template <typename T> __device__ __forceinline__ T from_compute(compute_t<T> x) {
    return from_compute_impl<T>::apply(x);
}

// A double rounded to a float dtype as the CPU reference's float64 -> dtype cast:
// one rounding for f32 and f16 (numpy), through f32 for bf16 (ml_dtypes).
template <typename T> __device__ __forceinline__ T from_double(double x) { return (T)x; }
template <> __device__ __forceinline__ f16_t from_double<f16_t>(double x) { return double_to_f16(x); }
template <> __device__ __forceinline__ bf16_t from_double<bf16_t>(double x) { return float_to_bf16((float)x); }

// Accumulators: integers accumulate in an unsigned type (defined wrap-around, equal
// modulo 2^bits to numpy's wrapping sums once cast back), floats in compute_t.
template <typename T> struct accum_type { typedef compute_t<T> type; };
template <> struct accum_type<uint8_t> { typedef uint32_t type; };
template <> struct accum_type<uint32_t> { typedef uint32_t type; };
template <> struct accum_type<int64_t> { typedef uint64_t type; };
template <typename T> using accum_t = typename accum_type<T>::type;

template <typename T> struct is_float_type { static constexpr bool value = false; };
template <> struct is_float_type<float> { static constexpr bool value = true; };
template <> struct is_float_type<double> { static constexpr bool value = true; };
template <> struct is_float_type<f16_t> { static constexpr bool value = true; };
template <> struct is_float_type<bf16_t> { static constexpr bool value = true; };

template <typename A, typename B> struct is_same { static constexpr bool value = false; };
template <typename A> struct is_same<A, A> { static constexpr bool value = true; };

// NaN test usable in templates over every compute type (false for integers).
template <typename T> __device__ __forceinline__ bool is_nan(T) { return false; }
__device__ __forceinline__ bool is_nan(float x) { return x != x; }
__device__ __forceinline__ bool is_nan(double x) { return x != x; }

__device__ __forceinline__ bool sign_bit(float x) { return (__float_as_uint(x) >> 31) != 0u; }
__device__ __forceinline__ bool sign_bit(double x) { return __double_as_longlong(x) < 0; }

// --------------------------------------------------------------------------- math
//
// The C math functions (exp, log, sqrt, sin, cos, tanh, erf, ceil, floor, round,
// pow, fabs) have float and double overloads in both RTCs' built-in headers, and
// abs has int / long long / float / double ones: registry expressions such as
// `exp(x)` or `abs(x)` resolve to them for every compute_t. Nothing is redeclared
// here (a second declaration would clash with the vendor's).

// numpy's minimum / maximum: NaN if either is NaN, else the smaller / larger, the
// second argument on ties (so maximum(-0.0, 0.0) is 0.0, as numpy).
template <typename T> __device__ __forceinline__ T min_nan(T a, T b) { return is_nan(a) || a < b ? a : b; }
template <typename T> __device__ __forceinline__ T max_nan(T a, T b) { return is_nan(a) || a > b ? a : b; }

// --------------------------------------------------------------------------- threads

__device__ __forceinline__ size_t global_thread_id() {
    return (size_t)blockIdx.x * (size_t)blockDim.x + (size_t)threadIdx.x;
}
__device__ __forceinline__ size_t grid_threads() { return (size_t)blockDim.x * (size_t)gridDim.x; }

// --------------------------------------------------------------------------- warp widths
//
// The one place in hip/ that knows how wide a warp is (tests/gpu/test_warp_width.py fails on
// a kernel that hard-codes it elsewhere, outside code only NVIDIA compiles):
//   warpSize            the width at run time: 32 on NVIDIA; 64 on AMD CDNA (gfx9: MI100,
//                       MI200, MI300), 32 on RDNA (gfx10+) unless compiled for wave64.
//   OPGEN_WARP_SIZE     the same at compile time where the compiler says it (amdgcn clang's
//                       __AMDGCN_WAVEFRONT_SIZE); 32 on NVIDIA.
//   OPGEN_LANE_GROUP    32: a group of lanes that kernels may split a block into at either
//                       width (NVIDIA's warp; half a wave64, or a wave32, on AMD), shuffling
//                       only inside a group (opgen::group_shfl_down).
//   opgen::lane_mask(n) NVIDIA's mask of lanes [0, n) of a warp; AMD's shuffles take none.

#if OPGEN_HIP
#if defined(__AMDGCN_WAVEFRONT_SIZE)
#define OPGEN_WARP_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define OPGEN_WARP_SIZE 64  // the widest AMD wavefront: sizes per-warp arrays safely
#endif
#else
#define OPGEN_WARP_SIZE 32
#endif
#define OPGEN_LANE_GROUP 32

__device__ __forceinline__ unsigned int lane_mask(unsigned int active) {
#if OPGEN_HIP
    (void)active;
    return 0xffffffffu;  // unused by AMD's shuffles
#else
    return active >= 32u ? 0xffffffffu : ((1u << active) - 1u);
#endif
}

// --------------------------------------------------------------------------- warp shuffles
//
// shfl_down(v, delta, mask): lane i gets v of lane i + delta of its warp (wavefront: 32 or
// 64 lanes on AMD, 32 on NVIDIA; `warpSize` says which). Any trivially copyable value of
// a multiple of 4 bytes, moved one 32-bit word at a time. mask (NVIDIA only; AMD has no
// lane masks) names the lanes taking part: every lane named must make the same call. A
// lane reading past its warp's last active lane gets an unspecified value: callers guard.

__device__ __forceinline__ int shfl_down_word(int v, unsigned int delta, unsigned int mask) {
#if OPGEN_HIP
    (void)mask;
    return __shfl_down(v, delta);
#else
    return __shfl_down_sync(mask, v, delta);
#endif
}

template <typename V>
__device__ __forceinline__ V shfl_down(V v, unsigned int delta, unsigned int mask = 0xffffffffu) {
    static_assert(sizeof(V) % 4 == 0, "shfl_down moves 32-bit words");
    union words {
        V value;
        int w[sizeof(V) / 4];
    } u;
    u.value = v;
#pragma unroll
    for (int k = 0; k < (int)(sizeof(V) / 4); k++) u.w[k] = shfl_down_word(u.w[k], delta, mask);
    return u.value;
}

// shfl_xor(v, lanes): lane i gets v of lane i ^ lanes of its warp (the butterfly of a
// sort or a reduction), every lane of the warp taking part; word by word, as shfl_down.
__device__ __forceinline__ int shfl_xor_word(int v, unsigned int lanes) {
#if OPGEN_HIP
    return __shfl_xor(v, (int)lanes);
#else
    return __shfl_xor_sync(0xffffffffu, v, lanes);
#endif
}

template <typename V>
__device__ __forceinline__ V shfl_xor(V v, unsigned int lanes) {
    static_assert(sizeof(V) % 4 == 0, "shfl_xor moves 32-bit words");
    union words {
        V value;
        int w[sizeof(V) / 4];
    } u;
    u.value = v;
#pragma unroll
    for (int k = 0; k < (int)(sizeof(V) / 4); k++) u.w[k] = shfl_xor_word(u.w[k], lanes);
    return u.value;
}

// shfl_down inside a group of OPGEN_LANE_GROUP lanes: lane i gets v of lane i + delta of its
// group (past the group's end: unspecified, as above). The same shuffle as shfl_down on
// NVIDIA, where the group is the warp; on AMD a wave64 holds two groups, kept apart.
__device__ __forceinline__ float group_shfl_down(float v, unsigned int delta) {
#if OPGEN_HIP
    return __shfl_down(v, delta, OPGEN_LANE_GROUP);
#else
    return __shfl_down_sync(0xffffffffu, v, delta);
#endif
}

// --------------------------------------------------------------------------- vector accesses

template <int Bytes> struct raw_type;
template <> struct raw_type<1> { typedef unsigned char type; };
template <> struct raw_type<2> { typedef unsigned short type; };
template <> struct raw_type<4> { typedef unsigned int type; };
template <> struct raw_type<8> { typedef uint2 type; };
template <> struct raw_type<16> { typedef uint4 type; };

// N consecutive elements of T moved as one access of N * sizeof(T) bytes (at most 16).
template <typename T, int N> struct alignas(sizeof(T) * N) pack {
    T v[N];
};

// Elements per 16-byte access for the widest of the given types.
template <typename A, typename B = A, typename C = A, typename D = A> struct pack_width {
    static constexpr size_t wa = sizeof(A) > sizeof(B) ? sizeof(A) : sizeof(B);
    static constexpr size_t wc = sizeof(C) > sizeof(D) ? sizeof(C) : sizeof(D);
    static constexpr int value = (int)(16 / (wa > wc ? wa : wc));
};

template <typename T, int N> __device__ __forceinline__ pack<T, N> load_pack(const T* p) {
    typedef typename raw_type<(int)sizeof(T) * N>::type raw;
    pack<T, N> r;
    *reinterpret_cast<raw*>(&r) = *reinterpret_cast<const raw*>(p);
    return r;
}
template <typename T, int N> __device__ __forceinline__ void store_pack(T* p, const pack<T, N>& r) {
    typedef typename raw_type<(int)sizeof(T) * N>::type raw;
    *reinterpret_cast<raw*>(p) = *reinterpret_cast<const raw*>(&r);
}

__device__ __forceinline__ bool aligned16(const void* p) {
    return (reinterpret_cast<unsigned long long>(p) & 15ull) == 0ull;
}

// --------------------------------------------------------------------------- layouts

// Candle's get_strided_index: the buffer offset of the idx-th element (row-major) of a
// view with dims[num_dims] and strides[num_dims].
__device__ __forceinline__ size_t get_strided_index(size_t idx, const size_t num_dims, const size_t* dims,
                                                    const size_t* strides) {
    size_t strided_i = 0;
#pragma unroll 1  // num_dims is small and known only at run time: unrolling only grows code
    for (size_t d = 0; d < num_dims; d++) {
        const size_t dim_idx = num_dims - 1 - d;
        strided_i += (idx % dims[dim_idx]) * strides[dim_idx];
        idx /= dims[dim_idx];
    }
    return strided_i;
}

// Candle's is_contiguous (dims of size 1 may have any stride), as runtime.layout.
__device__ __forceinline__ bool is_contiguous(const size_t num_dims, const size_t* dims, const size_t* strides) {
    size_t acc = 1;
#pragma unroll 1
    for (size_t d = 0; d < num_dims; d++) {
        const size_t dim_idx = num_dims - 1 - d;
        if (dims[dim_idx] > 1 && acc != strides[dim_idx]) return false;
        acc *= dims[dim_idx];
    }
    return true;
}

// Programmatic dependent launch (NVIDIA sm_90; no-ops elsewhere and in a plain launch). A
// kernel of ops.yaml's PROGRAMMATIC_KERNELS is launched with programmatic stream serialization
// and may start while the kernel before it still runs: it reads and writes no device memory
// before wait_for_predecessor() (which returns once that kernel has finished and its writes are
// visible), but for an L2 prefetch (no data reaches the kernel; L2 is the device's point of
// coherence) and for data no kernel writes (hip/quantized.hip says where).
__device__ __forceinline__ void wait_for_predecessor() {
#if OPGEN_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
// Lets the next kernel (when launched programmatically) start as blocks of this one free room.
__device__ __forceinline__ void release_dependents() {
#if OPGEN_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
// Bytes [p, p + nbytes) into L2 (p 16-byte aligned, nbytes a multiple of 16): one bulk copy
// engine request, no registers held.
__device__ __forceinline__ void prefetch_l2(const void* p, uint32_t nbytes) {
#if OPGEN_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(p), "r"(nbytes) : "memory");
#else
    (void)p;
    (void)nbytes;
#endif
}

}  // namespace opgen
