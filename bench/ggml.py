"""opgen's quantized products beside ggml's own CUDA backend, on the same GPU, in one run.

Takes a ggml checkout (ggml-org/ggml) by path, adds the goal's shapes to its
`tests/test-backend-ops.cpp` perf cases (and has its large weights repeat a quantized sample, as
opgen's side does: INIT_REPEATED), builds `test-backend-ops` for CUDA in the background
(cmake, nvcc), times opgen's qmatvec meanwhile, then runs
`test-backend-ops perf -o MUL_MAT -b CUDA0` on the same shapes and writes one table of both.

What is timed, on each side, for a weight W (n, k) in one GGML format and x of 1, 2, 4, 8 rows:
- ggml: its perf mode's µs per MUL_MAT (the same weight every run, a graph of many products;
  for the quantized types this includes its kernel that quantizes x to q8_1 first);
- opgen: the same weight every product, LAUNCHES products captured in a CUDA graph, launched as
  the runtime launches them (QStorage.matmul's kernels, grid and block), timed with CUDA events:
  the path QMatMul takes by default (x quantized to q8_1, then qmatvec_q8_1_<fmt>; the exact-x
  kernel where runtime/gpu/quant.py exact_x_measured_faster says), then the exact-x kernel of the
  formats with a tuned one (EXACT_TIMED), so that EXACT_X_FASTER can be chosen from one run.
Copy bandwidth: torch's device-to-device copy (bytes read + written), for the share of it that
the weight's bytes per product reach at 16384 x 16384.

ggml's perf mode runs each case for at least one second; `--ggml-seconds` shortens that in the
patched copy (the average then comes from fewer graph launches, each still of many products).
ggml's rows of x are timed --ggml-runs times, interleaved (every row once, then every row again),
each (row, pass) begun only before --deadline and written when done; the table shows each side's
median, the .json every run's figures and the count of cells where opgen is as fast or faster.

    python3 bench/ggml.py --ggml PATH [--rows 1,2,4,8] [--formats q4_0,...] [--out DIR] [--runs N] [--ggml-runs N]

--prebuilt: --build already holds test-backend-ops (a binary built by an earlier call, carried);
--explore: first times builds of qmatvec_q8_1 (EXPLORE_VARIANTS: copies of the source with some
kernel facts set; --variants picks them, --baseline PATH adds another tree's source as it ships),
into NAME-explore.json; --explore-only stops there (no table, no ggml build); --products-only
times the products back to back, x quantized once before them;
--render JSON: an earlier run's figures written again with the paths QMatMul takes now;
--ggml-only JSON: ggml's --ggml-rows alone, which a later run takes with --ggml-from JSON (any
number of them: each fills the rows of x that run did not time; an older file's single figure
per cell, a plain number, counts as one run); --ggml-add JSON: a --ggml-only file of the same card
whose runs join each cell's (for runs that do not fit one call: a pass of ggml's rows 1, 2, 4, 8
takes about 70 s on an H100 with the patched initializer, 330 s without it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: (n, k): W's rows (ggml's m) and its inner dimension, the goal's shapes.
SHAPES = ((16384, 16384), (4096, 14336), (14336, 4096), (4096, 4096))
ROWS = (1, 2, 4, 8)
LAUNCHES = 100
REPEATS = 7
SAMPLE = 1 << 20  # values quantized on the host; the weight repeats their blocks
MARKER = "// opgen bench/ggml.py: the goal's shapes"
INIT_MARKER = "// opgen bench/ggml.py: large weights repeat a sample"
#: test-backend-ops's init_tensor_uniform, in the patched copy: a weight of more than SAMPLE
#: values holds its first SAMPLE values' blocks again and again, quantized once, as opgen's side
#: does (quantizing all 2^28 values of a 16384 x 16384 weight took most of a pass's time; what a
#: product reads and computes is the same).
INIT_HEAD = "static void init_tensor_uniform(ggml_tensor * tensor, float min = -1.0f, float max = 1.0f) {\n"
INIT_REPEATED = f"""{INIT_MARKER}
static bool opgen_init_repeated(ggml_tensor * tensor, float min, float max) {{
    const int64_t sample = {SAMPLE}, nels = ggml_nelements(tensor);
    const ggml_type type = tensor->type;
    const bool packed = ggml_is_quantized(type) || type == GGML_TYPE_F16 || type == GGML_TYPE_BF16;
    if (nels <= sample || nels % sample != 0 || !ggml_is_contiguous(tensor) || !(packed || type == GGML_TYPE_F32)) {{
        return false;
    }}
    std::vector<float> data(sample);
    std::default_random_engine gen(std::random_device{{}}());
    std::uniform_real_distribution<float> distribution(min, max);
    for (float & v : data) {{
        v = distribution(gen);
    }}
    std::vector<uint8_t> bytes(ggml_row_size(type, sample));
    if (packed) {{
        const int64_t blck = ggml_blck_size(type);
        ggml_quantize_chunk(type, data.data(), bytes.data(), 0, sample / blck, blck, nullptr);
    }} else {{
        memcpy(bytes.data(), data.data(), bytes.size());
    }}
    for (int64_t at = 0; at < nels / sample; at++) {{
        ggml_backend_tensor_set(tensor, bytes.data(), at * bytes.size(), bytes.size());
    }}
    return true;
}}

"""
#: The activation formats: ggml multiplies no weight held in them (its test list leaves them out).
ACTIVATION = ("q8_1", "q8_k")


def ggml_type(fmt: str) -> str:
    return "GGML_TYPE_" + fmt.upper()


# --------------------------------------------------------------------------- ggml


def patch_ggml(src: Path, formats, seconds: float) -> None:
    """Adds the shapes ggml's perf list lacks to tests/test-backend-ops.cpp and large weights'
    repeated sample (INIT_REPEATED; each once), and sets the perf mode's least time per case."""
    path = src / "tests" / "test-backend-ops.cpp"
    text = path.read_text()
    if MARKER not in text:
        head = "make_test_cases_perf() {\n    std::vector<std::unique_ptr<test_case>> test_cases;\n"
        assert head in text, "make_test_cases_perf not found: another test-backend-ops.cpp layout"
        types = ", ".join(ggml_type(f) for f in formats)
        shapes = ", ".join(f"{{{n}, {k}}}" for n, k in SHAPES if (n, k) != (4096, 14336))  # that one is listed
        cases = (
            f"    {MARKER}\n"
            f"    for (int bs : {{1, 2, 4, 8}}) for (ggml_type t : {{{types}}})\n"
            f"        for (auto mk : std::vector<std::pair<int, int>>{{{shapes}}})\n"
            "            test_cases.emplace_back(\n"
            "                new test_mul_mat(t, GGML_TYPE_F32, mk.first, bs, mk.second, {1, 1}, {1, 1}));\n"
        )
        text = text.replace(head, head + cases, 1)
    if INIT_MARKER not in text:
        assert INIT_HEAD in text, "init_tensor_uniform not found: another test-backend-ops.cpp layout"
        call = "    if (opgen_init_repeated(tensor, min, max)) {\n        return;\n    }\n"
        text = text.replace(INIT_HEAD, INIT_REPEATED + INIT_HEAD + call, 1)
    text = re.sub(r"while \(total_time_us < \d+\*\d+\);", f"while (total_time_us < {int(seconds * 1e6)});", text)
    path.write_text(text)


def build_ggml(src: Path, build: Path, jobs: int, log) -> subprocess.Popen:
    """cmake configure + build of test-backend-ops (CUDA, sm_90), in the background."""
    configure = (
        f"cmake -S {src} -B {build} -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_BUILD_TESTS=ON "
        "-DGGML_BUILD_EXAMPLES=OFF -DGGML_CUDA_NCCL=OFF -DGGML_CUDA_FA=OFF -DCMAKE_BUILD_TYPE=Release"
    )
    command = f"{configure} && cmake --build {build} -j {jobs} --target test-backend-ops"
    return subprocess.Popen(command, shell=True, stdout=log, stderr=subprocess.STDOUT)


def ggml_times(build: Path, rows, formats, log) -> dict:
    """(format, n, k, rows) -> µs per product from test-backend-ops perf (its console lines)."""
    binary = next(build.rglob("test-backend-ops"))
    names = "|".join(re.sub(r"_k$", "_K", f) for f in formats)  # ggml's type names: q4_K
    ns = "|".join(sorted({str(n) for n, _ in SHAPES}))
    ks = "|".join(sorted({str(k) for _, k in SHAPES}))
    out = {}
    for r in rows:
        params = rf"type_a=({names}),type_b=f32,m=({ns}),n={r},k=({ks}),bs=\[1,1\],nr=\[1,1\],per=\[0,1,2,3\]"
        proc = subprocess.run(
            [str(binary), "perf", "-o", "MUL_MAT", "-b", "CUDA0", "-p", params], capture_output=True, text=True
        )
        log.write(proc.stderr)
        log.write(proc.stdout)
        log.flush()
        # console lines: "  MUL_MAT(type_a=q4_0,...,k=16384,...):   1234 runs -    59.00 us/run - ..."
        for params_text, us in re.findall(r"MUL_MAT\(([^)]*)\):\s+\d+ runs -\s+([\d.]+) us/run", proc.stdout):
            v = dict(re.findall(r"(\w+)=([^,\[]+|\[[^\]]*\])", params_text))
            shape = (int(v["m"]), int(v["k"]))
            if shape in SHAPES and v["type_a"].lower() in formats:
                out[v["type_a"].lower(), *shape, int(v["n"])] = float(us)
    return out


def ggml_passes(args: argparse.Namespace, rows, formats, log, t0: float, written) -> dict:
    """(format, n, k, rows) -> [µs per product, a run each]: every row of x timed once, then every
    row again, args.ggml_runs times; a (row, pass) begins only before args.deadline (seconds from
    t0), and written(figures) follows each, so that a run cut short keeps what it timed."""
    found: dict = {}
    for done in range(args.ggml_runs):
        for r in rows:
            if time.monotonic() - t0 > args.deadline:
                print(f"deadline: ggml's pass {done + 1} not run from rows {r} on", flush=True)
                return found
            for key, us in ggml_times(args.build, [r], formats, log).items():
                found.setdefault(key, []).append(us)
            print(f"ggml rows={r} pass {done + 1} at {time.monotonic() - t0:.0f} s", flush=True)
            written(found)
    return found


def as_runs(value) -> list:
    """A .json's ggml figure as its list of runs: older files hold one run as a plain number."""
    return list(value) if isinstance(value, list) else [float(value)]


# --------------------------------------------------------------------------- opgen


def _ok(result):
    err, *rest = result if isinstance(result, tuple) else (result,)
    if int(err):
        raise RuntimeError(f"CUDA driver call failed: {err}")
    return rest[0] if len(rest) == 1 else None


def graph_us(enqueue, stream) -> float:
    """Median µs per enqueue() of LAUNCHES captured in one CUDA graph, REPEATS launches of it."""
    from cuda.bindings import driver as cu

    enqueue()
    _ok(cu.cuStreamBeginCapture(stream, cu.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))
    for _ in range(LAUNCHES):
        enqueue()
    graph = _ok(cu.cuStreamEndCapture(stream))
    exe = _ok(cu.cuGraphInstantiate(graph, 0))
    start, end = _ok(cu.cuEventCreate(0)), _ok(cu.cuEventCreate(0))
    _ok(cu.cuGraphLaunch(exe, stream))
    samples = []
    for _ in range(REPEATS):
        _ok(cu.cuEventRecord(start, stream))
        _ok(cu.cuGraphLaunch(exe, stream))
        _ok(cu.cuEventRecord(end, stream))
        _ok(cu.cuEventSynchronize(end))
        samples.append(_ok(cu.cuEventElapsedTime(start, end)) * 1e3 / LAUNCHES)
    for event in (start, end):
        cu.cuEventDestroy(event)
    cu.cuGraphExecDestroy(exe)
    cu.cuGraphDestroy(graph)
    return statistics.median(samples)


def copy_gbs() -> float:
    """torch device-to-device copy of 256 MiB, bytes read + written per second (GB/s): the
    quantized bench's own measurement, so both tables share one reference."""
    from bench.quantized import copy_bandwidth

    return copy_bandwidth()


#: The formats whose exact-x kernel is timed beside the quantized-x one: those with a tuned exact
#: path (runtime/gpu/quant.py QMATVEC_FAST, QMATVEC_K); the others' is several times slower.
EXACT_TIMED = ("q4_0", "q4_1", "q8_0", "q4_k", "q6_k")


def _nmse(got, want) -> float:
    return float(((got - want) ** 2).sum() / (want**2).sum())


def opgen_times(rows, formats, runs: int) -> tuple[dict, dict, dict, dict]:
    """(format, n, k, rows) -> [µs per product] over `runs` of the product QMatMul takes by default,
    and of the exact-x kernel (block formats); format -> NMSE of the 4096 x 4096 product of 1 and
    8 rows against f64 (the larger), by path; format -> weight bytes at 16384 x 16384.

    The runs are passes, as ggml's are: every cell once, then every cell again, so that a cell's
    runs sample the call's spread (a card's clocks drift over seconds of full load: back to back,
    the three runs of f16 by 4 rows at 16384² on the H200 took 126, 126 and 153 µs). QMatMul's
    paths first, then the exact-x kernels' passes: those (up to 0.2 s of 8 rows at 16384² a run)
    slowed the product timed right after them by 5-10% on the H200."""
    import numpy as np

    from generated import kernels_hip
    from runtime import ggml
    from runtime.gpu import quant as gpu_quant

    rt = __import__("runtime.cuda", fromlist=["_rt"])._rt
    stream = rt.stream(0)
    rng = np.random.default_rng(0)
    table = kernels_hip.QSTORAGE["matmul"]
    chosen: dict = {}  # cell -> the product QMatMul takes (its buffers alive in it for every pass)
    exact_x: dict = {}  # cell -> the exact-x kernel (EXACT_TIMED)
    nmse: dict = {}
    nbytes = {}
    for fmt in formats:
        sample = ggml.quantize(rng.standard_normal(SAMPLE).astype(np.float32), fmt)
        launch = getattr(kernels_hip, f"launch_qmatvec_{fmt}")
        item_rows, threads = gpu_quant.qmatvec_launch(rt, fmt)
        for n, k in SHAPES:
            data = np.tile(sample, n * k // SAMPLE)
            q = gpu_quant.qstorage_from_bytes(rt, 0, data, fmt)
            if (n, k) == (16384, 16384):
                nbytes[fmt] = data.size
            if (n, k) == (4096, 4096):
                nmse[fmt] = _path_nmse(rt, q, data, fmt, n, k, rng, table)
            for r in rows:
                x_buf = rt.from_host(0, rng.standard_normal(r * k).astype(np.float32))
                y = rt.alloc(0, r * n, np.dtype(np.float32))
                xq = rt.alloc(0, gpu_quant.x_q8_1_bytes(r, k), np.dtype(np.uint8))
                grid = gpu_quant._grid(rt, 0, -(-n // item_rows) * r)  # as QStorage.matmul launches it

                def exact(q=q, x_buf=x_buf, y=y, grid=grid, n=n, k=k, r=r, launch=launch, threads=threads):
                    launch(rt.launch, grid, threads, stream, q.buf.ptr, x_buf.ptr, y.ptr, n, k, r)

                def q8_1(q=q, x_buf=x_buf, y=y, n=n, k=k, r=r, xq=xq):
                    gpu_quant.qmatvec_q8_1(rt, q, x_buf, y, n, k, r, table, xq)

                chosen[fmt, n, k, r] = q8_1 if gpu_quant.quantized_x(rt, fmt, r, n, k) else exact
                if fmt in EXACT_TIMED:
                    exact_x[fmt, n, k, r] = exact
    return opgen_passes(chosen, runs, stream), opgen_passes(exact_x, runs, stream), nmse, nbytes


#: How opgen_passes takes a cell's runs, and how the .json files without "opgen_order" took them.
OPGEN_ORDER = "in passes: every cell once, then every cell again"
EARLIER_ORDER = "a cell's runs back to back"


def opgen_passes(products: dict, runs: int, stream) -> dict:
    """cell -> [µs per product, a run each]: every cell timed once, then every cell again."""
    times: dict = {cell: [] for cell in products}
    for _ in range(runs):
        for cell, enqueue in products.items():
            times[cell].append(graph_us(enqueue, stream.handle))
    return times


def _path_nmse(rt, q, data, fmt: str, n: int, k: int, rng, table) -> dict:
    """NMSE against f64 of QMatMul's products of 1 and 8 rows (the larger), each path."""
    import numpy as np

    from runtime import ggml
    from runtime.gpu import quant as gpu_quant
    from runtime.layout import Layout

    w = ggml.dequantize(data, fmt, n * k).reshape(n, k).astype(np.float64)
    out = {}
    for exact in (False, True):
        rt.switches.qmatmul_exact_x = exact
        worst = 0.0
        for r in (1, 8):
            x = rng.standard_normal((r, k)).astype(np.float32)
            got = gpu_quant.q_matmul(rt, q, rt.from_host(0, x.reshape(-1)), Layout.contiguous((r, k)), (n, k), table)
            worst = max(worst, _nmse(rt.to_host(got).reshape(r, n), x.astype(np.float64) @ w.T))
        out["exact_x" if exact else "default"] = worst
    rt.switches.qmatmul_exact_x = False
    return out


#: --explore: builds of hip/qmatvec_q8.hip, each the shipped source with some of ops.yaml's
#: overridable QMATVEC_Q8_* facts defined first (--variants picks them by name), timed side by side;
#: --baseline adds another tree's source (an earlier main) as it ships.
EXPLORE_VARIANTS: dict[str, dict[str, int]] = {
    "shipped": {},
    "block-items": {"QMATVEC_Q8_LANE_UNITS": 0, "QMATVEC_Q8_LANE_ITEMS": 1 << 40, "QMATVEC_Q8_LANE_UNITS_F": 0},
    "lane-items-few": {"QMATVEC_Q8_LANE_ITEMS": 1 << 40},
    "lane-items-16": {"QMATVEC_Q8_LANE_UNITS": 16},
    "wide-all": {"QMATVEC_Q8_WIDE_BLOCKS": 63},
    "wide-none": {"QMATVEC_Q8_WIDE_BLOCKS": 0},
    "wide-q8-0": {"QMATVEC_Q8_WIDE_BLOCKS": 16},
    "wide-q4-0-q8-0": {"QMATVEC_Q8_WIDE_BLOCKS": 17},
    "wide-k-none": {"QMATVEC_Q8_WIDE_K": 0},
    "wide-k-all": {"QMATVEC_Q8_WIDE_K": 63},
    "long-k-none": {"QMATVEC_Q8_LONG_K": 0},
    "long-k-q3-q5": {"QMATVEC_Q8_LONG_K": 10},
    "long-k-q3-q4-q5": {"QMATVEC_Q8_LONG_K": 14},
    "long-dot-none": {"QMATVEC_Q8_LONG_DOT": 0},
    "x-shared-none": {"QMATVEC_Q8_LONG_X_SHARED": 0},
    "x-shared-all": {"QMATVEC_Q8_LONG_X_SHARED": 15},
    "x-shared-blocks-none": {"QMATVEC_Q8_LONG_X_SHARED_BLOCKS": 0},
    "x-shared-blocks-8": {"QMATVEC_Q8_LONG_X_SHARED_BLOCKS": 8},
    "rows-k-x2-two-none": {"QMATVEC_Q8_ROWS_K_X2_TWO": 0},
    "mma-f-wide-off": {"QMATVEC_Q8_MMA_WIDE_N": 1 << 40},
    "rows-4": {f"QMATVEC_Q8_ROWS{family}_X{c}": 4 for family in ("", "_F") for c in (1, 2, 4, 8)},
    "min-blocks-3": {"QMATVEC_Q8_MIN_BLOCKS": 3},
    "few-min-blocks-2": {"QMATVEC_Q8_FEW_MIN_BLOCKS": 2},
    "few-min-blocks-3": {"QMATVEC_Q8_FEW_MIN_BLOCKS": 3},
    "few-min-blocks-4": {"QMATVEC_Q8_FEW_MIN_BLOCKS": 4},
    "few-min-blocks-5": {"QMATVEC_Q8_FEW_MIN_BLOCKS": 5},
    "few-min-blocks-3-float-early-2": {"QMATVEC_Q8_FEW_MIN_BLOCKS": 3, "QMATVEC_Q8_FLOAT_EARLY": 2},
    "few-roomy-none": {"QMATVEC_Q8_FEW_ROOMY_BLOCKS": 0},
    "mma-off": {"QMATVEC_Q8_MMA_F_FROM": 0},
    "mma-1": {"QMATVEC_Q8_MMA_F_FROM": 1},
    "mma-1-tiles-1": {"QMATVEC_Q8_MMA_F_FROM": 1, "QMATVEC_Q8_MMA_TILES_F": 1},
    "mma-1-tiles-2": {"QMATVEC_Q8_MMA_F_FROM": 1, "QMATVEC_Q8_MMA_TILES_F": 2, "QMATVEC_Q8_MMA_WIDE_N": 0},
    "mma-1-tiles-4": {"QMATVEC_Q8_MMA_F_FROM": 1, "QMATVEC_Q8_MMA_TILES_F": 4, "QMATVEC_Q8_MMA_WIDE_N": 0},
    "rows-x2-2": {"QMATVEC_Q8_ROWS_X2": 2},
    "rows-x2-4": {"QMATVEC_Q8_ROWS_X2": 4},
    "rows-k-x1-2": {"QMATVEC_Q8_ROWS_K_X1": 2},
    "rows-k-x1-4": {"QMATVEC_Q8_ROWS_K_X1": 4},
    "rows-k-x1-8": {"QMATVEC_Q8_ROWS_K_X1": 8},
    "rows-k-x2-2": {"QMATVEC_Q8_ROWS_K_X2": 2},
    "rows-k-x2-8": {"QMATVEC_Q8_ROWS_K_X2": 8},
    "lane-units-8": {"QMATVEC_Q8_LANE_UNITS": 8},
    "rows-x4-4": {"QMATVEC_Q8_ROWS_X4": 4, "QMATVEC_Q8_NARROW_N": 0},
    "narrow-off": {"QMATVEC_Q8_NARROW_N": 0},
    "rows-x8-2": {"QMATVEC_Q8_ROWS_X8": 2},
    "min-blocks-2": {"QMATVEC_Q8_MIN_BLOCKS": 2},
    "min-blocks-4": {"QMATVEC_Q8_MIN_BLOCKS": 4},
    "mma-q-off": {"QMATVEC_Q8_MMA_Q_FROM": 0},
    "mma-q-wide": {"QMATVEC_Q8_MMA_Q_N": 0},
    "mma-q-min-blocks-1": {"QMATVEC_Q8_MMA_Q_MIN_BLOCKS": 1},
    "mma-q-min-blocks-6": {"QMATVEC_Q8_MMA_Q_MIN_BLOCKS": 6},
    "mma-q-rows-4": {"QMATVEC_Q8_MMA_Q_FROM": 4},
    "lane-units-f-8": {"QMATVEC_Q8_LANE_UNITS_F": 8},
    "lane-units-f-4": {"QMATVEC_Q8_LANE_UNITS_F": 4},
    "mma-f-tiles-2": {"QMATVEC_Q8_MMA_TILES_F": 2, "QMATVEC_Q8_MMA_WIDE_N": 0},
    "mma-q-stages-2": {"QMATVEC_Q8_MMA_Q_STAGES": 2},
    "mma-f-depth-2": {"QMATVEC_Q8_MMA_F_DEPTH": 2},
    "mma-f-depth-3": {"QMATVEC_Q8_MMA_F_DEPTH": 3},
    "mma-f-depth-6": {"QMATVEC_Q8_MMA_F_DEPTH": 6},
    "mma-q-x-l2": {"QMATVEC_Q8_MMA_Q_X_L1": 0},
    "mma-q-x4-none": {"QMATVEC_Q8_MMA_Q_X4_BLOCKS": 0},
    "rows-f-x1-2": {"QMATVEC_Q8_ROWS_F_X1": 2},
    "rows-f-x1-8": {"QMATVEC_Q8_ROWS_F_X1": 8},
    "rows-f-x1-1": {"QMATVEC_Q8_ROWS_F_X1": 1},
    "rows-f-x1-1-side": {"QMATVEC_Q8_ROWS_F_X1": 1, "QMATVEC_Q8_FLOAT_PIECES_K": 1 << 20},
    "rows-f-x1-2-side": {"QMATVEC_Q8_ROWS_F_X1": 2, "QMATVEC_Q8_FLOAT_PIECES_K": 1 << 20},
    "rows-f-x1-1-side-8": {
        "QMATVEC_Q8_ROWS_F_X1": 1,
        "QMATVEC_Q8_FLOAT_PIECES_K": 1 << 20,
        "QMATVEC_Q8_FEW_MIN_BLOCKS": 8,
    },
    "rows-x1-4": {"QMATVEC_Q8_ROWS_X1": 4},
    "rows-x4-2": {"QMATVEC_Q8_ROWS_X4": 2, "QMATVEC_Q8_ROWS_X4_NARROW": 2},
    "mma-f-chains-1": {"QMATVEC_Q8_MMA_F_CHAINS": 1},
    "mma-f-chains-2": {"QMATVEC_Q8_MMA_F_CHAINS": 2},
    "mma-q-pairs-none": {"QMATVEC_Q8_MMA_Q_PAIR_BLOCKS": 0},
    "mma-q-x4-all": {"QMATVEC_Q8_MMA_Q_X4_BLOCKS": 63},
    "mma-f-threads-256": {"QMATVEC_Q8_MMA_F_THREADS": 256},
    "mma-f-threads-128": {  # float weights on the tensor cores as before blocks of 256 threads
        "QMATVEC_Q8_MMA_F_THREADS": 128,
        "QMATVEC_Q8_MMA_F_MIN_BLOCKS": 1,
        "QMATVEC_Q8_MMA_F_DEPTH": 4,
        "QMATVEC_Q8_MMA_TILES_F": 4,
    },
    "mma-f-threads-256-d2-t1": {
        "QMATVEC_Q8_MMA_F_THREADS": 256,
        "QMATVEC_Q8_MMA_F_MIN_BLOCKS": 2,
        "QMATVEC_Q8_MMA_F_DEPTH": 2,
        "QMATVEC_Q8_MMA_TILES_F": 1,
    },
    "mma-f-threads-256-d2-t2": {
        "QMATVEC_Q8_MMA_F_THREADS": 256,
        "QMATVEC_Q8_MMA_F_MIN_BLOCKS": 2,
        "QMATVEC_Q8_MMA_F_DEPTH": 2,
        "QMATVEC_Q8_MMA_TILES_F": 2,
    },
    "mma-f-narrow-tiles-1": {"QMATVEC_Q8_MMA_F_TILES": 1, "QMATVEC_Q8_MMA_F_MIN_BLOCKS": 2},
    **{f"float-pieces-k-{k}": {"QMATVEC_Q8_FLOAT_PIECES_K": k} for k in (0, 4096, 8192, 14336, 16384)},
    "lane-k-one-none": {"QMATVEC_Q8_LANE_K_ONE_BLOCKS": 0},
    "lane-k-one-all": {"QMATVEC_Q8_LANE_K_ONE_BLOCKS": 63},
    "lane-k-one-8": {"QMATVEC_Q8_LANE_UNITS_K_ONE": 8},
    "lane-k-one-shared-items-1024": {"QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS": 1024},
    "rows-x1-narrow-8": {"QMATVEC_Q8_ROWS_X1_NARROW": 8},
    "rows-x1-narrow-4": {"QMATVEC_Q8_ROWS_X1_NARROW": 4, "QMATVEC_Q8_ROWS_X1_NARROW_BLOCKS": 63},
    "rows-x1-narrow-2": {"QMATVEC_Q8_ROWS_X1_NARROW": 2, "QMATVEC_Q8_ROWS_X1_NARROW_BLOCKS": 63},
    "bulk-none": {"QMATVEC_Q8_BULK_BLOCKS": 0},
    "bulk-all": {"QMATVEC_Q8_BULK_BLOCKS": 31, "QMATVEC_Q8_BULK_ROWS": 4},
    "bulk-eight": {"QMATVEC_Q8_BULK_BLOCKS": 7},
    "bulk-stages-3": {"QMATVEC_Q8_BULK_BLOCKS": 31, "QMATVEC_Q8_BULK_ROWS": 4, "QMATVEC_Q8_BULK_STAGES": 3},
    "bulk-per-sm-3": {"QMATVEC_Q8_BULK_PER_SM": 3},
    "two-blocks-none": {"QMATVEC_Q8_TWO_BLOCKS": 0},
    "unsigned-blocks": {"QMATVEC_Q8_UNSIGNED_BLOCKS": 5},
    "unsigned-blocks-none": {"QMATVEC_Q8_UNSIGNED_BLOCKS": 0},
    "evict-first-none": {"QMATVEC_Q8_LONG_EVICT_FIRST": 0},
    "evict-first-k": {"QMATVEC_Q8_LONG_EVICT_FIRST": 15},
    "rows-x4-narrow-2": {"QMATVEC_Q8_ROWS_X4_NARROW": 2},
    "long-k-q6-none": {"QMATVEC_Q8_LONG_K": 15, "QMATVEC_Q8_LONG_X_SHARED": 3, "QMATVEC_Q8_ROWS_K_X1_TWO": 0},
    "long-k-q6-global": {"QMATVEC_Q8_LONG_X_SHARED": 3},
    "long-k-q6-rows-4": {"QMATVEC_Q8_ROWS_K_X1_TWO": 0},
    "rows-k-x1-two-all": {"QMATVEC_Q8_ROWS_K_X1_TWO": 31},
    "bulk-stages-2": {"QMATVEC_Q8_BULK_STAGES": 2},
    "bulk-stages-3-q5-0": {"QMATVEC_Q8_BULK_STAGES": 3},
    "bulk-early-none": {"QMATVEC_Q8_BULK_EARLY": 0},
    "bulk-release-none": {"QMATVEC_Q8_BULK_RELEASE": 0},
    "bulk-early-release-none": {"QMATVEC_Q8_BULK_EARLY": 0, "QMATVEC_Q8_BULK_RELEASE": 0},
    "stream-none": {"QMATVEC_Q8_STREAM_K": 0},
    "stream-warps-8-rows-2": {"QMATVEC_Q8_STREAM_WARPS": 8, "QMATVEC_Q8_STREAM_ROWS": 2},
    "stream-warps-8": {"QMATVEC_Q8_STREAM_WARPS": 8},
    "stream-warps-12": {"QMATVEC_Q8_STREAM_WARPS": 12},
    "stream-warps-13": {"QMATVEC_Q8_STREAM_WARPS": 13},
    "stream-warps-14": {"QMATVEC_Q8_STREAM_WARPS": 14},
    "stream-warps-15": {"QMATVEC_Q8_STREAM_WARPS": 15},
    "stream-warps-17": {"QMATVEC_Q8_STREAM_WARPS": 17},
    "stream-warps-18": {"QMATVEC_Q8_STREAM_WARPS": 18},
    "stream-warps-19": {"QMATVEC_Q8_STREAM_WARPS": 19},
    "stream-warps-16": {"QMATVEC_Q8_STREAM_WARPS": 16},
    "stream-warps-10-rows-2": {"QMATVEC_Q8_STREAM_WARPS": 10, "QMATVEC_Q8_STREAM_ROWS": 2},
    "stream-warps-4-rows-2": {"QMATVEC_Q8_STREAM_WARPS": 4, "QMATVEC_Q8_STREAM_ROWS": 2},
    "stream-no-q6": {"QMATVEC_Q8_STREAM_K": 3},
    "stream-narrow": {"QMATVEC_Q8_STREAM_WIDE_K": 0},
    "stream-release-none": {"QMATVEC_Q8_STREAM_RELEASE": 0},
    "stream-release-steps-none": {"QMATVEC_Q8_STREAM_RELEASE_STEPS": 0},
    "stream-release-late-none": {"QMATVEC_Q8_STREAM_RELEASE_LATE": 0},
    "stream-release-late-all": {"QMATVEC_Q8_STREAM_RELEASE_LATE": 19},
    "stream-pairs-none": {"QMATVEC_Q8_STREAM_PAIRS": 0},
    "stream-pairs-q3": {"QMATVEC_Q8_STREAM_PAIRS": 2, "QMATVEC_Q8_STREAM_WIDE_K": 3},
    "stream-evict-first": {"QMATVEC_Q8_STREAM_EVICT_FIRST": 19},
    "stream-evict-first-none": {"QMATVEC_Q8_STREAM_EVICT_FIRST": 0},
    "stream-fill-early-none": {"QMATVEC_Q8_STREAM_FILL_EARLY": 0},
    "stream-fill-early-all": {"QMATVEC_Q8_STREAM_FILL_EARLY": 19},
    "stream-first-late-none": {"QMATVEC_Q8_STREAM_FIRST_LATE": 0},
    "stream-first-late-steps-max": {"QMATVEC_Q8_STREAM_FIRST_LATE_STEPS": 1 << 30},
    "float-release-none": {"QMATVEC_Q8_FLOAT_RELEASE": 0},
    "float-release-two": {"QMATVEC_Q8_FLOAT_RELEASE": 2},
    "float-early-none": {"QMATVEC_Q8_FLOAT_EARLY": 0},
    "float-evict-first-none": {"QMATVEC_Q8_FLOAT_EVICT_FIRST": 0},
    "float-evict-first-all": {"QMATVEC_Q8_FLOAT_EVICT_FIRST_BYTES": 0},
}
EXPLORE_SHAPES = SHAPES
#: Facts that only the runtime reads, by what a source holds where the runtime follows them: those of
#: the tensor cores (qmatvec_q8_1_mma, when it launches that entry), the grid of the products
#: that read x from shared memory and that of the bulk product.
RUNTIME_FACTS = {
    "QMATVEC_Q8_MMA_F_FROM": "qmatvec_q8_1_mma",
    "QMATVEC_Q8_MMA_Q_FROM": "qmatvec_q8_1_mma",
    "QMATVEC_Q8_MMA_Q_N": "qmatvec_q8_1_mma",
    "QMATVEC_Q8_MMA_Q_X4_BLOCKS": "qmatvec_q8_1_mma",
    "QMATVEC_Q8_MMA_WIDE_N": "qmatvec_q8_1_mma",
    "QMATVEC_Q8_LONG_X_SHARED_BLOCKS": "OPGEN_QMATVEC_Q8_LONG_X_SHARED",
    "QMATVEC_Q8_BULK_PER_SM": "OPGEN_QMATVEC_Q8_BULK_BLOCKS",
}


@dataclass(frozen=True)
class Variant:
    """A build of qmatvec_q8.hip: its source file and the launch it needs (weight rows per item by
    family and x rows class, units per lane below which a group of lanes takes an item)."""

    name: str
    path: Path
    facts: dict
    few: bool = True  # qmatvec_q8_1_few_<fmt> for one or two rows of x (an older source: one entry)
    mma: bool = True  # qmatvec_q8_1_mma_<fmt> for the tensor cores (an older source: inside the others)
    wide: bool = True  # qmatvec_q8_1_mma_wide_<fmt> for float weights of many rows (an older source: none)
    one: bool = True  # qmatvec_q8_1_one_<fmt> for one row of x (an older source: its few entry)
    stream: bool = True  # qmatvec_q8_1_stream_<fmt> for one row of x (an older source: none)

    def item_rows(self, fmt: str, nx: int, n: int, k: int) -> int:
        """Weight rows per item: runtime/gpu/quant.py's q8_item_rows with this build's facts."""
        from runtime.gpu import quant as gpu_quant

        return gpu_quant.q8_item_rows(fmt, nx, n, k, self.rows_facts())

    def rows_facts(self) -> dict:
        """The facts the weight rows per item follow, an older source's missing ones as it had them:
        float weights the blocks of 32's rows, no narrow rows (but every block of 32 where only
        _ROWS_X1_NARROW_BLOCKS is missing), no 2-row items of the blocks of 256."""
        older = {
            **{f"QMATVEC_Q8_ROWS_F_X{c}": self.facts[f"QMATVEC_Q8_ROWS_X{c}"] for c in (1, 2, 4, 8)},
            "QMATVEC_Q8_NARROW_N": 0,
            "QMATVEC_Q8_ROWS_X4_NARROW": self.facts["QMATVEC_Q8_ROWS_X4"],
            "QMATVEC_Q8_ROWS_X1_NARROW": self.facts["QMATVEC_Q8_ROWS_X1"],
            "QMATVEC_Q8_ROWS_X1_NARROW_BLOCKS": 63,
            "QMATVEC_Q8_ROWS_K_X2_TWO": 0,
            "QMATVEC_Q8_ROWS_K_X1_TWO": 0,
        }
        return {**self.grid_facts(), **older, **self.facts}

    def entry(self, rt, fmt: str, rows: int, n: int, k: int | None = None) -> str:
        """The entry point that multiplies `rows` rows of x against n weight rows (of k values,
        where given): the stream product where q8_stream with this build's facts, the tensor
        cores' (runtime/gpu/quant.py q8_mma), else qmatvec_q8_1_few_<fmt> for one or two (one row:
        qmatvec_q8_1_one_<fmt> where q8_one_apart), where the source has them."""
        from runtime.gpu import quant as gpu_quant

        if self.stream and k is not None and gpu_quant.q8_stream(rt, 0, fmt, rows, k, 0, self.grid_facts()):
            return f"qmatvec_q8_1_stream_{fmt}"
        if self.mma and gpu_quant.q8_mma(rt, 0, fmt, gpu_quant.x_rows_class(rows), n, self.grid_facts()):
            wide = self.wide and gpu_quant.q8_wide(fmt, n, self.grid_facts())
            return f"qmatvec_q8_1_mma_wide_{fmt}" if wide else f"qmatvec_q8_1_mma_{fmt}"
        if self.one and rows == 1 and gpu_quant.q8_one_apart(fmt, self.grid_facts()):
            return f"qmatvec_q8_1_one_{fmt}"
        return f"qmatvec_q8_1_few_{fmt}" if self.few and rows <= 2 else f"qmatvec_q8_1_{fmt}"

    def grid_facts(self) -> dict:
        """The facts the grid follows, an older source's missing ones 0 (no lane items, no tensor
        cores; float weights on them in blocks of QMATVEC_Q8_THREADS; every stream format of pairs
        of rows at most STREAM_PAIR_WARPS reading warps, as before STREAM_PAIR_WARPS_K)."""
        from runtime.gpu import quant as gpu_quant

        older = {
            "QMATVEC_Q8_MMA_F_THREADS": gpu_quant.QMATVEC_Q8_THREADS,
            "QMATVEC_Q8_MMA_F_WIDE_THREADS": gpu_quant.QMATVEC_Q8_THREADS,
            "QMATVEC_Q8_STREAM_PAIR_WARPS_K": (1 << len(gpu_quant.BLOCK256_BITS)) - 1,
        }
        return {name: self.facts.get(name, older.get(name, 0)) for name in gpu_quant.QMATVEC_Q8_GRID_FACTS}

    def threads(self, rt, fmt: str, rows: int, n: int, k: int | None = None) -> int:
        """Threads per block of the entry that multiplies `rows` rows of x (Variant.entry)."""
        from runtime.gpu import quant as gpu_quant

        entry = self.entry(rt, fmt, rows, n, k)
        if entry.startswith("qmatvec_q8_1_stream_"):
            return gpu_quant.q8_stream_launch(rt, 0, fmt, n, k or 0, self.grid_facts())[1]
        wide = entry.startswith("qmatvec_q8_1_mma_wide_")
        return gpu_quant.q8_threads(fmt, entry.startswith("qmatvec_q8_1_mma_"), self.grid_facts(), wide)

    def grid(self, rt, fmt: str, n: int, k: int, rows: int) -> int:
        from runtime.gpu import quant as gpu_quant

        if self.entry(rt, fmt, rows, n, k).startswith("qmatvec_q8_1_stream_"):
            return gpu_quant.q8_stream_launch(rt, 0, fmt, n, k, self.grid_facts())[0]
        item_rows = self.item_rows(fmt, gpu_quant.x_rows_class(rows), n, k)
        return gpu_quant.q8_grid(rt, 0, fmt, n, k, rows, item_rows, self.grid_facts())


def explore_variants(names, baseline: Path | None) -> list[Variant]:
    """The named EXPLORE_VARIANTS as copies of hip/qmatvec_q8.hip with their facts defined first,
    and the baseline source (if given) with the facts its text reads at their shipped values."""
    import tempfile

    from generated import kernel_facts
    from runtime.gpu.compile import HIP_DIR

    shipped = {name: getattr(kernel_facts, name) for name in dir(kernel_facts) if name.startswith("QMATVEC_Q8_")}
    tmp = Path(tempfile.mkdtemp(prefix="opgen-q8-"))
    sources = [(name, (HIP_DIR / "qmatvec_q8.hip").read_text(), EXPLORE_VARIANTS[name]) for name in names]
    if baseline is not None:
        sources.append(("baseline", baseline.read_text(), {}))
    variants = []
    for name, text, overrides in sources:
        few, mma, wide = "qmatvec_q8_1_few" in text, "qmatvec_q8_1_mma" in text, "qmatvec_q8_1_mma_wide" in text
        one, stream = "qmatvec_q8_1_one" in text, "qmatvec_q8_1_stream" in text
        held = {f for f, marker in RUNTIME_FACTS.items() if marker in text}
        facts = {f: v for f, v in {**shipped, **overrides}.items() if f"OPGEN_{f}" in text or f in held}
        defines = "".join(f"#define OPGEN_{f} {v}\n" for f, v in overrides.items())
        path = tmp / f"qmatvec_q8_{name}.hip"
        path.write_text(defines + _with_entry_shims(text, few, mma, wide, one, stream))
        variants.append(Variant(name, path, facts, few, mma, wide, one, stream))
    return variants


def _forward(entry: str, callee: str) -> str:
    """A device template `entry` of a product's parameters that calls `callee` with them."""
    head = f"__device__ void {entry}("
    pad = " " * len(head)
    return f"""template <typename F>
{head}const uint8_t* w, const float* x, const uint8_t* xq, float* y, size_t n, size_t k,
{pad}size_t rows) {{
    {callee}<F>(w, x, xq, y, n, k, rows);
}}
"""


def _shim(*parts: str) -> str:
    """Declarations for an older source, in an anonymous namespace as its own are."""
    return "\nnamespace {\n" + "".join(parts) + "}  // namespace\n"


#: What this tree's generated entry points call, for a source from before qmatvec_q8_1_few: its one
#: qmatvec_q8_1 serves both (the bench launches its qmatvec_q8_1_<fmt> for every class of x rows).
FEW_SHIMS = _shim(_forward("qmatvec_q8_1_many", "qmatvec_q8_1"), _forward("qmatvec_q8_1_few", "qmatvec_q8_1"))
#: For a source from before qmatvec_q8_1_mma (its float weights' tensor cores inside
#: qmatvec_q8_1_many): its general entry, which the bench launches instead (Variant.entry).
MMA_SHIM = _shim(
    "template <typename F> constexpr int kMmaMinBlocks = 1;\n", _forward("qmatvec_q8_1_mma", "qmatvec_q8_1_many")
)
#: For a source from before QMATVEC_Q8_MMA_F_THREADS: its tensor-core entries' blocks are kThreads.
MMA_THREADS_SHIM = _shim("template <typename F> constexpr int kMmaThreads = kThreads;\n")
#: For a source from before qmatvec_q8_1_mma_wide: its tensor-core entry serves the wide one's name
#: (never launched: Variant.entry launches its qmatvec_q8_1_mma_<fmt> at every n).
MMA_WIDE_SHIM = _shim(
    "template <typename F> constexpr int kMmaWideThreads = kMmaThreads<F>;\n",
    "template <typename F> constexpr int kMmaWideMinBlocks = kMmaMinBlocks<F>;\n",
    _forward("qmatvec_q8_1_mma_wide", "qmatvec_q8_1_mma"),
)
#: For a source from before qmatvec_q8_1_one (its few entry took one row of x too): what this
#: tree's generated one entry calls (the bench launches its few entry for one row instead).
ONE_SHIM = _shim(_forward("qmatvec_q8_1_one", "qmatvec_q8_1_few"))
#: For a source from before qmatvec_q8_1_stream: what this tree's generated stream entry calls and
#: its launch bounds (never launched: Variant.entry takes the source's one-row entry instead).
STREAM_SHIM = _shim("constexpr int kStreamThreads = kThreads;\n", _forward("qmatvec_q8_1_stream", "qmatvec_q8_1_one"))
#: For a source from before QMATVEC_Q8_FEW_ROOMY_BLOCKS: every format's 1- and 2-row entries ask
#: for QMATVEC_Q8_FEW_MIN_BLOCKS.
FEW_MIN_BLOCKS_SHIM = _shim("template <typename F> constexpr int kFewMinBlocks = OPGEN_QMATVEC_Q8_FEW_MIN_BLOCKS;\n")


def _with_entry_shims(text: str, few: bool, mma: bool, wide: bool = True, one: bool = True, stream: bool = True) -> str:
    include = '#include "qmatvec_q8_entries.h"'
    threads = "" if "kMmaThreads" in text else MMA_THREADS_SHIM
    shims = ("" if few else FEW_SHIMS) + ("" if mma else MMA_SHIM) + threads + ("" if wide else MMA_WIDE_SHIM)
    shims += "" if one else ONE_SHIM
    shims += "" if stream else STREAM_SHIM
    shims += "" if "kFewMinBlocks" in text else FEW_MIN_BLOCKS_SHIM
    return text.replace(include, shims + include)


def _warm(path: str) -> str:  # compiles one source into the kernel cache (a worker process)
    __import__("runtime.cuda", fromlist=["_rt"])._rt._module(0, path)
    return path


def warm_cache(paths) -> None:
    """Compiles the sources in parallel processes, so that the timed process loads them."""
    import concurrent.futures
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(len(paths), mp_context=ctx) as pool:
        list(pool.map(_warm, [str(p) for p in paths]))


#: The largest NMSE a build's product may have against the shipped path's on the same quantized x
#: (sums in another order, x as two tf32 parts: about 1e-11 seen); past it the build is wrong.
EXPLORE_NMSE = 1e-8


def explore(variants: list[Variant], rows, runs: int, formats, products_only: bool = False) -> tuple[dict, dict]:
    """(variant name, format, n, k, x rows) -> median µs of the quantized-x product of each build,
    launched as QMatMul launches it (a block format's x quantized to q8_1 first, by the shipped
    kernel, which lets the programmatically launched product start at once; `products_only`: the
    products back to back, x quantized once before, to time what its quantization between them
    costs), and the same keys -> NMSE for the builds whose product is not the shipped path's
    (EXPLORE_NMSE)."""
    import ctypes

    import numpy as np

    from generated import kernels_hip
    from generated.kernel_facts import KernelPattern
    from runtime import ggml
    from runtime.gpu import quant as gpu_quant
    from runtime.gpu.launch import BLOCK

    rt = __import__("runtime.cuda", fromlist=["_rt"])._rt
    stream = rt.stream(0)
    rng = np.random.default_rng(1)
    types = (ctypes.c_void_p,) * 4 + (ctypes.c_size_t,) * 3
    out: dict = {}
    wrong: dict = {}
    for fmt in formats:
        sample = ggml.quantize(rng.standard_normal(SAMPLE).astype(np.float32), fmt)
        for n, k in EXPLORE_SHAPES:
            q = gpu_quant.qstorage_from_bytes(rt, 0, np.tile(sample, n * k // SAMPLE), fmt)
            for r in rows:
                x = rt.from_host(0, rng.standard_normal(r * k).astype(np.float32))
                y = rt.alloc(0, r * n, np.dtype(np.float32))
                xq = rt.alloc(0, gpu_quant.x_q8_1_bytes(r, k), np.dtype(np.uint8))
                table = kernels_hip.QSTORAGE["matmul"]
                gpu_quant.qmatvec_q8_1(rt, q, x, y, n, k, r, table, xq)  # fills xq
                want = rt.to_host(y).astype(np.float64)
                quantize = None  # float weights: the product reads x itself
                if fmt not in ggml.PLAIN:
                    quantize = rt._entry(table, (KernelPattern.QUANTIZE_Q8_1_X, x.dtype), "qmatmul")
                x_args = (rt.geometry(r * k // 4, 0), BLOCK, stream, x.ptr, xq.ptr, r, k)
                for v in variants:
                    args = (q.buf.ptr, x.ptr, xq.ptr, y.ptr, n, k, r)
                    grid = v.grid(rt, fmt, n, k, r)

                    entry, threads = v.entry(rt, fmt, r, n, k), v.threads(rt, fmt, r, n, k)

                    def run(v=v, grid=grid, args=args, entry=entry, threads=threads, quantize=quantize, x_args=x_args):
                        if quantize is not None and not products_only:
                            quantize(rt.launch, *x_args)
                        rt.launch(str(v.path), entry, grid, threads, stream, args, types)

                    out[v.name, fmt, n, k, r] = statistics.median(graph_us(run, stream.handle) for _ in range(runs))
                    error = _nmse(rt.to_host(y), want)
                    if not error <= EXPLORE_NMSE:
                        wrong[v.name, fmt, n, k, r] = error
                marks = {v: f" WRONG (NMSE {e:.1e})" for (v, *cell), e in wrong.items() if cell == [fmt, n, k, r]}
                print(
                    f"explore {fmt} {n}x{k} x{r}: "
                    + ", ".join(f"{v.name} {out[v.name, fmt, n, k, r]:.1f}{marks.get(v.name, '')}" for v in variants)
                    + " us",
                    flush=True,
                )
            del q
    return out, wrong


# --------------------------------------------------------------------------- table


def table(opgen: dict, ggml_us: dict, nbytes: dict, copy: float, formats, rows, exact: dict) -> str:
    lines = [
        "| format | rows | "
        + " | ".join(f"{n}x{k} opgen / ggml (us)" for n, k in SHAPES)
        + " | 16384² share of copy | 16384² exact x (us) |",
        "|---|---|" + "---|" * len(SHAPES) + "---|---|",
    ]
    for fmt in formats:
        for r in rows:
            cells = []
            for n, k in SHAPES:
                ours = statistics.median(opgen[fmt, n, k, r])
                runs = ggml_us.get((fmt, n, k, r))
                if not runs:
                    cells.append(f"{ours:.1f} / -")
                else:
                    theirs = statistics.median(runs)
                    mark = "" if ours <= theirs else " **slower**"
                    cells.append(f"{ours:.1f} / {theirs:.1f} ({theirs / ours:.2f}x){mark}")
            share = nbytes[fmt] / (statistics.median(opgen[fmt, 16384, 16384, r]) * 1e-6) / 1e9 / copy
            plain = exact.get((fmt, 16384, 16384, r))
            plain_text = f"{statistics.median(plain):.1f}" if plain else "-"
            lines.append(f"| {fmt} | {r} | " + " | ".join(cells) + f" | {share:.1%} | {plain_text} |")
    return "\n".join(lines)


#: How the count of cells met compares the two sides' runs of a cell.
MET_BY = {
    "median": lambda ours, theirs: statistics.median(ours) <= statistics.median(theirs),
    "every_run": lambda ours, theirs: max(ours) <= min(theirs),
}


def cells_met(opgen: dict, ggml_us: dict, formats, rows) -> dict:
    """The goal's cells (ggml's formats x SHAPES x the rows of x both sides timed) where opgen is as
    fast or faster, by its median ("median") and by its slowest run against ggml's fastest
    ("every_run"): {way: {"1": [met, cells], ..., "all": [met, cells]}} (a tie is met)."""
    keys = sorted(
        (key for key, runs in ggml_us.items() if runs and key in opgen and key[0] in formats and key[3] in rows),
        key=lambda key: key[3],
    )
    counts: dict = {}
    for way, met in MET_BY.items():
        by_rows: dict = {}
        for key in keys:
            hits, cells = by_rows.get(str(key[3]), [0, 0])
            by_rows[str(key[3])] = [hits + met(opgen[key], ggml_us[key]), cells + 1]
        by_rows["all"] = [sum(h for h, _ in by_rows.values()), sum(c for _, c in by_rows.values())]
        counts[way] = by_rows
    return counts


def met_line(counts: dict) -> str:
    """The counts of cells_met as a sentence for the .md."""

    def said(by_rows: dict) -> str:
        hits, cells = by_rows["all"]
        return f"{hits} of {cells} cells: " + ", ".join(
            f"rows {group} {h}/{c}" for group, (h, c) in by_rows.items() if group != "all"
        )

    if not counts["median"]["all"][1]:
        return "No cell has both sides' figures yet."
    return (
        f"opgen as fast or faster (its median <= ggml's) in {said(counts['median'])}; in every run "
        f"(opgen's slowest <= ggml's fastest) in {said(counts['every_run'])}."
    )


def runs_said(figures: dict) -> str:
    """'the median of N runs' where every row of x got N, else each row's count."""
    by_row: dict = {}
    for (_, _, _, r), runs in figures.items():
        by_row[r] = max(by_row.get(r, 0), len(runs))
    counts = set(by_row.values())
    if len(counts) == 1:
        (n,) = counts
        return "one run" if n == 1 else f"the median of {n} runs"
    if not counts:
        return "no runs"
    return "the median of the runs each row of x got (" + ", ".join(f"{r}: {by_row[r]}" for r in sorted(by_row)) + ")"


def _wait_for(pid: int, build: Path) -> int:
    """Waits for another process (a --build-only run) to end; 0 where it left the binary."""
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
        except FileNotFoundError:
            break
        if state == "Z":  # ended, not yet reaped
            break
        time.sleep(2)
    return 0 if any(build.rglob("test-backend-ops")) else 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ggml", type=Path, default=None, help="a ggml checkout (ggml-org/ggml); all but --explore-only")
    ap.add_argument("--build", type=Path, default=Path("/tmp/ggml-build"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--name", default="ggml-anchor")
    ap.add_argument("--formats", default=None, help="comma-separated; default: every format of ops.yaml")
    ap.add_argument("--rows", default="1,2,4,8")
    ap.add_argument("--runs", type=int, default=3, help="opgen's timings repeated (the median is shown)")
    ap.add_argument("--ggml-runs", type=int, default=3, help="ggml's rows timed this many times, interleaved")
    ap.add_argument("--ggml-seconds", type=float, default=0.25, help="ggml perf mode's least time per case")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 8)
    ap.add_argument("--deadline", type=float, default=540, help="seconds from start after which no ggml row begins")
    ap.add_argument("--build-only", action="store_true", help="patch and build ggml, then stop")
    ap.add_argument("--opgen-json", type=Path, default=None, help="opgen's figures from an earlier run's .json")
    ap.add_argument("--wait-for", type=int, default=None, help="the pid of a --build-only run to wait for (no build)")
    ap.add_argument("--prebuilt", action="store_true", help="--build already holds test-backend-ops (no build)")
    ap.add_argument("--explore", action="store_true", help="first time builds of qmatvec_q8_1 (--variants)")
    ap.add_argument("--variants", default=",".join(EXPLORE_VARIANTS), help="--explore's EXPLORE_VARIANTS, by name")
    ap.add_argument("--baseline", type=Path, default=None, help="--explore: another qmatvec_q8.hip timed beside")
    ap.add_argument("--explore-only", action="store_true", help="--explore, then stop (no table, no ggml)")
    ap.add_argument(
        "--products-only",
        action="store_true",
        help="--explore: the products back to back, x quantized once before them (what its quantization costs)",
    )
    ap.add_argument("--render", type=Path, default=None, help="rewrite an earlier run's .json and .md as shipped")
    ap.add_argument("--ggml-rows", default=None, help="rows of x ggml runs, in this order (default: --rows)")
    ap.add_argument(
        "--ggml-from", type=Path, action="append", default=[], help="a .json of ggml's figures for rows not run here"
    )
    ap.add_argument(
        "--ggml-add",
        type=Path,
        action="append",
        default=[],
        help="a --ggml-only .json of this card: its runs join ours",
    )
    ap.add_argument("--ggml-only", type=Path, default=None, help="time ggml's --ggml-rows alone into this .json")
    ap.add_argument(
        "--tree", default=None, help="the opgen commit timed, for the table (default: this checkout's HEAD)"
    )
    args = ap.parse_args()
    if args.runs < 1 or args.ggml_runs < 1:
        ap.error("--runs and --ggml-runs take 1 or more")
    t0 = time.monotonic()
    if args.ggml_only:
        ggml_only(args, t0)
        return

    from runtime import ggml

    formats = args.formats.split(",") if args.formats else list(ggml.FORMATS)
    rows = [int(r) for r in args.rows.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    theirs = [f for f in formats if f not in ACTIVATION]
    if args.render:
        render(args, formats, rows)
        return
    if args.explore or args.explore_only:
        run_explore(args, formats, rows, t0)
        if args.explore_only:
            return
    if args.ggml is None:
        ap.error("--ggml is required but for --explore-only")
    if args.build_only:
        patch_ggml(args.ggml, theirs, args.ggml_seconds)
        with open(args.out / f"{args.name}-build.log", "w") as build_log:
            sys.exit(build_ggml(args.ggml, args.build, args.jobs, build_log).wait())
    log_path = args.out / f"{args.name}.log"
    log = open(log_path.with_suffix(".log.part"), "w")  # noqa: SIM115  (the build writes into it)
    stamp = args.ggml / "COMMIT"  # a copy without .git names its commit here
    commit = subprocess.run(["git", "-C", str(args.ggml), "rev-parse", "HEAD"], capture_output=True, text=True)
    ggml_commit = stamp.read_text().strip() if stamp.exists() else commit.stdout.strip()
    builder = None
    if args.wait_for is None and not args.prebuilt:
        patch_ggml(args.ggml, theirs, args.ggml_seconds)
        builder = build_ggml(args.ggml, args.build, args.jobs, log)

    if args.opgen_json:  # opgen's figures of an earlier run on this machine kind
        earlier = json.loads(args.opgen_json.read_text())
        copy, nmse, opgen_device = earlier["copy_gbs"], earlier["nmse"], earlier["device"]
        opgen, exact = (
            {(f, int(n), int(k), int(r)): v for key, v in earlier[part].items() for f, n, k, r in [key.split("/")]}
            for part in ("opgen_us", "opgen_exact_x_us")
        )
        nbytes = {f: 16384 * 16384 // ggml.FORMATS[f].block * ggml.FORMATS[f].nbytes for f in formats}
        order = earlier.get("opgen_order", EARLIER_ORDER)
    else:
        order = OPGEN_ORDER
        copy = copy_gbs()
        opgen, exact, nmse, nbytes = opgen_times(rows, formats, args.runs)
    print(f"opgen timed in {time.monotonic() - t0:.0f} s; copy {copy:.0f} GB/s", flush=True)
    if builder:
        built = builder.wait()
    elif args.prebuilt:
        built = 0 if any(args.build.rglob("test-backend-ops")) else 1
    else:
        built = _wait_for(args.wait_for, args.build)
    print(f"ggml built (rc {built}) at {time.monotonic() - t0:.0f} s", flush=True)
    ggml_us: dict = {}
    device = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True
    ).stdout.strip()
    if args.opgen_json and opgen_device != device:
        device = f"opgen on {opgen_device}, ggml on {device} (not the same card)"
    results = Results(args, device, ggml_commit, copy, opgen, exact, nmse, nbytes, formats, rows, order=order)
    results.write(ggml_us)  # opgen's figures are kept whatever happens to ggml's
    ggml_rows = [int(r) for r in args.ggml_rows.split(",")] if args.ggml_rows else rows
    if built == 0:
        ggml_us = ggml_passes(args, ggml_rows, theirs, log, t0, results.write)
    for path in args.ggml_from:
        ggml_us = results.with_earlier(ggml_us, path)
    for path in args.ggml_add:
        ggml_us = results.with_added(ggml_us, path)
    log.close()
    _keep_console(log_path, [*args.ggml_from, *args.ggml_add])
    print(results.write(ggml_us))


def _keep_console(path: Path, earlier: list[Path]) -> None:
    """NAME.log: this run's ggml console (build and passes); where ggml did not run here, the
    consoles of the earlier runs whose figures the table takes (each JSON's .log), else the log
    already there stays (an earlier run's that --ggml-from named)."""
    part = path.with_suffix(".log.part")
    if part.stat().st_size:
        part.replace(path)
        return
    part.unlink()
    consoles = [e.with_suffix(".log") for e in earlier if e.with_suffix(".log").exists()]
    if consoles:
        path.write_text("".join(f"# ggml's console of {c.name}\n{c.read_text()}" for c in consoles))


def run_explore(args: argparse.Namespace, formats, rows, t0: float) -> None:
    """--explore: the builds compiled in parallel, then timed, into NAME-explore.json."""
    variants = explore_variants(args.variants.split(","), args.baseline)
    warm_cache([v.path for v in variants])
    found, wrong = explore(variants, rows, args.runs, formats, args.products_only)
    (args.out / f"{args.name}-explore.json").write_text(
        json.dumps({"/".join(map(str, key)): v for key, v in found.items()}, indent=1) + "\n"
    )
    if wrong:
        (args.out / f"{args.name}-explore-wrong.json").write_text(
            json.dumps({"/".join(map(str, key)): v for key, v in wrong.items()}, indent=1) + "\n"
        )
    print(f"explored at {time.monotonic() - t0:.0f} s; {len(wrong)} products wrong", flush=True)


def ggml_only(args: argparse.Namespace, t0: float) -> None:
    """--ggml-only JSON: ggml's figures of --ggml-rows alone, --ggml-runs passes before --deadline
    (for a later run's --ggml-from)."""
    from runtime import ggml

    theirs = [f for f in (args.formats.split(",") if args.formats else ggml.FORMATS) if f not in ACTIVATION]
    rows = [int(r) for r in (args.ggml_rows or args.rows).split(",")]
    device = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True
    ).stdout.strip()

    def written(found: dict) -> None:
        record = {
            "device": device,
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "source": "the same call, before opgen's timings",
            "ggml_us": {"/".join(map(str, key)): v for key, v in found.items()},
        }
        args.ggml_only.write_text(json.dumps(record, indent=1) + "\n")

    with open(args.ggml_only.with_suffix(".log"), "w") as log:
        ggml_passes(args, rows, theirs, log, t0, written)


def _keyed(part: dict) -> dict:
    return {(f, int(n), int(k), int(r)): v for key, v in part.items() for f, n, k, r in [key.split("/")]}


def ggml_keyed(part: dict) -> dict:
    """A .json's "ggml_us", each cell's figures a list of runs (an older file's number: one run)."""
    return {key: as_runs(v) for key, v in _keyed(part).items()}


def as_shipped(opgen: dict, exact: dict) -> dict:
    """The quantized-x figures with the exact-x ones where QMatMul takes that kernel by default
    (runtime/gpu/quant.py exact_x_measured_faster, but not where the stream product takes the
    shape on a device with the bulk copy engine, as the tables' H100 and H200 have: stream_shape):
    what a run of this tree would time."""
    from runtime.gpu.quant import exact_x_measured_faster, stream_shape

    def exact_x(fmt: str, n: int, k: int, rows: int) -> bool:
        return exact_x_measured_faster(fmt, rows, n, k) and not stream_shape(fmt, rows, k)

    return {key: exact[key] if key in exact and exact_x(*key) else v for key, v in opgen.items()}


def _exact_rows() -> str:
    from runtime.gpu.quant import EXACT_X_FASTER, EXACT_X_SMALL, EXACT_X_SMALL_ELEMS

    small = ", ".join(f"{f} x{r}" for f, r in sorted(EXACT_X_SMALL))
    faster = ", ".join(f"{f} x{r}" + _where_not_streamed(f, r) for f, r in sorted(EXACT_X_FASTER))
    return faster + f"; {small} up to {EXACT_X_SMALL_ELEMS} weights"


def _where_not_streamed(fmt: str, rows: int) -> str:
    from runtime.gpu.quant import stream_shape

    return " where the stream product does not take it" if stream_shape(fmt, rows, 16384) else ""


def _first_rows(x_class: int) -> int:
    """The fewest rows of x of a class of x rows (runtime/gpu/quant.py x_rows_class)."""
    return {1: 1, 2: 2, 4: 3, 8: 5}[x_class]


def _float_path() -> str:
    from generated.kernel_facts import QMATVEC_Q8_MMA_F_FROM

    if not QMATVEC_Q8_MMA_F_FROM:
        return "f32 sums"
    return f"f32 sums; from {_first_rows(QMATVEC_Q8_MMA_F_FROM)} rows on the tensor cores, x as two tf32 parts"


def _block32_path() -> str:
    from generated.kernel_facts import QMATVEC_Q8_MMA_Q_FROM, QMATVEC_Q8_MMA_Q_N, QMATVEC_Q8_MMA_Q_X4_BLOCKS
    from runtime.gpu.quant import BLOCK32_BITS

    if not QMATVEC_Q8_MMA_Q_FROM:
        return ""
    early = [f for bit, f in enumerate(BLOCK32_BITS) if QMATVEC_Q8_MMA_Q_X4_BLOCKS >> bit & 1]
    first = _first_rows(QMATVEC_Q8_MMA_Q_FROM)
    others = f", the others from {first}" if len(early) < len(BLOCK32_BITS) else ""
    starts = f"{', '.join(early)} from 3{others}" if early and first > 3 else f"from {first}"
    return (
        f"; the blocks of 32 ({starts} rows) on weights of {QMATVEC_Q8_MMA_Q_N} rows "
        "and more on the tensor cores (int8 mma against x in q8_1)"
    )


def tree_of(args: argparse.Namespace) -> str | None:
    """The opgen commit timed: --tree, else this checkout's HEAD (a device's copy has no git: pass
    --tree there), else None."""
    if getattr(args, "tree", None):
        return args.tree
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        return None
    return head.stdout.strip() or None


def _tree_said(args: argparse.Namespace) -> str:
    tree = tree_of(args)
    return f", tree {tree}" if tree else ""


def render(args: argparse.Namespace, formats, rows) -> None:
    """An earlier run's .json (both paths and ggml's figures, one call) written again with the
    paths QMatMul takes now, as .md and .json in args.out."""
    from runtime import ggml

    earlier = json.loads(args.render.read_text())
    exact = _keyed(earlier["opgen_exact_x_us"])
    quantized = earlier.get("opgen_q8_1_us", earlier["opgen_us"])  # the run's quantized-x figures
    opgen = as_shipped(_keyed(quantized), exact)
    nbytes = {f: 16384 * 16384 // ggml.FORMATS[f].block * ggml.FORMATS[f].nbytes for f in formats}
    results = Results(
        args, earlier["device"], earlier["ggml_commit"], earlier["copy_gbs"], opgen, exact, earlier["nmse"], nbytes,
        formats, rows,
    )  # fmt: skip
    results.date = earlier.get("date", results.date)
    results.order = earlier.get("opgen_order", EARLIER_ORDER)
    print(results.write(ggml_keyed(earlier["ggml_us"])))
    path = args.out / f"{args.name}.json"
    record = json.loads(path.read_text())
    record["opgen_q8_1_us"] = quantized
    path.write_text(json.dumps(record, indent=1) + "\n")


@dataclass
class Results:
    """What one run measured, written as a table (.md) and as numbers (.json) in args.out."""

    args: argparse.Namespace
    device: str
    ggml_commit: str
    copy: float
    opgen: dict
    exact: dict
    nmse: dict
    nbytes: dict
    formats: list
    rows: list
    date: str = time.strftime("%Y-%m-%d", time.gmtime())
    note: str = ""
    order: str = OPGEN_ORDER  # how opgen's runs of a cell were taken

    def with_earlier(self, ggml_us: dict, path: Path) -> dict:
        """ggml's figures of this run, and an earlier run's (path) for the rows of x this run did
        not time, the header saying which rows came from where. A missing file (a --ggml-only run
        cut short before its first row) adds nothing."""
        if not path.exists():
            print(f"{path}: not there, no ggml figures taken from it", flush=True)
            return ggml_us
        earlier = json.loads(path.read_text())
        timed = {key[3] for key in ggml_us}
        kept = {key: v for key, v in ggml_keyed(earlier["ggml_us"]).items() if key[3] not in timed}
        if kept:
            rows = ", ".join(str(r) for r in sorted({key[3] for key in kept}))
            source = earlier.get("source", "an earlier call, the same ggml binary")
            self.note += f" ggml's rows of {rows}: {source} ({earlier['device']}, {earlier['date']})."
        return {**kept, **ggml_us}

    def with_added(self, ggml_us: dict, path: Path) -> dict:
        """ggml's figures with another call's runs (a --ggml-only .json of the same ggml binary) added
        to every cell both timed, and its cells this run did not time: passes of ggml's rows
        gathered over several calls, each too short for them all. A file from another card adds
        nothing (the header says so)."""
        if not path.exists():
            print(f"{path}: not there, no ggml runs added from it", flush=True)
            return ggml_us
        other = json.loads(path.read_text())
        if other["device"] != self.device:
            self.note += f" {path.name}: from {other['device']}, not this card: its runs are not added."
            return ggml_us
        added = ggml_keyed(other["ggml_us"])
        self.note += f" Runs of ggml added from {path.name} ({other.get('source', 'another call')}, {other['date']})."
        return {key: ggml_us.get(key, []) + added.get(key, []) for key in {*ggml_us, *added}}

    def write(self, ggml_us: dict) -> str:
        a = self.args
        head = (
            f"# opgen qmatvec beside ggml's CUDA MUL_MAT\n\n{self.device}, {self.date}{_tree_said(a)}; "
            f"ggml-org/ggml {self.ggml_commit}; opgen: {runs_said(self.opgen)} ({self.order}), each the median of "
            f"{REPEATS} graph launches of {LAUNCHES} products; ggml: {runs_said(ggml_us)} of test-backend-ops perf "
            f"(least {a.ggml_seconds} s a case). "
            f"Copy bandwidth {self.copy:.0f} GB/s. `(Nx)`: ggml's time over opgen's (>= 1: opgen as fast or "
            "faster); `-`: not measured (ggml has no MUL_MAT of q8_1 / q8_K weights). opgen's figure is the "
            "path QMatMul takes by default: x quantized to q8_1 (hip/qmatvec_q8.hip), but the exact-x kernel "
            f"(hip/quantized.hip) for {_exact_rows()}{_block32_path()}; f32 / f16 / bf16 weights multiply x itself "
            f"({_float_path()}).{self.note}\n\n"
        )
        text = head + table(self.opgen, ggml_us, self.nbytes, self.copy, self.formats, self.rows, self.exact) + "\n"
        met = cells_met(self.opgen, ggml_us, self.formats, self.rows)
        text += "\n" + met_line(met) + "\n"
        text += (
            "\nNMSE against f64 of the 4096 x 4096 products of 1 and 8 rows (the larger), default / exact x: "
            + ", ".join(f"{f} {v['default']:.1e} / {v['exact_x']:.1e}" for f, v in self.nmse.items())
        )
        (a.out / f"{a.name}.md").write_text(text + "\n")
        record = {
            "device": self.device,
            "date": self.date,
            "tree": tree_of(a),
            "ggml_commit": self.ggml_commit,
            "copy_gbs": self.copy,
            "opgen_order": self.order,
            "opgen_us": {"/".join(map(str, key)): v for key, v in self.opgen.items()},
            "opgen_exact_x_us": {"/".join(map(str, key)): v for key, v in self.exact.items()},
            "ggml_us": {"/".join(map(str, key)): v for key, v in ggml_us.items()},
            "cells_met": met,
            "nmse": self.nmse,
        }
        (a.out / f"{a.name}.json").write_text(json.dumps(record, indent=1) + "\n")
        return text


if __name__ == "__main__":
    main()
