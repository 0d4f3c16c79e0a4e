// Matrix-vector products of GGML blocks against x quantized to 8 bits, as ggml's and Candle's
// CUDA backends multiply them: x to q8_1 blocks on the device, then integer dot products.
//
//   quantize_q8_1_f32(x, xq, rows, k)   x (rows, k) contiguous f32, k a multiple of 32 ->
//                                       xq: rows * k int8 quants, then rows * k / 16 float2
//                                       {d, d * sum of the 16 quants} (a scale per 32 values,
//                                       the sum per 16 for the formats with 16-value minima)
//   qmatvec_q8_1_<fmt>(w, x, xq, y, n, k, rows)
//                                       y[r, j] = sum_i w[j, i] * x[r, i]: w an (n, k) matrix of
//                                       blocks, row-major; the block formats read xq, f32 / f16 /
//                                       bf16 weights read x itself (k a multiple of 8 for f32, of
//                                       16 for f16 / bf16: 32 bytes a unit; f32 sums)
//   qmatvec_q8_1_few_<fmt>(...)         the same for 1 or 2 rows of x, its own launch bounds
//   qmatvec_q8_1_one_<fmt>(...)         the same for 1 row of x where it copies x's row into shared
//                                       memory (kOneApart: q2_K, q3_K, q6_K), streams the weights
//                                       through stages of shared memory (kBulk: q5_0, cuda sm_90)
//                                       or takes two blocks a lane's unit (kTwoBlocks: q4_0), its
//                                       own launch bounds and code, which few's 2 rows then do not
//                                       share
//   qmatvec_q8_1_mma_<fmt>(...)         the same on the tensor cores (cuda sm_80 and up), where
//                                       runtime/gpu/quant.py's q8_mma says: float weights from
//                                       QMATVEC_Q8_MMA_F_FROM rows, x as two tf32 parts ("float
//                                       weights on the tensor cores" below); the blocks of 32 from
//                                       QMATVEC_Q8_MMA_Q_FROM rows, or 3 (QMATVEC_Q8_MMA_Q_X4_BLOCKS;
//                                       "blocks of 32 on the tensor cores")
//   qmatvec_q8_1_mma_wide_<fmt>(...)    float weights of QMATVEC_Q8_MMA_WIDE_N rows and more on
//                                       the tensor cores, its own launch bounds
//
// x in q8_1: d = max |x| / 127 over each 32 values, q = round(x / d). A NaN or an infinity in
// a block makes its d NaN, so the row's outputs are NaN. Error: each x rounds by at most d/2,
// a relative error of about 2^-8 of the block's largest value; the products' normalized mean
// squared error stays near 1e-5, under test-backend-ops' bound of 5e-4.
//
// The product: a block of kThreads threads per item, an item being R weight rows (ops.yaml's
// kernel facts QMATVEC_Q8_ROWS_X1 .. X8 and _K_X1 .. _K_X8, by the x rows and the block size) against up to 8 rows of x (the x rows rounded up to 1, 2, 4
// or 8, a template). A thread takes 32 weights at a time (a unit) of each of its item's weight
// rows, as eight 32-bit words of signed bytes with a scale a and an offset b per 16 (weight =
// a q + b), and the 32 quants of x they meet: 8 dp4a a pair, each weight read once for all rows
// of x and each x read once for all weight rows. A unit of 32 is a block of the formats of 32
// (its quants loaded once for both halves), an eighth of the formats of 256. Every format's unit() decodes its own
// layout into those words (the quants centred into signed bytes where the format adds an
// offset: (q + 128 - o) ^ 0x80 per byte; q4_0 and q5_0 keep them unsigned, b = -o a, in an
// unsigned-by-signed dp4a: QMATVEC_Q8_UNSIGNED_BLOCKS). A butterfly over each group of 32 lanes leaves
// R * x rows sums spread over the lanes, then shared memory sums the groups. For one row of x, the
// blocks of 256 of QMATVEC_Q8_LONG_K take 64 or 128 weights a lane (long_operands: its units of
// 32 share their loads).
//
// Launch: blocks of OPGEN_QMATVEC_Q8_THREADS threads (ops.yaml's kernel_facts), any grid
// (grid-stride over items, weight rows slowest, so that blocks reading the same weights run
// together). xq (rows * k * 1.5 bytes) and x 16-byte aligned.
#include "compat.h"
#include "kernel_facts.h"

namespace {

constexpr int kThreads = OPGEN_QMATVEC_Q8_THREADS;
constexpr int kGroups = kThreads / OPGEN_LANE_GROUP;
static_assert(kThreads % OPGEN_LANE_GROUP == 0, "whole groups of lanes");

// ---------------------------------------------------------------------------- loads
//
// A field's alignment A is the largest power of two (at most 16) dividing the format's block
// bytes and the field's offset: blocks of 18, 22, 34, 110, 210 bytes allow 16-bit accesses only.

__device__ __forceinline__ uint32_t u16_at(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }
__device__ __forceinline__ float half_at(const uint8_t* p) {
    return opgen::f16_to_float(__ushort_as_half((unsigned short)u16_at(p)));
}

template <int A> __device__ __forceinline__ uint32_t word_at(const uint8_t* p) {
    if constexpr (A >= 4) {
        return *reinterpret_cast<const uint32_t*>(p);
    } else {
        return u16_at(p) | (u16_at(p + 2) << 16);
    }
}

template <int A> __device__ __forceinline__ void words4(const uint8_t* p, uint32_t (&w)[4]) {
    if constexpr (A >= 16) {
        const uint4 v = *reinterpret_cast<const uint4*>(p);
        w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
    } else if constexpr (A >= 8) {
        const uint2 lo = *reinterpret_cast<const uint2*>(p), hi = *reinterpret_cast<const uint2*>(p + 8);
        w[0] = lo.x, w[1] = lo.y, w[2] = hi.x, w[3] = hi.y;
    } else {
#pragma unroll
        for (int i = 0; i < 4; i++) w[i] = word_at<A>(p + 4 * i);
    }
}

// Bytes q in [0, 2o) as the signed bytes q - o.
template <int O> __device__ __forceinline__ uint32_t centred(uint32_t q) {
    return (q + (uint32_t)(128 - O) * 0x01010101u) ^ 0x80808080u;
}

// A unit's bytes q in [0, 2o) of weights (q - o) d: as read where kUnsigned (an unsigned-by-signed
// dp4a takes them, and b = -o d meets x's sums: offset_b), else centred into signed bytes (b = 0).
template <int O, bool kUnsigned> __device__ __forceinline__ uint32_t offset_quants(uint32_t q) {
    return kUnsigned ? q : centred<O>(q);
}
template <int O, bool kUnsigned> __device__ __forceinline__ float offset_b(float d) { return kUnsigned ? -(float)O * d : 0.0f; }

// Bits 0..3 of h, one to bit 4 of each byte (the fifth bit of q5 quants): one multiply places
// copies of the four bits 7 apart (h << 4, << 11, << 18, << 25), the mask keeps bit i of copy i.
__device__ __forceinline__ uint32_t fifth_bits(uint32_t h) { return ((h & 0xFu) * 0x02040810u) & 0x10101010u; }

// Integer dot products as f32 without the conversion pipe (a quarter of the multiply-adds' rate):
// sums started at kSumBias, whose bits with s added read as the f32 12582912 + s (2^23 + 2^22:
// the mantissa's units) wherever |s| < 2^22; a block's |s| is at most 32 * 128 * 128 = 2^19.
constexpr int kSumBias = 0x4B400000;
__device__ __forceinline__ float sum_value(int s) { return __int_as_float(s) - 12582912.0f; }

// The dot product of four signed bytes with four, added to c.
__device__ __forceinline__ int dot4(uint32_t a, uint32_t b, int c) {
#if OPGEN_CUDA
    return __dp4a((int)a, (int)b, c);
#else
#pragma unroll
    for (int i = 0; i < 4; i++) c += (int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i));
    return c;
#endif
}

// The dot product of four unsigned bytes a with four signed bytes b, added to c.
__device__ __forceinline__ int dot4_unsigned(uint32_t a, uint32_t b, int c) {
#if OPGEN_CUDA
    int d;
    asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(c));
    return d;
#else
#pragma unroll
    for (int i = 0; i < 4; i++) c += (int)((a >> (8 * i)) & 0xFFu) * (int)(signed char)(b >> (8 * i));
    return c;
#endif
}

// ---------------------------------------------------------------------------- formats
//
// unit(row, u, q, a, b): weights 32u..32u+31 of a weight row as signed bytes q (unsigned where
// F::kUnsigned; byte i of q[j] is weight 4j + i) with weight = a[h] * q + b[h] for the weights
// 16h..16h+15 of the unit. The layouts and formulas of ggml-common.h and GGML's dequantize_row_*. The blocks of 32 also give quarter(blk, t, lo, hi, a): words t and
// t + 4 of their unit (weights 4t .. 4t + 3 and 16 + 4t ..) alone, the tensor cores' fragments.

// The first N words of a block of K bytes at p (A-aligned; the words past its K bytes are any
// value), read as whole aligned 16-byte pieces: two or three 16-byte loads where 2-byte ones
// would take 2N, each warp-wide load then touching the block's cache lines once. Only the
// pieces holding some of its K bytes are read, so no load leaves the 16-byte pieces the weights
// lie in. A word shift by (p % 16) / 4 (two steps of selects) and, for A = 2, a half-word one.
// A 16-byte piece of the weights; kEvictFirst: loaded first out of L1 (ld.global.L1::evict_first on
// cuda, a plain load on HIP), for weights that no other lane of the block reads again.
template <bool kEvictFirst> __device__ __forceinline__ uint4 piece_at(const uint4* p) {
#if OPGEN_CUDA
    if constexpr (kEvictFirst) {
        uint4 v;
        asm("ld.global.L1::evict_first.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
        return v;
    }
#endif
    return *p;
}

// The L2 policy of float weights' loads (cuda, QMATVEC_Q8_FLOAT_EVICT_FIRST): their lines first
// out of L2 where the weights take QMATVEC_Q8_FLOAT_EVICT_FIRST_BYTES and more (read once a
// product, more than L2 holds; smaller weights may stay in L2 for the next call), else an
// evict-normal one (on the H200, where L2 holds the weights, as fast as plain loads in one call and
// 0.3 us slower in another: f16 by one row at 4096²). One value for the grid, held by each thread.
__device__ __forceinline__ uint64_t float_weight_policy(size_t weight_bytes) {
    uint64_t policy = 0;
#if OPGEN_CUDA
    if (OPGEN_QMATVEC_Q8_FLOAT_EVICT_FIRST && weight_bytes >= (size_t)OPGEN_QMATVEC_Q8_FLOAT_EVICT_FIRST_BYTES) {
        asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    } else {
        asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(policy));
    }
#endif
    return policy;
}
// A 16-byte piece of float weights under float_weight_policy's policy (a plain load on HIP and
// where QMATVEC_Q8_FLOAT_EVICT_FIRST is 0).
__device__ __forceinline__ uint4 float_piece_at(const uint4* p, uint64_t policy) {
#if OPGEN_CUDA
    if constexpr (OPGEN_QMATVEC_Q8_FLOAT_EVICT_FIRST != 0) {
        uint4 v;
        asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
            : "l"(p), "l"(policy));
        return v;
    }
#endif
    return *p;
}

template <int N, int K, int A, bool kEvictFirst = false>
__device__ __forceinline__ void block_words(const uint8_t* p, uint32_t (&w)[N]) {
    constexpr int kPieces = (16 - A + K + 15) / 16, kWords = 4 * kPieces + 4;
    static_assert(N + 4 <= kWords, "the shifts read at most 3 words past the N");
    const size_t addr = reinterpret_cast<size_t>(p);
    const uint4* base = reinterpret_cast<const uint4*>(addr & ~(size_t)15);
    const int off = (int)(addr & 15);
    uint32_t a[kWords];
#pragma unroll
    for (int c = 0; c < kPieces; c++) {
        const uint4 v = 16 * c < off + K ? piece_at<kEvictFirst>(base + c) : make_uint4(0u, 0u, 0u, 0u);
        a[4 * c] = v.x, a[4 * c + 1] = v.y, a[4 * c + 2] = v.z, a[4 * c + 3] = v.w;
    }
#pragma unroll
    for (int i = 4 * kPieces; i < kWords; i++) a[i] = 0u;
    const bool two = (off & 8) != 0, one = (off & 4) != 0;
    uint32_t t[N + 2];
#pragma unroll
    for (int i = 0; i < N + 2; i++) t[i] = A < 16 && two ? a[i + 2] : a[i];
    uint32_t u[N + 1];
#pragma unroll
    for (int i = 0; i < N + 1; i++) u[i] = A < 8 && one ? t[i + 1] : t[i];
    const int bits = A < 4 ? (off & 2) * 8 : 0;
#pragma unroll
    for (int i = 0; i < N; i++) w[i] = (uint32_t)((((uint64_t)u[i + 1] << 32) | u[i]) >> bits);
}

// Whether the blocks of 32 of bit B (q4_0 0, q4_1 1, q5_0 2, q5_1 3, q8_0 4, q8_1 5) take
// block_words (ops.yaml's QMATVEC_Q8_WIDE_BLOCKS) or loads of their fields' own alignment.
template <int B> constexpr bool kWide = ((OPGEN_QMATVEC_Q8_WIDE_BLOCKS >> B) & 1) != 0;
// Whether the blocks of 32 of bit B whose weights are (q - o) d (q4_0 0, q5_0 2) keep their quants
// unsigned (ops.yaml's QMATVEC_Q8_UNSIGNED_BLOCKS): q as it is read, b = -o d, an unsigned-by-signed
// dp4a; else the quants centred into signed bytes (centred), b = 0.
template <int B> constexpr bool kUnsignedQ = ((OPGEN_QMATVEC_Q8_UNSIGNED_BLOCKS >> B) & 1) != 0;

// The word of bytes 2..5 of the 8 at w (w[0] bytes 0..3, w[1] 4..7).
__device__ __forceinline__ uint32_t mid_word(uint32_t lo, uint32_t hi) { return (lo >> 16) | (hi << 16); }
__device__ __forceinline__ float half_lo(uint32_t w) { return opgen::f16_to_float(__ushort_as_half((unsigned short)(w & 0xFFFFu))); }
__device__ __forceinline__ float half_hi(uint32_t w) { return opgen::f16_to_float(__ushort_as_half((unsigned short)(w >> 16))); }

// q4_0: d (f16), qs[16]; weight i < 16 the low nibble of qs[i], i + 16 its high one; (q - 8) d
struct q4_0 {
    static constexpr int kElems = 32, kBytes = 18;
    static constexpr bool kUnsigned = kUnsignedQ<0>;
    static __device__ __forceinline__ void unit(const uint8_t* row, size_t u, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        const uint8_t* blk = row + u * kBytes;
        uint32_t w[4];
        float d;
        if constexpr (kWide<0>) {
            uint32_t v[5];
            block_words<5, kBytes, 2>(blk, v);
#pragma unroll
            for (int i = 0; i < 4; i++) w[i] = mid_word(v[i], v[i + 1]);
            d = half_lo(v[0]);
        } else {
            words4<2>(blk + 2, w);
            d = half_at(blk);
        }
        nibbles(w, d, q, a, b);
    }
    // Blocks 2p and 2p + 1 of a row (QMATVEC_Q8_TWO_BLOCKS): 36 bytes at a 4-aligned pair, three
    // 16-byte loads where two blocks take four; the second block's quants need no realigning.
    static __device__ __forceinline__ void two(const uint8_t* pair, uint32_t (&q)[2][8], float (&a)[2][2], float (&b)[2][2]) {
        uint32_t v[9];
        block_words<9, 2 * kBytes, 4>(pair, v);
        const uint32_t w0[4] = {mid_word(v[0], v[1]), mid_word(v[1], v[2]), mid_word(v[2], v[3]), mid_word(v[3], v[4])};
        const uint32_t w1[4] = {v[5], v[6], v[7], v[8]};
        nibbles(w0, half_lo(v[0]), q[0], a[0], b[0]);
        nibbles(w1, half_hi(v[4]), q[1], a[1], b[1]);
    }
    static __device__ __forceinline__ void quarter(const uint8_t* blk, unsigned int t, uint32_t& lo, uint32_t& hi, float& a) {
        const uint32_t w = word_at<2>(blk + 2 + 4 * t);
        lo = centred<8>(w & 0x0F0F0F0Fu), hi = centred<8>((w >> 4) & 0x0F0F0F0Fu), a = half_at(blk);
    }

  private:
    static __device__ __forceinline__ void nibbles(const uint32_t (&w)[4], float d, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            q[i] = offset_quants<8, kUnsigned>(w[i] & 0x0F0F0F0Fu), q[4 + i] = offset_quants<8, kUnsigned>((w[i] >> 4) & 0x0F0F0F0Fu);
        }
        a[0] = a[1] = d, b[0] = b[1] = offset_b<8, kUnsigned>(d);
    }
};

// q4_1: d, m (f16), qs[16] as q4_0's; q d + m
struct q4_1 {
    static constexpr int kElems = 32, kBytes = 20;
    static __device__ __forceinline__ void unit(const uint8_t* row, size_t u, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        const uint8_t* blk = row + u * kBytes;
        uint32_t v[5];
        if constexpr (kWide<1>) {
            block_words<5, kBytes, 4>(blk, v);
        } else {
            uint32_t w[4];
            words4<4>(blk + 4, w);
            v[0] = word_at<4>(blk), v[1] = w[0], v[2] = w[1], v[3] = w[2], v[4] = w[3];
        }
#pragma unroll
        for (int i = 0; i < 4; i++) q[i] = v[1 + i] & 0x0F0F0F0Fu, q[4 + i] = (v[1 + i] >> 4) & 0x0F0F0F0Fu;
        a[0] = a[1] = half_lo(v[0]), b[0] = b[1] = half_hi(v[0]);
    }
    static __device__ __forceinline__ void quarter(const uint8_t* blk, unsigned int t, uint32_t& lo, uint32_t& hi, float& a) {
        const uint32_t dm = word_at<4>(blk), w = word_at<4>(blk + 4 + 4 * t);
        lo = w & 0x0F0F0F0Fu, hi = (w >> 4) & 0x0F0F0F0Fu, a = half_lo(dm);
    }
};

// q5_0: d, qh (32 bits: bit i the fifth bit of weight i), qs[16] as q4_0's; (q - 16) d
struct q5_0 {
    static constexpr int kElems = 32, kBytes = 22;
    static constexpr bool kUnsigned = kUnsignedQ<2>;
    static __device__ __forceinline__ void unit(const uint8_t* row, size_t u, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        const uint8_t* blk = row + u * kBytes;
        uint32_t w[4], qh;
        float d;
        if constexpr (kWide<2>) {
            uint32_t v[6];
            block_words<6, kBytes, 2>(blk, v);
            qh = mid_word(v[0], v[1]);
#pragma unroll
            for (int i = 0; i < 4; i++) w[i] = mid_word(v[1 + i], v[2 + i]);
            d = half_lo(v[0]);
        } else {
            qh = word_at<2>(blk + 2);
            words4<2>(blk + 6, w);
            d = half_at(blk);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            q[i] = offset_quants<16, kUnsigned>((w[i] & 0x0F0F0F0Fu) | fifth_bits(qh >> (4 * i)));
            q[4 + i] = offset_quants<16, kUnsigned>(((w[i] >> 4) & 0x0F0F0F0Fu) | fifth_bits(qh >> (16 + 4 * i)));
        }
        a[0] = a[1] = d, b[0] = b[1] = offset_b<16, kUnsigned>(d);
    }
    static __device__ __forceinline__ void quarter(const uint8_t* blk, unsigned int t, uint32_t& lo, uint32_t& hi, float& a) {
        const uint32_t qh = word_at<2>(blk + 2), w = word_at<2>(blk + 6 + 4 * t);
        lo = centred<16>((w & 0x0F0F0F0Fu) | fifth_bits(qh >> (4 * t)));
        hi = centred<16>(((w >> 4) & 0x0F0F0F0Fu) | fifth_bits(qh >> (16 + 4 * t)));
        a = half_at(blk);
    }
};

// q5_1: d, m, qh, qs[16]: q d + m
struct q5_1 {
    static constexpr int kElems = 32, kBytes = 24;
    static __device__ __forceinline__ void unit(const uint8_t* row, size_t u, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        const uint8_t* blk = row + u * kBytes;
        uint32_t v[6];
        if constexpr (kWide<3>) {
            block_words<6, kBytes, 8>(blk, v);
        } else {
            uint32_t w[4];
            words4<8>(blk + 8, w);
            v[0] = word_at<4>(blk), v[1] = word_at<4>(blk + 4), v[2] = w[0], v[3] = w[1], v[4] = w[2], v[5] = w[3];
        }
        const uint32_t qh = v[1];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            q[i] = (v[2 + i] & 0x0F0F0F0Fu) | fifth_bits(qh >> (4 * i));
            q[4 + i] = ((v[2 + i] >> 4) & 0x0F0F0F0Fu) | fifth_bits(qh >> (16 + 4 * i));
        }
        a[0] = a[1] = half_lo(v[0]), b[0] = b[1] = half_hi(v[0]);
    }
    static __device__ __forceinline__ void quarter(const uint8_t* blk, unsigned int t, uint32_t& lo, uint32_t& hi, float& a) {
        const uint32_t dm = word_at<4>(blk), qh = word_at<4>(blk + 4), w = word_at<4>(blk + 8 + 4 * t);
        lo = (w & 0x0F0F0F0Fu) | fifth_bits(qh >> (4 * t)), hi = ((w >> 4) & 0x0F0F0F0Fu) | fifth_bits(qh >> (16 + 4 * t));
        a = half_lo(dm);
    }
};

// q8_0: d, qs[32] int8; q d
struct q8_0 {
    static constexpr int kElems = 32, kBytes = 34;
    static __device__ __forceinline__ void unit(const uint8_t* row, size_t u, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        const uint8_t* blk = row + u * kBytes;
        if constexpr (kWide<4>) {
            uint32_t v[9];
            block_words<9, kBytes, 2>(blk, v);
#pragma unroll
            for (int i = 0; i < 8; i++) q[i] = mid_word(v[i], v[i + 1]);
            a[0] = a[1] = half_lo(v[0]);
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) q[i] = word_at<2>(blk + 2 + 4 * i);
            a[0] = a[1] = half_at(blk);
        }
        b[0] = b[1] = 0.0f;
    }
    static __device__ __forceinline__ void quarter(const uint8_t* blk, unsigned int t, uint32_t& lo, uint32_t& hi, float& a) {
        lo = word_at<2>(blk + 2 + 4 * t), hi = word_at<2>(blk + 18 + 4 * t), a = half_at(blk);
    }
};

// q8_1: d, s (f16), qs[32] int8; q d
struct q8_1 {
    static constexpr int kElems = 32, kBytes = 36;
    static __device__ __forceinline__ void unit(const uint8_t* row, size_t u, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        const uint8_t* blk = row + u * kBytes;
        if constexpr (kWide<5>) {
            uint32_t v[9];
            block_words<9, kBytes, 4>(blk, v);
#pragma unroll
            for (int i = 0; i < 8; i++) q[i] = v[1 + i];
            a[0] = a[1] = half_lo(v[0]);
        } else {
#pragma unroll
            for (int i = 0; i < 8; i++) q[i] = word_at<4>(blk + 4 + 4 * i);
            a[0] = a[1] = half_at(blk);
        }
        b[0] = b[1] = 0.0f;
    }
    static __device__ __forceinline__ void quarter(const uint8_t* blk, unsigned int t, uint32_t& lo, uint32_t& hi, float& a) {
        lo = word_at<4>(blk + 4 + 4 * t), hi = word_at<4>(blk + 20 + 4 * t), a = half_lo(word_at<4>(blk));
    }
};

// The blocks of 256: half(row, h, q, a, b) gives weights 16h..16h+15 of the row (their scale and
// minimum are per 16); a unit of 32 is two of them. Where QMATVEC_Q8_WIDE_K has the format's bit
// (kBit), F::unit reads the unit's 32 contiguous bytes of each field as whole aligned 16-byte
// pieces (bytes32) and its scales once for both halves, where each half loads its fields 2 or 4
// bytes at a time if the block is no more aligned (q3_K, q6_K; q2_K, q8_K) and its scales byte by
// byte.
template <int B> constexpr bool kWideK = ((OPGEN_QMATVEC_Q8_WIDE_K >> B) & 1) != 0;

template <typename F> struct by_halves {
    typedef F H;
    static constexpr int kElems = F::kElems, kBytes = F::kBytes, kBit = F::kBit;
    static __device__ __forceinline__ void unit(const uint8_t* row, size_t u, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        if constexpr (kWideK<F::kBit>) {
            F::unit(row + (u >> 3) * kBytes, (int)(u & 7), q, a, b);
        } else {
            uint32_t lo[4], hi[4];
            F::half(row, 2 * u, lo, a[0], b[0]);
            F::half(row, 2 * u + 1, hi, a[1], b[1]);
#pragma unroll
            for (int i = 0; i < 4; i++) q[i] = lo[i], q[4 + i] = hi[i];
        }
    }
};

// The 32 bytes at the A-aligned p as 8 words: two 16-byte loads, or block_words' two or three.
template <int A, bool kEvictFirst = false> __device__ __forceinline__ void bytes32(const uint8_t* p, uint32_t (&w)[8]) {
    if constexpr (A >= 16) {
        const uint4 lo = piece_at<kEvictFirst>(reinterpret_cast<const uint4*>(p)), hi = piece_at<kEvictFirst>(reinterpret_cast<const uint4*>(p) + 1);
        w[0] = lo.x, w[1] = lo.y, w[2] = lo.z, w[3] = lo.w, w[4] = hi.x, w[5] = hi.y, w[6] = hi.z, w[7] = hi.w;
    } else {
        block_words<8, 32, A, kEvictFirst>(p, w);
    }
}

// Whether the long units of the blocks of 256 of bit B load their quants' 16-byte pieces first out
// of L1 (ops.yaml's QMATVEC_Q8_LONG_EVICT_FIRST, a bit each as QMATVEC_Q8_WIDE_K).
template <int B> constexpr bool kLongEvictFirst = ((OPGEN_QMATVEC_Q8_LONG_EVICT_FIRST >> B) & 1) != 0;

// q2_k: scales[16] (scale low nibble, min high), qs[64], d, dmin: weight 128n + 32j + 16h + l
// is bits 2j.. of qs[32n + 16h + l], scale and min those of scales[8n + 2j + h] (= its unit)
struct q2_k_halves {
    static constexpr int kElems = 256, kBytes = 84, kBit = 0;
    static __device__ __forceinline__ void unit(const uint8_t* blk, int v, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        uint32_t w[8];
        bytes32<4>(blk + 16 + 32 * (v >> 2), w);
#pragma unroll
        for (int i = 0; i < 8; i++) q[i] = (w[i] >> (2 * (v & 3))) & 0x03030303u;
        const uint32_t sc = u16_at(blk + 2 * v), dm = word_at<4>(blk + 80);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const uint32_t s = (sc >> (8 * h)) & 0xFFu;
            a[h] = half_lo(dm) * (float)(s & 15u), b[h] = -(half_hi(dm) * (float)(s >> 4));
        }
    }
    static __device__ __forceinline__ void half(const uint8_t* row, size_t u, uint32_t (&q)[4], float& a, float& b) {
        const uint8_t* blk = row + (u >> 4) * kBytes;
        const int s = (int)(u & 15), n = s >> 3, j = (s >> 1) & 3, h = s & 1;
        uint32_t w[4];
        words4<4>(blk + 16 + 32 * n + 16 * h, w);
#pragma unroll
        for (int i = 0; i < 4; i++) q[i] = (w[i] >> (2 * j)) & 0x03030303u;
        const uint32_t sc = blk[s];
        a = half_at(blk + 80) * (float)(sc & 15u), b = -(half_at(blk + 82) * (float)(sc >> 4));
    }
    // The long unit n (weights 128n..128n + 127): its 32 bytes of quants, 8 scale bytes, d and dmin.
    static constexpr int kLongParts = 4;
    struct Long {
        uint32_t qs[8], sc[2], dm;
    };
    static __device__ __forceinline__ void long_unit(const uint8_t* blk, int n, Long& w) {
        bytes32<4, kLongEvictFirst<kBit>>(blk + 16 + 32 * n, w.qs);
        w.sc[0] = word_at<4>(blk + 8 * n), w.sc[1] = word_at<4>(blk + 8 * n + 4), w.dm = word_at<4>(blk + 80);
    }
    // Bit pair j of the long unit: its weights 32j..32j + 31 as unit() gives them.
    static __device__ __forceinline__ void long_part(const Long& w, int j, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
#pragma unroll
        for (int i = 0; i < 8; i++) q[i] = (w.qs[i] >> (2 * j)) & 0x03030303u;
        const uint32_t sc = w.sc[j >> 1] >> (16 * (j & 1));
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const uint32_t s = (sc >> (8 * h)) & 0xFFu;
            a[h] = half_lo(w.dm) * (float)(s & 15u), b[h] = -(half_hi(w.dm) * (float)(s >> 4));
        }
    }
    // The long unit's dot product with x's four units of 32 (XU: q8_operands' X), where
    // QMATVEC_Q8_LONG_DOT has kBit: bit pair j's quants masked in place (4^j q, a LOP3 a word where
    // long_part shifts and masks; j = 3 shifted down, its 64 q past a signed byte) and 4^-j folded
    // into x's d; each half's sum of products times its 4-bit scale in integers (at most
    // 2 * 15 * 16 * 48 * 127 < 2^22: kSumBias), d and dmin once for the 128 weights.
    template <typename XU> static __device__ __forceinline__ float long_dot(const Long& w, const XU (&x)[kLongParts]) {
        float s = 0.0f, m = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t sc = w.sc[j >> 1] >> (16 * (j & 1));  // byte h: half h's scale | min << 4
            const uint32_t xq[8] = {x[j].q[0].x, x[j].q[0].y, x[j].q[0].z, x[j].q[0].w,
                                    x[j].q[1].x, x[j].q[1].y, x[j].q[1].z, x[j].q[1].w};
            int p[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                p[h] = 0;
#pragma unroll
                for (int i = 4 * h; i < 4 * h + 4; i++) {
                    const uint32_t q = j < 3 ? w.qs[i] & (0x03030303u << (2 * j)) : (w.qs[i] >> 6) & 0x03030303u;
                    p[h] = dot4(q, xq[i], p[h]);
                }
            }
            const int lo = (int)(sc & 15u) * p[0] + (int)((sc >> 8) & 15u) * p[1] + kSumBias;
            const float unshift = j == 1 ? 0.25f : j == 2 ? 0.0625f : 1.0f;
            s = fmaf(x[j].m.x * unshift, sum_value(lo), s);
            m = fmaf((float)((sc >> 4) & 15u), x[j].m.y, fmaf((float)((sc >> 12) & 15u), x[j].m.w, m));
        }
        return half_lo(w.dm) * s - half_hi(w.dm) * m;
    }
};

// q3_k: hmask[32], qs[64], scales[12] (16 scales of 6 bits), d: weight 128n + 32j + 16h + l is
// bits 2j.. of qs[32n + 16h + l], minus 4 unless bit 4n + j of hmask[16h + l]; scale 8n + 2j + h
struct q3_k_halves {
    static constexpr int kElems = 256, kBytes = 110, kBit = 1;
    static __device__ __forceinline__ void unit(const uint8_t* blk, int v, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        const int n = v >> 2, j = v & 3;
        uint32_t w[8], hm[8];
        bytes32<2>(blk + 32 + 32 * n, w);
        bytes32<2>(blk, hm);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            q[i] = centred<4>(((w[i] >> (2 * j)) & 0x03030303u) | (((hm[i] >> (4 * n + j)) & 0x01010101u) << 2));
        }
        // scales 2v, 2v + 1: low nibbles in bytes 96 + 2j, + 1 (shift 4n), high pairs in bytes
        // 104 + 2 (v & 1), + 1 (shift 2 (v >> 1))
        const uint32_t low = u16_at(blk + 96 + 2 * j) >> (4 * n), high = u16_at(blk + 104 + 2 * (v & 1)) >> (2 * (v >> 1));
        const float d = half_at(blk + 108);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const uint32_t sc = ((low >> (8 * h)) & 15u) | (((high >> (8 * h)) & 3u) << 4);
            a[h] = d * (float)((int)sc - 32), b[h] = 0.0f;
        }
    }
    static __device__ __forceinline__ void half(const uint8_t* row, size_t u, uint32_t (&q)[4], float& a, float& b) {
        const uint8_t* blk = row + (u >> 4) * kBytes;
        const int s = (int)(u & 15), n = s >> 3, j = (s >> 1) & 3, h = s & 1;
        uint32_t w[4], hm[4];
        words4<2>(blk + 32 + 32 * n + 16 * h, w);
        words4<2>(blk + 16 * h, hm);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            q[i] = centred<4>(((w[i] >> (2 * j)) & 0x03030303u) | (((hm[i] >> (4 * n + j)) & 0x01010101u) << 2));
        }
        const uint32_t low = (blk[96 + (s & 7)] >> (4 * (s >> 3))) & 15u, high = (blk[104 + (s & 3)] >> (2 * (s >> 2))) & 3u;
        a = half_at(blk + 108) * (float)((int)(low | (high << 4)) - 32), b = 0.0f;
    }
    // The long unit n (weights 128n..128n + 127): its 32 bytes of quants, the 32 high-bit bytes
    // shifted right by 4n (bit j of a byte: bit pair j's high bit), its 8 scales (6 bits a byte)
    // and d.
    static constexpr int kLongParts = 4;
    struct Long {
        uint32_t qs[8], hm[8], sc[2];
        float d;
    };
    static __device__ __forceinline__ void long_unit(const uint8_t* blk, int n, Long& w) {
        bytes32<2, kLongEvictFirst<kBit>>(blk + 32 + 32 * n, w.qs);
        bytes32<2, kLongEvictFirst<kBit>>(blk, w.hm);
#pragma unroll
        for (int i = 0; i < 8; i++) w.hm[i] >>= 4 * n;
        // scales 8n + t: low nibble n of byte 96 + t, high pair n, + 1 for t >= 4, of byte 104 + t % 4
        const uint32_t high = word_at<2>(blk + 104) >> (4 * n);
        w.sc[0] = ((word_at<2>(blk + 96) >> (4 * n)) & 0x0F0F0F0Fu) | ((high << 4) & 0x30303030u);
        w.sc[1] = ((word_at<2>(blk + 100) >> (4 * n)) & 0x0F0F0F0Fu) | ((high << 2) & 0x30303030u);
        w.d = half_at(blk + 108);
    }
    // Bit pair j of the long unit as unit() gives it, but the quants not centred (0..7): the
    // minus 4 is b = -4a, against x's sums.
    static __device__ __forceinline__ void long_part(const Long& w, int j, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
#pragma unroll
        for (int i = 0; i < 8; i++) q[i] = ((w.qs[i] >> (2 * j)) & 0x03030303u) | (((w.hm[i] << 2) >> j) & 0x04040404u);
        const uint32_t sc = w.sc[j >> 1] >> (16 * (j & 1));
#pragma unroll
        for (int h = 0; h < 2; h++) a[h] = w.d * (float)((int)((sc >> (8 * h)) & 0xFFu) - 32), b[h] = -4.0f * a[h];
    }
    // The long unit's dot product with x's four units of 32, where QMATVEC_Q8_LONG_DOT has kBit:
    // bit pair j's quants and high bits as v = 4^min(j,1) (q + 4 hb) (two or three instructions a
    // word where long_part takes four), the 4^-min(j,1) folded into x's d; each half's sum of
    // products times its scale s - 32 in integers (at most 2 * 32 * 16 * 28 * 127 < 2^22:
    // kSumBias); the minus 4 of every quant against x's sums, (s - 32) * 4 * d * sum, in f32.
    template <typename XU> static __device__ __forceinline__ float long_dot(const Long& w, const XU (&x)[kLongParts]) {
        float s = 0.0f, m = 0.0f;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const uint32_t sc = w.sc[j >> 1] >> (16 * (j & 1));  // byte h: half h's scale (6 bits)
            const uint32_t xq[8] = {x[j].q[0].x, x[j].q[0].y, x[j].q[0].z, x[j].q[0].w,
                                    x[j].q[1].x, x[j].q[1].y, x[j].q[1].z, x[j].q[1].w};
            int p[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                p[h] = 0;
#pragma unroll
                for (int i = 4 * h; i < 4 * h + 4; i++) {
                    const uint32_t qs = w.qs[i], hm = w.hm[i];
                    const uint32_t v = j == 0   ? (qs & 0x03030303u) | ((hm << 2) & 0x04040404u)
                                       : j == 1 ? (qs & 0x0C0C0C0Cu) | ((hm << 3) & 0x10101010u)
                                       : j == 2 ? ((qs >> 2) & 0x0C0C0C0Cu) | ((hm << 2) & 0x10101010u)
                                                : ((qs >> 4) & 0x0C0C0C0Cu) | ((hm << 1) & 0x10101010u);
                    p[h] = dot4(v, xq[i], p[h]);
                }
            }
            const int s0 = (int)(sc & 0xFFu) - 32, s1 = (int)((sc >> 8) & 0xFFu) - 32;
            s = fmaf(x[j].m.x * (j == 0 ? 1.0f : 0.25f), sum_value(s0 * p[0] + s1 * p[1] + kSumBias), s);
            m = fmaf((float)s0, x[j].m.y, fmaf((float)s1, x[j].m.w, m));
        }
        return w.d * (s - 4.0f * m);
    }
};

// The 6-bit scale and min `is` (0..7) of q4_k / q5_k's 12 scale bytes (GGML's get_scale_min_k4).
__device__ __forceinline__ void scale_min_k4(int is, const uint8_t* sc, float& scale, float& min) {
    if (is < 4) {
        scale = (float)(sc[is] & 63u), min = (float)(sc[is + 4] & 63u);
    } else {
        scale = (float)((sc[is + 4] & 15u) | ((sc[is - 4] >> 6) << 4));
        min = (float)((sc[is + 4] >> 4) | ((sc[is] >> 6) << 4));
    }
}

// scale_min_k4 of unit v (both its halves: scale and min v) from the block's first 16 bytes
// (d, dmin, the 12 scale bytes) as a = d * scale, b = -(dmin * min).
__device__ __forceinline__ void k4_scale_min(const uint4& head, int v, float& a, float& b) {
    const int at = 8 * (v & 3);
    const uint32_t s0 = (head.y >> at) & 0xFFu, s4 = (head.z >> at) & 0xFFu, s8 = (head.w >> at) & 0xFFu;
    const uint32_t scale = v < 4 ? s0 & 63u : (s8 & 15u) | ((s0 >> 6) << 4);
    const uint32_t min = v < 4 ? s4 & 63u : (s8 >> 4) | ((s4 >> 6) << 4);
    a = half_lo(head.x) * (float)scale, b = -(half_hi(head.x) * (float)min);
}

// q4_k: d, dmin, scales[12], qs[128]: weight 64j + 32h + l is nibble h of qs[32j + l], scale
// and min 2j + h; d sc q - dmin m
struct q4_k_halves {
    static constexpr int kElems = 256, kBytes = 144, kBit = 2;
    static __device__ __forceinline__ void unit(const uint8_t* blk, int v, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        uint32_t w[8];
        bytes32<16>(blk + 16 + 32 * (v >> 1), w);
#pragma unroll
        for (int i = 0; i < 8; i++) q[i] = (w[i] >> (4 * (v & 1))) & 0x0F0F0F0Fu;
        k4_scale_min(*reinterpret_cast<const uint4*>(blk), v, a[0], b[0]);
        a[1] = a[0], b[1] = b[0];
    }
    static __device__ __forceinline__ void half(const uint8_t* row, size_t u, uint32_t (&q)[4], float& a, float& b) {
        const uint8_t* blk = row + (u >> 4) * kBytes;
        const int s = (int)(u & 15), j = s >> 2, h = (s >> 1) & 1, lo = s & 1;
        uint32_t w[4];
        words4<16>(blk + 16 + 32 * j + 16 * lo, w);
#pragma unroll
        for (int i = 0; i < 4; i++) q[i] = (w[i] >> (4 * h)) & 0x0F0F0F0Fu;
        float sc, m;
        scale_min_k4(s >> 1, blk + 4, sc, m);
        a = half_at(blk) * sc, b = -(half_at(blk + 2) * m);
    }
    // The long unit j (weights 64j..64j + 63): its 32 bytes of quants (unit 2j the low nibbles,
    // 2j + 1 the high ones) and the two units' scales and minima.
    static constexpr int kLongParts = 2;
    struct Long {
        uint32_t qs[8];
        float a[2], b[2];
    };
    static __device__ __forceinline__ void long_unit(const uint8_t* blk, int j, Long& w) {
        bytes32<16, kLongEvictFirst<kBit>>(blk + 16 + 32 * j, w.qs);
        const uint4 head = *reinterpret_cast<const uint4*>(blk);
        k4_scale_min(head, 2 * j, w.a[0], w.b[0]);
        k4_scale_min(head, 2 * j + 1, w.a[1], w.b[1]);
    }
    static __device__ __forceinline__ void long_part(const Long& w, int h, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
#pragma unroll
        for (int i = 0; i < 8; i++) q[i] = (w.qs[i] >> (4 * h)) & 0x0F0F0F0Fu;
        a[0] = a[1] = w.a[h], b[0] = b[1] = w.b[h];
    }
};

// q5_k: d, dmin, scales[12], qh[32], qs[128]: q4_k's nibble, the fifth bit bit 2j + h of qh[l]
struct q5_k_halves {
    static constexpr int kElems = 256, kBytes = 176, kBit = 3;
    static __device__ __forceinline__ void unit(const uint8_t* blk, int v, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        uint32_t w[8], qh[8];
        bytes32<16>(blk + 48 + 32 * (v >> 1), w);
        bytes32<16>(blk + 16, qh);
#pragma unroll
        for (int i = 0; i < 8; i++) q[i] = ((w[i] >> (4 * (v & 1))) & 0x0F0F0F0Fu) | (((qh[i] >> v) & 0x01010101u) << 4);
        k4_scale_min(*reinterpret_cast<const uint4*>(blk), v, a[0], b[0]);
        a[1] = a[0], b[1] = b[0];
    }
    static __device__ __forceinline__ void half(const uint8_t* row, size_t u, uint32_t (&q)[4], float& a, float& b) {
        const uint8_t* blk = row + (u >> 4) * kBytes;
        const int s = (int)(u & 15), j = s >> 2, h = (s >> 1) & 1, lo = s & 1;
        uint32_t w[4], qh[4];
        words4<16>(blk + 48 + 32 * j + 16 * lo, w);
        words4<16>(blk + 16 + 16 * lo, qh);
#pragma unroll
        for (int i = 0; i < 4; i++) q[i] = ((w[i] >> (4 * h)) & 0x0F0F0F0Fu) | (((qh[i] >> (2 * j + h)) & 0x01010101u) << 4);
        float sc, m;
        scale_min_k4(s >> 1, blk + 4, sc, m);
        a = half_at(blk) * sc, b = -(half_at(blk + 2) * m);
    }
    // q4_k's long unit j and the 32 fifth-bit bytes shifted right by 2j (bit h of a byte: part
    // h's fifth bit).
    static constexpr int kLongParts = 2;
    struct Long {
        uint32_t qs[8], qh[8];
        float a[2], b[2];
    };
    static __device__ __forceinline__ void long_unit(const uint8_t* blk, int j, Long& w) {
        bytes32<16, kLongEvictFirst<kBit>>(blk + 48 + 32 * j, w.qs);
        bytes32<16, kLongEvictFirst<kBit>>(blk + 16, w.qh);
#pragma unroll
        for (int i = 0; i < 8; i++) w.qh[i] >>= 2 * j;
        const uint4 head = *reinterpret_cast<const uint4*>(blk);
        k4_scale_min(head, 2 * j, w.a[0], w.b[0]);
        k4_scale_min(head, 2 * j + 1, w.a[1], w.b[1]);
    }
    static __device__ __forceinline__ void long_part(const Long& w, int h, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
#pragma unroll
        for (int i = 0; i < 8; i++) q[i] = ((w.qs[i] >> (4 * h)) & 0x0F0F0F0Fu) | (((w.qh[i] >> h) & 0x01010101u) << 4);
        a[0] = a[1] = w.a[h], b[0] = b[1] = w.b[h];
    }
};

// q6_k: ql[128], qh[64], scales[16] int8, d: weight 128n + 32t + l is nibble t / 2 of
// ql[64n + 32 (t % 2) + l] with bits 2t.. of qh[32n + l] above it, minus 32; scale 8n + 2t + l / 16
struct q6_k_halves {
    static constexpr int kElems = 256, kBytes = 210, kBit = 4;
    static __device__ __forceinline__ void unit(const uint8_t* blk, int v, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        const int n = v >> 2, t = v & 3;
        uint32_t w[8], qh[8];
        bytes32<2>(blk + 64 * n + 32 * (t & 1), w);
        bytes32<2>(blk + 128 + 32 * n, qh);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            q[i] = centred<32>(((w[i] >> (4 * (t >> 1))) & 0x0F0F0F0Fu) | (((qh[i] >> (2 * t)) & 0x03030303u) << 4));
        }
        const uint32_t sc = u16_at(blk + 192 + 2 * v);
        const float d = half_at(blk + 208);
        a[0] = d * (float)(signed char)(sc & 0xFFu), a[1] = d * (float)(signed char)(sc >> 8), b[0] = b[1] = 0.0f;
    }
    static __device__ __forceinline__ void half(const uint8_t* row, size_t u, uint32_t (&q)[4], float& a, float& b) {
        const uint8_t* blk = row + (u >> 4) * kBytes;
        const int s = (int)(u & 15), n = s >> 3, t = (s >> 1) & 3, lo = s & 1;
        uint32_t w[4], qh[4];
        words4<2>(blk + 64 * n + 32 * (t & 1) + 16 * lo, w);
        words4<2>(blk + 128 + 32 * n + 16 * lo, qh);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            q[i] = centred<32>(((w[i] >> (4 * (t >> 1))) & 0x0F0F0F0Fu) | (((qh[i] >> (2 * t)) & 0x03030303u) << 4));
        }
        a = half_at(blk + 208) * (float)(signed char)blk[192 + s], b = 0.0f;
    }
    // The long unit n (weights 128n..128n + 127): its 64 bytes of low nibbles (two runs of 32:
    // parts t = 0, 2 and 1, 3), its 32 bytes of high bit pairs (bit pair t: part t), its 8 scales
    // and d.
    static constexpr int kLongParts = 4;
    struct Long {
        uint32_t ql[2][8], qh[8], sc[2];
        float d;
    };
    static __device__ __forceinline__ void long_unit(const uint8_t* blk, int n, Long& w) {
        bytes32<2, kLongEvictFirst<kBit>>(blk + 64 * n, w.ql[0]);
        bytes32<2, kLongEvictFirst<kBit>>(blk + 64 * n + 32, w.ql[1]);
        bytes32<2, kLongEvictFirst<kBit>>(blk + 128 + 32 * n, w.qh);
        w.sc[0] = word_at<2>(blk + 192 + 8 * n), w.sc[1] = word_at<2>(blk + 196 + 8 * n), w.d = half_at(blk + 208);
    }
    // Part t of the long unit: its weights 32t..32t + 31 as unit() gives them.
    static __device__ __forceinline__ void long_part(const Long& w, int t, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
#pragma unroll
        for (int i = 0; i < 8; i++) {
            q[i] = centred<32>(((w.ql[t & 1][i] >> (4 * (t >> 1))) & 0x0F0F0F0Fu) | (((w.qh[i] >> (2 * t)) & 0x03030303u) << 4));
        }
        const uint32_t sc = w.sc[t >> 1] >> (16 * (t & 1));  // byte h: half h's scale (int8)
        a[0] = w.d * (float)(signed char)(sc & 0xFFu), a[1] = w.d * (float)(signed char)((sc >> 8) & 0xFFu), b[0] = b[1] = 0.0f;
    }
};

// q8_k: d (f32), qs[256] int8, bsums[16]; q d
struct q8_k_halves {
    static constexpr int kElems = 256, kBytes = 292, kBit = 5;
    static __device__ __forceinline__ void unit(const uint8_t* blk, int v, uint32_t (&q)[8], float (&a)[2], float (&b)[2]) {
        bytes32<4>(blk + 4 + 32 * v, q);
        a[0] = a[1] = __uint_as_float(word_at<4>(blk)), b[0] = b[1] = 0.0f;
    }
    static __device__ __forceinline__ void half(const uint8_t* row, size_t u, uint32_t (&q)[4], float& a, float& b) {
        const uint8_t* blk = row + (u >> 4) * kBytes;
        words4<4>(blk + 4 + 16 * (u & 15), q);
        a = __uint_as_float(word_at<4>(blk)), b = 0.0f;
    }
};

struct q2_k : by_halves<q2_k_halves> {};
struct q3_k : by_halves<q3_k_halves> {};
struct q4_k : by_halves<q4_k_halves> {};
struct q5_k : by_halves<q5_k_halves> {};
struct q6_k : by_halves<q6_k_halves> {};
struct q8_k : by_halves<q8_k_halves> {};

// ---------------------------------------------------------------------------- operands
//
// A policy gives the product its unit of weights (kUnit of them), how a thread loads a unit of a
// weight row (W) and of a row of x (X), and their dot product.

struct x_source {
    const float* x;      // (rows, k) f32
    const uint8_t* xq;   // (rows, k) int8 quants
    const float2* xm;    // (rows, k / 16): d, d * the sum of the unit's quants
    size_t k;
    const uint4* shared;  // x's one row in shared memory (share_x), for the long units
};

// x's one row in shared memory, for the long units of one row of x of the formats of
// QMATVEC_Q8_LONG_X_SHARED (k up to QMATVEC_Q8_LONG_X_SHARED_K values): its k / 16 pieces of 16
// quants, then at kXSharedQuants its k / 32 pieces of scales (a unit's two float2), piece c at
// x_piece(c). A lane's long unit of q2_K or q3_K reads 128 bytes of quants where its neighbour's
// start: from global memory every lane's load touches its own cache line (the L1's wavefronts
// bound the product); the swizzle gives the 8 lanes of a quarter warp, reading pieces 4 or 8
// apart, 8 different bank groups.
constexpr int kXSharedK = OPGEN_QMATVEC_Q8_LONG_X_SHARED_K, kXSharedQuants = kXSharedK / 16;
constexpr int kXSharedPieces = kXSharedK > 0 ? kXSharedK / 16 + kXSharedK / 32 : 1;
static_assert(kXSharedK % 32 == 0, "whole blocks of x");
__device__ __forceinline__ int x_piece(int c) { return c ^ ((c >> 3) & 7); }

// Copies x's row 0 (quants and scales) into `shared`, every thread of the block taking part.
__device__ __forceinline__ void share_x(const x_source& s, uint4* shared) {
    const int quants = (int)(s.k / 16), scales = (int)(s.k / 32);
    const uint4* q = reinterpret_cast<const uint4*>(s.xq);
    const uint4* m = reinterpret_cast<const uint4*>(s.xm);
    for (int c = (int)threadIdx.x; c < quants; c += kThreads) shared[x_piece(c)] = q[c];
    for (int c = (int)threadIdx.x; c < scales; c += kThreads) shared[kXSharedQuants + x_piece(c)] = m[c];
    __syncthreads();
}

// Whether F's unit gives unsigned quants (F::kUnsigned, kUnsignedQ): its dot products then take
// dot4_unsigned.
template <typename F, typename = void> struct unsigned_quants {
    static constexpr bool value = false;
};
template <typename F> struct unsigned_quants<F, decltype((void)F::kUnsigned)> {
    static constexpr bool value = F::kUnsigned;
};
template <bool kUnsigned> __device__ __forceinline__ int dot4_of(uint32_t a, uint32_t b, int c) {
    return kUnsigned ? dot4_unsigned(a, b, c) : dot4(a, b, c);
}

template <typename F> struct q8_operands {  // block formats against x in q8_1: 32 weights a unit
    static constexpr int kUnit = 32;
    struct W {
        uint32_t q[8];
        float a[2], b[2];
    };
    struct X {
        uint4 q[2];
        float4 m;  // per 16: d, d * the sum of their quants
    };
    static __device__ __forceinline__ void load_w(const uint8_t* row, size_t u, size_t, W& w) { F::unit(row, u, w.q, w.a, w.b); }
    static __device__ __forceinline__ void load_x(const x_source& s, size_t r, size_t u, size_t, X& x) {
        const uint4* p = reinterpret_cast<const uint4*>(s.xq + r * s.k + 32 * u);
        x.q[0] = p[0], x.q[1] = p[1];
        x.m = reinterpret_cast<const float4*>(s.xm + r * (s.k / 16))[u];
    }
    static __device__ __forceinline__ float dot(const W& w, const X& x) {
        constexpr bool U = unsigned_quants<F>::value;
        const int p0 = dot4_of<U>(w.q[3], x.q[0].w,
                                  dot4_of<U>(w.q[2], x.q[0].z, dot4_of<U>(w.q[1], x.q[0].y, dot4_of<U>(w.q[0], x.q[0].x, kSumBias))));
        const int p1 = dot4_of<U>(w.q[7], x.q[1].w,
                                  dot4_of<U>(w.q[6], x.q[1].z, dot4_of<U>(w.q[5], x.q[1].y, dot4_of<U>(w.q[4], x.q[1].x, kSumBias))));
        return fmaf(w.a[0] * x.m.x, sum_value(p0), fmaf(w.a[1] * x.m.z, sum_value(p1), fmaf(w.b[0], x.m.y, w.b[1] * x.m.w)));
    }
};

// Whether F's long unit takes its own long_dot (QMATVEC_Q8_LONG_DOT has its bit: q2_K, q3_K),
// else each part is a unit of 32 (long_part) and q8_operands' dot.
template <typename F> constexpr bool kLongDot = ((OPGEN_QMATVEC_Q8_LONG_DOT >> F::kBit) & 1) != 0;

// The long units of the blocks of 256 (QMATVEC_Q8_LONG_K), for one row of x: a lane takes the
// kLongParts units of 32 of a block whose quants share one 32-byte run, loading that run and the
// fields beside it once where as many units of 32 would load them each: q2_K and q3_K 128 weights
// (bit pairs j = 0..3 of each byte: weights 128n + 32j..; q3_K's 32 high-bit bytes too: blocks of
// 84 and 110 bytes, whose loads are realigned word by word), q6_K 128 (two runs of 32 bytes of
// nibbles, one of high bit pairs), q4_K and q5_K 64 (the two nibbles of each byte; q5_K's 32
// fifth-bit bytes too). Each part j is then a unit of 32, or the format's
// long_dot takes the whole (kLongDot); x comes from shared memory where kShared (product's
// share_x: its 128 bytes a lane would each touch their own cache line).
template <typename F, bool kShared> struct long_operands {  // kShared: x from share_x's copy
    typedef typename F::H H;
    typedef q8_operands<F> P;
    static constexpr int kParts = H::kLongParts, kUnit = 32 * kParts, kPerBlock = 8 / kParts;
    typedef typename H::Long W;
    struct X {
        typename P::X part[kParts];
    };
    static __device__ __forceinline__ void load_w(const uint8_t* row, size_t u, size_t, W& w) {
        H::long_unit(row + (u / kPerBlock) * H::kBytes, (int)(u % kPerBlock), w);
    }
    static __device__ __forceinline__ void load_x(const x_source& s, size_t r, size_t u, size_t units, X& x) {
#pragma unroll
        for (int j = 0; j < kParts; j++) {
            if constexpr (kShared) {  // x's row 0 only
                const int v = (int)(kParts * u) + j;
                const uint4 m = s.shared[kXSharedQuants + x_piece(v)];
                x.part[j].q[0] = s.shared[x_piece(2 * v)], x.part[j].q[1] = s.shared[x_piece(2 * v + 1)];
                x.part[j].m = make_float4(__uint_as_float(m.x), __uint_as_float(m.y), __uint_as_float(m.z), __uint_as_float(m.w));
            } else {
                P::load_x(s, r, kParts * u + j, units, x.part[j]);
            }
        }
    }
    static __device__ __forceinline__ float dot(const W& w, const X& x) {
        if constexpr (kLongDot<F>) return H::long_dot(w, x.part);
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < kParts; j++) {
            typename P::W part;
            H::long_part(w, j, part.q, part.a, part.b);
            s += P::dot(part, x.part[j]);
        }
        return s;
    }
};

// f32, f16, bf16 weights against x itself: 32 bytes of weights a unit (8 or 16), f32 products.
template <typename T> struct float_weight;
template <> struct float_weight<float> {  // 4 weights of a 16-byte piece
    static __device__ __forceinline__ void piece(uint4 r, float* v) {
        v[0] = __uint_as_float(r.x), v[1] = __uint_as_float(r.y), v[2] = __uint_as_float(r.z), v[3] = __uint_as_float(r.w);
    }
};
template <> struct float_weight<f16_t> {  // 8 weights of a 16-byte piece
    static __device__ __forceinline__ void piece(uint4 r, float* v) {
        const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            v[2 * i] = opgen::f16_to_float(__ushort_as_half((unsigned short)(w[i] & 0xFFFFu)));
            v[2 * i + 1] = opgen::f16_to_float(__ushort_as_half((unsigned short)(w[i] >> 16)));
        }
    }
};
template <> struct float_weight<bf16_t> {  // 8 weights of a 16-byte piece: a bf16 is the high half of its f32
    static __device__ __forceinline__ void piece(uint4 r, float* v) {
        const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
        for (int i = 0; i < 4; i++) v[2 * i] = __uint_as_float(w[i] << 16), v[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
    }
};

// A unit u of a row of `units` is its 16-byte pieces u and units + u (a half of the row apart), so
// that the lanes of a group, taking neighbouring units, read neighbouring pieces of W and of x;
// f32 rows of at most QMATVEC_Q8_FLOAT_PIECES_K values take its pieces 2u and 2u + 1 (a group
// reads 1 KiB at once: faster for rows of 4096, slower for 16384, and for f16 and bf16).
template <typename T> struct float_operands {
    static constexpr int kUnit = 32 / (int)sizeof(T), kHalf = kUnit / 2;
    struct W {
        float v[kUnit];
    };
    struct X {
        float4 v[kUnit / 4];
    };
    static __device__ __forceinline__ bool side_by_side(size_t units) {  // the same for the whole grid
        return sizeof(T) == 4 && OPGEN_QMATVEC_Q8_FLOAT_PIECES_K > 0 && units <= (size_t)OPGEN_QMATVEC_Q8_FLOAT_PIECES_K / kUnit;
    }
    static __device__ __forceinline__ size_t first(size_t u, size_t units) { return side_by_side(units) ? 2 * u : u; }
    static __device__ __forceinline__ size_t second(size_t u, size_t units) { return side_by_side(units) ? 2 * u + 1 : units + u; }
    struct Raw {  // a unit's two pieces as loaded (f16 and bf16: half the registers of W)
        uint4 lo, hi;
    };
    static __device__ __forceinline__ uint64_t policy(size_t weight_bytes) { return float_weight_policy(weight_bytes); }
    static __device__ __forceinline__ void load_raw(const uint8_t* row, size_t u, size_t units, Raw& r, uint64_t policy) {
        const uint4* p = reinterpret_cast<const uint4*>(row);
        r.lo = float_piece_at(p + first(u, units), policy), r.hi = float_piece_at(p + second(u, units), policy);
    }
    static __device__ __forceinline__ void unpack(const Raw& r, W& w) {
        float_weight<T>::piece(r.lo, w.v);
        float_weight<T>::piece(r.hi, w.v + kHalf);
    }
    static __device__ __forceinline__ void load_w(const uint8_t* row, size_t u, size_t units, W& w, uint64_t policy) {
        Raw r;
        load_raw(row, u, units, r, policy);
        unpack(r, w);
    }
    static __device__ __forceinline__ void load_x(const x_source& s, size_t r, size_t u, size_t units, X& x) {
        const float4* p = reinterpret_cast<const float4*>(s.x + r * s.k);
#pragma unroll
        for (int i = 0; i < kHalf / 4; i++) x.v[i] = p[kHalf / 4 * first(u, units) + i], x.v[kHalf / 4 + i] = p[kHalf / 4 * second(u, units) + i];
    }
    static __device__ __forceinline__ float dot(const W& w, const X& x) {
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < kUnit / 4; i++) {
            s = fmaf(w.v[4 * i], x.v[i].x, s), s = fmaf(w.v[4 * i + 1], x.v[i].y, s);
            s = fmaf(w.v[4 * i + 2], x.v[i].z, s), s = fmaf(w.v[4 * i + 3], x.v[i].w, s);
        }
        return s;
    }
};

// The format -> its policy and the bytes of a weight row of k weights.
template <typename F> struct operands_of {
    typedef q8_operands<F> type;
    static __device__ __forceinline__ size_t row_bytes(size_t k) { return k / F::kElems * F::kBytes; }
};
struct f32 {};
struct f16 {};
struct bf16 {};
template <typename F> struct weight_type;  // a float format's weights
template <> struct weight_type<f32> {
    typedef float type;
};
template <> struct weight_type<f16> {
    typedef f16_t type;
};
template <> struct weight_type<bf16> {
    typedef bf16_t type;
};
template <> struct operands_of<f32> {
    typedef float_operands<float> type;
    static __device__ __forceinline__ size_t row_bytes(size_t k) { return 4 * k; }
};
template <> struct operands_of<f16> {
    typedef float_operands<f16_t> type;
    static __device__ __forceinline__ size_t row_bytes(size_t k) { return 2 * k; }
};
template <> struct operands_of<bf16> {
    typedef float_operands<bf16_t> type;
    static __device__ __forceinline__ size_t row_bytes(size_t k) { return 2 * k; }
};

// ---------------------------------------------------------------------------- float weights on the tensor cores
//
// cuda sm_80 and up, from QMATVEC_Q8_MMA_F_FROM rows of x (its class): mma.sync m16n8k8 of tf32,
// a tile of 16 weight rows (A) against 8 rows of x (B), f32 sums. A dot product takes its k
// terms in any order, so each lane feeds the tensor cores the k it loaded itself: lane (g, t),
// g = lane / 4 and t = lane % 4, loads 32 bytes of weight rows g and g + 8 and the same k of x
// row g, and an mma takes two neighbouring k of every lane as A's columns t and t + 4 and B's
// rows t and t + 4 (PTX's m16n8k8 fragments). f16 and bf16 weights are exact in tf32; x is
// hi + lo, hi its 10 high mantissa bits, lo the rest, of which the tensor cores keep 10: about
// 21 bits of x reach the product (f32 weights split alike: three mmas, hi hi, hi lo, lo hi).
// A block's warps take every so many pieces of 4 x 32 bytes along the rows (the four lanes of a
// row read 128 bytes together); shared memory sums them. Any grid (items grid-strided). Two
// entry points, each with its own launch bounds, as the weight's rows (n) ask:
// - qmatvec_q8_1_mma_<F>, below QMATVEC_Q8_MMA_WIDE_N rows (4096: 256 tiles for 132
//   multiprocessors on the H100): the product waits on latency, not on memory. Items of
//   QMATVEC_Q8_MMA_F_TILES (2) tiles (one: QMATVEC_Q8_MMA_F_CHAINS chains of accumulators, an mma
//   waiting for the one before it in its chain only), QMATVEC_Q8_MMA_F_DEPTH steps in
//   registers, blocks of QMATVEC_Q8_MMA_F_THREADS (256) at QMATVEC_Q8_MMA_F_MIN_BLOCKS (1) a
//   multiprocessor: 2 tiles take about 170 registers (a block a multiprocessor, 8 warps; at 128
//   registers, two blocks, they spill), and at 4096 rows 128 items, each of 8 warps splitting k,
//   beat one tile's 256 by 8-13% at 4096 x 4096 for 4 and 8 rows of f16 and bf16.
// - qmatvec_q8_1_mma_wide_<F>, from QMATVEC_Q8_MMA_WIDE_N rows: items of QMATVEC_Q8_MMA_TILES_F
//   (4) tiles, each x piece loaded once for all of them, 2 steps in registers, blocks of
//   QMATVEC_Q8_MMA_F_WIDE_THREADS (128) with as many registers as 4 tiles take (about 250).

// A block of 32's bit in QMATVEC_Q8_MMA_Q_PAIR_BLOCKS and _FEW_ROOMY_BLOCKS (the order of
// QMATVEC_Q8_WIDE_BLOCKS); -1 for the others.
template <typename F> constexpr int kBlock32Bit = -1;
template <> constexpr int kBlock32Bit<q4_0> = 0;
template <> constexpr int kBlock32Bit<q4_1> = 1;
template <> constexpr int kBlock32Bit<q5_0> = 2;
template <> constexpr int kBlock32Bit<q5_1> = 3;
template <> constexpr int kBlock32Bit<q8_0> = 4;
template <> constexpr int kBlock32Bit<q8_1> = 5;
// Whether such a fact's mask holds F's bit (false for the formats that are no block of 32).
template <typename F, long long Mask> constexpr bool kBlock32In = kBlock32Bit<F> >= 0 && ((Mask >> kBlock32Bit<F>) & 1) != 0;

#if OPGEN_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define OPGEN_QMATVEC_MMA 1
#else
#define OPGEN_QMATVEC_MMA 0
#endif

#if OPGEN_QMATVEC_MMA
__device__ __forceinline__ void mma_tf32(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                         uint32_t b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// v = hi + lo: hi v's sign, exponent and 10 high mantissa bits (a tf32), lo the rest (exact).
__device__ __forceinline__ void tf32_split(uint32_t v, uint32_t& hi, uint32_t& lo) {
    hi = v & 0xFFFFE000u;
    lo = __float_as_uint(__uint_as_float(v) - __uint_as_float(hi));
}

// 32 bytes of weights (two 16-byte pieces) as f32 bits; kSplit: f32 weights need a lo part.
template <typename T> struct tf32_weights;
template <> struct tf32_weights<float> {
    static constexpr int kCount = 8;
    static constexpr bool kSplit = true;
    static __device__ __forceinline__ void bits(uint4 p, uint4 q, uint32_t (&v)[kCount]) {
        v[0] = p.x, v[1] = p.y, v[2] = p.z, v[3] = p.w, v[4] = q.x, v[5] = q.y, v[6] = q.z, v[7] = q.w;
    }
};
template <> struct tf32_weights<f16_t> {
    static constexpr int kCount = 16;
    static constexpr bool kSplit = false;
    static __device__ __forceinline__ void bits(uint4 p, uint4 q, uint32_t (&v)[kCount]) {
        const uint32_t w[8] = {p.x, p.y, p.z, p.w, q.x, q.y, q.z, q.w};
#pragma unroll
        for (int i = 0; i < 8; i++) {
            v[2 * i] = __float_as_uint(opgen::f16_to_float(__ushort_as_half((unsigned short)(w[i] & 0xFFFFu))));
            v[2 * i + 1] = __float_as_uint(opgen::f16_to_float(__ushort_as_half((unsigned short)(w[i] >> 16))));
        }
    }
};
template <> struct tf32_weights<bf16_t> {
    static constexpr int kCount = 16;
    static constexpr bool kSplit = false;
    static __device__ __forceinline__ void bits(uint4 p, uint4 q, uint32_t (&v)[kCount]) {
        const uint32_t w[8] = {p.x, p.y, p.z, p.w, q.x, q.y, q.z, q.w};
#pragma unroll
        for (int i = 0; i < 8; i++) v[2 * i] = w[i] << 16, v[2 * i + 1] = w[i] & 0xFFFF0000u;
    }
};

// One lane's loads of a step: 32 bytes of x row g and of weight rows g and g + 8 of each tile, the
// next step's loaded while this one's multiply (k0 past k: zeros, nothing read).
template <typename T, int MT> struct mma_step {
    static constexpr int E = tf32_weights<T>::kCount;
    float4 x[E / 4];
    uint4 w[MT][2][2];

    __device__ __forceinline__ void load(const uint8_t* const (&wr)[MT][2], const float* xr, size_t k0, size_t k) {
        const bool in = k0 < k;
#pragma unroll
        for (int i = 0; i < E / 4; i++) x[i] = in ? reinterpret_cast<const float4*>(xr + k0)[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int m = 0; m < MT; m++) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const uint4* p = reinterpret_cast<const uint4*>(wr[m][h] + k0 * sizeof(T));
                w[m][h][0] = in ? p[0] : make_uint4(0u, 0u, 0u, 0u);
                w[m][h][1] = in ? p[1] : make_uint4(0u, 0u, 0u, 0u);
            }
        }
    }

    // c[m] += tile m (16 x E) times x (E x 8), E / 2 mmas a part of x (and of f32 weights), the
    // mmas taking the C chains of accumulators in turn (each waits for the one before it in its
    // chain only)
    template <int C> __device__ __forceinline__ void multiply(float (&c)[MT][C][4]) const {
        typedef tf32_weights<T> Wt;
        uint32_t xh[E], xl[E];
#pragma unroll
        for (int i = 0; i < E / 4; i++) {
            tf32_split(__float_as_uint(x[i].x), xh[4 * i], xl[4 * i]);
            tf32_split(__float_as_uint(x[i].y), xh[4 * i + 1], xl[4 * i + 1]);
            tf32_split(__float_as_uint(x[i].z), xh[4 * i + 2], xl[4 * i + 2]);
            tf32_split(__float_as_uint(x[i].w), xh[4 * i + 3], xl[4 * i + 3]);
        }
#pragma unroll
        for (int m = 0; m < MT; m++) {
            uint32_t hi[2][E], lo[2][Wt::kSplit ? E : 1];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                Wt::bits(w[m][h][0], w[m][h][1], hi[h]);
                if constexpr (Wt::kSplit) {
#pragma unroll
                    for (int e = 0; e < E; e++) tf32_split(hi[h][e], hi[h][e], lo[h][e]);
                }
            }
            constexpr int P = Wt::kSplit ? 3 : 2;  // mmas an s
#pragma unroll
            for (int s = 0; s < E / 2; s++) {
                const int e0 = 2 * s, e1 = 2 * s + 1;  // A's columns t and t + 4, B's rows t and t + 4
                mma_tf32(c[m][(P * s) % C], hi[0][e0], hi[1][e0], hi[0][e1], hi[1][e1], xh[e0], xh[e1]);
                mma_tf32(c[m][(P * s + 1) % C], hi[0][e0], hi[1][e0], hi[0][e1], hi[1][e1], xl[e0], xl[e1]);
                if constexpr (Wt::kSplit) mma_tf32(c[m][(P * s + 2) % C], lo[0][e0], lo[1][e0], lo[0][e1], lo[1][e1], xh[e0], xh[e1]);
            }
        }
    }
};

// An item's sums: each warp's C fragments of its M tiles (c[m][i]: weight row 16 m + g, + 8 for
// i of 2 and 3, against x row 2t + (i & 1)) summed over the block's warps through shared memory
// and stored in y (weight rows n0.., x rows r0..; those past n or `rows` not stored). Both
// __syncthreads: every warp's fragments are in before the sums, and partial (and whatever the
// caller keeps in shared memory) is free again after them.
template <int kWarps, int M>
__device__ __forceinline__ void store_item(float (&partial)[kWarps][4 * M][32], const float (&c)[M][4], unsigned int warp,
                                           unsigned int lane, size_t n0, size_t r0, size_t n, size_t rows, float* y) {
#pragma unroll
    for (int m = 0; m < M; m++) {
#pragma unroll
        for (int i = 0; i < 4; i++) partial[warp][4 * m + i][lane] = c[m][i];
    }
    __syncthreads();
    for (int v = (int)threadIdx.x; v < 4 * M * 32; v += kWarps * 32) {
        const int slot = v / 32, l = v % 32, m = slot / 4, i = slot % 4;
        float sum = 0.0f;
#pragma unroll
        for (int p = 0; p < kWarps; p++) sum += partial[p][slot][l];
        const size_t row = n0 + 16 * m + 8 * (i >> 1) + l / 4, xrow = r0 + 2 * (l % 4) + (i & 1);
        if (row < n && xrow < rows) y[xrow * n + row] = sum;
    }
    __syncthreads();
}

// Items of MT tiles of 16 weight rows against 8 rows of x (weight rows slowest), a block each. A
// warp holds D steps in registers: D - 1 in flight while one multiplies (steps past k: zeros,
// nothing read).
template <typename T, int MT, int D, int kBlock>
__device__ void mma_product(const uint8_t* __restrict__ w, const float* __restrict__ x, float* __restrict__ y, size_t n,
                            size_t k, size_t rows) {
    constexpr int E = tf32_weights<T>::kCount, kWarps = kBlock / 32, kStep = kWarps * 4 * E;
    constexpr int kChains = MT == 1 ? OPGEN_QMATVEC_Q8_MMA_F_CHAINS : 1;  // more tiles: a chain each already
    static_assert(kBlock % 32 == 0, "whole warps");
    __shared__ float partial[kWarps][4 * MT][32];
    const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    const size_t row_bytes = k * sizeof(T), groups = (rows + 7) / 8, items = (n + 16 * MT - 1) / (16 * MT) * groups;
    for (size_t item = blockIdx.x; item < items; item += gridDim.x) {
        const size_t n0 = item / groups * (16 * MT), r0 = item % groups * 8;
        const uint8_t* wr[MT][2];
#pragma unroll
        for (int m = 0; m < MT; m++) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const size_t row = n0 + 16 * m + 8 * h + g;
                wr[m][h] = w + (row < n ? row : n - 1) * row_bytes;
            }
        }
        const float* xr = x + (r0 + g < rows ? r0 + g : rows - 1) * k;
        float c[MT][kChains][4];
#pragma unroll
        for (int m = 0; m < MT; m++) {
#pragma unroll
            for (int h = 0; h < kChains; h++) c[m][h][0] = c[m][h][1] = c[m][h][2] = c[m][h][3] = 0.0f;
        }
        mma_step<T, MT> step[D];
        size_t base = (size_t)warp * 4 * E;
#pragma unroll
        for (int d = 0; d < D - 1; d++) step[d].load(wr, xr, base + d * kStep + t * E, k);
        for (; base < k; base += D * kStep) {  // the same trips for the whole warp
#pragma unroll
            for (int d = 0; d < D; d++) {  // step d multiplies; the one multiplied before loads D - 1 ahead
                if (d > 0 && base + d * kStep >= k) break;  // no multiplies of zeros past k
                step[(d + D - 1) % D].load(wr, xr, base + (d + D - 1) * kStep + t * E, k);
                step[d].multiply(c);
            }
        }
        float total[MT][4];  // the chains summed
#pragma unroll
        for (int m = 0; m < MT; m++) {
#pragma unroll
            for (int i = 0; i < 4; i++) {
                total[m][i] = c[m][0][i];
#pragma unroll
                for (int h = 1; h < kChains; h++) total[m][i] += c[m][h][i];
            }
        }
        store_item<kWarps, MT>(partial, total, warp, lane, n0, r0, n, rows, y);
    }
}

// ---------------------------------------------------------------------------- blocks of 32 on the tensor cores
//
// cuda sm_80 and up, the blocks of 32 from QMATVEC_Q8_MMA_Q_FROM rows of x (its class; those of
// QMATVEC_Q8_MMA_Q_X4_BLOCKS from 3) on weights of at least QMATVEC_Q8_MMA_Q_N rows: mma.sync
// m16n8k32 of s8, a tile of 16 weight rows (A) against 8 rows of x in q8_1 (B), one block of 32
// an mma, its s32 sums scaled into f32 (a * dx * sum + b * dx * the x quants' sum: weight = a q
// + b, x = dx qx). The integer dot products leave the dp4a pipe, which bounds the product from 4
// rows of x on.
// A warp's step is 4 blocks of its tile's rows. Its stage in shared memory holds their bytes and
// x's (the item's 8 rows of quants of those blocks, and their d / d * sum), copied by cp.async
// as whole aligned 16-byte pieces, the lanes taking neighbouring pieces of a row (a row's few
// blocks a lane, or a quad's fragments read where they lie, would touch as many cache lines a
// load as there are rows); the next S - 1 steps are in flight while one is multiplied. Lane (g,
// t), g = lane / 4 and t = lane % 4, reads its fragments there: words t and t + 4 of each
// block's unit (F::quarter) of weight rows g and g + 8 and of x row g (PTX's m16n8k32: a0 row g
// at k 4t.., a1 row g + 8, a2 row g at k 16 + 4t.., a3 row g + 8; b0 x row g at k 4t.., b1 at 16
// + 4t..). A stage's weight rows are an odd count of pieces apart and its x rows 9, so that a
// quad's reads of 8 rows meet every bank once. The warps of a block take every fourth step;
// shared memory sums them. An item is T tiles and 8 rows of x: two (kMmaTiles, the formats of
// QMATVEC_Q8_MMA_Q_PAIR_BLOCKS whose stages fit) share each step's x fragments and x copies, which
// L2 serves every item again (a third of a step's bytes at 4 rows of x with one tile).

// Whether the format's blocks add a minimum b (weight = a q + b): its products add b * dx * the
// x quants' sum, a step's 4 blocks in one mma of tf32 (m16n8k4: A the tile's minima, B x's dx *
// sum; two, x's as hi + lo): as multiply-adds of every block in every lane they made q4_1 40%
// slower (16384^2 by 8 rows of x on the H100: 110 us, against 79 now).
template <typename F> constexpr bool kMinimum = false;
template <> constexpr bool kMinimum<q4_1> = true;
template <> constexpr bool kMinimum<q5_1> = true;

// Their minimum b: the high half of the block's first word (d, m as f16), exact in tf32.
__device__ __forceinline__ float block_minimum(const uint8_t* blk) { return half_hi(word_at<4>(blk)); }

// mma.sync m16n8k4 of tf32: the minima's products, a step's 4 blocks its k.
__device__ __forceinline__ void mma_tf32_k4(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
    asm("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(b0));
}

// c = bias + A B (every element of C starts at bias).
__device__ __forceinline__ void mma_s8(int (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                                       uint32_t b1, int bias) {
    asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};"
        : "=r"(c[0]), "=r"(c[1]), "=r"(c[2]), "=r"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(bias));
}

// cp.async: 16 bytes from global to shared memory without the registers (zeros where `in` is
// false, nothing read), in groups the lane waits for by how many may still be in flight. The
// weights, read once, stream past L1 (.cg); x, which every item of its rows reads again (each
// tile of 16 weight rows), stays in L1 (.ca) where QMATVEC_Q8_MMA_Q_X_L1 says so: else L2 serves
// every tile its x, as many bytes as the weights' at 8 rows of x.
__device__ __forceinline__ void copy_async(void* dst, const void* src, bool in) {
    const unsigned int at = (unsigned int)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(at), "l"(src), "r"(in ? 16 : 0) : "memory");
}
__device__ __forceinline__ void copy_x_async(void* dst, const void* src, bool in) {
    const unsigned int at = (unsigned int)__cvta_generic_to_shared(dst);
    if constexpr (OPGEN_QMATVEC_Q8_MMA_Q_X_L1 != 0) {
        asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;" ::"r"(at), "l"(src), "r"(in ? 16 : 0) : "memory");
    } else {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(at), "l"(src), "r"(in ? 16 : 0) : "memory");
    }
}
__device__ __forceinline__ void copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void copy_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// A warp's stage, in 16-byte pieces: 16 T weight rows of kPieces holding 4 blocks of F (they start
// A-aligned: A the largest power of two up to 16 dividing the block bytes), kRow apart; then x's
// 8 rows of 128 bytes of quants, 9 pieces apart; then their 8 x 4 float4 d, d * sum, d, d * sum.
// S: as many as 48 KiB of static shared memory holds beside the block's sums, at most
// QMATVEC_Q8_MMA_Q_STAGES.
template <typename F, int T> struct q8_stage {
    static constexpr int kAlign = (F::kBytes & -F::kBytes) < 16 ? (F::kBytes & -F::kBytes) : 16;
    static constexpr int kPieces = (16 - kAlign + 4 * F::kBytes + 15) / 16, kRow = kPieces | 1;
    static constexpr int kQuants = 16 * T * kRow, kScales = kQuants + 8 * 9, kAll = kScales + 32;
    static constexpr int kCopies = 16 * T * kPieces + 8 * 8 + 32, kPer = (kCopies + 31) / 32;
    static constexpr int kFit = (48 * 1024 - 4 * 32 * 4 * T * (kThreads / 32)) / (16 * kAll * (kThreads / 32));
    static constexpr int S = kFit < OPGEN_QMATVEC_Q8_MMA_Q_STAGES ? kFit : OPGEN_QMATVEC_Q8_MMA_Q_STAGES;

    // This lane's copies of the step from block kb: weight rows n0.. (past n: the last one) and x
    // rows r0..; x rows past `rows` (B's columns of outputs not stored) and pieces past the blocks
    // are zeros, not read.
    static __device__ __forceinline__ void copy(uint4* stage, const uint8_t* w, size_t n0, size_t n, size_t row_bytes,
                                                const x_source& xs, size_t r0, size_t rows, size_t kb, size_t blocks,
                                                unsigned int lane) {
        const int bytes = (int)((blocks - kb < 4 ? blocks - kb : 4) * F::kBytes);
        const float4* xm = reinterpret_cast<const float4*>(xs.xm);
#pragma unroll
        for (int i = 0; i < kPer; i++) {
            const int c = (int)lane + 32 * i;
            if (kCopies % 32 != 0 && c >= kCopies) break;
            if (c < 16 * T * kPieces) {  // weight row r's piece p
                const int r = c / kPieces, p = c % kPieces;
                const size_t row = n0 + r < n ? n0 + r : n - 1;
                const size_t at = reinterpret_cast<size_t>(w + row * row_bytes + kb * F::kBytes);
                const bool in = 16 * p < (int)(at & 15) + bytes;
                copy_async(stage + r * kRow + p, reinterpret_cast<const uint4*>(at & ~(size_t)15) + (in ? p : 0), in);
            } else if (c < 16 * T * kPieces + 64) {  // x row r's quants, piece p (half a block)
                const int r = (c - 16 * T * kPieces) / 8, p = (c - 16 * T * kPieces) % 8;
                const bool in = r0 + r < rows && kb + p / 2 < blocks;
                copy_x_async(stage + kQuants + 9 * r + p, xs.xq + (in ? (r0 + r) * xs.k + 32 * kb + 16 * p : 0), in);
            } else {  // x row r's d and sums of block kb + j
                const int r = (c - 16 * T * kPieces - 64) / 4, j = (c - 16 * T * kPieces - 64) % 4;
                const bool in = r0 + r < rows && kb + j < blocks;
                copy_x_async(stage + kScales + 4 * r + j, xm + (in ? (r0 + r) * (xs.k / 32) + kb + j : 0), in);
            }
        }
    }
};

// A step's 4 blocks from its stage: tile i's int8 products into c[i], its minima's into m[i] (x's
// fragments loaded once for the T tiles). Where not kFull, the blocks past the last are zeros of
// x and their weight scales and minima 0 (their bytes are another row's, or zeros). wr[i][h]:
// weight row g + 8 h of tile i.
template <typename F, bool kFull, int T>
__device__ __forceinline__ void q8_mma_blocks(const uint8_t* const (&wr)[T][2], const uint32_t* xq, const float4* xm,
                                              unsigned int g, unsigned int t, size_t kb, size_t blocks,
                                              float (&c)[T][4], float (&m)[T][4]) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const bool live = kFull || kb + j < blocks;
        const uint32_t b0 = xq[8 * j + t], b1 = xq[8 * j + t + 4];
        const float4 x0 = xm[4 * (2 * t) + j], x1 = xm[4 * (2 * t + 1) + j];
#pragma unroll
        for (int i = 0; i < T; i++) {
            uint32_t lo_g, hi_g, lo_h, hi_h;
            float ag, ah;
            F::quarter(wr[i][0] + j * F::kBytes, t, lo_g, hi_g, ag);
            F::quarter(wr[i][1] + j * F::kBytes, t, lo_h, hi_h, ah);
            int s[4];
            mma_s8(s, lo_g, lo_h, hi_g, hi_h, b0, b1, kSumBias);
            ag = live ? ag : 0.0f, ah = live ? ah : 0.0f;
            c[i][0] = fmaf(ag * x0.x, sum_value(s[0]), c[i][0]);
            c[i][1] = fmaf(ag * x1.x, sum_value(s[1]), c[i][1]);
            c[i][2] = fmaf(ah * x0.x, sum_value(s[2]), c[i][2]);
            c[i][3] = fmaf(ah * x1.x, sum_value(s[3]), c[i][3]);
        }
    }
    if constexpr (kMinimum<F>) {  // b * dx * sum over the step: A the minima (weight rows g, g + 8 of
        // block t), B x row g's d * sum of block t as two tf32 parts (hi + lo, about 21 bits)
        const bool live = kFull || kb + t < blocks;
        const float4 xt = xm[4 * g + t];
        uint32_t hi, lo;
        tf32_split(__float_as_uint(xt.y + xt.w), hi, lo);
#pragma unroll
        for (int i = 0; i < T; i++) {
            const float bg = live ? block_minimum(wr[i][0] + t * F::kBytes) : 0.0f;
            const float bh = live ? block_minimum(wr[i][1] + t * F::kBytes) : 0.0f;
            mma_tf32_k4(m[i], __float_as_uint(bg), __float_as_uint(bh), hi);
            mma_tf32_k4(m[i], __float_as_uint(bg), __float_as_uint(bh), lo);
        }
    }
}

// Tiles an item: two where QMATVEC_Q8_MMA_Q_PAIR_BLOCKS has the format's bit and two stages of
// two tiles fit (runtime/gpu/quant.py's q8_tiles mirrors it for the grid).
template <typename F>
constexpr int kMmaTiles = kBlock32In<F, OPGEN_QMATVEC_Q8_MMA_Q_PAIR_BLOCKS> && q8_stage<F, 2>::S >= 2 ? 2 : 1;

template <typename F>
__device__ void q8_mma_product(const uint8_t* __restrict__ w, const x_source& xs, float* __restrict__ y, size_t n,
                               size_t rows) {
    constexpr int T = kMmaTiles<F>;
    typedef q8_stage<F, T> Stage;
    constexpr int kWarps = kThreads / 32, S = Stage::S;
    static_assert(kThreads % 32 == 0, "whole warps");
    static_assert(S >= 2, "two stages at least");
    __shared__ uint4 stages[kWarps][S][Stage::kAll];
    __shared__ float partial[kWarps][4 * T][32];
    const unsigned int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    const size_t k = xs.k, blocks = k / 32, row_bytes = operands_of<F>::row_bytes(k);
    const size_t groups = (rows + 7) / 8, items = (n + 16 * T - 1) / (16 * T) * groups;
    const size_t first = (size_t)warp * 4, stride = (size_t)kWarps * 4;
    for (size_t item = blockIdx.x; item < items; item += gridDim.x) {
        const size_t n0 = item / groups * (16 * T), r0 = item % groups * 8;
        int offset[T][2];  // where weight rows g and g + 8 of each tile start in their first piece
#pragma unroll
        for (int i = 0; i < T; i++) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const size_t row = n0 + 16 * i + 8 * h + g;
                offset[i][h] = (int)(reinterpret_cast<size_t>(w + (row < n ? row : n - 1) * row_bytes) & 15);
            }
        }
        float c[T][4], m[T][4];  // m: the minima's terms
#pragma unroll
        for (int i = 0; i < T; i++) c[i][0] = c[i][1] = c[i][2] = c[i][3] = m[i][0] = m[i][1] = m[i][2] = m[i][3] = 0.0f;
        // S - 1 steps in flight: a group of copies a step (empty past the last), waited for S - 1 later
#pragma unroll
        for (int i = 0; i < S - 1; i++) {
            const size_t kb = first + i * stride;
            if (kb < blocks) Stage::copy(stages[warp][i], w, n0, n, row_bytes, xs, r0, rows, kb, blocks, lane);
            copy_commit();
        }
        int now = 0;
        for (size_t kb = first; kb < blocks; kb += stride) {  // the same trips for the warp
            const size_t ahead = kb + (S - 1) * stride;
            const int fill = now == 0 ? S - 1 : now - 1;
            __syncwarp();  // the stage it fills was read by every lane
            if (ahead < blocks) Stage::copy(stages[warp][fill], w, n0, n, row_bytes, xs, r0, rows, ahead, blocks, lane);
            copy_commit();
            copy_wait<S - 1>();
            __syncwarp();  // every lane's copies of this step are in
            const uint4* stage = stages[warp][now];
            const int delta = (int)((kb * F::kBytes) & 15);  // the step's start within its first piece, past the row's
            const uint8_t* wr[T][2];
#pragma unroll
            for (int i = 0; i < T; i++) {
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    wr[i][h] = reinterpret_cast<const uint8_t*>(stage + (16 * i + 8 * h + g) * Stage::kRow) +
                               ((offset[i][h] + delta) & 15);
                }
            }
            const uint32_t* xq = reinterpret_cast<const uint32_t*>(stage + Stage::kQuants + 9 * g);
            const float4* xm = reinterpret_cast<const float4*>(stage + Stage::kScales);
            if (kb + 4 <= blocks) {  // every step but a row's last has its 4 blocks
                q8_mma_blocks<F, true, T>(wr, xq, xm, g, t, kb, blocks, c, m);
            } else {
                q8_mma_blocks<F, false, T>(wr, xq, xm, g, t, kb, blocks, c, m);
            }
            now = now + 1 < S ? now + 1 : 0;
        }
#pragma unroll
        for (int i = 0; i < T; i++) {
#pragma unroll
            for (int j = 0; j < 4; j++) c[i][j] += m[i][j];  // the minima's terms
        }
        store_item<kWarps, T>(partial, c, warp, lane, n0, r0, n, rows, y);  // the stages are free after it too
    }
}
#endif

// ---------------------------------------------------------------------------- the product

// V sums per lane -> each group's V totals, spread over its lanes: each butterfly step halves the
// values a lane holds (it keeps the half of its lane bit, adds its partner's), then plain steps
// sum what is left. Lane `lane` ends with values base(lane) .. + held; `writer` says whether it
// is the one lane of its group that stores them.
template <int V> __device__ __forceinline__ void group_totals(float (&v)[V], unsigned int lane, int& base, bool& writer) {
    base = 0;
    unsigned int repeat = 0;  // lane bits of the plain steps: lanes differing only there hold the same sums
#pragma unroll
    for (int step = 0; (OPGEN_LANE_GROUP >> (step + 1)) > 0; step++) {
        const unsigned int bit = (unsigned int)OPGEN_LANE_GROUP >> (step + 1);
        const int c = V >> step;  // values held before this step
        if (c > 1) {
            const int half = c / 2;
            const bool upper = (lane & bit) != 0u;
#pragma unroll
            for (int i = 0; i < half; i++) {
                const float send = upper ? v[i] : v[i + half], keep = upper ? v[i + half] : v[i];
                v[i] = keep + opgen::shfl_xor(send, bit);
            }
            if (upper) base += half;
        } else {
            v[0] += opgen::shfl_xor(v[0], bit);
            repeat |= bit;
        }
    }
    writer = (lane & repeat) == 0u;
}

// The format's family: 0 the blocks of 32, 1 the blocks of 256, 2 float weights.
template <typename F> constexpr int kFamily = 0;
template <> constexpr int kFamily<q2_k> = 1;
template <> constexpr int kFamily<q3_k> = 1;
template <> constexpr int kFamily<q4_k> = 1;
template <> constexpr int kFamily<q5_k> = 1;
template <> constexpr int kFamily<q6_k> = 1;
template <> constexpr int kFamily<q8_k> = 1;
template <> constexpr int kFamily<f32> = 2;
template <> constexpr int kFamily<f16> = 2;
template <> constexpr int kFamily<bf16> = 2;
// A block of 256's bit in QMATVEC_Q8_WIDE_K, _ROWS_K_X2_TWO and _LONG_K (its kBit); -1 for the others.
template <typename F, typename = void> struct k_bit {
    static constexpr int value = -1;
};
template <typename F> struct k_bit<F, decltype((void)F::kBit)> {
    static constexpr int value = F::kBit;
};
// Whether such a fact's mask holds F's bit (false for the formats that are no block of 256).
template <typename F, long long Mask> constexpr bool kBlock256In = k_bit<F>::value >= 0 && ((Mask >> k_bit<F>::value) & 1) != 0;

// Whether each group of lanes takes its own items (else a block an item): where a weight row has
// at most QMATVEC_Q8_LANE_UNITS units per lane, or, for 4 and more rows of x, at most
// _LANE_UNITS_MANY where there are at least QMATVEC_Q8_LANE_ITEMS items (enough groups in flight);
// float weights: QMATVEC_Q8_LANE_UNITS_F; one row of x of the blocks of 256 of
// QMATVEC_Q8_LANE_K_ONE_BLOCKS also up to QMATVEC_Q8_LANE_UNITS_K_ONE where `full` (x in shared
// memory, whose grid runtime/gpu/quant.py caps: from QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS items)
// (ops.yaml's kernel facts; runtime/gpu/quant.py's q8_by_group decides alike for the grid).
template <typename F, int NX> __device__ __forceinline__ bool by_groups(size_t units, size_t items, bool full) {
    constexpr size_t g = OPGEN_LANE_GROUP;
    if constexpr (kFamily<F> == 2) return units <= OPGEN_QMATVEC_Q8_LANE_UNITS_F * g;
    if constexpr (NX == 1 && kBlock256In<F, OPGEN_QMATVEC_Q8_LANE_K_ONE_BLOCKS>) {
        if (full && units <= OPGEN_QMATVEC_Q8_LANE_UNITS_K_ONE * g) return true;
    }
    return units <= OPGEN_QMATVEC_Q8_LANE_UNITS * g ||
           (NX >= 4 && units <= OPGEN_QMATVEC_Q8_LANE_UNITS_MANY * g && items >= (size_t)OPGEN_QMATVEC_Q8_LANE_ITEMS);
}

// The policy of F's product against NX rows of x: the long unit for one row of x where
// QMATVEC_Q8_LONG_K has F's bit (q2_K to q5_K; q6_K and q8_K have none), else operands_of's.
template <typename F, typename = void> struct has_long {
    static constexpr bool value = false;
};
template <typename F> struct has_long<F, decltype((void)sizeof(typename F::H::Long))> {
    static constexpr bool value = true;
};
template <bool C, typename A, typename B> struct pick {
    typedef A type;
};
template <typename A, typename B> struct pick<false, A, B> {
    typedef B type;
};
// Two neighbouring blocks of 32 a lane for one row of x, the formats of QMATVEC_Q8_TWO_BLOCKS
// (their F::two; k a multiple of 64 and the weights 4-aligned, product checks): a unit of 64
// weights whose two blocks load together (q4_0: 36 bytes, 4-aligned, where a block's 18 are
// 2-aligned), each then a unit of 32 of q8_operands.
template <typename F> constexpr bool kTwoBlocks = kBlock32In<F, OPGEN_QMATVEC_Q8_TWO_BLOCKS>;
template <typename F> struct two_block_operands {
    typedef q8_operands<F> P;
    static constexpr int kUnit = 64;
    struct W {
        uint32_t q[2][8];
        float a[2][2], b[2][2];
    };
    struct X {
        typename P::X part[2];
    };
    static __device__ __forceinline__ void load_w(const uint8_t* row, size_t u, size_t, W& w) {
        F::two(row + 2 * u * F::kBytes, w.q, w.a, w.b);
    }
    static __device__ __forceinline__ void load_x(const x_source& s, size_t r, size_t u, size_t units, X& x) {
        P::load_x(s, r, 2 * u, units, x.part[0]);
        P::load_x(s, r, 2 * u + 1, units, x.part[1]);
    }
    static __device__ __forceinline__ float dot(const W& w, const X& x) {
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < 2; j++) {
            typename P::W part;
#pragma unroll
            for (int i = 0; i < 8; i++) part.q[i] = w.q[j][i];
            part.a[0] = w.a[j][0], part.a[1] = w.a[j][1], part.b[0] = w.b[j][0], part.b[1] = w.b[j][1];
            s += P::dot(part, x.part[j]);
        }
        return s;
    }
};

// kShared: x's row from shared memory (product's share_x), for the long units only; kTwo: the
// two-block units of two_block_operands.
template <typename F, int NX, bool kShared = false, bool kTwo = false> struct policy_of {
    static constexpr bool kLong = NX == 1 && kBlock256In<F, OPGEN_QMATVEC_Q8_LONG_K> && has_long<F>::value;
    typedef typename pick<kLong, long_operands<F, kShared>, typename operands_of<F>::type>::type plain;
    typedef typename pick<kTwo, two_block_operands<F>, plain>::type type;
};

// A policy's weight loads with an L2 policy: float_operands' take float_weight_policy's (by the
// weights' bytes), the others' plain loads ignore it.
template <typename P, typename = void> struct weight_loads {
    static __device__ __forceinline__ uint64_t policy(size_t) { return 0; }
    static __device__ __forceinline__ void load(const uint8_t* row, size_t u, size_t units, typename P::W& w, uint64_t) {
        P::load_w(row, u, units, w);
    }
};
template <typename P> struct weight_loads<P, decltype((void)sizeof(typename P::Raw))> {
    static __device__ __forceinline__ uint64_t policy(size_t weight_bytes) { return P::policy(weight_bytes); }
    static __device__ __forceinline__ void load(const uint8_t* row, size_t u, size_t units, typename P::W& w, uint64_t policy) {
        P::load_w(row, u, units, w, policy);
    }
};

// Unit u's products of an item's R weight rows (wv) and its NX rows of x (xr) added to acc.
template <typename P, int NX, int R>
__device__ __forceinline__ void unit_products(const typename P::W (&wv)[R], const x_source& xs, const size_t (&xr)[NX], size_t u,
                                              size_t units, float (&acc)[R * NX]) {
#pragma unroll
    for (int j = 0; j < NX; j++) {
        typename P::X xv;
        P::load_x(xs, xr[j], u, units, xv);
#pragma unroll
        for (int i = 0; i < R; i++) acc[i * NX + j] += P::dot(wv[i], xv);
    }
}

// An item's R * NX sums (weight row i, x row j at i * NX + j) over the units first, first + step,
// ... of its weight rows n0.. against the x rows r0..: weight rows past n and x rows past `rows`
// are computed (as the last one), not stored. kEarly: where `wait` (a block's first item), its
// first kEarly steps of weights are asked for before the wait for the kernel before (no kernel
// writes the weights), so that they load while that kernel's last blocks end.
template <typename F, int NX, int R, bool kShared, bool kTwo, int kEarly = 0>
__device__ __forceinline__ void item_sums(const uint8_t* __restrict__ w, const x_source& xs, size_t n, size_t rows, size_t n0,
                                          size_t r0, size_t first, size_t step, float (&acc)[R * NX], bool wait = false) {
    typedef typename policy_of<F, NX, kShared, kTwo>::type P;
    const size_t units = xs.k / P::kUnit, row_bytes = operands_of<F>::row_bytes(xs.k);
    const uint8_t* wr[R];
    size_t xr[NX];
#pragma unroll
    for (int i = 0; i < R; i++) wr[i] = w + (n0 + i < n ? n0 + i : n - 1) * row_bytes;
#pragma unroll
    for (int j = 0; j < NX; j++) xr[j] = r0 + j < rows ? r0 + j : rows - 1;
#pragma unroll
    for (int i = 0; i < R * NX; i++) acc[i] = 0.0f;
    const uint64_t policy = weight_loads<P>::policy(n * row_bytes);
    size_t u = first;
    if constexpr (kEarly > 0) {
        if (wait) {  // float weights (float_operands): the pieces held as loaded until x is read
            typename P::Raw raw[kEarly][R];
#pragma unroll
            for (int s = 0; s < kEarly; s++) {
                if (u + s * step < units) {
#pragma unroll
                    for (int i = 0; i < R; i++) P::load_raw(wr[i], u + s * step, units, raw[s][i], policy);
                }
            }
            opgen::wait_for_predecessor();
#pragma unroll
            for (int s = 0; s < kEarly; s++) {
                if (u + s * step < units) {
                    typename P::W wv[R];
#pragma unroll
                    for (int i = 0; i < R; i++) P::unpack(raw[s][i], wv[i]);
                    unit_products<P>(wv, xs, xr, u + s * step, units, acc);
                }
            }
            u += kEarly * step;
        }
    }
#pragma unroll 2
    for (; u < units; u += step) {
        typename P::W wv[R];
#pragma unroll
        for (int i = 0; i < R; i++) weight_loads<P>::load(wr[i], u, units, wv[i], policy);
        unit_products<P>(wv, xs, xr, u, units, acc);
    }
}

// Items of R weight rows against NX rows of x (weight rows slowest). Where by_groups, each group
// of lanes takes its own items and its shuffles alone sum them (more items in flight, no
// block-wide step); else a block takes an item, its groups' totals summed through shared memory.
// Either is correct for any grid. kEarly > 0: the block's first item waits for the kernel before
// (item_sums; a block without items touches no memory), the caller has not.
template <typename F, int NX, int R, bool kShared, bool kTwo = false, int kEarly = 0>
__device__ __forceinline__ void items(const uint8_t* __restrict__ w, const x_source& xs, float* __restrict__ y, size_t n,
                                      size_t rows) {
    typedef typename operands_of<F>::type P;  // units of 32 weights, by_groups' measure whatever item_sums' policy
    constexpr int V = R * NX;
    constexpr int kHeld = V >= OPGEN_LANE_GROUP ? V / OPGEN_LANE_GROUP : 1;
    __shared__ float partial[kGroups][V];
    const size_t units = xs.k / P::kUnit;
    const size_t groups = (rows + NX - 1) / NX, items = (n + R - 1) / R * groups;
    const unsigned int lane = threadIdx.x % OPGEN_LANE_GROUP, group = threadIdx.x / OPGEN_LANE_GROUP;
    const bool full = !kShared || items >= (size_t)OPGEN_QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS;
    const bool by_group = by_groups<F, NX>(units, items, full);  // the same for the whole block
    const size_t first_item = by_group ? (size_t)blockIdx.x * kGroups + group : blockIdx.x;
    const size_t item_step = by_group ? (size_t)gridDim.x * kGroups : gridDim.x;
    for (size_t item = first_item; item < items; item += item_step) {
        const size_t n0 = item / groups * R, r0 = item % groups * NX;
        float acc[V];
        item_sums<F, NX, R, kShared, kTwo, kEarly>(w, xs, n, rows, n0, r0, by_group ? lane : threadIdx.x,
                                                   by_group ? OPGEN_LANE_GROUP : kThreads, acc, item == first_item);
        int base;
        bool writer;
        group_totals<V>(acc, lane, base, writer);
        if (by_group) {
            if (writer) {
#pragma unroll
                for (int h = 0; h < kHeld; h++) {
                    const size_t i = (size_t)(base + h) / NX, j = (size_t)(base + h) % NX;
                    if (n0 + i < n && r0 + j < rows) y[(r0 + j) * n + n0 + i] = acc[h];
                }
            }
            continue;
        }
        if (writer) {
#pragma unroll
            for (int h = 0; h < kHeld; h++) partial[group][base + h] = acc[h];
        }
        __syncthreads();
        if ((int)threadIdx.x < V) {
            float s = 0.0f;
#pragma unroll
            for (int g = 0; g < kGroups; g++) s += partial[g][threadIdx.x];
            const size_t i = threadIdx.x / NX, j = threadIdx.x % NX;
            if (n0 + i < n && r0 + j < rows) y[(r0 + j) * n + n0 + i] = s;
        }
        __syncthreads();  // partial is free for the next item
    }
}

// Whether F's long units read x from shared memory (QMATVEC_Q8_LONG_X_SHARED has its bit).
template <typename F> constexpr bool kXShared = kBlock256In<F, OPGEN_QMATVEC_Q8_LONG_X_SHARED>;

// The product of R weight rows an item against NX rows of x: items' loop, the long units of one
// row of x of kXShared's formats (cuda; k up to QMATVEC_Q8_LONG_X_SHARED_K) reading x from shared
// memory, the two-block units of one row of x of kTwoBlocks' formats where k and w allow them.
template <typename F, int NX, int R, bool kMayTwo = true>
__device__ void product(const uint8_t* __restrict__ w, const x_source& xs, float* __restrict__ y, size_t n, size_t rows) {
#if !OPGEN_HIP
    if constexpr (policy_of<F, NX>::kLong && kXShared<F> && kXSharedK > 0) {
        if (rows == 1 && xs.k <= (size_t)kXSharedK) {  // the same for the whole block
            __shared__ uint4 shared[kXSharedPieces];
            share_x(xs, shared);
            x_source s = xs;
            s.shared = shared;
            return items<F, NX, R, true>(w, s, y, n, rows);
        }
    }
#endif
    if constexpr (kMayTwo && NX == 1 && kTwoBlocks<F>) {
        if (xs.k % 64 == 0 && (reinterpret_cast<size_t>(w) & 3) == 0) return items<F, NX, R, false, true>(w, xs, y, n, rows);
    }
    items<F, NX, R, false>(w, xs, y, n, rows);
}

// ---------------------------------------------------------------------------- one row of x by the bulk copy engine
//
// cuda sm_90, one row of x of the blocks of 32 of QMATVEC_Q8_BULK_BLOCKS, k a multiple of 256 and
// w 16-byte aligned (each stage row then starts and ends on 16 bytes): the weights stream into
// shared memory through the bulk copy engine (cp.async.bulk), whose copies in flight hold no
// registers, where the loads of item_sums wait with as many in flight as a quarter of the warps'
// registers hold. A block takes items of QMATVEC_Q8_BULK_ROWS weight rows (grid-strided; the
// runtime's grid QMATVEC_Q8_BULK_PER_SM blocks a multiprocessor); a step is kThreads units of
// each, a unit a thread, read from its stage; S stages (bulk_stages) keep as many steps in flight
// across the block's items: thread 0 refills the stage the block left at the step before (a
// __syncthreads a step ends it), an mbarrier a stage counting its bytes in. x comes from global
// memory, as in item_sums. Its first stages load while x is quantized (QMATVEC_Q8_BULK_EARLY),
// and the next product's quantization may start once the blocks have asked for their last
// (QMATVEC_Q8_BULK_RELEASE). Each item's sums are taken in one order whatever the grid: any grid
// gives the same bits.
#if OPGEN_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define OPGEN_QMATVEC_BULK 1
#else
#define OPGEN_QMATVEC_BULK 0
#endif

template <typename F> constexpr bool kBulk = kBlock32In<F, OPGEN_QMATVEC_Q8_BULK_BLOCKS>;

#if OPGEN_QMATVEC_BULK
__device__ __forceinline__ uint32_t shared_at(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }

// An mbarrier of `count` arrivals (a stage's fill: one, thread 0's with the bytes it then copies in).
__device__ __forceinline__ void stage_init(uint64_t* bar, uint32_t count = 1u) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_at(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void stage_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void stage_expect(uint64_t* bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_at(bar)), "r"(bytes) : "memory");
}
// `bytes` (a multiple of 16) from global src to shared dst, both 16-byte aligned, counted on bar.
__device__ __forceinline__ void stage_copy(void* dst, const void* src, uint32_t bytes, uint64_t* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     shared_at(dst)),
                 "l"(src), "r"(bytes), "r"(shared_at(bar))
                 : "memory");
}
// The same, the copied lines first out of L2 where `evict_first` (an evict-first policy): weights
// read once a product leave x and other tensors that the kernels around it read again in L2.
__device__ __forceinline__ void stage_copy(void* dst, const void* src, uint32_t bytes, uint64_t* bar, bool evict_first) {
    if (!evict_first) return stage_copy(dst, src, bytes, bar);
    uint64_t policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
            shared_at(dst)),
        "l"(src), "r"(bytes), "r"(shared_at(bar)), "l"(policy)
        : "memory");
}
// One arrival on bar (a release: the thread's reads of the stage before it are done).
__device__ __forceinline__ void stage_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_at(bar)) : "memory");
}
// Returns once the stage's phase of this parity has completed (its bytes are in).
__device__ __forceinline__ void stage_wait(uint64_t* bar, uint32_t parity) {
    uint32_t done = 0;
    while (!done) {
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
            : "=r"(done)
            : "r"(shared_at(bar)), "r"(parity)
            : "memory");
    }
}

// A block's stages: kRows weight rows of kRow bytes (kThreads units), as many as 46 KiB of static
// shared memory holds, at most QMATVEC_Q8_BULK_STAGES.
template <typename F> struct bulk_stages {
    static constexpr int kRows = OPGEN_QMATVEC_Q8_BULK_ROWS, kRow = kThreads * F::kBytes;
    static constexpr int kFit = 46 * 1024 / (kRows * kRow);
    static constexpr int S = kFit < OPGEN_QMATVEC_Q8_BULK_STAGES ? kFit : OPGEN_QMATVEC_Q8_BULK_STAGES;
    static_assert(kRow % 16 == 0, "stage rows of whole 16-byte pieces");
};

// The formats whose bulk product asks for its first stages before it waits for the kernel before
// (QMATVEC_Q8_BULK_EARLY: x's quantization, which writes no weights), and which release the next
// kernel once a block has asked for its last stage (QMATVEC_Q8_BULK_RELEASE).
template <typename F> constexpr bool kBulkEarly = kBlock32In<F, OPGEN_QMATVEC_Q8_BULK_EARLY>;
template <typename F> constexpr bool kBulkRelease = kBlock32In<F, OPGEN_QMATVEC_Q8_BULK_RELEASE>;

// Step j of a block (its item j / chunks, units u0.. of chunk j % chunks) into stage j % S.
template <typename F>
__device__ __forceinline__ void bulk_issue(uint8_t (*stage)[bulk_stages<F>::kRows][bulk_stages<F>::kRow], uint64_t* full,
                                           const uint8_t* w, size_t n, size_t units, size_t chunks, size_t j) {
    typedef bulk_stages<F> B;
    const size_t n0 = (blockIdx.x + j / chunks * gridDim.x) * B::kRows, u0 = j % chunks * kThreads;
    const uint32_t bytes = (uint32_t)((units - u0 < (size_t)kThreads ? units - u0 : (size_t)kThreads) * F::kBytes);
    const int s = (int)(j % B::S);
    stage_expect(&full[s], bytes * B::kRows);
#pragma unroll
    for (int i = 0; i < B::kRows; i++) {  // weight rows past n: the last one again, not stored
        const size_t row = n0 + i < n ? n0 + i : n - 1;
        stage_copy(stage[s][i], w + row * (units * F::kBytes) + u0 * F::kBytes, bytes, &full[s]);
    }
}

template <typename F>
__device__ void bulk_product(const uint8_t* __restrict__ w, const x_source& xs, float* __restrict__ y, size_t n) {
    typedef bulk_stages<F> B;
    typedef q8_operands<F> P;
    constexpr int R = B::kRows, S = B::S, kHeld = R >= OPGEN_LANE_GROUP ? R / OPGEN_LANE_GROUP : 1;
    static_assert(S >= 2, "two stages at least: QMATVEC_Q8_BULK_ROWS too many rows of this format for 46 KiB");
    __shared__ __align__(128) uint8_t stage[S][R][B::kRow];
    __shared__ uint64_t full[S];
    __shared__ float partial[kGroups][R];
    const size_t units = xs.k / 32, chunks = (units + kThreads - 1) / kThreads, items = (n + R - 1) / R;
    const size_t steps = blockIdx.x < items ? (items - blockIdx.x + gridDim.x - 1) / gridDim.x * chunks : 0;
    const unsigned int lane = threadIdx.x % OPGEN_LANE_GROUP, group = threadIdx.x / OPGEN_LANE_GROUP;
    if constexpr (!kBulkEarly<F>) opgen::wait_for_predecessor();
    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < S; s++) stage_init(&full[s]);
        stage_init_fence();
        for (size_t j = 0; j + 1 < (size_t)S && j < steps; j++) bulk_issue<F>(stage, full, w, n, units, chunks, j);
        if constexpr (kBulkRelease<F>) {
            if (steps < (size_t)S) opgen::release_dependents();  // every stage asked for
        }
    }
    if constexpr (kBulkEarly<F>) opgen::wait_for_predecessor();  // x is read after it, the weights before
    __syncthreads();
    float acc[R];
#pragma unroll
    for (int i = 0; i < R; i++) acc[i] = 0.0f;
    for (size_t j = 0; j < steps; j++) {  // the same trips for the whole block
        if (threadIdx.x == 0 && j + S - 1 < steps) {
            bulk_issue<F>(stage, full, w, n, units, chunks, j + S - 1);
            if constexpr (kBulkRelease<F>) {
                if (j + S == steps) opgen::release_dependents();  // the block's last stage asked for
            }
        }
        const int s = (int)(j % S);
        stage_wait(&full[s], (uint32_t)(j / S) & 1u);
        const size_t c = j % chunks, u = c * kThreads + threadIdx.x;
        if (u < units) {
            typename P::X xv;
            P::load_x(xs, 0, u, units, xv);
#pragma unroll
            for (int i = 0; i < R; i++) {
                typename P::W wv;
                P::load_w(stage[s][i], threadIdx.x, units, wv);
                acc[i] += P::dot(wv, xv);
            }
        }
        if (c + 1 == chunks) {  // the item's last step: its R sums, through shared memory
            int base;
            bool writer;
            group_totals<R>(acc, lane, base, writer);
            if (writer) {
#pragma unroll
                for (int h = 0; h < kHeld; h++) partial[group][base + h] = acc[h];
            }
            __syncthreads();
            if ((int)threadIdx.x < R) {
                float t = 0.0f;
#pragma unroll
                for (int g = 0; g < kGroups; g++) t += partial[g][threadIdx.x];
                const size_t row = (blockIdx.x + j / chunks * gridDim.x) * R + threadIdx.x;
                if (row < n) y[row] = t;
            }
#pragma unroll
            for (int i = 0; i < R; i++) acc[i] = 0.0f;
        }
        __syncthreads();  // stage s, and partial, free for the next step
    }
}

// Whether the bulk product takes this call (runtime/gpu/quant.py's q8_bulk alike).
__device__ __forceinline__ bool bulk_fits(const uint8_t* w, size_t k, size_t rows) {
    return rows == 1 && k % 256 == 0 && (reinterpret_cast<size_t>(w) & 15) == 0;
}
#endif

// ---------------------------------------------------------------------------- one row of x streamed (blocks of 256)
//
// qmatvec_q8_1_stream_<F>: cuda sm_90, one row of x of the blocks of 256 of QMATVEC_Q8_STREAM_K,
// where stream_fits. The weights stream into dynamic shared memory through the bulk copy engine,
// beside x's row (one bulk copy of the image x's quantization writes of it). A block takes groups
// of kStreamRows<F> weight rows (b, b + G, .. of the grid G), group i by reading warp i % warps,
// each group chunk by chunk (at most kStreamChunk<F> blocks a row); a warp's chunks go to its own
// slots in turn, as many as the launch's dynamic shared memory holds (two at least). One warp fills
// the slots, its lane i those of warp i: a round of the lanes waits side by side for each one's
// slot to be freed, then issues their copies. No block-wide barrier past x's copy, and no warp
// waits for another: a warp waits only for its own slot. A lane takes whole blocks of a chunk
// (lane, lane + 32: two at once where the chunk has 64), x's block loaded once for the warp's rows.
// Loads out of shared memory need no 16-byte pieces to keep the L1's wavefronts few: a block of 110
// or 210 bytes (q3_K, q6_K; 2-byte aligned) is read word by word and realigned by one funnel shift
// a word. Each row's sum is taken in one order whatever the grid: any grid gives the same bits.
//
// A block is the reading warps and the filling one, at most QMATVEC_Q8_STREAM_WARPS + 1 warps (the
// launch bounds): the runtime launches fewer where two slots a warp would not fit (q6_K's blocks
// of 210 bytes; runtime/gpu/quant.py's stream_warps), and the kernel counts them from blockDim.
// The formats of QMATVEC_Q8_STREAM_PAIRS (q2_K, q3_K) take twice the rows a step, x's block loaded
// once for both; those of QMATVEC_Q8_STREAM_PAIR_WARPS_K (q3_K) at most QMATVEC_Q8_STREAM_PAIR_WARPS
// reading warps (their own launch bounds: more registers a thread).
template <typename F> constexpr bool kStreamPairs = kBlock256In<F, OPGEN_QMATVEC_Q8_STREAM_PAIRS>;
template <typename F>
constexpr bool kStreamPairWarps = kStreamPairs<F> && kBlock256In<F, OPGEN_QMATVEC_Q8_STREAM_PAIR_WARPS_K>;
template <typename F>
constexpr int kStreamThreads =
    OPGEN_LANE_GROUP * ((kStreamPairWarps<F> ? OPGEN_QMATVEC_Q8_STREAM_PAIR_WARPS : OPGEN_QMATVEC_Q8_STREAM_WARPS) + 1);
template <typename F> constexpr int kStreamRows = OPGEN_QMATVEC_Q8_STREAM_ROWS * (kStreamPairs<F> ? 2 : 1);
constexpr int kStreamSlots = 64;  // at most, of all warps
constexpr uint32_t kStreamPad = 16;  // past the stages: a block's last aligned word may read 2 bytes on

// x's row in shared memory, for nb blocks of 256: the quants, 16 pieces of 16 bytes a block, block
// b's at piece 17 b (a quarter warp's lanes, blocks b..b + 7, read 8 bank groups); then the units'
// d, units 4c..4c + 3 of block b a float4 at c nb + b; then the sums of their halves' quants (s0,
// s1: 16-bit integers in a word, s0 low), units 4c..4c + 3 of block b a uint4 at c nb + b: a warp's
// lanes read neighbouring pieces.
constexpr uint32_t kStreamXQuants = 17 * 16;
__device__ __forceinline__ uint32_t stream_x_bytes(uint32_t nb) { return nb * (kStreamXQuants + 32 + 32); }

// Where x's quantization also writes x's row in that layout (its image, after the row's q8_1 in
// xq; a block's 17th piece zeros), which the stream product copies into shared memory whole, one
// bulk copy: one row of x, k a multiple of 2048 (the calls stream_fits can take; runtime/gpu/
// quant.py's x_q8_1_bytes counts the image alike).
__device__ __forceinline__ bool x_has_stream_image(size_t rows, size_t k) { return rows == 1 && k % 2048 == 0; }
template <typename T> __device__ __forceinline__ T* stream_x_image(T* xq, size_t k) { return xq + k + k / 2; }

#if OPGEN_QMATVEC_BULK
__device__ __forceinline__ int stream_warps() { return (int)(blockDim.x / 32) - 1; }

template <typename F> constexpr bool kStream = kBlock256In<F, OPGEN_QMATVEC_Q8_STREAM_K>;
// Blocks a chunk holds of a weight row at most: QMATVEC_Q8_STREAM_BLOCKS, twice that for the
// formats of QMATVEC_Q8_STREAM_WIDE_K.
template <typename F>
constexpr uint32_t kStreamChunk = (uint32_t)OPGEN_QMATVEC_Q8_STREAM_BLOCKS * (kBlock256In<F, OPGEN_QMATVEC_Q8_STREAM_WIDE_K> ? 2u : 1u);

// Whether F's stream product lets the next kernel, when launched programmatically (x's
// quantization for the next product among them), start as its blocks end (QMATVEC_Q8_STREAM_RELEASE),
// and whether only once its filling warp has asked for its last copies (_RELEASE_LATE).
template <typename F> constexpr bool kStreamRelease = kBlock256In<F, OPGEN_QMATVEC_Q8_STREAM_RELEASE>;
template <typename F> constexpr bool kStreamReleaseLate = kStreamRelease<F> && kBlock256In<F, OPGEN_QMATVEC_Q8_STREAM_RELEASE_LATE>;

__device__ __forceinline__ uint32_t dynamic_shared_bytes() {
    uint32_t v;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(v));
    return v;
}

// Words First..First + N - 1 of a block at base + sh / 8 bytes (base 4-aligned, sh 0 or 16).
template <int First, int N, bool kAligned>
__device__ __forceinline__ void stage_words(const uint32_t* base, uint32_t sh, uint32_t (&w)[N]) {
    uint32_t a[N + 1];
#pragma unroll
    for (int i = 0; i < N + (kAligned ? 0 : 1); i++) a[i] = base[First + i];
#pragma unroll
    for (int i = 0; i < N; i++) w[i] = kAligned ? a[i] : __funnelshift_r(a[i], a[i + 1], sh);
}

// x's block g in shared memory (stream_x_bytes' layout).
struct stream_x {
    const uint4* q;      // the block's 16 quant pieces
    const float4* d;     // + c nb: units 4c..
    const uint4* sums;   // + c nb: units 4c..
    uint32_t nb;
    template <int V> __device__ __forceinline__ float unit_d() const {
        const float4 v = d[(V >> 2) * nb];
        return (V & 3) == 0 ? v.x : (V & 3) == 1 ? v.y : (V & 3) == 2 ? v.z : v.w;
    }
    template <int V> __device__ __forceinline__ int unit_sums() const {
        const uint4 v = sums[(V >> 2) * nb];
        return (int)((V & 3) == 0 ? v.x : (V & 3) == 1 ? v.y : (V & 3) == 2 ? v.z : v.w);
    }
};

// Byte B of v sign-extended (one prmt).
template <int B> __device__ __forceinline__ int signed_byte(uint32_t v) {
    int r;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(r) : "r"(v), "n"(B | (8 | B) << 4 | (8 | B) << 8 | (8 | B) << 12));
    return r;
}
// Byte B of v zero-extended (one prmt).
template <int B> __device__ __forceinline__ int unsigned_byte(uint32_t v) {
    int r;
    asm("prmt.b32 %0, %1, 0, %2;" : "=r"(r) : "r"(v), "n"(B | 4 << 4 | 4 << 8 | 4 << 12));
    return r;
}

// A stage's block of 256 and its dot product with x, unit of 32 by unit (v = 4n + j: weights
// 128n + 32j ..), the rows of a warp sharing x's loads: load(p, w) reads the block at p, part<V>
// adds unit V's products (x's quants q; x, its unit's d and d s) to the block's sums, value the
// block's total.
template <typename F> struct stream_block;

// q2_K: 84 bytes (4-aligned): scales[16], qs[64], d, dmin. Bit pair j of qs masked in place (4^j q,
// unsigned), each half's sum times its 4-bit scale in integers; its mins against the sums of x's
// halves in integers (one dp2a), times x's d. The scales' nibbles are split once a block: a unit
// then takes its scales with one prmt each and its mins as they lie (dp2a's low or high bytes).
template <> struct stream_block<q2_k> {
    struct W {
        uint32_t scale[4], min[4], qs[16], dm;  // scale, min: byte b of word c the nibbles of scales[4c + b]
    };
    struct Sums {
        float s, m;
    };
    static __device__ __forceinline__ void load(const uint8_t* p, W& w) {
        const uint32_t* base = reinterpret_cast<const uint32_t*>(p);
        uint32_t sc[4];
        stage_words<0, 4, true>(base, 0u, sc);
#pragma unroll
        for (int c = 0; c < 4; c++) w.scale[c] = sc[c] & 0x0F0F0F0Fu, w.min[c] = (sc[c] >> 4) & 0x0F0F0F0Fu;
        stage_words<4, 16, true>(base, 0u, w.qs);
        w.dm = base[20];
    }
    template <int V> static __device__ __forceinline__ void part(const W& w, const uint32_t (&q)[8], const stream_x& x, Sums& s) {
        constexpr int n = V >> 2, j = V & 3, c = 2 * n + (j >> 1), b = 2 * (j & 1);  // bytes b, b + 1: halves 0, 1
        int p[2] = {0, 0};
#pragma unroll
        for (int i = 0; i < 8; i++) p[i >> 2] = dot4_unsigned(w.qs[8 * n + i] & (0x03030303u << (2 * j)), q[i], p[i >> 2]);
        const int t = unsigned_byte<b>(w.scale[c]) * p[0] + unsigned_byte<b + 1>(w.scale[c]) * p[1];
        const int m = b ? __dp2a_hi(x.unit_sums<V>(), (int)w.min[c], 0) : __dp2a_lo(x.unit_sums<V>(), (int)w.min[c], 0);
        const float d = x.unit_d<V>();
        s.s = fmaf(d * (1.0f / (float)(1 << (2 * j))), (float)t, s.s);
        s.m = fmaf(d, (float)m, s.m);
    }
    static __device__ __forceinline__ float value(const W& w, const Sums& s) { return half_lo(w.dm) * s.s - half_hi(w.dm) * s.m; }
};

// q3_K: 110 bytes (2-aligned): hmask[32], qs[64], scales[12], d; read as aligned words shifted by
// (p % 4) * 8. A weight is q - 4 nb (nb: its hmask bit clear): bit pair j masked in place (4^j q)
// and nb masked in place (2^(4n + j) nb), two unsigned dot products, their difference scaled to a
// common 2^e in integers; each half's sum times 4 (s - 32), its scale as a signed byte.
template <> struct stream_block<q3_k> {
    struct W {
        uint32_t hm[8], qs[16], sc[3], d;
    };
    struct Sums {
        float s;
    };
    static __device__ __forceinline__ void load(const uint8_t* p, W& w) {
        const uint32_t off = (uint32_t)reinterpret_cast<size_t>(p) & 3u;  // 0 or 2
        const uint32_t* base = reinterpret_cast<const uint32_t*>(p - off);  // still a shared pointer: LDS
        const uint32_t sh = off * 8;
        stage_words<0, 8, false>(base, sh, w.hm);
        stage_words<8, 16, false>(base, sh, w.qs);
        stage_words<24, 3, false>(base, sh, w.sc);
        w.d = base[27] >> sh;  // its low half
    }
    // 4 (s - 32) as signed bytes for scales 8n + 4c .. + 3: low nibbles of sc[c] (shift 4n), high
    // pairs of sc[2] (shift 4n + 2c) into bits 2..7, the top bit flipped.
    template <int N, int C> static __device__ __forceinline__ uint32_t scales(const W& w) {
        const uint32_t low = ((w.sc[C] >> (4 * N)) << 2) & 0x3C3C3C3Cu;
        const uint32_t high = ((w.sc[2] >> (4 * N + 2 * C)) << 6) & 0xC0C0C0C0u;
        return (low | high) ^ 0x80808080u;
    }
    template <int V> static __device__ __forceinline__ void part(const W& w, const uint32_t (&q)[8], const stream_x& x, Sums& s) {
        constexpr int n = V >> 2, j = V & 3;
        constexpr int e = 2 * j > 4 * n + j - 2 ? 2 * j : 4 * n + j - 2;
        int c[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int pq = 0, pn = 0;
#pragma unroll
            for (int i = 4 * h; i < 4 * h + 4; i++) {
                pq = dot4_unsigned(w.qs[8 * n + i] & (0x03030303u << (2 * j)), q[i], pq);
                pn = dot4_unsigned(~w.hm[i] & (0x01010101u << (4 * n + j)), q[i], pn);
            }
            c[h] = pq * (1 << (e - 2 * j)) - pn * (1 << (e + 2 - 4 * n - j));
        }
        const uint32_t sc = scales<n, j / 2>(w);  // byte 2 (j % 2) + h: half h
        const int t = signed_byte<2 * (j & 1)>(sc) * c[0] + signed_byte<2 * (j & 1) + 1>(sc) * c[1];
        s.s = fmaf(x.unit_d<V>() * (1.0f / (float)(4 << e)), (float)t, s.s);
    }
    static __device__ __forceinline__ float value(const W& w, const Sums& s) { return half_lo(w.d) * s.s; }
};

// q6_K: 210 bytes (2-aligned): ql[128], qh[64], scales[16] (signed), d; read as aligned words
// shifted by (p % 4) * 8. Unit V = 4n + j: nibble j / 2 of ql's run 64n + 32 (j % 2) (masked in
// place: 16^(j / 2) q), the bit pair j of qh[32n ..] (masked in place: 4^j h), two unsigned dot
// products in integers to a common 2^e; each half's sum times its signed scale; the minus 32 of
// every quant against the sums of x's halves in integers (one dp2a of the scales), times x's d.
template <> struct stream_block<q6_k> {
    struct W {
        uint32_t ql[32], qh[16], sc[4], d;
    };
    struct Sums {
        float s, m;
    };
    static __device__ __forceinline__ void load(const uint8_t* p, W& w) {
        const uint32_t off = (uint32_t)reinterpret_cast<size_t>(p) & 3u;  // 0 or 2
        const uint32_t* base = reinterpret_cast<const uint32_t*>(p - off);  // still a shared pointer: LDS
        const uint32_t sh = off * 8;
        stage_words<0, 32, false>(base, sh, w.ql);
        stage_words<32, 16, false>(base, sh, w.qh);
        stage_words<48, 4, false>(base, sh, w.sc);
        w.d = base[52] >> sh;  // its low half
    }
    template <int V> static __device__ __forceinline__ void part(const W& w, const uint32_t (&q)[8], const stream_x& x, Sums& s) {
        constexpr int n = V >> 2, j = V & 3, e = 4 * (j >> 1);
        int c[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int pl = 0, ph = 0;
#pragma unroll
            for (int i = 4 * h; i < 4 * h + 4; i++) {
                pl = dot4_unsigned(w.ql[16 * n + 8 * (j & 1) + i] & (0x0F0F0F0Fu << e), q[i], pl);
                ph = dot4_unsigned(w.qh[8 * n + i] & (0x03030303u << (2 * j)), q[i], ph);
            }
            c[h] = pl + ph * ((j & 1) ? 4 : 16);  // 2^e (q + 16 h)
        }
        const uint32_t sc = w.sc[2 * n + (j >> 1)];  // byte 2 (j % 2) + h: half h's scale
        const int s0 = signed_byte<2 * (j & 1)>(sc), s1 = signed_byte<2 * (j & 1) + 1>(sc);
        const float d = x.unit_d<V>();
        s.s = fmaf(d * (1.0f / (float)(1 << e)), (float)(s0 * c[0] + s1 * c[1]), s.s);
        s.m = fmaf(d, (float)__dp2a_lo(x.unit_sums<V>(), (int)(sc >> (16 * (j & 1))), 0), s.m);  // bytes 0, 1: s0, s1
    }
    static __device__ __forceinline__ float value(const W& w, const Sums& s) { return half_lo(w.d) * (s.s - 32.0f * s.m); }
};

// Unit V of x's block against the warp's rows' blocks w.
template <typename F, int V>
__device__ __forceinline__ void stream_unit(const typename stream_block<F>::W (&w)[kStreamRows<F>], const stream_x& x,
                                            typename stream_block<F>::Sums (&s)[kStreamRows<F>]) {
    const uint4 lo = x.q[2 * V], hi = x.q[2 * V + 1];
    const uint32_t q[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
#pragma unroll
    for (int r = 0; r < kStreamRows<F>; r++) stream_block<F>::template part<V>(w[r], q, x, s[r]);
}

// x's block g of the row in shared memory (stream_x_bytes' layout at xs).
__device__ __forceinline__ stream_x stream_x_at(const uint8_t* xs, uint32_t nb, int g) {
    stream_x x;
    x.q = reinterpret_cast<const uint4*>(xs + g * kStreamXQuants), x.nb = nb;
    x.d = reinterpret_cast<const float4*>(xs + nb * kStreamXQuants) + g;
    x.sums = reinterpret_cast<const uint4*>(xs + nb * (kStreamXQuants + 32)) + g;
    return x;
}

// Unit V of NB blocks side by side (each its x block).
template <typename F, int V, int NB>
__device__ __forceinline__ void stream_units(const typename stream_block<F>::W (&w)[NB][kStreamRows<F>], const stream_x (&x)[NB],
                                             typename stream_block<F>::Sums (&s)[NB][kStreamRows<F>]) {
#pragma unroll
    for (int i = 0; i < NB; i++) stream_unit<F, V>(w[i], x[i], s[i]);
}

// The products of the warp's kStreamRows<F> rows of a slot (rows[r]) at NB blocks of the chunk, b,
// b + 32, .. (x's blocks g, g + 32, ..), side by side: NB independent chains for a lane, added to
// acc block by block.
template <typename F, int NB>
__device__ __forceinline__ void stream_dots(const uint8_t* (&rows)[kStreamRows<F>], const uint8_t* xs, uint32_t nb, int b, int g,
                                            float (&acc)[kStreamRows<F>]) {
    typedef stream_block<F> B;
    typename B::W w[NB][kStreamRows<F>];
    typename B::Sums s[NB][kStreamRows<F>];
    stream_x x[NB];
#pragma unroll
    for (int i = 0; i < NB; i++) {
#pragma unroll
        for (int r = 0; r < kStreamRows<F>; r++) {
            B::load(rows[r] + (size_t)(b + 32 * i) * F::kBytes, w[i][r]);
            s[i][r] = typename B::Sums{};
        }
        x[i] = stream_x_at(xs, nb, g + 32 * i);
    }
    stream_units<F, 0>(w, x, s), stream_units<F, 1>(w, x, s), stream_units<F, 2>(w, x, s), stream_units<F, 3>(w, x, s);
    stream_units<F, 4>(w, x, s), stream_units<F, 5>(w, x, s), stream_units<F, 6>(w, x, s), stream_units<F, 7>(w, x, s);
#pragma unroll
    for (int i = 0; i < NB; i++) {
#pragma unroll
        for (int r = 0; r < kStreamRows<F>; r++) acc[r] += B::value(w[i][r], s[i][r]);
    }
}

// A warp's chunk of `blocks` blocks (x's blocks g ..) into acc: a lane's blocks lane, lane + 32,
// .., two at once where the chunk has 64 of them.
template <typename F>
__device__ __forceinline__ void stream_chunk(const uint8_t* (&rows)[kStreamRows<F>], const uint8_t* xs, uint32_t nb, int blocks, int g,
                                             int lane, float (&acc)[kStreamRows<F>]) {
    if constexpr (kStreamRows<F> == 1 && kStreamChunk<F> >= 64) {
        if (blocks == 64) return stream_dots<F, 2>(rows, xs, nb, lane, g + lane, acc);
    }
    for (int b = lane; b < blocks; b += 32) stream_dots<F, 1>(rows, xs, nb, b, g + b, acc);
}

// A block's share of the stream: its groups of kStreamRows<F> weight rows b, b + G, .. (G the grid),
// group i read by warp i % warps; warp v's step i: its group i / chunks, chunk i % chunks (blocks
// c * cb ..), in its slot v * per + i % per. 32-bit counts: a step's divisions are short.
template <typename F>
struct stream_plan {
    size_t n, groups;  // rows; groups of the block
    uint32_t nb, cb, chunks, slot_bytes, per, warps;
    bool once;  // the copies' lines evicted first from L2 (stream_evict_first)
    __device__ __forceinline__ size_t first_row(uint32_t v, uint32_t i) const {
        return ((size_t)blockIdx.x + ((size_t)v + (size_t)warps * (i / chunks)) * gridDim.x) * kStreamRows<F>;
    }
    __device__ __forceinline__ uint32_t blocks(uint32_t c) const { return nb - c * cb < cb ? nb - c * cb : cb; }
    __device__ __forceinline__ uint32_t steps(uint32_t v) const {
        return v < warps && v < groups ? (uint32_t)((groups - v + warps - 1) / warps) * chunks : 0u;
    }
    __device__ __forceinline__ uint32_t slot(uint32_t v, uint32_t i) const { return v * per + i % per; }
};

// Warp v's step i into its slot by lane v of the filling warp: the slot's bytes counted on its
// `full`, a copy a row (one of the group's rows where a chunk is the whole row).
template <typename F>
__device__ __forceinline__ void stream_issue(uint8_t* slots, uint64_t* full, const uint8_t* w, const stream_plan<F>& pl, uint32_t v,
                                             uint32_t i) {
    const uint32_t s = pl.slot(v, i), c = i % pl.chunks, bytes = pl.blocks(c) * F::kBytes;
    const size_t n0 = pl.first_row(v, i);
    const uint32_t rows = (uint32_t)(pl.n - n0 < (size_t)kStreamRows<F> ? pl.n - n0 : (size_t)kStreamRows<F>);
    uint8_t* dst = slots + (size_t)s * pl.slot_bytes;
    const uint8_t* src = w + n0 * ((size_t)pl.nb * F::kBytes) + (size_t)c * pl.cb * F::kBytes;
    stage_expect(&full[s], bytes * rows);
    if (pl.chunks == 1) return stage_copy(dst, src, bytes * rows, &full[s], pl.once);
    for (uint32_t r = 0; r < rows; r++) stage_copy(dst + r * pl.cb * F::kBytes, src + (size_t)r * pl.nb * F::kBytes, bytes, &full[s], pl.once);
}

// Whether the weights' copies ask L2 to evict their lines first: the formats of
// QMATVEC_Q8_STREAM_EVICT_FIRST, weights of at least QMATVEC_Q8_STREAM_EVICT_FIRST_BYTES (more than
// L2 holds: read once a product, they would push out x's row, which x's quantization reads again
// before the next product; smaller weights may stay in L2 for the next call).
template <typename F> __device__ __forceinline__ bool stream_evict_first(size_t n, uint32_t nb) {
    return kBlock256In<F, OPGEN_QMATVEC_Q8_STREAM_EVICT_FIRST> && n * nb * F::kBytes >= (size_t)OPGEN_QMATVEC_Q8_STREAM_EVICT_FIRST_BYTES;
}

template <typename F>
__device__ void stream_product(const uint8_t* __restrict__ w, const x_source& xs, float* __restrict__ y, size_t n) {
    extern __shared__ __align__(128) uint8_t dynamic[];
    __shared__ uint64_t full[kStreamSlots], empty[kStreamSlots], x_full;
    stream_plan<F> pl;
    pl.n = n, pl.nb = (uint32_t)(xs.k / 256), pl.warps = (uint32_t)stream_warps();
    pl.cb = pl.nb < kStreamChunk<F> ? pl.nb : kStreamChunk<F>;
    pl.chunks = (pl.nb + pl.cb - 1) / pl.cb, pl.slot_bytes = (uint32_t)kStreamRows<F> * pl.cb * F::kBytes;
    pl.once = stream_evict_first<F>(n, pl.nb);
    const size_t all = (n + kStreamRows<F> - 1) / kStreamRows<F>;
    pl.groups = blockIdx.x < all ? (all - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    const uint32_t x_bytes = stream_x_bytes(pl.nb);
    const uint32_t room = (dynamic_shared_bytes() - x_bytes - kStreamPad) / (pl.warps * pl.slot_bytes);
    pl.per = room < kStreamSlots / pl.warps ? room : kStreamSlots / pl.warps;
    uint8_t* slots = dynamic + x_bytes;
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const uint32_t v = warp == (int)pl.warps ? (uint32_t)lane : (uint32_t)warp;  // whose slots
    const uint32_t steps = pl.steps(v);
    if (threadIdx.x == 0) {
        for (uint32_t s = 0; s < pl.per * pl.warps; s++) stage_init(&full[s]), stage_init(&empty[s]);
        stage_init(&x_full);
        stage_init_fence();
    }
    __syncthreads();
    // The first slots fill while x is quantized (the kernel before, which writes no weights: the
    // weights are read before wait_for_predecessor, x after it) and copied; the others after. But
    // x's row, read after the wait, lands behind those copies: where the warps have few steps
    // (QMATVEC_Q8_STREAM_FIRST_LATE), their first copies wait for x's row to land instead.
    const bool late = kBlock256In<F, OPGEN_QMATVEC_Q8_STREAM_FIRST_LATE> && pl.steps(0) < OPGEN_QMATVEC_Q8_STREAM_FIRST_LATE_STEPS;
    if (!late && warp == (int)pl.warps && steps > 0) stream_issue<F>(slots, full, w, pl, v, 0);
    // Released, the next kernel (x's quantization, whose small blocks fit beside this one's:
    // DYNAMIC_SHARED_SPARE) lets the next product's blocks take the multiprocessors as this one's
    // end; where the warps have few steps (QMATVEC_Q8_STREAM_RELEASE_STEPS) their first copies
    // would draw on this one's last, and the next kernel starts at its end. The formats of
    // QMATVEC_Q8_STREAM_RELEASE_LATE release once their last copies are asked for (below).
    const bool release = kStreamRelease<F> && pl.steps(0) >= (uint32_t)OPGEN_QMATVEC_Q8_STREAM_RELEASE_STEPS;
    if constexpr (!kStreamReleaseLate<F>) {
        if (release) opgen::release_dependents();
    }
    opgen::wait_for_predecessor();
    // x's row whole, one bulk copy of its image (x's quantization wrote it: x_has_stream_image),
    // asked for ahead of the next chunks; the filling warp of QMATVEC_Q8_STREAM_FILL_EARLY asks
    // for those before it lands.
    if (warp == (int)pl.warps && lane == 0) stage_expect(&x_full, x_bytes), stage_copy(dynamic, stream_x_image(xs.xq, xs.k), x_bytes, &x_full);
    if (warp != (int)pl.warps || late || !kBlock256In<F, OPGEN_QMATVEC_Q8_STREAM_FILL_EARLY>) stage_wait(&x_full, 0u);
    if (warp == (int)pl.warps) {  // round i: lane v fills warp v's step i once warp v freed its slot
        for (uint32_t i = late ? 0u : 1u; __any_sync(0xFFFFFFFFu, i < steps); i++) {
            if (i < steps && i >= pl.per) stage_wait(&empty[pl.slot(v, i)], ((i / pl.per) & 1u) ^ 1u);
            __syncwarp();
            if (i < steps) stream_issue<F>(slots, full, w, pl, v, i);
        }
        if constexpr (kStreamReleaseLate<F>) {
            if (release) opgen::release_dependents();  // one thread's call releases for the block
        }
        return;
    }
    float acc[kStreamRows<F>];
#pragma unroll
    for (int r = 0; r < kStreamRows<F>; r++) acc[r] = 0.0f;
    for (uint32_t i = 0, c = 0; i < steps; i++) {  // c: i % chunks
        const uint32_t s = pl.slot(v, i);
        stage_wait(&full[s], (i / pl.per) & 1u);
        const uint8_t* rows[kStreamRows<F>];
#pragma unroll
        for (int r = 0; r < kStreamRows<F>; r++) rows[r] = slots + (size_t)s * pl.slot_bytes + r * pl.cb * F::kBytes;
        stream_chunk<F>(rows, dynamic, pl.nb, (int)pl.blocks(c), (int)(c * pl.cb), lane, acc);
        __syncwarp();
        if (lane == 0) stage_arrive(&empty[s]);
        if (++c == pl.chunks) {  // the group's last chunk: each row's total
            c = 0;
            const size_t n0 = pl.first_row(v, i);
#pragma unroll
            for (int r = 0; r < kStreamRows<F>; r++) {
#pragma unroll
                for (int o = 16; o > 0; o >>= 1) acc[r] += __shfl_xor_sync(0xFFFFFFFFu, acc[r], o);
                if (lane == 0 && n0 + r < n) y[n0 + r] = acc[r];
                acc[r] = 0.0f;
            }
        }
    }
}
#endif

// Whether the stream product takes this call (runtime/gpu/quant.py's q8_stream alike, which
// launches it only so): x's image written (x_has_stream_image: one row of x, k a multiple of 2048,
// whole 16-byte runs), w 16-byte aligned, a lane a block (at least QMATVEC_Q8_STREAM_BLOCKS blocks
// a row), and two slots a reading warp beside x in the launch's dynamic shared memory (k at most
// 2^24: x's bytes count in 32 bits).
template <typename F>
__device__ __forceinline__ bool stream_fits(const uint8_t* w, size_t k, size_t rows) {
#if OPGEN_QMATVEC_BULK
    const uint32_t nb = (uint32_t)(k / 256), cb = nb < kStreamChunk<F> ? nb : kStreamChunk<F>;
    const size_t need = (size_t)stream_x_bytes(nb) + 2 * (size_t)(stream_warps() * kStreamRows<F>) * cb * F::kBytes + kStreamPad;
    return x_has_stream_image(rows, k) && stream_warps() >= 1 && 2 * stream_warps() <= kStreamSlots &&
           nb >= (uint32_t)OPGEN_QMATVEC_Q8_STREAM_BLOCKS && k <= (1u << 24) && (reinterpret_cast<size_t>(w) & 15) == 0 &&
           need <= dynamic_shared_bytes();
#else
    return false;
#endif
}

// Where the stream product does not take the call (another format, device or shape): each group
// of lanes a pair of weight row and x row, its units in turn (correct for any launch; the runtime
// launches qmatvec_q8_1_stream_<F> only where stream_fits).
template <typename F>
__device__ void stream_elsewhere(const uint8_t* __restrict__ w, const x_source& xs, float* __restrict__ y, size_t n, size_t rows) {
    const size_t groups = (size_t)gridDim.x * (blockDim.x / OPGEN_LANE_GROUP);
    const size_t first = (size_t)blockIdx.x * (blockDim.x / OPGEN_LANE_GROUP) + threadIdx.x / OPGEN_LANE_GROUP;
    const unsigned int lane = threadIdx.x % OPGEN_LANE_GROUP;
    for (size_t item = first; item < n * rows; item += groups) {  // the same trips for a whole group
        float acc[1];
        item_sums<F, 1, 1, false, false>(w, xs, n, rows, item % n, item / n, lane, OPGEN_LANE_GROUP, acc);
        int base;
        bool writer;
        group_totals<1>(acc, lane, base, writer);
        if (writer) y[item] = acc[0];
    }
}

// Weight rows per item by x rows class: ops.yaml's kernel facts, measured apart for the blocks of
// 256 (QMATVEC_Q8_ROWS_K_X*: their unit decodes two halves and wants fewer rows at once; 2 at 2
// rows of x for those of QMATVEC_Q8_ROWS_K_X2_TWO, 2 at one row for those of _ROWS_K_X1_TWO), for
// float weights (QMATVEC_Q8_ROWS_F_X*: a unit holds 8 or 16 weights as f32 in registers) and for
// the blocks of 32 (QMATVEC_Q8_ROWS_X*).
template <typename F> struct item_rows {
    static constexpr int f = kFamily<F>;
    static constexpr bool k_two = kBlock256In<F, OPGEN_QMATVEC_Q8_ROWS_K_X2_TWO>;
    static constexpr bool k_one_two = kBlock256In<F, OPGEN_QMATVEC_Q8_ROWS_K_X1_TWO>;
    static constexpr int x1 = k_one_two ? 2
                              : f == 1 ? OPGEN_QMATVEC_Q8_ROWS_K_X1
                              : f == 2 ? OPGEN_QMATVEC_Q8_ROWS_F_X1
                                       : OPGEN_QMATVEC_Q8_ROWS_X1;
    static constexpr int x2 = k_two    ? 2
                              : f == 1 ? OPGEN_QMATVEC_Q8_ROWS_K_X2
                              : f == 2 ? OPGEN_QMATVEC_Q8_ROWS_F_X2
                                       : OPGEN_QMATVEC_Q8_ROWS_X2;
    static constexpr int x4 = f == 1 ? OPGEN_QMATVEC_Q8_ROWS_K_X4 : f == 2 ? OPGEN_QMATVEC_Q8_ROWS_F_X4 : OPGEN_QMATVEC_Q8_ROWS_X4;
    static constexpr int x8 = f == 1 ? OPGEN_QMATVEC_Q8_ROWS_K_X8 : f == 2 ? OPGEN_QMATVEC_Q8_ROWS_F_X8 : OPGEN_QMATVEC_Q8_ROWS_X8;
};

// qmatvec_q8_1_<F> (3 and more rows of x: up to 4, else 8 at a time), qmatvec_q8_1_few_<F> (1 or
// 2 rows) and qmatvec_q8_1_one_<F> (1 row where kOneApart; each built apart, its launch bounds and
// shared memory its own: the one row's copy of x is not the two rows' too), each x class its
// template with the weight rows per item of item_rows<F>. Each is correct for any rows (more rows
// take more groups). AMD (compiled, never run here): one row of x at a time in one and few (one
// instance for both), else 4 at a time, 2 weight rows an item; its dot4 is four multiply-adds, and
// fewer instances keep hiprtc's compile short.
// qmatvec_q8_1_mma_<F>: the products on the tensor cores, float weights (QMATVEC_Q8_MMA_F_TILES) and
// the blocks of 32 (kMmaTiles tiles an item), built apart so that their registers per thread are
// not those of the dp4a product of many rows of x; qmatvec_q8_1_mma_wide_<F>: float weights of
// many rows (items of QMATVEC_Q8_MMA_TILES_F tiles), apart again for its own launch bounds.
// runtime/gpu/quant.py's q8_mma says when the tensor cores multiply (QMATVEC_Q8_MMA_F_FROM,
// _MMA_Q_FROM, _MMA_Q_N, _MMA_Q_X4_BLOCKS) and q8_entry which entry (_MMA_WIDE_N). Where F or the
// device has no such product (the blocks of 256; the blocks of 32 in the wide entry; AMD, cuda
// before sm_80), never launched, an entry is the dp4a product of 4 rows of x at a time: correct
// for any rows and grid all the same.
// Launch bounds, blocks per multiprocessor: the blocks of 32 ask for QMATVEC_Q8_MMA_Q_MIN_BLOCKS
// (warps to keep their stages in flight), float weights for QMATVEC_Q8_MMA_F_MIN_BLOCKS (warps
// to wait out latency where the weight has few rows), the wide entry for QMATVEC_Q8_MMA_F_WIDE_MIN_BLOCKS.
template <typename F>
constexpr int kMmaMinBlocks = kFamily<F> == 0 ? OPGEN_QMATVEC_Q8_MMA_Q_MIN_BLOCKS
                              : kFamily<F> == 2 ? OPGEN_QMATVEC_Q8_MMA_F_MIN_BLOCKS
                                                : 1;
// Threads per block: float weights QMATVEC_Q8_MMA_F_THREADS and _MMA_F_WIDE_THREADS
// (runtime/gpu/quant.py's q8_threads launches them so), the others kThreads.
template <typename F> constexpr int kMmaThreads = kFamily<F> == 2 ? OPGEN_QMATVEC_Q8_MMA_F_THREADS : kThreads;
template <typename F> constexpr int kMmaWideThreads = kFamily<F> == 2 ? OPGEN_QMATVEC_Q8_MMA_F_WIDE_THREADS : kThreads;
template <typename F> constexpr int kMmaWideMinBlocks = kFamily<F> == 2 ? OPGEN_QMATVEC_Q8_MMA_F_WIDE_MIN_BLOCKS : 1;
// qmatvec_q8_1_one_<F>'s: QMATVEC_Q8_FEW_MIN_BLOCKS; qmatvec_q8_1_few_<F>'s the same, but
// QMATVEC_Q8_FEW_ROOMY_MIN_BLOCKS for the blocks of 32 of QMATVEC_Q8_FEW_ROOMY_BLOCKS: under the
// looser bound NVRTC schedules q4_1's code otherwise (about as many registers, as many blocks
// resident) and its product of 2 rows of x is faster; the others' products are slower.
template <typename F>
constexpr int kFewMinBlocks =
    kBlock32In<F, OPGEN_QMATVEC_Q8_FEW_ROOMY_BLOCKS> ? OPGEN_QMATVEC_Q8_FEW_ROOMY_MIN_BLOCKS : OPGEN_QMATVEC_Q8_FEW_MIN_BLOCKS;

// Programmatic launches (sm_90): the runtime launches every product entry point and x's
// quantization with programmatic stream serialization (ops.yaml's PROGRAMMATIC_KERNELS lists
// them), and each waits for the kernel before it (opgen::wait_for_predecessor) before it touches
// memory (but for the weights, which no kernel writes); x's quantization lets its product start
// at once (opgen::release_dependents), so the product's launch and its blocks' start overlap the
// quantization, and the quantization of the next product is launched as this product's blocks
// end, waiting for it (the stream products of QMATVEC_Q8_STREAM_RELEASE let it start earlier, as
// the float weights' products of one row let the next kernel: few_release).

template <typename F>
__device__ __forceinline__ void qmatvec_q8_1_mma(const uint8_t* w, const float* x, const uint8_t* xq, float* y, size_t n,
                                                 size_t k, size_t rows) {
    const x_source xs = {x, xq, reinterpret_cast<const float2*>(xq + rows * k), k};
#if OPGEN_QMATVEC_MMA
    if constexpr (kFamily<F> == 2) {
        return mma_product<typename weight_type<F>::type, OPGEN_QMATVEC_Q8_MMA_F_TILES, OPGEN_QMATVEC_Q8_MMA_F_DEPTH,
                           kMmaThreads<F>>(w, x, y, n, k, rows);
    }
    if constexpr (kFamily<F> == 0) return q8_mma_product<F>(w, xs, y, n, rows);
#endif
    product<F, 4, 2>(w, xs, y, n, rows);
}

template <typename F>
__device__ __forceinline__ void qmatvec_q8_1_mma_wide(const uint8_t* w, const float* x, const uint8_t* xq, float* y,
                                                      size_t n, size_t k, size_t rows) {
#if OPGEN_QMATVEC_MMA
    if constexpr (kFamily<F> == 2) {
        return mma_product<typename weight_type<F>::type, OPGEN_QMATVEC_Q8_MMA_TILES_F, 2, kMmaWideThreads<F>>(w, x, y, n, k,
                                                                                                               rows);
    }
#endif
    const x_source xs = {x, xq, reinterpret_cast<const float2*>(xq + rows * k), k};
    product<F, 4, 2>(w, xs, y, n, rows);
}

template <typename F>
__device__ __forceinline__ void qmatvec_q8_1_many(const uint8_t* w, const float* x, const uint8_t* xq, float* y, size_t n,
                                                  size_t k, size_t rows) {
    const x_source xs = {x, xq, reinterpret_cast<const float2*>(xq + rows * k), k};
#if OPGEN_HIP
    product<F, 4, 2>(w, xs, y, n, rows);
#else
    if (rows <= 4) {
        if constexpr (kFamily<F> == 0) {  // the blocks of 32: fewer weight rows an item on a narrow weight
            if (n < (size_t)OPGEN_QMATVEC_Q8_NARROW_N) return product<F, 4, OPGEN_QMATVEC_Q8_ROWS_X4_NARROW>(w, xs, y, n, rows);
        }
        product<F, 4, item_rows<F>::x4>(w, xs, y, n, rows);
    } else {
        product<F, 8, item_rows<F>::x8>(w, xs, y, n, rows);
    }
#endif
}

// Whether one row of x of F takes qmatvec_q8_1_one_<F> (runtime/gpu/quant.py's q8_one_apart
// alike): where it copies x into shared memory (kXShared's long units), streams the weights
// through its stages (kBulk) or takes two-block units (kTwoBlocks), so that the entry of two rows
// holds none of them; the other formats' one row stays in qmatvec_q8_1_few_<F>, whose registers
// were measured for both (their one entry, never launched so, takes items of one weight row: an
// instance of product of its own, so that few's stays its only caller and is built as before).
// kTwoBlocks' one entry is few's code with the two-block units for one row: NVRTC schedules the
// same loop slower without few's two-row product beside it (q4_0 at 16384 x 16384 on the H200:
// 42.6-42.8 us against 40.1-40.3), and few keeps its own code (its two rows slower with the units
// in it: 54.8 us against 50.7).
template <typename F> constexpr bool kOneApart = (policy_of<F, 1>::kLong && kXShared<F>) || kBulk<F> || kTwoBlocks<F>;

// One row of x in items of item_rows<F>::x1 weight rows, but for the blocks of 32 of
// QMATVEC_Q8_ROWS_X1_NARROW_BLOCKS on a weight of fewer than QMATVEC_Q8_NARROW_N rows whose groups
// of lanes take the items (at most QMATVEC_Q8_LANE_UNITS units a lane): QMATVEC_Q8_ROWS_X1_NARROW,
// more items in flight (runtime/gpu/quant.py's q8_item_rows alike).
template <typename F, bool kMayTwo = true>
__device__ __forceinline__ void one_row(const uint8_t* __restrict__ w, const x_source& xs, float* __restrict__ y, size_t n,
                                        size_t rows) {
    if constexpr (kBlock32In<F, OPGEN_QMATVEC_Q8_ROWS_X1_NARROW_BLOCKS> && OPGEN_QMATVEC_Q8_ROWS_X1_NARROW != item_rows<F>::x1) {
        // by_groups<F, 1>'s rule, written out as the builds the explore record and the tables
        // timed have it (the call compiled q4_1's entry to other registers: 128 against 121)
        const bool by_lanes = xs.k / 32 <= (size_t)OPGEN_QMATVEC_Q8_LANE_UNITS * OPGEN_LANE_GROUP;
        if (n < (size_t)OPGEN_QMATVEC_Q8_NARROW_N && by_lanes) {
            return product<F, 1, OPGEN_QMATVEC_Q8_ROWS_X1_NARROW, kMayTwo>(w, xs, y, n, rows);
        }
    }
    product<F, 1, item_rows<F>::x1, kMayTwo>(w, xs, y, n, rows);
}

template <typename F>
__device__ __forceinline__ void qmatvec_q8_1_one(const uint8_t* w, const float* x, const uint8_t* xq, float* y, size_t n,
                                                 size_t k, size_t rows) {
    const x_source xs = {x, xq, reinterpret_cast<const float2*>(xq + rows * k), k};
#if OPGEN_QMATVEC_BULK
    if constexpr (kBulk<F>) {  // the bulk product waits for the kernel before itself
        if (bulk_fits(w, k, rows)) return bulk_product<F>(w, xs, y, n);  // the same for the whole grid
    }
#endif
    opgen::wait_for_predecessor();
#if OPGEN_HIP
    product<F, 1, 2>(w, xs, y, n, rows);
#else
    if constexpr (kTwoBlocks<F>) {  // few's code, its one row in two-block units (see kOneApart)
        if (rows == 1) {
            one_row<F>(w, xs, y, n, rows);
        } else {
            product<F, 2, item_rows<F>::x2>(w, xs, y, n, rows);
        }
    } else if constexpr (kOneApart<F>) {
        one_row<F>(w, xs, y, n, rows);
    } else {
        product<F, 1, 1>(w, xs, y, n, rows);
    }
#endif
}

// Float weights by one row of x (cuda) ask for their first QMATVEC_Q8_FLOAT_EARLY steps of weights
// before they wait for the kernel before (items' kEarly); every other product of the few entries
// waits first.
template <typename F> constexpr int kFloatEarly = kFamily<F> == 2 && !OPGEN_HIP ? OPGEN_QMATVEC_Q8_FLOAT_EARLY : 0;

template <typename F>
__device__ __forceinline__ void qmatvec_q8_1_few(const uint8_t* w, const float* x, const uint8_t* xq, float* y, size_t n,
                                                 size_t k, size_t rows) {
    const x_source xs = {x, xq, reinterpret_cast<const float2*>(xq + rows * k), k};
    if constexpr (kFloatEarly<F> > 0) {  // one_row's product of float weights, waiting in its first item
        if (rows == 1) return items<F, 1, item_rows<F>::x1, false, false, kFloatEarly<F>>(w, xs, y, n, rows);
    }
    opgen::wait_for_predecessor();
#if OPGEN_HIP
    product<F, 1, 2>(w, xs, y, n, rows);
#else
    if constexpr (kOneApart<F> && !kTwoBlocks<F>) {  // one row: qmatvec_q8_1_one_<F>; this is correct for it all the same
        product<F, 2, item_rows<F>::x2>(w, xs, y, n, rows);
    } else if (rows == 1) {  // kTwoBlocks: one row takes qmatvec_q8_1_one_<F>; this stays as it was without them
        one_row<F, false>(w, xs, y, n, rows);
    } else {
        product<F, 2, item_rows<F>::x2>(w, xs, y, n, rows);
    }
#endif
}

// Float weights by at most QMATVEC_Q8_FLOAT_RELEASE rows of x (qmatvec_q8_1_few_<F>, before its
// wait for the kernel before): the next kernel, launched programmatically, may start at once. Its
// blocks take the room of this one's last as they end, then wait for it.
template <typename F> __device__ __forceinline__ void few_release(size_t rows) {
    if constexpr (kFamily<F> == 2 && OPGEN_QMATVEC_Q8_FLOAT_RELEASE > 0) {
        if (rows <= (size_t)OPGEN_QMATVEC_Q8_FLOAT_RELEASE) opgen::release_dependents();
    }
}

// One row of x of F streamed (stream_product, which waits for the kernel before once it has
// asked for its first weights), else stream_elsewhere.
template <typename F>
__device__ __forceinline__ void qmatvec_q8_1_stream(const uint8_t* w, const float* x, const uint8_t* xq, float* y, size_t n,
                                                    size_t k, size_t rows) {
    const x_source xs = {x, xq, reinterpret_cast<const float2*>(xq + rows * k), k};
#if OPGEN_QMATVEC_BULK
    if constexpr (kStream<F>) {
        if (stream_fits<F>(w, k, rows)) return stream_product<F>(w, xs, y, n);  // the same for the whole grid
    }
#endif
    opgen::wait_for_predecessor();
    stream_elsewhere<F>(w, xs, y, n, rows);
}

// ---------------------------------------------------------------------------- x to q8_1

// Quad u of x's one row (its 4 quants `word`, its unit's d, its half's sum of quants) into the
// stream image (x_has_stream_image): the word at piece u / 4 of its block's 17, the half's sum and
// the unit's d where stream_x_bytes' layout has them; the block's first quad zeros its 17th piece.
__device__ __forceinline__ void image_word(uint8_t* xq, size_t k, size_t u, uint32_t word, float d, int sum) {
    uint8_t* image = stream_x_image(xq, k);
    const size_t nb = k / 256, b = u >> 6, v = (u >> 3) & 7, at = 4 * ((v >> 2) * nb + b) + (v & 3);
    reinterpret_cast<uint32_t*>(image)[u + 4 * b] = word;
    if ((u & 63) == 0) reinterpret_cast<uint4*>(image)[17 * b + 16] = make_uint4(0u, 0u, 0u, 0u);
    if ((u & 3) == 0) reinterpret_cast<int16_t*>(image + nb * (kStreamXQuants + 32))[2 * at + ((u >> 2) & 1)] = (int16_t)sum;
    if ((u & 7) == 0) reinterpret_cast<float*>(image + nb * kStreamXQuants)[at] = d;
}

// A thread per 4 values of x (one 16-byte load, one 4-byte store; for one row of x of the stream
// product's k, its image's too: image_word), 8 neighbouring lanes per block of 32: they share the
// block's largest |x| and 4 of them a half's sum of quants (the many lanes keep the launch short
// where x has few rows). A NaN or infinity in the block makes d NaN and the quants 0.
__device__ __forceinline__ void quantize_q8_1(const float* __restrict__ x, uint8_t* __restrict__ xq, size_t rows, size_t k) {
    const size_t quads = rows * k / 4;
    float2* xm = reinterpret_cast<float2*>(xq + rows * k);
    const bool image = x_has_stream_image(rows, k);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t first = (size_t)blockIdx.x * blockDim.x; first < quads; first += stride) {  // the same trips for a whole block
        const size_t u = first + threadIdx.x;
        const bool active = u < quads;  // the same for a block's 8 lanes (k is whole blocks)
        const float4 f = active ? reinterpret_cast<const float4*>(x)[u] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        const float v[4] = {f.x, f.y, f.z, f.w};
        float amax = 0.0f;
        bool finite = true;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const float a = fabsf(v[i]);
            finite = finite && a <= 3.402823466e38f;  // false for NaN and infinities
            amax = fmaxf(amax, a);
        }
#pragma unroll
        for (unsigned int bit = 1u; bit < 8u; bit <<= 1) {  // the block's 8 lanes (lane ^ bit: same group)
            amax = fmaxf(amax, opgen::shfl_xor(amax, bit));
            const int other = opgen::shfl_xor((int)finite, bit);  // every lane shuffles, finite or not
            finite = finite && other != 0;
        }
        const float d = finite ? amax / 127.0f : __uint_as_float(0x7FC00000u);
        const float id = finite && amax > 0.0f ? 127.0f / amax : 0.0f;
        uint32_t word = 0u;
        int sum = 0;
#pragma unroll
        for (int b = 0; b < 4; b++) {
            const int q = finite ? (int)rintf(v[b] * id) : 0;
            sum += q;
            word |= ((uint32_t)q & 0xFFu) << (8 * b);
        }
        sum += opgen::shfl_xor(sum, 1u);  // the half's 4 lanes
        sum += opgen::shfl_xor(sum, 2u);
        if (active) {
            reinterpret_cast<uint32_t*>(xq)[u] = word;
            if (u % 4 == 0) xm[u / 4] = make_float2(d, d * (float)sum);
            if (image) image_word(xq, k, u, word, d, sum);
        }
    }
}

}  // namespace

// The entry points, one per (pattern, values) of ops.yaml's `kernel:` patterns: generated by gen
// from templates/hip/qmatvec_q8.h.j2.
#include "qmatvec_q8_entries.h"
