"""matmul through the vendor BLAS (row-major storage, column-major BLAS)."""

from __future__ import annotations

from generated.kernel_facts import KernelPattern as K
from runtime.checks import matmul_dims
from runtime.gpu.memory import GpuBuffer, _fits, _same_ordinal
from runtime.gpu.state import RuntimeState
from runtime.layout import Layout


class Matmul(RuntimeState):
    """GpuRuntime's matmul, through the driver's `gemm`. Uses Memory's `alloc`, Launch's
    `stream`, `_entry`, and Elementwise's `_dense`."""

    # -- matmul through the vendor BLAS (row-major storage, column-major BLAS) -----------------
    def matmul(
        self, buf: GpuBuffer, rhs: GpuBuffer, bmnk, lhs_layout: Layout, rhs_layout: Layout, table: dict
    ) -> GpuBuffer:
        """C = A @ B per batch, A (b, m, k) and B (b, k, n) views, C contiguous (b, m, n).
        Row-major C is column-major C^T = B^T A^T: the BLAS gets B first. A view whose last
        two dims are transposed needs no copy; other strided views are made dense first, on
        the device (`table`: dtype -> launch wrapper of copy_strided_<dtype>)."""
        b, m, n, k = matmul_dims("matmul", self.name, bmnk, lhs_layout.shape, rhs_layout.shape)
        _fits("matmul", self.name, buf, lhs_layout)
        _fits("matmul", self.name, rhs, rhs_layout)
        _same_ordinal("matmul", self.name, buf, rhs)
        out = self.alloc(buf.ordinal, b * m * n, buf.dtype)
        if not out.size:
            return out
        if k == 0:
            self.driver.memset(out.ptr, out.nbytes, self.stream(buf.ordinal).handle)
            return out
        lhs_buf, lhs_view = buf, lhs_layout
        if (a := _gemm_operand(lhs_view, m, k)) is None:
            copy = self._entry(table, (K.COPY_STRIDED_SELF, buf.dtype), "matmul")
            lhs_buf, lhs_view = self._dense(buf, lhs_layout, copy)
            a = _gemm_operand(lhs_view, m, k)
            assert a is not None  # a dense copy is always a GEMM operand
        rhs_buf, rhs_view = rhs, rhs_layout
        if (bb := _gemm_operand(rhs_view, k, n)) is None:
            copy = self._entry(table, (K.COPY_STRIDED_SELF, rhs.dtype), "matmul")
            rhs_buf, rhs_view = self._dense(rhs, rhs_layout, copy)
            bb = _gemm_operand(rhs_view, k, n)
            assert bb is not None
        stream = self.stream(buf.ordinal)
        self.driver.gemm(
            buf.ordinal,
            stream.handle,
            buf.dtype,
            bb[0],
            a[0],
            n,
            m,
            k,
            rhs_buf.at(rhs_view),
            bb[1],
            bb[2],
            lhs_buf.at(lhs_view),
            a[1],
            a[2],
            out.ptr,
            n,
            m * n,
            b,
            reduced=self.switches.gemm_reduced(buf.dtype),
        )
        return out


def _gemm_operand(layout: Layout, rows: int, cols: int) -> tuple[bool, int, int] | None:
    """(transposed, leading dimension, batch stride) of a row-major (.., rows, cols) view as
    the column-major BLAS sees it, or None when it needs a dense copy first."""
    r, c = layout.stride[-2], layout.stride[-1]
    batch = _batch_stride(layout)
    if batch is None:
        return None
    if (c == 1 or cols == 1) and (r >= cols or rows == 1):
        return False, max(r if rows > 1 else cols, cols, 1), batch
    if (r == 1 or rows == 1) and (c >= rows or cols == 1):
        return True, max(c if cols > 1 else rows, rows, 1), batch
    return None


def _batch_stride(layout: Layout) -> int | None:
    """One stride for all the batch dims, when they collapse into one (0 broadcasts)."""
    dims = [(d, s) for d, s in zip(layout.shape[:-2], layout.stride[:-2]) if d != 1]
    if not dims:
        return 0
    for (_, s0), (d1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * d1:
            return None
    return dims[-1][1]
