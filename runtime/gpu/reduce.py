"""reduce_op: sum, min, max, argmin, argmax over any dims, through hip/reduce.hip."""

from __future__ import annotations

import math

import numpy as np

from generated import kernel_facts
from generated.kernel_facts import (
    COLUMN_PASS_BY_VALUE,
    PASS0_HEADER,
    REDUCE_CODES,
    WARP_ITEM_MAX,
    WARP_PARTIAL_MAX,
    KernelPattern as K,
)
from runtime.checks import reduce_dims
from runtime.errors import ShapeMismatch
from runtime.gpu.launch import BLOCK
from runtime.gpu.memory import GpuBuffer, _fits
from runtime.layout import Layout

# Reductions of at most this many groups, split into chunks, run in one launch whose last
# block reduces the chunks' partial states: one warp per group of a 256-thread block.
FEW_GROUPS = BLOCK // 32
# Reductions: work items per multiprocessor a launch aims for before it splits groups into
# chunks: warps (a warp per item) and threads (a thread per item, reducing a leading dim).
# bench/gpu_issue11.py's reduce-explore compares other values.
WARP_ITEMS_PER_SM = 32
THREAD_ITEMS_PER_SM = 1024
# Pass 3 (a leading dim's groups split into slices of rows, one launch): threads across a
# column tile (ops.yaml's kernel_facts, hip/reduce.hip's kTileThreads), threads per block,
# threads a launch aims for per multiprocessor, and the fewest rows a thread reads in a slice.
COLUMN_TILE = kernel_facts.COLUMN_TILE
COLUMN_BLOCK = 256
COLUMN_THREADS_PER_SM = 1024
COLUMN_ROWS_LEAST = 32
# A thread per item: the 16-byte accesses a row where a thread reads several neighbouring
# groups (ops.yaml's kernel_facts, the kernels' OPGEN_COLUMN_PACKS: 1, four f32 columns a
# thread; at most 8 columns whatever the type). bench/gpu_issue11.py's column-explore
# compiles 2 and sets this alike.
COLUMN_PACKS = kernel_facts.COLUMN_PACKS
# Pass 3 reads a tile's slices interleaved (kernel_facts' TILE_INTERLEAVED: slice s the rows
# s * ty_n + ty + k * splits * ty_n, ty_n = COLUMN_BLOCK // tile rows of threads), not as
# bands of consecutive rows; no effect on the launch (the fake-driver model reads it).
TILE_INTERLEAVED = bool(kernel_facts.TILE_INTERLEAVED)
# Pass 3's tile counters: the scratch holds a multiple of this many (4 bytes each).
COLUMN_COUNTERS = 1024
# Pass 3's most blocks: past (tile, slice) items this many, a block takes several in turn.
COLUMN_GRID_MAX = 1 << 16
# Pass 3's slices of a tile's rows: 0 computes them (above); another value is taken as it
# is (bench/gpu_issue11.py's column-explore times whole waves: 33 slices on 528 blocks).
COLUMN_SPLITS = 0
# A rank-2 view (one kept dim of stride 1, one reduced dim) takes pass 4 (kernel_facts'
# COLUMN_PASS_BY_VALUE): pass 3 with its row stride as a kernel argument, no dims and strides
# uploaded to the device per call nor read there before the first row. False: pass 3 with the
# info array (bench/gpu_issue11.py's column-explore compares them; figures:
# bench/results/dim0c-h100.md).
COLUMN_BY_VALUE = True
# False: such groups take pass 1 and 2 (two launches), as before pass 3 (bench/gpu_issue11.py
# compares the two).
COLUMN_TILES = True


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
        both in one launch, its last block finishing, with the scratch of _pass0_scratch
        (chunks rounded to whole blocks, so that each block leaves one state); more take two
        launches (one block could not finish them quickly). Where a thread reduces a group
        (a leading dim), it takes `_reduce_columns` neighbouring groups at once, and where
        such groups would be split, pass 3 splits them in one launch instead: column tiles
        of COLUMN_TILE threads (a tile's row slices in blocks of their own, the last block
        of a tile to finish combining them; see `_reduce_column_tiles`), or pass 4 where the
        merged view is rank 2 (its row stride an argument: no dims and strides uploaded)."""
        op = kernel.op
        fn = self._entry(table, (K.FAST_OP_SELF, op, buf.dtype), "reduce_op")
        _fits(op, self.name, buf, layout)
        reduced = reduce_dims(op, self.name, dims, layout.rank)
        kept = [d for d in range(layout.rank) if d not in reduced]
        lshape, lstride = layout.shape, layout.stride
        # the view with the reduced dims last: its dims and strides (no Layout made: the
        # host time of every reduction counts)
        kshape, kstride = [lshape[d] for d in kept], [lstride[d] for d in kept]
        rshape, rstride = [lshape[d] for d in reduced], [lstride[d] for d in reduced]
        group = math.prod(rshape)
        out_count = math.prod(kshape)
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

        kept_dims = _merged(kshape, kstride)
        red_dims = _merged(rshape, rstride)
        flat_dims = kept_dims + red_dims
        shape = tuple(n for n, _ in flat_dims)
        stride = tuple(s for _, s in flat_dims)
        contiguous = _row_major(flat_dims)
        src = buf.at(layout)  # the view's first element (a permutation keeps it)
        stream = self.stream(buf.ordinal)
        sms = self._sms(buf.ordinal)
        block = 256
        # The way hip/reduce.hip covers an item (its thread_per_item and kWarpItemMax).
        by_thread = (
            not contiguous
            and len(red_dims) == 1
            and red_dims[0][1] != 1
            and len(kept_dims) >= 1
            and kept_dims[-1][1] == 1
        )
        # Items to fill the device (threads, or warps) and the fewest elements worth an
        # item; fewer groups than that are split into chunks (two launches). Warps: 32 per
        # multiprocessor beat more (bench/gpu.py --parts explore); threads: 1,024 per
        # multiprocessor with several columns a thread beat 4,096 (--parts reduce-explore);
        # figures: bench/results/gpu-notes.md, "Tuning figures".
        # A thread per item reads `cols` neighbouring groups at once where the view allows
        # aligned vector accesses (the kernel's group_source::cols; same test).
        cols = _reduce_columns(buf.dtype.itemsize, src, kept_dims, red_dims) if by_thread else 1
        units = out_count // cols  # threads per chunk of every group (a thread per item)
        if by_thread:
            want, least = sms * THREAD_ITEMS_PER_SM, 64
        else:
            want, least = sms * WARP_ITEMS_PER_SM, min(1024, max(128, group // 32))
        chunks = 1
        few = out_count <= FEW_GROUPS and not by_thread  # one launch (pass 0)
        if units < want and group >= 2 * least:
            chunks = max(1, min(-(-want // units), group // least))
            if few and chunks >= block // 32:  # whole blocks of one group (the kernel's block states)
                chunks -= chunks % (block // 32)
        if by_thread and chunks > 1 and COLUMN_TILES:
            if COLUMN_BY_VALUE and len(flat_dims) == 2:  # pass 4: the row stride by value
                row_stride = red_dims[0][1]
                return self._reduce_column_tiles(
                    buf, op, out, units, group, row_stride, 0, src, table, COLUMN_PASS_BY_VALUE
                )
            info, keep = self._info(buf.ordinal, shape, stride)
            return self._reduce_column_tiles(buf, op, out, units, group, len(shape), info, src, table)
        info, keep = (0, None) if contiguous else self._info(buf.ordinal, shape, stride)
        per_chunk = -(-group // chunks)
        length = group if chunks == 1 else -(-per_chunk // 16) * 16  # the kernel's chunk_length
        items = units * chunks

        def grid_for(n_items: int, item_length: int, thread_items: bool, warp_max: int = WARP_ITEM_MAX) -> int:
            if thread_items:
                per_block = block
            elif item_length <= warp_max:  # the kernel's kWarpItemMax / kWarpPartialMax: a warp per item
                per_block = block // 32  # warps per block (AMD's 64-wide waves: half of them idle)
            else:
                per_block = 1
            return max(1, min(-(-n_items // per_block), sms * 64))

        numel = out_count * group
        rank = len(shape)
        if chunks == 1:
            fn(self.launch, grid_for(items, length, by_thread), block, stream, numel, group, rank, info, src, out.ptr)
            return out
        chunked = self._entry(table, (K.REDUCE_CHUNKS_SELF, buf.dtype), "reduce_op")
        if few:
            scratch = self._pass0_scratch(buf.ordinal, PASS0_HEADER + items * 16)
            chunked(
                self.launch,
                grid_for(items, length, False),
                block,
                stream,
                REDUCE_CODES[op],
                0,
                numel,
                group,
                rank,
                info,
                chunks,
                src,
                scratch.ptr,
                out.ptr,
            )
            return out
        # a state per group and chunk (an item may hold `cols` groups), 16 bytes: the largest state
        partial = self.alloc(buf.ordinal, out_count * chunks * 16, np.dtype(np.uint8))
        # pass 2: a block per group past 1024 partial states, as wide as allowed
        block2 = 1024 if chunks > 1024 else block
        for pass_, grid, threads in (
            (1, grid_for(items, length, by_thread), block),
            (2, grid_for(out_count, chunks, False, WARP_PARTIAL_MAX), block2),
        ):
            chunked(
                self.launch,
                grid,
                threads,
                stream,
                REDUCE_CODES[op],
                pass_,
                numel,
                group,
                rank,
                info,
                chunks,
                src,
                partial.ptr,
                out.ptr,
            )
        return out

    def _reduce_column_tiles(
        self,
        buf: GpuBuffer,
        op: str,
        out: GpuBuffer,
        units: int,
        group: int,
        rank: int,
        info: int,
        src: int,
        table,
        pass_: int = 3,
    ) -> GpuBuffer:
        """reduce_chunks_<dt> pass 3 (hip/reduce.hip's reduce_column_tiles), or pass 4 (the
        same for a rank-2 view, `rank` then being its row stride and `info` 0): `units` items of
        a thread per item (each `cols` neighbouring groups of `group` rows), COLUMN_TILE
        units across a tile (fewer, a power of two, where the units are fewer), each tile's
        rows split into `splits` slices, a block of COLUMN_BLOCK threads per (tile, slice):
        as many blocks as COLUMN_THREADS_PER_SM threads per multiprocessor fill, at least
        COLUMN_ROWS_LEAST rows a thread. One launch; the scratch holds a counter per tile
        and a state per (slice, group)."""
        ordinal = buf.ordinal
        block, sms = COLUMN_BLOCK, self._sms(ordinal)
        tile = COLUMN_TILE
        while tile > 1 and (tile // 2 >= units or tile > block):
            tile //= 2
        tiles = -(-units // tile)
        fill = sms * COLUMN_THREADS_PER_SM // block // tiles  # slices whose blocks fill the device
        splits = COLUMN_SPLITS or max(1, min(fill, group // (block // tile * COLUMN_ROWS_LEAST)))
        grid = max(1, min(tiles * splits, COLUMN_GRID_MAX))
        groups = out.size
        partial = self._pass3_scratch(ordinal, tiles, groups * splits * 16)  # states of up to 16 bytes
        chunked = self._entry(table, (K.REDUCE_CHUNKS_SELF, buf.dtype), "reduce_op")
        chunked(
            self.launch,
            grid,
            block,
            self.stream(ordinal),
            REDUCE_CODES[op],
            pass_,
            groups * group,
            group,
            rank,
            info,
            splits,
            src,
            partial,
            out.ptr,
        )
        return out

    def _pass3_scratch(self, ordinal: int, counters: int, nbytes: int) -> int:
        """Pass 3's scratch on the device: the address of its `nbytes` of partial states,
        preceded by at least `counters` tile counters (u32, zero between launches: zeroed
        here once, and each tile's last block zeroes its own again). The counters' room is a
        multiple of COLUMN_COUNTERS and never shrinks, so the states of one launch never lie
        where another launch counts. One per device, kept and grown, as pass 0's."""
        kept = self._tile_scratch.get(ordinal)
        room, states = (kept[1], kept[0].nbytes - 4 * kept[1]) if kept else (0, 0)
        if kept is None or room < counters or states < nbytes:
            room = max(room, -(-counters // COLUMN_COUNTERS) * COLUMN_COUNTERS)
            scratch = self.alloc(ordinal, 4 * room + max(states, nbytes), np.dtype(np.uint8))
            self.driver.memset(scratch.ptr, 4 * room, self.driver.stream(ordinal))
            kept = self._tile_scratch[ordinal] = (scratch, room)  # the one replaced is freed after its launches
        return kept[0].ptr + 4 * kept[1]

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


def _merged(shape: list[int], stride: list[int]) -> list[list[int]]:
    """[size, stride] of each dim, size-1 dims dropped, each dim folded into the one before
    it where that one steps over it exactly (row-major order is unchanged)."""
    dims: list[list[int]] = []
    for n, s in zip(shape, stride):
        if n == 1:
            continue
        if dims and dims[-1][1] == s * n:
            dims[-1] = [dims[-1][0] * n, s]
        else:
            dims.append([n, s])
    return dims


def _row_major(dims: list[list[int]]) -> bool:
    """Whether [size, stride] dims (none of size 1) are contiguous in row-major order."""
    step = 1
    for n, s in reversed(dims):
        if s != step:
            return False
        step *= n
    return True


def _reduce_columns(itemsize: int, address: int, kept: list[list[int]], reduced: list[list[int]]) -> int:
    """Neighbouring groups a thread reduces at once where a thread reduces a leading dim's
    group (hip/reduce.hip's group_source::cols): kColumns (COLUMN_PACKS x 16 bytes of
    elements, at most 8) where the first element's address, the innermost kept dim's size and every other
    stride are multiples of it (aligned vector accesses), else 1. kept / reduced: the merged
    [size, stride] dims (reduced: one, the innermost kept one of stride 1)."""
    width = min(COLUMN_PACKS * min(16 // itemsize, 8), 8)
    if width < 2 or address % (width * itemsize) or kept[-1][0] % width or reduced[0][1] % width:
        return 1
    if any(stride % width for _, stride in kept[:-1]):
        return 1
    return width
