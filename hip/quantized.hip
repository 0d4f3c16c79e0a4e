// GGML's quantized blocks (the layouts of llama.cpp's ggml-common.h): dequantize and
// matrix-vector products, for q4_0, q4_1, q8_0, q4_k and q6_k.
//
//   dequantize_<fmt>_f32(blocks, out, numel)   the first numel weights (a multiple of the
//   dequantize_<fmt>_f16(blocks, out, numel)   format's 32 or 256) -> contiguous f32 / f16
//   qmatvec_<fmt>(w, x, y, n, k, rows)         y[r, j] = sum_i w[j, i] * x[r, i]: w an (n, k)
//                                              matrix of blocks, row-major (k a multiple of
//                                              the block), x (rows, k) and y (rows, n)
//                                              contiguous f32, x 16-byte aligned
//
// Dequantizing computes each weight with the operations of GGML's dequantize_row_*, in f32.
// Every one of them is exact but one (q4_1: q*d + m, q4_k: (d*sc)*q - dmin*m; the others are
// products of at most 24 significant bits), and the compile options forbid contracting that
// one into an FMA: the result is the cpu reference's bit for bit; f16 rounds it once more
// (nearest even).
//
// Launch: dequantize_*: any grid and block (a thread per 8 weights, grid-stride).
// qmatvec_*: blocks of exactly kThreads (128) threads, any grid (grid-stride over items).
//
// qmatvec_q4_0 and qmatvec_q8_0, when k % 256 == 0 and w is 16-byte aligned (the tiled
// path): a thread block computes 4 outputs, 4 weight rows against one row of x, so every
// value of x it loads serves 4 rows. It streams the 4 rows through shared memory in tiles
// (64 blocks per row for q4_0, 32 for q8_0: 4.5 KB), read with coalesced 16-byte loads: a
// tile row is 1152 or 1088 bytes, a multiple of 16, so tiles start aligned although the
// blocks (18, 34 bytes) are only 2-byte aligned. The next tile is in flight, in registers,
// while the current one is used. Each group of 32 lanes takes 8 blocks at a time, 4 lanes
// per block: a lane reads 8 weights of a block from shared memory (16-bit accesses) and
// the 8 values of x they multiply (two float4 through L1: a group's loads cover 1 KB of x).
// Weights become floats with the exponent trick (one logical op and one add each, no
// integer conversion) and accumulate in f32; a shuffle tree per group, then one shared
// slot per group, give the 4 outputs. Items (4 rows x one row of x) run x rows fastest:
// the thread blocks that read the same weight tile run together, and all but the first
// read it from L2. Many rows of x thus re-read the weights, from L2 where they fit (a
// batched kernel would reuse them from registers).
//
// Everything else (the other formats, other k, rows of x alike) takes the general path: a
// group of 32 lanes per output, a lane per 8 weights, decoded as dequantize does. Correct
// for any shape; not tuned.
#include "compat.h"

namespace {

constexpr int kThreads = 128;                // qmatvec's block size
constexpr int kGroups = kThreads / 32;       // groups of 32 lanes (a warp; half an AMD wave64)
constexpr int kTileRows = 4;                 // weight rows per item of the tiled path
constexpr int kMinBlocks = 8;                // resident blocks per SM qmatvec is built for (NVIDIA: <= 64 registers)

// ---------------------------------------------------------------------------- block bytes
//
// Blocks of 18, 20, 34, 144 and 210 bytes guarantee 2-byte alignment only: 16-bit accesses.

__device__ __forceinline__ uint32_t u16_at(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }
__device__ __forceinline__ uint32_t u32_at(const uint8_t* p) { return u16_at(p) | (u16_at(p + 2) << 16); }
__device__ __forceinline__ float half_at(const uint8_t* p) {
    return opgen::f16_to_float(__ushort_as_half((unsigned short)u16_at(p)));
}

// The exponent trick: a 16-bit word h under the exponent bits of the float 2^23, so that a
// field masked out of it (one logical op) is the float 2^23 + field; an add removes the
// 2^23 exactly. A field p bits up reads as its value times 2^p (exact: the fields stay
// below bit 16). `flip` inverts bits of h first (0x80 per byte: an int8 becomes its value
// + 128).
__device__ __forceinline__ uint32_t under_2p23(uint32_t h, uint32_t flip) { return h ^ (0x4B000000u | flip); }

// Nibble P of a word from under_2p23(h, 0), as (q - 8) * 16^P.
template <int P> __device__ __forceinline__ float q4_field(uint32_t m) {
    return __uint_as_float(m & (0x4B000000u | (0xFu << (4 * P)))) - (8388608.0f + 8.0f * (float)(1u << (4 * P)));
}
// Byte P of a word from under_2p23(h, 0x8080), an int8 q, as q * 256^P.
template <int P> __device__ __forceinline__ float q8_field(uint32_t m) {
    return __uint_as_float(m & (0x4B000000u | (0xFFu << (8 * P)))) - (8388608.0f + 128.0f * (float)(1u << (8 * P)));
}

// ---------------------------------------------------------------------------- formats
//
// kElems weights in kBytes bytes. decode8(block, j, v): weights 8j..8j+7 of a block, with
// the operations (and their order) of GGML's dequantize_row_<fmt>.

// Two 32-bit words of 8 bytes at a 2-byte aligned address.
__device__ __forceinline__ void bytes8(const uint8_t* p, uint32_t (&w)[2]) {
    w[0] = u32_at(p);
    w[1] = u32_at(p + 4);
}
__device__ __forceinline__ uint32_t byte_of(const uint32_t (&w)[2], int i) { return (w[i >> 2] >> (8 * (i & 3))) & 0xFFu; }

struct q4_0 {  // d (f16), qs[16]: weight i < 16 the low nibble of qs[i], i + 16 its high one
    static constexpr int kElems = 32, kBytes = 18;
    static constexpr int kTileBlocks = 64;  // the tiled path's blocks per row and tile: 4.5 KB tiles
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
        const float d = half_at(b);
        uint32_t w[2];
        bytes8(b + 2 + 8 * (j & 1), w);
        const int shift = 4 * (j >> 1);
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = (float)((int)((byte_of(w, i) >> shift) & 0xFu) - 8) * d;
    }
    static __device__ __forceinline__ float scale(const uint8_t* b) { return half_at(b); }
    // The tiled path: a lane takes weights 4s..4s+3 (x in lo) and 16+4s..16+4s+3 (x in hi)
    // of a block, s in 0..3, i.e. qs[4s..4s+3]: two 16-bit halves of nibbles for weights
    // 4s+0, 16+4s+0, 4s+1, 16+4s+1 (and +2, +3). A nibble at position P reads as
    // (q - 8) * 16^P: prescale gives each x the factor 16^-P (exact) once for all rows.
    static __device__ __forceinline__ void prescale(float4& lo, float4& hi) {
        lo.y *= 1.0f / 256.0f;
        lo.w *= 1.0f / 256.0f;
        hi.x *= 1.0f / 16.0f;
        hi.z *= 1.0f / 16.0f;
        hi.y *= 1.0f / 4096.0f;
        hi.w *= 1.0f / 4096.0f;
    }
    // Without the block's d.
    static __device__ __forceinline__ float dot8(const uint8_t* b, int s, const float4& lo, const float4& hi) {
        const uint32_t h0 = under_2p23(u16_at(b + 2 + 4 * s), 0u), h1 = under_2p23(u16_at(b + 4 + 4 * s), 0u);
        float sum = q4_field<0>(h0) * lo.x;
        sum = fmaf(q4_field<1>(h0), hi.x, sum);
        sum = fmaf(q4_field<2>(h0), lo.y, sum);
        sum = fmaf(q4_field<3>(h0), hi.y, sum);
        sum = fmaf(q4_field<0>(h1), lo.z, sum);
        sum = fmaf(q4_field<1>(h1), hi.z, sum);
        sum = fmaf(q4_field<2>(h1), lo.w, sum);
        return fmaf(q4_field<3>(h1), hi.w, sum);
    }
};

struct q4_1 {  // d, m (f16), qs[16] as q4_0: q * d + m
    static constexpr int kElems = 32, kBytes = 20;
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
        const float d = half_at(b), m = half_at(b + 2);
        uint32_t w[2];
        bytes8(b + 4 + 8 * (j & 1), w);
        const int shift = 4 * (j >> 1);
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = (float)((byte_of(w, i) >> shift) & 0xFu) * d + m;
    }
};

struct q8_0 {  // d (f16), qs[32] int8: q * d
    static constexpr int kElems = 32, kBytes = 34;
    static constexpr int kTileBlocks = 32;
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
        const float d = half_at(b);
        uint32_t w[2];
        bytes8(b + 2 + 8 * j, w);
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = (float)(int8_t)byte_of(w, i) * d;
    }
    static __device__ __forceinline__ float scale(const uint8_t* b) { return half_at(b); }
    // The tiled path, as q4_0's: weights 4s..4s+3 are qs[4s..4s+3], 16+4s.. qs[16+4s..],
    // 16-bit halves of two int8 each; the high byte reads as q * 256.
    static __device__ __forceinline__ void prescale(float4& lo, float4& hi) {
        lo.y *= 1.0f / 256.0f;
        lo.w *= 1.0f / 256.0f;
        hi.y *= 1.0f / 256.0f;
        hi.w *= 1.0f / 256.0f;
    }
    static __device__ __forceinline__ float dot8(const uint8_t* b, int s, const float4& lo, const float4& hi) {
        const uint32_t a0 = under_2p23(u16_at(b + 2 + 4 * s), 0x8080u), a1 = under_2p23(u16_at(b + 4 + 4 * s), 0x8080u);
        const uint32_t b0 = under_2p23(u16_at(b + 18 + 4 * s), 0x8080u), b1 = under_2p23(u16_at(b + 20 + 4 * s), 0x8080u);
        float sum = q8_field<0>(a0) * lo.x;
        sum = fmaf(q8_field<1>(a0), lo.y, sum);
        sum = fmaf(q8_field<0>(a1), lo.z, sum);
        sum = fmaf(q8_field<1>(a1), lo.w, sum);
        sum = fmaf(q8_field<0>(b0), hi.x, sum);
        sum = fmaf(q8_field<1>(b0), hi.y, sum);
        sum = fmaf(q8_field<0>(b1), hi.z, sum);
        return fmaf(q8_field<1>(b1), hi.w, sum);
    }
};

// q4_k's 6-bit scale and min of sub-block j (0..7) from its 12 packed bytes (GGML's
// get_scale_min_k4).
__device__ __forceinline__ void scale_min_k4(int j, const uint8_t* q, uint32_t& sc, uint32_t& m) {
    if (j < 4) {
        sc = q[j] & 63u;
        m = q[j + 4] & 63u;
    } else {
        sc = (q[j + 4] & 0xFu) | ((q[j - 4] >> 6) << 4);
        m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

struct q4_k {  // d, dmin (f16), scales[12], qs[128]: 8 sub-blocks of 32, (d*sc)*q - dmin*m
    static constexpr int kElems = 256, kBytes = 144;
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
        const int sub = j >> 2;  // sub-blocks 2c and 2c+1: low and high nibbles of qs[32c..32c+31]
        uint32_t sc, m;
        scale_min_k4(sub, b + 4, sc, m);
        const float d1 = half_at(b) * (float)sc, m1 = half_at(b + 2) * (float)m;
        uint32_t w[2];
        bytes8(b + 16 + 32 * (sub >> 1) + 8 * (j & 3), w);
        const int shift = 4 * (sub & 1);
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = d1 * (float)((byte_of(w, i) >> shift) & 0xFu) - m1;
    }
};

struct q6_k {  // ql[128], qh[64], scales[16] int8, d (f16): d * sc * (q - 32), q 6 bits
    static constexpr int kElems = 256, kBytes = 210;
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
        // Two halves of 128; in a half, weight l + 32g (l < 32, g < 4) takes nibble g / 2
        // of ql[l + 32 (g % 2)], bits 2g..2g+1 of qh[l], scale l / 16 + 2g.
        const int half = j >> 4, g = (j >> 2) & 3, l = 8 * (j & 3);
        const float d = half_at(b + 208);
        const float sc = (float)(int8_t)b[192 + 8 * half + (l >> 4) + 2 * g];
        uint32_t ql[2], qh[2];
        bytes8(b + 64 * half + 32 * (g & 1) + l, ql);
        bytes8(b + 128 + 32 * half + l, qh);
        const int lshift = 4 * (g >> 1), hshift = 2 * g;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int q = (int)(((byte_of(ql, i) >> lshift) & 0xFu) | (((byte_of(qh, i) >> hshift) & 3u) << 4)) - 32;
            v[i] = d * sc * (float)q;
        }
    }
};

// ---------------------------------------------------------------------------- dequantize

__device__ __forceinline__ void store8(float* out, const float (&v)[8]) {
    reinterpret_cast<float4*>(out)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(out)[1] = make_float4(v[4], v[5], v[6], v[7]);
}
__device__ __forceinline__ void store8(f16_t* out, const float (&v)[8]) {
    opgen::pack<f16_t, 8> p;
#pragma unroll
    for (int i = 0; i < 8; i++) p.v[i] = opgen::float_to_f16(v[i]);
    opgen::store_pack(out, p);
}

template <typename F, typename T> __device__ void dequantize(const uint8_t* blocks, T* out, size_t numel) {
    constexpr int kOctets = F::kElems / 8;
    for (size_t o = opgen::global_thread_id(); o < numel / 8; o += opgen::grid_threads()) {
        float v[8];
        F::decode8(blocks + o / kOctets * F::kBytes, (int)(o % kOctets), v);
        store8(out + 8 * o, v);
    }
}

// ---------------------------------------------------------------------------- qmatvec

// Lane 0 of each group of 32 lanes gets the group's sum.
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (unsigned int delta = 16; delta > 0; delta >>= 1) v += opgen::shfl_down(v, delta);
    return v;
}

__device__ __forceinline__ float4 load_x4(const float* p) { return *reinterpret_cast<const float4*>(p); }

template <typename F> __device__ void qmatvec_general(const uint8_t* __restrict__ w, const float* __restrict__ x,
                                                      float* __restrict__ y, size_t n, size_t k, size_t rows) {
    constexpr int kOctets = F::kElems / 8;
    const size_t row_bytes = k / F::kElems * F::kBytes, octets = k / 8;
    const unsigned int lane = threadIdx.x % 32;
    const size_t stride = (size_t)gridDim.x * (blockDim.x / 32);
    for (size_t item = (size_t)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; item < n * rows; item += stride) {
        const size_t col = item / rows, r = item % rows;
        const uint8_t* wr = w + col * row_bytes;
        const float* xr = x + r * k;
        float acc = 0.0f;
        for (size_t o = lane; o < octets; o += 32) {
            float v[8];
            F::decode8(wr + o / kOctets * F::kBytes, (int)(o % kOctets), v);
            const float4 a = load_x4(xr + 8 * o), b = load_x4(xr + 8 * o + 4);
            acc = fmaf(v[0], a.x, fmaf(v[1], a.y, fmaf(v[2], a.z, fmaf(v[3], a.w, acc))));
            acc = fmaf(v[4], b.x, fmaf(v[5], b.y, fmaf(v[6], b.z, fmaf(v[7], b.w, acc))));
        }
        acc = group_sum(acc);
        if (lane == 0) y[r * n + col] = acc;
    }
}

// The tiled path's shared-memory tile: kTileRows rows of F::kTileBlocks blocks, as 16-byte
// pieces (3 per thread for the shapes below), held in registers while the previous tile is used.
template <typename F> struct tile {
    static constexpr int kRowBytes = F::kTileBlocks * F::kBytes;
    static constexpr int kRowVecs = kRowBytes / 16;
    static constexpr int kVecs = kTileRows * kRowVecs;
    static constexpr int kPerThread = (kVecs + kThreads - 1) / kThreads;
    static_assert(kRowBytes % 16 == 0, "tile rows must keep 16-byte alignment");
    static_assert(F::kTileBlocks % (kThreads / 4) == 0, "a tile is whole steps: every group has blocks");
};

// Blocks per row in the tile that starts `left` blocks before the end of the rows.
template <typename F> __device__ __forceinline__ int tile_blocks(size_t left) {
    return left < (size_t)F::kTileBlocks ? (int)left : F::kTileBlocks;
}

// A tile (nb blocks of rows wt[0..nrows), rows row_bytes apart) into registers: piece u of
// the tile is thread u % kThreads's u / kThreads-th, so each load instruction of the block
// covers consecutive bytes of a row. Pieces past nb or nrows are zeros.
template <typename F> __device__ __forceinline__ void load_tile(uint4 (&v)[tile<F>::kPerThread], const uint8_t* wt,
                                                                size_t row_bytes, int nb, int nrows) {
    const int vecs = nb * F::kBytes / 16;  // nb is a multiple of 8: whole pieces
#pragma unroll
    for (int j = 0; j < tile<F>::kPerThread; j++) {
        const int u = (int)threadIdx.x + j * kThreads, i = u / tile<F>::kRowVecs, c = u % tile<F>::kRowVecs;
        v[j] = make_uint4(0u, 0u, 0u, 0u);
        if (i < nrows && c < vecs) v[j] = *reinterpret_cast<const uint4*>(wt + i * row_bytes + 16 * c);
    }
}

template <typename F> __device__ void qmatvec_tiled(const uint8_t* __restrict__ w, const float* __restrict__ x,
                                                    float* __restrict__ y, size_t n, size_t k, size_t rows) {
    typedef tile<F> T;
    constexpr int kStep = kThreads / 4;  // blocks per step of the block: 8 per group
    __shared__ uint4 stage[T::kVecs];
    __shared__ float partial[kGroups][kTileRows];
    const unsigned int lane = threadIdx.x % 32, group = threadIdx.x / 32, sub = lane % 4;
    const int first = (int)(group * 8 + lane / 4);  // the lane's block in each step
    const uint8_t* staged = reinterpret_cast<const uint8_t*>(stage) + first * F::kBytes;
    const size_t row_blocks = k / F::kElems, row_bytes = row_blocks * F::kBytes;
    const size_t items = (n + kTileRows - 1) / kTileRows * rows;
    for (size_t item = blockIdx.x; item < items; item += gridDim.x) {
        const size_t n0 = item / rows * kTileRows, r = item % rows;
        const int nrows = (int)(n - n0 < (size_t)kTileRows ? n - n0 : (size_t)kTileRows);
        const uint8_t* wt = w + n0 * row_bytes;
        const float* xt = x + r * k + first * F::kElems + 4 * sub;
        float acc[kTileRows] = {};
        uint4 next[T::kPerThread];
        load_tile<F>(next, wt, row_bytes, tile_blocks<F>(row_blocks), nrows);
        for (size_t left = row_blocks; left > 0; left -= tile_blocks<F>(left)) {
            const int nb = tile_blocks<F>(left);
            __syncthreads();  // the previous tile is used up
#pragma unroll
            for (int j = 0; j < T::kPerThread; j++) {
                const int u = (int)threadIdx.x + j * kThreads;
                if (u < T::kVecs) stage[u] = next[j];
            }
            __syncthreads();
            wt += T::kRowBytes;
            if (left > (size_t)nb) load_tile<F>(next, wt, row_bytes, tile_blocks<F>(left - nb), nrows);
            // nb is a multiple of 8: a group's 8 blocks are all in or all out.
            const uint8_t* st = staged;
            const float* xs = xt;
            for (int b = first; b < nb; b += kStep, st += kStep * F::kBytes, xs += kStep * F::kElems) {
                float4 lo = load_x4(xs), hi = load_x4(xs + 16);
                F::prescale(lo, hi);
#pragma unroll
                for (int i = 0; i < kTileRows; i++) {  // rows past n are zeros in the tile
                    const uint8_t* block = st + i * T::kRowBytes;
                    acc[i] = fmaf(F::scale(block), F::dot8(block, (int)sub, lo, hi), acc[i]);
                }
            }
            xt += F::kTileBlocks * F::kElems;
        }
#pragma unroll
        for (int i = 0; i < kTileRows; i++) {
            const float s = group_sum(acc[i]);
            if (lane == 0) partial[group][i] = s;
        }
        __syncthreads();
        if ((int)threadIdx.x < nrows) {
            float s = 0.0f;
#pragma unroll
            for (int g = 0; g < kGroups; g++) s += partial[g][threadIdx.x];
            y[r * n + n0 + threadIdx.x] = s;
        }
    }
}

template <typename F> __device__ __forceinline__ void qmatvec_fast(const uint8_t* w, const float* x, float* y, size_t n,
                                                                   size_t k, size_t rows) {
    if (k % 256 == 0 && opgen::aligned16(w)) {
        qmatvec_tiled<F>(w, x, y, n, k, rows);
    } else {
        qmatvec_general<F>(w, x, y, n, k, rows);
    }
}

}  // namespace

extern "C" {
__global__ void __launch_bounds__(kThreads, kMinBlocks) qmatvec_q4_0(const uint8_t* w, const float* x, float* y, const size_t n, const size_t k, const size_t rows);
__global__ void __launch_bounds__(kThreads, kMinBlocks) qmatvec_q4_1(const uint8_t* w, const float* x, float* y, const size_t n, const size_t k, const size_t rows);
__global__ void __launch_bounds__(kThreads, kMinBlocks) qmatvec_q8_0(const uint8_t* w, const float* x, float* y, const size_t n, const size_t k, const size_t rows);
__global__ void __launch_bounds__(kThreads, kMinBlocks) qmatvec_q4_k(const uint8_t* w, const float* x, float* y, const size_t n, const size_t k, const size_t rows);
__global__ void __launch_bounds__(kThreads, kMinBlocks) qmatvec_q6_k(const uint8_t* w, const float* x, float* y, const size_t n, const size_t k, const size_t rows);
}

extern "C" __global__ void dequantize_q4_0_f32(const uint8_t* blocks, float* out, const size_t numel) {
    dequantize<q4_0>(blocks, out, numel);
}
extern "C" __global__ void dequantize_q4_0_f16(const uint8_t* blocks, f16_t* out, const size_t numel) {
    dequantize<q4_0>(blocks, out, numel);
}
extern "C" __global__ void dequantize_q4_1_f32(const uint8_t* blocks, float* out, const size_t numel) {
    dequantize<q4_1>(blocks, out, numel);
}
extern "C" __global__ void dequantize_q4_1_f16(const uint8_t* blocks, f16_t* out, const size_t numel) {
    dequantize<q4_1>(blocks, out, numel);
}
extern "C" __global__ void dequantize_q8_0_f32(const uint8_t* blocks, float* out, const size_t numel) {
    dequantize<q8_0>(blocks, out, numel);
}
extern "C" __global__ void dequantize_q8_0_f16(const uint8_t* blocks, f16_t* out, const size_t numel) {
    dequantize<q8_0>(blocks, out, numel);
}
extern "C" __global__ void dequantize_q4_k_f32(const uint8_t* blocks, float* out, const size_t numel) {
    dequantize<q4_k>(blocks, out, numel);
}
extern "C" __global__ void dequantize_q4_k_f16(const uint8_t* blocks, f16_t* out, const size_t numel) {
    dequantize<q4_k>(blocks, out, numel);
}
extern "C" __global__ void dequantize_q6_k_f32(const uint8_t* blocks, float* out, const size_t numel) {
    dequantize<q6_k>(blocks, out, numel);
}
extern "C" __global__ void dequantize_q6_k_f16(const uint8_t* blocks, f16_t* out, const size_t numel) {
    dequantize<q6_k>(blocks, out, numel);
}

extern "C" __global__ void qmatvec_q4_0(const uint8_t* w, const float* x, float* y, const size_t n, const size_t k, const size_t rows) {
    qmatvec_fast<q4_0>(w, x, y, n, k, rows);
}
extern "C" __global__ void qmatvec_q4_1(const uint8_t* w, const float* x, float* y, const size_t n, const size_t k, const size_t rows) {
    qmatvec_general<q4_1>(w, x, y, n, k, rows);
}
extern "C" __global__ void qmatvec_q8_0(const uint8_t* w, const float* x, float* y, const size_t n, const size_t k, const size_t rows) {
    qmatvec_fast<q8_0>(w, x, y, n, k, rows);
}
extern "C" __global__ void qmatvec_q4_k(const uint8_t* w, const float* x, float* y, const size_t n, const size_t k, const size_t rows) {
    qmatvec_general<q4_k>(w, x, y, n, k, rows);
}
extern "C" __global__ void qmatvec_q6_k(const uint8_t* w, const float* x, float* y, const size_t n, const size_t k, const size_t rows) {
    qmatvec_general<q6_k>(w, x, y, n, k, rows);
}
