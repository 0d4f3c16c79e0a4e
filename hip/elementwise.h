// Elementwise maps over contiguous, strided and broadcast layouts.
//
// generated/elementwise.hip (written by `gen` from ops.yaml's `hip:` expressions) and
// the hand-written kernels call these. Every map is a grid-stride loop (any grid
// size is correct); a contiguous map whose pointers are 16-byte aligned moves 16
// bytes per access (N = 16 / sizeof(widest element) elements at a time), then
// finishes the tail element by element.
//
//   unary_map(f, numel, num_dims, info, inp, out)        info: dims, strides
//   binary_map(f, numel, num_dims, info, lhs, rhs, out)  info: dims, lhs_strides, rhs_strides
//
// info == nullptr means every operand is contiguous. f is a functor with a templated
// operator(); it is called with compute_t<T> values (float for bf16/f16) and returns
// compute_t<T> (unary, binary) or bool (comparisons, R = uint8_t).
//
// map1 / map2 / map3 are the general forms: one to three inputs of any element types,
// the op working on the stored types; info holds dims then one stride array per input.
#pragma once
#include "compat.h"

namespace opgen {

// --------------------------------------------------------------------------- general maps

template <typename TO, typename TI, typename Op>
__device__ __forceinline__ void map1(Op op, const size_t numel, const size_t num_dims, const size_t* info,
                                     const TI* inp, TO* out) {
    const size_t start = global_thread_id(), step = grid_threads();
    const bool contiguous = info == nullptr || is_contiguous(num_dims, info, info + num_dims);
    if (contiguous) {
        constexpr int N = pack_width<TI, TO>::value;
        size_t done = 0;
        if (N > 1 && aligned16(inp) && aligned16(out)) {
            const size_t nvec = numel / N;
            for (size_t v = start; v < nvec; v += step) {
                const pack<TI, N> a = load_pack<TI, N>(inp + v * N);
                pack<TO, N> r;
#pragma unroll
                for (int k = 0; k < N; k++) r.v[k] = op(a.v[k]);
                store_pack<TO, N>(out + v * N, r);
            }
            done = nvec * N;
        }
        for (size_t i = done + start; i < numel; i += step) out[i] = op(inp[i]);
    } else {
        const size_t* dims = info;
        const size_t* strides = info + num_dims;
        for (size_t i = start; i < numel; i += step) out[i] = op(inp[get_strided_index(i, num_dims, dims, strides)]);
    }
}

template <typename TO, typename TA, typename TB, typename Op>
__device__ __forceinline__ void map2(Op op, const size_t numel, const size_t num_dims, const size_t* info,
                                     const TA* a, const TB* b, TO* out) {
    const size_t start = global_thread_id(), step = grid_threads();
    const size_t* dims = info;
    const size_t* sa = info ? info + num_dims : nullptr;
    const size_t* sb = info ? info + 2 * num_dims : nullptr;
    const bool ca = info == nullptr || is_contiguous(num_dims, dims, sa);
    const bool cb = info == nullptr || is_contiguous(num_dims, dims, sb);
    if (ca && cb) {
        constexpr int N = pack_width<TA, TB, TO>::value;
        size_t done = 0;
        if (N > 1 && aligned16(a) && aligned16(b) && aligned16(out)) {
            const size_t nvec = numel / N;
            for (size_t v = start; v < nvec; v += step) {
                const pack<TA, N> x = load_pack<TA, N>(a + v * N);
                const pack<TB, N> y = load_pack<TB, N>(b + v * N);
                pack<TO, N> r;
#pragma unroll
                for (int k = 0; k < N; k++) r.v[k] = op(x.v[k], y.v[k]);
                store_pack<TO, N>(out + v * N, r);
            }
            done = nvec * N;
        }
        for (size_t i = done + start; i < numel; i += step) out[i] = op(a[i], b[i]);
    } else {
        for (size_t i = start; i < numel; i += step) {
            const size_t ia = ca ? i : get_strided_index(i, num_dims, dims, sa);
            const size_t ib = cb ? i : get_strided_index(i, num_dims, dims, sb);
            out[i] = op(a[ia], b[ib]);
        }
    }
}

template <typename TO, typename TA, typename TB, typename TC, typename Op>
__device__ __forceinline__ void map3(Op op, const size_t numel, const size_t num_dims, const size_t* info,
                                     const TA* a, const TB* b, const TC* c, TO* out) {
    const size_t start = global_thread_id(), step = grid_threads();
    const size_t* dims = info;
    const size_t* sa = info ? info + num_dims : nullptr;
    const size_t* sb = info ? info + 2 * num_dims : nullptr;
    const size_t* sc = info ? info + 3 * num_dims : nullptr;
    const bool ca = info == nullptr || is_contiguous(num_dims, dims, sa);
    const bool cb = info == nullptr || is_contiguous(num_dims, dims, sb);
    const bool cc = info == nullptr || is_contiguous(num_dims, dims, sc);
    if (ca && cb && cc) {
        constexpr int N = pack_width<TA, TB, TC, TO>::value;
        size_t done = 0;
        if (N > 1 && aligned16(a) && aligned16(b) && aligned16(c) && aligned16(out)) {
            const size_t nvec = numel / N;
            for (size_t v = start; v < nvec; v += step) {
                const pack<TA, N> x = load_pack<TA, N>(a + v * N);
                const pack<TB, N> y = load_pack<TB, N>(b + v * N);
                const pack<TC, N> z = load_pack<TC, N>(c + v * N);
                pack<TO, N> r;
#pragma unroll
                for (int k = 0; k < N; k++) r.v[k] = op(x.v[k], y.v[k], z.v[k]);
                store_pack<TO, N>(out + v * N, r);
            }
            done = nvec * N;
        }
        for (size_t i = done + start; i < numel; i += step) out[i] = op(a[i], b[i], c[i]);
    } else {
        for (size_t i = start; i < numel; i += step) {
            const size_t ia = ca ? i : get_strided_index(i, num_dims, dims, sa);
            const size_t ib = cb ? i : get_strided_index(i, num_dims, dims, sb);
            const size_t ic = cc ? i : get_strided_index(i, num_dims, dims, sc);
            out[i] = op(a[ia], b[ib], c[ic]);
        }
    }
}

// --------------------------------------------------------------------------- registry ops

// The result of an op computed in compute_t<T>, stored as R: rounded back to T when
// R is T (unary, binary), converted otherwise (bool -> uint8_t for comparisons).
template <typename T, typename R> struct store_as {
    template <typename V> static __device__ __forceinline__ R apply(V v) { return static_cast<R>(v); }
};
template <typename T> struct store_as<T, T> {
    template <typename V> static __device__ __forceinline__ T apply(V v) {
        return from_compute<T>(static_cast<compute_t<T>>(v));
    }
};

template <typename T, typename F> struct in_compute1 {
    F f;
    __device__ __forceinline__ T operator()(T x) const { return store_as<T, T>::apply(f(to_compute(x))); }
};
template <typename T, typename R, typename F> struct in_compute2 {
    F f;
    __device__ __forceinline__ R operator()(T x, T y) const {
        return store_as<T, R>::apply(f(to_compute(x), to_compute(y)));
    }
};

template <typename T, typename F>
__device__ __forceinline__ void unary_map(F f, const size_t numel, const size_t num_dims, const size_t* info,
                                          const T* inp, T* out) {
    map1<T, T>(in_compute1<T, F>{f}, numel, num_dims, info, inp, out);
}

template <typename T, typename R, typename F>
__device__ __forceinline__ void binary_map(F f, const size_t numel, const size_t num_dims, const size_t* info,
                                           const T* lhs, const T* rhs, R* out) {
    map2<R, T, T>(in_compute2<T, R, F>{f}, numel, num_dims, info, lhs, rhs, out);
}

}  // namespace opgen
