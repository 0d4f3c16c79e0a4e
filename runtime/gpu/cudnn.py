"""cuDNN for the cuda backend: convolutions and attention through NVIDIA's cudnn-frontend.

The binding is NVIDIA's maintained Python package `nvidia-cudnn-frontend` (import `cudnn`),
its graph API: a graph of one operation (conv_fprop, conv_dgrad for the transposed
convolutions, sdpa) over tensors described by dims and strides, built once per shape and
run on our buffers' raw device addresses, on our stream, with a workspace from our pool.

- **Optional.** Nothing here imports `cudnn` until a convolution or attention call on cuda
  asks for it, and then once: where the package is missing, or finds no libcudnn.so.9, or
  `OPGEN_CUDNN=0` is set, `Cudnn.unavailable()` says why and every call answers None,
  which sends the caller (runtime/gpu/conv.py, runtime/gpu/nn.py) down its own kernels and BLAS
  paths, with no error. `status()` is the one-line summary (README: "cuDNN").
- **Plans per shape.** The graph of a call is keyed by the op, dtype, device, dims,
  strides, parameters and precision mode; it is validated, lowered, planned (heuristics A,
  then the fallback list), checked and built on the first call of that key and kept
  (PLAN_CACHE entries, the least recently used dropped first). By default a graph runs the
  heuristics' plan: nothing is timed inside a user's call. With the runtime's `autotune`
  switch on (runtime/gpu/switches.py, torch's cudnn.benchmark), a convolution builds every
  plan listed and times each on its first call's buffers; the fastest runs from then on.
  Either choice is kept on disk (runtime/gpu/plan_cache.py, beside the kernel cache): a
  later process deserializes the built plan, without heuristics, timing or NVRTC (attention's
  fused kernels: about a second to compile otherwise). A key cuDNN refuses is remembered as
  None: the fallback path, without asking again.
- **Addresses and streams.** A built plan runs by its addresses alone (runtime/gpu/cudnn_direct.py:
  the frontend's `execute` describes every operand again on each call, about 30 us of host
  time), or where the frontend must run it itself on `execute({tensor: address}, workspace,
  handle)`, with ints for addresses (GpuBuffer.at: the view's first element). One handle
  per device, made in the device's primary context (current after rt.stream()), bound to
  the runtime's stream of that device (set again only when the stream changes), so cuDNN's
  kernels are ordered with ours. A plan run again on the same addresses replays a CUDA graph
  of its launches (runtime/gpu/cudnn_graphs.py), a few microseconds of host time instead of
  cuDNN's execute. The workspace is one buffer per device, grown to the
  largest plan's need; all of a device's work runs on its one stream, so a reuse is
  ordered after the previous user.
- **Numerics.** f32 graphs compute in f32: plans with the TENSOR_CORE numerical note (TF32)
  or DOWN_CONVERT_INPUTS are deselected, as torch does with TF32 off; with the runtime's
  `conv_reduced_precision_f32` switch on, TENSOR_CORE plans (TF32) stay, as torch's
  cudnn.allow_tf32 does. f16 / bf16 compute in f32 (compute and intermediate data type
  FLOAT), attention too.

Which ops and dtypes take this path (CONV_DTYPES, SDPA_DTYPES) was chosen by measurement on
the H100 against the paths already there, torch in the same run (bench/gpu.py
--explore cudnn,cudnn-attention,cudnn-plans; the measurements, commit c1a5b26's bench/results/):
f64 convolutions stay on the BLAS path (cuDNN's took twice as long), f32 attention on the
BLAS path (cuDNN's fused attention takes the half types only).

rocm: MIOpen is not bound here (no maintained Python binding in reach); rocm keeps its own
paths.
"""

from __future__ import annotations

import functools
import math
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from runtime.gpu import compile as gpu_compile, cudnn_graphs
from runtime.gpu.cudnn_direct import direct_run
from runtime.gpu.cudnn_graphs import PlanGraphs
from runtime.gpu.plan_cache import PlanCache, decode_blob, encode_blob, plan_key
from runtime.layout import Layout

#: dtypes whose convolutions (and transposed convolutions) cuDNN takes, by op.
CONV_DTYPES: dict[str, frozenset[str]] = {
    "conv1d": frozenset({"float32", "float16", "bfloat16"}),
    "conv2d": frozenset({"float32", "float16", "bfloat16"}),
    "conv_transpose1d": frozenset({"float32", "float16", "bfloat16"}),
    "conv_transpose2d": frozenset({"float32", "float16", "bfloat16"}),
}
#: dtypes whose attention cuDNN takes (its fused SDPA engines serve the half types only).
SDPA_DTYPES = frozenset({"float16", "bfloat16"})
#: Graphs kept (each holds its built plan); the least recently used is dropped past it.
PLAN_CACHE = 256
#: The heuristics asked for a convolution's plans, in order (cudnn.heur_mode's names).
HEURISTICS = ("A", "FALLBACK")
#: Convolutions with the runtime's `autotune` switch on: build every plan the heuristics list
#: and time each on the first call's buffers (AUTOTUNE_ROUNDS rounds of AUTOTUNE_RUNS runs, CUDA
#: events), then run the fastest (torch's cudnn.benchmark does the like). Measured on the H100
#: (bench/gpu.py --explore cudnn-plans): the heuristics' first plan ran conv_transpose2d f32 (16, 64, 56, 56) in
#: 0.229 ms of device time, the fastest plan in 0.161; bf16 convolutions 1.1-1.6x faster.
#: Attention keeps the heuristics' plan.
AUTOTUNE_RUNS = 5
AUTOTUNE_ROUNDS = 3
#: A second look: the SECOND_LOOK_PLANS fastest plans of the first call are timed again on
#: the SECOND_LOOK_CALL-th call of the shape. On the H100, one fresh process in six kept a plan
#: that ran conv2d f32 (16, 64, 56, 56) at 1.9x torch's time where the others ran 1.01-1.04x:
#: the likeliest cause is a first call timed while the GPU still ramps its clocks, so the
#: timings are checked once the shape is in steady use.
SECOND_LOOK_PLANS = 3
SECOND_LOOK_CALL = 16
#: cuDNN reads 16-byte aligned addresses; other views are copied to a fresh (aligned) buffer.
ALIGN = 16

#: Run built plans by their addresses alone (runtime/gpu/cudnn_direct.py) where the frontend
#: allows it, instead of its `execute` (which describes every operand again on each call).
DIRECT = True

_NOT_LOADED = object()


@dataclass
class Plan:
    """A built graph of one op and its tensors, in the order the op passes addresses."""

    graph: Any
    tensors: tuple
    workspace: int  # bytes
    index: int | None = None  # the plan autotuning chose (None: the graph's selected plan)
    tune: bool = False  # time the built plans on the next call's buffers
    candidates: tuple[int, ...] = ()  # the first timing's fastest plans, for the second look
    calls: int = 0  # calls run since the first timing
    disk_key: str | None = None  # its entry in the plan cache (None: not kept on disk)
    direct: Any = _NOT_LOADED  # its DirectRun (cudnn_direct.py), or None: worked out on its first plain run
    graphs: PlanGraphs | None = None  # its direct run's graphs per address set (cudnn_graphs.py), if any


@functools.cache
def dtype_name(dtype: np.dtype) -> str:
    """`dtype.name`, remembered: numpy computes the name in Python on every read (a few
    microseconds, several times in each call of a convolution)."""
    return dtype.name


def _uids(tensors: tuple) -> tuple[int, ...]:
    """A plan's tensors as uids (a built graph's are the frontend's tensors, a loaded one's ints)."""
    return tuple(t if isinstance(t, int) else int(t.get_uid()) for t in tensors)


def _dense_strides(shape: tuple[int, ...]) -> list[int]:
    return list(Layout.contiguous(tuple(shape)).stride)


class Cudnn:
    """cuDNN paths of one GpuRuntime (cuda). Methods answer None where cuDNN does not take
    the call (not importable, dtype or shape it does not serve, a graph it refuses): the
    caller runs its own path."""

    def __init__(self, rt) -> None:
        self.rt = rt
        self._module: Any = _NOT_LOADED
        self._reason: str | None = None
        self._handles: dict[int, Any] = {}
        self._handle_streams: dict[int, int] = {}
        self._backend_handles: dict[int, int | None] = {}  # ordinal -> the handle as the backend's int
        self._workspaces: dict[int, Any] = {}
        self._capture_streams: dict[int, Any] = {}  # ordinal -> the stream graphs are recorded on
        self._binding = threading.Lock()  # held by each run: the handles' streams stay put meanwhile
        self._plans: OrderedDict[tuple, Plan | None] = OrderedDict()
        self.enabled = os.environ.get("OPGEN_CUDNN", "1") != "0"
        self.calls: dict[str, int] = {}  # op -> calls cuDNN ran (tests and the bench read it)
        self.last_refusal: str | None = None  # why cuDNN refused the last graph it refused
        self.last_capture_failure: str | None = None  # why the last plan's CUDA graph could not be captured
        self.loaded = 0  # plans taken from the disk cache (tests and the bench read it)
        self._disk: PlanCache | None = None

    # -- loading ----------------------------------------------------------------------------
    def module(self):
        """The `cudnn` module with a cuDNN library behind it, or None (unavailable() says why)."""
        if self._module is _NOT_LOADED:
            self._module, self._reason = _load()
        return self._module if self.enabled else None

    def unavailable(self) -> str | None:
        """Why cuDNN is not used, or None where it is (loads it to find out)."""
        if not self.enabled:
            return "disabled (OPGEN_CUDNN=0)"
        self.module()
        return self._reason

    def status(self) -> str:
        """One line: the cuDNN and frontend versions in use, or why the kernels and BLAS paths
        run instead."""
        reason = self.unavailable()
        if reason is not None:
            return f"cuDNN not in use: {reason}; convolutions and attention run opgen's kernels and the BLAS"
        cudnn = self._module
        v = _backend_version(cudnn)  # 9.x: major * 10000 + minor * 100 + patch
        return (
            f"cuDNN {v // 10000}.{v // 100 % 100}.{v % 100} through nvidia-cudnn-frontend "
            f"{getattr(cudnn, '__version__', '?')}"
        )

    # -- per device -------------------------------------------------------------------------
    def _handle(self, ordinal: int, stream: int):
        """The device's handle, bound to `stream` (the device current: rt.stream made it so)."""
        cudnn = self._module
        handle = self._handles.get(ordinal)
        if handle is None:
            handle = self._handles[ordinal] = cudnn.create_handle()
            self._handle_streams[ordinal] = -1
        if self._handle_streams[ordinal] != stream:
            cudnn.set_stream(handle=handle, stream=stream)
            self._handle_streams[ordinal] = stream
            self._backend_handles[ordinal] = getattr(handle, "backend_handle", None)
        return handle

    def _workspace(self, ordinal: int, nbytes: int) -> int:
        if not nbytes:
            return 0
        buf = self._workspaces.get(ordinal)
        if buf is None or buf.nbytes < nbytes:
            buf = self._workspaces[ordinal] = self.rt.alloc(ordinal, -(-nbytes // 256) * 256, np.dtype(np.uint8))
        return buf.ptr

    # -- plans ------------------------------------------------------------------------------
    def _plan(self, key: tuple, ordinal: int, stream: int, make) -> Plan | None:
        """The built plan of `key`, made by make(cudnn, handle) on the first call; None (kept)
        where cuDNN refuses the graph."""
        plans = self._plans
        if key in plans:
            plans.move_to_end(key)
            return plans[key]
        cudnn = self._module
        handle = self._handle(ordinal, stream)
        disk_key = self._disk_key(key, ordinal)
        plan = self._load(disk_key, cudnn, handle)
        if plan is None:
            try:
                plan = make(cudnn, handle)
            except Exception as exc:  # noqa: BLE001  (cudnnGraphNotSupportedError, or a frontend's own refusal)
                plan = None
                self.last_refusal = f"{key[0]} {key[1]} {key[3:]}: {type(exc).__name__}: {exc}"
            else:
                plan.disk_key = disk_key
                if not plan.tune:  # the heuristics' plan: kept now (a tuned one once timed)
                    self._save(plan)
        plans[key] = plan
        if len(plans) > PLAN_CACHE:
            plans.popitem(last=False)
        return plan

    # -- plans on disk (runtime/gpu/plan_cache.py) ---------------------------------------------
    def plan_cache(self) -> PlanCache:
        """The disk cache of chosen plans: `plans` beside the backend's kernels in the kernel
        cache's directory (OPGEN_CACHE_DIR)."""
        if self._disk is None:
            self._disk = PlanCache(Path(gpu_compile.CACHE_DIR) / self.rt.name / "plans")
        return self._disk

    def _disk_key(self, key: tuple, ordinal: int) -> str:
        """The plan cache's key of a graph's key: the device by name and architecture (not by
        ordinal), the cuDNN and frontend versions, the rest of the key."""
        driver, cudnn = self.rt.driver, self._module
        device = (
            getattr(driver, "device_name", lambda ordinal: "?")(ordinal),
            getattr(driver, "arch", lambda ordinal: "?")(ordinal),
        )
        versions = (_backend_version(cudnn), getattr(cudnn, "__version__", "?"))
        return plan_key(self.rt.name, device, versions, key[:2] + key[3:])

    def _load(self, disk_key: str, cudnn, handle) -> Plan | None:
        """The plan kept on disk under `disk_key`, deserialized, or None (none kept, or one this
        cuDNN cannot load: then the plan is chosen again and its entry replaced)."""
        entry = self.plan_cache().get(disk_key)
        if entry is None:
            return None
        try:
            blob = decode_blob(entry["graph"])
            uids = tuple(int(uid) for uid in entry["uids"])
            if not blob:
                return None
            graph = cudnn.pygraph(handle=handle)
            graph.deserialize(handle, list(blob))
            workspace = int(graph.get_workspace_size())
        except Exception:  # noqa: BLE001  (an entry of another layout, a plan this library refuses)
            return None
        self.loaded += 1
        return Plan(graph, uids, workspace, disk_key=disk_key)

    def _save(self, plan: Plan) -> None:
        """Keep the plan's choice on disk: its index, its tensors' uids, the built plan as the
        frontend serializes it (the chosen index built and selected first, which is what
        serialize writes)."""
        if plan.disk_key is None:
            return
        graph = plan.graph
        try:
            if plan.index is not None:
                graph.build_plan_at_index(plan.index)
            blob = bytes(graph.serialize())
            uids = list(_uids(plan.tensors))
        except Exception:  # noqa: BLE001  (a graph the frontend cannot serialize: chosen again next time)
            return
        entry = {"index": plan.index, "uids": uids, "graph": encode_blob(blob)}
        self.plan_cache().put(plan.disk_key, entry)

    def _run(self, op: str, plan: Plan, ordinal: int, stream: int, addresses: tuple[int, ...]) -> None:
        """Run the plan on our stream (its graph, its direct run, or the frontend's execute).
        Under `_binding`: a capture binds the device's handle to another stream while it
        records, and no other thread's run may reach the handle meanwhile."""
        with self._binding:
            self._run_bound(op, plan, ordinal, stream, addresses)

    def _run_bound(self, op: str, plan: Plan, ordinal: int, stream: int, addresses: tuple[int, ...]) -> None:
        direct = plan.direct
        if direct is not None and direct is not _NOT_LOADED and self._handle_streams.get(ordinal) == stream:
            workspace = self._workspace(ordinal, plan.workspace)
            graphs = plan.graphs
            key = (addresses, workspace)
            if graphs is None or not graphs.run(key, stream, self._capture, direct, ordinal, stream, key):
                direct(addresses, workspace, self._backend_handles[ordinal])
        else:
            handle = self._handle(ordinal, stream)
            if plan.tune or plan.candidates or direct is None:
                self._run_listed(plan, ordinal, handle, addresses)
            else:  # its first plain run: the direct run worked out (or None: execute from then on)
                plan.direct = direct_run(plan.graph, _uids(plan.tensors), plan.index) if DIRECT else None
                if self._backend_handles.get(ordinal) is None:
                    plan.direct = None
                plan.graphs = self._graphs() if plan.direct is not None else None
                self._run_bound(op, plan, ordinal, stream, addresses)
                return
        self.calls[op] = self.calls.get(op, 0) + 1

    # -- CUDA graphs of built plans (runtime/gpu/cudnn_graphs.py) ------------------------------
    def _graphs(self) -> PlanGraphs | None:
        """A plan's graphs, where the driver records graphs and replays are on."""
        driver = self.rt.driver
        if not cudnn_graphs.ENABLED or getattr(driver, "capture_graph", None) is None:
            return None
        return PlanGraphs(driver.graph_launcher, driver.destroy_graph)

    def _capture(self, direct, ordinal: int, stream: int, key: tuple) -> Any:
        """The direct run's launches on these addresses and workspace (`key`), as a graph:
        recorded on the device's capture stream (the handle bound to it meanwhile, then to
        `stream` again), so that work other threads queue on the device's stream stays out.
        None where it fails (last_capture_failure says why)."""
        driver: Any = self.rt.driver
        (addresses, workspace), handle = key, self._backend_handles[ordinal]

        def record() -> None:
            direct(addresses, workspace, handle)

        try:
            capture_stream = self._capture_streams.get(ordinal)
            if capture_stream is None:
                capture_stream = self._capture_streams[ordinal] = driver.create_stream()
            self._handle(ordinal, int(capture_stream))
            try:
                return driver.capture_graph(capture_stream, record)
            finally:
                self._handle(ordinal, stream)
        except Exception as exc:  # noqa: BLE001  (an engine that cannot be captured: it runs directly)
            self.last_capture_failure = f"{type(exc).__name__}: {exc}"
            return None

    def replays(self) -> int:
        """Calls run from a plan's graph, over the plans kept (tests and the bench read it)."""
        return sum(plan.graphs.replays for plan in self._plans.values() if plan is not None and plan.graphs)

    def _run_listed(self, plan: Plan, ordinal: int, handle, addresses: tuple[int, ...]) -> None:
        """The plan through the frontend's execute, its tensors and addresses as a dict (and its
        autotuning or second look first, where one is due)."""
        pack = dict(zip(plan.tensors, addresses))
        if plan.tune:
            self._tune(plan, ordinal, pack, handle)
        elif plan.candidates:
            plan.calls += 1
            if plan.calls >= SECOND_LOOK_CALL:
                self._second_look(plan, ordinal, pack, handle)
        workspace = self._workspace(ordinal, plan.workspace)
        if plan.index is None:
            plan.graph.execute(pack, workspace, handle=handle)
        else:
            plan.graph.execute_plan_at_index(pack, workspace, index=plan.index, handle=handle)

    def _tune(self, plan: Plan, ordinal: int, pack: dict, handle) -> None:
        """Time each built plan of the graph on this call's buffers (its output is written
        again by the call itself) and keep the fastest; the next few stay candidates for the
        second look. Plans that fail to build or run are skipped."""
        plan.tune = False
        needs = {}
        for index in range(int(plan.graph.get_execution_plan_count())):
            try:
                needs[index] = int(plan.graph.get_workspace_size_plan_at_index(index))
            except Exception:  # noqa: BLE001  (a plan that did not build)
                continue
        ranked = self._rank(plan, ordinal, pack, handle, needs)
        if ranked:
            plan.index, plan.workspace = ranked[0], needs[ranked[0]]
            plan.candidates = tuple(ranked[:SECOND_LOOK_PLANS]) if len(ranked) > 1 else ()
            self._save(plan)

    def _second_look(self, plan: Plan, ordinal: int, pack: dict, handle) -> None:
        """Time the candidates again, now that the shape is in steady use, and keep the fastest."""
        needs = {index: int(plan.graph.get_workspace_size_plan_at_index(index)) for index in plan.candidates}
        plan.candidates = ()
        ranked = self._rank(plan, ordinal, pack, handle, needs)
        if ranked and ranked[0] != plan.index:
            plan.index, plan.workspace = ranked[0], needs[ranked[0]]
            self._save(plan)

    def _rank(self, plan: Plan, ordinal: int, pack: dict, handle, needs: dict[int, int]) -> list[int]:
        """The plans of `needs` (index -> workspace bytes) that ran, fastest first: AUTOTUNE_ROUNDS
        rounds over all of them, each plan's best round counting (a round-robin, so that a clock
        ramp or a neighbour's burst does not favour one plan)."""
        graph = plan.graph
        stream = self.rt.stream(ordinal).handle
        workspace = self._workspace(ordinal, max(needs.values(), default=0))  # one buffer for every plan
        best: dict[int, float] = {}
        for _ in range(AUTOTUNE_ROUNDS):
            for index in needs:
                if best.get(index) == math.inf:
                    continue

                def run(index=index):
                    graph.execute_plan_at_index(pack, workspace, index=index, handle=handle)

                try:
                    seconds = self.timer(run, stream, AUTOTUNE_RUNS)
                except Exception:  # noqa: BLE001  (a plan that does not run here)
                    seconds = math.inf
                best[index] = min(best.get(index, math.inf), seconds)
        return sorted((i for i in best if best[i] < math.inf), key=best.__getitem__)

    @staticmethod
    def timer(run, stream, runs: int) -> float:
        """Seconds per run of `run` on `stream` (CUDA events; one run first, untimed)."""
        from cuda.bindings import driver as cu  # noqa: PLC0415  (cuda-python: the cuda backend has it)

        run()
        start, end = cu.cuEventCreate(0)[1], cu.cuEventCreate(0)[1]
        try:
            cu.cuEventRecord(start, stream)
            for _ in range(runs):
                run()
            cu.cuEventRecord(end, stream)
            cu.cuEventSynchronize(end)
            return cu.cuEventElapsedTime(start, end)[1] / 1e3 / runs
        finally:
            cu.cuEventDestroy(start)
            cu.cuEventDestroy(end)

    # -- convolutions -----------------------------------------------------------------------
    def conv(self, op: str, buf, layout: Layout, kernel, kernel_layout: Layout, p, table: dict):
        """conv1d / conv2d / conv_transpose1d / conv_transpose2d of runtime/gpu/conv.py's arguments
        (shapes and devices already checked) through cuDNN, or None. 1-D ones run as 2-D of
        height 1; transposed ones as the data gradient of the convolution they transpose
        (conv_dgrad: the kernel (c_in, c_out, k..) read as that convolution's (K, C, R, S),
        output_padding in the output's extent). (Transposed ones of stride 1 as convolutions of
        the flipped kernel, cuDNN's CONVOLUTION mode, measured slower on the H100.)"""
        dtype = buf.dtype
        name = dtype_name(dtype)
        if name not in CONV_DTYPES.get(op, ()) or kernel.dtype != dtype or self.module() is None:
            return None
        transposed, one_d = op.startswith("conv_transpose"), op.endswith("1d")
        if one_d:
            (b, c_in, w_in), (k0, k1, k_w) = layout.shape, kernel_layout.shape
            h_in = k_h = 1
            w_out = p.l_out()
            h_out = 1
            pad, stride, dilation = (0, p.padding), (1, p.stride), (1, p.dilation)
        else:
            (b, c_in, h_in, w_in), (k0, k1, k_h, k_w) = layout.shape, kernel_layout.shape
            h_out, w_out = p.out_h(), p.out_w()
            pad, stride, dilation = (p.padding,) * 2, (p.stride,) * 2, (p.dilation,) * 2
        c_out = k1 if transposed else k0
        x_dims, w_dims, y_dims = (b, c_in, h_in, w_in), (k0, k1, k_h, k_w), (b, c_out, h_out, w_out)
        sizes = (x_dims, w_dims, y_dims)
        if not all(map(all, sizes)) or max(map(math.prod, sizes)) >= 2**31:
            return None
        ordinal = buf.ordinal
        stream = self.rt.stream(ordinal)
        handle_stream = int(stream.handle)
        switches = self.rt.switches
        tf32, tune = switches.conv_reduced(dtype), switches.autotune
        key = (op, name, ordinal, x_dims, w_dims, y_dims, pad, stride, dilation, HEURISTICS, tf32, tune)

        def make(cudnn, handle):
            graph = _conv_graph(cudnn, handle, transposed, dtype, x_dims, w_dims, y_dims, pad, stride, dilation)
            return _finish(cudnn, *graph, HEURISTICS, tune=tune, tf32=tf32)

        plan = self._plan(key, ordinal, handle_stream, make)
        if plan is None:
            return None
        copy = self.rt._entry(table, ("copy_strided_{self}", dtype), op)
        x = self._aligned(buf, layout, copy)
        w = self._aligned(kernel, kernel_layout, copy)
        out = self.rt.alloc(ordinal, math.prod(y_dims), dtype)
        self._run(op, plan, ordinal, handle_stream, (x[0].at(x[1]), w[0].at(w[1]), out.ptr))
        return out

    def _aligned(self, buf, layout: Layout, copy):
        """(buffer, layout) of the view, contiguous and 16-byte aligned: in place where it is,
        else a dense copy on the device (held by the caller until the graph is queued)."""
        if layout.is_contiguous and buf.at(layout) % ALIGN == 0:
            return buf, layout
        return self.rt._dense_copy(buf, layout, copy), Layout.contiguous(layout.shape)

    # -- attention --------------------------------------------------------------------------
    def sdpa(self, q, lq: Layout, k, lk: Layout, v, lv: Layout, scale: float, causal: bool, table: dict):
        """O = softmax(scale Q K^T (+ causal mask)) V of runtime/gpu/nn.py's arguments (shapes,
        dtypes and devices checked) through cuDNN's fused attention, or None. Views whose
        last dim is dense and whose other strides keep 16-byte rows are read in place, any
        other copied dense. Causal alignment is bottom-right (query i sees key j <= i + skv -
        sq), as the cpu backend's; with more queries than keys some rows see no key (the cpu
        gives zeros there): those calls stay on the other paths."""
        dtype = q.dtype
        if dtype_name(dtype) not in SDPA_DTYPES or self.module() is None:
            return None
        b, h, sq, d = lq.shape
        skv = lk.shape[2]
        if (
            not (b and h and sq)
            or (causal and sq > skv)
            or d % 8
            or d > 256
            or not (1e-30 < abs(scale) < 1e30)
            or max(map(math.prod, (lq.shape, lk.shape))) >= 2**31
        ):
            return None
        ordinal = q.ordinal
        stream = self.rt.stream(ordinal)
        handle_stream = int(stream.handle)
        copy = None
        views = []
        for buf, layout in ((q, lq), (k, lk), (v, lv)):
            if not _attention_view(buf, layout):
                if copy is None:
                    copy = self.rt._entry(table, ("copy_strided_{self}", dtype), "sdpa")
                buf, layout = self.rt._dense_copy(buf, layout, copy), Layout.contiguous(layout.shape)
            views.append((buf, layout))
        strides = tuple(tuple(layout.stride) for _, layout in views)
        key = ("sdpa", dtype_name(dtype), ordinal, (b, h, sq, skv, d), strides, float(scale), bool(causal))

        def make(cudnn, handle):
            try:
                return _sdpa_plan(cudnn, handle, dtype, (b, h, sq, skv, d), strides, float(scale), bool(causal))
            except TypeError:  # a frontend before the diagonal-band and generate_stats arguments
                return _sdpa_plan(
                    cudnn, handle, dtype, (b, h, sq, skv, d), strides, float(scale), bool(causal), legacy=True
                )

        plan = self._plan(key, ordinal, handle_stream, make)
        if plan is None:
            return None
        out = self.rt.alloc(ordinal, b * h * sq * d, dtype)
        self._run("sdpa", plan, ordinal, handle_stream, (*(buf.at(layout) for buf, layout in views), out.ptr))
        return out


def _attention_view(buf, layout: Layout) -> bool:
    """Whether cuDNN reads the (b, h, s, d) view in place: dense along d, every other stride a
    positive multiple of 8 elements (16-byte rows), the address 16-byte aligned."""
    stride = layout.stride
    return stride[3] == 1 and all(s > 0 and s % 8 == 0 for s in stride[:3]) and buf.at(layout) % ALIGN == 0


def _load() -> tuple[Any, str | None]:
    """(the cudnn module, None), or (None, why not)."""
    try:
        import cudnn  # noqa: PLC0415  (optional dependency: the `cudnn` extra)
    except ImportError as exc:
        return None, f"nvidia-cudnn-frontend is not installed (pip install 'opgen[cudnn]'): {exc}"
    except Exception as exc:  # noqa: BLE001  (a broken install says why, the rest still runs)
        return None, f"importing cudnn failed: {type(exc).__name__}: {exc}"
    try:
        version = _backend_version(cudnn)
    except Exception as exc:  # noqa: BLE001  (RuntimeError: "Unable to find symbol cudnnGetVersion")
        return None, f"libcudnn.so.9 not found ({exc}); pip install nvidia-cudnn-cu12 or nvidia-cudnn-cu13"
    if version < 90000:
        return None, f"cuDNN {version} is older than 9.0"
    return cudnn, None


def _backend_version(cudnn) -> int:
    return int(cudnn.backend_version())


def _data_type(cudnn, dtype: np.dtype):
    return {
        "float32": cudnn.data_type.FLOAT,
        "float16": cudnn.data_type.HALF,
        "bfloat16": cudnn.data_type.BFLOAT16,
        "float64": cudnn.data_type.DOUBLE,
    }[dtype.name]


def _finish(
    cudnn,
    graph,
    handle,
    dtype: np.dtype,
    tensors: tuple,
    heuristics=("A", "FALLBACK"),
    tune: bool = False,
    tf32: bool = False,
) -> Plan:
    """Validate, lower, plan (`heuristics`: cudnn.heur_mode names, in order), drop the plans
    that compute f32 in less than f32 (those on TF32 tensor cores stay where `tf32`), check,
    build (every plan where `tune`: timed on the first call's buffers): the graph's Plan."""
    graph.validate()
    graph.build_operation_graph()
    graph.create_execution_plans([getattr(cudnn.heur_mode, name) for name in heuristics])
    if dtype.name == "float32":
        notes = [cudnn.numerical_note.DOWN_CONVERT_INPUTS]
        graph.deselect_numeric_notes(notes if tf32 else [cudnn.numerical_note.TENSOR_CORE, *notes])
    graph.check_support()
    if tune:
        graph.build_plans(cudnn.build_plan_policy.ALL)
    else:
        graph.build_plans()
    return Plan(graph, tensors, int(graph.get_workspace_size()), tune=tune)


def _conv_graph(cudnn, handle, transposed: bool, dtype: np.dtype, x_dims, w_dims, y_dims, pad, stride, dilation):
    """A convolution (NCHW, dense) as a graph: conv_fprop x (*) w -> y, or for a transposed
    one conv_dgrad of the convolution y -> x: dy = x, filter w, dx = y. (graph, handle,
    dtype, its tensors), for _finish."""
    io = _data_type(cudnn, dtype)
    compute = cudnn.data_type.DOUBLE if dtype.name == "float64" else cudnn.data_type.FLOAT
    graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=compute, compute_data_type=compute, handle=handle)
    x = graph.tensor(name="x", dim=list(x_dims), stride=_dense_strides(x_dims), data_type=io)
    w = graph.tensor(name="w", dim=list(w_dims), stride=_dense_strides(w_dims), data_type=io)
    if transposed:
        y = graph.conv_dgrad(
            loss=x,
            filter=w,
            padding=list(pad),
            stride=list(stride),
            dilation=list(dilation),
            compute_data_type=compute,
            name="conv_transpose",
        )
    else:
        y = graph.conv_fprop(
            image=x,
            weight=w,
            padding=list(pad),
            stride=list(stride),
            dilation=list(dilation),
            compute_data_type=compute,
            name="conv",
        )
    y.set_output(True).set_dim(list(y_dims)).set_stride(_dense_strides(y_dims)).set_data_type(io)
    return graph, handle, dtype, (x, w, y)


def _sdpa_plan(
    cudnn, handle, dtype: np.dtype, sizes, strides, scale: float, causal: bool, legacy: bool = False
) -> Plan:
    """Attention for inference (no softmax statistics) as a graph: q, k, v (b, h, s, d) with
    the views' strides, o dense. `legacy`: the older frontends' spelling of the arguments
    (is_inference, use_causal_mask_bottom_right)."""
    b, h, sq, skv, d = sizes
    io = _data_type(cudnn, dtype)
    f32 = cudnn.data_type.FLOAT
    graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=f32, compute_data_type=f32, handle=handle)
    q = graph.tensor(name="q", dim=[b, h, sq, d], stride=list(strides[0]), data_type=io)
    k = graph.tensor(name="k", dim=[b, h, skv, d], stride=list(strides[1]), data_type=io)
    v = graph.tensor(name="v", dim=[b, h, skv, d], stride=list(strides[2]), data_type=io)
    if legacy:
        options: dict[str, Any] = {"is_inference": True, "use_causal_mask_bottom_right": causal}
    elif causal:
        options = {
            "generate_stats": False,
            "diagonal_alignment": cudnn.diagonal_alignment.BOTTOM_RIGHT,
            "diagonal_band_right_bound": 0,
        }
    else:
        options = {"generate_stats": False}
    result = graph.sdpa(q=q, k=k, v=v, attn_scale=scale, name="sdpa", **options)
    o = result[0] if isinstance(result, (list, tuple)) else result
    o.set_output(True).set_dim([b, h, sq, d]).set_stride(_dense_strides((b, h, sq, d))).set_data_type(io)
    return _finish(cudnn, graph, handle, dtype, (q, k, v, o))
