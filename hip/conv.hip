// Convolutions. Float dtypes take a GEMM path in runtime/gpu/conv.py (im2col / col2im below
// around the vendor BLAS); the direct kernels (one thread per output element, Candle's
// conv1d / conv2d / conv_transpose1d / conv_transpose2d) cover every other case.
//
//   im2col_<dt>(rows, c_in, h_in, w_in, k_h, k_w, h_out, w_out, stride, tap_step, offset_y,
//               offset_x, sb, sc, sh, sw, src, col)
//       col (b, c_in * k_h * k_w, h_out * w_out) contiguous, rows = b * c_in * k_h * k_w:
//       col[b, (ci, ky, kx), (oy, ox)] = src[b, ci, oy * stride + ky * tap_step + offset_y,
//       ox * stride + kx * tap_step + offset_x], 0 outside; src strides sb, sc, sh, sw.
//       A convolution: tap_step = dilation, offsets -padding (a conv1d is h_in = k_h =
//       h_out = 1, offset_y = 0). A transposed one of stride 1 is a convolution with the
//       kernel flipped: tap_step = -dilation, offsets +padding. A block per row of col, so the row's division
//       is made once and each element divides once (its position).
//   col2im_<dt>(rows, k_h, k_w, h_in, w_in, h_out, w_out, stride, padding, pad_h, dilation, col, dst)
//       The transposed convolution's gather: col (b, c_out * k_h * k_w, h_in * w_in) is
//       kernel^T @ src per batch; dst (b, c_out, h_out, w_out), rows = b * c_out:
//       dst[b, co, oy, ox] = sum over (ky, kx) with oy + pad_h - ky * dilation = iy * stride
//       (likewise x with padding), iy, ix in range, of col[b, (co, ky, kx), (iy, ix)]; accumulated in
//       accum_t, no atomics (deterministic).
//
//   conv1d_<dt>(dst_numel, l_out, stride, padding, dilation, info, src, kernel, dst)
//       src (b, c_in, l_in) * kernel (c_out, c_in, k) -> dst (b, c_out, l_out)
//   conv2d_<dt>(dst_numel, w_out, h_out, stride, padding, dilation, info, src, kernel, dst)
//       src (b, c_in, h, w) * kernel (c_out, c_in, k_h, k_w) -> dst (b, c_out, h_out, w_out)
//   conv_transpose1d_<dt>(dst_numel, l_out, stride, padding, out_padding, dilation, info, src, kernel, dst)
//       src (b, c_in, l_in) * kernel (c_in, c_out, k) -> dst (b, c_out, l_out)
//   conv_transpose2d_<dt>(dst_numel, w_out, h_out, stride, padding, out_padding, dilation, info, src, kernel, dst)
//       src (b, c_in, h, w) * kernel (c_in, c_out, k_h, k_w) -> dst (b, c_out, h_out, w_out)
//
// info: src dims, src strides, kernel dims, kernel strides (4 * rank): src and kernel
// may be any strided views; dst is contiguous. The first parameter is dst's element
// count (Candle passes src_numel there and derives the dst count). out_padding only
// widens the output (l_out / h_out / w_out already include it).
// Semantics (runtime/cpu/nn.py): bf16/f16 accumulate in f32 and round once; integers
// wrap; f32 accumulates in f32 in (c_in, k) order, not BLAS order: compare with a
// tolerance.
#include "compat.h"

namespace {

template <typename T> __device__ __forceinline__ opgen::accum_t<T> acc_of(T x) {
    return (opgen::accum_t<T>)opgen::to_compute(x);
}
template <typename T> __device__ __forceinline__ T result_of(opgen::accum_t<T> a) {
    return opgen::from_compute<T>((opgen::compute_t<T>)a);
}

template <typename T>
__device__ __forceinline__ void conv1d_kernel(const size_t dst_numel, const size_t l_out, const size_t stride,
                                              const size_t padding, const size_t dilation, const size_t* info,
                                              const T* src, const T* kernel, T* dst) {
    const size_t* sd = info;      // b, c_in, l_in
    const size_t* ss = info + 3;  // src strides
    const size_t* kd = info + 6;  // c_out, c_in, k
    const size_t* ks = info + 9;  // kernel strides
    const size_t c_in = sd[1], l_in = sd[2], c_out = kd[0], k_size = kd[2];
    for (size_t i = opgen::global_thread_id(); i < dst_numel; i += opgen::grid_threads()) {
        const size_t b = i / (c_out * l_out), co = i / l_out % c_out, o = i % l_out;
        opgen::accum_t<T> acc = 0;
        for (size_t ci = 0; ci < c_in; ci++) {
            for (size_t k = 0; k < k_size; k++) {
                const size_t at = o * stride + k * dilation;  // position in the padded input
                if (at < padding || at - padding >= l_in) continue;
                const size_t l = at - padding;
                acc += acc_of(src[b * ss[0] + ci * ss[1] + l * ss[2]]) * acc_of(kernel[co * ks[0] + ci * ks[1] + k * ks[2]]);
            }
        }
        dst[i] = result_of<T>(acc);
    }
}

template <typename T>
__device__ __forceinline__ void conv2d_kernel(const size_t dst_numel, const size_t w_out, const size_t h_out,
                                              const size_t stride, const size_t padding, const size_t dilation,
                                              const size_t* info, const T* src, const T* kernel, T* dst) {
    const size_t* sd = info;       // b, c_in, h, w
    const size_t* ss = info + 4;
    const size_t* kd = info + 8;   // c_out, c_in, k_h, k_w
    const size_t* ks = info + 12;
    const size_t c_in = sd[1], h_in = sd[2], w_in = sd[3], c_out = kd[0], k_h = kd[2], k_w = kd[3];
    for (size_t i = opgen::global_thread_id(); i < dst_numel; i += opgen::grid_threads()) {
        const size_t b = i / (c_out * h_out * w_out), co = i / (h_out * w_out) % c_out;
        const size_t oy = i / w_out % h_out, ox = i % w_out;
        opgen::accum_t<T> acc = 0;
        for (size_t ci = 0; ci < c_in; ci++) {
            for (size_t ky = 0; ky < k_h; ky++) {
                const size_t ay = oy * stride + ky * dilation;
                if (ay < padding || ay - padding >= h_in) continue;
                const size_t y = ay - padding;
                for (size_t kx = 0; kx < k_w; kx++) {
                    const size_t ax = ox * stride + kx * dilation;
                    if (ax < padding || ax - padding >= w_in) continue;
                    const size_t x = ax - padding;
                    acc += acc_of(src[b * ss[0] + ci * ss[1] + y * ss[2] + x * ss[3]]) *
                           acc_of(kernel[co * ks[0] + ci * ks[1] + ky * ks[2] + kx * ks[3]]);
                }
            }
        }
        dst[i] = result_of<T>(acc);
    }
}

// The input position i with i * stride + k * dilation == o + padding, if any.
__device__ __forceinline__ bool transposed_source(size_t o, size_t k, size_t stride, size_t padding,
                                                  size_t dilation, size_t len, size_t& i) {
    const size_t at = o + padding, off = k * dilation;
    if (at < off) return false;
    const size_t t = at - off;
    if (t % stride != 0) return false;
    i = t / stride;
    return i < len;
}

template <typename T>
__device__ __forceinline__ void conv_transpose1d_kernel(const size_t dst_numel, const size_t l_out,
                                                        const size_t stride, const size_t padding,
                                                        const size_t out_padding, const size_t dilation,
                                                        const size_t* info, const T* src, const T* kernel, T* dst) {
    (void)out_padding;
    const size_t* sd = info;      // b, c_in, l_in
    const size_t* ss = info + 3;
    const size_t* kd = info + 6;  // c_in, c_out, k
    const size_t* ks = info + 9;
    const size_t c_in = sd[1], l_in = sd[2], c_out = kd[1], k_size = kd[2];
    for (size_t i = opgen::global_thread_id(); i < dst_numel; i += opgen::grid_threads()) {
        const size_t b = i / (c_out * l_out), co = i / l_out % c_out, o = i % l_out;
        opgen::accum_t<T> acc = 0;
        for (size_t ci = 0; ci < c_in; ci++) {
            for (size_t k = 0; k < k_size; k++) {
                size_t l;
                if (!transposed_source(o, k, stride, padding, dilation, l_in, l)) continue;
                acc += acc_of(src[b * ss[0] + ci * ss[1] + l * ss[2]]) * acc_of(kernel[ci * ks[0] + co * ks[1] + k * ks[2]]);
            }
        }
        dst[i] = result_of<T>(acc);
    }
}

template <typename T>
__device__ __forceinline__ void conv_transpose2d_kernel(const size_t dst_numel, const size_t w_out,
                                                        const size_t h_out, const size_t stride,
                                                        const size_t padding, const size_t out_padding,
                                                        const size_t dilation, const size_t* info, const T* src,
                                                        const T* kernel, T* dst) {
    (void)out_padding;
    const size_t* sd = info;       // b, c_in, h, w
    const size_t* ss = info + 4;
    const size_t* kd = info + 8;   // c_in, c_out, k_h, k_w
    const size_t* ks = info + 12;
    const size_t c_in = sd[1], h_in = sd[2], w_in = sd[3], c_out = kd[1], k_h = kd[2], k_w = kd[3];
    for (size_t i = opgen::global_thread_id(); i < dst_numel; i += opgen::grid_threads()) {
        const size_t b = i / (c_out * h_out * w_out), co = i / (h_out * w_out) % c_out;
        const size_t oy = i / w_out % h_out, ox = i % w_out;
        opgen::accum_t<T> acc = 0;
        for (size_t ci = 0; ci < c_in; ci++) {
            for (size_t ky = 0; ky < k_h; ky++) {
                size_t y;
                if (!transposed_source(oy, ky, stride, padding, dilation, h_in, y)) continue;
                for (size_t kx = 0; kx < k_w; kx++) {
                    size_t x;
                    if (!transposed_source(ox, kx, stride, padding, dilation, w_in, x)) continue;
                    acc += acc_of(src[b * ss[0] + ci * ss[1] + y * ss[2] + x * ss[3]]) *
                           acc_of(kernel[ci * ks[0] + co * ks[1] + ky * ks[2] + kx * ks[3]]);
                }
            }
        }
        dst[i] = result_of<T>(acc);
    }
}

template <typename T> __device__ __forceinline__ T zero_of() { return opgen::from_compute<T>(opgen::compute_t<T>(0)); }

template <typename T>
__device__ __forceinline__ void im2col_kernel(const size_t rows, const size_t c_in, const size_t h_in,
                                              const size_t w_in, const size_t k_h, const size_t k_w,
                                              const size_t h_out, const size_t w_out, const size_t stride,
                                              const int64_t tap_step, const int64_t offset_y,
                                              const int64_t offset_x, const size_t sb,
                                              const size_t sc, const size_t sh, const size_t sw, const T* src,
                                              T* col) {
    const size_t taps = c_in * k_h * k_w;
    const unsigned wo = (unsigned)w_out, positions = (unsigned)(h_out * w_out);  // runtime: < 2^31
    const long long hi = (long long)h_in, wi = (long long)w_in;
    for (size_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const size_t b = row / taps, tap = row % taps;
        const size_t kx = tap % k_w, ky = tap / k_w % k_h, ci = tap / (k_w * k_h);
        const T* plane = src + b * sb + ci * sc;
        T* out = col + row * positions;
        const long long y0 = (long long)ky * tap_step + offset_y;
        const long long x0 = (long long)kx * tap_step + offset_x;
        for (unsigned p = threadIdx.x; p < positions; p += blockDim.x) {
            const unsigned oy = p / wo, ox = p - oy * wo;
            const long long y = (long long)oy * (long long)stride + y0, x = (long long)ox * (long long)stride + x0;
            out[p] = (y >= 0 && y < hi && x >= 0 && x < wi) ? plane[y * (long long)sh + x * (long long)sw] : zero_of<T>();
        }
    }
}

// The input position i with i * stride == at (at = o + padding - k * dilation), if any.
__device__ __forceinline__ bool col_source(long long at, long long stride, long long len, long long& i) {
    if (at < 0 || at % stride != 0) return false;
    i = at / stride;
    return i < len;
}

template <typename T>
__device__ __forceinline__ void col2im_kernel(const size_t rows, const size_t k_h, const size_t k_w,
                                              const size_t h_in, const size_t w_in, const size_t h_out,
                                              const size_t w_out, const size_t stride, const size_t padding,
                                              const size_t pad_h, const size_t dilation, const T* col, T* dst) {
    const unsigned wo = (unsigned)w_out, positions = (unsigned)(h_out * w_out);  // runtime: < 2^31
    const size_t inputs = h_in * w_in;
    const long long s = (long long)stride, pad = (long long)padding, pad_y = (long long)pad_h;
    const long long dil = (long long)dilation;
    for (size_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* taps = col + row * k_h * k_w * inputs;
        T* out = dst + row * positions;
        for (unsigned p = threadIdx.x; p < positions; p += blockDim.x) {
            const unsigned oy = p / wo, ox = p - oy * wo;
            opgen::accum_t<T> acc = 0;
            for (size_t ky = 0; ky < k_h; ky++) {
                long long iy;
                if (!col_source((long long)oy + pad_y - (long long)ky * dil, s, (long long)h_in, iy)) continue;
                for (size_t kx = 0; kx < k_w; kx++) {
                    long long ix;
                    if (!col_source((long long)ox + pad - (long long)kx * dil, s, (long long)w_in, ix)) continue;
                    acc += acc_of(taps[(ky * k_w + kx) * inputs + (size_t)(iy * (long long)w_in + ix)]);
                }
            }
            out[p] = result_of<T>(acc);
        }
    }
}

}  // namespace

// conv1d
// conv2d
// conv_transpose1d
// conv_transpose2d
// im2col
// col2im

// The entry points, one per (pattern, values) of ops.yaml's `kernel:` patterns: generated by gen
// from templates/hip/conv.h.j2.
#include "conv_entries.h"
