"""reduce_op: sum, min, max, argmin, argmax over any dims, through hip/reduce.hip."""

from __future__ import annotations

import math

import numpy as np

from runtime.checks import reduce_dims
from runtime.errors import ShapeMismatch
from runtime.gpu.launch import BLOCK
from runtime.gpu.memory import GpuBuffer, _fits
from runtime.layout import Layout

# Reductions of at most this many groups, split into chunks, run in one launch whose last
# block reduces the chunks' partial states: one warp per group of a 256-thread block.
FEW_GROUPS = BLOCK // 32
PASS0_HEADER = 16  # hip/reduce.hip's kStateHeader: pass 0's block counter, before the states


class Reductions:
    """GpuRuntime's reductions; `_scratch` (pass 0's, per device) is set up by GpuRuntime.
    Uses Memory's `alloc` and Launch's `stream`, `_sms`, `_info`, `_entry`."""

    def reduce_op(self, buf: GpuBuffer, kernel, layout: Layout, dims: tuple[int, ...], table: dict) -> GpuBuffer:
        """Reduced dims keep size 1. The kernels reduce consecutive groups: the reduced dims
        are moved last (in ascending order, as the cpu backend numbers argmin/argmax), then
        adjacent dims merged where the view allows (kept with kept, reduced with reduced).

        hip/reduce.hip covers a group with a thread, a warp or a block (it picks; the grid
        here follows its choice). Groups too few to fill the device are split into chunks
        (from 256 elements): reduce_chunks_<dt> pass 1 writes a partial state per chunk,
        pass 2 reduces them. Up to FEW_GROUPS groups (a sum over all dims: one) take pass 0,
        both in one launch, its last block finishing, with the scratch of _pass0_scratch;
        more take two launches (one block could not finish them quickly)."""
        op = kernel.op
        fn = self._entry(table, (op, buf.dtype), "reduce_op")
        _fits(op, self.name, buf, layout)
        reduced = reduce_dims(op, self.name, dims, layout.rank)
        kept = [d for d in range(layout.rank) if d not in reduced]
        view = layout.permute(tuple(kept + reduced))
        group = math.prod(layout.shape[d] for d in reduced)
        out_count = math.prod(layout.shape[d] for d in kept)
        result = np.dtype(np.uint32) if op in ("argmin", "argmax") else buf.dtype
        if group == 0:
            if op != "sum":
                raise ShapeMismatch(op, self.name, "a non-empty reduction", layout.shape)
            out = self.alloc(buf.ordinal, out_count, result)
            self.driver.memset(out.ptr, out.nbytes, self.stream(buf.ordinal).handle)
            return out
        out = self.alloc(buf.ordinal, out_count, result)
        if not out.size:
            return out

        def merged(shape, stride):
            """Size-1 dims dropped, then each dim folded into the one before it where
            that one steps over it exactly (row-major order is unchanged)."""
            dims_: list[list[int]] = []
            for n, s in zip(shape, stride):
                if n == 1:
                    continue
                if dims_ and dims_[-1][1] == s * n:
                    dims_[-1] = [dims_[-1][0] * n, s]
                else:
                    dims_.append([n, s])
            return dims_

        nkept = len(kept)
        kept_dims = merged(view.shape[:nkept], view.stride[:nkept])
        red_dims = merged(view.shape[nkept:], view.stride[nkept:])
        shape = tuple(n for n, _ in kept_dims + red_dims)
        stride = tuple(s for _, s in kept_dims + red_dims)
        flat = Layout(shape, stride, view.start_offset)
        stream = self.stream(buf.ordinal)
        info, keep = (0, None) if flat.is_contiguous else self._info(buf.ordinal, flat.shape, flat.stride)
        sms = self._sms(buf.ordinal)
        block = 256
        # The way hip/reduce.hip covers an item (its thread_per_item and kWarpItemMax).
        by_thread = (not flat.is_contiguous and len(red_dims) == 1 and red_dims[0][1] != 1
                     and len(kept_dims) >= 1 and kept_dims[-1][1] == 1)
        # Items to fill the device (threads, or warps) and the fewest elements worth an
        # item; fewer groups than that are split into chunks (two launches). Warps: 32 per
        # multiprocessor beat more (bench/gpu.py --parts explore; figures:
        # bench/results/gpu-notes.md, "Tuning figures").
        if by_thread:
            want, least = sms * 4096, 64
        else:
            want, least = sms * 32, min(1024, max(128, group // 32))
        chunks = 1
        if out_count < want and group >= 2 * least:
            chunks = max(1, min(-(-want // out_count), group // least))
        per_chunk = -(-group // chunks)
        length = group if chunks == 1 else -(-per_chunk // 16) * 16  # the kernel's chunk_length
        items = out_count * chunks

        def grid_for(n_items: int, item_length: int, thread_items: bool, warp_max: int = 65536) -> int:
            if thread_items:
                per_block = block
            elif item_length <= warp_max:  # the kernel's kWarpItemMax / kWarpPartialMax: a warp per item
                per_block = block // 32  # warps per block (AMD's 64-wide waves: half of them idle)
            else:
                per_block = 1
            return max(1, min(-(-n_items // per_block), sms * 64))

        numel = flat.elem_count
        if chunks == 1:
            fn(self.launch, grid_for(items, length, by_thread), block, stream, numel, group, flat.rank, info,
               buf.at(view), out.ptr)
            return out
        chunked = self._entry(table, buf.dtype, "reduce_op")  # reduce_chunks_<dt>
        codes = {"sum": 0, "min": 1, "max": 2, "argmin": 3, "argmax": 4}
        if out_count <= FEW_GROUPS and not by_thread:
            scratch = self._pass0_scratch(buf.ordinal, PASS0_HEADER + items * 16)
            chunked(self.launch, grid_for(items, length, False), block, stream, codes[op], 0, numel, group,
                    flat.rank, info, chunks, buf.at(view), scratch.ptr, out.ptr)
            return out
        partial = self.alloc(buf.ordinal, items * 16, np.dtype(np.uint8))  # 16 bytes: the largest state
        # pass 2: a block per group past 1024 partial states, as wide as allowed
        block2 = 1024 if chunks > 1024 else block
        for pass_, grid, threads in ((1, grid_for(items, length, by_thread), block),
                                     (2, grid_for(out_count, chunks, False, 1024), block2)):
            chunked(self.launch, grid, threads, stream, codes[op], pass_, numel, group, flat.rank, info, chunks,
                    buf.at(view), partial.ptr, out.ptr)
        return out

    def _pass0_scratch(self, ordinal: int, nbytes: int) -> GpuBuffer:
        """reduce_chunks_<dt> pass 0's scratch on the device: its block counter (zeroed
        here once; each launch's last block zeroes it again), then the partial states. One
        per device, kept and grown, so a reduction allocates nothing; launches on the
        device's one stream never overlap, so they can share it."""
        scratch = self._scratch.get(ordinal)
        if scratch is None or scratch.nbytes < nbytes:
            scratch = self.alloc(ordinal, nbytes, np.dtype(np.uint8))
            self.driver.memset(scratch.ptr, nbytes, self.driver.stream(ordinal))
            self._scratch[ordinal] = scratch  # the one replaced is freed after the launches queued on it
        return scratch
