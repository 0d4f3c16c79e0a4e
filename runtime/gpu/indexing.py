"""Index ops (gather, scatter_set / scatter_add, index_select, index_add), whose ids the
kernels range-check themselves (IdChecks)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from generated.kernel_facts import KernelPattern as K
from runtime.errors import ShapeMismatch
from runtime.gpu.launch import BLOCK
from runtime.gpu.memory import GpuBuffer, _fits, _same_ordinal
from runtime.gpu.state import RuntimeState
from runtime.layout import Layout

# Index ops whose id checks may wait, per device, for the next synchronization (IdChecks):
# one u32 flag each on the device; when all are in use the next index op synchronizes.
ID_FLAG_SLOTS = 4096


@dataclass(eq=False)
class IdChecks:
    """One device's range checks of index-op ids, done by the kernels themselves.

    Reading the ids on the host would make every index op wait for the device (figures:
    bench/results/NOTES.md, "Tuning figures"). Instead each launch gets a flag word of
    `flags` (one per op since the last check), which its kernel sets when an id lies outside
    the dim; the kernel gives 0 for such an id (or skips it) and never reads or writes
    through it. The flags are read at the device's next synchronization point (to_host,
    to_numpy, synchronize), where the first failed op's ShapeMismatch is raised, as CUDA
    itself reports a device-side assert at the next synchronizing call. So a bad id is
    still a typed error naming the op, but later than on the cpu backend, and the op's
    output (or, for scatter_* in place, the destination) holds the good ids' results."""

    flags: GpuBuffer
    pending: list = field(default_factory=list)  # (op, dim size) of each flag in use, in order


class Indexing(RuntimeState):
    """GpuRuntime's index ops and their id checks; `_id_checks` (per device) is set up by
    GpuRuntime. Uses Memory's `alloc`, Launch's `stream`, `geometry`, `_info`, `_entry`, and
    Elementwise's `_dense`, `_dense_copy`."""

    # -- indexing: the kernels check the ids (IdChecks), read at the next synchronization ----
    def _id_flag(self, op: str, buf: GpuBuffer, ids: GpuBuffer, ids_layout: Layout, size: int) -> int:
        """The device address of the flag word for one launch of `op` over ids in [0, size)."""
        _fits(op, self.name, ids, ids_layout)
        _same_ordinal(op, self.name, buf, ids)
        ordinal = buf.ordinal
        checks = self._id_checks.get(ordinal)
        if checks is None:
            flags = self.alloc(ordinal, ID_FLAG_SLOTS, np.dtype(np.uint32))
            self.driver.memset(flags.ptr, flags.nbytes, self.driver.stream(ordinal))
            checks = self._id_checks[ordinal] = IdChecks(flags)
        elif len(checks.pending) == ID_FLAG_SLOTS:  # every flag in use: read them now
            self.driver.activate(ordinal)
            self.raise_bad_ids(ordinal)
        checks.pending.append((op, size))
        return checks.flags.ptr + 4 * (len(checks.pending) - 1)

    def raise_bad_ids(self, ordinal: int) -> None:
        """Read the flags of the index ops launched on `ordinal` since the last check and
        raise the first failed op's ShapeMismatch (the device made current by the caller).
        One download of len(pending) words, which waits for the device: only at points
        that synchronize anyway, and only when index ops ran."""
        checks = self._id_checks.get(ordinal)
        if checks is None or not checks.pending:
            return
        pending, checks.pending = checks.pending, []
        host = np.empty(len(pending), np.uint32)
        stream = self.driver.stream(ordinal)
        self.driver.download(host, checks.flags.ptr, stream)
        bad = np.flatnonzero(host)
        if bad.size:
            self.driver.memset(checks.flags.ptr, host.nbytes, stream)
            op, size = pending[int(bad[0])]
            raise ShapeMismatch(
                op,
                self.name,
                f"ids in [0, {size})",
                "an id out of range (found by the kernel; reported at this synchronization)",
            )

    def gather(self, buf, layout, ids, ids_layout, dim, table):
        fn = self._entry(table, (K.GATHER_IDS_SELF, ids.dtype, buf.dtype), "gather")
        _fits("gather", self.name, buf, layout)
        bad = self._id_flag("gather", buf, ids, ids_layout, layout.shape[dim])
        out = self.alloc(buf.ordinal, ids_layout.elem_count, buf.dtype)
        if out.size:
            stream = self.stream(buf.ordinal)
            info, keep = self._info(buf.ordinal, ids_layout.shape, ids_layout.stride, layout.stride)
            fn(
                self.launch,
                self.geometry(out.size, buf.ordinal),
                BLOCK,
                stream,
                out.size,
                ids_layout.rank,
                info,
                dim,
                ids.at(ids_layout),
                buf.at(layout),
                out.ptr,
                layout.shape[dim],
                bad,
            )
        return out

    def _scatter(self, op, pattern, buf, layout, ids, ids_layout, src, src_layout, dim, table):
        fn = self._entry(table, (pattern, ids.dtype, buf.dtype), op)
        _fits(op, self.name, buf, layout)
        _fits(op, self.name, src, src_layout)
        bad = self._id_flag(op, buf, ids, ids_layout, layout.shape[dim])
        if ids_layout.elem_count:
            stream = self.stream(buf.ordinal)
            info, keep = self._info(buf.ordinal, ids_layout.shape, ids_layout.stride, src_layout.stride, layout.stride)
            fn(
                self.launch,
                self.geometry(ids_layout.elem_count, buf.ordinal),
                BLOCK,
                stream,
                ids_layout.elem_count,
                ids_layout.rank,
                info,
                dim,
                ids.at(ids_layout),
                src.at(src_layout),
                buf.at(layout),
                layout.shape[dim],
                bad,
            )

    def scatter_set(self, buf, layout, ids, ids_layout, src, src_layout, dim, table):
        self._scatter("scatter_set", K.SCATTER_SET_IDS_SELF, buf, layout, ids, ids_layout, src, src_layout, dim, table)

    def scatter_add(self, buf, layout, ids, ids_layout, src, src_layout, dim, table):
        self._scatter("scatter_add", K.SCATTER_ADD_IDS_SELF, buf, layout, ids, ids_layout, src, src_layout, dim, table)

    def index_select(self, buf, ids, layout, ids_layout, dim, table):
        fn = self._entry(table, (K.INDEX_SELECT_IDS_SELF, ids.dtype, buf.dtype), "index_select")
        _fits("index_select", self.name, buf, layout)
        bad = self._id_flag("index_select", buf, ids, ids_layout, layout.shape[dim])
        src, src_layout = self._dense(buf, layout, self._entry(table, (K.COPY_STRIDED_SELF, buf.dtype), "index_select"))
        left, right = math.prod(layout.shape[:dim]), math.prod(layout.shape[dim + 1 :])
        n_ids = ids_layout.elem_count
        out = self.alloc(buf.ordinal, left * n_ids * right, buf.dtype)
        if out.size:
            stream = self.stream(buf.ordinal)
            # contiguous ids need no dims and strides on the device (an upload per call)
            info, keep = (
                (0, None) if ids_layout.is_contiguous else self._info(buf.ordinal, ids_layout.shape, ids_layout.stride)
            )
            fn(
                self.launch,
                self.geometry(out.size, buf.ordinal),
                BLOCK,
                stream,
                out.size,
                ids_layout.rank,
                info,
                ids.at(ids_layout),
                src.ptr,
                out.ptr,
                left,
                layout.shape[dim],
                n_ids,
                right,
                bad,
            )
        return out

    def index_add(self, buf, layout, ids, ids_layout, src, src_layout, dim, table):
        fn = self._entry(table, (K.INDEX_ADD_IDS_SELF, ids.dtype, buf.dtype), "index_add")
        _fits("index_add", self.name, buf, layout)
        _fits("index_add", self.name, src, src_layout)
        bad = self._id_flag("index_add", buf, ids, ids_layout, layout.shape[dim])
        copy = self._entry(table, (K.COPY_STRIDED_SELF, buf.dtype), "index_add")
        ids_dense, _ = self._dense(ids, ids_layout, self._entry(table, (K.COPY_STRIDED_IDS, ids.dtype), "index_add"))
        src_dense, _ = self._dense(src, src_layout, copy)
        out = self._dense_copy(buf, layout, copy)  # a contiguous copy of self, then add
        left, right = math.prod(layout.shape[:dim]), math.prod(layout.shape[dim + 1 :])
        if left * right and ids_layout.elem_count:
            stream = self.stream(buf.ordinal)
            fn(
                self.launch,
                self.geometry(left * right, buf.ordinal),
                BLOCK,
                stream,
                ids_dense.ptr,
                ids_layout.elem_count,
                src_dense.ptr,
                out.ptr,
                left,
                src_layout.shape[dim],
                layout.shape[dim],
                right,
                bad,
            )
        return out
