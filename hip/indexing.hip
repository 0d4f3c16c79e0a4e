// Indexing: index_select, gather, scatter_set, scatter_add, index_add. ids are u8, u32
// or i64 (the registry's `index` set); values any dtype.
//
// Every entry point takes a last argument `bad`: a u32 word on the device that the kernel
// sets to 1 when some id lies outside its dim ([0, size)), so the runtime never reads the
// ids on the host (runtime/gpu/indexing.py's IdChecks raises the op's ShapeMismatch at the next
// synchronization). A bad id is never read or written through: it gives 0 (index_select,
// gather) or is skipped (scatter_*, index_add). nullptr: no flag.
//
//   index_select_<it>_<dt>(numel, num_dims, info, ids, inp, out,
//                          left_size, src_dim_size, ids_dim_size, right_size, bad)
//       Candle's is_*: out[pre, j, post] = inp[pre, ids[j], post]; inp contiguous,
//       info: dims and strides of the 1-D ids view (nullptr: contiguous).
//   gather_<it>_<dt>(numel, num_dims, info, dim, ids, inp, out, src_dim_size, bad)
//       out[p] = inp[p with p[dim] = ids[p]] over every position p of ids (numel of
//       them), out contiguous with ids' shape. info: ids dims[n], ids strides[n], inp
//       strides[n] (n = num_dims): ids may be smaller than inp in every dim but `dim`,
//       and both may be strided (runtime/cpu/__init__.py's gather).
//   scatter_set_<it>_<dt> / scatter_add_<it>_<dt>(numel, num_dims, info, dim, ids, src, dst, dst_dim_size, bad)
//       In place: dst[p with p[dim] = ids[p]] = (or +=) src[p] over every position p of
//       ids (numel of them). info: ids dims, ids strides, src strides, dst strides
//       (4 * num_dims). One thread per position of the other dims walks `dim` in
//       order: no atomics, deterministic, and duplicates resolve as numpy does (last
//       write wins for set; adds accumulate in order, rounding each add for half types).
//   index_add_<it>_<dt>(ids, ids_dim_size, inp, out, left_size, src_dim_size, dst_dim_size, right_size, bad)
//       Candle's ia_*: in place, out[pre, ids[j], post] += inp[pre, j, post]; ids, inp
//       and out contiguous (the runtime copies x into out first, as runtime/cpu/__init__.py's
//       index_add returns a new tensor); src_dim_size == ids_dim_size (Candle's
//       signature). Same thread-per-column order as scatter_add.
#include "compat.h"

namespace {

// The id as a buffer index when it lies in [0, limit).
template <typename I> __device__ __forceinline__ bool id_in_range(I id, size_t limit, size_t& idx) {
    if (id < I(0)) return false;  // always false for unsigned ids
    idx = (size_t)id;
    return idx < limit;
}
__device__ __forceinline__ bool id_in_range(uint8_t id, size_t limit, size_t& idx) {
    idx = (size_t)id;
    return idx < limit;
}
__device__ __forceinline__ bool id_in_range(uint32_t id, size_t limit, size_t& idx) {
    idx = (size_t)id;
    return idx < limit;
}

template <typename T> __device__ __forceinline__ T zero() { return opgen::from_compute<T>(opgen::compute_t<T>(0)); }

template <typename T> __device__ __forceinline__ T add_values(T a, T b) {
    typedef opgen::accum_t<T> A;  // wraps for integers; f32 for half types, rounded back per add
    return opgen::from_compute<T>((opgen::compute_t<T>)((A)opgen::to_compute(a) + (A)opgen::to_compute(b)));
}

// Records a bad id: every writer stores the same value, so no atomic is needed.
__device__ __forceinline__ void flag_bad(uint32_t* bad) {
    if (bad != nullptr) *bad = 1u;
}

template <typename I, typename T>
__device__ __forceinline__ void index_select_kernel(const size_t numel, const size_t num_dims, const size_t* info,
                                                    const I* ids, const T* inp, T* out, const size_t left_size,
                                                    const size_t src_dim_size, const size_t ids_dim_size,
                                                    const size_t right_size, uint32_t* bad) {
    (void)left_size;
    const bool contiguous = info == nullptr || opgen::is_contiguous(num_dims, info, info + num_dims);
    const size_t start = opgen::global_thread_id(), step = opgen::grid_threads();
    constexpr int N = opgen::pack_width<T>::value;
    if (N > 1 && right_size % N == 0 && opgen::aligned16(inp) && opgen::aligned16(out)) {
        // Rows of right_size elements are 16-byte aligned: move them 16 bytes at a time.
        const size_t nvec = numel / N;
        for (size_t v = start; v < nvec; v += step) {
            const size_t i = v * N;
            const size_t pre = i / (ids_dim_size * right_size), j = i / right_size % ids_dim_size;
            const size_t post = i % right_size;
            size_t id;
            const I raw = ids[contiguous ? j : opgen::get_strided_index(j, num_dims, info, info + num_dims)];
            opgen::pack<T, N> p;
            if (id_in_range(raw, src_dim_size, id)) {
                p = opgen::load_pack<T, N>(inp + (pre * src_dim_size + id) * right_size + post);
            } else {
                flag_bad(bad);
#pragma unroll
                for (int k = 0; k < N; k++) p.v[k] = zero<T>();
            }
            opgen::store_pack<T, N>(out + i, p);
        }
        return;
    }
    for (size_t i = start; i < numel; i += step) {
        const size_t pre = i / (ids_dim_size * right_size), j = i / right_size % ids_dim_size;
        const size_t post = i % right_size;
        size_t id;
        const I raw = ids[contiguous ? j : opgen::get_strided_index(j, num_dims, info, info + num_dims)];
        if (id_in_range(raw, src_dim_size, id)) {
            out[i] = inp[(pre * src_dim_size + id) * right_size + post];
        } else {
            out[i] = zero<T>();
            flag_bad(bad);
        }
    }
}

template <typename C, typename I, typename T>
__device__ __forceinline__ void gather_loop(const C numel, const size_t num_dims, const size_t* info, const size_t dim,
                                            const I* ids, const T* inp, T* out, const size_t src_dim_size,
                                            uint32_t* bad) {
    const size_t* dims = info;
    const size_t* ids_s = info + num_dims;
    const size_t* inp_s = info + 2 * num_dims;
    for (C i = (C)opgen::global_thread_id(); i < numel; i += (C)opgen::grid_threads()) {
        C rem = i;
        size_t ids_off = 0, inp_off = 0;
#pragma unroll 1
        for (size_t k = 0; k < num_dims; k++) {
            const size_t d = num_dims - 1 - k;
            const C n = (C)dims[d];
            const C c = rem % n;
            rem /= n;
            ids_off += c * ids_s[d];
            if (d != dim) inp_off += c * inp_s[d];
        }
        size_t id;
        if (id_in_range(ids[ids_off], src_dim_size, id)) {
            out[i] = inp[inp_off + id * inp_s[dim]];
        } else {
            out[i] = zero<T>();
            flag_bad(bad);
        }
    }
}

template <typename I, typename T>
__device__ __forceinline__ void gather_kernel(const size_t numel, const size_t num_dims, const size_t* info,
                                              const size_t dim, const I* ids, const T* inp, T* out,
                                              const size_t src_dim_size, uint32_t* bad) {
    // Positions below 2^32 (with the grid's threads added): 32-bit division, several times
    // shorter than 64-bit.
    if (numel + opgen::grid_threads() < (size_t(1) << 32)) {
        gather_loop<uint32_t>((uint32_t)numel, num_dims, info, dim, ids, inp, out, src_dim_size, bad);
    } else {
        gather_loop<size_t>(numel, num_dims, info, dim, ids, inp, out, src_dim_size, bad);
    }
}

template <bool Add, typename I, typename T>
__device__ __forceinline__ void scatter_kernel(const size_t numel, const size_t num_dims, const size_t* info,
                                               const size_t dim, const I* ids, const T* src, T* dst,
                                               const size_t dst_dim_size, uint32_t* bad) {
    const size_t* dims = info;
    const size_t* ids_s = info + num_dims;
    const size_t* src_s = info + 2 * num_dims;
    const size_t* dst_s = info + 3 * num_dims;
    const size_t len = dims[dim];
    if (len == 0) return;
    const size_t columns = numel / len;
    for (size_t c = opgen::global_thread_id(); c < columns; c += opgen::grid_threads()) {
        size_t rem = c, ids_off = 0, src_off = 0, dst_off = 0;
#pragma unroll 1
        for (size_t k = 0; k < num_dims; k++) {
            const size_t d = num_dims - 1 - k;
            if (d == dim) continue;
            const size_t x = rem % dims[d];
            rem /= dims[d];
            ids_off += x * ids_s[d];
            src_off += x * src_s[d];
            dst_off += x * dst_s[d];
        }
        for (size_t j = 0; j < len; j++) {
            size_t id;
            if (!id_in_range(ids[ids_off + j * ids_s[dim]], dst_dim_size, id)) {
                flag_bad(bad);
                continue;
            }
            T* d = dst + dst_off + id * dst_s[dim];
            const T s = src[src_off + j * src_s[dim]];
            if constexpr (Add) {
                *d = add_values(*d, s);
            } else {
                *d = s;
            }
        }
    }
}

template <typename I, typename T>
__device__ __forceinline__ void index_add_kernel(const I* ids, const size_t ids_dim_size, const T* inp, T* out,
                                                 const size_t left_size, const size_t src_dim_size,
                                                 const size_t dst_dim_size, const size_t right_size,
                                                 uint32_t* bad) {
    (void)src_dim_size;
    const size_t numel = left_size * right_size;
    for (size_t i = opgen::global_thread_id(); i < numel; i += opgen::grid_threads()) {
        const size_t pre = i / right_size, post = i % right_size;
        for (size_t j = 0; j < ids_dim_size; j++) {
            size_t id;
            if (!id_in_range(ids[j], dst_dim_size, id)) {
                flag_bad(bad);
                continue;
            }
            T* d = out + (pre * dst_dim_size + id) * right_size + post;
            *d = add_values(*d, inp[(pre * ids_dim_size + j) * right_size + post]);
        }
    }
}

}  // namespace

// index_select
// gather
// scatter_set
// scatter_add
// index_add

// The entry points, one per (pattern, values) of ops.yaml's `kernel:` patterns: generated by gen
// from templates/hip/indexing.h.j2.
#include "indexing_entries.h"
