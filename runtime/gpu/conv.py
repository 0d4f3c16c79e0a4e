"""Convolutions (direct kernels, or im2col / col2im around the vendor BLAS), pooling and
nearest upsampling: one thread per output element."""

from __future__ import annotations

import math
from dataclasses import dataclass

from generated.kernel_facts import KernelPattern as K
from runtime.gpu.launch import BLOCK
from runtime.gpu.memory import GpuBuffer, _fits, _same_ordinal
from runtime.gpu.state import RuntimeState
from runtime.layout import Layout

# Convolutions through the BLAS: bytes of im2col / col2im columns at a time (batches past it
# are done in chunks), and the dtypes that take that path (the BLAS has f32 accumulation
# for the half types; the transposes sum the GEMM's rounded columns, so only f32 and f64).
CONV_COLUMN_BYTES = 512 << 20
CONV_GEMM_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})
CONV_TRANSPOSE_GEMM_DTYPES = frozenset({"float32", "float64"})  # of stride > 1 (stride 1: as a convolution)


@dataclass(frozen=True)
class _ConvGeometry:
    """A convolution as the GEMM path sees it, 1-D ones as one row (h = k_h = 1, pad_h = 0):
    sizes, Candle's stride / padding / dilation, and the input's strides (b, c, h, w)."""

    batch: int
    c_in: int
    h_in: int
    w_in: int
    c_out: int
    k_h: int
    k_w: int
    h_out: int
    w_out: int
    stride: int
    padding: int
    pad_h: int
    dilation: int
    strides: tuple[int, int, int, int]


class Convolutions(RuntimeState):
    """GpuRuntime's convolutions, pooling and upsampling; `_blas` (whether the driver's BLAS
    runs) is set up by GpuRuntime. Uses Memory's `alloc`, Launch's `stream`, `geometry`,
    `_sms`, `_info`, `_entry`, and Elementwise's `_dense`."""

    # -- convolutions, pooling, upsampling: one thread per output element ---------------------
    def _nn(
        self,
        op: str,
        pattern: K,
        buf: GpuBuffer,
        layout: Layout,
        table: dict,
        out_shape: tuple[int, ...],
        head: tuple,
        info_of: tuple,
        tail: tuple,
    ) -> GpuBuffer:
        """Launch (dst_numel, *head, info, *tail, dst) over a fresh contiguous output."""
        fn = self._entry(table, (pattern, buf.dtype), op)
        _fits(op, self.name, buf, layout)
        out = self.alloc(buf.ordinal, math.prod(out_shape), buf.dtype)
        if out.size:
            stream = self.stream(buf.ordinal)
            info, keep = self._info(buf.ordinal, *info_of)
            fn(self.launch, self.geometry(out.size, buf.ordinal), BLOCK, stream, out.size, *head, info, *tail, out.ptr)
        return out

    def _conv_operands(self, op, buf, layout, kernel, kernel_layout):
        _fits(op, self.name, kernel, kernel_layout)
        _same_ordinal(op, self.name, buf, kernel)
        return (layout.shape, layout.stride, kernel_layout.shape, kernel_layout.stride), (
            buf.at(layout),
            kernel.at(kernel_layout),
        )

    def conv1d(self, buf, layout, kernel, kernel_layout, p, table):
        info_of, ptrs = self._conv_operands("conv1d", buf, layout, kernel, kernel_layout)
        if self.vendor_nn is not None:
            out = self.vendor_nn.conv("conv1d", buf, layout, kernel, kernel_layout, p, table)
            if out is not None:  # the vendor's library took it (cuDNN on cuda)
                return out
        (b, c_in, l_in), (sb, sc, sl) = layout.shape, layout.stride
        geometry = _ConvGeometry(
            b,
            c_in,
            1,
            l_in,
            kernel_layout.shape[0],
            1,
            kernel_layout.shape[2],
            1,
            p.l_out(),
            p.stride,
            p.padding,
            0,
            p.dilation,
            (sb, sc, 0, sl),
        )
        if self._conv_by_gemm(buf, kernel, geometry, CONV_GEMM_DTYPES):
            return self._conv_gemm("conv1d", buf, layout, kernel, kernel_layout, table, geometry)
        return self._nn(
            "conv1d",
            K.CONV1D_SELF,
            buf,
            layout,
            table,
            (p.b_size, p.c_out, p.l_out()),
            (p.l_out(), p.stride, p.padding, p.dilation),
            info_of,
            ptrs,
        )

    def conv_transpose1d(self, buf, layout, kernel, kernel_layout, p, table):
        info_of, ptrs = self._conv_operands("conv_transpose1d", buf, layout, kernel, kernel_layout)
        if self.vendor_nn is not None:
            out = self.vendor_nn.conv("conv_transpose1d", buf, layout, kernel, kernel_layout, p, table)
            if out is not None:  # the vendor's library took it (cuDNN on cuda)
                return out
        (b, c_in, l_in), (sb, sc, sl) = layout.shape, layout.stride
        geometry = _ConvGeometry(
            b,
            c_in,
            1,
            l_in,
            kernel_layout.shape[1],
            1,
            kernel_layout.shape[2],
            1,
            p.l_out(),
            p.stride,
            p.padding,
            0,
            p.dilation,
            (sb, sc, 0, sl),
        )
        if p.stride == 1 and self._conv_by_gemm(buf, kernel, geometry, CONV_GEMM_DTYPES):
            return self._conv_gemm(
                "conv_transpose1d", buf, layout, kernel, kernel_layout.permute((1, 0, 2)), table, geometry, flipped=True
            )
        if self._conv_by_gemm(buf, kernel, geometry, CONV_TRANSPOSE_GEMM_DTYPES):
            return self._conv_transpose_gemm("conv_transpose1d", buf, layout, kernel, kernel_layout, table, geometry)
        return self._nn(
            "conv_transpose1d",
            K.CONV_TRANSPOSE1D_SELF,
            buf,
            layout,
            table,
            (p.b_size, p.c_out, p.l_out()),
            (p.l_out(), p.stride, p.padding, p.output_padding, p.dilation),
            info_of,
            ptrs,
        )

    def conv2d(self, buf, layout, kernel, kernel_layout, p, table):
        info_of, ptrs = self._conv_operands("conv2d", buf, layout, kernel, kernel_layout)
        if self.vendor_nn is not None:
            out = self.vendor_nn.conv("conv2d", buf, layout, kernel, kernel_layout, p, table)
            if out is not None:  # the vendor's library took it (cuDNN on cuda)
                return out
        (b, c_in, h_in, w_in), (c_out, _, k_h, k_w) = layout.shape, kernel_layout.shape
        geometry = _ConvGeometry(
            b,
            c_in,
            h_in,
            w_in,
            c_out,
            k_h,
            k_w,
            p.out_h(),
            p.out_w(),
            p.stride,
            p.padding,
            p.padding,
            p.dilation,
            tuple(layout.stride),
        )
        if self._conv_by_gemm(buf, kernel, geometry, CONV_GEMM_DTYPES):
            return self._conv_gemm("conv2d", buf, layout, kernel, kernel_layout, table, geometry)
        return self._nn(
            "conv2d",
            K.CONV2D_SELF,
            buf,
            layout,
            table,
            (p.b_size, p.c_out, p.out_h(), p.out_w()),
            (p.out_w(), p.out_h(), p.stride, p.padding, p.dilation),
            info_of,
            ptrs,
        )

    def conv_transpose2d(self, buf, layout, kernel, kernel_layout, p, table):
        info_of, ptrs = self._conv_operands("conv_transpose2d", buf, layout, kernel, kernel_layout)
        if self.vendor_nn is not None:
            out = self.vendor_nn.conv("conv_transpose2d", buf, layout, kernel, kernel_layout, p, table)
            if out is not None:  # the vendor's library took it (cuDNN on cuda)
                return out
        (b, c_in, h_in, w_in), (_, c_out, k_h, k_w) = layout.shape, kernel_layout.shape
        geometry = _ConvGeometry(
            b,
            c_in,
            h_in,
            w_in,
            c_out,
            k_h,
            k_w,
            p.out_h(),
            p.out_w(),
            p.stride,
            p.padding,
            p.padding,
            p.dilation,
            tuple(layout.stride),
        )
        if p.stride == 1 and self._conv_by_gemm(buf, kernel, geometry, CONV_GEMM_DTYPES):
            return self._conv_gemm(
                "conv_transpose2d",
                buf,
                layout,
                kernel,
                kernel_layout.permute((1, 0, 2, 3)),
                table,
                geometry,
                flipped=True,
            )
        if self._conv_by_gemm(buf, kernel, geometry, CONV_TRANSPOSE_GEMM_DTYPES):
            return self._conv_transpose_gemm("conv_transpose2d", buf, layout, kernel, kernel_layout, table, geometry)
        return self._nn(
            "conv_transpose2d",
            K.CONV_TRANSPOSE2D_SELF,
            buf,
            layout,
            table,
            (p.b_size, p.c_out, p.out_h(), p.out_w()),
            (p.out_w(), p.out_h(), p.stride, p.padding, p.output_padding, p.dilation),
            info_of,
            ptrs,
        )

    # -- convolutions through the BLAS: im2col + GEMM, GEMM + col2im ---------------------------
    def _conv_by_gemm(self, buf: GpuBuffer, kernel: GpuBuffer, g: _ConvGeometry, dtypes: frozenset) -> bool:
        """Whether the GEMM path takes this convolution: a float dtype it covers, a BLAS,
        nothing empty, output planes the kernels index in 32 bits."""
        if buf.dtype.name not in dtypes or kernel.dtype != buf.dtype or not self._has_blas():
            return False
        sizes = (g.batch, g.c_in, g.c_out, g.h_in * g.w_in, g.k_h * g.k_w, g.h_out * g.w_out)
        return all(sizes) and max(g.h_in * g.w_in, g.h_out * g.w_out) < 2**31

    def _has_blas(self) -> bool:
        """Whether the driver has a BLAS here (asked once)."""
        if self._blas is None:
            available = getattr(self.driver, "blas_available", None)
            self._blas = bool(available and available())
        return self._blas

    def _conv_gemm(
        self, op, buf, layout, kernel, kernel_layout, table, g: _ConvGeometry, flipped: bool = False
    ) -> GpuBuffer:
        """out[b] (c_out, positions) = kernel (c_out, taps) @ col[b] (taps, positions), col
        made by im2col_<dt> from the strided input; batches in chunks of CONV_COLUMN_BYTES.
        Column-major, the BLAS computes out[b]^T = col[b]^T kernel^T: col first.
        `flipped`: a transposed convolution of stride 1, kernel_layout its kernel viewed as
        (c_out, c_in, ..): the taps read the input backwards (hip/conv.hip's im2col)."""
        dtype, ordinal, itemsize = buf.dtype, buf.ordinal, buf.dtype.itemsize
        weights, _ = self._dense(kernel, kernel_layout, self._entry(table, (K.COPY_STRIDED_SELF, dtype), op))
        im2col = self._entry(table, (K.IM2COL_SELF, dtype), op)
        taps, positions = g.c_in * g.k_h * g.k_w, g.h_out * g.w_out
        out = self.alloc(ordinal, g.batch * g.c_out * positions, dtype)
        per_batch = max(1, CONV_COLUMN_BYTES // (taps * positions * itemsize))
        chunk = min(g.batch, per_batch)
        col = self.alloc(ordinal, chunk * taps * positions, dtype)
        stream = self.stream(ordinal)
        sb, sc, sh, sw = g.strides
        step, offset_y, offset_x = (-g.dilation, g.pad_h, g.padding) if flipped else (g.dilation, -g.pad_h, -g.padding)
        for b0 in range(0, g.batch, chunk):
            n = min(chunk, g.batch - b0)
            rows = n * taps
            im2col(
                self.launch,
                min(rows, self._sms(ordinal) * 16),
                BLOCK,
                stream,
                rows,
                g.c_in,
                g.h_in,
                g.w_in,
                g.k_h,
                g.k_w,
                g.h_out,
                g.w_out,
                g.stride,
                step,
                offset_y,
                offset_x,
                sb,
                sc,
                sh,
                sw,
                buf.at(layout) + b0 * sb * itemsize,
                col.ptr,
            )
            self.driver.gemm(
                ordinal,
                stream.handle,
                dtype,
                False,
                False,
                positions,
                g.c_out,
                taps,
                col.ptr,
                positions,
                taps * positions,
                weights.ptr,
                taps,
                0,
                out.ptr + b0 * g.c_out * positions * itemsize,
                positions,
                g.c_out * positions,
                n,
                reduced=self.switches.conv_reduced(dtype),
            )
        return out

    def _conv_transpose_gemm(self, op, buf, layout, kernel, kernel_layout, table, g: _ConvGeometry) -> GpuBuffer:
        """col[b] (c_out * taps, inputs) = kernel^T (c_out * taps, c_in) @ x[b] (c_in, inputs)
        through the BLAS, then col2im_<dt> sums each output's taps; batches in chunks."""
        dtype, ordinal, itemsize = buf.dtype, buf.ordinal, buf.dtype.itemsize
        copy = self._entry(table, (K.COPY_STRIDED_SELF, dtype), op)
        weights, _ = self._dense(kernel, kernel_layout, copy)
        x, _ = self._dense(buf, layout, copy)
        col2im = self._entry(table, (K.COL2IM_SELF, dtype), op)
        taps, inputs, positions = g.c_out * g.k_h * g.k_w, g.h_in * g.w_in, g.h_out * g.w_out
        out = self.alloc(ordinal, g.batch * g.c_out * positions, dtype)
        chunk = min(g.batch, max(1, CONV_COLUMN_BYTES // (taps * inputs * itemsize)))
        col = self.alloc(ordinal, chunk * taps * inputs, dtype)
        stream = self.stream(ordinal)
        for b0 in range(0, g.batch, chunk):
            n = min(chunk, g.batch - b0)
            self.driver.gemm(
                ordinal,
                stream.handle,
                dtype,
                False,
                True,
                inputs,
                taps,
                g.c_in,
                x.ptr + b0 * g.c_in * inputs * itemsize,
                inputs,
                g.c_in * inputs,
                weights.ptr,
                taps,
                0,
                col.ptr,
                inputs,
                taps * inputs,
                n,
                reduced=self.switches.conv_reduced(dtype),
            )
            rows = n * g.c_out
            col2im(
                self.launch,
                min(rows, self._sms(ordinal) * 16),
                BLOCK,
                stream,
                rows,
                g.k_h,
                g.k_w,
                g.h_in,
                g.w_in,
                g.h_out,
                g.w_out,
                g.stride,
                g.padding,
                g.pad_h,
                g.dilation,
                col.ptr,
                out.ptr + b0 * g.c_out * positions * itemsize,
            )
        return out

    def _pool(self, op, pattern, buf, layout, kernel_size, stride, table):
        (kh, kw), (sh, sw) = kernel_size, stride
        b, c, h, w = layout.shape
        out_shape = (b, c, (h - kh) // sh + 1, (w - kw) // sw + 1)
        return self._nn(
            op,
            pattern,
            buf,
            layout,
            table,
            out_shape,
            (kw, kh, sw, sh),
            (layout.shape, layout.stride),
            (buf.at(layout),),
        )

    def avg_pool2d(self, buf, layout, kernel_size, stride, table):
        return self._pool("avg_pool2d", K.AVG_POOL2D_SELF, buf, layout, kernel_size, stride, table)

    def max_pool2d(self, buf, layout, kernel_size, stride, table):
        return self._pool("max_pool2d", K.MAX_POOL2D_SELF, buf, layout, kernel_size, stride, table)

    def upsample_nearest1d(self, buf, layout, size, table):
        b, c, _ = layout.shape
        return self._nn(
            "upsample_nearest1d",
            K.UPSAMPLE_NEAREST1D_SELF,
            buf,
            layout,
            table,
            (b, c, size),
            (size,),
            (layout.shape, layout.stride),
            (buf.at(layout),),
        )

    def upsample_nearest2d(self, buf, layout, height, width, table):
        b, c, _, _ = layout.shape
        return self._nn(
            "upsample_nearest2d",
            K.UPSAMPLE_NEAREST2D_SELF,
            buf,
            layout,
            table,
            (b, c, height, width),
            (width, height),
            (layout.shape, layout.stride),
            (buf.at(layout),),
        )
