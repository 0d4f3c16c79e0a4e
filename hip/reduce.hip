// Reductions: sum, min, max, argmin, argmax (Candle's fast_sum / fast_min / ... family).
//
//   fast_<op>_<dt>(src_numel, el_to_sum_per_block, num_dims, info, src, dst)
//   reduce_chunks_<dt>(op, pass, src_numel, el_to_sum_per_block, num_dims, info, chunks, src, partial, dst)
//   reduce_columns_<dt>(op, groups, el, row_stride, num_dims, info, splits, src, partial, dst)
//
// The caller moves the reduced dims last (a permuted view, no copy): the source view
// then is dst_numel = src_numel / el_to_sum_per_block consecutive groups of
// el_to_sum_per_block elements, each reduced to one dst element. info: dims and
// strides of that permuted view (so any set of reduced dims, any strides), or nullptr
// when it is contiguous (reducing the last dims of a contiguous tensor). argmin /
// argmax write u32: the row-major index within the group (runtime/cpu/__init__.py's
// reduce_op). el_to_sum_per_block must be >= 1 (an empty reduction is the caller's:
// sum -> zeros, the others -> an error, as the CPU reference). A group that is the last
// dim of the view is read with one multiply per element, no index division: the runtime
// merges adjacent dims where it can (kept with kept, reduced with reduced).
//
// fast_* reduces in one launch. For few, long groups the runtime splits each group into
// `chunks` consecutive chunks and launches reduce_chunks_<dt> twice, with the same
// arguments: pass 1 writes one partial state per (group, chunk) to `partial`
// (groups * chunks states, group-major, at most 16 bytes each: the accumulator of a sum,
// a (value, index) pair for the others), pass 2 reduces each group's partials and
// writes dst as fast_* would. op: 0 sum, 1 min, 2 max, 3 argmin, 4 argmax (dst: u32).
// Pass 0 does both in one launch: pass 1, then the last block to finish (a counter of
// finished blocks, after a __threadfence) reduces every group's partials alone. There
// `partial` starts with a kStateHeader-byte header whose first u32 is that counter: zero
// at launch, and the last block zeroes it again, so the buffer serves the next launch as
// it is. Meant for a few groups (one block finishes them all), on one stream at a time.
// reduce_columns_<dt> (the column tiles; "pass 3" in the notes) is the one launch for a
// leading dim's groups (a thread per item, below): `splits` is the number of slices their rows
// are split into; each column tile's last block to finish combines its slices' states (a
// counter per tile before `partial`: see reduce_column_tiles). The runtime takes it where
// pass 1 and 2 would split such groups. A rank-2 view is given by value (info nullptr: dims
// (groups, el), strides (1, row_stride); "pass 4"), so no thread reads an info array from
// device memory before its first row and the runtime uploads none, and indexes in 32 bits
// where the view allows; other views by their info array (num_dims dims and strides). Its
// entry points are declared for blocks of OPGEN_COLUMN_BLOCK threads, OPGEN_COLUMN_MIN_BLOCKS
// of them resident per multiprocessor (ops.yaml's kernel_facts; the runtime sizes its grid
// from the same facts), and every function of the 32-bit path is inlined into them.
// Where the runtime launches a warp per chunk and whole blocks per group (chunks a
// multiple of the block's warps), the group's blocks read it interleaved (16-byte vector
// t, t + T, ... for thread t of T: the device reads one window of memory at a time) and
// each block leaves one state (reduce_block_states): the last block reads a state per
// block, not per warp.
//
// Launch: any grid, any blockDim.x <= 1024 (each kernel loops over its work; fast_* and
// reduce_chunks_* are declared with __launch_bounds__(1024), so that 1024 threads fit their
// registers; reduce_columns_* takes at most OPGEN_COLUMN_BLOCK). A launch
// covers each work item (a group, or a chunk of one) in one of three ways:
//   - one thread per item, when the group's elements are strided but consecutive groups
//     start at consecutive elements (reducing a leading dim): a warp reads neighbouring
//     groups, coalesced; where the view's alignment allows, an item is kColumns
//     neighbouring groups (4 f32 columns: one 16-byte load per row), see group_source::cols;
//   - one warp per item, for items of at most kWarpItemMax elements (pass 2:
//     kWarpPartialMax states; blockDim.x a multiple of warpSize): no barriers, each warp
//     streams through its item;
//   - one block per item otherwise.
// Contiguous items are read 16 bytes at a time (after a head up to the first 16-byte
// boundary), several accesses in flight per thread; warps combine with shuffles, a
// block through one shared slot per warp.
//
// Semantics (runtime/cpu/__init__.py): integer sums wrap; bf16/f16 sum in f32 (partials too) and
// round once; min / max propagate NaN; argmin / argmax return the first NaN if any, else
// the first extreme element (states carry the index, so any split keeps "first").
// Float sums are not in numpy's (pairwise) order: compare with a tolerance.
#include "compat.h"
#include "kernel_facts.h"

namespace {

constexpr unsigned int kMaxBlock = 1024;
constexpr size_t kWarpItemMax = OPGEN_WARP_ITEM_MAX;        // elements of the source (ops.yaml's kernel_facts)
constexpr size_t kWarpPartialMax = OPGEN_WARP_PARTIAL_MAX;  // partial states (pass 2; ops.yaml's kernel_facts)
constexpr uint32_t kEmpty = 0xffffffffu;
constexpr size_t kStateHeader = OPGEN_PASS0_HEADER;  // pass 0: the counter, then the states (16-byte aligned)
// Pass 3: threads across a column tile (ops.yaml's kernel_facts COLUMN_TILE, which
// runtime/gpu/reduce.py launches a tile of groups for; any grid is correct).
constexpr unsigned int kTileThreads = OPGEN_COLUMN_TILE;
static_assert(kTileThreads >= 1 && kTileThreads <= 32 && (kTileThreads & (kTileThreads - 1)) == 0,
              "COLUMN_TILE: a power of two, at most a warp");
// Strided loads in flight per thread where a thread reduces a leading dim's group; -D may
// set it (bench/gpu.py --explore strided-loads compares 4 to 32).
#ifndef OPGEN_STRIDED_LOADS
#define OPGEN_STRIDED_LOADS 8
#endif
constexpr int kStridedLoads = OPGEN_STRIDED_LOADS;
// Rows in flight per thread where a thread reduces several neighbouring groups of a leading
// dim at once (one vector access per row: `columns` below); -D may set it.
#ifndef OPGEN_COLUMN_LOADS
#define OPGEN_COLUMN_LOADS 4
#endif
constexpr int kColumnLoads = OPGEN_COLUMN_LOADS;
// Pass 0 combines a block's states before the last block reads them (see reduce_once);
// -D OPGEN_BLOCK_STATES=0 turns that off (the same speed on an H100).
#ifndef OPGEN_BLOCK_STATES
#define OPGEN_BLOCK_STATES 1
#endif
// There, each block's threads read the group interleaved with every other block of the
// group (thread t of T: 16-byte vectors t, t + T, ...), so that the device reads one
// window of memory at a time, not a chunk per warp; 0: a contiguous chunk per warp.
#ifndef OPGEN_PASS0_INTERLEAVED
#define OPGEN_PASS0_INTERLEAVED 1
#endif
// Pass 3: the rows of a tile's slices interleaved (1): slice s's row of threads ty reads rows
// s * ty_n + ty + k * splits * ty_n (ty_n rows of threads a block), so that the whole grid
// reads one window of rows at a time (as torch's column reductions); 0: each slice a band of
// consecutive rows (read interleaved by the block's rows of threads). bench/gpu.py's
// --explore columns compares them. OPGEN_TILE_INTERLEAVED: ops.yaml's kernel_facts (its default;
// -D may set it).
// Several columns a thread: 16-byte accesses a row a thread holds (1: 4 f32 columns, 2: 8,
// two loads a row; at most 8 columns whatever the type). OPGEN_COLUMN_PACKS: ops.yaml's
// kernel_facts, which runtime/gpu/reduce.py reads too; a -D that sets it (--explore columns)
// needs the runtime's COLUMN_PACKS set alike.
static_assert(OPGEN_COLUMN_PACKS == 1 || OPGEN_COLUMN_PACKS == 2, "COLUMN_PACKS: one or two 16-byte accesses a row");
static_assert(OPGEN_TILE_INTERLEAVED == 0 || OPGEN_TILE_INTERLEAVED == 1, "TILE_INTERLEAVED: 0 or 1");
// Several columns a thread: 0 plain loads, 1 with an evict-first (streaming) hint (__ldcs),
// 2 through the read-only path without L1 allocation (ld.global.nc.L1::no_allocate); NVIDIA
// only (plain loads on AMD). -D may set it (--explore columns).
#ifndef OPGEN_COLUMN_STREAM
#define OPGEN_COLUMN_STREAM 0
#endif
// Pass 3: the states a tile's last block has in flight per group while it combines the
// tile's slices (in slice order whatever the setting); 1: one at a time. -D may set it: 8 was
// no faster for the sum over dim 0 of (8192, 8192) f32 (on an H100, commit cdeec47).
#ifndef OPGEN_TILE_COMBINE_LOADS
#define OPGEN_TILE_COMBINE_LOADS 1
#endif
constexpr int kCombineLoads = OPGEN_TILE_COMBINE_LOADS;
static_assert(kCombineLoads >= 1, "TILE_COMBINE_LOADS: at least one");
// Several columns a thread (a thread per item): its chunk as rows c, c + chunks, ... (1)
// instead of a band of consecutive rows (0).
#ifndef OPGEN_COLUMN_INTERLEAVED
#define OPGEN_COLUMN_INTERLEAVED 0
#endif
// reduce_columns_*: a rank-2 view's tiles with 32-bit indices where they fit (1), or always the
// size_t path (0: bench/gpu.py --explore columns compares them).
#ifndef OPGEN_COLUMN_INDEX32
#define OPGEN_COLUMN_INDEX32 1
#endif
static_assert(OPGEN_COLUMN_BLOCK >= 32 && OPGEN_COLUMN_BLOCK <= 1024 && OPGEN_COLUMN_BLOCK % 32 == 0,
              "COLUMN_BLOCK: whole warps, at most 1024 threads");

// ---------------------------------------------------------------------------- policies
//
// P: the partial state; combine: associative and commutative; update(acc, x, k): acc
// combined with element x at index k of its group, where k is past every index acc has
// seen (a thread scans its elements in order, so this is cheaper than combine); store:
// the final value of a group's state, as dst[g]. One instantiation per dtype for sum
// and one for min / max / argmin / argmax (runtime flags): fewer copies to compile.

template <typename T> struct sum_policy {
    typedef opgen::accum_t<T> P;
    __device__ __forceinline__ P identity() const { return P(0); }
    __device__ __forceinline__ P combine(P a, P b) const { return a + b; }
    __device__ __forceinline__ P update(P acc, T x, size_t) const { return acc + (P)opgen::to_compute(x); }
    __device__ __forceinline__ void store(void* dst, size_t g, P p) const {
        static_cast<T*>(dst)[g] = opgen::from_compute<T>((opgen::compute_t<T>)p);
    }
};

template <typename C> struct arg_state {
    C v;
    uint32_t i;  // kEmpty: no element seen
};

template <typename T> struct extreme_policy {
    typedef opgen::compute_t<T> C;
    typedef arg_state<C> P;
    bool is_max;  // max / argmax, else min / argmin
    bool arg;     // dst holds the index (u32), else the value (T)

    __device__ __forceinline__ bool better(C v, C than) const { return is_max ? v > than : v < than; }
    __device__ __forceinline__ P identity() const {
        P p;
        p.v = C(0);
        p.i = kEmpty;
        return p;
    }
    // The preferred of two states: NaN first, then the smaller (larger) value, then the
    // smaller index.
    __device__ __forceinline__ P combine(P a, P b) const {
        if (b.i == kEmpty) return a;
        if (a.i == kEmpty) return b;
        const bool an = opgen::is_nan(a.v), bn = opgen::is_nan(b.v);
        if (an || bn) {
            if (an && bn) return b.i < a.i ? b : a;
            return an ? a : b;
        }
        if (a.v != b.v) return better(b.v, a.v) ? b : a;
        return b.i < a.i ? b : a;
    }
    __device__ __forceinline__ P update(P acc, T x, size_t k) const {
        const C v = opgen::to_compute(x);
        if (acc.i == kEmpty || (!opgen::is_nan(acc.v) && (opgen::is_nan(v) || better(v, acc.v)))) {
            acc.v = v;
            acc.i = (uint32_t)k;
        }
        return acc;
    }
    __device__ __forceinline__ void store(void* dst, size_t g, P p) const {
        if (arg) {
            static_cast<uint32_t*>(dst)[g] = p.i;
        } else {
            static_cast<T*>(dst)[g] = opgen::from_compute<T>(p.v);
        }
    }
};

// ---------------------------------------------------------------------------- warp and block

// Combines the states of lanes [0, active) of the calling warp; lane 0 gets the result.
// Every thread of the warp that exists calls it (active counts them).
template <class Pol>
__device__ __forceinline__ typename Pol::P warp_reduce(const Pol& pol, typename Pol::P v, unsigned int active) {
    const unsigned int ws = (unsigned int)warpSize, lane = threadIdx.x % ws;
    const unsigned int mask = opgen::lane_mask(active);  // NVIDIA only
    for (unsigned int off = ws >> 1; off > 0; off >>= 1) {
        const typename Pol::P o = opgen::shfl_down(v, off, mask);
        if (lane + off < active) v = pol.combine(v, o);
    }
    return v;
}

// The whole block's states combined; thread 0 gets the result. sh: one slot per warp.
// Ends with a barrier, so sh may be reused at once.
template <class Pol>
__device__ __forceinline__ typename Pol::P block_reduce(const Pol& pol, typename Pol::P v, typename Pol::P* sh) {
    const unsigned int ws = (unsigned int)warpSize, lane = threadIdx.x % ws, warp = threadIdx.x / ws;
    const unsigned int nw = (blockDim.x + ws - 1) / ws;
    const unsigned int left = blockDim.x - warp * ws;
    v = warp_reduce(pol, v, left < ws ? left : ws);
    if (nw > 1) {
        if (lane == 0) sh[warp] = v;
        __syncthreads();
        if (warp == 0) {
            v = lane < nw ? sh[lane] : pol.identity();
            v = warp_reduce(pol, v, ws);
        }
        __syncthreads();
    }
    return v;
}

// ---------------------------------------------------------------------------- sources

// A row's access of N elements where a thread reduces several columns (OPGEN_COLUMN_STREAM).
template <typename T, int N> __device__ __forceinline__ opgen::pack<T, N> load_row_pack(const T* p) {
#if OPGEN_COLUMN_STREAM && !OPGEN_HIP
    typedef typename opgen::raw_type<(int)sizeof(T) * N>::type raw;
    opgen::pack<T, N> r;
#if OPGEN_COLUMN_STREAM == 1
    *reinterpret_cast<raw*>(&r) = __ldcs(reinterpret_cast<const raw*>(p));
#else
    if constexpr (sizeof(raw) == 16) {
        uint4 v;
        asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p));
        *reinterpret_cast<uint4*>(&r) = v;
    } else {
        *reinterpret_cast<raw*>(&r) = __ldg(reinterpret_cast<const raw*>(p));
    }
#endif
    return r;
#else
    return opgen::load_pack<T, N>(p);
#endif
}

// The row loops of a thread per item, shared by group_source (size_t indices) and
// rank2_source (uint32_t: I). Rows k0, k0 + step, ... below k1 of the W neighbouring groups
// starting at p (row stride rs), each row one aligned access of V elements per pack:
// kColumnLoads rows in flight before their updates, which keep k's order.
template <typename I, int W, int V, class Pol, typename T>
__device__ __forceinline__ void accumulate_column_rows(const Pol& pol, const T* p, const I rs, const I k0, const I k1,
                                                       const I step, typename Pol::P (&acc)[W]) {
    constexpr int NP = W / V, U = kColumnLoads > 0 ? kColumnLoads : 1;
#pragma unroll
    for (int j = 0; j < W; j++) acc[j] = pol.identity();
    I k = k0;
    for (; k + (U - 1) * step < k1; k += U * step) {
        opgen::pack<T, V> x[U][NP];
#pragma unroll
        for (int u = 0; u < U; u++) {
#pragma unroll
            for (int q = 0; q < NP; q++) x[u][q] = load_row_pack<T, V>(p + (k + u * step) * rs + q * V);
        }
#pragma unroll
        for (int u = 0; u < U; u++) {
#pragma unroll
            for (int j = 0; j < W; j++) acc[j] = pol.update(acc[j], x[u][j / V].v[j % V], k + u * step);
        }
    }
    for (; k < k1; k += step) {
        opgen::pack<T, V> x[NP];
#pragma unroll
        for (int q = 0; q < NP; q++) x[q] = load_row_pack<T, V>(p + k * rs + q * V);
#pragma unroll
        for (int j = 0; j < W; j++) acc[j] = pol.update(acc[j], x[j / V].v[j % V], k);
    }
}

// Rows k, k + nl, ... below k1 of the one group at p (row stride rs), combined:
// kStridedLoads loads in flight before their updates, which keep k's order (one load at a
// time was slower: bench/results/NOTES.md, "Tuning figures").
template <typename I, class Pol, typename T>
__device__ __forceinline__ typename Pol::P accumulate_strided_rows(const Pol& pol, const T* p, const I rs, I k,
                                                                   const I k1, const I nl) {
    typename Pol::P acc = pol.identity();
    constexpr int U = kStridedLoads;
    for (; k + (U - 1) * nl < k1; k += U * nl) {
        T x[U];
#pragma unroll
        for (int u = 0; u < U; u++) x[u] = p[(k + u * nl) * rs];
#pragma unroll
        for (int u = 0; u < U; u++) acc = pol.update(acc, x[u], k + u * nl);
    }
    for (; k < k1; k += nl) acc = pol.update(acc, p[k * rs], k);
    return acc;
}

// The groups of the source view.
template <typename T> struct group_source {
    const T* src;
    size_t el;  // elements per group
    size_t nd;
    const size_t* dims;
    const size_t* strides;
    bool contiguous;  // the whole view
    bool simple;      // the group is the last dim: element k of group g at base(g) + k * rs
    size_t rs;
    // A thread per item: neighbouring groups a thread reduces at once, reading one row of
    // them with OPGEN_COLUMN_PACKS accesses of kPack elements (16 bytes for 2- to 8-byte types,
    // 8 for u8; kColumns at most 8),
    // where every such access is aligned: the view's first element, the innermost kept dim's
    // size and every other stride multiples of kColumns elements. Else 1 (a group a thread).
    static constexpr int kPack = opgen::pack_width<T>::value < 8 ? opgen::pack_width<T>::value : 8;  // one access
    static constexpr int kColumns =
        kPack * OPGEN_COLUMN_PACKS < 8 ? kPack * OPGEN_COLUMN_PACKS : 8;  // OPGEN_COLUMN_PACKS accesses
    static_assert(kColumns % kPack == 0, "whole accesses a row");
    unsigned int cols;
    // A rank-2 view given by value (init_columns: pass 4), no info array: dims (groups, el),
    // strides (1, rs); group g starts at element g.
    bool by_value;
    size_t groups2;

    __device__ __forceinline__ void init(const T* s, size_t el_, size_t num_dims, const size_t* info) {
        src = s;
        el = el_;
        nd = num_dims;
        dims = info;
        strides = info ? info + num_dims : nullptr;
        by_value = false;
        groups2 = 0;
        contiguous = info == nullptr || opgen::is_contiguous(num_dims, info, info + num_dims);
        simple = contiguous || (nd >= 1 && dims[nd - 1] == el);
        rs = contiguous ? 1 : (nd >= 1 ? strides[nd - 1] : 1);
        cols = 1;
        if (kColumns > 1 && kColumnLoads > 0 && thread_per_item()) {  // OPGEN_COLUMN_LOADS 0: off
            const size_t w = (size_t)kColumns;
            bool fits = reinterpret_cast<unsigned long long>(src) % (w * sizeof(T)) == 0 && dims[nd - 2] % w == 0 &&
                        rs % w == 0;
            for (size_t d = 0; d + 2 < nd; d++) fits = fits && (dims[d] == 1 || strides[d] % w == 0);
            if (fits) cols = (unsigned int)kColumns;
        }
    }

    // Pass 4: `groups` groups of `el_` rows, row stride `row_stride` (elements), group g at
    // element g: what init gives for the info dims (groups, el_) and strides (1, row_stride),
    // without reading them from device memory before the first row.
    __device__ __forceinline__ void init_columns(const T* s, size_t el_, size_t groups, size_t row_stride) {
        src = s;
        el = el_;
        nd = 2;
        dims = nullptr;
        strides = nullptr;
        contiguous = false;
        simple = true;
        rs = row_stride;
        by_value = true;
        groups2 = groups;
        cols = 1;
        if (kColumns > 1 && kColumnLoads > 0 && thread_per_item()) {
            const size_t w = (size_t)kColumns;
            if (reinterpret_cast<unsigned long long>(src) % (w * sizeof(T)) == 0 && groups % w == 0 && rs % w == 0)
                cols = (unsigned int)kColumns;
        }
    }

    __device__ __forceinline__ unsigned int columns() const { return cols; }

    // One thread per item: the group's elements are strided, the groups' first elements
    // adjacent (the innermost kept dim has stride 1).
    __device__ __forceinline__ bool thread_per_item() const {
        if (by_value) return rs != 1 && groups2 > 1;
        return !contiguous && simple && rs != 1 && nd >= 2 && strides[nd - 2] == 1 && dims[nd - 2] > 1;
    }

    __device__ __forceinline__ size_t warp_item_max() const { return kWarpItemMax; }

    __device__ __forceinline__ size_t base(size_t g) const {
        if (contiguous) return g * el;
        if (by_value) return g;
        return nd > 1 ? opgen::get_strided_index(g, nd - 1, dims, strides) : 0;
    }

    // Elements [k0, k1) of the kColumns neighbouring groups g, g + 1, ... (cols == kColumns:
    // a thread per item), one state each: kColumnLoads rows in flight, each one aligned
    // access of the kColumns elements, the updates in k's order.
    // Rows k0, k0 + step, ... below k1.
    template <class Pol>
    __device__ __forceinline__ void accumulate_columns(const Pol& pol, size_t g, size_t k0, size_t k1, size_t step,
                                                       typename Pol::P (&acc)[kColumns]) const {
        accumulate_column_rows<size_t, kColumns, kPack>(pol, src + base(g), rs, k0, k1, step, acc);
    }

    // The states of elements [k0, k1) of group g that lane `lane` of `nl` cooperating
    // threads covers, combined.
    template <class Pol>
    __device__ __forceinline__ typename Pol::P accumulate(const Pol& pol, size_t g, size_t k0, size_t k1,
                                                          unsigned int lane, unsigned int nl) const {
        typedef typename Pol::P P;
        P acc = pol.identity();
        if (k0 >= k1) return acc;
        if (simple && rs != 1) {
            // strided elements (a thread per item, reducing a leading dim)
            return accumulate_strided_rows<size_t>(pol, src + base(g), rs, k0 + lane, k1, (size_t)nl);
        }
        if (!simple) {
            for (size_t k = k0 + lane; k < k1; k += nl) {
                acc = pol.update(acc, src[opgen::get_strided_index(g * el + k, nd, dims, strides)], k);
            }
            return acc;
        }
        const T* p = src + base(g);
        constexpr int N = opgen::pack_width<T>::value;
        size_t k = k0;
        if (N > 1) {
            // head: up to the first 16-byte boundary (p is aligned to sizeof(T))
            const size_t mis = (size_t)((reinterpret_cast<unsigned long long>(p + k) & 15ull) / sizeof(T));
            size_t head = mis ? (size_t)N - mis : 0;
            if (head > k1 - k) head = k1 - k;
            if (lane < head) acc = pol.update(acc, p[k + lane], k + lane);
            k += head;
            const size_t nvec = (k1 - k) / N;
            const T* q = p + k;
            size_t v = lane;
            // U 16-byte loads in flight per thread: 4 for 4- and 8-byte types, fewer for the
            // narrow ones (their N elements per load already unroll the update)
            constexpr int U = N >= 8 ? 16 / N : 4;
            for (; v + (U - 1) * (size_t)nl < nvec; v += U * (size_t)nl) {
                opgen::pack<T, N> x[U];
#pragma unroll
                for (int u = 0; u < U; u++) x[u] = opgen::load_pack<T, N>(q + (v + u * (size_t)nl) * N);
#pragma unroll
                for (int u = 0; u < U; u++) {
                    const size_t kk = k + (v + u * (size_t)nl) * N;
#pragma unroll
                    for (int j = 0; j < N; j++) acc = pol.update(acc, x[u].v[j], kk + j);
                }
            }
            for (; v < nvec; v += nl) {
                const opgen::pack<T, N> x = opgen::load_pack<T, N>(q + v * N);
                const size_t kk = k + v * N;
#pragma unroll
                for (int j = 0; j < N; j++) acc = pol.update(acc, x.v[j], kk + j);
            }
            k += nvec * N;
        }
        for (size_t kk = k + lane; kk < k1; kk += nl) acc = pol.update(acc, p[kk], kk);
        return acc;
    }
};

// A partial state as another block of the launch wrote it: a volatile read bypasses the
// (non-coherent) L1, as pass 0's counter-and-fence handoff needs.
template <typename P> __device__ __forceinline__ P load_state(const P* p) { return *static_cast<const volatile P*>(p); }
template <typename C> __device__ __forceinline__ arg_state<C> load_state(const arg_state<C>* p) {
    const volatile arg_state<C>* q = p;
    arg_state<C> s;
    s.v = q->v;
    s.i = q->i;
    return s;
}

// The partial states of pass 1, group-major.
template <typename P> struct partial_source {
    const P* partial;
    size_t chunks;
    __device__ __forceinline__ bool thread_per_item() const { return false; }
    static constexpr int kColumns = 1;
    __device__ __forceinline__ unsigned int columns() const { return 1; }
    template <class Pol>
    __device__ __forceinline__ void accumulate_columns(const Pol& pol, size_t, size_t, size_t, size_t,
                                                       P (&acc)[1]) const {
        acc[0] = pol.identity();  // never called: columns() is 1
    }
    // a warp for at most 32 states per lane (one load in flight each), else the block
    __device__ __forceinline__ size_t warp_item_max() const { return kWarpPartialMax; }
    template <class Pol>
    __device__ __forceinline__ P accumulate(const Pol& pol, size_t g, size_t k0, size_t k1, unsigned int lane,
                                            unsigned int nl) const {
        P acc = pol.identity();
        const P* p = partial + g * chunks;
        size_t k = k0 + lane;
        for (; k + 3 * (size_t)nl < k1; k += 4 * (size_t)nl) {  // four loads in flight
            const P x0 = load_state(p + k), x1 = load_state(p + k + nl);
            const P x2 = load_state(p + k + 2 * (size_t)nl), x3 = load_state(p + k + 3 * (size_t)nl);
            acc = pol.combine(acc, pol.combine(pol.combine(x0, x1), pol.combine(x2, x3)));
        }
        for (; k < k1; k += nl) acc = pol.combine(acc, load_state(p + k));
        return acc;
    }
};

// ---------------------------------------------------------------------------- driver

// The chunk length for `chunks` chunks of `el` elements: a multiple of 16 elements (so
// chunks start on 16-byte boundaries when the group does), the last chunks possibly
// short or empty. runtime/gpu/reduce.py's reduce_op computes the same.
__device__ __forceinline__ size_t chunk_length(size_t el, size_t chunks) {
    const size_t len = (el + chunks - 1) / chunks;
    return chunks == 1 ? el : (len + 15) / 16 * 16;
}

// reduce_items' thread per item where each item is Source::kColumns neighbouring groups
// (group_source::cols): units x chunks items, unit u being groups u * kColumns, ...
template <class Pol, class Source>
__device__ __noinline__ void reduce_column_items(const Pol pol, const Source source, size_t units, size_t el,
                                                 size_t chunks, size_t len, void* out, bool to_partial,
                                                 unsigned int block, unsigned int blocks) {
    typedef typename Pol::P P;
    constexpr int W = Source::kColumns;
    const size_t items = units * chunks;
    const size_t teams = (size_t)blocks * blockDim.x;
    for (size_t it = (size_t)block * blockDim.x + threadIdx.x; it < items; it += teams) {
        const size_t c = it / units, g = (it - c * units) * W;  // neighbouring threads: neighbouring groups
        P accs[W];
        if (OPGEN_COLUMN_INTERLEAVED && chunks > 1) {  // rows c, c + chunks, ...
            source.accumulate_columns(pol, g, c, el, chunks, accs);
        } else {
            const size_t k0 = c * len, k1 = k0 + len < el ? k0 + len : el;
            source.accumulate_columns(pol, g, k0, k1, 1, accs);
        }
#pragma unroll
        for (int j = 0; j < W; j++) {
            if (to_partial) {
                static_cast<P*>(out)[(g + j) * chunks + c] = accs[j];
            } else {
                pol.store(out, g + j, accs[j]);
            }
        }
    }
}

// Reduces groups x chunks work items of `el` elements each from `source`: the state of
// chunk c of group g goes to out[g * chunks + c] (to_partial), else (one chunk) the
// final value to dst[g] = out[g]. One loop for the three ways (a thread, a warp or a
// block per item), so the source's accumulate is instantiated once. The items are shared
// among `blocks` blocks, this one being number `block` (the grid, or pass 0's last block
// alone).
template <class Pol, class Source>
__device__ __forceinline__ void reduce_items(const Pol& pol, const Source& source, size_t groups, size_t el,
                                             size_t chunks, void* out, bool to_partial, unsigned int block,
                                             unsigned int blocks) {
    typedef typename Pol::P P;
    __shared__ P sh[32];
    if (blockDim.x > kMaxBlock || el == 0 || chunks == 0) return;
    const size_t len = chunk_length(el, chunks);
    const unsigned int ws = (unsigned int)warpSize;
    // 0: a thread per item, 1: a warp per item, 2: a block per item
    const int way = source.thread_per_item() ? 0 : (len <= source.warp_item_max() && blockDim.x % ws == 0) ? 1 : 2;
    // a thread per item: `cols` neighbouring groups an item (cols divides the groups)
    const unsigned int cols = way == 0 ? source.columns() : 1u;
    const size_t units = groups / cols;
    const size_t items = units * chunks;
    if (cols > 1) {  // a thread per item, kColumns groups an item: in a function of its own (registers)
        reduce_column_items(pol, source, units, el, chunks, len, out, to_partial, block, blocks);
        return;
    }
    size_t team, teams;
    unsigned int lane, width;
    if (way == 0) {
        team = (size_t)block * blockDim.x + threadIdx.x;
        teams = (size_t)blocks * blockDim.x;
        lane = 0;
        width = 1;
    } else if (way == 1) {
        team = (size_t)block * (blockDim.x / ws) + threadIdx.x / ws;
        teams = (size_t)blocks * (blockDim.x / ws);
        lane = threadIdx.x % ws;
        width = ws;
    } else {
        team = block;
        teams = blocks;
        lane = threadIdx.x;
        width = blockDim.x;
    }
    for (size_t it = team; it < items; it += teams) {
        size_t g, c;
        if (way == 0) {  // neighbouring threads: neighbouring groups, one chunk
            c = it / units;
            g = (it - c * units) * cols;
        } else {
            g = it / chunks;
            c = it - g * chunks;
        }
        const size_t k0 = c * len, k1 = k0 + len < el ? k0 + len : el;
        P acc = source.accumulate(pol, g, k0, k1, lane, width);
        if (way == 1) {
            acc = warp_reduce(pol, acc, ws);
        } else if (way == 2) {
            acc = block_reduce(pol, acc, sh);
        }
        if (lane == 0) {
            if (to_partial) {
                static_cast<P*>(out)[g * chunks + c] = acc;
            } else {
                pol.store(out, g, acc);
            }
        }
    }
}

// fast_* and the passes of reduce_chunks_*: one copy of the code per policy type (compile time).
template <class Pol, typename T>
__device__ __noinline__ void reduce_groups(const Pol pol, const size_t src_numel, const size_t el,
                                           const size_t num_dims, const size_t* info, const size_t chunks,
                                           const T* src, void* out, const bool to_partial) {
    static_assert(sizeof(typename Pol::P) <= 16, "partial states are at most 16 bytes");
    if (el == 0) return;
    group_source<T> source;
    source.init(src, el, num_dims, info);
    reduce_items(pol, source, src_numel / el, el, to_partial ? chunks : 1, out, to_partial, blockIdx.x, gridDim.x);
}

// Each group's `chunks` partial states to dst, by `blocks` blocks (see reduce_items).
template <class Pol>
__device__ __noinline__ void reduce_finish(const Pol pol, const size_t groups, const size_t chunks,
                                           const void* partial, void* dst, unsigned int block, unsigned int blocks) {
    const partial_source<typename Pol::P> source{static_cast<const typename Pol::P*>(partial), chunks};
    reduce_items(pol, source, groups, chunks, 1, dst, false, block, blocks);
}

// Pass 0's first half where each warp has one chunk and a block's warps consecutive chunks
// of one group (reduce_once checks): the block's states combined, one to out[blockIdx.x],
// so the last block reads a state per block, not per warp (fewer rounds of loads at the
// end, when the rest of the device is idle).
template <class Pol, class Source>
__device__ __noinline__ void reduce_block_states(const Pol pol, const Source source, size_t el, size_t chunks,
                                                 void* out) {
    typedef typename Pol::P P;
    __shared__ P sh[32];
    const unsigned int ws = (unsigned int)warpSize, lane = threadIdx.x % ws, warp = threadIdx.x / ws;
    const unsigned int wpb = blockDim.x / ws;
    P acc;
    if (OPGEN_PASS0_INTERLEAVED) {  // the group's blocks' threads interleaved over all of it
        const size_t per_group = chunks / wpb, g = blockIdx.x / per_group;
        const size_t b = blockIdx.x - g * per_group;
        acc = source.accumulate(pol, g, 0, el, (unsigned int)(b * blockDim.x + threadIdx.x),
                                (unsigned int)(per_group * blockDim.x));
    } else {  // a chunk a warp
        const size_t it = (size_t)blockIdx.x * wpb + warp;
        const size_t g = it / chunks, c = it - g * chunks;
        const size_t len = chunk_length(el, chunks);
        const size_t k0 = c * len, k1 = k0 + len < el ? k0 + len : el;
        acc = source.accumulate(pol, g, k0, k1, lane, ws);
    }
    acc = warp_reduce(pol, acc, ws);
    if (lane == 0) sh[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = warp_reduce(pol, lane < wpb ? sh[lane] : pol.identity(), ws);
        if (lane == 0) static_cast<P*>(out)[blockIdx.x] = acc;
    }
}

// Pass 0: pass 1, then the last block to finish does pass 2 alone (see the top of the file).
// Where the grid gives each warp one chunk and a block's chunks share a group (the runtime
// launches so: chunks a multiple of the block's warps, a warp per chunk), each block leaves
// one state (reduce_block_states), else one per chunk.
template <class Pol, typename T>
__device__ __noinline__ void reduce_once(const Pol pol, const size_t src_numel, const size_t el,
                                         const size_t num_dims, const size_t* info, const size_t chunks,
                                         const T* src, void* partial, void* dst) {
    __shared__ bool last;
    unsigned int* finished = static_cast<unsigned int*>(partial);
    void* states = static_cast<char*>(partial) + kStateHeader;
    const size_t groups = src_numel / el;
    const unsigned int ws = (unsigned int)warpSize, wpb = blockDim.x / ws;
    group_source<T> source;
    source.init(src, el, num_dims, info);
    const bool by_block = OPGEN_BLOCK_STATES && blockDim.x <= kMaxBlock && blockDim.x % ws == 0 && wpb > 1 &&
                          chunks % wpb == 0 && (size_t)gridDim.x * wpb == groups * chunks &&
                          !source.thread_per_item() && chunk_length(el, chunks) <= kWarpItemMax;
    if (by_block) {
        reduce_block_states(pol, source, el, chunks, states);
    } else {
        reduce_groups(pol, src_numel, el, num_dims, info, chunks, src, states, true);
    }
    __threadfence();  // this thread's states are visible device-wide before its block counts
    __syncthreads();
    if (threadIdx.x == 0) last = atomicAdd(finished, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();  // every other block's states are seen past the count
    reduce_finish(pol, groups, by_block ? chunks / wpb : chunks, states, dst, 0u, 1u);
    if (threadIdx.x == 0) *finished = 0u;  // every block has counted: ready for the next launch
}

// Pass 3's block combine: 1 combines the warps' states through shared slots, kTileRound warps a
// round (two barriers a round), and only thread 0 fences and counts the block; 0: warp after
// warp, a barrier each, every thread fencing. The same states in the same order either way (the
// same bits). -D may set it: 1 was no faster for the sum over dim 0 of (8192, 8192) f32, nor with
// grids of several blocks per slot (on an H100, commit cdeec47), so 0 stays the default.
#ifndef OPGEN_TILE_COMBINE
#define OPGEN_TILE_COMBINE 0
#endif
constexpr unsigned int kTileRound = 8;
// Shared memory for those slots: one buffer for every element type and policy (AMD's compilers
// count every such buffer of the module against each kernel's 64 KB), kTileRound slots of a
// tile's groups, each group's state at most 64 bytes (kColumns x its state: 8 x 8 bytes for the
// 1- and 2-byte types' (value, index) pairs, 2 x 16 for the 8-byte types').
constexpr size_t kTileSlotBytes = kTileThreads * 64;
__device__ __forceinline__ unsigned char* tile_slots() {
    __shared__ unsigned long long buffer[kTileRound * kTileSlotBytes / 8];  // 8-byte aligned: every state's
    return reinterpret_cast<unsigned char*>(buffer);
}

// Pass 3: a leading dim's groups (group_source::thread_per_item) in one launch. A tile is
// `tx_n` threads across (32, fewer where there are fewer units), each holding `W`
// neighbouring groups (group_source::cols: W = kColumns, else 1), so 32 x 16 bytes of each
// row a warp; the group's rows are split into `splits` consecutive slices of
// ceil(el / splits) rows (the last one shorter, or empty), and a block reduces one slice
// of one tile: its ty_n = blockDim.x / tx_n rows of threads read the slice's rows interleaved
// (row r0 + ty, r0 + ty + ty_n, ...). With OPGEN_TILE_INTERLEAVED (the default) a slice is
// not a band but every splits-th run of ty_n rows: rows s * ty_n + ty + k * splits * ty_n,
// so the grid's blocks read one window of rows at a time. The block's rows of threads are combined (within a
// warp by shuffles, then warp after warp through shared memory) and the block writes one
// state per group of its tile to partial[s * groups + g]; then it counts itself on its
// tile's counter (after a __threadfence), and the block that arrives last combines the
// tile's `splits` states of every group in the order s = 0, 1, ... (so a sum is the same run
// to run, whichever block finishes last), writes dst and zeroes the counter for the next
// launch. The counters precede `partial`: tile t's is ((uint32_t*)partial)[-1 - t], the
// runtime keeps at least as many zeroed there (runtime/gpu/reduce.py's _pass3_scratch).
// Items (tile, slice) are numbered slice-major: block b of the grid takes items b,
// b + gridDim.x, ... (any grid is correct). On one stream at a time, as pass 0.
// I: the index type of the tile's sizes, rows and states (uint32_t where reduce_columns found
// that they fit, else size_t). Inlined into its caller: reduce_columns_<dt>'s 32-bit path, or a
// __noinline__ wrapper (reduce_column_tiles_call) for the others.
template <class Pol, class Source, int W, typename I>
__device__ __forceinline__ void reduce_column_tiles(const Pol& pol, const Source& source, const I groups, const I el,
                                                    const I splits, void* partial, void* dst) {
    typedef typename Pol::P P;
#if OPGEN_TILE_COMBINE
    // kTileRound warps' states a round
    P* const slots = reinterpret_cast<P*>(tile_slots());
    constexpr unsigned int kSlot = kTileThreads * W;  // a slot: a state per group of a tile
    static_assert(kSlot * sizeof(P) <= kTileSlotBytes, "a tile's states fit a slot");
#else
    __shared__ P sh[kTileThreads * W];
#endif
    __shared__ bool last;
    const unsigned int ws = (unsigned int)warpSize, lane = threadIdx.x % ws, warp = threadIdx.x / ws;
    const unsigned int nw = (blockDim.x + ws - 1) / ws;
    const unsigned int in_warp = blockDim.x - warp * ws < ws ? blockDim.x - warp * ws : ws;
    const I units = groups / W;
    unsigned int tx_n = kTileThreads;  // a power of two, at least the units where they are fewer
    while (tx_n > 1 && ((I)(tx_n / 2) >= units || tx_n > blockDim.x)) tx_n /= 2;
    const unsigned int ty_n = blockDim.x / tx_n, tx = threadIdx.x % tx_n, ty = threadIdx.x / tx_n;
    const I tiles = (units + tx_n - 1) / tx_n, items = tiles * splits;
    const I rows = (el + splits - 1) / splits;
    const unsigned int span = tx_n * (unsigned int)W;  // groups of a tile
    P* states = static_cast<P*>(partial);
    unsigned int* counters = static_cast<unsigned int*>(partial);
    for (I it = blockIdx.x; it < items; it += gridDim.x) {
        const I s = it / tiles, tile = it - s * tiles;
        const I u = tile * tx_n + tx, g0 = tile * span;
        const I r0 = s * rows < el ? s * rows : el, r1 = r0 + rows < el ? r0 + rows : el;
        P acc[W];
#pragma unroll
        for (int j = 0; j < W; j++) acc[j] = pol.identity();
        if (ty < ty_n && u < units) {
            // OPGEN_TILE_INTERLEAVED: rows s * ty_n + ty + k * splits * ty_n; else the slice's band
            const I k0 = OPGEN_TILE_INTERLEAVED ? 0 : r0, k1 = OPGEN_TILE_INTERLEAVED ? el : r1;
            const I first = OPGEN_TILE_INTERLEAVED ? s * ty_n + ty : ty;
            const I step = OPGEN_TILE_INTERLEAVED ? splits * ty_n : ty_n;
            if constexpr (W > 1) {
                source.accumulate_columns(pol, u * W, k0 + first, k1, step, acc);
            } else {
                acc[0] = source.accumulate(pol, u, k0, k1, first, step);
            }
        }
        // the warp's rows of threads: lanes tx and tx + tx_n, ... hold the same groups
        for (unsigned int off = tx_n; off < ws; off <<= 1) {
#pragma unroll
            for (int j = 0; j < W; j++) {
                const P o = opgen::shfl_down(acc[j], off, opgen::lane_mask(in_warp));
                if (lane + off < in_warp) acc[j] = pol.combine(acc[j], o);
            }
        }
        unsigned int* const counter = counters - 1 - tile;
#if OPGEN_TILE_COMBINE
        // then the warps' states (lanes [0, tx_n) of each) through shared memory, kTileRound warps
        // a round (one barrier to write them, one after reading), combined in the warps' order;
        // each thread writes its groups' states to the scratch
        // (several rounds only where the block has more than kTileRound warps, so more threads
        // than a tile has groups (at most 32 x 8): each thread keeps its group's running state)
        P run = pol.identity();
        for (unsigned int w0 = 0; w0 < nw; w0 += kTileRound) {
            if (warp >= w0 && warp < w0 + kTileRound && lane < tx_n) {
#pragma unroll
                for (int j = 0; j < W; j++) slots[(warp - w0) * kSlot + lane * W + j] = acc[j];
            }
            __syncthreads();
            const unsigned int n = nw - w0 < kTileRound ? nw - w0 : kTileRound;
            for (unsigned int t = threadIdx.x; t < span; t += blockDim.x) {
                P a = w0 == 0 ? slots[t] : pol.combine(run, slots[t]);
                for (unsigned int w = 1; w < n; w++) a = pol.combine(a, slots[w * kSlot + t]);
                if (w0 + kTileRound < nw) {
                    run = a;
                } else if (g0 + t < groups) {
                    states[s * groups + g0 + t] = a;
                }
            }
            __syncthreads();  // the slots are read; the block's states are all stored
        }
        // thread 0 publishes the block's states (a fence after the barrier covers the whole
        // block's stores, as a grid-wide sync does) and counts the block on its tile's counter;
        // the last block's thread 0 fences again, so the block reads every other block's states
        if (threadIdx.x == 0) {
            __threadfence();
            last = atomicAdd(counter, 1u) == splits - 1;
            if (last) __threadfence();
        }
        __syncthreads();
#else
        // then warp after warp (lanes [0, tx_n) of each), in the warps' order
        for (unsigned int w = 0; w < nw; w++) {
            if (warp == w && lane < tx_n) {
#pragma unroll
                for (int j = 0; j < W; j++) sh[lane * W + j] = w == 0 ? acc[j] : pol.combine(sh[lane * W + j], acc[j]);
            }
            __syncthreads();
        }
        for (unsigned int t = threadIdx.x; t < span; t += blockDim.x) {
            if (g0 + t < groups) states[s * groups + g0 + t] = sh[t];
        }
        __threadfence();  // this thread's states are visible device-wide before its block counts
        __syncthreads();
        if (threadIdx.x == 0) last = atomicAdd(counter, 1u) == splits - 1;
        __syncthreads();
        if (last) __threadfence();  // the tile's other blocks' states are seen past the count
#endif
        if (last) {
            for (unsigned int t = threadIdx.x; t < span; t += blockDim.x) {
                const I g = g0 + t;
                if (g >= groups) continue;
                P a = load_state(states + g);
                I k = 1;
                // kCombineLoads states in flight, combined in slice order (the same bits)
                for (; k + kCombineLoads <= splits; k += kCombineLoads) {
                    P x[kCombineLoads];
#pragma unroll
                    for (int u = 0; u < kCombineLoads; u++) x[u] = load_state(states + (k + u) * groups + g);
#pragma unroll
                    for (int u = 0; u < kCombineLoads; u++) a = pol.combine(a, x[u]);
                }
                for (; k < splits; k++) a = pol.combine(a, load_state(states + k * groups + g));
                pol.store(dst, g, a);
            }
            if (threadIdx.x == 0) *counter = 0u;  // every block of the tile has counted
        }
        __syncthreads();  // sh and `last` serve the next item
    }
}

// reduce_column_tiles out of line, for the paths of reduce_columns_<dt> that index in size_t
// (a view given by its info array, or too large for 32 bits): one call a launch, so the inlined
// 32-bit path alone sets the kernel's registers and stack.
template <class Pol, class Source, int W>
__device__ __noinline__ void reduce_column_tiles_call(const Pol pol, const Source source, const size_t groups,
                                                      const size_t el, const size_t splits, void* partial, void* dst) {
    reduce_column_tiles<Pol, Source, W, size_t>(pol, source, groups, el, splits, partial, dst);
}

// The column tiles of a view of group_source (its info array, or a rank-2 view by value in
// size_t): the source's columns a thread decide W.
template <class Pol, typename T>
__device__ __forceinline__ void reduce_columns_of(const Pol& pol, const group_source<T>& source, const size_t groups,
                                                  const size_t el, const size_t splits, void* partial, void* dst) {
    if (!source.thread_per_item()) return;  // the runtime launches column tiles only for these
    if (group_source<T>::kColumns > 1 && source.columns() > 1) {
        reduce_column_tiles_call<Pol, group_source<T>, group_source<T>::kColumns>(pol, source, groups, el, splits,
                                                                                  partial, dst);
    } else {
        reduce_column_tiles_call<Pol, group_source<T>, 1>(pol, source, groups, el, splits, partial, dst);
    }
}

// A rank-2 view given by value whose indices fit 32 bits (rank2_fits32): dims (groups, el),
// strides (1, rs), group g's row k at element g + k * rs. The same loads, updates and order as
// group_source's (init_columns) with 32-bit index math.
template <typename T> struct rank2_source {
    const T* src;
    uint32_t rs;
    static constexpr int kPack = group_source<T>::kPack;
    static constexpr int kColumns = group_source<T>::kColumns;

    template <class Pol>
    __device__ __forceinline__ void accumulate_columns(const Pol& pol, uint32_t g, uint32_t k0, uint32_t k1,
                                                       uint32_t step, typename Pol::P (&acc)[kColumns]) const {
        accumulate_column_rows<uint32_t, kColumns, kPack>(pol, src + g, rs, k0, k1, step, acc);
    }

    template <class Pol>
    __device__ __forceinline__ typename Pol::P accumulate(const Pol& pol, uint32_t g, uint32_t k0, uint32_t k1,
                                                          uint32_t lane, uint32_t nl) const {
        return accumulate_strided_rows<uint32_t>(pol, src + g, rs, k0 + lane, k1, nl);
    }
};

// Whether a rank-2 view's column tiles index in 32 bits: every element offset ((el - 1) * rs +
// groups), every state (splits * groups) and every row with a loop's look-ahead (el plus 8 steps of
// at most 2^16 slices of 1024 rows of threads) below 2^32; the bounds keep a margin.
__device__ __forceinline__ bool rank2_fits32(size_t groups, size_t el, size_t rs, size_t splits) {
    constexpr size_t kLimit = (size_t)1 << 31;
    if (groups >= kLimit || el >= kLimit || rs >= kLimit || splits >= ((size_t)1 << 16)) return false;
    return (el - 1) * rs + groups < kLimit && splits * groups < kLimit;
}

// The column tiles of a rank-2 view with 32-bit indices, inlined (no call, no stack frame, no
// 64-bit division at a block's start): W as the view's alignment allows (group_source::init_columns'
// test), nothing where a thread does not reduce a leading dim's groups.
template <class Pol, typename T>
__device__ __forceinline__ void reduce_rank2_tiles(const Pol& pol, const T* src, const uint32_t groups,
                                                   const uint32_t el, const uint32_t rs, const uint32_t splits,
                                                   void* partial, void* dst) {
    if (rs == 1 || groups < 2) return;  // group_source::thread_per_item of a view by value
    const rank2_source<T> source{src, rs};
    constexpr uint32_t w = (uint32_t)rank2_source<T>::kColumns;
    if (w > 1 && kColumnLoads > 0 && reinterpret_cast<unsigned long long>(src) % (w * sizeof(T)) == 0 &&
        groups % w == 0 && rs % w == 0) {
        reduce_column_tiles<Pol, rank2_source<T>, rank2_source<T>::kColumns, uint32_t>(pol, source, groups, el, splits,
                                                                                       partial, dst);
    } else {
        reduce_column_tiles<Pol, rank2_source<T>, 1, uint32_t>(pol, source, groups, el, splits, partial, dst);
    }
}

template <typename T> __device__ __forceinline__ sum_policy<T> sum_of() { return sum_policy<T>{}; }
template <typename T> __device__ __forceinline__ extreme_policy<T> extreme_of(bool is_max, bool arg) {
    return extreme_policy<T>{is_max, arg};
}

// fast_<op>_<dt>: one pass, each group by a thread, a warp or a block; `Op` is the op's code
// (generated/kernel_facts.h: ops.yaml's reduce ops, in order).
template <uint32_t Op, typename T>
__device__ __forceinline__ void reduce_fast(const size_t src_numel, const size_t el, const size_t num_dims,
                                            const size_t* info, const T* src, void* dst) {
    static_assert(Op < OPGEN_REDUCE_COUNT, "an op of ops.yaml's reduce section");
    if constexpr (Op == OPGEN_REDUCE_SUM) {
        reduce_groups(sum_of<T>(), src_numel, el, num_dims, info, 1, src, dst, false);
    } else {
        reduce_groups(extreme_of<T>(Op == OPGEN_REDUCE_MAX || Op == OPGEN_REDUCE_ARGMAX,
                                    Op == OPGEN_REDUCE_ARGMIN || Op == OPGEN_REDUCE_ARGMAX),
                      src_numel, el, num_dims, info, 1, src, dst, false);
    }
}

// The passes of a chunked reduction (see the top of the file).
template <typename T>
__device__ __forceinline__ void reduce_chunks(const uint32_t op, const uint32_t pass, const size_t src_numel,
                                              const size_t el, const size_t num_dims, const size_t* info,
                                              const size_t chunks, const T* src, void* partial, void* dst) {
    if (el == 0 || op >= OPGEN_REDUCE_COUNT) return;
    if (op == OPGEN_REDUCE_SUM) {
        if (pass == 0u) {
            reduce_once(sum_of<T>(), src_numel, el, num_dims, info, chunks, src, partial, dst);
        } else if (pass == 1u) {
            reduce_groups(sum_of<T>(), src_numel, el, num_dims, info, chunks, src, partial, true);
        } else {
            reduce_finish(sum_of<T>(), src_numel / el, chunks, partial, dst, blockIdx.x, gridDim.x);
        }
    } else {
        const extreme_policy<T> pol = extreme_of<T>(op == OPGEN_REDUCE_MAX || op == OPGEN_REDUCE_ARGMAX,
                                                     op == OPGEN_REDUCE_ARGMIN || op == OPGEN_REDUCE_ARGMAX);
        if (pass == 0u) {
            reduce_once(pol, src_numel, el, num_dims, info, chunks, src, partial, dst);
        } else if (pass == 1u) {
            reduce_groups(pol, src_numel, el, num_dims, info, chunks, src, partial, true);
        } else {
            reduce_finish(pol, src_numel / el, chunks, partial, dst, blockIdx.x, gridDim.x);
        }
    }
}

// reduce_columns_<dt>: the column tiles in one launch (see reduce_column_tiles), for `groups`
// groups of `el` rows where a thread reduces a leading dim's groups. info nullptr: a rank-2 view
// given by value, dims (groups, el), strides (1, row_stride); it takes 32-bit indices where they
// fit, inlined. Else `info` holds the view's num_dims dims and strides (runtime/gpu/reduce.py's
// merged view, the reduced dim last). `splits` slices of each tile's rows; the tile counters
// precede `partial` (zero at launch, zero again after it). Blocks of at most OPGEN_COLUMN_BLOCK
// threads (the entry points' launch bound); a larger block does nothing.
template <typename T>
__device__ __forceinline__ void reduce_columns(const uint32_t op, const size_t groups, const size_t el,
                                               const size_t row_stride, const size_t num_dims, const size_t* info,
                                               const size_t splits, const T* src, void* partial, void* dst) {
    if (el == 0 || splits == 0 || groups == 0 || op >= OPGEN_REDUCE_COUNT || blockDim.x > OPGEN_COLUMN_BLOCK) return;
    const bool is_max = op == OPGEN_REDUCE_MAX || op == OPGEN_REDUCE_ARGMAX;
    const bool arg = op == OPGEN_REDUCE_ARGMIN || op == OPGEN_REDUCE_ARGMAX;
    if (info == nullptr && OPGEN_COLUMN_INDEX32 && rank2_fits32(groups, el, row_stride, splits)) {
        if (op == OPGEN_REDUCE_SUM) {
            reduce_rank2_tiles(sum_of<T>(), src, (uint32_t)groups, (uint32_t)el, (uint32_t)row_stride,
                               (uint32_t)splits, partial, dst);
        } else {
            reduce_rank2_tiles(extreme_of<T>(is_max, arg), src, (uint32_t)groups, (uint32_t)el, (uint32_t)row_stride,
                               (uint32_t)splits, partial, dst);
        }
        return;
    }
    group_source<T> source;
    if (info == nullptr) {
        source.init_columns(src, el, groups, row_stride);
    } else {
        source.init(src, el, num_dims, info);
    }
    if (op == OPGEN_REDUCE_SUM) {
        reduce_columns_of(sum_of<T>(), source, groups, el, splits, partial, dst);
    } else {
        reduce_columns_of(extreme_of<T>(is_max, arg), source, groups, el, splits, partial, dst);
    }
}

}  // namespace

// The entry points, one per (pattern, values) of ops.yaml's `kernel:` patterns: generated by gen
// from templates/hip/reduce.h.j2.
#include "reduce_entries.h"
