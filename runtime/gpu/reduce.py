"""reduce_op: sum, min, max, argmin, argmax over any dims, through hip/reduce.hip."""

from __future__ import annotations

import math
import sys
import types
import weakref

import numpy as np

from generated import kernel_facts
from generated.kernel_facts import (
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
from runtime.gpu.state import RuntimeState
from runtime.layout import Layout

# Reductions of at most this many groups, split into chunks, run in one launch whose last
# block reduces the chunks' partial states: one warp per group of a 256-thread block.
FEW_GROUPS = BLOCK // 32
# Reductions: work items per multiprocessor a launch aims for before it splits groups into
# chunks: warps (a warp per item) and threads (a thread per item, reducing a leading dim).
# bench/gpu.py --explore reduce compares other values.
WARP_ITEMS_PER_SM = 32
THREAD_ITEMS_PER_SM = 1024
# The column tiles (reduce_columns_<dt>: a leading dim's groups split into slices of rows,
# one launch): threads across a column tile (ops.yaml's kernel_facts, hip/reduce.hip's
# kTileThreads), threads per block (at most kernel_facts' COLUMN_BLOCK, the entry points'
# launch bound: a larger value launches that many), the blocks a launch aims for per
# multiprocessor (kernel_facts' COLUMN_MIN_BLOCKS, the launch bound's second figure, which
# --explore columns compiles with other values and sets here alike; figures:
# bench/results/NOTES.md), or the threads it aims for per multiprocessor where
# COLUMN_THREADS_PER_SM is not 0 (--explore columns' other grids), and the fewest rows a
# thread reads in a slice.
COLUMN_TILE = kernel_facts.COLUMN_TILE
COLUMN_BLOCK = kernel_facts.COLUMN_BLOCK
COLUMN_MIN_BLOCKS = kernel_facts.COLUMN_MIN_BLOCKS
COLUMN_THREADS_PER_SM = 0
COLUMN_ROWS_LEAST = 32
# A thread per item: the 16-byte accesses a row where a thread reads several neighbouring
# groups (ops.yaml's kernel_facts, the kernels' OPGEN_COLUMN_PACKS: 1, four f32 columns a
# thread; at most 8 columns whatever the type). bench/gpu.py --explore columns
# compiles 2 and sets this alike.
COLUMN_PACKS = kernel_facts.COLUMN_PACKS
# The column tiles read a tile's slices interleaved (kernel_facts' TILE_INTERLEAVED: slice s
# the rows s * ty_n + ty + k * splits * ty_n, ty_n = COLUMN_BLOCK // tile rows of threads),
# not as bands of consecutive rows; no effect on the launch (the fake-driver model reads it).
TILE_INTERLEAVED = bool(kernel_facts.TILE_INTERLEAVED)
# The column tiles' counters: the scratch holds a multiple of this many (4 bytes each).
COLUMN_COUNTERS = 1024
# The column tiles' most blocks: past (tile, slice) items this many, a block takes several in turn.
COLUMN_GRID_MAX = 1 << 16
# The column tiles' slices of a tile's rows: 0 computes them (above); another value is taken
# as it is (bench/gpu.py --explore columns times whole waves: 33 slices on 528 blocks).
COLUMN_SPLITS = 0
# A rank-2 view (one kept dim of stride 1, one reduced dim) is given to reduce_columns by
# value ("pass 4": its row stride an argument, no dims and strides uploaded nor read on the
# device, 32-bit indices where they fit). False: by its info array ("pass 3", as every other
# view; bench/gpu.py --explore columns compares them; figures: on an H100,
# commit cdeec47).
COLUMN_BY_VALUE = True
# False: such groups take pass 1 and 2 of reduce_chunks (two launches) instead of the column
# tiles (bench/gpu.py --explore columns compares the two).
COLUMN_TILES = True
# Reduction plans kept per runtime (what reduce_op works out before it launches, for one
# op, dtype, device, view, dims and alignment): the oldest goes past this many.
REDUCE_PLANS_KEPT = 256

# The runtimes whose plans a change of the settings above makes stale (see _Settings).
_planners: weakref.WeakSet = weakref.WeakSet()


class _Settings(types.ModuleType):
    """This module's type: assigning one of its names (a setting above, as the tests and
    bench/reductions.py do, monkeypatch's undo included) forgets every runtime's kept
    reduction plans, which were worked out under the old values."""

    def __setattr__(self, name: str, value: object) -> None:
        super().__setattr__(name, value)
        for planner in list(_planners):
            planner._reduce_plans.clear()

    def __delattr__(self, name: str) -> None:
        super().__delattr__(name)
        for planner in list(_planners):
            planner._reduce_plans.clear()


sys.modules[__name__].__class__ = _Settings

# What a plan's launches are, and what each call adds to their arguments.
_EMPTY_SUM = 0  # no element to reduce: a sum of zeros (memset)
_NOTHING = 1  # no group: the empty output
_FAST = 2  # fast_<op>: head + (src, out)
_PASS0 = 3  # reduce_chunks pass 0: head + (src, pass 0's scratch, out)
_TWO_PASSES = 4  # reduce_chunks pass 1 then 2: each head + (src, partial states, out)
_TILES = 5  # reduce_columns: head + (src, the tiles' scratch, out)


class _Plan:
    """What reduce_op works out before it launches, for one key (reduce_op's): the launch
    table it was made from (a call with another table plans again), the view's end (a call
    whose buffer is shorter plans again, which raises), the output's size and dtype, and the
    launches: each the launch wrapper, its grid, its block and the arguments before the
    call's own (the view's first element, the scratch, the output). `keep`: the view's dims
    and strides on the device where a launch reads them (uploaded once, with the plan)."""

    __slots__ = (
        "table",
        "end",
        "count",
        "result",
        "kind",
        "launches",
        "keep",
        "scratch",
    )

    def __init__(self, table: dict, end: int, count: int, result: np.dtype, kind: int) -> None:
        self.table, self.end, self.count, self.result, self.kind = table, end, count, result, kind
        self.launches: tuple = ()
        self.keep: GpuBuffer | None = None
        self.scratch: tuple[int, int] = (0, 0)  # pass 0: (bytes, 0); tiles: (counters, bytes); two passes: (bytes, 0)


class Reductions(RuntimeState):
    """GpuRuntime's reductions; `_scratch` (pass 0's, per device), `_tile_scratch` and
    `_reduce_plans` are set up by GpuRuntime. Uses Memory's `alloc`, Launch's `stream`, `_sms`,
    `_info`, `_entry` and Elementwise's `_direct_first`."""

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
        such groups would be split, reduce_columns_<dt> splits them in one launch instead:
        column tiles of COLUMN_TILE threads (a tile's row slices in blocks of their own, the
        last block of a tile to finish combining them; see `_reduce_column_tiles`), a rank-2
        view given by value (its row stride an argument: no dims and strides uploaded).

        What all this works out (checks, merged dims, the path, grids, the arguments before
        the buffers' addresses) is kept as a plan per (op, dtype, device, shape, strides,
        offset, dims, the first element's address modulo 64), so a repeated reduction goes
        straight to its launches (bench/host_latency.py counts the host work; figures:
        bench/results/NOTES.md). A plan is used only with the launch table it was made
        from and on a buffer that holds the view (else the call plans again, which raises
        the same errors as ever); assigning a setting of this module forgets every plan."""
        dtype = buf.dtype
        ordinal = buf.ordinal
        src = buf.ptr + layout.start_offset * dtype.itemsize
        key: tuple | None
        key = (kernel.op, dtype, ordinal, layout.shape, layout.stride, layout.start_offset, dims, src & 63)
        try:
            plan = self._reduce_plans.get(key)
        except TypeError:  # dims (or a shape) given as a list: planned each call
            plan = key = None
        if plan is None or plan.table is not table or plan.end > buf.size:
            plan = self._reduce_plan(buf, kernel.op, layout, dims, table, key)
        self.driver.activate(ordinal)
        stream = self._streams.get(ordinal) or self.stream(ordinal)
        out = self._alloc(ordinal, plan.count, plan.result, stream.handle)
        kind = plan.kind
        if kind == _TILES:
            partial = self._pass3_scratch(ordinal, *plan.scratch)
        elif kind == _PASS0:
            partial = self._pass0_scratch(ordinal, plan.scratch[0]).ptr
        elif kind == _TWO_PASSES:
            states = self.alloc(ordinal, plan.scratch[0], np.dtype(np.uint8))
            partial = states.ptr
        elif kind == _FAST:
            partial = -1
        elif kind == _EMPTY_SUM:
            self.driver.memset(out.ptr, out.nbytes, stream.handle)
            return out
        else:
            return out
        tail = (src, out.ptr) if partial < 0 else (src, partial, out.ptr)
        direct = self._direct
        for fn, grid, block, head in plan.launches:
            args = head + tail
            call = direct.get((fn, ordinal))
            if call is None:
                self._direct_first(fn, ordinal, grid, stream, args, block)
            else:
                call[0](grid, block, stream.handle, args, call[1])
        return out

    def _reduce_plan(
        self, buf: GpuBuffer, op: str, layout: Layout, dims: tuple[int, ...], table: dict, key: tuple | None
    ) -> _Plan:
        """reduce_op's plan for this call: every check first (the same typed errors, in the
        same order, as ever), then the path and its launches; kept under `key` (None: not
        kept) for the calls that follow."""
        fn = self._entry(table, (K.FAST_OP_SELF, op, buf.dtype), "reduce_op")
        _fits(op, self.name, buf, layout)
        reduced = reduce_dims(op, self.name, dims, layout.rank)
        end = layout.start_offset + layout.elem_count if layout.is_contiguous else layout.max_offset()
        kept = [d for d in range(layout.rank) if d not in reduced]
        lshape, lstride = layout.shape, layout.stride
        # the view with the reduced dims last: its dims and strides (no Layout made)
        kshape, kstride = [lshape[d] for d in kept], [lstride[d] for d in kept]
        rshape, rstride = [lshape[d] for d in reduced], [lstride[d] for d in reduced]
        group = math.prod(rshape)
        out_count = math.prod(kshape)
        result = np.dtype(np.uint32) if op in ("argmin", "argmax") else buf.dtype
        if group == 0:
            if op != "sum":
                raise ShapeMismatch(op, self.name, "a non-empty reduction", layout.shape)
            return self._keep_plan(key, _Plan(table, end, out_count, result, _EMPTY_SUM))
        plan = _Plan(table, end, out_count, result, _NOTHING if out_count == 0 else _FAST)
        if not out_count:
            return self._keep_plan(key, plan)

        kept_dims = _merged(kshape, kstride)
        red_dims = _merged(rshape, rstride)
        flat_dims = kept_dims + red_dims
        shape = tuple(n for n, _ in flat_dims)
        stride = tuple(s for _, s in flat_dims)
        contiguous = _row_major(flat_dims)
        src = buf.at(layout)  # the view's first element (a permutation keeps it)
        ordinal = buf.ordinal
        sms = self._sms(ordinal)
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
        # multiprocessor beat more (bench/gpu.py --explore reduce); threads: 1,024 per
        # multiprocessor with several columns a thread beat 4,096 (--explore reduce);
        # figures: bench/results/NOTES.md, "Tuning figures".
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
            if COLUMN_BY_VALUE and len(flat_dims) == 2:  # a rank-2 view by value: its row stride
                head: tuple[int, ...] = (red_dims[0][1], 0, 0)
            else:
                info, plan.keep = self._info(ordinal, shape, stride)
                head = (0, len(shape), info)
            return self._keep_plan(key, self._reduce_column_tiles(plan, buf, op, units, group, head, table))
        info, plan.keep = (0, None) if contiguous else self._info(ordinal, shape, stride)
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
            plan.launches = ((fn, grid_for(items, length, by_thread), block, (numel, group, rank, info)),)
            return self._keep_plan(key, plan)
        chunked = self._entry(table, (K.REDUCE_CHUNKS_SELF, buf.dtype), "reduce_op")
        code = REDUCE_CODES[op]
        if few:
            plan.kind, plan.scratch = _PASS0, (PASS0_HEADER + items * 16, 0)
            head = (code, 0, numel, group, rank, info, chunks)
            plan.launches = ((chunked, grid_for(items, length, False), block, head),)
            return self._keep_plan(key, plan)
        # a state per group and chunk (an item may hold `cols` groups), 16 bytes: the largest state
        plan.kind, plan.scratch = _TWO_PASSES, (out_count * chunks * 16, 0)
        # pass 2: a block per group past 1024 partial states, as wide as allowed
        block2 = 1024 if chunks > 1024 else block
        plan.launches = tuple(
            (chunked, grid, threads, (code, pass_, numel, group, rank, info, chunks))
            for pass_, grid, threads in (
                (1, grid_for(items, length, by_thread), block),
                (2, grid_for(out_count, chunks, False, WARP_PARTIAL_MAX), block2),
            )
        )
        return self._keep_plan(key, plan)

    def _keep_plan(self, key: tuple | None, plan: _Plan) -> _Plan:
        """`plan`, kept under `key` (the oldest dropped past REDUCE_PLANS_KEPT)."""
        if key is not None:
            plans = self._reduce_plans
            if len(plans) >= REDUCE_PLANS_KEPT and key not in plans:
                del plans[next(iter(plans))]
            plans[key] = plan
            _planners.add(self)
        return plan

    def _reduce_column_tiles(
        self, plan: _Plan, buf: GpuBuffer, op: str, units: int, group: int, head: tuple, table: dict
    ) -> _Plan:
        """`plan`'s launch of reduce_columns_<dt> (hip/reduce.hip's reduce_column_tiles):
        `units` items of a thread per item (each `cols` neighbouring groups of `group` rows),
        COLUMN_TILE units across a tile (fewer, a power of two, where the units are fewer),
        each tile's rows split into `splits` slices, a block of COLUMN_BLOCK threads per
        (tile, slice): as many blocks as fill COLUMN_MIN_BLOCKS blocks per multiprocessor
        (or COLUMN_THREADS_PER_SM threads), at least COLUMN_ROWS_LEAST rows a thread. One launch; the scratch holds a
        counter per tile and a state per (slice, group). `head`: (row stride, 0, 0) for a
        rank-2 view by value, else (0, rank, info)."""
        ordinal = buf.ordinal
        block, sms = min(COLUMN_BLOCK, kernel_facts.COLUMN_BLOCK), self._sms(ordinal)
        tile = COLUMN_TILE
        while tile > 1 and (tile // 2 >= units or tile > block):
            tile //= 2
        tiles = -(-units // tile)
        per_sm = COLUMN_THREADS_PER_SM or COLUMN_MIN_BLOCKS * block
        fill = sms * per_sm // block // tiles  # slices whose blocks fill the device
        splits = COLUMN_SPLITS or max(1, min(fill, group // (block // tile * COLUMN_ROWS_LEAST)))
        grid = max(1, min(tiles * splits, COLUMN_GRID_MAX))
        groups = plan.count
        columns = self._entry(table, (K.REDUCE_COLUMNS_SELF, buf.dtype), "reduce_op")
        plan.kind, plan.scratch = _TILES, (tiles, groups * splits * 16)  # states of up to 16 bytes
        plan.launches = ((columns, grid, block, (REDUCE_CODES[op], groups, group, *head, splits)),)
        return plan

    def _pass3_scratch(self, ordinal: int, counters: int, nbytes: int) -> int:
        """The column tiles' scratch on the device: the address of its `nbytes` of partial
        states, preceded by at least `counters` tile counters (u32, zero between launches:
        zeroed here once, and each tile's last block zeroes its own again). The counters' room
        is a multiple of COLUMN_COUNTERS and never shrinks, so the states of one launch never
        lie where another launch counts. One per device, kept and grown, as pass 0's; kept as
        (buffer, counters' room, states' bytes, states' address)."""
        kept = self._tile_scratch.get(ordinal)
        room, states = (kept[1], kept[2]) if kept else (0, 0)
        if kept is None or room < counters or states < nbytes:
            room = max(room, -(-counters // COLUMN_COUNTERS) * COLUMN_COUNTERS)
            states = max(states, nbytes)
            scratch = self.alloc(ordinal, 4 * room + states, np.dtype(np.uint8))
            self.driver.memset(scratch.ptr, 4 * room, self.driver.stream(ordinal))
            # the one replaced is freed after its launches
            kept = self._tile_scratch[ordinal] = (scratch, room, states, scratch.ptr + 4 * room)
        return kept[3]

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
