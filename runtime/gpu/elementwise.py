"""Elementwise ops: unary / binary / cmp through the generated kernels, and affine, powf, elu,
casts, where_cond, const_set and the copies through the hand-written ones."""

from __future__ import annotations

import numpy as np

from generated.kernel_facts import KernelPattern as K
from runtime.errors import DTypeMismatch, ShapeMismatch
from runtime.gpu import memory
from runtime.gpu.launch import BLOCK, DeviceStream
from runtime.gpu.memory import GpuBuffer, _fits, _new_pooled, _PooledBuffer, _same_ordinal
from runtime.gpu.state import RuntimeState
from runtime.layout import Layout


class Elementwise(RuntimeState):
    """GpuRuntime's elementwise ops and copies, and the dense copies of views that other
    families make before a kernel or the BLAS reads them (`_dense`, `_dense_copy`). Uses
    Memory's `alloc` and Launch's `stream`, `geometry`, `_info`, `_entry`."""

    # -- elementwise ops through the generated kernels --------------------------------------
    def _launcher(self, kernel, dtype: np.dtype, op: str):
        fn = kernel.by_dtype.get(dtype)
        if fn is None:
            expected = ", ".join(sorted(str(d) for d in kernel.by_dtype))
            raise DTypeMismatch(op, self.name, f"one of {expected}", str(dtype))
        return fn

    # unary and binary are the hot path of small ops (a 1,024-element exp is all host time):
    # unary inlines the checks of _launcher and _fits where they pass on a contiguous view,
    # both make the device current once (alloc and stream would each do it again), and both
    # take a free block of the output's size themselves, as _alloc would (a frame less; a
    # first block of a size, a large one, and POISON's memset go through _alloc).
    def unary(self, buf: GpuBuffer, kernel, layout: Layout) -> GpuBuffer:
        dtype = buf.dtype
        fn = kernel.by_dtype.get(dtype)
        if fn is None:
            self._launcher(kernel, dtype, kernel.op)  # raises DTypeMismatch
        n = layout.elem_count
        if layout.dense_count != n or n > buf.size:  # not buf[:n] in order: the general check
            _fits(kernel.op, self.name, buf, layout)  # raises ShapeMismatch where it does not fit
        ordinal = buf.ordinal
        self.driver.activate(ordinal)
        stream = self._streams.get(ordinal) or self.stream(ordinal)
        out_dtype = kernel.result or dtype
        bin_ = self._bin_of.get((ordinal, n * out_dtype.itemsize or 1))
        out: GpuBuffer
        if bin_ is not None and bin_.free and not memory.POISON:
            out = _new_pooled(_PooledBuffer)
            out.ptr = bin_.free.pop()
            bin_.kept.bytes -= bin_.size
            out.size, out.dtype, out.ordinal, out.release, out.bin = n, out_dtype, ordinal, None, bin_
        else:
            out = self._alloc(ordinal, n, out_dtype, stream.handle)
        if not n:
            return out
        if layout.is_contiguous:
            args = (n, len(layout.shape), 0, buf.ptr + layout.start_offset * dtype.itemsize, out.ptr)
            keep = None
        else:
            info, keep = self._info(ordinal, layout.shape, layout.stride)
            args = (n, len(layout.shape), info, buf.ptr + layout.start_offset * dtype.itemsize, out.ptr)
        grid = -(-n // BLOCK) if n <= 64 * BLOCK else self.geometry(n, ordinal)
        direct = self._direct.get((fn, ordinal))
        if direct is None:
            self._direct_first(fn, ordinal, grid, stream, args)
        else:
            direct[0](grid, BLOCK, stream.handle, args, direct[1])
        del keep  # the dims and strides' buffer: freed (stream-ordered) after the launch
        return out

    def binary(self, buf: GpuBuffer, kernel, rhs: GpuBuffer, lhs_layout: Layout, rhs_layout: Layout) -> GpuBuffer:
        dtype = buf.dtype
        fn = kernel.by_dtype.get(dtype)
        if fn is None:
            self._launcher(kernel, dtype, kernel.op)  # raises DTypeMismatch
        n = lhs_layout.elem_count
        if lhs_layout.dense_count != n or n > buf.size:
            _fits(kernel.op, self.name, buf, lhs_layout)
        if rhs_layout.dense_count != rhs_layout.elem_count or rhs_layout.elem_count > rhs.size:
            _fits(kernel.op, self.name, rhs, rhs_layout)
        ordinal = buf.ordinal
        if rhs.ordinal != ordinal:
            _same_ordinal(kernel.op, self.name, buf, rhs)  # raises DeviceMismatch
        self.driver.activate(ordinal)
        stream = self._streams.get(ordinal) or self.stream(ordinal)
        out_dtype = kernel.result or dtype
        bin_ = self._bin_of.get((ordinal, n * out_dtype.itemsize or 1))
        out: GpuBuffer
        if bin_ is not None and bin_.free and not memory.POISON:
            out = _new_pooled(_PooledBuffer)
            out.ptr = bin_.free.pop()
            bin_.kept.bytes -= bin_.size
            out.size, out.dtype, out.ordinal, out.release, out.bin = n, out_dtype, ordinal, None, bin_
        else:
            out = self._alloc(ordinal, n, out_dtype, stream.handle)
        if not n:
            return out
        keep = None
        if lhs_layout.is_contiguous and rhs_layout.is_contiguous:
            info = 0
        else:
            info, keep = self._info(ordinal, lhs_layout.shape, lhs_layout.stride, rhs_layout.stride)
        args = (
            n,
            len(lhs_layout.shape),
            info,
            buf.ptr + lhs_layout.start_offset * dtype.itemsize,
            rhs.ptr + rhs_layout.start_offset * rhs.dtype.itemsize,
            out.ptr,
        )
        grid = -(-n // BLOCK) if n <= 64 * BLOCK else self.geometry(n, ordinal)
        direct = self._direct.get((fn, ordinal))
        if direct is None:
            self._direct_first(fn, ordinal, grid, stream, args)
        else:
            direct[0](grid, BLOCK, stream.handle, args, direct[1])
        del keep
        return out

    def _direct_first(self, fn, ordinal: int, grid: int, stream: DeviceStream, args: tuple, block: int = BLOCK) -> None:
        """Launch wrapper `fn` with `args` through `launch`, and keep the prepared launch it
        reached (with the wrapper's argument types) for _direct: later calls skip the
        wrapper. Where `launch` prepares nothing (a test's stand-in), nothing is kept."""
        reached: list[tuple] = []
        launch = self.launch

        def learn(source, name, grid_, block, stream_, args_, types) -> None:
            reached.append((source, name, types))
            launch(source, name, grid_, block, stream_, args_, types)

        fn(learn, grid, block, stream, *args)
        if len(reached) == 1:
            source, name, types = reached[0]
            call = self._launches.get((ordinal, source, name))
            if call is not None and self.launch == self._launch_method:
                self._direct[(fn, ordinal)] = (call, types)

    cmp = binary  # same kernels' shape: the Kernel's result dtype (u8) sizes the output

    # -- ops through the hand-written kernels: `table` is the op's launch table --------------
    def _map(
        self, op: str, buf: GpuBuffer, layout: Layout, table: dict, key: tuple, out_dtype=None, extra=(), before=()
    ):
        """The common shape (numel, num_dims, info, [before...], inp, out, [extra...]): a
        strided input, a contiguous output of the layout's shape."""
        fn = self._entry(table, key, op)
        _fits(op, self.name, buf, layout)
        out = self.alloc(buf.ordinal, layout.elem_count, out_dtype or buf.dtype)
        if out.size:
            stream = self.stream(buf.ordinal)
            info, keep = (0, None) if layout.is_contiguous else self._info(buf.ordinal, layout.shape, layout.stride)
            fn(
                self.launch,
                self.geometry(out.size, buf.ordinal),
                BLOCK,
                stream,
                out.size,
                layout.rank,
                info,
                *before,
                buf.at(layout),
                out.ptr,
                *extra,
            )
        return out

    def affine(self, buf: GpuBuffer, layout: Layout, mul: float, add: float, table: dict) -> GpuBuffer:
        return self._map(
            "affine",
            buf,
            layout,
            table,
            (K.AFFINE_SELF, buf.dtype),
            extra=(_scalar(mul, buf.dtype), _scalar(add, buf.dtype)),
        )

    def powf(self, buf: GpuBuffer, layout: Layout, exponent: float, table: dict) -> GpuBuffer:
        return self._map("powf", buf, layout, table, (K.POWF_SELF, buf.dtype), before=(float(exponent),))

    def elu(self, buf: GpuBuffer, layout: Layout, alpha: float, table: dict) -> GpuBuffer:
        return self._map("elu", buf, layout, table, (K.ELU_SELF, buf.dtype), before=(_scalar(alpha, buf.dtype),))

    def to_dtype(self, buf: GpuBuffer, layout: Layout, dtype, table: dict) -> GpuBuffer:
        return self._map(
            "to_dtype", buf, layout, table, (K.CAST_SELF_DTYPE, buf.dtype, dtype.numpy), out_dtype=dtype.numpy
        )

    def where_cond(
        self,
        buf: GpuBuffer,
        layout: Layout,
        on_true: GpuBuffer,
        true_layout: Layout,
        on_false: GpuBuffer,
        false_layout: Layout,
        table: dict,
    ) -> GpuBuffer:
        fn = self._entry(table, (K.WHERE_COND_SELF_ON_TRUE, buf.dtype, on_true.dtype), "where_cond")
        for b, l in ((buf, layout), (on_true, true_layout), (on_false, false_layout)):
            _fits("where_cond", self.name, b, l)
            _same_ordinal("where_cond", self.name, buf, b)
        out = self.alloc(buf.ordinal, layout.elem_count, on_true.dtype)
        if out.size:
            stream = self.stream(buf.ordinal)
            dense = layout.is_contiguous and true_layout.is_contiguous and false_layout.is_contiguous
            info, keep = (
                (0, None)
                if dense
                else self._info(buf.ordinal, layout.shape, layout.stride, true_layout.stride, false_layout.stride)
            )
            fn(
                self.launch,
                self.geometry(out.size, buf.ordinal),
                BLOCK,
                stream,
                out.size,
                layout.rank,
                info,
                buf.at(layout),
                on_true.at(true_layout),
                on_false.at(false_layout),
                out.ptr,
            )
        return out

    def const_set(self, buf: GpuBuffer, value, layout: Layout, table: dict) -> None:
        fn = self._entry(table, (K.CONST_SET_SELF, buf.dtype), "const_set")
        _fits("const_set", self.name, buf, layout)
        if layout.elem_count:
            stream = self.stream(buf.ordinal)
            info, keep = (0, None) if layout.is_contiguous else self._info(buf.ordinal, layout.shape, layout.stride)
            fn(
                self.launch,
                self.geometry(layout.elem_count, buf.ordinal),
                BLOCK,
                stream,
                layout.elem_count,
                layout.rank,
                info,
                _scalar(value, buf.dtype),
                buf.at(layout),
            )

    def copy_strided_src(
        self, buf: GpuBuffer, dst: GpuBuffer, dst_offset: int, src_layout: Layout, table: dict
    ) -> None:
        fn = self._entry(table, (K.COPY_STRIDED_SELF, buf.dtype), "copy_strided_src")
        _fits("copy_strided_src", self.name, buf, src_layout)
        if dst_offset + src_layout.elem_count > dst.size:
            raise ShapeMismatch(
                "copy_strided_src", self.name, f"at most {dst.size - dst_offset} elements", src_layout.elem_count
            )
        if src_layout.elem_count:
            self._copy_view(fn, buf, src_layout, dst.ptr + dst_offset * dst.dtype.itemsize)

    def _copy_view(self, copy, buf: GpuBuffer, layout: Layout, dst_ptr: int) -> None:
        """The view's elements, in order, to dst_ptr on the view's device: `copy` is the
        launch wrapper of copy_strided_<dtype> (hip/fill_copy.hip)."""
        stream = self.stream(buf.ordinal)
        info, keep = (0, None) if layout.is_contiguous else self._info(buf.ordinal, layout.shape, layout.stride)
        copy(
            self.launch,
            self.geometry(layout.elem_count, buf.ordinal),
            BLOCK,
            stream,
            layout.elem_count,
            layout.rank,
            info,
            buf.at(layout),
            dst_ptr,
        )

    def copy2d(
        self,
        buf: GpuBuffer,
        dst: GpuBuffer,
        d1: int,
        d2: int,
        src_stride1: int,
        dst_stride1: int,
        src_offset: int,
        dst_offset: int,
        table: dict,
    ) -> None:
        fn = self._entry(table, (K.COPY2D_SELF, buf.dtype), "copy2d")
        if d1 and d2:
            last_src = src_offset + (d1 - 1) * src_stride1 + d2
            last_dst = dst_offset + (d1 - 1) * dst_stride1 + d2
            if last_src > buf.size or last_dst > dst.size:
                raise ShapeMismatch(
                    "copy2d", self.name, f"rows within {buf.size} / {dst.size} elements", (last_src, last_dst)
                )
            itemsize = buf.dtype.itemsize
            stream = self.stream(buf.ordinal)
            fn(
                self.launch,
                self.geometry(d1 * d2, buf.ordinal),
                BLOCK,
                stream,
                buf.ptr + src_offset * itemsize,
                dst.ptr + dst_offset * itemsize,
                d1,
                d2,
                src_stride1,
                dst_stride1,
            )

    def _dense(self, buf: GpuBuffer, layout: Layout, copy) -> tuple[GpuBuffer, Layout]:
        """The view as a contiguous, offset-free buffer where a kernel needs one: the view
        itself where it is one, else a copy made on the device (see _dense_copy)."""
        if layout.is_contiguous and layout.start_offset == 0:
            return buf, layout
        return self._dense_copy(buf, layout, copy), Layout.contiguous(layout.shape)

    def _dense_copy(self, buf: GpuBuffer, layout: Layout, copy) -> GpuBuffer:
        """A fresh contiguous copy of the view on its device, made by `copy`: the launch
        wrapper of copy_strided_<dtype>, which the calling op's launch table carries (its
        ops.yaml `kernel:` names copy_strided_{self}, or {x}, {ids}: the argument copied).
        The caller has checked that the view fits its buffer."""
        out = self.alloc(buf.ordinal, layout.elem_count, buf.dtype)
        if out.size:
            self._copy_view(copy, buf, layout, out.ptr)
        return out


def _scalar(value, dtype: np.dtype):
    """A Python number as a kernel's scalar argument of `dtype`: converted as the cpu backend
    converts (Rust `as`), and f16/bf16 passed as their bit patterns."""
    from runtime.cpu.views import rust_as_scalar

    scalar = rust_as_scalar(value, dtype)
    if dtype.itemsize == 2 and dtype.kind not in "iu":
        return int(np.asarray(scalar, dtype).view(np.uint16))
    return scalar.item()
