// Elementwise maps over contiguous, strided and broadcast layouts.
//
// generated/elementwise.hip (written by `gen` from ops.yaml's `hip:` expressions) and
// the hand-written kernels call these. Every map is a grid-stride loop (any grid
// size is correct); a contiguous map whose pointers are 16-byte aligned moves 16
// bytes per access (N = 16 / sizeof(widest element) elements at a time; kUnroll
// accesses per operand in flight per thread), then finishes the tail element by element.
//
// A strided view whose second-to-last dim has stride 1 and whose last dim does not (a
// transposed matrix, or a batch of them: reading in output order would touch one
// element per row) goes through 32 x 32 tiles in shared memory instead: a block reads a
// tile along the unit-stride dim, then writes it along the output's rows (map1, map2).
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

// --------------------------------------------------------------------------- tiles

// 16-byte accesses per operand in flight per thread in the contiguous maps. 1: 2 and 4 were
// no faster once the grid holds 64 blocks per multiprocessor (runtime/gpu/launch.py's
// geometry; figures: bench/results/NOTES.md, "Tuning figures").
#ifndef OPGEN_EW_UNROLL
#define OPGEN_EW_UNROLL 1
#endif
constexpr int kUnroll = OPGEN_EW_UNROLL;
constexpr unsigned int kTile = 32;

// A view read through tiles: rank >= 2, the second-to-last dim of stride 1 and the last
// not (both longer than 1).
__device__ __forceinline__ bool tile_friendly(const size_t num_dims, const size_t* dims, const size_t* strides) {
    return num_dims >= 2 && strides[num_dims - 2] == 1 && strides[num_dims - 1] != 1 && dims[num_dims - 2] > 1 &&
           dims[num_dims - 1] > 1;
}

// The tiles of a view of dims (batch..., R, C): tile t of the grid-stride loop covers rows
// [r0, r0 + 32) and columns [c0, c0 + 32) of batch b.
struct tile_walk {
    size_t R, C, tiles_r, tiles_c, per_batch, total;
    __device__ __forceinline__ tile_walk(const size_t numel, const size_t num_dims, const size_t* dims) {
        R = dims[num_dims - 2];
        C = dims[num_dims - 1];
        tiles_r = (R + kTile - 1) / kTile;
        tiles_c = (C + kTile - 1) / kTile;
        per_batch = tiles_r * tiles_c;
        total = per_batch * (numel / (R * C));
    }
    __device__ __forceinline__ void at(size_t t, size_t& b, size_t& r0, size_t& c0) const {
        b = t / per_batch;
        const size_t rest = t - b * per_batch, tr = rest / tiles_c;
        r0 = tr * kTile;
        c0 = (rest - tr * tiles_c) * kTile;
    }
};

// The buffer offset of the first element of batch b (dims before the last two).
__device__ __forceinline__ size_t batch_offset(size_t b, const size_t num_dims, const size_t* dims,
                                               const size_t* strides) {
    return num_dims > 2 ? get_strided_index(b, num_dims - 2, dims, strides) : 0;
}

// A tile is covered in rounds of kPer elements per thread, the loads of a round issued
// together (with 256 threads, one round: four loads in flight per thread).
constexpr unsigned int kTileElems = kTile * kTile;
constexpr int kPer = 4;

// map1 over a tile-friendly input: the op's results go through a shared tile.
template <typename TO, typename TI, typename Op>
__device__ __forceinline__ void map1_tiled(Op op, const size_t numel, const size_t num_dims, const size_t* dims,
                                           const TI* inp, TO* out) {
    __shared__ TO tile[kTile][kTile + 1];
    const size_t* strides = dims + num_dims;
    const tile_walk w(numel, num_dims, dims);
    const size_t sc = strides[num_dims - 1];
    const unsigned int nt = blockDim.x;
    for (size_t t = blockIdx.x; t < w.total; t += gridDim.x) {
        size_t b, r0, c0;
        w.at(t, b, r0, c0);
        const TI* in = inp + batch_offset(b, num_dims, dims, strides);
        // read: consecutive threads, consecutive rows (unit stride)
        for (unsigned int base = threadIdx.x; base < kTileElems; base += kPer * nt) {
            TI x[kPer];
#pragma unroll
            for (int i = 0; i < kPer; i++) {
                const unsigned int k = base + i * nt;
                const size_t r = r0 + (k % kTile), c = c0 + (k / kTile);
                if (k < kTileElems && r < w.R && c < w.C) x[i] = in[r + c * sc];
            }
#pragma unroll
            for (int i = 0; i < kPer; i++) {
                const unsigned int k = base + i * nt;
                const size_t r = r0 + (k % kTile), c = c0 + (k / kTile);
                if (k < kTileElems && r < w.R && c < w.C) tile[k / kTile][k % kTile] = op(x[i]);
            }
        }
        __syncthreads();
        TO* o = out + b * (w.R * w.C);
        for (unsigned int k = threadIdx.x; k < kTileElems; k += nt) {
            const size_t r = r0 + (k / kTile), c = c0 + (k % kTile);
            if (r < w.R && c < w.C) o[r * w.C + c] = tile[k % kTile][k / kTile];
        }
        __syncthreads();
    }
}

// map2 with at least one tile-friendly input: those inputs go through shared tiles, the
// others are read in output order (the op is inlined once).
template <typename TO, typename TA, typename TB, typename Op>
__device__ __forceinline__ void map2_tiled(Op op, const size_t numel, const size_t num_dims, const size_t* dims,
                                           const size_t* sa, const size_t* sb, const TA* a, const TB* b, TO* out) {
    __shared__ TA tile_a[kTile][kTile + 1];
    __shared__ TB tile_b[kTile][kTile + 1];
    const bool ta = tile_friendly(num_dims, dims, sa), tb = tile_friendly(num_dims, dims, sb);
    const tile_walk w(numel, num_dims, dims);
    const size_t sar = sa[num_dims - 2], sac = sa[num_dims - 1];
    const size_t sbr = sb[num_dims - 2], sbc = sb[num_dims - 1];
    const unsigned int nt = blockDim.x;
    for (size_t t = blockIdx.x; t < w.total; t += gridDim.x) {
        size_t bi, r0, c0;
        w.at(t, bi, r0, c0);
        const TA* pa = a + batch_offset(bi, num_dims, dims, sa);
        const TB* pb = b + batch_offset(bi, num_dims, dims, sb);
        for (unsigned int base = threadIdx.x; base < kTileElems; base += kPer * nt) {
            TA x[kPer];
            TB y[kPer];
#pragma unroll
            for (int i = 0; i < kPer; i++) {
                const unsigned int k = base + i * nt;
                const size_t r = r0 + (k % kTile), c = c0 + (k / kTile);
                if (k < kTileElems && r < w.R && c < w.C) {
                    if (ta) x[i] = pa[r * sar + c * sac];
                    if (tb) y[i] = pb[r * sbr + c * sbc];
                }
            }
#pragma unroll
            for (int i = 0; i < kPer; i++) {
                const unsigned int k = base + i * nt;
                const size_t r = r0 + (k % kTile), c = c0 + (k / kTile);
                if (k < kTileElems && r < w.R && c < w.C) {
                    if (ta) tile_a[k / kTile][k % kTile] = x[i];
                    if (tb) tile_b[k / kTile][k % kTile] = y[i];
                }
            }
        }
        __syncthreads();
        TO* o = out + bi * (w.R * w.C);
        for (unsigned int base = threadIdx.x; base < kTileElems; base += kPer * nt) {
            TA x[kPer];
            TB y[kPer];
#pragma unroll
            for (int i = 0; i < kPer; i++) {
                const unsigned int k = base + i * nt;
                const size_t r = r0 + (k / kTile), c = c0 + (k % kTile);
                if (k < kTileElems && r < w.R && c < w.C) {
                    x[i] = ta ? tile_a[k % kTile][k / kTile] : pa[r * sar + c * sac];
                    y[i] = tb ? tile_b[k % kTile][k / kTile] : pb[r * sbr + c * sbc];
                }
            }
#pragma unroll
            for (int i = 0; i < kPer; i++) {
                const unsigned int k = base + i * nt;
                const size_t r = r0 + (k / kTile), c = c0 + (k % kTile);
                if (k < kTileElems && r < w.R && c < w.C) o[r * w.C + c] = op(x[i], y[i]);
            }
        }
        __syncthreads();
    }
}

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
            size_t v = start;
            for (; kUnroll > 1 && v + (kUnroll - 1) * step < nvec; v += kUnroll * step) {
                pack<TI, N> a[kUnroll];
#pragma unroll
                for (int u = 0; u < kUnroll; u++) a[u] = load_pack<TI, N>(inp + (v + u * step) * N);
#pragma unroll
                for (int u = 0; u < kUnroll; u++) {
                    pack<TO, N> r;
#pragma unroll
                    for (int k = 0; k < N; k++) r.v[k] = op(a[u].v[k]);
                    store_pack<TO, N>(out + (v + u * step) * N, r);
                }
            }
            for (; v < nvec; v += step) {
                const pack<TI, N> a = load_pack<TI, N>(inp + v * N);
                pack<TO, N> r;
#pragma unroll
                for (int k = 0; k < N; k++) r.v[k] = op(a.v[k]);
                store_pack<TO, N>(out + v * N, r);
            }
            done = nvec * N;
        }
        for (size_t i = done + start; i < numel; i += step) out[i] = op(inp[i]);
    } else if (tile_friendly(num_dims, info, info + num_dims)) {
        map1_tiled<TO, TI>(op, numel, num_dims, info, inp, out);
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
            size_t v = start;
            for (; kUnroll > 1 && v + (kUnroll - 1) * step < nvec; v += kUnroll * step) {
                pack<TA, N> x[kUnroll];
                pack<TB, N> y[kUnroll];
#pragma unroll
                for (int u = 0; u < kUnroll; u++) {
                    x[u] = load_pack<TA, N>(a + (v + u * step) * N);
                    y[u] = load_pack<TB, N>(b + (v + u * step) * N);
                }
#pragma unroll
                for (int u = 0; u < kUnroll; u++) {
                    pack<TO, N> r;
#pragma unroll
                    for (int k = 0; k < N; k++) r.v[k] = op(x[u].v[k], y[u].v[k]);
                    store_pack<TO, N>(out + (v + u * step) * N, r);
                }
            }
            for (; v < nvec; v += step) {
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
    } else if (tile_friendly(num_dims, dims, sa) || tile_friendly(num_dims, dims, sb)) {
        map2_tiled<TO, TA, TB>(op, numel, num_dims, dims, sa, sb, a, b, out);
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
