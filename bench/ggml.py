"""opgen's quantized products beside ggml's own CUDA backend, on the same GPU, in one run.

Takes a ggml checkout (ggml-org/ggml) by path, adds the goal's shapes to its
`tests/test-backend-ops.cpp` perf cases, builds `test-backend-ops` for CUDA in the background
(cmake, nvcc), times opgen's qmatvec meanwhile, then runs
`test-backend-ops perf -o MUL_MAT -b CUDA0` on the same shapes and writes one table of both.

What is timed, on each side, for a weight W (n, k) in one GGML format and x of 1, 2, 4, 8 rows:
- ggml: its perf mode's µs per MUL_MAT (the same weight every run, a graph of many products;
  for the quantized types this includes its kernel that quantizes x to q8_1 first);
- opgen: the same weight every product, LAUNCHES products captured in a CUDA graph, launched as
  the runtime launches them (QStorage.matmul's kernel, grid and block), timed with CUDA events.
Copy bandwidth: torch's device-to-device copy (bytes read + written), for the share of it that
the weight's bytes per product reach at 16384 x 16384.

ggml's perf mode runs each case for at least one second; `--ggml-seconds` shortens that in the
patched copy (the average then comes from fewer graph launches, each still of many products).

    python3 bench/ggml.py --ggml PATH [--rows 1,2,4,8] [--formats q4_0,...] [--out DIR] [--runs N]
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
#: The activation formats: ggml multiplies no weight held in them (its test list leaves them out).
ACTIVATION = ("q8_1", "q8_k")


def ggml_type(fmt: str) -> str:
    return "GGML_TYPE_" + fmt.upper()


# --------------------------------------------------------------------------- ggml


def patch_ggml(src: Path, formats, seconds: float) -> None:
    """Adds the shapes ggml's perf list lacks to tests/test-backend-ops.cpp (once), and sets the
    perf mode's least time per case."""
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


def opgen_times(rows, formats, runs: int) -> tuple[dict, dict, dict]:
    """(format, n, k, rows) -> [µs per product] over `runs`; format -> NMSE of the 4096 x 4096
    one-row product against f64; format -> weight bytes at 16384 x 16384."""
    import numpy as np

    from generated import kernels_hip
    from runtime import ggml
    from runtime.gpu import quant as gpu_quant
    from runtime.layout import Layout

    rt = __import__("runtime.cuda", fromlist=["_rt"])._rt
    stream = rt.stream(0)
    rng = np.random.default_rng(0)
    times: dict = {}
    nmse, nbytes = {}, {}
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
                x = rng.standard_normal(k).astype(np.float32)
                table = kernels_hip.QSTORAGE["matmul"]
                got = rt.to_host(gpu_quant.q_matmul(rt, q, rt.from_host(0, x), Layout.contiguous((k,)), (n, k), table))
                w = ggml.dequantize(data, fmt, n * k).reshape(n, k).astype(np.float64)
                want = w @ x
                nmse[fmt] = float(np.sum((got - want) ** 2) / np.sum(want**2))
            for r in rows:
                x_buf = rt.from_host(0, rng.standard_normal(r * k).astype(np.float32))
                y = rt.alloc(0, r * n, np.dtype(np.float32))
                grid = gpu_quant._grid(rt, 0, -(-n // item_rows) * r)  # as QStorage.matmul launches it

                def product(q=q, x_buf=x_buf, y=y, grid=grid, n=n, k=k, r=r, launch=launch, threads=threads):
                    launch(rt.launch, grid, threads, stream, q.buf.ptr, x_buf.ptr, y.ptr, n, k, r)

                times[fmt, n, k, r] = [graph_us(product, stream.handle) for _ in range(runs)]
            del q
    return times, nmse, nbytes


# --------------------------------------------------------------------------- table


def table(opgen: dict, ggml_us: dict, nbytes: dict, copy: float, formats, rows) -> str:
    lines = [
        "| format | rows | "
        + " | ".join(f"{n}x{k} opgen / ggml (us)" for n, k in SHAPES)
        + " | 16384² share of copy |",
        "|---|---|" + "---|" * len(SHAPES) + "---|",
    ]
    for fmt in formats:
        for r in rows:
            cells = []
            for n, k in SHAPES:
                ours = statistics.median(opgen[fmt, n, k, r])
                theirs = ggml_us.get((fmt, n, k, r))
                if theirs is None:
                    cells.append(f"{ours:.1f} / -")
                else:
                    mark = "" if ours <= theirs else " **slower**"
                    cells.append(f"{ours:.1f} / {theirs:.1f} ({theirs / ours:.2f}x){mark}")
            share = nbytes[fmt] / (statistics.median(opgen[fmt, 16384, 16384, r]) * 1e-6) / 1e9 / copy
            lines.append(f"| {fmt} | {r} | " + " | ".join(cells) + f" | {share:.0%} |")
    return "\n".join(lines)


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
    ap.add_argument("--ggml", type=Path, required=True, help="a ggml checkout (ggml-org/ggml)")
    ap.add_argument("--build", type=Path, default=Path("/tmp/ggml-build"))
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--name", default="ggml-anchor")
    ap.add_argument("--formats", default=None, help="comma-separated; default: every format of ops.yaml")
    ap.add_argument("--rows", default="1,2,4,8")
    ap.add_argument("--runs", type=int, default=3, help="opgen's timings repeated (the median is shown)")
    ap.add_argument("--ggml-seconds", type=float, default=0.25, help="ggml perf mode's least time per case")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 8)
    ap.add_argument("--deadline", type=float, default=540, help="seconds from start after which ggml rows stop")
    ap.add_argument("--build-only", action="store_true", help="patch and build ggml, then stop")
    ap.add_argument("--opgen-json", type=Path, default=None, help="opgen's figures from an earlier run's .json")
    ap.add_argument("--wait-for", type=int, default=None, help="the pid of a --build-only run to wait for (no build)")
    args = ap.parse_args()
    t0 = time.monotonic()

    from runtime import ggml

    formats = args.formats.split(",") if args.formats else list(ggml.FORMATS)
    rows = [int(r) for r in args.rows.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    theirs = [f for f in formats if f not in ACTIVATION]
    if args.build_only:
        patch_ggml(args.ggml, theirs, args.ggml_seconds)
        with open(args.out / f"{args.name}-build.log", "w") as build_log:
            sys.exit(build_ggml(args.ggml, args.build, args.jobs, build_log).wait())
    log = open(args.out / f"{args.name}.log", "w")  # noqa: SIM115  (the build writes into it)
    stamp = args.ggml / "COMMIT"  # a copy without .git names its commit here
    commit = subprocess.run(["git", "-C", str(args.ggml), "rev-parse", "HEAD"], capture_output=True, text=True)
    ggml_commit = stamp.read_text().strip() if stamp.exists() else commit.stdout.strip()
    builder = None
    if args.wait_for is None:
        patch_ggml(args.ggml, theirs, args.ggml_seconds)
        builder = build_ggml(args.ggml, args.build, args.jobs, log)

    if args.opgen_json:  # opgen's figures of an earlier run on this machine kind
        earlier = json.loads(args.opgen_json.read_text())
        copy, nmse, opgen_device = earlier["copy_gbs"], earlier["nmse"], earlier["device"]
        opgen = {
            (f, int(n), int(k), int(r)): v for key, v in earlier["opgen_us"].items() for f, n, k, r in [key.split("/")]
        }
        nbytes = {f: 16384 * 16384 // ggml.FORMATS[f].block * ggml.FORMATS[f].nbytes for f in formats}
    else:
        copy = copy_gbs()
        opgen, nmse, nbytes = opgen_times(rows, formats, args.runs)
    print(f"opgen timed in {time.monotonic() - t0:.0f} s; copy {copy:.0f} GB/s", flush=True)
    built = builder.wait() if builder else _wait_for(args.wait_for, args.build)
    print(f"ggml built (rc {built}) at {time.monotonic() - t0:.0f} s", flush=True)
    ggml_us: dict = {}
    device = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True
    ).stdout.strip()
    if args.opgen_json and opgen_device != device:
        device = f"opgen on {opgen_device}, ggml on {device} (not the same card)"
    results = Results(args, device, ggml_commit, copy, opgen, nmse, nbytes, formats, rows)
    results.write(ggml_us)  # opgen's figures are kept whatever happens to ggml's
    for r in rows if built == 0 else ():
        if time.monotonic() - t0 > args.deadline:
            print(f"deadline: ggml rows {r}.. not run", flush=True)
            break
        ggml_us.update(ggml_times(args.build, [r], theirs, log))
        print(f"ggml rows={r} at {time.monotonic() - t0:.0f} s", flush=True)
        results.write(ggml_us)
    print(results.write(ggml_us))


@dataclass
class Results:
    """What one run measured, written as a table (.md) and as numbers (.json) in args.out."""

    args: argparse.Namespace
    device: str
    ggml_commit: str
    copy: float
    opgen: dict
    nmse: dict
    nbytes: dict
    formats: list
    rows: list

    def write(self, ggml_us: dict) -> str:
        a = self.args
        head = (
            f"# opgen qmatvec beside ggml's CUDA MUL_MAT\n\n{self.device}, {time.strftime('%Y-%m-%d', time.gmtime())}; "
            f"ggml-org/ggml {self.ggml_commit}; opgen: the median of {a.runs} runs, each the median of {REPEATS} "
            f"graph launches of {LAUNCHES} products; ggml: test-backend-ops perf (least {a.ggml_seconds} s a case). "
            f"Copy bandwidth {self.copy:.0f} GB/s. `(Nx)`: ggml's time over opgen's (>= 1: opgen as fast or "
            "faster); `-`: not measured (ggml has no MUL_MAT of q8_1 / q8_K weights).\n\n"
        )
        text = head + table(self.opgen, ggml_us, self.nbytes, self.copy, self.formats, self.rows) + "\n"
        text += "\nNMSE of opgen's product (4096 x 4096, one row) against f64: " + ", ".join(
            f"{f} {v:.1e}" for f, v in self.nmse.items()
        )
        (a.out / f"{a.name}.md").write_text(text + "\n")
        record = {
            "device": self.device,
            "ggml_commit": self.ggml_commit,
            "copy_gbs": self.copy,
            "opgen_us": {"/".join(map(str, key)): v for key, v in self.opgen.items()},
            "ggml_us": {"/".join(map(str, key)): v for key, v in ggml_us.items()},
            "nmse": self.nmse,
        }
        (a.out / f"{a.name}.json").write_text(json.dumps(record, indent=1) + "\n")
        return text


if __name__ == "__main__":
    main()
