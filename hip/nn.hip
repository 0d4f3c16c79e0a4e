// NN ops (candle-nn's): sigmoid, softmax over the last dim, RMS and layer norms, rotary
// embeddings in Candle's three layouts, the softmax step of attention, arg_sort.
//
//   sigmoid_<dt>(numel, num_dims, info, inp, out)              any view; info: dims, strides, or nullptr
//   softmax_last_dim_<dt>(nrows, ncols, x, out)
//   rms_norm_<dt>(nrows, ncols, eps, x, alpha, out)
//   layer_norm_<dt>(nrows, ncols, eps, x, alpha, beta, out)
//   sdpa_softmax_<dt>(nrows, ncols, sq, scale, causal, scores)  in place; bf16, f16, f32
//   rope_i_<dt>(bh, td, x, cos, sin, out)                      Candle's rope_i / rope / rope_thd
//   rope_<dt>(bh, td, d, x, cos, sin, out)                     arguments; cos, sin: (>= t, d/2)
//   rope_thd_<dt>(b, t, h, d, x, cos, sin, out)
//   arg_sort_local_<dt>(nrows, ncols, pad, ascending, k_first, k_last, x, keys, idx, out)
//   arg_sort_merge_<dt>(nrows, pad, k, j, keys, idx)            every dtype; out: u32 indices
//
// dt: bf16, f16, f32, f64 unless said. Every tensor is contiguous (runtime/gpu/nn.py copies
// other views first, except sigmoid's); the pointers point at the first element. Values are
// computed in compute_t (float for bf16 / f16, double for f64) and rounded once on store.
// Semantics are runtime/cpu/nn_ops.py's.
//
// Row kernels (softmax_last_dim, sdpa_softmax, rms_norm, layer_norm; nrows rows of ncols):
// a block per row, in a grid-stride loop over rows (any grid), blockDim.x at most 512
// (declared with __launch_bounds__(OPGEN_ROW_BLOCK_MAX): ops.yaml's kernel_facts, 512). The
// runtime picks blockDim.x so that each
// thread holds at most kRowBytes (64) bytes of its row, V = 64 / sizeof(T) values,
// kept as loaded in 32-bit words (two half values to a register): the row is then read
// once into registers, reduced in ONE block reduction (warp shuffles, then one shared slot
// per warp) of mergeable parts (softmax: top and sum of exponentials; layer_norm: count,
// mean and squared deviations, Chan et al.'s update; rms_norm: the sum of squares) and
// written, with no second read (up to 512 * V elements: 8192 f32, 16384 bf16). A longer
// row is covered in segments of blockDim.x * V elements and read twice. Accesses are 16
// bytes wide where every row pointer is 16-byte aligned (aligned base pointers and a row
// length that is a multiple of 16 bytes), an element wide otherwise (then at most
// kLooseValues (8) values a thread: see row_values); neighbouring threads touch
// neighbouring addresses (bench/gpu.py --explore nn-rows compares settings; figures:
// bench/results/NOTES.md, "Tuning figures").
//
// sdpa_softmax: the rows of the scores S = Q K^T of (batch, sq, skv) attention, row r being
// query r % sq, are replaced by softmax(scale * S) over the keys the query sees: all, or
// with causal != 0 those up to r % sq + skv - sq (the mask aligned bottom-right). Keys it
// does not see get 0; a query that sees none (sq > skv) gets a row of zeros.
//
// arg_sort: a bitonic sort of (key, index) pairs, each row padded to a power of two `pad`.
// The key is a u64 ordered as the values (sort_key: NaN above +inf, -0.0 as 0.0, inverted
// for descending), ties go by index, so the order is total and stable and matches the cpu
// backend index for index (NaN last ascending, first descending). Padding is the largest
// pair. Types of at most 32 bits whose rows fit one chunk pack key and index into one u64
// (arg_sort_packed). arg_sort_local_<dt> sorts chunks of min(pad, kSortChunk) pairs in shared memory
// (a block per chunk, grid-stride): the merges k_first..k_last (powers of two) of the
// stages below the chunk's size. It reads the row's values (x != nullptr) or pairs from
// keys/idx, and writes the row's indices to out (out != nullptr) or pairs back. For rows
// past kSortChunk, arg_sort_merge_<dt> runs one stage (k, j >= the chunk) on global pairs:
// runtime/gpu/nn.py's arg_sort sequences the launches.
#include "compat.h"
#include "kernel_facts.h"
#include "elementwise.h"

namespace {

using opgen::compute_t;

// Bytes of a row a thread of a row kernel holds (ops.yaml's kernel_facts, the runtime's ROW_BYTES;
// overridable: bench/gpu.py --explore nn-rows compiles 32, 64 and 128 with -D, and 64 was best for
// every op).
constexpr int kRowBytes = OPGEN_ROW_BYTES;
static_assert(kRowBytes >= 16 && kRowBytes % 16 == 0, "ROW_BYTES: a thread holds whole 16-byte packs of its row");
constexpr int kLooseValues = OPGEN_LOOSE_VALUES;  // values a thread holds where rows do not fit 16-byte packs (ops.yaml's kernel_facts)
constexpr size_t kSortChunk = OPGEN_SORT_CHUNK;  // pairs a block sorts in shared memory (ops.yaml's kernel_facts)

template <typename C> __device__ __forceinline__ C neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return -__int_as_float(0x7f800000); }
template <> __device__ __forceinline__ double neg_inf<double>() {
    return -__longlong_as_double(0x7ff0000000000000ll);
}

struct add_op {
    template <typename C> __device__ __forceinline__ C operator()(C a, C b) const { return a + b; }
};
struct max_op {
    template <typename C> __device__ __forceinline__ C operator()(C a, C b) const { return b > a ? b : a; }
};

// ---------------------------------------------------------------------------- block reductions

// op over the v of every thread of the block, returned to every thread (all get the same
// value: the per-warp slots are combined in one order). Every thread of the block calls it.
// sh: one slot per warp; it may be reused at once (the function ends with a barrier).
template <typename C, class Op>
__device__ __forceinline__ C block_all(C v, Op op, C* sh) {
    const unsigned int ws = (unsigned int)warpSize, lane = threadIdx.x % ws, warp = threadIdx.x / ws;
    const unsigned int warps = (blockDim.x + ws - 1) / ws;
    const unsigned int left = blockDim.x - warp * ws, active = left < ws ? left : ws;
    const unsigned int mask = opgen::lane_mask(active);  // NVIDIA only
    for (unsigned int off = ws >> 1; off > 0; off >>= 1) {
        const C o = opgen::shfl_down(v, off, mask);
        if (lane + off < active) v = op(v, o);
    }
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    C all = sh[0];
    for (unsigned int w = 1; w < warps; w++) all = op(all, sh[w]);
    __syncthreads();
    return all;
}

// ---------------------------------------------------------------------------- row segments

// The values of a row segment (blockDim.x * V elements) a thread holds: packs of N elements
// at pack lane, lane + width, ... (N = 1: single elements), V values in all.
template <int N, int V> struct slots {
    static constexpr int packs = V / N;
    unsigned int lane, width;
    // the first element of pack u, counted from the segment's start (< 512 * 64: 32 bits
    // suffice, and 64-bit offsets would double the registers they take)
    __device__ __forceinline__ unsigned int at(int u) const { return (lane + (unsigned int)u * width) * N; }
};

// Values a thread holds: kRowBytes of its row in 16-byte packs; element by element (rows that
// do not fit 16-byte packs) at most kLooseValues, as each then takes an address register of
// its own and the kernel's register count is that of its costlier path (longer rows are
// read in segments: slower, still right).
template <int N, typename T> __host__ __device__ constexpr int row_values() {
    return N > 1 || kRowBytes / (int)sizeof(T) < kLooseValues ? kRowBytes / (int)sizeof(T) : kLooseValues;
}

// Bits of one value of T in the low bits of a word (f64: two words).
template <typename T> struct word_bits;
template <> struct word_bits<float> {
    static __device__ __forceinline__ float value(const unsigned int* w, int k) { return __uint_as_float(w[k]); }
};
template <> struct word_bits<double> {
    static __device__ __forceinline__ double value(const unsigned int* w, int k) {
        return __hiloint2double((int)w[2 * k + 1], (int)w[2 * k]);
    }
};
template <> struct word_bits<bf16_t> {
    static __device__ __forceinline__ float value(const unsigned int* w, int k) {
#if OPGEN_CUDA  // the intrinsic: ptxas keeps fewer registers live than with the shifts below (64 / 128)
        return __bfloat162float(__ushort_as_bfloat16((unsigned short)(k & 1 ? w[k >> 1] >> 16 : w[k >> 1] & 0xffffu)));
#else  // the high half of a float's bits
        return __uint_as_float(k & 1 ? w[k >> 1] & 0xffff0000u : w[k >> 1] << 16);
#endif
    }
};
template <> struct word_bits<f16_t> {
    static __device__ __forceinline__ float value(const unsigned int* w, int k) {
        return __half2float(__ushort_as_half((unsigned short)(k & 1 ? w[k >> 1] >> 16 : w[k >> 1] & 0xffffu)));
    }
};

// A thread's V values of T as loaded, in 32-bit words: two half values share a word (a
// register holds 32 bits; a 16-bit value alone would waste half of it), which keeps the
// registers of a row kernel low enough for several blocks per multiprocessor.
template <typename T, int V> struct held {
    static constexpr int words = V * (int)sizeof(T) / 4;
    unsigned int w[words];
    __device__ __forceinline__ compute_t<T> operator[](int k) const { return word_bits<T>::value(w, k); }
};

// The thread's elements of the segment at p, of which n exist (n >= the segment: all of
// it); elements past n read as 0. With N > 1, n is a multiple of N: a pack is all in or
// all out, and a pack is 16 bytes (4 words).
template <int N, int V, typename T>
__device__ __forceinline__ void load(const slots<N, V>& s, const T* p, size_t n, held<T, V>& h) {
    if (N > 1) {
#pragma unroll
        for (int u = 0; u < slots<N, V>::packs; u++) {
            const size_t e = s.at(u);
            const uint4 x = e < n ? *reinterpret_cast<const uint4*>(p + e) : make_uint4(0u, 0u, 0u, 0u);
            h.w[4 * u] = x.x, h.w[4 * u + 1] = x.y, h.w[4 * u + 2] = x.z, h.w[4 * u + 3] = x.w;
        }
    } else if (sizeof(T) == 2) {
        const unsigned short* q = reinterpret_cast<const unsigned short*>(p);
#pragma unroll
        for (int k = 0; k < V; k += 2) {
            const size_t e0 = s.at(k), e1 = s.at(k + 1);
            h.w[k >> 1] = (e0 < n ? (unsigned int)q[e0] : 0u) | (e1 < n ? (unsigned int)q[e1] << 16 : 0u);
        }
    } else {
        const unsigned int* q = reinterpret_cast<const unsigned int*>(p);
        constexpr int per = (int)sizeof(T) / 4;
#pragma unroll
        for (int k = 0; k < V; k++) {
            const size_t e = s.at(k);
#pragma unroll
            for (int j = 0; j < per; j++) h.w[k * per + j] = e < n ? q[e * per + j] : 0u;
        }
    }
}

// Element k of a thread's V is within the first `limit` elements of its segment.
template <int N, int V>
__device__ __forceinline__ bool within(const slots<N, V>& s, int k, size_t limit) {
    return s.at(k / N) + k % N < limit;
}

// Writes pack(u, e) for each pack u of the thread's elements of the segment at out that
// exists (n), e its first element: an opgen::pack<T, N> (compute values rounded once).
template <int N, int V, typename T, class F>
__device__ __forceinline__ void store(const slots<N, V>& s, T* out, size_t n, F pack) {
#pragma unroll
    for (int u = 0; u < slots<N, V>::packs; u++) {
        const size_t e = s.at(u);
        if (e < n) opgen::store_pack<T, N>(out + e, pack(u, e));
    }
}

// The pack of N values f(k, e) at elements k = u * N + j of the thread, e = the element's
// place in the segment.
template <int N, typename T, class F> __device__ __forceinline__ opgen::pack<T, N> make_pack(int u, size_t e, F f) {
    opgen::pack<T, N> o;
#pragma unroll
    for (int j = 0; j < N; j++) o.v[j] = opgen::from_compute<T>(f(u * N + j, e + j));
    return o;
}

// ---------------------------------------------------------------------------- row ops

// The largest of some values and the sum of exp(y - top) over them: a part of a softmax
// row, merged with other parts in any order. No values: top -inf, sum 0.
template <typename C> struct softmax_part {
    C top, sum;
};

struct softmax_merge {
    template <typename C>
    __device__ __forceinline__ softmax_part<C> operator()(softmax_part<C> a, softmax_part<C> b) const {
        const C top = b.top > a.top ? b.top : a.top;
        // a part at the top keeps its sum: also where both have none (exp(-inf - -inf) is NaN)
        const C sa = a.top == top ? a.sum : a.sum * exp(a.top - top);
        const C sb = b.top == top ? b.sum : b.sum * exp(b.top - top);
        return {top, sa + sb};
    }
};

// e^d in the row kernels: for float, 2^(d log2 e) (one multiply and the hardware's exp2,
// against some ten instructions of expf: a bf16 softmax is bound by them). The error over
// expf's is that of rounding d log2 e: |d| 2^-24 relative, under 1e-6 where e^d > 1e-7.
__device__ __forceinline__ float row_exp(float d) { return exp2f(d * 1.44269504088896341f); }
__device__ __forceinline__ double row_exp(double d) { return exp(d); }

// The top to subtract from a part's values: its top, or 0 where that is -inf (the part's
// values are all -inf, or NaN): exp(-inf - 0) is 0 and NaN stays NaN, as numpy's softmax
// gives, where -inf - -inf would be NaN for all.
template <typename C> __device__ __forceinline__ C subtracted(C top) { return top == neg_inf<C>() ? C(0) : top; }

// softmax(scale * x) over the first `visible` of a row's n elements; the others are written
// 0. row and out may be one (sdpa_softmax): a thread writes only elements it read itself,
// after the barrier of the reduction. A row that fits a segment is read once and each
// exponential taken once (kept in registers, rescaled by the row's top); a longer one is
// read twice (online softmax over the segments, then the output). Checked: some of the
// thread's elements may lie past `visible` (false: a full segment, all visible).
template <bool Checked, int N, int V, typename T>
__device__ __forceinline__ void softmax_segment(const slots<N, V>& s, const held<T, V>& h, T* out, const size_t n,
                                                const size_t visible, const compute_t<T> scale,
                                                softmax_part<compute_t<T>>* sh) {
    typedef compute_t<T> C;
    C top = neg_inf<C>();
#pragma unroll
    for (int k = 0; k < V; k++) {
        if (!Checked || within(s, k, visible)) top = max_op()(top, scale * h[k]);
    }
    const C base = subtracted(top);
    C e[V], sum = C(0);
#pragma unroll
    for (int k = 0; k < V; k++) {
        e[k] = !Checked || within(s, k, visible) ? row_exp(scale * h[k] - base) : C(0);
        sum += e[k];
    }
    const softmax_part<C> row_part = block_all(softmax_part<C>{top, sum}, softmax_merge(), sh);
    // e * exp(top - row top) / sum: no exp for a part at the row's top (NaN where the row
    // is all -inf, as numpy); 0 for a part of -inf (and NaN) values below a finite top
    const C factor = (top == row_part.top ? C(1) : exp(top - row_part.top)) / row_part.sum;
    store(s, out, n, [&](int u, size_t at) {
        return make_pack<N, T>(u, at, [&](int k, size_t i) { return !Checked || i < visible ? e[k] * factor : C(0); });
    });
}

template <int N, int V, typename T>
__device__ __forceinline__ void softmax_row(const slots<N, V>& s, const T* row, T* out, const size_t n,
                                            const size_t visible, const compute_t<T> scale,
                                            softmax_part<compute_t<T>>* sh) {
    typedef compute_t<T> C;
    const size_t seg = (size_t)s.width * V;
    held<T, V> h;
    if (n <= seg) {
        load(s, row, n, h);
        if (visible == seg) {
            softmax_segment<false>(s, h, out, n, visible, scale, sh);
        } else {
            softmax_segment<true>(s, h, out, n, visible, scale, sh);
        }
        return;
    }
    softmax_part<C> part{neg_inf<C>(), C(0)};
    for (size_t s0 = 0; s0 < visible; s0 += seg) {
        load(s, row + s0, n - s0, h);
        C top = part.top;
#pragma unroll
        for (int k = 0; k < V; k++) {
            if (within(s, k, visible - s0)) top = max_op()(top, scale * h[k]);
        }
        const C base = subtracted(top);
        C sum = top == part.top ? part.sum : part.sum * exp(part.top - top);
#pragma unroll
        for (int k = 0; k < V; k++) {
            if (within(s, k, visible - s0)) sum += row_exp(scale * h[k] - base);
        }
        part = {top, sum};
    }
    part = block_all(part, softmax_merge(), sh);
    const C base = subtracted(part.top), inv = C(1) / part.sum;
    for (size_t s0 = 0; s0 < n; s0 += seg) {
        if (s0 < visible) load(s, row + s0, n - s0, h);
        store(s, out + s0, n - s0, [&](int u, size_t at) {
            return make_pack<N, T>(u, at, [&](int k, size_t i) {
                return s0 + i < visible ? row_exp(scale * h[k] - base) * inv : C(0);
            });
        });
    }
}

// x / sqrt(mean(x^2) + eps) * alpha
template <int N, int V, typename T>
__device__ __forceinline__ void rms_norm_row(const slots<N, V>& s, const T* row, const T* alpha, T* out,
                                             const size_t n, const compute_t<T> eps, compute_t<T>* sh) {
    typedef compute_t<T> C;
    const size_t seg = (size_t)s.width * V;
    const bool cached = n <= seg;
    held<T, V> h;
    C squares = C(0);
    for (size_t s0 = 0; s0 < n; s0 += seg) {
        load(s, row + s0, n - s0, h);  // elements past n are 0: they add nothing
#pragma unroll
        for (int k = 0; k < V; k++) squares += h[k] * h[k];
    }
    const C inv = C(1) / sqrt(block_all(squares, add_op(), sh) / (C)n + eps);
    for (size_t s0 = 0; s0 < n; s0 += seg) {
        if (!cached) load(s, row + s0, n - s0, h);
        store(s, out + s0, n - s0, [&](int u, size_t at) {
            const opgen::pack<T, N> a = opgen::load_pack<T, N>(alpha + s0 + at);
            return make_pack<N, T>(u, at, [&](int k, size_t) { return h[k] * inv * opgen::to_compute(a.v[k % N]); });
        });
    }
}

// Count, mean and sum of squared deviations from the mean of some values: a part of a
// layer_norm row, merged with other parts in any order (Chan et al.'s update, which keeps
// the deviations small: no cancellation as in mean(x^2) - mean^2).
template <typename C> struct moments {
    C count, mean, m2;
};

struct moments_merge {
    template <typename C> __device__ __forceinline__ moments<C> operator()(moments<C> a, moments<C> b) const {
        const C count = a.count + b.count;
        if (count == C(0)) return a;
        const C d = b.mean - a.mean, wb = b.count / count;
        return {count, a.mean + d * wb, a.m2 + b.m2 + d * d * a.count * wb};
    }
};

// The moments of the thread's elements of a segment of which `limit` exist (elements past
// it read as 0 and count for nothing). Checked: false where the segment is full.
template <bool Checked, int N, int V, typename T>
__device__ __forceinline__ moments<compute_t<T>> segment_moments(const slots<N, V>& s, const held<T, V>& h,
                                                                 size_t limit) {
    typedef compute_t<T> C;
    int count = 0;
    C sum = C(0);
#pragma unroll
    for (int k = 0; k < V; k++) {
        sum += h[k];
        if (!Checked || within(s, k, limit)) count++;
    }
    const C mean = count > 0 ? sum / (C)count : C(0);
    C m2 = C(0);
#pragma unroll
    for (int k = 0; k < V; k++) {
        const C d = h[k] - mean;
        if (!Checked || within(s, k, limit)) m2 += d * d;
    }
    return {(C)count, mean, m2};
}

// (x - mean) / sqrt(var + eps) * alpha + beta, the variance biased
template <int N, int V, typename T>
__device__ __forceinline__ void layer_norm_row(const slots<N, V>& s, const T* row, const T* alpha, const T* beta,
                                               T* out, const size_t n, const compute_t<T> eps,
                                               moments<compute_t<T>>* sh) {
    typedef compute_t<T> C;
    const size_t seg = (size_t)s.width * V;
    const bool cached = n <= seg;
    held<T, V> h;
    moments<C> part{C(0), C(0), C(0)};
    for (size_t s0 = 0; s0 < n; s0 += seg) {
        load(s, row + s0, n - s0, h);
        const moments<C> mine = n - s0 >= seg ? segment_moments<false>(s, h, n - s0) : segment_moments<true>(s, h, n - s0);
        part = moments_merge()(part, mine);
    }
    part = block_all(part, moments_merge(), sh);
    const C mean = part.mean, inv = C(1) / sqrt(part.m2 / (C)n + eps);
    for (size_t s0 = 0; s0 < n; s0 += seg) {
        if (!cached) load(s, row + s0, n - s0, h);
        store(s, out + s0, n - s0, [&](int u, size_t at) {
            const opgen::pack<T, N> a = opgen::load_pack<T, N>(alpha + s0 + at);
            const opgen::pack<T, N> b = opgen::load_pack<T, N>(beta + s0 + at);
            return make_pack<N, T>(u, at, [&](int k, size_t) {
                return (h[k] - mean) * inv * opgen::to_compute(a.v[k % N]) + opgen::to_compute(b.v[k % N]);
            });
        });
    }
}

// ---------------------------------------------------------------------------- row kernels

// 16-byte packs fit every row of ncols elements at p.
template <typename T> __device__ __forceinline__ bool packable(const size_t ncols, const void* p) {
    return ncols % opgen::pack_width<T>::value == 0 && opgen::aligned16(p);
}

template <int N, typename T>
__device__ __forceinline__ void softmax_rows(const size_t nrows, const size_t ncols, const size_t sq,
                                             const compute_t<T> scale, const bool causal, const T* x, T* out) {
    __shared__ softmax_part<compute_t<T>> sh[32];
    const slots<N, row_values<N, T>()> s{threadIdx.x, blockDim.x};
    for (size_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        size_t visible = ncols;
        if (causal) {  // query i = r % sq sees keys j <= i + ncols - sq
            const size_t reach = r % sq + ncols;
            visible = reach < sq ? 0 : (reach - sq + 1 < ncols ? reach - sq + 1 : ncols);
        }
        softmax_row(s, x + r * ncols, out + r * ncols, ncols, visible, scale, sh);
    }
}

template <typename T>
__device__ __forceinline__ void softmax_kernel(const size_t nrows, const size_t ncols, const size_t sq,
                                               const float scale, const bool causal, const T* x, T* out) {
    constexpr int W = opgen::pack_width<T>::value;
    if (packable<T>(ncols, x) && packable<T>(ncols, out)) {
        softmax_rows<W>(nrows, ncols, sq, (compute_t<T>)scale, causal, x, out);
    } else {
        softmax_rows<1>(nrows, ncols, sq, (compute_t<T>)scale, causal, x, out);
    }
}

template <int N, typename T>
__device__ __forceinline__ void rms_norm_rows(const size_t nrows, const size_t ncols, const compute_t<T> eps,
                                              const T* x, const T* alpha, T* out) {
    __shared__ compute_t<T> sh[32];
    const slots<N, row_values<N, T>()> s{threadIdx.x, blockDim.x};
    for (size_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        rms_norm_row(s, x + r * ncols, alpha, out + r * ncols, ncols, eps, sh);
    }
}

template <typename T>
__device__ __forceinline__ void rms_norm_kernel(const size_t nrows, const size_t ncols, const double eps,
                                                const T* x, const T* alpha, T* out) {
    constexpr int W = opgen::pack_width<T>::value;
    if (packable<T>(ncols, x) && packable<T>(ncols, alpha) && packable<T>(ncols, out)) {
        rms_norm_rows<W>(nrows, ncols, (compute_t<T>)eps, x, alpha, out);
    } else {
        rms_norm_rows<1>(nrows, ncols, (compute_t<T>)eps, x, alpha, out);
    }
}

template <int N, typename T>
__device__ __forceinline__ void layer_norm_rows(const size_t nrows, const size_t ncols, const compute_t<T> eps,
                                                const T* x, const T* alpha, const T* beta, T* out) {
    __shared__ moments<compute_t<T>> sh[32];
    const slots<N, row_values<N, T>()> s{threadIdx.x, blockDim.x};
    for (size_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        layer_norm_row(s, x + r * ncols, alpha, beta, out + r * ncols, ncols, eps, sh);
    }
}

template <typename T>
__device__ __forceinline__ void layer_norm_kernel(const size_t nrows, const size_t ncols, const double eps,
                                                  const T* x, const T* alpha, const T* beta, T* out) {
    constexpr int W = opgen::pack_width<T>::value;
    if (packable<T>(ncols, x) && packable<T>(ncols, alpha) && packable<T>(ncols, beta) && packable<T>(ncols, out)) {
        layer_norm_rows<W>(nrows, ncols, (compute_t<T>)eps, x, alpha, beta, out);
    } else {
        layer_norm_rows<1>(nrows, ncols, (compute_t<T>)eps, x, alpha, beta, out);
    }
}

// ---------------------------------------------------------------------------- elementwise

struct sigmoid_fn {
    template <typename C> __device__ __forceinline__ C operator()(C x) const { return C(1) / (C(1) + exp(-x)); }
};

// Pair (i1, i2) of x rotated by the angle whose cosine and sine are c and s.
template <typename T>
__device__ __forceinline__ void rotate(const T* x, T* out, const size_t i1, const size_t i2, const T c, const T s) {
    typedef compute_t<T> C;
    const C x1 = opgen::to_compute(x[i1]), x2 = opgen::to_compute(x[i2]);
    const C cc = opgen::to_compute(c), ss = opgen::to_compute(s);
    out[i1] = opgen::from_compute<T>(x1 * cc - x2 * ss);
    out[i2] = opgen::from_compute<T>(x1 * ss + x2 * cc);
}

// x (b, h, t, d): pairs (2i, 2i + 1); pair p of a (b, h) slice uses table entry p.
template <typename T>
__device__ __forceinline__ void rope_i_kernel(const size_t bh, const size_t td, const T* x, const T* cos_t,
                                              const T* sin_t, T* out) {
    const size_t per_slice = td / 2, pairs = bh * per_slice;
    for (size_t p = opgen::global_thread_id(); p < pairs; p += opgen::grid_threads()) {
        const size_t cs = p % per_slice;
        rotate(x, out, 2 * p, 2 * p + 1, cos_t[cs], sin_t[cs]);
    }
}

// x (b, h, t, d): pairs (i, i + d/2) of each (b, h, t) row; pair p of a (b, h) slice uses
// table entry p (row t, column i).
template <typename T>
__device__ __forceinline__ void rope_kernel(const size_t bh, const size_t td, const size_t d, const T* x,
                                            const T* cos_t, const T* sin_t, T* out) {
    const size_t half = d / 2, per_slice = td / 2, pairs = bh * per_slice;
    for (size_t p = opgen::global_thread_id(); p < pairs; p += opgen::grid_threads()) {
        const size_t row = p / half, i1 = row * d + (p - row * half);
        rotate(x, out, i1, i1 + half, cos_t[p % per_slice], sin_t[p % per_slice]);
    }
}

// x (b, t, h, d): pairs (i, i + d/2) of each (b, t, h) row, with table entry (t, i).
template <typename T>
__device__ __forceinline__ void rope_thd_kernel(const size_t b, const size_t t, const size_t h, const size_t d,
                                                const T* x, const T* cos_t, const T* sin_t, T* out) {
    const size_t half = d / 2, pairs = b * t * h * half;
    for (size_t p = opgen::global_thread_id(); p < pairs; p += opgen::grid_threads()) {
        const size_t row = p / half, i = p - row * half;  // row = (b * t + t_) * h + h_
        const size_t cs = (row / h) % t * half + i;
        rotate(x, out, row * d + i, row * d + i + half, cos_t[cs], sin_t[cs]);
    }
}

// ---------------------------------------------------------------------------- arg_sort

// Unsigned keys ordered as the values: integers offset to unsigned, floats by their bits
// (negative ones inverted), NaN the largest, -0.0 as 0.0.
__device__ __forceinline__ uint64_t order_bits(double c) {
    if (opgen::is_nan(c)) return ~0ull;
    if (c == 0.0) c = 0.0;
    const uint64_t u = (uint64_t)__double_as_longlong(c);
    return (u >> 63) ? ~u : (u | (1ull << 63));
}
__device__ __forceinline__ uint64_t order_of(uint8_t v) { return v; }
__device__ __forceinline__ uint64_t order_of(uint32_t v) { return v; }
__device__ __forceinline__ uint64_t order_of(int64_t v) { return (uint64_t)v ^ (1ull << 63); }
__device__ __forceinline__ uint64_t order_of(bf16_t v) { return order_bits((double)opgen::to_compute(v)); }
__device__ __forceinline__ uint64_t order_of(f16_t v) { return order_bits((double)opgen::to_compute(v)); }
__device__ __forceinline__ uint64_t order_of(float v) { return order_bits((double)v); }
__device__ __forceinline__ uint64_t order_of(double v) { return order_bits(v); }

// 32-bit keys for the types of at most 32 bits, the same order: a key and an index fit one
// u64 (a pair compares as one integer; half the shared-memory traffic of key + index).
__device__ __forceinline__ uint32_t order_bits32(float c) {
    if (opgen::is_nan(c)) return ~0u;
    if (c == 0.0f) c = 0.0f;
    const uint32_t u = __float_as_uint(c);
    return (u >> 31) ? ~u : (u | (1u << 31));
}
__device__ __forceinline__ uint32_t order32_of(uint8_t v) { return v; }
__device__ __forceinline__ uint32_t order32_of(uint32_t v) { return v; }
__device__ __forceinline__ uint32_t order32_of(bf16_t v) { return order_bits32((float)opgen::to_compute(v)); }
__device__ __forceinline__ uint32_t order32_of(f16_t v) { return order_bits32((float)opgen::to_compute(v)); }
__device__ __forceinline__ uint32_t order32_of(float v) { return order_bits32(v); }
__device__ __forceinline__ uint32_t order32_of(int64_t) { return 0u; }  // not packed (sizeof > 4)
__device__ __forceinline__ uint32_t order32_of(double) { return 0u; }

// The packed sort keeps kSortPer pairs a thread in registers: the stages of distance
// j < kSortPer run there, those of j < kSortPer * warpSize through warp shuffles, and only
// the longer ones through shared memory (a barrier each).
constexpr int kSortPer = OPGEN_SORT_PER;  // ops.yaml's kernel_facts

// Where pair `pos` of the row lives in shared memory: swizzled within rows of 8, so that
// a warp storing its registers (8 consecutive pairs a thread) hits few banks at once.
__device__ __forceinline__ unsigned sorted_at(unsigned pos) { return pos ^ ((pos >> 3) & 7u); }

// One register stage (distance J < kSortPer) of the merge of runs of k; pair i of the
// thread is at position first + i.
template <int J>
__device__ __forceinline__ void sort_in_registers(uint64_t (&v)[kSortPer], unsigned first, unsigned k) {
#pragma unroll
    for (int i = 0; i < kSortPer; i++) {
        if ((i & J) != 0) continue;
        const uint64_t a = v[i], b = v[i + J];
        if (((first + i) & k) == 0 ? a > b : b > a) {
            v[i] = b;
            v[i + J] = a;
        }
    }
}

// A whole row (pad <= kSortChunk) of a type of at most 32 bits, as packed pairs: thread t
// holds positions kSortPer * t .. + kSortPer - 1 (threads past pad / kSortPer hold
// padding, and their shuffles stay among themselves). `pk` is the row in shared memory.
template <typename T>
__device__ __forceinline__ void arg_sort_packed(const size_t nrows, const size_t ncols, const size_t pad,
                                                const bool ascending, const T* x, uint32_t* out, uint64_t* pk) {
    const unsigned t = threadIdx.x, first = kSortPer * t, ws = (unsigned)warpSize;
    for (size_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        uint64_t v[kSortPer];
#pragma unroll
        for (int i = 0; i < kSortPer; i++) {
            const unsigned pos = first + i;
            uint32_t key = ~0u;
            if (pos < ncols) {
                key = order32_of(x[r * ncols + pos]);
                key = ascending ? key : ~key;
            }
            v[i] = ((uint64_t)key << 32) | (uint64_t)pos;
        }
        for (unsigned k = 2; k <= pad; k <<= 1) {
            unsigned j = k >> 1;
            if (j >= kSortPer * ws) {  // the long distances, in shared memory
#pragma unroll
                for (int i = 0; i < kSortPer; i++) pk[sorted_at(first + i)] = v[i];
                __syncthreads();
                for (; j >= kSortPer * ws; j >>= 1) {
                    for (unsigned p = t; p < pad / 2; p += blockDim.x) {
                        const unsigned lo = ((p & ~(j - 1)) << 1) | (p & (j - 1)), hi = lo + j;
                        const uint64_t a = pk[sorted_at(lo)], b = pk[sorted_at(hi)];
                        if ((lo & k) == 0 ? a > b : b > a) {
                            pk[sorted_at(lo)] = b;
                            pk[sorted_at(hi)] = a;
                        }
                    }
                    __syncthreads();
                }
#pragma unroll
                for (int i = 0; i < kSortPer; i++) v[i] = pk[sorted_at(first + i)];
                __syncthreads();  // every thread has its pairs before the next stores
            }
            for (; j >= kSortPer; j >>= 1) {  // across the lanes of a warp
                const unsigned lanes = j / kSortPer;
                const bool lower = (t & lanes) == 0;
#pragma unroll
                for (int i = 0; i < kSortPer; i++) {
                    const uint64_t other = opgen::shfl_xor(v[i], lanes);
                    const bool up = ((first + i) & k) == 0;
                    v[i] = (lower == up) ? (v[i] < other ? v[i] : other) : (v[i] > other ? v[i] : other);
                }
            }
            if (j >= 4) sort_in_registers<4>(v, first, k), j >>= 1;
            if (j >= 2) sort_in_registers<2>(v, first, k), j >>= 1;
            if (j >= 1) sort_in_registers<1>(v, first, k);
        }
#pragma unroll
        for (int i = 0; i < kSortPer; i++) {
            if (first + i < ncols) out[r * ncols + first + i] = (uint32_t)v[i];
        }
    }
}

template <typename T> __device__ __forceinline__ uint64_t sort_key(const T v, const bool ascending) {
    const uint64_t k = order_of(v);
    return ascending ? k : ~k;
}

// Pair a goes after pair b.
__device__ __forceinline__ bool pair_after(uint64_t ka, uint32_t ia, uint64_t kb, uint32_t ib) {
    return ka > kb || (ka == kb && ia > ib);
}

template <typename T>
__device__ __forceinline__ void arg_sort_local(const size_t nrows, const size_t ncols, const size_t pad,
                                               const bool ascending, const size_t k_first, const size_t k_last,
                                               const T* x, uint64_t* keys, uint32_t* idx, uint32_t* out) {
    __shared__ uint64_t sk[kSortChunk];
    __shared__ uint32_t si[kSortChunk];
    if (sizeof(T) <= 4 && pad <= kSortChunk && x != nullptr && out != nullptr && blockDim.x * kSortPer >= pad) {
        arg_sort_packed(nrows, ncols, pad, ascending, x, out, sk);
        return;
    }
    const size_t chunk = pad < kSortChunk ? pad : kSortChunk, per_row = pad / chunk;
    for (size_t c = blockIdx.x; c < nrows * per_row; c += gridDim.x) {
        const size_t r = c / per_row, base = c % per_row * chunk;  // the chunk's row and first position
        for (size_t i = threadIdx.x; i < chunk; i += blockDim.x) {
            const size_t pos = base + i;
            if (x != nullptr) {
                sk[i] = pos < ncols ? sort_key(x[r * ncols + pos], ascending) : ~0ull;
                si[i] = (uint32_t)pos;
            } else {
                sk[i] = keys[r * pad + pos];
                si[i] = idx[r * pad + pos];
            }
        }
        __syncthreads();
        for (size_t k = k_first; k <= k_last; k <<= 1) {
            for (size_t j = (k < chunk ? k : chunk) >> 1; j > 0; j >>= 1) {
                for (size_t p = threadIdx.x; p < chunk / 2; p += blockDim.x) {
                    const size_t lo = ((p & ~(j - 1)) << 1) | (p & (j - 1)), hi = lo + j;  // bit j of lo clear
                    const uint64_t ka = sk[lo], kb = sk[hi];
                    const uint32_t ia = si[lo], ib = si[hi];
                    // Runs of k ascending where bit k of their start (in the row) is clear.
                    const bool up = ((base + lo) & k) == 0;
                    if (up ? pair_after(ka, ia, kb, ib) : pair_after(kb, ib, ka, ia)) {
                        sk[lo] = kb;
                        sk[hi] = ka;
                        si[lo] = ib;
                        si[hi] = ia;
                    }
                }
                __syncthreads();
            }
        }
        for (size_t i = threadIdx.x; i < chunk; i += blockDim.x) {
            const size_t pos = base + i;
            if (out != nullptr) {
                if (pos < ncols) out[r * ncols + pos] = si[i];
            } else {
                keys[r * pad + pos] = sk[i];
                idx[r * pad + pos] = si[i];
            }
        }
        __syncthreads();  // before the next chunk overwrites sk, si
    }
}

// One bitonic stage (merge of runs of k, distance j >= a chunk) over every row's pairs.
__device__ __forceinline__ void arg_sort_merge(const size_t nrows, const size_t pad, const size_t k, const size_t j,
                                               uint64_t* keys, uint32_t* idx) {
    const size_t half = pad / 2;
    for (size_t p = opgen::global_thread_id(); p < nrows * half; p += opgen::grid_threads()) {
        const size_t r = p / half, q = p % half;
        const size_t lo = ((q & ~(j - 1)) << 1) | (q & (j - 1)), hi = lo + j;
        uint64_t* kr = keys + r * pad;
        uint32_t* ir = idx + r * pad;
        const uint64_t ka = kr[lo], kb = kr[hi];
        const uint32_t ia = ir[lo], ib = ir[hi];
        const bool up = (lo & k) == 0;
        if (up ? pair_after(ka, ia, kb, ib) : pair_after(kb, ib, ka, ia)) {
            kr[lo] = kb;
            kr[hi] = ka;
            ir[lo] = ib;
            ir[hi] = ia;
        }
    }
}

}  // namespace

// The entry points, one per (pattern, values) of ops.yaml's `kernel:` patterns: generated by gen
// from templates/hip/nn.h.j2.
#include "nn_entries.h"
