// GGML's storage formats (the layouts of ggml-common.h): dequantize and matrix-vector
// products, for every GgmlDType: f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q8_1, q2_k,
// q3_k, q4_k, q5_k, q6_k, q8_k.
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
// qmatvec_*: any grid (grid-stride over items); blocks of kThreads (128) threads, but for
// qmatvec_q4_0 / q4_1 / q8_0 on NVIDIA: fast_launch<F>::threads (256: ops.yaml's kernel_facts,
// QMATVEC_FAST_THREADS), the block size of their dp4a path (another multiple of 32 there takes
// the general path; their launch bounds allow no more).
//
// qmatvec_q4_k and qmatvec_q6_k, when w is 16-byte aligned and blocks are kThreads: 8 weight
// rows per item (ops.yaml's kernel_facts, QMATVEC_K_ROWS_*), staged through shared memory with
// coalesced 16-byte copies, a thread per 32 weights whose x serves all 8 rows. On NVIDIA
// sm_80 and up the integer K path (below, at its code: x quantized to 22 bits as the dp4a
// path's, 21 for q6_k, dp4a against the quants, by q4_k_lean / q6_k_pair; on sm_90 the rows by
// bulk copies, the first step before the wait for the kernel before, on sm_80 by cp.async in
// commit groups of rows); elsewhere the f32 K path (f32 FMA of exact quants per sub-block,
// then the sub-block's scales). Bound by the instruction stream, not by
// HBM (figures: bench/results/NOTES.md, "Tuning figures"; the measurements, commits 736c5fc
// and 6c7513e).
//
// qmatvec_q4_0, q4_1 and q8_0, when k % 256 == 0 and w is 16-byte aligned: on NVIDIA sm_80
// and up, the dp4a path (below, at its code: x quantized exactly enough to 22 bits, integer
// dot products, the weights streamed through shared memory, all in flight at once: on sm_90
// q4_0 / q4_1 by bulk copies, the first chunk before the wait for the kernel before, else with
// cp.async; figures: bench/results/NOTES.md; the measurements, commits 736c5fc and d20af7f).
// Elsewhere (AMD; it keeps working as it did), q4_1 takes the general path and q4_0 / q8_0
// the tiled path:
// a thread block computes 4 outputs, 4 weight rows against one row of x, so every
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
// Everything else (other k or alignments, rows of x alike) takes the general path: a group
// of 32 lanes per output, a lane per 8 weights, decoded as dequantize does. Correct for any
// shape; not tuned.
#include "compat.h"
#include "kernel_facts.h"

// The dp4a path of qmatvec_q4_0 / q4_1 / q8_0 and the integer K path of qmatvec_q4_k / q6_k:
// NVIDIA sm_80 and up (cp.async, dp4a, max.NaN).
#if OPGEN_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define OPGEN_QMATVEC_DP4A 1
#else
#define OPGEN_QMATVEC_DP4A 0
#endif

// OPGEN_QMV_SM90: bulk copies (cp.async.bulk: the TMA engine) that complete on mbarriers, and
// a block's first weights copied into shared memory before the wait for the kernel before it
// (programmatic launch; qmatvec_fast says why that is safe): the dp4a path of the formats whose
// kFastBulk is true (q4_0, q4_1) and the integer K path (q4_k, q6_k) take them on sm_90 (figures:
// bench/results/NOTES.md; the measurements, commits d20af7f and cffec5e); elsewhere, and for q8_0,
// cp.async with a block barrier per stage. Variants measured against them (cp.async on sm_90,
// other stage counts, the copies after the wait, other launch bounds) were compile switches
// until commit 3eb441a (bench/gpu.py --explore qmatvec measures the shipped shapes' neighbours).
#if OPGEN_QMATVEC_DP4A && __CUDA_ARCH__ >= 900
#define OPGEN_QMV_SM90 1
#else
#define OPGEN_QMV_SM90 0
#endif

namespace {

constexpr int kThreads = OPGEN_QMATVEC_THREADS;  // qmatvec's block size (ops.yaml's kernel_facts, 128)
constexpr int kGroups = kThreads / OPGEN_LANE_GROUP;  // groups of 32 lanes (a warp; half an AMD wave64)
constexpr int kTileRows = OPGEN_QMATVEC_ROWS;   // weight rows per item of the tiled path (kernel_facts, 4)
constexpr int kMinBlocks = 8;                // resident blocks per SM qmatvec is built for (NVIDIA: <= 64 registers)
constexpr int kKMinBlocks = 4;               // the same for the K path (q4_k, q6_k): <= 128 registers
static_assert(kThreads % OPGEN_LANE_GROUP == 0 && OPGEN_QMATVEC_FAST_THREADS % kThreads == 0,
              "qmatvec's blocks: whole groups of lanes; the dp4a path's a multiple of kThreads");

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
    static constexpr int kHead = 2;         // bytes before the quants: d
    static constexpr bool kTiled = true;    // has the tiled path (AMD)
    static constexpr int kTileBlocks = 64;  // the tiled path's blocks per row and tile: 4.5 KB tiles
    // The dp4a path (NVIDIA): rows per item, cp.async stages per item, threads per weight block.
    static constexpr int kFastRows = OPGEN_QMATVEC_FAST_ROWS_Q4_0, kFastStages = 4, kFastSplit = OPGEN_QMATVEC_FAST_THREADS / kThreads;
    // The first of an item's rows the dp4a path prefetches into L2 before waiting for the
    // previous kernel (bench/gpu.py --explore qmatvec: from row 0 here, from the second stage for q8_0).
    static constexpr int kFastPrefetchFrom = 0;
    // The dp4a path's slab by bulk copies on sm_90 (OPGEN_QMV_SM90), first chunk early: 4.98-4.99
    // against 5.33-5.36 us per product from HBM on an H100 (commit d20af7f).
    static constexpr bool kFastBulk = true;
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
    static constexpr int kHead = 4;          // d, m
    static constexpr bool kTiled = false;    // AMD: the general path
    // The dp4a path (NVIDIA), as q4_0's (20-byte blocks: 40 KB of shared memory for 16 rows).
    static constexpr int kFastRows = OPGEN_QMATVEC_FAST_ROWS_Q4_1, kFastSplit = OPGEN_QMATVEC_FAST_THREADS / kThreads, kFastStages = 4;
    static constexpr int kFastPrefetchFrom = 0;
    static constexpr bool kFastBulk = true;  // as q4_0's: 5.09-5.28 against 5.55-5.88 us
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
    static constexpr int kHead = 2;
    static constexpr bool kTiled = true;
    static constexpr int kTileBlocks = 32;
    static constexpr int kFastRows = OPGEN_QMATVEC_FAST_ROWS_Q8_0, kFastStages = 4, kFastSplit = OPGEN_QMATVEC_FAST_THREADS / kThreads;
    static constexpr int kFastPrefetchFrom = kFastRows / 4;  // rows of the first of 4 stages
    // cp.async: the bulk copies, first chunk before the wait, were slower (8.8-9.1 against
    // 7.6 us per product from HBM on an H100; commit d20af7f).
    static constexpr bool kFastBulk = false;
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

// The plain formats (GGML's f32, f16, bf16: "blocks" of one value) as blocks of 8 values, so
// that they take the same decode8 paths; dequantize writes the last numel % 8 by decode1.
struct f32 {
    static constexpr int kElems = 8, kBytes = 32;
    static __device__ __forceinline__ float decode1(const uint8_t* p, size_t i) { return __uint_as_float(u32_at(p + 4 * i)); }
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = decode1(b + 32 * j, i);
    }
};
struct f16 {
    static constexpr int kElems = 8, kBytes = 16;
    static __device__ __forceinline__ float decode1(const uint8_t* p, size_t i) { return half_at(p + 2 * i); }
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = decode1(b + 16 * j, i);
    }
};
struct bf16 {
    static constexpr int kElems = 8, kBytes = 16;
    static __device__ __forceinline__ float decode1(const uint8_t* p, size_t i) { return __uint_as_float(u16_at(p + 2 * i) << 16); }
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = decode1(b + 16 * j, i);
    }
};

// q5_0 / q5_1: qs as q4_0's, and bit 4 of weight i at bit i of the 32-bit qh.
struct q5_0 {  // d (f16), qh[4], qs[16]: (q - 16) * d
    static constexpr int kElems = 32, kBytes = 22;
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
        const float d = half_at(b);
        const uint32_t qh = u32_at(b + 2) >> (8 * j);
        uint32_t w[2];
        bytes8(b + 6 + 8 * (j & 1), w);
        const int shift = 4 * (j >> 1);
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = (float)((int)(((byte_of(w, i) >> shift) & 0xFu) | (((qh >> i) & 1u) << 4)) - 16) * d;
    }
};

struct q5_1 {  // d, m (f16), qh[4], qs[16]: q * d + m
    static constexpr int kElems = 32, kBytes = 24;
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
        const float d = half_at(b), m = half_at(b + 2);
        const uint32_t qh = u32_at(b + 4) >> (8 * j);
        uint32_t w[2];
        bytes8(b + 8 + 8 * (j & 1), w);
        const int shift = 4 * (j >> 1);
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = (float)(((byte_of(w, i) >> shift) & 0xFu) | (((qh >> i) & 1u) << 4)) * d + m;
    }
};

struct q8_1 {  // d, s (f16: d * the sum of qs), qs[32] int8: q * d
    static constexpr int kElems = 32, kBytes = 36;
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
        const float d = half_at(b);
        uint32_t w[2];
        bytes8(b + 4 + 8 * j, w);
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = (float)(int8_t)byte_of(w, i) * d;
    }
};

// q2_k and q3_k: in each half of 128 weights, weight 32g + t (g < 4, t < 32) is bits 2g..2g+1
// of qs[32 * half + t], in sub-block 8 * half + 2g + t / 16 (16 weights a sub-block).
struct q2_k {  // scales[16] (4-bit scale | 4-bit min << 4), qs[64], d, dmin (f16): d*sc*q - dmin*m
    static constexpr int kElems = 256, kBytes = 84;
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
        const int half = j >> 4, g = (j >> 2) & 3, t = 8 * (j & 3);
        const uint32_t sc = b[8 * half + 2 * g + (t >> 4)];
        const float dl = half_at(b + 80) * (float)(sc & 0xFu), ml = half_at(b + 82) * (float)(sc >> 4);
        uint32_t w[2];
        bytes8(b + 16 + 32 * half + t, w);
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = dl * (float)((byte_of(w, i) >> (2 * g)) & 3u) - ml;
    }
};

struct q3_k {  // hmask[32], qs[64], scales[12] (16 6-bit scales), d (f16): d * (sc - 32) * (q - 4)
    static constexpr int kElems = 256, kBytes = 110;
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
        const int half = j >> 4, g = (j >> 2) & 3, t = 8 * (j & 3), s = 8 * half + 2 * g + (t >> 4);
        const uint32_t low = s < 8 ? b[96 + s] & 0xFu : b[96 + s - 8] >> 4;
        const uint32_t high = (b[104 + (s & 3)] >> (2 * (s >> 2))) & 3u;
        const float dl = half_at(b + 108) * (float)((int)(low | (high << 4)) - 32);
        uint32_t w[2], h[2];
        bytes8(b + 32 + 32 * half + t, w);
        bytes8(b + t, h);
        const int hbit = 4 * half + g;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int q = (int)((byte_of(w, i) >> (2 * g)) & 3u) - (((byte_of(h, i) >> hbit) & 1u) ? 0 : 4);
            v[i] = dl * (float)q;
        }
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
    static constexpr int kKRows = OPGEN_QMATVEC_K_ROWS_Q4_K;  // the K path's weight rows per item (ops.yaml's kernel_facts)
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

struct q5_k {  // d, dmin (f16), scales[12] (as q4_k's), qh[32], qs[128]: (d*sc)*q - dmin*m, q 5 bits
    static constexpr int kElems = 256, kBytes = 176;
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
        // sub-block s (32 weights): nibble s % 2 of qs[32 (s / 2) + t], bit s of qh[t]
        const int sub = j >> 2, t = 8 * (j & 3);
        uint32_t sc, m;
        scale_min_k4(sub, b + 4, sc, m);
        const float d1 = half_at(b) * (float)sc, m1 = half_at(b + 2) * (float)m;
        uint32_t w[2], h[2];
        bytes8(b + 48 + 32 * (sub >> 1) + t, w);
        bytes8(b + 16 + t, h);
        const int shift = 4 * (sub & 1);
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = d1 * (float)(((byte_of(w, i) >> shift) & 0xFu) + (((byte_of(h, i) >> sub) & 1u) << 4)) - m1;
    }
};

struct q6_k {  // ql[128], qh[64], scales[16] int8, d (f16): d * sc * (q - 32), q 6 bits
    static constexpr int kElems = 256, kBytes = 210;
    static constexpr int kKRows = OPGEN_QMATVEC_K_ROWS_Q6_K;
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

struct q8_k {  // d (f32), qs[256] int8, bsums[16] int16 (sums of 16 qs): d * q
    static constexpr int kElems = 256, kBytes = 292;
    static __device__ __forceinline__ void decode8(const uint8_t* b, int j, float (&v)[8]) {
        const float d = __uint_as_float(u32_at(b));
        uint32_t w[2];
        bytes8(b + 4 + 8 * j, w);
#pragma unroll
        for (int i = 0; i < 8; i++) v[i] = d * (float)(int8_t)byte_of(w, i);
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

__device__ __forceinline__ void store1(float* out, float v) { *out = v; }
__device__ __forceinline__ void store1(f16_t* out, float v) { *out = opgen::float_to_f16(v); }

template <typename F, typename T> __device__ void dequantize(const uint8_t* blocks, T* out, size_t numel) {
    constexpr int kOctets = F::kElems / 8;
    for (size_t o = opgen::global_thread_id(); o < numel / 8; o += opgen::grid_threads()) {
        float v[8];
        F::decode8(blocks + o / kOctets * F::kBytes, (int)(o % kOctets), v);
        store8(out + 8 * o, v);
    }
    if constexpr (F::kElems == 8) {  // a plain format, any numel: the values past the last whole 8
        const size_t first = numel / 8 * 8, i = opgen::global_thread_id();
        if (i < numel - first) store1(out + first + i, F::decode1(blocks, first + i));
    }
}

// ---------------------------------------------------------------------------- qmatvec

// Programmatic dependent launch (sm_90; no-ops elsewhere and in a plain launch). The runtime
// launches every qmatvec_<fmt> with programmatic stream serialization (ops.yaml's
// PROGRAMMATIC_KERNELS, checked against qmatvec_of<F>::waits below), so they may start while
// the kernel before them is still running:
// nothing of device memory may be read or written before wait_for_predecessor() (it returns
// once that kernel has finished and its writes are visible), but an L2 prefetch, which moves
// no data into the kernel and leaves every later read coherent (L2 is the device's point of
// coherence), may run before it: the weights start streaming while the previous kernel ends.
// One exception, the weights themselves, which no kernel writes (see qmatvec_fast): on sm_90
// the dp4a path of q4_0 / q4_1 copies its first chunk of them into shared memory before the
// wait, and so does the integer K path of q4_k / q6_k with its first step.
using opgen::prefetch_l2;
using opgen::release_dependents;
using opgen::wait_for_predecessor;


// Lane 0 of each group of OPGEN_LANE_GROUP (32) lanes gets the group's sum, at either warp width.
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (unsigned int delta = OPGEN_LANE_GROUP / 2; delta > 0; delta >>= 1) v += opgen::group_shfl_down(v, delta);
    return v;
}

__device__ __forceinline__ float4 load_x4(const float* p) { return *reinterpret_cast<const float4*>(p); }

template <typename F> __device__ void qmatvec_general(const uint8_t* __restrict__ w, const float* __restrict__ x,
                                                      float* __restrict__ y, size_t n, size_t k, size_t rows) {
    constexpr int kOctets = F::kElems / 8;
    const size_t row_bytes = k / F::kElems * F::kBytes, octets = k / 8;
    constexpr unsigned int G = OPGEN_LANE_GROUP;  // a group of lanes per item
    const unsigned int lane = threadIdx.x % G;
    const size_t stride = (size_t)gridDim.x * (blockDim.x / G);
    for (size_t item = (size_t)blockIdx.x * (blockDim.x / G) + threadIdx.x / G; item < n * rows; item += stride) {
        const size_t col = item / rows, r = item % rows;
        const uint8_t* wr = w + col * row_bytes;
        const float* xr = x + r * k;
        float acc = 0.0f;
        for (size_t o = lane; o < octets; o += G) {
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
    const unsigned int lane = threadIdx.x % OPGEN_LANE_GROUP, group = threadIdx.x / OPGEN_LANE_GROUP, sub = lane % 4;
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

#if OPGEN_QMATVEC_DP4A
// ---------------------------------------------------------------------------- the dp4a path
//
// NVIDIA (sm_80 and up), q4_0, q4_1 and q8_0, k % 256 == 0, w 16-byte aligned, blocks of
// fast_launch<F>::threads = F::kFastSplit * kThreads threads. An item is F::kFastRows weight rows
// against one row of x, taken in chunks of kThreads weight blocks (4096 weights) per row:
// weight block t of the chunk belongs to the F::kFastSplit adjacent threads t * split ..,
// each of which takes 32 / split of its weights (whole 32-bit words of quants) in every row
// of the item. A thread quantizes the values of x its weights meet once per chunk, into its
// registers, and they serve every row of the item.
//
// Weights: the item's rows of the chunk are copied to shared memory with cp.async (16-byte
// pieces, coalesced: a chunk row is 2304 / 4352 bytes, a multiple of 16), all of them at
// once, in kFastStages commit groups of rows, so the whole slab is in flight before the
// first use; the rows of a stage are used as soon as it lands (one barrier per stage).
// On sm_90, for the formats whose kFastBulk is true (q4_0, q4_1): a bulk copy per row (lane i
// of warp 0 copies row i; the TMA engine moves it, no thread's registers or instructions per
// 16 bytes) in 2 stages of rows, each completing an mbarrier that every thread waits on for
// itself (no block barrier per stage), and a block's first chunk copied before the wait for
// the kernel before it (qmatvec_fast); 4 or 16 stages, or the copies after the wait, were
// slower (bench/results/NOTES.md, "Tuning figures"; commit d20af7f). Those builds take 79 / 80
// registers, so 3 blocks fit on a multiprocessor: the next product's blocks start beside
// this one's 2 and copy their first chunk while it computes. From HBM 4.98-4.99 us per
// product for q4_0 (64.1-64.7% of copy bandwidth) against 5.33-5.36 with cp.async; the bulk
// copies alone, or with 3 resident blocks alone, were slower (commit d20af7f).
// A thread reads its words from the block's 4-byte-aligned floor (blocks of 18 and 34 bytes
// alternate between 0 and 2 mod 4: one byte permute per word aligns them).
//
// x: exact integer arithmetic against a 22-bit quantization of x per block of 32. With
// s the power of two above max |x| of the block, X = rint(x * 2^22 / s) (|X| <= 2^22), so
// x = X * s * 2^-22 within s * 2^-23 (an f32 relative rounding, of the block's max), and X
// is split into three signed bytes X = D2 * 65536 + D1 * 256 + D0: 3 dp4a per word of
// quants and row give sum q * X exactly, and a thread's part of the block adds
// float(S) * d * s * 2^-22 to its row's sum. (Against the cpu's f32 sums, the difference is
// of f32 rounding size, ~3e-8 of sum |x||W| measured, against the tests' 1e-5; a single
// int8 x per block, as GGML's q8_1, would err ~1e-4 of it.) An infinite or NaN x makes the
// block's scale NaN: its outputs are NaN. q4_1 (no offset, a min m): sum (q d + m) x is
// d * sigma * sum q X + m * sigma * sum X, sum X from the sums quantize_x keeps.
//
// Reduction: each thread holds kFastRows partial sums; a butterfly halves them across the
// warp (log2 rows shuffles of halving width), one shared slot per warp and row, then the
// first threads add the warps' slots and write y.
//
// Shapes (bench/gpu.py --explore qmatvec; figures: bench/results/NOTES.md, "Tuning figures"): the kernel is bound by each warp's
// instruction stream (latency, few warps), not by bandwidth: a split of 2 threads per block
// beat 1 (whole blocks per thread) and 4 (more instructions in all); 8 rows per item for q4_0
// and 2 or 8 stages were within noise; 4 rows per item for q8_0 were slower (more blocks, each
// quantizing x again). Launched programmatically (wait_for_predecessor, below), a product
// prefetches its weight rows into L2 while the previous kernel ends; a plain launch pays for
// the prefetch, which then only duplicates the cp.async requests.

// cp.async: 16 bytes global -> shared, asynchronous, not through L1 (an L2::256B prefetch
// hint measured no different).
__device__ __forceinline__ void cp_async16(void* dst, const void* src) {
    const unsigned int s = (unsigned int)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most `pending` (a constant once unrolled) of this thread's groups are in flight.
__device__ __forceinline__ void cp_async_wait(int pending) {
    switch (pending) {
        case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
        case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
        case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
        case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
        case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
        case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
        case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
        default: asm volatile("cp.async.wait_group 7;\n" ::: "memory"); break;
    }
}

#if OPGEN_QMV_SM90
// Bulk copies (sm_90's TMA engine) that complete on an mbarrier in shared memory: a stage's
// barrier is armed once per chunk with the bytes its rows bring (one arrival; the K path: N
// arrivals, one per row) and completes (its phase flips) when they have all landed; every
// thread waits on it for itself, no block barrier per stage.
__device__ __forceinline__ uint32_t shared_addr(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
template <int N = 1> __device__ __forceinline__ void mbar_init(uint64_t* bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_addr(bar)), "n"(N) : "memory");
}
// The barriers' initialisation visible to the bulk copy engine (then a block barrier for the threads).
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
__device__ __forceinline__ void mbar_arm(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(shared_addr(bar)), "r"(bytes) : "memory");
}
// bytes (a multiple of 16; both addresses 16-byte aligned) from global src to shared dst.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                     shared_addr(dst)),
                 "l"(src), "r"(bytes), "r"(shared_addr(bar))
                 : "memory");
}
// Until the barrier's phase of parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
    uint32_t done;
    do {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(shared_addr(bar)), "r"(parity)
            : "memory");
    } while (!done);
}
#endif

__device__ __forceinline__ float max_nan(float a, float b) {  // NaN if either is
    float r;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}

// Values of x (NG groups of 4, v) quantized against the block's max |x| (the max over the
// SPLIT adjacent lanes that share the block): D[j][g] holds digit j of group g's values (byte
// i: value 4g+i) as signed bytes; sigma is the value of one unit of X; sum_y is sum X plus
// 4 NG * 0x808080 (mod 2^32), for the formats whose quants carry an offset.
template <int NG, int SPLIT>
__device__ __forceinline__ void quantize_x(const float4 (&v)[NG], uint32_t (&D)[3][NG], uint32_t& sum_y, float& sigma) {
    float m = 0.0f;
#pragma unroll
    for (int g = 0; g < NG; g++) {
        m = max_nan(m, max_nan(max_nan(fabsf(v[g].x), fabsf(v[g].y)), max_nan(fabsf(v[g].z), fabsf(v[g].w))));
    }
#pragma unroll
    for (int s = 1; s < SPLIT; s *= 2) m = max_nan(m, __shfl_xor_sync(0xffffffffu, m, s));
    // m in [2^(E-127), 2^(E-126)) for its exponent field E: s = 2^(E-126), |x| * 2^22 / s < 2^22.
    uint32_t e = __float_as_uint(m) >> 23;
    e = e < 22u ? 22u : e;  // tiny blocks: the scale stays normal (|x| * f < 1 there)
    const float f = __uint_as_float((275u - e) << 23);  // 2^(148 - E)
    sigma = e >= 255u ? __uint_as_float(0x7FC00000u) : __uint_as_float((e - 21u) << 23);  // 2^(E-148)
    // rint(x * f) + 1.5 * 2^23 has the bits 0x4B400000 + X; Y = X + 0x808080 (bytes 0..2 are
    // X's balanced signed digits + 128, all in [0, 2^24)).
    uint32_t sy = 0u;
#pragma unroll
    for (int g = 0; g < NG; g++) {
        const uint32_t y0 = __float_as_uint(fmaf(v[g].x, f, 12582912.0f)) - 0x4ABF7F80u;
        const uint32_t y1 = __float_as_uint(fmaf(v[g].y, f, 12582912.0f)) - 0x4ABF7F80u;
        const uint32_t y2 = __float_as_uint(fmaf(v[g].z, f, 12582912.0f)) - 0x4ABF7F80u;
        const uint32_t y3 = __float_as_uint(fmaf(v[g].w, f, 12582912.0f)) - 0x4ABF7F80u;
        sy += (y0 + y1) + (y2 + y3);
        const uint32_t a = __byte_perm(y0, y1, 0x5140u), b = __byte_perm(y2, y3, 0x5140u);
        D[0][g] = __byte_perm(a, b, 0x5410u) ^ 0x80808080u;
        D[1][g] = __byte_perm(a, b, 0x7632u) ^ 0x80808080u;
        D[2][g] = __byte_perm(__byte_perm(y0, y1, 0x0062u), __byte_perm(y2, y3, 0x0062u), 0x5410u) ^ 0x80808080u;
    }
    sum_y = sy;
}

__device__ __forceinline__ int dp4a(uint32_t a, uint32_t b, int c) { return __dp4a((int)a, (int)b, c); }

// Byte B of w (0..255) as a float without a conversion instruction (those issue at a quarter
// of the rate of f32 arithmetic or less): the byte under the exponent of 2^23, less 2^23.
template <int B> __device__ __forceinline__ float byte_float(uint32_t w) {
    return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7440u | (uint32_t)B)) - 8388608.0f;
}

// Per format, for a thread that takes NW consecutive words of quants of a block, from word
// j0 = sub * NW: the groups of x they meet (NG, and where group g starts in the block) and
// their dot product with those groups, without d and sigma: float(sum (q - offset) * X).
// Wq: the NW + 1 aligned words from the floor of quant word j0 (qsel aligns them).
template <typename F, int NW> struct fast;

template <int NW> struct fast<q4_0, NW> {  // word j: weights 4j+i (low nibbles), 16+4j+i (high)
    static constexpr int kGroups = 2 * NW;
    static __device__ __forceinline__ int group_at(int j0, int g) { return g < NW ? 4 * (j0 + g) : 16 + 4 * (j0 + g - NW); }
    static __device__ __forceinline__ uint32_t corr(uint32_t sum_y) {  // -8 * sum X
        return 8u * (uint32_t)(4 * kGroups) * 0x808080u - 8u * sum_y;
    }
    static __device__ __forceinline__ float dot(const uint32_t (&Wq)[NW + 1], uint32_t qsel,
                                                const uint32_t (&D)[3][kGroups], uint32_t corr) {
        int s0 = (int)corr, s1 = 0, s2 = 0;
#pragma unroll
        for (int j = 0; j < NW; j++) {
            const uint32_t q = __byte_perm(Wq[j], Wq[j + 1], qsel);
            const uint32_t lo = q & 0x0F0F0F0Fu, hi = (q >> 4) & 0x0F0F0F0Fu;
            s0 = dp4a(lo, D[0][j], s0);
            s1 = dp4a(lo, D[1][j], s1);
            s2 = dp4a(lo, D[2][j], s2);
            s0 = dp4a(hi, D[0][NW + j], s0);
            s1 = dp4a(hi, D[1][NW + j], s1);
            s2 = dp4a(hi, D[2][NW + j], s2);
        }
        // |sum (q - 8) X| <= 32 * 8 * 2^22 = 2^30: exact in 32 bits (the parts wrap harmlessly)
        return __int2float_rn((int)((uint32_t)s0 + ((uint32_t)s1 << 8) + ((uint32_t)s2 << 16)));
    }
};

template <int NW> struct fast<q4_1, NW> {  // as q4_0's words, unsigned nibbles (the min m is added apart)
    static constexpr int kGroups = 2 * NW;
    static __device__ __forceinline__ int group_at(int j0, int g) { return fast<q4_0, NW>::group_at(j0, g); }
    static __device__ __forceinline__ uint32_t corr(uint32_t) { return 0u; }
    static __device__ __forceinline__ float dot(const uint32_t (&Wq)[NW + 1], uint32_t qsel,
                                                const uint32_t (&D)[3][kGroups], uint32_t) {
        int s0 = 0, s1 = 0, s2 = 0;
#pragma unroll
        for (int j = 0; j < NW; j++) {
            const uint32_t q = __byte_perm(Wq[j], Wq[j + 1], qsel);
            const uint32_t lo = q & 0x0F0F0F0Fu, hi = (q >> 4) & 0x0F0F0F0Fu;
            s0 = dp4a(lo, D[0][j], s0);
            s1 = dp4a(lo, D[1][j], s1);
            s2 = dp4a(lo, D[2][j], s2);
            s0 = dp4a(hi, D[0][NW + j], s0);
            s1 = dp4a(hi, D[1][NW + j], s1);
            s2 = dp4a(hi, D[2][NW + j], s2);
        }
        // |sum q X| <= 16 * 15 * 2^22 < 2^30: exact in 32 bits
        return __int2float_rn((int)((uint32_t)s0 + ((uint32_t)s1 << 8) + ((uint32_t)s2 << 16)));
    }
};

template <int NW> struct fast<q8_0, NW> {  // word j: weights 4j+i, int8
    static constexpr int kGroups = NW;
    static __device__ __forceinline__ int group_at(int j0, int g) { return 4 * (j0 + g); }
    static __device__ __forceinline__ uint32_t corr(uint32_t) { return 0u; }
    static __device__ __forceinline__ float dot(const uint32_t (&Wq)[NW + 1], uint32_t qsel,
                                                const uint32_t (&D)[3][kGroups], uint32_t) {
        int s0 = 0, s1 = 0, s2 = 0;
#pragma unroll
        for (int j = 0; j < NW; j++) {
            const uint32_t q = __byte_perm(Wq[j], Wq[j + 1], qsel);
            s0 = dp4a(q, D[0][j], s0);
            s1 = dp4a(q, D[1][j], s1);
            s2 = dp4a(q, D[2][j], s2);
        }
        // sum q X can reach 2^34: |s0 + 256 s1| < 2^28 and |s2| < 2^22 are exact apart
        const float hi = __int_as_float(s2 + 0x4B400000) - 12582912.0f;
        return fmaf(hi, 65536.0f, __int2float_rn(s0 + s1 * 256));
    }
};

// acc[R] of each lane -> out[row] for the warp's row sums (a butterfly: R/2 + R/4 + ... shuffles).
template <int R> __device__ __forceinline__ void warp_rows(float (&v)[R], unsigned int lane, float* out) {
    static_assert(R >= 1 && R <= 32 && (R & (R - 1)) == 0, "rows per item: a power of two up to 32");
    constexpr int kSteps = R >= 32 ? 5 : R >= 16 ? 4 : R >= 8 ? 3 : R >= 4 ? 2 : R >= 2 ? 1 : 0;  // log2(R)
    int row = 0;
#pragma unroll
    for (int step = 0; step < kSteps; step++) {
        const int h = R >> (step + 1), m = 16 >> step;
        // The upper lane of each pair keeps rows i + h and sends rows i. Selected with masks:
        // a select between two array elements would become an indexed (local memory) load.
        const uint32_t upper = (lane & (unsigned int)m) != 0u ? 0xFFFFFFFFu : 0u;
#pragma unroll
        for (int i = 0; i < R / 2; i++) {  // a constant trip count: unrolled, v stays in registers
            if (i >= h) break;
            const uint32_t a = __float_as_uint(v[i]), b = __float_as_uint(v[i + h]);
            const float send = __uint_as_float((a & upper) | (b & ~upper));
            const float keep = __uint_as_float((b & upper) | (a & ~upper));
            v[i] = keep + __shfl_xor_sync(0xffffffffu, send, m);
        }
        row += (int)(upper & (uint32_t)h);
    }
#pragma unroll
    for (int step = kSteps; step < 5; step++) v[0] += __shfl_xor_sync(0xffffffffu, v[0], 16 >> step);
    if ((lane & (unsigned int)(32 / R - 1)) == 0u) out[row] = v[0];
}

// Stage s of an item's chunk (rows s*RS.. of the slab, those below nrows) with cp.async:
// P 16-byte pieces per row (a constant for whole chunks, else pieces), spread over the block.
template <typename F, int RS, int P> __device__ __forceinline__ void copy_stage(uint8_t* slab, const uint8_t* src,
                                                                              size_t row_bytes, int s, int nrows,
                                                                              int pieces) {
    constexpr int kRowBytes = kThreads * F::kBytes, kT = F::kFastSplit * kThreads;
    const int per_row = P > 0 ? P : pieces, total = RS * per_row;
    if constexpr (P > 0) {
#pragma unroll
        for (int j = 0; j < (RS * P + kT - 1) / kT; j++) {
            const int u = (int)threadIdx.x + j * kT, i = s * RS + u / P, c = u % P;
            if (u < RS * P && i < nrows) cp_async16(slab + i * kRowBytes + 16 * c, src + i * row_bytes + 16 * c);
        }
    } else {
        for (int u = (int)threadIdx.x; u < total; u += kT) {
            const int i = s * RS + u / per_row, c = u % per_row;
            if (i < nrows) cp_async16(slab + i * kRowBytes + 16 * c, src + i * row_bytes + 16 * c);
        }
    }
    cp_async_commit();
}

#if OPGEN_QMV_SM90
// Warp 0 (all its lanes) issues a chunk of an item: lane s arms stage s's barrier with its rows'
// bytes, then lane i copies row i (cb weight blocks) into the slab.
template <typename F, int S> __device__ __forceinline__ void bulk_chunk(uint8_t* slab, uint64_t* landed, const uint8_t* src,
                                                                      size_t row_bytes, int nrows, int cb,
                                                                      unsigned int lane) {
    constexpr int R = F::kFastRows, RS = R / S, kRowBytes = kThreads * F::kBytes;
    const uint32_t row_copy = (uint32_t)cb * F::kBytes;  // cb % 8 == 0: a multiple of 16
    if ((int)lane < S) {
        const int below = nrows - (int)lane * RS, in = below < 0 ? 0 : below < RS ? below : RS;
        mbar_arm(&landed[lane], (uint32_t)in * row_copy);
    }
    __syncwarp();
    for (int i = (int)lane; i < nrows; i += 32) bulk_copy(slab + i * kRowBytes, src + i * row_bytes, row_copy, &landed[i / RS]);
}
#endif

template <typename F> __device__ void qmatvec_dp4a(const uint8_t* __restrict__ w, const float* __restrict__ x,
                                                   float* __restrict__ y, size_t n, size_t k, size_t rows) {
    constexpr bool B = OPGEN_QMV_SM90 && F::kFastBulk;  // the slab by bulk copies (sm_90; q4_0, q4_1)
    constexpr int R = F::kFastRows, S = B ? (2 < R ? 2 : R) : F::kFastStages;  // bulk copies: 2 stages
    constexpr int RS = R / S, SPLIT = F::kFastSplit;
    constexpr int kT = SPLIT * kThreads, kWarps = kT / 32;
    constexpr int NW = (F::kBytes - F::kHead) / 4 / SPLIT;  // words of quants per thread: 4 (q4_0, q4_1) or 8 (q8_0) / SPLIT
    typedef fast<F, NW> G;
    constexpr int NG = G::kGroups;
    static_assert(R % S == 0 && NW >= 1 && NW * SPLIT * 4 == F::kBytes - F::kHead, "whole rows per stage, whole words");
    constexpr int kRowBytes = kThreads * F::kBytes;  // a chunk row in shared memory (multiple of 16)
    __shared__ __align__(16) uint8_t slab[R * kRowBytes + 16];  // +16: the last block's trailing word
    __shared__ float partial[kWarps][R];
    const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const unsigned int t = threadIdx.x / SPLIT, j0 = (threadIdx.x % SPLIT) * NW;  // block, first word
    const size_t row_blocks = k / F::kElems, row_bytes = row_blocks * F::kBytes;
    const size_t items = (n + R - 1) / R * rows;
    // block t starts at 18t / 34t / 20t: 2 mod 4 when t is odd for q4_0 / q8_0, never for q4_1
    const unsigned int odd = ((t * F::kBytes) >> 1) & 1u;
    const uint8_t* floor = slab + t * F::kBytes - 2 * odd;  // d (and q4_1's m) is in its first word
    const uint32_t* mine = reinterpret_cast<const uint32_t*>(floor + 4 * j0);  // quant word j0's floor
    const uint32_t* dword = reinterpret_cast<const uint32_t*>(floor);
    // the quants start 2 * odd + kHead bytes past the floor: 2 (select bytes 2..5) or 4 (the next word)
    const uint32_t qsel = 2 * odd + F::kHead == 4 ? 0x7654u : 0x5432u, dsel = odd ? 0x4432u : 0x4410u;
#if OPGEN_QMV_SM90
    __shared__ __align__(8) uint64_t landed[S];  // stage s's rows have landed (a phase a chunk)
    uint32_t parity = 0u;                          // of the barriers' current phase (one per chunk)
    if constexpr (B) {
        if (threadIdx.x == 0) {
#pragma unroll
            for (int s = 0; s < S; s++) mbar_init(&landed[s]);
            mbar_init_fence();
        }
        // The first item's first chunk of weights is copied before the wait for the kernel
        // before (qmatvec_fast leaves the wait to this function; see there why it may).
        if (warp == 0 && (size_t)blockIdx.x < items) {
            __syncwarp();  // thread 0's initialisation, for the lanes that arm
            const size_t n0 = blockIdx.x / rows * R;
            const int cb = row_blocks < (size_t)kThreads ? (int)row_blocks : kThreads;
            bulk_chunk<F, S>(slab, landed, w + n0 * row_bytes, row_bytes, n - n0 < (size_t)R ? (int)(n - n0) : R, cb,
                             lane);
        }
        wait_for_predecessor();
    }
#endif
    for (size_t item = blockIdx.x; item < items; item += gridDim.x) {
        const size_t n0 = item / rows * R, r = item % rows;
        const int nrows = n - n0 < (size_t)R ? (int)(n - n0) : R;
        const uint8_t* wi = w + n0 * row_bytes;
        const float* xr = x + r * k;
        float acc[R];
#pragma unroll
        for (int i = 0; i < R; i++) acc[i] = 0.0f;
        for (size_t c0 = 0; c0 < row_blocks; c0 += kThreads) {
            const int cb = row_blocks - c0 < (size_t)kThreads ? (int)(row_blocks - c0) : kThreads;
            const bool active = (int)t < cb;
            float4 xv[NG];  // x first: its loads are not queued behind the slab's
#pragma unroll
            for (int g = 0; g < NG; g++) {
                xv[g] = active ? *reinterpret_cast<const float4*>(xr + (c0 + t) * F::kElems + G::group_at(j0, g))
                               : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            }
            const uint8_t* src = wi + c0 * F::kBytes;
#if OPGEN_QMV_SM90
            if constexpr (B) {
                // the previous chunk is used up (and, the first time, the barriers are
                // initialised): every thread has passed its last read of the slab and of `partial`
                __syncthreads();
                // (the block's first chunk was issued before the wait, above)
                if (warp == 0 && !(item == blockIdx.x && c0 == 0)) {
                    bulk_chunk<F, S>(slab, landed, src, row_bytes, nrows, cb, lane);
                }
            } else
#endif
            {
                const int pieces = cb * F::kBytes / 16;  // cb is a multiple of 8: whole pieces
                if (c0 > 0) __syncthreads();              // the previous chunk is used up
                if (cb == kThreads) {
#pragma unroll
                    for (int s = 0; s < S; s++) copy_stage<F, RS, kRowBytes / 16>(slab, src, row_bytes, s, nrows, pieces);
                } else {
#pragma unroll
                    for (int s = 0; s < S; s++) copy_stage<F, RS, 0>(slab, src, row_bytes, s, nrows, pieces);
                }
            }
            uint32_t D[3][NG], sum_y;
            float sigma;
            quantize_x<NG, SPLIT>(xv, D, sum_y, sigma);  // every lane: the max is shuffled
            const uint32_t corr = G::corr(sum_y);
            // q4_1: the min's share, m * sum x = m * sigma * sum X (sum_y less its 0x808080 per value)
            const float xsum = F::kHead == 4 ? sigma * (float)(int)(sum_y - (uint32_t)(4 * NG) * 0x808080u) : 0.0f;
#pragma unroll
            for (int s = 0; s < S; s++) {
#if OPGEN_QMV_SM90
                if constexpr (B) {
                    if (active) mbar_wait(&landed[s], parity);  // this stage's rows have landed
                } else
#endif
                {
                    cp_async_wait(S - 1 - s);
                    __syncthreads();
                }
                if (active) {  // rows past nrows compute on stale shared memory, never written out:
#pragma unroll      // no branch per row, so the rows of a stage interleave
                    for (int i = s * RS; i < (s + 1) * RS; i++) {
                        const uint32_t* p = mine + i * (kRowBytes / 4);
                        uint32_t Wq[NW + 1];
#pragma unroll
                        for (int j = 0; j <= NW; j++) Wq[j] = p[j];
                        const uint32_t wd = dword[i * (kRowBytes / 4)];
                        const float d = opgen::f16_to_float(__ushort_as_half((unsigned short)__byte_perm(wd, 0u, dsel)));
                        float a = fmaf(G::dot(Wq, qsel, D, corr), d * sigma, acc[i]);
                        if constexpr (F::kHead == 4) a = fmaf(opgen::f16_to_float(__ushort_as_half((unsigned short)(wd >> 16))), xsum, a);
                        acc[i] = a;
                    }
                }
            }
#if OPGEN_QMV_SM90
            if constexpr (B) parity ^= 1u;
#endif
        }
        warp_rows<R>(acc, lane, partial[warp]);
        __syncthreads();
        if ((int)threadIdx.x < nrows) {
            float sum = 0.0f;
#pragma unroll
            for (int g = 0; g < kWarps; g++) sum += partial[g][threadIdx.x];
            y[r * n + n0 + threadIdx.x] = sum;
        }
    }
}
#endif  // OPGEN_QMATVEC_DP4A

// ---------------------------------------------------------------------------- the K path
//
// qmatvec_q4_k / q6_k (any k, w 16-byte aligned, blocks of kThreads threads): a thread
// block takes an item of F::kKRows weight rows against one row of x, in steps of
// kKBlocks = 16 weight blocks (4096 weights) per row. A step's bytes of all the item's rows
// are copied to shared memory first, with coalesced 16-byte loads (all of them issued
// before the first store: the whole slab in flight at once), from the 16-byte floor of each
// row's span (q6_k blocks of 210 bytes are only 2-byte aligned). Then thread t takes part
// t % 8 (32 weights) of block t / 8 in every row of the item: it loads the 32 values of x
// its part meets once (float4 through L1) and they serve all kKRows rows, whose quants it
// reads from shared memory.
//
// Arithmetic: f32 FMA of exact quant values against x, per sub-block, then the sub-block's
// scale: q4_k sum (d*sc)*q*x - (dmin*m)*x as (d*sc) * sum q*x - (dmin*m) * sum x, q6_k
// (d*sc) * sum (q - 32)*x. The quants become floats with the exponent trick (one mask and
// one add each); a field p bits up reads as its value times 2^p, so the sums are kept per
// position and scaled by the exact power of two at the end. Against GGML's dequantized
// weights, the difference is of f32 rounding size (the tests' bound is 1e-5 of sum |x||W|).
//
// Shapes (bench/gpu.py --explore qmatvec): 8 rows per item beat 4 and 16 for q4_k, and tie with
// 4 for q6_k (figures: bench/results/NOTES.md, "Tuning figures").
// Direct global loads were not tried for q6_k: its blocks are 2-byte aligned only. On NVIDIA
// sm_80 and up the integer K path (below) takes these items instead.

constexpr int kKBlocks = kThreads / 8;  // weight blocks per step and row: a thread per 32 weights

// 8 bytes at a 2-byte aligned shared-memory address, as two words (reads one word past them).
__device__ __forceinline__ void smem8(const uint8_t* p, uint32_t& lo, uint32_t& hi) {
    const uint32_t* f = reinterpret_cast<const uint32_t*>(reinterpret_cast<unsigned long long>(p) & ~3ull);
    const uint32_t sel = (reinterpret_cast<unsigned long long>(p) & 2u) ? 0x5432u : 0x3210u;
    const uint32_t a = f[0], b = f[1], c = f[2];
    lo = __byte_perm(a, b, sel);
    hi = __byte_perm(b, c, sel);
}

// Byte P (0 or 1) of a word from __byte_perm(u, 0x4B00, 0x54..): 2^23 + byte * 256^P.
template <int P> __device__ __forceinline__ float byte_field(uint32_t e, float bias) {
    return __uint_as_float(e & (0x4B000000u | (0xFFu << (8 * P)))) - bias;
}

struct q4_k_path {  // part p: qs[16p..16p+15] (chunk c = p / 2), sub-blocks 2c (low nibbles) and 2c+1 (high)
    typedef q4_k F;
    // x of the part: lo = weights 64c + 16(p % 2) + i (i < 16), hi = lo + 32.
    struct X {
        float4 lo[4], hi[4];
        float sum_lo, sum_hi;
    };
    static __device__ __forceinline__ void load_x(const float* xb, int p, X& v) {
        const float* lo = xb + 64 * (p >> 1) + 16 * (p & 1);
        v.sum_lo = v.sum_hi = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            v.lo[j] = load_x4(lo + 4 * j);
            v.hi[j] = load_x4(lo + 32 + 4 * j);
            v.sum_lo += (v.lo[j].x + v.lo[j].y) + (v.lo[j].z + v.lo[j].w);
            v.sum_hi += (v.hi[j].x + v.hi[j].y) + (v.hi[j].z + v.hi[j].w);
        }
    }
    // The part's contribution to its row: b the block in shared memory (16-byte aligned).
    static __device__ __forceinline__ float dot(const uint8_t* b, int p, const X& v) {
        const uint4 h = *reinterpret_cast<const uint4*>(b);
        const uint4 q = *reinterpret_cast<const uint4*>(b + 16 + 16 * p);
        // Nibble P of a 16-bit half reads as q * 16^P: P 0 / 2 are lo weights i / i+1, 1 / 3 hi ones.
        float a0 = 0.0f, a1 = 0.0f, a2 = 0.0f, a3 = 0.0f;
        const uint32_t qw[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t e0 = __byte_perm(qw[j], 0x4B00u, 0x5410u), e1 = __byte_perm(qw[j], 0x4B00u, 0x5432u);
            a0 = fmaf(q4_nib<0>(e0), v.lo[j].x, a0);
            a1 = fmaf(q4_nib<1>(e0), v.hi[j].x, a1);
            a2 = fmaf(q4_nib<2>(e0), v.lo[j].y, a2);
            a3 = fmaf(q4_nib<3>(e0), v.hi[j].y, a3);
            a0 = fmaf(q4_nib<0>(e1), v.lo[j].z, a0);
            a1 = fmaf(q4_nib<1>(e1), v.hi[j].z, a1);
            a2 = fmaf(q4_nib<2>(e1), v.lo[j].w, a2);
            a3 = fmaf(q4_nib<3>(e1), v.hi[j].w, a3);
        }
        const float s_lo = fmaf(a2, 1.0f / 256.0f, a0), s_hi = fmaf(a3, 1.0f / 4096.0f, a1 * (1.0f / 16.0f));
        // Scales and mins of sub-blocks 2c, 2c+1 (get_scale_min_k4), as byte pairs: scales[0..11]
        // are h.y, h.z, h.w; the pair's bytes sit 2(c % 2) bytes into each.
        const int c = p >> 1, shift = 16 * (c & 1);
        const uint32_t a = (h.y >> shift) & 0xFFFFu, bb = (h.z >> shift) & 0xFFFFu, cc = (h.w >> shift) & 0xFFFFu;
        const uint32_t sc = c < 2 ? a & 0x3F3Fu : (cc & 0x0F0Fu) | ((a >> 2) & 0x3030u);
        const uint32_t m = c < 2 ? bb & 0x3F3Fu : ((cc >> 4) & 0x0F0Fu) | ((bb >> 2) & 0x3030u);
        const float d = opgen::f16_to_float(__ushort_as_half((unsigned short)(h.x & 0xFFFFu)));
        const float dmin = opgen::f16_to_float(__ushort_as_half((unsigned short)(h.x >> 16)));
        float r = (d * (float)(sc & 0xFFu)) * s_lo;
        r = fmaf(d * (float)(sc >> 8), s_hi, r);
        r = fmaf(-(dmin * (float)(m & 0xFFu)), v.sum_lo, r);
        return fmaf(-(dmin * (float)(m >> 8)), v.sum_hi, r);
    }
    // Nibble P of a word from __byte_perm(u, 0x4B00, ..), as q * 16^P.
    template <int P> static __device__ __forceinline__ float q4_nib(uint32_t e) {
        return __uint_as_float(e & (0x4B000000u | (0xFu << (4 * P)))) - 8388608.0f;
    }
};

struct q6_k_path {  // part p: half h = p / 4, l0 = 8 (p % 4): weights 128h + 32g + l0 + i, g < 4, i < 8
    typedef q6_k F;
    struct X {
        float4 v[4][2];  // [g][i / 4]
    };
    static __device__ __forceinline__ void load_x(const float* xb, int p, X& v) {
        const float* base = xb + 128 * (p >> 2) + 8 * (p & 3);
#pragma unroll
        for (int g = 0; g < 4; g++) {
            v.v[g][0] = load_x4(base + 32 * g);
            v.v[g][1] = load_x4(base + 32 * g + 4);
        }
    }
    // b: the block in shared memory (2-byte aligned).
    static __device__ __forceinline__ float dot(const uint8_t* b, int p, const X& v) {
        const int h = p >> 2, l0 = 8 * (p & 3);
        uint32_t qa[2], qb[2], qh[2], s0, s1;
        smem8(b + 64 * h + l0, qa[0], qa[1]);       // ql[64h + l0 + i]: g = 0 (low nibble), 2 (high)
        smem8(b + 64 * h + 32 + l0, qb[0], qb[1]);  // ql[64h + 32 + l0 + i]: g = 1, 3
        smem8(b + 128 + 32 * h + l0, qh[0], qh[1]); // qh[32h + l0 + i]: bits 2g, 2g+1
        smem8(b + 192 + 8 * h, s0, s1);             // scales[8h + l0 / 16 + 2g]
        const uint32_t ssel = (l0 >> 4) ? 0x7531u : 0x6420u;
        const uint32_t scales = __byte_perm(s0, s1, ssel);
        const float d = half_at(b + 208);
        // (q - 32) per g, as a sum over even bytes (q - 32) and odd ones (q - 32) * 256
        float acc[4][2] = {};
#pragma unroll
        for (int w = 0; w < 2; w++) {
            const uint32_t hw = qh[w];
            const uint32_t q6[4] = {(qa[w] & 0x0F0F0F0Fu) | ((hw << 4) & 0x30303030u),
                                    (qb[w] & 0x0F0F0F0Fu) | ((hw << 2) & 0x30303030u),
                                    ((qa[w] >> 4) & 0x0F0F0F0Fu) | (hw & 0x30303030u),
                                    ((qb[w] >> 4) & 0x0F0F0F0Fu) | ((hw >> 2) & 0x30303030u)};
#pragma unroll
            for (int g = 0; g < 4; g++) {
                const uint32_t e0 = __byte_perm(q6[g], 0x4B00u, 0x5410u), e1 = __byte_perm(q6[g], 0x4B00u, 0x5432u);
                const float4 xv = v.v[g][w];
                const float b0 = 8388608.0f + 32.0f, b1 = 8388608.0f + 32.0f * 256.0f;
                acc[g][0] = fmaf(byte_field<0>(e0, b0), xv.x, acc[g][0]);
                acc[g][1] = fmaf(byte_field<1>(e0, b1), xv.y, acc[g][1]);
                acc[g][0] = fmaf(byte_field<0>(e1, b0), xv.z, acc[g][0]);
                acc[g][1] = fmaf(byte_field<1>(e1, b1), xv.w, acc[g][1]);
            }
        }
        float r = 0.0f;
#pragma unroll
        for (int g = 0; g < 4; g++) {
            const float sc = (float)(int8_t)((scales >> (8 * g)) & 0xFFu);
            r = fmaf(sc, fmaf(acc[g][1], 1.0f / 256.0f, acc[g][0]), r);
        }
        return d * r;
    }
};

#if OPGEN_QMATVEC_DP4A
// ---------------------------------------------------------------------------- the K path, integer
//
// NVIDIA (sm_80 and up), qmatvec_q4_k / q6_k, w 16-byte aligned, blocks of kThreads threads:
// the K path's items and steps (F::kKRows weight rows against one row of x, steps of kKBlocks
// weight blocks per row, a thread on a part of 32 weights of a block in every row), with
// integer dot products as the dp4a path of q4_0 / q8_0:
//
// - x: a thread's 32 values of x, once per step, become X = rint(x * 2^B / s) (s the power
//   of two above the part's max |x|; B 22 for q4_k, 21 for q6_k), three byte digits each
//   (quantize_x_tc), with each group of 4's sum of X. q4_k: sum (d*sc) q x - (dmin*m) x over a
//   sub-block's half is sigma * ((d*sc) * sum q X - (dmin*m) * sum X); q6_k: sum (d*sc) (q - 32) x
//   is d * sc * sigma * (sum q X - 32 sum X), the - 32 sum X folded into the first digit's
//   accumulator. The digit sums combine with wrapping adds into sums that fit 32 bits (q4_k
//   |sum q X| <= 16 * 15 * 2^22 < 2^30, q6_k |sum (q - 32) X| <= 16 * 32 * 2^21 = 2^30).
//   q4_k's scales and mins become floats by byte_float (a permute and an add, where a
//   conversion instruction issues at a quarter of the rate). Against GGML's dequantized
//   weights the error is of f32 rounding size, as the dp4a path's (2.5e-8 of sum |x||W|
//   measured; the tests allow 1e-5).
// - Weights: on sm_90 a step's slab (all kKRows rows) is copied by bulk copies (the TMA engine;
//   lane i of warp 0 copies row i from its 16-byte floor: bulk_step) that complete on an
//   mbarrier per stage (one arrival per row), every thread waiting on its stage's barrier for
//   itself (no copy loop in every thread, no block barrier per stage), and a block's first
//   step is copied before the wait for the kernel before it (qmatvec_fast says why that is
//   safe; x is read and y written only after the wait). Elsewhere (sm_80) with cp.async in
//   P::kStages commit groups of rows, all in flight before the first is used; each group's
//   rows are used as soon as it lands (one barrier per group). On sm_90 the launch bounds ask
//   for 5 resident blocks per SM (qmatvec_k_of; 4 elsewhere), so that the next product's blocks
//   find a slot beside this one's. On an H100 (bench/results/NOTES.md), per product from HBM:
//   q4_k (2 stages) 5.09-5.11 us against 5.56-5.61 at 4 blocks/SM and 5.66-5.91 with cp.async
//   after the wait (sm_80's code); q6_k 7.10-7.18 against 7.74-7.77 at 4 and 7.72-7.74 for
//   sm_80's; 6 blocks/SM were slower for both (6.1 / 8.6). On an H200 (commit cffec5e) q4_k took 5.04 us
//   against 5.16 with cp.async, 4.26 against 5.12 from L2, at 4 blocks/SM.
// - Launched programmatically (ops.yaml's kernel_facts PROGRAMMATIC_KERNELS): a product waits for
//   the kernel before it before any access to device memory (but the weights' first step on
//   sm_90, below). An L2 prefetch of the first item's weight rows before that wait, as the dp4a
//   path does, was within noise with PDL and slower per plain launch (commit e8a5623): there is none.
//
// Shapes (bench/gpu.py --explore qmatvec; the measurements, commit 736c5fc):
// worse were 2 / 8 / 1 stages for q4_k, 4 / 1 for q6_k; scales by conversions; 16 rows per
// item; fewer registers for 5 or 6 blocks per SM; 4 rows per item at 8 blocks per SM. From
// L2 the products take nearly as long as from HBM: the instruction stream (24 dp4a a row
// and part, the scale unpacking each thread repeats) bounds them.
//
// q4_k_lean and q6_k_pair (below; commit 6c7513e) count fewer instructions per row and part in
// sm_90 SASS than the earlier q4_k_int / q6_k_int (q4_k
// 76 -> 67 between the first and the last dp4a, q6_k 124 -> 96: 5.69 against 5.79 us per
// product from HBM for q4_k, 7.91 against 8.39 for q6_k with the row copy, both with cp.async);
// the earlier structs with their variants (digit sums by int_float, shared scales), x's digits by
// quantize_x_sums, capped slabs and unrolled row copies are in commit 3eb441a.

// Three digit sums as the one integer they stand for (mod 2^32).
__device__ __forceinline__ int digits3(int s0, int s1, int s2) {
    return (int)((uint32_t)s0 + ((uint32_t)s1 << 8) + ((uint32_t)s2 << 16));
}

// x quantized to X = rint(x * 2^BITS / s) (s the power of two above max |x| of the NG groups of
// 4; sigma = s * 2^-BITS, the value of one unit of X, NaN for an infinite or NaN x), with
// xs[g] = sum X over group g, in three digits X = D0 + 256 D1 + 65536 D2: D0, D1 X's two low
// bytes (unsigned, 0..255) and D2 = X >> 16 (signed, |D2| <= 64), read straight from the bits
// of rint(x * f) + 1.5 * 2^23 (0x4B400000 + X: its low 16 bits are X's), so no value needs a
// subtraction and no digit word a flip to balanced digits; D2's byte there is 0x40 + D2, made
// signed by + 0x40 and a flip of bit 7 (no carry: 0x40 + D2 + 0x40 <= 0xC0). Dot products:
// unsigned quants by unsigned D0, D1 (dp4a_uu), by signed D2 (dp4a, or dp4a_us where the quants
// pass 127); the sums wrap as digits3's.
template <int NG, int BITS>
__device__ __forceinline__ void quantize_x_tc(const float4 (&v)[NG], uint32_t (&D)[3][NG], int (&xs)[NG], float& sigma) {
    static_assert(BITS == 22 || BITS == 21, "X of 22 or 21 bits");
    float m = 0.0f;
#pragma unroll
    for (int g = 0; g < NG; g++) {
        m = max_nan(m, max_nan(max_nan(fabsf(v[g].x), fabsf(v[g].y)), max_nan(fabsf(v[g].z), fabsf(v[g].w))));
    }
    uint32_t e = __float_as_uint(m) >> 23;
    e = e < (uint32_t)BITS ? (uint32_t)BITS : e;
    const float f = __uint_as_float((253u + BITS - e) << 23);
    sigma = e >= 255u ? __uint_as_float(0x7FC00000u) : __uint_as_float((e + 1u - BITS) << 23);
#pragma unroll
    for (int g = 0; g < NG; g++) {
        const uint32_t y0 = __float_as_uint(fmaf(v[g].x, f, 12582912.0f));
        const uint32_t y1 = __float_as_uint(fmaf(v[g].y, f, 12582912.0f));
        const uint32_t y2 = __float_as_uint(fmaf(v[g].z, f, 12582912.0f));
        const uint32_t y3 = __float_as_uint(fmaf(v[g].w, f, 12582912.0f));
        xs[g] = (int)(((y0 + y1) + (y2 + y3)) - 4u * 0x4B400000u);
        const uint32_t a = __byte_perm(y0, y1, 0x5140u), b = __byte_perm(y2, y3, 0x5140u);
        D[0][g] = __byte_perm(a, b, 0x5410u);
        D[1][g] = __byte_perm(a, b, 0x7632u);
        D[2][g] = (__byte_perm(__byte_perm(y0, y1, 0x0062u), __byte_perm(y2, y3, 0x0062u), 0x5410u) + 0x40404040u) ^ 0x80808080u;
    }
}
__device__ __forceinline__ int dp4a_uu(uint32_t a, uint32_t b, int c) { return (int)__dp4a(a, b, (unsigned int)c); }

// q4_k_lean and q6_k_pair add into a step's accumulator without sigma (a power of two: scaling
// it out of every part and into the step's sum, acc += sigma * step, changes no rounding but at
// the ends of the exponent range), so each part saves the multiply by sigma.
//
// q4_k_lean (q4_k): the high nibbles are multiplied in place (q & 0xF0F0F0F0, unsigned by
// signed dp4a: 16 times the sums, divided out exactly by a shift when the digits combine),
// which saves the shift of each quant word; the scales and mins of the part's two
// sub-blocks come out as the four bytes of one word (a permute that picks the bytes the
// part needs from the two 32-bit words that hold them, then masks), not two half-words
// by branches; the min term takes sum X as a float (sigma folded out as above).
__device__ __forceinline__ int dp4a_us(uint32_t a, uint32_t b, int c) {  // unsigned bytes of a, signed of b
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
}

struct q4_k_lean {  // part p as q4_k_path's: groups 0..3 the low half (sub-block 2c), 4..7 the high (2c+1)
    typedef q4_k F;
    static constexpr int kStages = 2;  // q4_k's stages (H100, from HBM, 5 blocks/SM: 2: 5.10 us, 4: 5.22, 8: 5.38)
    static constexpr bool kRowCopy = false;  // cp.async (sm_80): one loop over the slab's pieces (qmatvec_kint)
    struct X {
        uint32_t D[3][8];
        float sigma, sx_lo, sx_hi;  // sx_*: sum X of the half (exact: |sum| <= 16 * 2^22)
    };
    static __device__ __forceinline__ void load_x(const float* xb, int p, float4 (&v)[8]) {
        const float* lo = xb + 64 * (p >> 1) + 16 * (p & 1);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            v[j] = load_x4(lo + 4 * j);
            v[4 + j] = load_x4(lo + 32 + 4 * j);
        }
    }
    static __device__ __forceinline__ void quantize(const float4 (&v)[8], X& q) {
        int xs[8];
        quantize_x_tc<8, 22>(v, q.D, xs, q.sigma);
        q.sx_lo = (float)((xs[0] + xs[1]) + (xs[2] + xs[3]));
        q.sx_hi = (float)((xs[4] + xs[5]) + (xs[6] + xs[7]));
    }
    // The part's contribution to its row over sigma, added to acc: row the step's row in
    // shared memory, off the block's byte offset in it (a multiple of 16).
    static __device__ __forceinline__ void dot_acc(const uint8_t* row, int off, int p, const X& v, float& acc) {
        const uint8_t* b = row + off;
        const uint4 h = *reinterpret_cast<const uint4*>(b);
        const uint4 q = *reinterpret_cast<const uint4*>(b + 16 + 16 * p);
        const uint32_t qw[4] = {q.x, q.y, q.z, q.w};
        int a0 = 0, a1 = 0, a2 = 0, b0 = 0, b1 = 0, b2 = 0;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t lo = qw[j] & 0x0F0F0F0Fu, hi = qw[j] & 0xF0F0F0F0u;  // hi: 16 q
            a0 = dp4a_uu(lo, v.D[0][j], a0);
            a1 = dp4a_uu(lo, v.D[1][j], a1);
            b0 = dp4a_uu(hi, v.D[0][4 + j], b0);
            b1 = dp4a_uu(hi, v.D[1][4 + j], b1);
            a2 = dp4a(lo, v.D[2][j], a2);
            b2 = dp4a_us(hi, v.D[2][4 + j], b2);
        }
        // sum q X of the high half: b0 / 16 + 16 b1 + 4096 b2 (b0 a multiple of 16: the shift is
        // exact), wrapping as digits3 (|sum q X| <= 16 * 15 * 2^22 < 2^30)
        const int s_hi = (int)((uint32_t)(b0 >> 4) + ((uint32_t)b1 << 4) + ((uint32_t)b2 << 12));
        const int s_lo = digits3(a0, a1, a2);
        // Scales and mins of sub-blocks 2c, 2c+1 (c = p / 2, k = c % 2) as the bytes of one word
        // [sc(2c), sc(2c+1), m(2c), m(2c+1)] (get_scale_min_k4): c < 2 bytes 2k, 2k+1 of
        // scales[0..3] (h.y) and of scales[4..7] (h.z), low 6 bits; c >= 2 the low (scales) and
        // high (mins) nibbles of bytes 2k, 2k+1 of scales[8..11] (h.w), with bits 6..7 of the
        // c < 2 bytes above them.
        const int c = p >> 1;
        const uint32_t sel = (c & 1) ? 0x7632u : 0x5410u;
        const uint32_t low = __byte_perm(h.y, h.z, sel);
        const uint32_t high = (__byte_perm(h.w, h.w >> 4, sel) & 0x0F0F0F0Fu) | ((low >> 2) & 0x30303030u);
        const uint32_t sm = c < 2 ? low & 0x3F3F3F3Fu : high;
        const float d = opgen::f16_to_float(__ushort_as_half((unsigned short)(h.x & 0xFFFFu)));
        const float dmin = opgen::f16_to_float(__ushort_as_half((unsigned short)(h.x >> 16)));
        float r = fmaf(d * byte_float<0>(sm), (float)s_lo, acc);
        r = fmaf(d * byte_float<1>(sm), (float)s_hi, r);
        r = fmaf(-(dmin * byte_float<2>(sm)), v.sx_lo, r);
        acc = fmaf(-(dmin * byte_float<3>(sm)), v.sx_hi, r);
    }
};

// q6_k_pair (q6_k): other parts, so that a part meets 2 of the block's 16 scales instead of
// 4. Part p: half h = p / 4, g pair e = (p / 2) % 2, l0 = 16 (p % 2): weights
// 128h + 32g + l0 + i (i < 16) for g = e and e + 2, which are the low and the high nibbles
// of the same 16 bytes ql[64h + 32e + l0 + i], with bits 2g, 2g+1 of qh[32h + l0 + i], and
// scales[8h + p % 2 + 2g]: 24 dp4a (6 accumulators, not 12), 2 scales, 2 conversions of
// sums. Its 16-byte windows of quants are read as aligned words from shared memory, with
// one byte permute per word where the block sits 2 bytes off (blocks of 210 bytes). X has
// 21 bits (quantize_x_tc<8, 21>): |sum (q - 32) X| over 16 weights <= 16 * 32 * 2^21 =
// 2^30 keeps the digits' sums in 32 bits (with 22 bits it could reach 2^31).
struct q6_k_pair {
    typedef q6_k F;
    static constexpr int kStages = 4;  // q6_k's stages (H100, from HBM, cp.async: 4: 7.89 us, 2: 8.08, 1: 8.86)
    static constexpr bool kRowCopy = true;  // cp.async (sm_80): row by row, the stages a loop (qmatvec_kint)
    struct X {
        uint32_t D[3][8];  // groups 0..3: g = e, 4..7: g = e + 2
        int corr[2];       // -32 * sum X of each run of 16
        float sigma;
    };
    static __device__ __forceinline__ void load_x(const float* xb, int p, float4 (&v)[8]) {
        const float* base = xb + 128 * (p >> 2) + 32 * ((p >> 1) & 1) + 16 * (p & 1);
#pragma unroll
        for (int j = 0; j < 4; j++) {
            v[j] = load_x4(base + 4 * j);
            v[4 + j] = load_x4(base + 64 + 4 * j);
        }
    }
    static __device__ __forceinline__ void quantize(const float4 (&v)[8], X& q) {
        int xs[8];
        quantize_x_tc<8, 21>(v, q.D, xs, q.sigma);
        q.corr[0] = -32 * ((xs[0] + xs[1]) + (xs[2] + xs[3]));
        q.corr[1] = -32 * ((xs[4] + xs[5]) + (xs[6] + xs[7]));
    }
    // 16 bytes at row + o (o even) as 4 words: 5 aligned words from its 4-byte floor, aligned
    // by sel (0x3210 or 0x5432).
    static __device__ __forceinline__ void window16(const uint8_t* row, int o, uint32_t sel, uint32_t (&w)[4]) {
        const uint32_t* f = reinterpret_cast<const uint32_t*>(row) + (o >> 2);
        uint32_t u[5];
#pragma unroll
        for (int k = 0; k < 5; k++) u[k] = f[k];
#pragma unroll
        for (int k = 0; k < 4; k++) w[k] = __byte_perm(u[k], u[k + 1], sel);
    }
    // row: the step's row in shared memory (16-byte aligned), off: the block's byte offset (even).
    static __device__ __forceinline__ void dot_acc(const uint8_t* row, int off, int p, const X& v, float& acc) {
        const int h = p >> 2, e = (p >> 1) & 1, l0 = 16 * (p & 1);
        const uint32_t sel = (off & 2) ? 0x5432u : 0x3210u;
        uint32_t ql[4], qh[4];
        window16(row, off + 64 * h + 32 * e + l0, sel, ql);
        window16(row, off + 128 + 32 * h + l0, sel, qh);
        const int so = off + 192 + 8 * h + (p & 1) + 2 * e;
        const float sc_a = (float)reinterpret_cast<const int8_t*>(row)[so];
        const float sc_b = (float)reinterpret_cast<const int8_t*>(row)[so + 4];
        const float d = opgen::f16_to_float(__ushort_as_half(reinterpret_cast<const unsigned short*>(row)[(off + 208) >> 1]));
        int a0 = v.corr[0], a1 = 0, a2 = 0, b0 = v.corr[1], b1 = 0, b2 = 0;
        const int up = 4 - 2 * e, down = 2 * e;  // bits 2g of qh to bit 4: g = e up, g = e + 2 down
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const uint32_t lo = (ql[k] & 0x0F0F0F0Fu) | ((qh[k] << up) & 0x30303030u);
            const uint32_t hi = ((ql[k] >> 4) & 0x0F0F0F0Fu) | ((qh[k] >> down) & 0x30303030u);
            a0 = dp4a_uu(lo, v.D[0][k], a0);  // quants 0..63: unsigned as signed alike
            a1 = dp4a_uu(lo, v.D[1][k], a1);
            b0 = dp4a_uu(hi, v.D[0][4 + k], b0);
            b1 = dp4a_uu(hi, v.D[1][4 + k], b1);
            a2 = dp4a(lo, v.D[2][k], a2);
            b2 = dp4a(hi, v.D[2][4 + k], b2);
        }
        const float r = fmaf(sc_b, (float)digits3(b0, b1, b2), sc_a * (float)digits3(a0, a1, a2));
        acc = fmaf(d, r, acc);
    }
};

#if OPGEN_QMV_SM90
// Warp 0 issues a step of an item by bulk copies: lane i (< kKRows) arrives on its
// stage's barrier (kKRows / kStages arrivals a phase) with the bytes of row i's step from its
// 16-byte floor (the cp.async pieces' bytes: the same bytes land in the same places), then
// copies them; lanes of rows past nrows arrive with none.
template <typename P> __device__ __forceinline__ void bulk_step(uint4* stage, uint64_t* landed, const uint8_t* wi,
                                                               size_t row_bytes, size_t c0, int nrows, int cb,
                                                               unsigned int lane) {
    typedef typename P::F F;
    constexpr int R = F::kKRows, RS = R / P::kStages;
    constexpr int kRowVecs = kKBlocks * F::kBytes / 16 + 2;
    constexpr bool kAligned = F::kBytes % 16 == 0;
    static_assert(R <= 32, "a row a lane of warp 0");
    if ((int)lane < R) {
        const int i = (int)lane;
        const uint8_t* src = wi + i * row_bytes + c0 * F::kBytes;
        const uint32_t skew = kAligned ? 0u : (uint32_t)(reinterpret_cast<unsigned long long>(src) & 15u);
        const uint32_t bytes = i >= nrows ? 0u : kAligned ? (uint32_t)cb * F::kBytes : (skew + (uint32_t)cb * F::kBytes + 15u) & ~15u;
        mbar_arm(&landed[i / RS], bytes);
        if (i < nrows) bulk_copy(stage + i * kRowVecs, src - skew, bytes, &landed[i / RS]);
    }
}
#endif

template <typename P> __device__ void qmatvec_kint(const uint8_t* __restrict__ w, const float* __restrict__ x,
                                                   float* __restrict__ y, size_t n, size_t k, size_t rows) {
    typedef typename P::F F;
    constexpr int R = F::kKRows, S = P::kStages, RS = R / S;
    static_assert(R % S == 0, "whole rows per stage");
    constexpr int kRowVecs = kKBlocks * F::kBytes / 16 + 2;  // a step of a row from its 16-byte floor, + a spare
    constexpr int kWarps = kThreads / 32;
    constexpr bool kAligned = F::kBytes % 16 == 0;  // q4_k: every block of an aligned w is 16-byte aligned
    __shared__ uint4 stage[R * kRowVecs];
    __shared__ float partial[kWarps][R];
    const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int blk = (int)threadIdx.x / 8, part = (int)threadIdx.x % 8;
    const size_t row_blocks = k / F::kElems, row_bytes = row_blocks * F::kBytes;
    const size_t items = (n + R - 1) / R * rows;
#if OPGEN_QMV_SM90
    __shared__ __align__(8) uint64_t landed[S];  // stage s's rows have landed (a phase a step)
    uint32_t parity = 0u;                          // of the barriers' current phase (one per step)
    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < S; s++) mbar_init<RS>(&landed[s]);
        mbar_init_fence();
    }
    // The first item's first step of weights is copied before the wait for the kernel before
    // (qmatvec_k leaves the wait to this function; qmatvec_fast says why it may).
    if (warp == 0 && (size_t)blockIdx.x < items) {
        __syncwarp();  // thread 0's initialisation, for the lanes that arrive
        const size_t n0 = blockIdx.x / rows * R;
        const int cb = row_blocks < (size_t)kKBlocks ? (int)row_blocks : kKBlocks;
        bulk_step<P>(stage, landed, w + n0 * row_bytes, row_bytes, 0, n - n0 < (size_t)R ? (int)(n - n0) : R, cb, lane);
    }
    wait_for_predecessor();
#endif
    for (size_t item = blockIdx.x; item < items; item += gridDim.x) {
        const size_t n0 = item / rows * R, r = item % rows;
        const int nrows = (int)(n - n0 < (size_t)R ? n - n0 : (size_t)R);
        const uint8_t* wi = w + n0 * row_bytes;
        const float* xr = x + r * k;
        float acc[R];
#pragma unroll
        for (int i = 0; i < R; i++) acc[i] = 0.0f;
        for (size_t c0 = 0; c0 < row_blocks; c0 += kKBlocks) {
            const int cb = row_blocks - c0 < (size_t)kKBlocks ? (int)(row_blocks - c0) : kKBlocks;
            const bool active = blk < cb;
            float4 xv[8];  // x first: its loads are not queued behind the slab's
#pragma unroll
            for (int g = 0; g < 8; g++) xv[g] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (active) P::load_x(xr + (c0 + blk) * F::kElems, part, xv);
            // Row i's step starts `skew` bytes into its 16-byte floor; unloaded pieces stay
            // stale, never read for rows written out.
#if OPGEN_QMV_SM90
            // the previous step is used up (every thread has passed its last read of the stage
            // and of `partial`), and, the first time, the barriers are initialised; the block's
            // first step was issued before the wait, above
            __syncthreads();
            if (warp == 0 && !(item == blockIdx.x && c0 == 0)) bulk_step<P>(stage, landed, wi, row_bytes, c0, nrows, cb, lane);
#else
            if (c0 > 0) __syncthreads();  // the previous step is used up
            if constexpr (P::kRowCopy) {
                // Row by row (q6_k): thread t copies pieces t, t + kThreads, .. of each row's step (an
                // address a row, not a division and a 64-bit address a piece), the stages kept a loop
                // (#pragma unroll 1): fully unrolled, ptxas moves x's quantization (which waits for
                // x's loads) between the stages' cp.async, so a warp stalls on x before it has asked
                // for the whole slab. On an H100 with cp.async (commits 6c7513e and 839e492), per
                // product from HBM: q6_k 7.74 us
                // against 7.89 unrolled (105 registers against 120; by the loop below 8.27 against
                // 8.21 by rows, 2 stages); q4_k by rows took 93 registers, so 5 blocks per SM, and was
                // slower (6.08 us; 5.82 capped at 4 blocks by a padded slab) than by the loop (5.69).
#pragma unroll 1
                for (int s = 0; s < S; s++) {
#pragma unroll
                    for (int r = 0; r < RS; r++) {
                        const int i = s * RS + r;
                        const uint8_t* src = wi + i * row_bytes + c0 * F::kBytes;
                        const unsigned long long skew = kAligned ? 0u : reinterpret_cast<unsigned long long>(src) & 15u;
                        const int nv = kAligned ? cb * F::kBytes / 16 : (int)((skew + cb * F::kBytes + 15) / 16);
                        const uint8_t* from = src - skew;
#pragma unroll
                        for (int j = 0; j < (kRowVecs + kThreads - 1) / kThreads; j++) {
                            const int c = (int)threadIdx.x + j * kThreads;
                            if (i < nrows && c < nv) cp_async16(stage + i * kRowVecs + c, from + 16 * c);
                        }
                    }
                    cp_async_commit();
                }
            } else {
#pragma unroll
                for (int s = 0; s < S; s++) {
                    for (int u = (int)threadIdx.x; u < RS * kRowVecs; u += kThreads) {
                        const int i = s * RS + u / kRowVecs, c = u % kRowVecs;
                        const uint8_t* src = wi + i * row_bytes + c0 * F::kBytes;
                        const unsigned long long skew = kAligned ? 0u : reinterpret_cast<unsigned long long>(src) & 15u;
                        if (i < nrows && c < (int)((skew + cb * F::kBytes + 15) / 16)) {
                            cp_async16(stage + i * kRowVecs + c, src - skew + 16 * c);
                        }
                    }
                    cp_async_commit();
                }
            }
#endif
            typename P::X xq;
            P::quantize(xv, xq);
            float sacc[R];  // the step's sums over sigma
#pragma unroll
            for (int i = 0; i < R; i++) sacc[i] = 0.0f;
#pragma unroll
            for (int s = 0; s < S; s++) {
#if OPGEN_QMV_SM90
                if (active) mbar_wait(&landed[s], parity);  // this stage's rows have landed
#else
                cp_async_wait(S - 1 - s);
                __syncthreads();
#endif
                if (active) {
#pragma unroll
                    for (int i = s * RS; i < (s + 1) * RS; i++) {  // rows past nrows: stale bytes, never written out
                        const uint8_t* src = wi + i * row_bytes + c0 * F::kBytes;
                        const unsigned long long skew = kAligned ? 0u : reinterpret_cast<unsigned long long>(src) & 15u;
                        P::dot_acc(reinterpret_cast<const uint8_t*>(stage + i * kRowVecs), (int)skew + blk * F::kBytes, part, xq, sacc[i]);
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < R; i++) acc[i] = fmaf(xq.sigma, sacc[i], acc[i]);
#if OPGEN_QMV_SM90
            parity ^= 1u;
#endif
        }
        warp_rows<R>(acc, lane, partial[warp]);
        __syncthreads();
        if ((int)threadIdx.x < nrows) {
            float s = 0.0f;
#pragma unroll
            for (int g = 0; g < kWarps; g++) s += partial[g][threadIdx.x];
            y[r * n + n0 + threadIdx.x] = s;
        }
    }
}
#endif  // OPGEN_QMATVEC_DP4A

template <typename P> __device__ void qmatvec_kpath(const uint8_t* __restrict__ w, const float* __restrict__ x,
                                                    float* __restrict__ y, size_t n, size_t k, size_t rows) {
    typedef typename P::F F;
    constexpr int R = F::kKRows;
    constexpr int kRowVecs = kKBlocks * F::kBytes / 16 + 2;  // a step of a row from its 16-byte floor, + a spare
    constexpr int kVecs = R * kRowVecs, kPer = (kVecs + kThreads - 1) / kThreads;
    __shared__ uint4 stage[kVecs];
    __shared__ float partial[kGroups][R];
    const unsigned int lane = threadIdx.x % OPGEN_LANE_GROUP, group = threadIdx.x / OPGEN_LANE_GROUP;
    const int blk = (int)threadIdx.x / 8, part = (int)threadIdx.x % 8;
    const size_t row_blocks = k / F::kElems, row_bytes = row_blocks * F::kBytes;
    const size_t items = (n + R - 1) / R * rows;
    for (size_t item = blockIdx.x; item < items; item += gridDim.x) {
        const size_t n0 = item / rows * R, r = item % rows;
        const int nrows = (int)(n - n0 < (size_t)R ? n - n0 : (size_t)R);
        const uint8_t* wi = w + n0 * row_bytes;
        const float* xr = x + r * k;
        float acc[R];
#pragma unroll
        for (int i = 0; i < R; i++) acc[i] = 0.0f;
        for (size_t c0 = 0; c0 < row_blocks; c0 += kKBlocks) {
            const int cb = row_blocks - c0 < (size_t)kKBlocks ? (int)(row_blocks - c0) : kKBlocks;
            const bool active = blk < cb;
            typename P::X xv;
            if (active) P::load_x(xr + (c0 + blk) * F::kElems, part, xv);
            if (c0 > 0) __syncthreads();  // the previous step is used up
            // Row i's step starts `skew` bytes into its 16-byte floor (it changes from row to row
            // when row_bytes % 16 != 0).
            uint4 v[kPer];
#pragma unroll
            for (int j = 0; j < kPer; j++) {
                const int u = (int)threadIdx.x + j * kThreads, i = u / kRowVecs, c = u % kRowVecs;
                const uint8_t* src = wi + i * row_bytes + c0 * F::kBytes;
                const unsigned long long skew = reinterpret_cast<unsigned long long>(src) & 15u;
                if (u < kVecs && i < nrows && c < (int)((skew + cb * F::kBytes + 15) / 16)) {
                    v[j] = *reinterpret_cast<const uint4*>(src - skew + 16 * c);
                }
            }
#pragma unroll
            for (int j = 0; j < kPer; j++) {
                const int u = (int)threadIdx.x + j * kThreads;
                if (u < kVecs) stage[u] = v[j];  // unloaded pieces: stale, never read for rows written out
            }
            __syncthreads();
            if (active) {
#pragma unroll
                for (int i = 0; i < R; i++) {  // rows past nrows compute on stale bytes, never written out
                    const uint8_t* src = wi + i * row_bytes + c0 * F::kBytes;
                    const uint8_t* b = reinterpret_cast<const uint8_t*>(stage + i * kRowVecs) +
                                       (reinterpret_cast<unsigned long long>(src) & 15u) + blk * F::kBytes;
                    acc[i] += P::dot(b, part, xv);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < R; i++) {
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
        __syncthreads();  // partial and stage are free for the next item
    }
}

struct q4_k_lean;  // the integer K path's (defined for NVIDIA sm_80 and up only)
struct q6_k_pair;

// K: the integer K path's struct (NVIDIA sm_80 and up), P: the f32 K path's (elsewhere).
template <typename K, typename P> __device__ __forceinline__ void qmatvec_k(const uint8_t* w, const float* x, float* y,
                                                                            size_t n, size_t k, size_t rows) {
    typedef typename P::F F;
    const bool staged = opgen::aligned16(w) && blockDim.x == (unsigned int)kThreads;
#if OPGEN_QMATVEC_DP4A
    release_dependents();
    if (OPGEN_QMV_SM90 && staged) {  // it waits itself, after its first copies
        qmatvec_kint<K>(w, x, y, n, k, rows);
        return;
    }
    wait_for_predecessor();
    if (staged) {
        qmatvec_kint<K>(w, x, y, n, k, rows);
        return;
    }
#else
    if (staged) {
        qmatvec_kpath<P>(w, x, y, n, k, rows);
        return;
    }
#endif
    qmatvec_general<F>(w, x, y, n, k, rows);
}

// The tiled path where the format has one (q4_0, q8_0), else the general path (q4_1).
template <typename F> __device__ __forceinline__ void qmatvec_tiled_or_general(const uint8_t* w, const float* x, float* y,
                                                                               size_t n, size_t k, size_t rows) {
    if constexpr (F::kTiled) {
        qmatvec_tiled<F>(w, x, y, n, k, rows);
    } else {
        qmatvec_general<F>(w, x, y, n, k, rows);
    }
}

// The block size qmatvec_<F> is launched with (QMATVEC_FAST_THREADS of ops.yaml's kernel_facts), and the resident
// blocks per SM its registers are bounded for: enough for a grid of 4096-row items on an H100.
template <typename F> struct fast_launch {
    static constexpr int threads = OPGEN_QMATVEC_DP4A ? F::kFastSplit * kThreads : kThreads;
    static constexpr int want = F::kFastRows >= 16 ? 2 : F::kFastRows >= 8 ? 4 : 8;
    static constexpr int min_blocks = !OPGEN_QMATVEC_DP4A ? kMinBlocks : want < 2048 / threads ? want : 2048 / threads;
};

template <typename F> __device__ __forceinline__ void qmatvec_fast(const uint8_t* w, const float* x, float* y, size_t n,
                                                                   size_t k, size_t rows) {
#if OPGEN_QMATVEC_DP4A
    const bool dp4a = k % 256 == 0 && opgen::aligned16(w) && blockDim.x == (unsigned int)fast_launch<F>::threads;
    // The weight rows of this block's first item into L2 before the wait, a row a thread (only
    // the first item: grids of 1-3 blocks per multiprocessor with every item prefetched were
    // slower for every format on an H100, commit e8a5623).
    if (dp4a && blockIdx.x % rows == 0) {
        const size_t n0 = blockIdx.x / rows * F::kFastRows, row_bytes = k / F::kElems * F::kBytes;
        const unsigned int row = threadIdx.x + F::kFastPrefetchFrom;
        if (row < (unsigned int)F::kFastRows && n0 + row < n) {
            prefetch_l2(w + (n0 + row) * row_bytes, (uint32_t)row_bytes);  // 16-byte multiple: k % 256 == 0
        }
    }
    release_dependents();
    // On sm_90 (q4_0, q4_1) the dp4a path copies its first chunk of weights into shared memory
    // and only then waits for the kernel before. That reads the weights while that kernel may still
    // run, which is safe because no kernel writes a QStorage's blocks: runtime/gpu/quant.py
    // writes them only by host-to-device copies and memsets (quantize, qzeros,
    // qstorage_from_bytes), and a programmatic launch overlaps only kernels queued before it,
    // never across a copy or a memset (the stream orders those fully). A kernel that wrote
    // quantized blocks on the device would need the copies moved after the wait. x is still
    // read, and y written, only after the wait.
    if (OPGEN_QMV_SM90 && F::kFastBulk && dp4a) {  // it waits itself, after its first copies
        qmatvec_dp4a<F>(w, x, y, n, k, rows);
        return;
    }
    wait_for_predecessor();
    if (dp4a) {
        qmatvec_dp4a<F>(w, x, y, n, k, rows);
    } else {
#else
    if (k % 256 == 0 && opgen::aligned16(w)) {
        qmatvec_tiled_or_general<F>(w, x, y, n, k, rows);
    } else {
#endif
        qmatvec_general<F>(w, x, y, n, k, rows);
    }
}

// qmatvec_<F>'s path, launch bounds, and whether it waits for the kernel before it (so that it
// may be launched programmatically: ops.yaml's PROGRAMMATIC_KERNELS, which its generated entry
// point checks against `waits`). The general path by default; q4_0, q4_1 and q8_0 the fast
// one, q4_k and q6_k the K path (the integer one on NVIDIA sm_80 and up).
template <typename F> struct qmatvec_of {
    static constexpr int threads = kThreads, min_blocks = kMinBlocks;
    static constexpr bool waits = false;
    static __device__ __forceinline__ void run(const uint8_t* w, const float* x, float* y, size_t n, size_t k,
                                               size_t rows) {
        qmatvec_general<F>(w, x, y, n, k, rows);
    }
};
template <typename F> struct qmatvec_fast_of {
    static constexpr int threads = fast_launch<F>::threads, min_blocks = fast_launch<F>::min_blocks;
    static constexpr bool waits = true;  // wait_for_predecessor (on NVIDIA sm_90, where launches are programmatic)
    static __device__ __forceinline__ void run(const uint8_t* w, const float* x, float* y, size_t n, size_t k,
                                               size_t rows) {
        qmatvec_fast<F>(w, x, y, n, k, rows);
    }
};
template <typename K, typename P, int MB = 0> struct qmatvec_k_of {
    // MB: the launch bounds' resident blocks per SM on sm_90 (kKMinBlocks elsewhere)
    static constexpr int threads = kThreads, min_blocks = OPGEN_QMV_SM90 && MB > 0 ? MB : kKMinBlocks;
    static constexpr bool waits = true;  // wait_for_predecessor (on NVIDIA sm_90, where launches are programmatic)
    static __device__ __forceinline__ void run(const uint8_t* w, const float* x, float* y, size_t n, size_t k,
                                               size_t rows) {
        qmatvec_k<K, P>(w, x, y, n, k, rows);
    }
};
template <> struct qmatvec_of<q4_0> : qmatvec_fast_of<q4_0> {};
template <> struct qmatvec_of<q4_1> : qmatvec_fast_of<q4_1> {};
template <> struct qmatvec_of<q8_0> : qmatvec_fast_of<q8_0> {};
template <> struct qmatvec_of<q4_k> : qmatvec_k_of<q4_k_lean, q4_k_path, 5> {};
template <> struct qmatvec_of<q6_k> : qmatvec_k_of<q6_k_pair, q6_k_path, 5> {};

}  // namespace

// The entry points, one per (pattern, values) of ops.yaml's `kernel:` patterns: generated by gen
// from templates/hip/quantized.h.j2.
#include "quantized_entries.h"
