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
//   arg_sort_<dt>(nrows, ncols, ascending, x, out)             every dtype; out: u32 indices
//
// dt: bf16, f16, f32, f64 unless said. Every tensor is contiguous (runtime/gpu_nn.py copies
// other views first, except sigmoid's); the pointers point at the first element. Values are
// computed in compute_t (float for bf16 / f16, double for f64) and rounded once on store.
// Semantics are runtime/cpu_nn_ops.py's.
//
// Row kernels (softmax_last_dim, sdpa_softmax, rms_norm, layer_norm; nrows rows of ncols):
// a block per row, in a grid-stride loop over rows (any grid), blockDim.x at most 512
// (declared below with __launch_bounds__(512)). The runtime picks blockDim.x so that each
// thread holds at most kRowBytes (64) bytes of its row, V = 64 / sizeof(T) values: the row
// is then read once into registers, reduced (warp shuffles, then one shared slot per warp)
// and written, with no second read (up to 512 * V elements: 8192 f32, 16384 bf16). A longer
// row is covered in segments of blockDim.x * V elements, read again for each pass. Accesses
// are 16 bytes wide where every row pointer is 16-byte aligned (aligned base pointers and a
// row length that is a multiple of 16 bytes), an element wide otherwise (then at most 16
// values a thread: see row_values); neighbouring threads touch neighbouring addresses.
//
// sdpa_softmax: the rows of the scores S = Q K^T of (batch, sq, skv) attention, row r being
// query r % sq, are replaced by softmax(scale * S) over the keys the query sees: all, or
// with causal != 0 those up to r % sq + skv - sq (the mask aligned bottom-right). Keys it
// does not see get 0; a query that sees none (sq > skv) gets a row of zeros.
//
// arg_sort: a block per row (grid-stride over rows; blockDim.x a power of two up to 1024,
// any is correct), a bitonic sort of the row's indices in static shared memory, padded to
// a power of two: rows of at most kSortMax (8192) elements, 32 KiB (the runtime rejects
// longer rows). Values are read from global memory, as Candle's kernel does. The order is
// total: equal values by index (stable), NaN the largest value (last ascending, first
// descending), -0.0 equal to 0.0; so it matches the cpu backend index for index.
#include "compat.h"
#include "elementwise.h"

namespace {

using opgen::compute_t;

constexpr int kRowBytes = 64;      // of a row a thread holds: four 16-byte packs (runtime/gpu_nn.py's ROW_BYTES)
constexpr size_t kSortMax = 8192;  // longest arg_sort row (runtime/gpu_nn.py's ARG_SORT_MAX)

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
    const unsigned int mask = active >= 32u ? 0xffffffffu : ((1u << active) - 1u);  // NVIDIA only
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

// Values a thread holds: kRowBytes in packs; element by element (rows that do not fit 16-byte
// packs) at most 16, as each single element takes a register (longer rows are then read in
// segments: slower, still right).
template <int N, typename T> __host__ __device__ constexpr int row_values() {
    return N > 1 || sizeof(T) >= 4 ? kRowBytes / (int)sizeof(T) : 16;
}

// The thread's elements of the segment at p, of which n exist (n >= the segment: all of
// it), kept as stored and converted where used (fewer registers for the half types than
// their floats would take); packs past n read as 0. With N > 1, n is a multiple of N: a
// pack is all in or all out.
template <int N, int V, typename T>
__device__ __forceinline__ void load(const slots<N, V>& s, const T* p, size_t n, T (&v)[V]) {
    const T zero = opgen::from_compute<T>(compute_t<T>(0));
#pragma unroll
    for (int u = 0; u < slots<N, V>::packs; u++) {
        const size_t e = s.at(u);
        if (e < n) {
            const opgen::pack<T, N> x = opgen::load_pack<T, N>(p + e);
#pragma unroll
            for (int j = 0; j < N; j++) v[u * N + j] = x.v[j];
        } else {
#pragma unroll
            for (int j = 0; j < N; j++) v[u * N + j] = zero;
        }
    }
}

// Element k of a thread's V is within the first `limit` elements of its segment.
template <int N, int V>
__device__ __forceinline__ bool within(const slots<N, V>& s, int k, size_t limit) {
    return s.at(k / N) + k % N < limit;
}

// ---------------------------------------------------------------------------- row ops

// softmax(scale * x) over the first `visible` of a row's n elements; the others are written
// 0. row and out may be one (sdpa_softmax): a thread writes only elements it read itself,
// after the barriers of the reductions.
template <int N, int V, typename T>
__device__ __forceinline__ void softmax_row(const slots<N, V>& s, const T* row, T* out, const size_t n,
                                            const size_t visible, const compute_t<T> scale, compute_t<T>* sh) {
    typedef compute_t<T> C;
    const size_t seg = (size_t)s.width * V;
    const bool cached = n <= seg;  // one segment: v keeps the row between the passes
    T v[V];
    C top = neg_inf<C>();
    for (size_t s0 = 0; s0 < visible; s0 += seg) {
        load(s, row + s0, n - s0, v);
#pragma unroll
        for (int k = 0; k < V; k++) {
            if (within(s, k, visible - s0)) top = max_op()(top, scale * opgen::to_compute(v[k]));
        }
    }
    top = block_all(top, max_op(), sh);
    C sum = C(0);
    for (size_t s0 = 0; s0 < visible; s0 += seg) {
        if (!cached) load(s, row + s0, n - s0, v);
#pragma unroll
        for (int k = 0; k < V; k++) {
            if (within(s, k, visible - s0)) sum += exp(scale * opgen::to_compute(v[k]) - top);
        }
    }
    const C inv = C(1) / block_all(sum, add_op(), sh);
    for (size_t s0 = 0; s0 < n; s0 += seg) {
        if (!cached && s0 < visible) load(s, row + s0, n - s0, v);
#pragma unroll
        for (int u = 0; u < slots<N, V>::packs; u++) {
            const size_t e = s.at(u);
            if (e < n - s0) {
                opgen::pack<T, N> o;
#pragma unroll
                for (int j = 0; j < N; j++) {
                    C p = C(0);  // v holds what was read only where visible
                    if (s0 + e + j < visible) p = exp(scale * opgen::to_compute(v[u * N + j]) - top) * inv;
                    o.v[j] = opgen::from_compute<T>(p);
                }
                opgen::store_pack<T, N>(out + s0 + e, o);
            }
        }
    }
}

// x / sqrt(mean(x^2) + eps) * alpha
template <int N, int V, typename T>
__device__ __forceinline__ void rms_norm_row(const slots<N, V>& s, const T* row, const T* alpha, T* out,
                                             const size_t n, const compute_t<T> eps, compute_t<T>* sh) {
    typedef compute_t<T> C;
    const size_t seg = (size_t)s.width * V;
    const bool cached = n <= seg;
    T v[V];
    C squares = C(0);
    for (size_t s0 = 0; s0 < n; s0 += seg) {
        load(s, row + s0, n - s0, v);  // packs past n are 0: they add nothing
#pragma unroll
        for (int k = 0; k < V; k++) {
            const C x = opgen::to_compute(v[k]);
            squares += x * x;
        }
    }
    const C inv = C(1) / sqrt(block_all(squares, add_op(), sh) / (C)n + eps);
    for (size_t s0 = 0; s0 < n; s0 += seg) {
        if (!cached) load(s, row + s0, n - s0, v);
#pragma unroll
        for (int u = 0; u < slots<N, V>::packs; u++) {
            const size_t e = s.at(u);
            if (e < n - s0) {
                const opgen::pack<T, N> a = opgen::load_pack<T, N>(alpha + s0 + e);
                opgen::pack<T, N> o;
#pragma unroll
                for (int j = 0; j < N; j++) {
                    o.v[j] = opgen::from_compute<T>(opgen::to_compute(v[u * N + j]) * inv * opgen::to_compute(a.v[j]));
                }
                opgen::store_pack<T, N>(out + s0 + e, o);
            }
        }
    }
}

// (x - mean) / sqrt(var + eps) * alpha + beta, the variance biased and taken around the mean
// (a second pass: no cancellation from mean(x^2) - mean^2)
template <int N, int V, typename T>
__device__ __forceinline__ void layer_norm_row(const slots<N, V>& s, const T* row, const T* alpha, const T* beta,
                                               T* out, const size_t n, const compute_t<T> eps, compute_t<T>* sh) {
    typedef compute_t<T> C;
    const size_t seg = (size_t)s.width * V;
    const bool cached = n <= seg;
    T v[V];
    C sum = C(0);
    for (size_t s0 = 0; s0 < n; s0 += seg) {
        load(s, row + s0, n - s0, v);
#pragma unroll
        for (int k = 0; k < V; k++) sum += opgen::to_compute(v[k]);
    }
    const C mean = block_all(sum, add_op(), sh) / (C)n;
    C squares = C(0);
    for (size_t s0 = 0; s0 < n; s0 += seg) {
        if (!cached) load(s, row + s0, n - s0, v);
#pragma unroll
        for (int k = 0; k < V; k++) {
            const C c = opgen::to_compute(v[k]) - mean;
            if (within(s, k, n - s0)) squares += c * c;
        }
    }
    const C inv = C(1) / sqrt(block_all(squares, add_op(), sh) / (C)n + eps);
    for (size_t s0 = 0; s0 < n; s0 += seg) {
        if (!cached) load(s, row + s0, n - s0, v);
#pragma unroll
        for (int u = 0; u < slots<N, V>::packs; u++) {
            const size_t e = s.at(u);
            if (e < n - s0) {
                const opgen::pack<T, N> a = opgen::load_pack<T, N>(alpha + s0 + e);
                const opgen::pack<T, N> b = opgen::load_pack<T, N>(beta + s0 + e);
                opgen::pack<T, N> o;
#pragma unroll
                for (int j = 0; j < N; j++) {
                    const C c = opgen::to_compute(v[u * N + j]) - mean;
                    o.v[j] = opgen::from_compute<T>(c * inv * opgen::to_compute(a.v[j]) + opgen::to_compute(b.v[j]));
                }
                opgen::store_pack<T, N>(out + s0 + e, o);
            }
        }
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
    __shared__ compute_t<T> sh[32];
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
    __shared__ compute_t<T> sh[32];
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

// Whether element a of the row goes before element b (see the top of the file); indices
// past n are padding and go last.
template <typename T>
__device__ __forceinline__ bool goes_before(const T* row, const uint32_t a, const uint32_t b, const size_t n,
                                            const bool ascending) {
    if (a >= n) return false;
    if (b >= n) return true;
    const auto x = opgen::to_compute(row[a]), y = opgen::to_compute(row[b]);
    const bool xn = opgen::is_nan(x), yn = opgen::is_nan(y);
    if (xn || yn) return xn && yn ? a < b : (ascending ? yn : xn);
    if (x != y) return ascending ? x < y : x > y;
    return a < b;
}

template <typename T>
__device__ __forceinline__ void arg_sort_rows(const size_t nrows, const size_t ncols, const bool ascending,
                                              const T* x, uint32_t* out) {
    __shared__ uint32_t idx[kSortMax];
    size_t pad = 1;
    while (pad < ncols) pad <<= 1;
    if (pad > kSortMax) return;
    for (size_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        const T* row = x + r * ncols;
        for (size_t i = threadIdx.x; i < pad; i += blockDim.x) idx[i] = (uint32_t)i;
        __syncthreads();
        // Bitonic: merges of runs of k, each run ascending where bit k of its start is clear.
        for (size_t k = 2; k <= pad; k <<= 1) {
            for (size_t j = k >> 1; j > 0; j >>= 1) {
                for (size_t p = threadIdx.x; p < pad / 2; p += blockDim.x) {
                    const size_t lo = ((p & ~(j - 1)) << 1) | (p & (j - 1)), hi = lo + j;  // bit j of lo clear
                    const uint32_t a = idx[lo], b = idx[hi];
                    const bool swap = (lo & k) == 0 ? goes_before(row, b, a, ncols, ascending)
                                                    : goes_before(row, a, b, ncols, ascending);
                    if (swap) {
                        idx[lo] = b;
                        idx[hi] = a;
                    }
                }
                __syncthreads();
            }
        }
        for (size_t i = threadIdx.x; i < ncols; i += blockDim.x) out[r * ncols + i] = idx[i];
        __syncthreads();  // before the next row overwrites idx
    }
}

}  // namespace

// Declarations first: they carry the launch bounds (row kernels: blocks of up to 512
// threads, arg_sort: 1024; NVRTC takes them from the declaration). The definitions follow in the one
// form that gen's signature scan reads.
extern "C" {
__global__ void __launch_bounds__(512) softmax_last_dim_bf16(const size_t nrows, const size_t ncols, const bf16_t* x, bf16_t* out);
__global__ void __launch_bounds__(512) softmax_last_dim_f16(const size_t nrows, const size_t ncols, const f16_t* x, f16_t* out);
__global__ void __launch_bounds__(512) softmax_last_dim_f32(const size_t nrows, const size_t ncols, const float* x, float* out);
__global__ void __launch_bounds__(512) softmax_last_dim_f64(const size_t nrows, const size_t ncols, const double* x, double* out);
__global__ void __launch_bounds__(512) rms_norm_bf16(const size_t nrows, const size_t ncols, const double eps, const bf16_t* x, const bf16_t* alpha, bf16_t* out);
__global__ void __launch_bounds__(512) rms_norm_f16(const size_t nrows, const size_t ncols, const double eps, const f16_t* x, const f16_t* alpha, f16_t* out);
__global__ void __launch_bounds__(512) rms_norm_f32(const size_t nrows, const size_t ncols, const double eps, const float* x, const float* alpha, float* out);
__global__ void __launch_bounds__(512) rms_norm_f64(const size_t nrows, const size_t ncols, const double eps, const double* x, const double* alpha, double* out);
__global__ void __launch_bounds__(512) layer_norm_bf16(const size_t nrows, const size_t ncols, const double eps, const bf16_t* x, const bf16_t* alpha, const bf16_t* beta, bf16_t* out);
__global__ void __launch_bounds__(512) layer_norm_f16(const size_t nrows, const size_t ncols, const double eps, const f16_t* x, const f16_t* alpha, const f16_t* beta, f16_t* out);
__global__ void __launch_bounds__(512) layer_norm_f32(const size_t nrows, const size_t ncols, const double eps, const float* x, const float* alpha, const float* beta, float* out);
__global__ void __launch_bounds__(512) layer_norm_f64(const size_t nrows, const size_t ncols, const double eps, const double* x, const double* alpha, const double* beta, double* out);
__global__ void __launch_bounds__(512) sdpa_softmax_bf16(const size_t nrows, const size_t ncols, const size_t sq, const float scale, const uint32_t causal, bf16_t* scores);
__global__ void __launch_bounds__(512) sdpa_softmax_f16(const size_t nrows, const size_t ncols, const size_t sq, const float scale, const uint32_t causal, f16_t* scores);
__global__ void __launch_bounds__(512) sdpa_softmax_f32(const size_t nrows, const size_t ncols, const size_t sq, const float scale, const uint32_t causal, float* scores);
__global__ void __launch_bounds__(1024) arg_sort_u8(const size_t nrows, const size_t ncols, const uint32_t ascending, const uint8_t* x, uint32_t* out);
__global__ void __launch_bounds__(1024) arg_sort_u32(const size_t nrows, const size_t ncols, const uint32_t ascending, const uint32_t* x, uint32_t* out);
__global__ void __launch_bounds__(1024) arg_sort_i64(const size_t nrows, const size_t ncols, const uint32_t ascending, const int64_t* x, uint32_t* out);
__global__ void __launch_bounds__(1024) arg_sort_bf16(const size_t nrows, const size_t ncols, const uint32_t ascending, const bf16_t* x, uint32_t* out);
__global__ void __launch_bounds__(1024) arg_sort_f16(const size_t nrows, const size_t ncols, const uint32_t ascending, const f16_t* x, uint32_t* out);
__global__ void __launch_bounds__(1024) arg_sort_f32(const size_t nrows, const size_t ncols, const uint32_t ascending, const float* x, uint32_t* out);
__global__ void __launch_bounds__(1024) arg_sort_f64(const size_t nrows, const size_t ncols, const uint32_t ascending, const double* x, uint32_t* out);
}

extern "C" __global__ void sigmoid_bf16(const size_t numel, const size_t num_dims, const size_t* info, const bf16_t* inp, bf16_t* out) {
    opgen::unary_map(sigmoid_fn{}, numel, num_dims, info, inp, out);
}
extern "C" __global__ void sigmoid_f16(const size_t numel, const size_t num_dims, const size_t* info, const f16_t* inp, f16_t* out) {
    opgen::unary_map(sigmoid_fn{}, numel, num_dims, info, inp, out);
}
extern "C" __global__ void sigmoid_f32(const size_t numel, const size_t num_dims, const size_t* info, const float* inp, float* out) {
    opgen::unary_map(sigmoid_fn{}, numel, num_dims, info, inp, out);
}
extern "C" __global__ void sigmoid_f64(const size_t numel, const size_t num_dims, const size_t* info, const double* inp, double* out) {
    opgen::unary_map(sigmoid_fn{}, numel, num_dims, info, inp, out);
}
extern "C" __global__ void softmax_last_dim_bf16(const size_t nrows, const size_t ncols, const bf16_t* x, bf16_t* out) {
    softmax_kernel(nrows, ncols, 1, 1.0f, false, x, out);
}
extern "C" __global__ void softmax_last_dim_f16(const size_t nrows, const size_t ncols, const f16_t* x, f16_t* out) {
    softmax_kernel(nrows, ncols, 1, 1.0f, false, x, out);
}
extern "C" __global__ void softmax_last_dim_f32(const size_t nrows, const size_t ncols, const float* x, float* out) {
    softmax_kernel(nrows, ncols, 1, 1.0f, false, x, out);
}
extern "C" __global__ void softmax_last_dim_f64(const size_t nrows, const size_t ncols, const double* x, double* out) {
    softmax_kernel(nrows, ncols, 1, 1.0f, false, x, out);
}
extern "C" __global__ void rms_norm_bf16(const size_t nrows, const size_t ncols, const double eps, const bf16_t* x, const bf16_t* alpha, bf16_t* out) {
    rms_norm_kernel(nrows, ncols, eps, x, alpha, out);
}
extern "C" __global__ void rms_norm_f16(const size_t nrows, const size_t ncols, const double eps, const f16_t* x, const f16_t* alpha, f16_t* out) {
    rms_norm_kernel(nrows, ncols, eps, x, alpha, out);
}
extern "C" __global__ void rms_norm_f32(const size_t nrows, const size_t ncols, const double eps, const float* x, const float* alpha, float* out) {
    rms_norm_kernel(nrows, ncols, eps, x, alpha, out);
}
extern "C" __global__ void rms_norm_f64(const size_t nrows, const size_t ncols, const double eps, const double* x, const double* alpha, double* out) {
    rms_norm_kernel(nrows, ncols, eps, x, alpha, out);
}
extern "C" __global__ void layer_norm_bf16(const size_t nrows, const size_t ncols, const double eps, const bf16_t* x, const bf16_t* alpha, const bf16_t* beta, bf16_t* out) {
    layer_norm_kernel(nrows, ncols, eps, x, alpha, beta, out);
}
extern "C" __global__ void layer_norm_f16(const size_t nrows, const size_t ncols, const double eps, const f16_t* x, const f16_t* alpha, const f16_t* beta, f16_t* out) {
    layer_norm_kernel(nrows, ncols, eps, x, alpha, beta, out);
}
extern "C" __global__ void layer_norm_f32(const size_t nrows, const size_t ncols, const double eps, const float* x, const float* alpha, const float* beta, float* out) {
    layer_norm_kernel(nrows, ncols, eps, x, alpha, beta, out);
}
extern "C" __global__ void layer_norm_f64(const size_t nrows, const size_t ncols, const double eps, const double* x, const double* alpha, const double* beta, double* out) {
    layer_norm_kernel(nrows, ncols, eps, x, alpha, beta, out);
}
extern "C" __global__ void rope_i_bf16(const size_t bh, const size_t td, const bf16_t* x, const bf16_t* cos, const bf16_t* sin, bf16_t* out) {
    rope_i_kernel(bh, td, x, cos, sin, out);
}
extern "C" __global__ void rope_i_f16(const size_t bh, const size_t td, const f16_t* x, const f16_t* cos, const f16_t* sin, f16_t* out) {
    rope_i_kernel(bh, td, x, cos, sin, out);
}
extern "C" __global__ void rope_i_f32(const size_t bh, const size_t td, const float* x, const float* cos, const float* sin, float* out) {
    rope_i_kernel(bh, td, x, cos, sin, out);
}
extern "C" __global__ void rope_i_f64(const size_t bh, const size_t td, const double* x, const double* cos, const double* sin, double* out) {
    rope_i_kernel(bh, td, x, cos, sin, out);
}
extern "C" __global__ void rope_bf16(const size_t bh, const size_t td, const size_t d, const bf16_t* x, const bf16_t* cos, const bf16_t* sin, bf16_t* out) {
    rope_kernel(bh, td, d, x, cos, sin, out);
}
extern "C" __global__ void rope_f16(const size_t bh, const size_t td, const size_t d, const f16_t* x, const f16_t* cos, const f16_t* sin, f16_t* out) {
    rope_kernel(bh, td, d, x, cos, sin, out);
}
extern "C" __global__ void rope_f32(const size_t bh, const size_t td, const size_t d, const float* x, const float* cos, const float* sin, float* out) {
    rope_kernel(bh, td, d, x, cos, sin, out);
}
extern "C" __global__ void rope_f64(const size_t bh, const size_t td, const size_t d, const double* x, const double* cos, const double* sin, double* out) {
    rope_kernel(bh, td, d, x, cos, sin, out);
}
extern "C" __global__ void rope_thd_bf16(const size_t b, const size_t t, const size_t h, const size_t d, const bf16_t* x, const bf16_t* cos, const bf16_t* sin, bf16_t* out) {
    rope_thd_kernel(b, t, h, d, x, cos, sin, out);
}
extern "C" __global__ void rope_thd_f16(const size_t b, const size_t t, const size_t h, const size_t d, const f16_t* x, const f16_t* cos, const f16_t* sin, f16_t* out) {
    rope_thd_kernel(b, t, h, d, x, cos, sin, out);
}
extern "C" __global__ void rope_thd_f32(const size_t b, const size_t t, const size_t h, const size_t d, const float* x, const float* cos, const float* sin, float* out) {
    rope_thd_kernel(b, t, h, d, x, cos, sin, out);
}
extern "C" __global__ void rope_thd_f64(const size_t b, const size_t t, const size_t h, const size_t d, const double* x, const double* cos, const double* sin, double* out) {
    rope_thd_kernel(b, t, h, d, x, cos, sin, out);
}
extern "C" __global__ void sdpa_softmax_bf16(const size_t nrows, const size_t ncols, const size_t sq, const float scale, const uint32_t causal, bf16_t* scores) {
    softmax_kernel(nrows, ncols, sq, scale, causal != 0u, scores, scores);
}
extern "C" __global__ void sdpa_softmax_f16(const size_t nrows, const size_t ncols, const size_t sq, const float scale, const uint32_t causal, f16_t* scores) {
    softmax_kernel(nrows, ncols, sq, scale, causal != 0u, scores, scores);
}
extern "C" __global__ void sdpa_softmax_f32(const size_t nrows, const size_t ncols, const size_t sq, const float scale, const uint32_t causal, float* scores) {
    softmax_kernel(nrows, ncols, sq, scale, causal != 0u, scores, scores);
}
extern "C" __global__ void arg_sort_u8(const size_t nrows, const size_t ncols, const uint32_t ascending, const uint8_t* x, uint32_t* out) {
    arg_sort_rows(nrows, ncols, ascending != 0u, x, out);
}
extern "C" __global__ void arg_sort_u32(const size_t nrows, const size_t ncols, const uint32_t ascending, const uint32_t* x, uint32_t* out) {
    arg_sort_rows(nrows, ncols, ascending != 0u, x, out);
}
extern "C" __global__ void arg_sort_i64(const size_t nrows, const size_t ncols, const uint32_t ascending, const int64_t* x, uint32_t* out) {
    arg_sort_rows(nrows, ncols, ascending != 0u, x, out);
}
extern "C" __global__ void arg_sort_bf16(const size_t nrows, const size_t ncols, const uint32_t ascending, const bf16_t* x, uint32_t* out) {
    arg_sort_rows(nrows, ncols, ascending != 0u, x, out);
}
extern "C" __global__ void arg_sort_f16(const size_t nrows, const size_t ncols, const uint32_t ascending, const f16_t* x, uint32_t* out) {
    arg_sort_rows(nrows, ncols, ascending != 0u, x, out);
}
extern "C" __global__ void arg_sort_f32(const size_t nrows, const size_t ncols, const uint32_t ascending, const float* x, uint32_t* out) {
    arg_sort_rows(nrows, ncols, ascending != 0u, x, out);
}
extern "C" __global__ void arg_sort_f64(const size_t nrows, const size_t ncols, const uint32_t ascending, const double* x, uint32_t* out) {
    arg_sort_rows(nrows, ncols, ascending != 0u, x, out);
}
