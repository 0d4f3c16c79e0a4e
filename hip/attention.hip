// Fused scaled dot-product attention, forward (flash-attention-2 style): O = softmax(scale *
// Q K^T + mask) V in one kernel, never materialising the (sq, skv) scores.
//
//   flash_attention_<dt>_d<hd>(bh, sq, skv, scale, causal, q, k, v, out)
//
// dt: bf16, f16; hd (the head dim d): 64, 128. q, out: (bh, sq, d) contiguous; k, v: (bh, skv,
// d) contiguous; the pointers point at the first element and are 16-byte aligned. A causal
// mask is aligned bottom-right (query i sees keys j <= i + skv - sq, as hip/nn.hip's
// sdpa_softmax); a query that sees no key gets a row of zeros. Semantics are
// runtime/cpu/nn_ops.py's sdpa; runtime/gpu/nn.py's sdpa launches these where they apply.
//
// Launch: blockDim.x = OPGEN_FLASH_THREADS_D<hd>, any 1-D grid (a grid-stride loop over the work
// items; ceil(sq / OPGEN_FLASH_ROWS_D<hd>) * bh blocks give one item each): ops.yaml's
// kernel_facts, which runtime/gpu/nn.py reads from generated/kernel_facts.py. No
// dynamic shared memory: the tiles live in static shared memory (at most 48 KiB a block).
//
// NVIDIA (NVRTC, sm_80 and later): tensor cores through inline PTX. A block takes kBlockM
// queries of one (batch, head): its kWarps warps own kRowTiles * 16 query rows each, their Q
// fragments in registers for the whole walk over the keys. The keys are walked in tiles of
// kBlockN: K and V tiles are copied into a ring of kSlots shared slots with cp.async, each
// kSlots - 1 steps ahead of its use (a step is K_j or V_j; with three slots, K_{j+1} while
// S = Q K_j^T runs, V_{j+1} while the softmax and P V_j run; a barrier a step). The Q tile is
// staged at the end of the buffer, the first K and V tiles copied in the same breath, before
// Q lands. S by mma.sync m16n8k16 (ldmatrix), the online softmax in f32 (running max and sum
// per row, exp2 with log2(e) * scale folded in, the maxima and sums as trees), P rounded to
// the input dtype as the A fragments of O += P V (V through ldmatrix.trans), O in f32
// registers. V_j's wait comes before the softmax, so that the exponentials overlap P V_j's
// products. The running max of a row moves only when a tile's max passes it by more than
// OPGEN_FLASH_RESCALE_SLACK (log2 units, FA3's lazy rescaling): P stays under 2^slack, and O
// and the sums are rescaled only in the tiles where some row of the warp moves (a warp vote),
// in practice the first few. Shared tiles are XOR-swizzled by 16-byte chunk (chunk c of row r
// at c ^ (r % 8)): ldmatrix and the copies are free of bank conflicts; whole tiles are copied
// without bounds checks, the ragged last one with them. Causal: key tiles wholly above the
// diagonal are skipped, masks are applied only to the tiles that need them (the diagonal and
// the ragged last tile). Work items are ordered batch-head major, the heaviest causal query
// tile first: blocks running together share K and V in L2. The scale must be positive (the
// row maxima are taken before scaling); runtime/gpu/nn.py sends other scales to the GEMM path.
//
// Tuned on the device tool's GPU: 4 warps of 16 rows, 64-key tiles, three slots, 3 blocks a
// multiprocessor (d = 128; 4 at d = 64), against 32 rows a warp with 32-key tiles and 2 blocks
// a multiprocessor (figures: bench/results/NOTES.md, "Tuning figures").
//
// Elsewhere (hiprtc for AMD, NVIDIA before sm_80) the entry points are a plain scalar
// version: a thread per query, the same online softmax in f32. Correct, slow; runtime/gpu/nn.py
// does not launch them there (AMD keeps the GEMM path).
#include "compat.h"
#include "kernel_facts.h"

#if OPGEN_CUDA && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define OPGEN_FLASH_MMA 1
#else
#define OPGEN_FLASH_MMA 0
#endif

// Tile shapes by head dim. Threads and query rows a block are ops.yaml's kernel_facts (the
// runtime launches with them); the warps and each warp's 16-row tiles follow from them, and a
// pair that does not divide fails here. The rest are the kernel's own (overridable at compile
// time for tuning). SLOTS: the K / V ring's slots of BLOCK_N keys (with the Q tile, at most 48 KiB).
#ifndef OPGEN_FLASH_D64_BLOCK_N
#define OPGEN_FLASH_D64_BLOCK_N 64
#endif
#ifndef OPGEN_FLASH_D64_SLOTS
#define OPGEN_FLASH_D64_SLOTS 3
#endif
#ifndef OPGEN_FLASH_D64_MIN_BLOCKS
#define OPGEN_FLASH_D64_MIN_BLOCKS 4
#endif
#ifndef OPGEN_FLASH_D128_BLOCK_N
#define OPGEN_FLASH_D128_BLOCK_N 64
#endif
#ifndef OPGEN_FLASH_D128_SLOTS
#define OPGEN_FLASH_D128_SLOTS 3
#endif
#ifndef OPGEN_FLASH_D128_MIN_BLOCKS
#define OPGEN_FLASH_D128_MIN_BLOCKS 3
#endif

// Lazy rescaling: how far (log2 units) a tile's row max may pass the running max before it
// moves (0: it moves with every larger max, O rescaled in every tile).
#ifndef OPGEN_FLASH_RESCALE_SLACK
#define OPGEN_FLASH_RESCALE_SLACK 8
#endif

namespace {

// A block of THREADS threads (whole warps of 32 lanes) takes ROWS query rows: each warp
// kRowTiles tiles of 16 rows (mma.sync's m16).
template <int THREADS, int ROWS, int BLOCK_N, int SLOTS> struct flash_shape {
    enum : int {
        kThreads = THREADS,
        kRows = ROWS,
        kWarps = THREADS / OPGEN_LANE_GROUP,
        kRowTiles = ROWS / (16 * (THREADS / OPGEN_LANE_GROUP)),
        kBlockN = BLOCK_N,
        kSlots = SLOTS
    };
    static_assert(THREADS % OPGEN_LANE_GROUP == 0 && kWarps >= 1, "FLASH_THREADS_D<hd>: whole warps of 32 lanes");
    static_assert(kRowTiles >= 1 && kWarps * kRowTiles * 16 == ROWS,
                  "FLASH_ROWS_D<hd> = warps * row tiles * 16 (warps = FLASH_THREADS_D<hd> / 32)");
};
template <int D> struct flash_config;
template <>
struct flash_config<64> : flash_shape<OPGEN_FLASH_THREADS_D64, OPGEN_FLASH_ROWS_D64, OPGEN_FLASH_D64_BLOCK_N,
                                      OPGEN_FLASH_D64_SLOTS> {};
template <>
struct flash_config<128> : flash_shape<OPGEN_FLASH_THREADS_D128, OPGEN_FLASH_ROWS_D128, OPGEN_FLASH_D128_BLOCK_N,
                                       OPGEN_FLASH_D128_SLOTS> {};

__device__ __forceinline__ float flash_neg_inf() { return -__int_as_float(0x7f800000); }

#if OPGEN_FLASH_MMA

// ---------------------------------------------------------------------------- PTX wrappers

__device__ __forceinline__ unsigned smem_address(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}

// 16 bytes global -> shared, asynchronously; with bytes = 0 (zfill) the 16 bytes are zeros.
__device__ __forceinline__ void cp_async16(unsigned dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async16_zfill(unsigned dst, const void* src, unsigned bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(unsigned addr, unsigned (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned addr, unsigned (&r)[4]) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// d (16x8 f32) += a (16x16, row) * b (16x8, col): the m16n8k16 tensor-core product.
template <typename T> struct mma16816;
template <> struct mma16816<bf16_t> {
    static __device__ __forceinline__ void run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    // two floats as a bf16 pair: lo in the low half (the lower column)
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&h);
    }
};
template <> struct mma16816<f16_t> {
    static __device__ __forceinline__ void run(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
            "{%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
    static __device__ __forceinline__ unsigned pack(float lo, float hi) {
        __half2 h = __floats2half2_rn(lo, hi);
        return *reinterpret_cast<unsigned*>(&h);
    }
};

__device__ __forceinline__ float fast_exp2(float x) {  // exp2(-inf) = +0
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// ---------------------------------------------------------------------------- tiles

// Rows [row0, row0 + ROWS) of a (nrows, D) matrix at g into the swizzled shared tile at sm
// (its shared address): rows past nrows read as zeros (so P * V stays finite there). Thread t
// copies chunk t % (D / 8) of rows t / (D / 8) + kStep * i: one chunk column, so one swizzle
// (kStep is a multiple of 8) and one base address each side, the rest immediates. A tile
// wholly inside the matrix (all but the ragged last) takes the copies without bounds checks.
template <int D, int ROWS, int NT>
__device__ __forceinline__ void load_tile(unsigned sm, const uint16_t* g, int row0, int nrows, int tid) {
    constexpr int kChunks = D / 8;  // 16-byte chunks a row
    constexpr int kStep = NT / kChunks;  // rows a pass of the block
    static_assert(NT % kChunks == 0 && kStep % 8 == 0 && ROWS % kStep == 0, "a tile is whole passes");
    const int r = tid / kChunks, ch = tid % kChunks;
    const unsigned dst = sm + (unsigned)(r * D + ((ch ^ (r & 7)) << 3)) * 2u;
    const uint16_t* src = g + (size_t)(row0 + r) * D + ch * 8;
    if (row0 + ROWS <= nrows) {
#pragma unroll
        for (int i = 0; i < ROWS / kStep; i++) {
            cp_async16(dst + (unsigned)(i * kStep * D * 2), src + (size_t)i * kStep * D);
        }
    } else {
#pragma unroll
        for (int i = 0; i < ROWS / kStep; i++) {
            const bool in = row0 + r + i * kStep < nrows;
            cp_async16_zfill(dst + (unsigned)(i * kStep * D * 2), in ? src + (size_t)i * kStep * D : g, in ? 16u : 0u);
        }
    }
}

// Bytes from a lane's base address (of chunk pair i % 4) to chunk pair i of row `row` (a
// multiple of 8) of a swizzled tile of D columns.
template <int D> __device__ __forceinline__ constexpr unsigned swizzled(int row, int i) {
    return (unsigned)(row * D + ((i >> 2) << 6)) * 2u;
}

// ---------------------------------------------------------------------------- the kernel

template <typename T, int D>
__device__ __forceinline__ void flash_forward(const unsigned bh, const unsigned sq_u, const unsigned skv_u,
                                              const float scale, const unsigned causal_u, const T* q, const T* k,
                                              const T* v, T* out) {
    typedef flash_config<D> cfg;
    typedef mma16816<T> mma;
    constexpr int MT = cfg::kRowTiles, W = cfg::kWarps, BN = cfg::kBlockN, S = cfg::kSlots;
    constexpr int BM = W * 16 * MT, NT = W * 32;
    static_assert(NT == cfg::kThreads && BM == cfg::kRows, "the launch geometry of ops.yaml's FLASH_*_D<hd>");
    constexpr int kKv = BN * D, kQ = BM * D;  // elements of a K (or V) tile, of the Q tile
    // A ring of S tile slots: K_0, V_0, K_1, V_1, ... in turn, each copied S - 1 steps ahead
    // of its use. The Q tile is staged once, before, at the end of the buffer: the slots
    // wholly before it (kEarly of them) are filled while it lands.
    constexpr int kSmem = kQ > S * kKv ? kQ : S * kKv;
    constexpr int kQOff = kSmem - kQ;  // elements
    constexpr int kEarlyRaw = kQOff / kKv;
    constexpr int kEarly = kEarlyRaw < S - 1 ? kEarlyRaw : S - 1;
    static_assert(kSmem * 2 <= 48 * 1024, "static shared memory is at most 48 KiB a block");
    static_assert(BN % 16 == 0 && D % 16 == 0 && S >= 2, "tiles of whole mma steps");
    __shared__ __align__(128) uint16_t smem[kSmem];

    const int sq = (int)sq_u, skv = (int)skv_u;
    const bool causal = causal_u != 0u;
    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int g = lane >> 2, t4 = lane & 3;
    const float sl2 = scale * 1.4426950408889634f;  // scores in log2 units: exp(x) = exp2(x log2 e)

    const unsigned sbase = smem_address(smem);
    constexpr unsigned kSlot = (unsigned)kKv * 2u;  // bytes of a slot
    // ldmatrix addresses. Lane l addresses row r_l of a 16-row block and chunk 2i + c_l (a
    // 16x16 block at chunk pair i), stored at chunk (2i + c_l) ^ (r_l % 8) = 2i ^ x_l with
    // x_l = c_l ^ (r_l % 8) < 8: the high bit of 2i passes through (+64 elements for i >= 4) and
    // the rest takes four values: four base addresses a lane (in slot 0), the rest immediates.
    const int wrow = warp * 16 * MT;  // the warp's first row in the block's tile
    const int lrow_a = wrow + (lane & 15), lx_a = (lane >> 4) ^ (lane & 7);                     // Q (A)
    const int lrow_k = (lane & 7) + ((lane >> 4) << 3), lx_k = ((lane >> 3) & 1) ^ (lane & 7);  // K (B)
    const int lrow_v = (lane & 7) + (((lane >> 3) & 1) << 3), lx_v = (lane >> 4) ^ (lane & 7);  // V (B, trans)
    unsigned kaddr[4], vaddr[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        kaddr[i] = sbase + (unsigned)(lrow_k * D + (((2 * i) ^ lx_k) << 3)) * 2u;
        vaddr[i] = sbase + (unsigned)(lrow_v * D + (((2 * i) ^ lx_v) << 3)) * 2u;
    }

    const int nmt = (sq + BM - 1) / BM;
    const long long items = (long long)bh * nmt;
    for (long long item = blockIdx.x; item < items; item += gridDim.x) {
        const size_t b_h = (size_t)(item / nmt);
        const int m0 = (nmt - 1 - (int)(item % nmt)) * BM;  // heaviest (causal) query tile first
        const uint16_t* qb = reinterpret_cast<const uint16_t*>(q) + b_h * (size_t)sq * D;
        const uint16_t* kb = reinterpret_cast<const uint16_t*>(k) + b_h * (size_t)skv * D;
        const uint16_t* vb = reinterpret_cast<const uint16_t*>(v) + b_h * (size_t)skv * D;
        long long n_end = skv;  // keys [0, n_end) some row of the tile sees
        if (causal) {
            const long long last = (long long)m0 + BM + skv - sq;
            n_end = last < n_end ? last : n_end;
        }
        const int ntiles = n_end > 0 ? (int)((n_end + BN - 1) / BN) : 0;

        float o[MT][D / 8][4];
        float row_max[MT][2], row_sum[MT][2];
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
#pragma unroll
            for (int dt = 0; dt < D / 8; dt++) o[mt][dt][0] = o[mt][dt][1] = o[mt][dt][2] = o[mt][dt][3] = 0.f;
            row_max[mt][0] = row_max[mt][1] = flash_neg_inf();
            row_sum[mt][0] = row_sum[mt][1] = 0.f;
        }

        // step n (K_{n/2} for even n, V_{n/2} for odd) into slot n % S; past the last tile an
        // empty group (the waits stay uniform)
        auto issue = [&](int n) {
            const int tile = n >> 1;
            if (tile < ntiles)
                load_tile<D, BN, NT>(sbase + (unsigned)(n % S) * kSlot, (n & 1) ? vb : kb, tile * BN, skv, tid);
            cp_async_commit();
        };

        __syncthreads();  // the last item's readers are done with the slots
        if (ntiles > 0) {
            unsigned qf[MT][D / 16][4];  // Q's A fragments, for the whole item
            load_tile<D, BM, NT>(sbase + (unsigned)kQOff * 2u, qb, m0, sq, tid);
            cp_async_commit();
#pragma unroll
            for (int n = 0; n < kEarly; n++) issue(n);
            cp_async_wait<kEarly>();
            __syncthreads();
#pragma unroll
            for (int mt = 0; mt < MT; mt++) {
#pragma unroll
                for (int kk = 0; kk < D / 16; kk++) {
                    const unsigned a = sbase + (unsigned)kQOff * 2u +
                                       (unsigned)(lrow_a * D + (((2 * (kk & 3)) ^ lx_a) << 3)) * 2u;
                    ldmatrix_x4(a + swizzled<D>(mt * 16, kk), qf[mt][kk]);
                }
            }
            // Steps up to S - 2 go to slots before the staging now, or after a barrier; step
            // S - 1 (the last slot) is copied after the loop's first barrier.
            if (kEarly < S - 1) {
                __syncthreads();  // K and V overwrite the staging
#pragma unroll
                for (int n = kEarly; n < S - 1; n++) issue(n);
            }
            // slot offsets (bytes) of step 2j (K_j) and 2j + 1 (V_j)
            unsigned slot_k = 0u, slot_v = kSlot;

            for (int j = 0; j < ntiles; j++) {
                const int n0 = j * BN;
                cp_async_wait<S - 2>();  // K_j landed
                __syncthreads();         // ... for every thread; and every warp is done with step 2j - 1
                issue(2 * j + S - 1);    // into step 2j - 1's slot

                // S = Q K_j^T: (16 MT rows, BN keys) a warp
                float s[MT][BN / 8][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
#pragma unroll
                    for (int nt = 0; nt < BN / 8; nt++) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
                }
#pragma unroll
                for (int kk = 0; kk < D / 16; kk++) {
#pragma unroll
                    for (int nj = 0; nj < BN / 16; nj++) {
                        unsigned b[4];
                        ldmatrix_x4(kaddr[kk & 3] + slot_k + swizzled<D>(nj * 16, kk), b);
#pragma unroll
                        for (int mt = 0; mt < MT; mt++) {
                            mma::run(s[mt][2 * nj], qf[mt][kk], b[0], b[1]);
                            mma::run(s[mt][2 * nj + 1], qf[mt][kk], b[2], b[3]);
                        }
                    }
                }

                // V_j's wait comes before the softmax, not after it: the softmax and P V_j are
                // then one stretch of code, the exponentials free to overlap the products
                cp_async_wait<S - 2>();  // V_j landed
                __syncthreads();         // ... for every thread; and every warp is done with K_j
                issue(2 * j + S);        // into K_j's slot

                // online softmax, in log2 units
                const bool masked = n0 + BN > skv || (causal && n0 + BN - 1 > m0 + skv - sq);
                if (masked) {
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
                        for (int h = 0; h < 2; h++) {
                            const int row = m0 + wrow + mt * 16 + g + 8 * h;
                            const int limit = causal ? row + skv - sq : skv - 1;  // last key the row sees
#pragma unroll
                            for (int nt = 0; nt < BN / 8; nt++) {
#pragma unroll
                                for (int e = 0; e < 2; e++) {
                                    const int key = n0 + nt * 8 + 2 * t4 + e;
                                    if (key >= skv || key > limit) s[mt][nt][2 * h + e] = flash_neg_inf();
                                }
                            }
                        }
                    }
                }
                float mx[MT][2];  // the tile's row maxima, in log2 units
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        // of the raw scores (scale > 0 keeps the order), as a tree
                        float m[BN / 8];
#pragma unroll
                        for (int nt = 0; nt < BN / 8; nt++) m[nt] = fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]);
#pragma unroll
                        for (int w = 1; w < BN / 8; w *= 2) {
#pragma unroll
                            for (int nt = 0; nt + w < BN / 8; nt += 2 * w) m[nt] = fmaxf(m[nt], m[nt + w]);
                        }
                        float mm = fmaxf(m[0], __shfl_xor_sync(0xffffffffu, m[0], 1));
                        mm = fmaxf(mm, __shfl_xor_sync(0xffffffffu, mm, 2));
                        mx[mt][h] = mm * sl2;
                    }
                }
#if OPGEN_FLASH_RESCALE_SLACK > 0
                // The running maximum moves only when a row's tile maximum passes it by more
                // than the slack (log2 units): until then the row's p stay under 2^slack, and
                // O and the sums keep their scale (FA3's lazy rescaling).
                bool grow = false;
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
#pragma unroll
                    for (int h = 0; h < 2; h++) grow |= mx[mt][h] > row_max[mt][h] + (float)OPGEN_FLASH_RESCALE_SLACK;
                }
                if (__any_sync(0xffffffffu, grow))
#endif
                {
#pragma unroll
                    for (int mt = 0; mt < MT; mt++) {
#pragma unroll
                        for (int h = 0; h < 2; h++) {
                            const float m_new = fmaxf(row_max[mt][h], mx[mt][h]);
                            const float base = m_new == flash_neg_inf() ? 0.f : m_new;  // no key yet
                            const float alpha = fast_exp2(row_max[mt][h] - base);
                            row_max[mt][h] = m_new;
                            row_sum[mt][h] *= alpha;
#pragma unroll
                            for (int dt = 0; dt < D / 8; dt++) {
                                o[mt][dt][2 * h] *= alpha;
                                o[mt][dt][2 * h + 1] *= alpha;
                            }
                        }
                    }
                }
                // P = exp2(s * scale log2(e) - max), as the A fragments of P V_j
                unsigned pa[MT][BN / 16][4];
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const float base = row_max[mt][h] == flash_neg_inf() ? 0.f : row_max[mt][h];
                        float sum[BN / 8];
#pragma unroll
                        for (int nt = 0; nt < BN / 8; nt++) {
                            // one rounding (the fma), -inf -> 0
                            const float p0 = fast_exp2(__fmaf_rn(s[mt][nt][2 * h], sl2, -base));
                            const float p1 = fast_exp2(__fmaf_rn(s[mt][nt][2 * h + 1], sl2, -base));
                            sum[nt] = p0 + p1;
                            pa[mt][nt >> 1][(nt & 1) * 2 + h] = mma::pack(p0, p1);
                        }
#pragma unroll
                        for (int w = 1; w < BN / 8; w *= 2) {
#pragma unroll
                            for (int nt = 0; nt + w < BN / 8; nt += 2 * w) sum[nt] += sum[nt + w];
                        }
                        row_sum[mt][h] += sum[0];  // this thread's share of the row
                    }
                }

                // O += P V_j
#pragma unroll
                for (int kk = 0; kk < BN / 16; kk++) {
#pragma unroll
                    for (int dj = 0; dj < D / 16; dj++) {
                        unsigned b[4];
                        ldmatrix_x4_trans(vaddr[dj & 3] + slot_v + swizzled<D>(kk * 16, dj), b);
#pragma unroll
                        for (int mt = 0; mt < MT; mt++) {
                            mma::run(o[mt][2 * dj], pa[mt][kk], b[0], b[1]);
                            mma::run(o[mt][2 * dj + 1], pa[mt][kk], b[2], b[3]);
                        }
                    }
                }
                slot_k = slot_v == (unsigned)(S - 1) * kSlot ? 0u : slot_v + kSlot;
                slot_v = slot_k == (unsigned)(S - 1) * kSlot ? 0u : slot_k + kSlot;
            }
            cp_async_wait<0>();  // no copy outlives the item (the last groups are empty)
        }

        // O / (the row's sum): rows of the tile past sq are not stored; a row that saw no key
        // (sum 0) is zeros
        T* ob = out + b_h * (size_t)sq * D;
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float l = row_sum[mt][h];
                l += __shfl_xor_sync(0xffffffffu, l, 1);
                l += __shfl_xor_sync(0xffffffffu, l, 2);
                const float inv = l > 0.f ? 1.f / l : 0.f;
                const int row = m0 + wrow + mt * 16 + g + 8 * h;
                if (row < sq) {
                    unsigned* dst = reinterpret_cast<unsigned*>(ob + (size_t)row * D + 2 * t4);
#pragma unroll
                    for (int dt = 0; dt < D / 8; dt++) {
                        dst[dt * 4] = mma::pack(o[mt][dt][2 * h] * inv, o[mt][dt][2 * h + 1] * inv);
                    }
                }
            }
        }
    }
}

#else  // OPGEN_FLASH_MMA

// The scalar version: a thread per query (grid-stride), f32 online softmax.
template <typename T, int D>
__device__ __forceinline__ void flash_forward(const unsigned bh, const unsigned sq_u, const unsigned skv_u,
                                              const float scale, const unsigned causal_u, const T* q, const T* k,
                                              const T* v, T* out) {
    const size_t sq = sq_u, skv = skv_u, rows = (size_t)bh * sq;
    const float sl2 = scale * 1.4426950408889634f;
    for (size_t r = opgen::global_thread_id(); r < rows; r += opgen::grid_threads()) {
        const size_t b_h = r / sq, i = r % sq;
        const T* qr = q + r * D;
        const T* kb = k + b_h * skv * D;
        const T* vb = v + b_h * skv * D;
        long long seen = (long long)skv;
        if (causal_u != 0u) {
            const long long last = (long long)i + (long long)skv - (long long)sq + 1;
            seen = last < seen ? (last > 0 ? last : 0) : seen;
        }
        float acc[D];
        for (int c = 0; c < D; c++) acc[c] = 0.f;
        float m = flash_neg_inf(), l = 0.f;
        for (long long j = 0; j < seen; j++) {
            float dot = 0.f;
            for (int c = 0; c < D; c++) dot += opgen::to_compute(qr[c]) * opgen::to_compute(kb[j * D + c]);
            const float x = dot * sl2;
            const float m_new = m > x ? m : x;
            const float alpha = exp2f(m - m_new), p = exp2f(x - m_new);
            l = l * alpha + p;
            for (int c = 0; c < D; c++) acc[c] = acc[c] * alpha + p * opgen::to_compute(vb[j * D + c]);
            m = m_new;
        }
        const float inv = l > 0.f ? 1.f / l : 0.f;
        for (int c = 0; c < D; c++) out[r * D + c] = opgen::from_compute<T>(acc[c] * inv);
    }
}

#endif  // OPGEN_FLASH_MMA

}  // namespace

// The entry points, one per (pattern, values) of ops.yaml's `kernel:` patterns: generated by gen
// from templates/hip/attention.h.j2.
#include "attention_entries.h"
