"""opgen's QMatMul and ggml's own CUDA MUL_MAT on the same weights and the same x: how far apart
their results are, beside each one's error against the f64 product.

ggml is a build of ggml-org/ggml (as bench/ggml.py builds it: `--lib` is the build's `src`
folder, with libggml-base and ggml-cuda/libggml-cuda), called through ctypes: a context of
three tensors, W in the format's blocks, x in f32, `ggml_mul_mat`, one graph on the CUDA
backend. opgen multiplies the same bytes (`Device.qstorage_from_bytes`) by the same x through
the public `QStorage.matmul`, on its default path (x quantized to q8_1 on the device, as ggml
does) and with `set_qmatmul_exact_x` on.

Figures, per format and rows of x: the normalized mean squared error (sum (a - b)^2 / sum b^2)
of ggml, of opgen's default and of opgen's exact-x product against f64, and of opgen's
default against ggml. ggml's own test bound (test-backend-ops) is 5e-4.

    python3 bench/ggml_agree.py --lib /tmp/ggml-build/src [--out DIR] [--n 4096 --k 4096]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ROWS = (1, 2, 4, 8, 32)
BOUND = 5e-4  # test-backend-ops' NMSE bound for MUL_MAT
#: Formats ggml holds no weight in (its MUL_MAT takes none): only opgen's side could run.
ACTIVATION = ("q8_1", "q8_k")
#: ggml.h's GGML_TYPE_COUNT (ggml_type_name reads past its table beyond it).
TYPE_COUNT = 43
FIGURES = ("ggml_vs_f64", "opgen_vs_f64", "opgen_exact_x_vs_f64", "opgen_vs_ggml")


class InitParams(ctypes.Structure):
    """ggml.h's struct ggml_init_params."""

    _fields_ = [("mem_size", ctypes.c_size_t), ("mem_buffer", ctypes.c_void_p), ("no_alloc", ctypes.c_bool)]


#: backend -> (its library under a build's src folder, its init function, that function's arguments)
BACKENDS = {
    "cuda": ("ggml-cuda/libggml-cuda.so", "ggml_backend_cuda_init", (0,)),
    "cpu": ("libggml-cpu.so", "ggml_backend_cpu_init", ()),
}


class Ggml:
    """The few ggml calls one product needs, with their C signatures, on one of ggml's backends
    (cuda for the figures; cpu to check these bindings where no GPU is)."""

    def __init__(self, lib: Path, backend: str = "cuda") -> None:
        self.calls: dict[str, Any] = {}
        self.base = ctypes.CDLL(str(lib / "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
        library, init, init_args = BACKENDS[backend]
        self.backend_lib = ctypes.CDLL(str(lib / library), mode=ctypes.RTLD_GLOBAL)
        p, i, i64, size = ctypes.c_void_p, ctypes.c_int, ctypes.c_int64, ctypes.c_size_t
        signatures = {
            "ggml_init": (p, [InitParams]),
            "ggml_free": (None, [p]),
            "ggml_tensor_overhead": (size, []),
            "ggml_graph_overhead": (size, []),
            "ggml_type_name": (ctypes.c_char_p, [i]),
            "ggml_new_tensor_2d": (p, [p, i, i64, i64]),
            "ggml_nbytes": (size, [p]),
            "ggml_mul_mat": (p, [p, p, p]),
            "ggml_new_graph": (p, [p]),
            "ggml_build_forward_expand": (None, [p, p]),
            "ggml_backend_alloc_ctx_tensors": (p, [p, p]),
            "ggml_backend_tensor_set": (None, [p, p, size, size]),
            "ggml_backend_tensor_get": (None, [p, p, size, size]),
            "ggml_backend_graph_compute": (i, [p, p]),
            "ggml_backend_buffer_free": (None, [p]),
            "ggml_backend_free": (None, [p]),
        }
        for name, (restype, argtypes) in signatures.items():
            fn = getattr(self.base, name)
            fn.restype, fn.argtypes = restype, argtypes
            self.calls[name] = fn
        start = getattr(self.backend_lib, init)
        start.restype, start.argtypes = p, [i] * len(init_args)
        self.backend = start(*init_args)
        if not self.backend:
            raise RuntimeError(f"{init}{init_args} failed")
        self.types = {self.ggml_type_name(t).decode().lower(): t for t in range(TYPE_COUNT)}

    def __getattr__(self, name: str) -> Any:  # the C functions, by their names
        return self.__dict__["calls"][name]

    def mul_mat(self, w: np.ndarray, fmt: str, n: int, k: int, x: np.ndarray) -> np.ndarray:
        """y (rows, n) = x (rows, k) @ W^T, W (n, k) held as the bytes `w` of `fmt`."""
        rows = x.shape[0]
        ctx = self.ggml_init(InitParams(4 * self.ggml_tensor_overhead() + self.ggml_graph_overhead(), None, True))
        try:
            a = self.ggml_new_tensor_2d(ctx, self.types[fmt], k, n)  # ggml's ne0 is the inner dimension
            b = self.ggml_new_tensor_2d(ctx, self.types["f32"], k, rows)
            c = self.ggml_mul_mat(ctx, a, b)
            graph = self.ggml_new_graph(ctx)
            self.ggml_build_forward_expand(graph, c)
            buffer = self.ggml_backend_alloc_ctx_tensors(ctx, self.backend)
            try:
                if self.ggml_nbytes(a) != w.nbytes:
                    raise ValueError(f"{fmt}: ggml holds {self.ggml_nbytes(a)} bytes, opgen {w.nbytes}")
                self.ggml_backend_tensor_set(a, w.ctypes.data, 0, w.nbytes)
                xc = np.ascontiguousarray(x, np.float32)
                self.ggml_backend_tensor_set(b, xc.ctypes.data, 0, xc.nbytes)
                status = self.ggml_backend_graph_compute(self.backend, graph)
                if status != 0:
                    raise RuntimeError(f"ggml_backend_graph_compute: status {status}")
                y = np.empty((rows, n), np.float32)
                self.ggml_backend_tensor_get(c, y.ctypes.data, 0, y.nbytes)
                return y
            finally:
                self.ggml_backend_buffer_free(buffer)
        finally:
            self.ggml_free(ctx)


def nmse(got: np.ndarray, want: np.ndarray) -> float:
    """sum (got - want)^2 / sum want^2, in f64."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    return float(((got - want) ** 2).sum() / (want**2).sum())


def cases(n: int, k: int, rows, seed: int):
    """(format, W's bytes, {rows: x}) of every format ggml multiplies: the same for any seed in
    both processes (runtime.ggml's host quantizers, no GPU)."""
    from runtime import ggml as formats

    rng = np.random.default_rng(seed)
    for fmt in formats.FORMATS:
        if fmt in ACTIVATION:
            continue
        data = formats.quantize(rng.standard_normal(n * k).astype(np.float32), fmt)
        yield fmt, data, {r: rng.standard_normal((r, k)).astype(np.float32) for r in rows}


def ggml_products(lib: Path, backend: str, n: int, k: int, rows, seed: int, out: Path) -> None:
    """ggml's products of cases() into the .npz `out`, keys 'format/rows'. Run in a process of its
    own: ggml's CUDA backend brings its own cuBLAS, which must not meet opgen's in one process."""
    ggml = Ggml(lib, backend)
    products = {
        f"{fmt}/{r}": ggml.mul_mat(data, fmt, n, k, x)
        for fmt, data, xs in cases(n, k, rows, seed)
        for r, x in xs.items()
    }
    np.savez(out, **products)  # type: ignore[arg-type]  # numpy's stub takes the keywords for allow_pickle


def agreement(theirs: dict, device: str, n: int, k: int, rows, seed: int) -> dict:
    """format -> rows -> the four NMSE figures (module docstring), ggml's products given."""
    import generated as g
    from generated import switches
    from runtime import ggml as formats

    dev = g.Device.parse(device)
    exact_x_ways = (False, True) if device != "cpu" else (False,)  # the cpu always keeps x exact
    found: dict = {}
    for fmt, data, xs in cases(n, k, rows, seed):
        w64 = formats.dequantize(data, fmt, n * k).reshape(n, k).astype(np.float64)
        q = dev.qstorage_from_bytes(data, g.GgmlDType(fmt))
        found[fmt] = {}
        for r, x in xs.items():
            exact = x.astype(np.float64) @ w64.T
            ours = {}
            for exact_x in exact_x_ways:
                if device != "cpu":
                    switches.set_qmatmul_exact_x(dev.backend, exact_x)
                y = q.matmul(dev.storage_from_slice(x), g.Layout.contiguous((r, k)), (n, k))
                ours[exact_x] = g.to_vec2(y, g.Layout.contiguous((r, n)))
            if device != "cpu":
                switches.set_qmatmul_exact_x(dev.backend, False)
            ours.setdefault(True, ours[False])
            ggml_y = theirs[f"{fmt}/{r}"]
            found[fmt][r] = {
                "ggml_vs_f64": nmse(ggml_y, exact),
                "opgen_vs_f64": nmse(ours[False], exact),
                "opgen_exact_x_vs_f64": nmse(ours[True], exact),
                "opgen_vs_ggml": nmse(ours[False], ggml_y),
            }
    return found


def table(found: dict, device: str, ggml_commit: str, n: int, k: int) -> str:
    lines = [
        "# opgen's QMatMul beside ggml's CUDA MUL_MAT: the same weights, the same x",
        "",
        f"{device}; ggml-org/ggml {ggml_commit}; W {n} x {k} of standard normal values quantized by",
        "opgen (GGML's reference bytes), x standard normal; NMSE = sum (a - b)^2 / sum b^2;",
        f"test-backend-ops' bound {BOUND:g}. opgen: its default path (x in q8_1, or the exact-x kernel",
        "where it is faster) and with `set_qmatmul_exact_x` on.",
        "",
        "| format | rows | ggml vs f64 | opgen vs f64 | opgen exact x vs f64 | opgen vs ggml |",
        "|---|---|---|---|---|---|",
    ]
    for fmt, by_rows in found.items():
        for r, f in by_rows.items():
            cells = [f"{f[key]:.2e}" for key in FIGURES]
            lines.append(f"| {fmt} | {r} | " + " | ".join(cells) + " |")
    worst = max(f["opgen_vs_ggml"] for by_rows in found.values() for f in by_rows.values())
    verdict = "met" if worst <= BOUND else "NOT met"
    lines += ["", f"Largest opgen-vs-ggml NMSE: {worst:.2e} (bound {BOUND:g}: {verdict})."]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", type=Path, required=True, help="a ggml build's src folder (libggml-base.so ...)")
    ap.add_argument("--commit", default="unknown", help="the ggml commit the build is of")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    ap.add_argument("--name", default="ggml-agree")
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--rows", default=",".join(map(str, ROWS)))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--backend", choices=sorted(BACKENDS), default="cuda", help="ggml's backend and opgen's device")
    ap.add_argument("--ggml-products", type=Path, default=None, help=argparse.SUPPRESS)  # the child's .npz
    args = ap.parse_args()
    rows = [int(r) for r in args.rows.split(",")]
    if args.ggml_products:
        ggml_products(args.lib, args.backend, args.n, args.k, rows, args.seed, args.ggml_products)
        return
    with tempfile.TemporaryDirectory() as tmp:
        npz = Path(tmp) / "ggml.npz"
        child = [sys.executable, __file__, *sys.argv[1:], "--ggml-products", str(npz)]
        subprocess.run(child, check=True)
        with np.load(npz) as theirs:
            found = agreement(dict(theirs), args.backend, args.n, args.k, rows, args.seed)
    device = "cpu (ggml's cpu backend)"
    if args.backend == "cuda":
        device = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True
        ).stdout.strip()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(
        json.dumps({"device": device, "ggml": args.commit, "n": args.n, "k": args.k, "nmse": found}, indent=1) + "\n"
    )
    text = table(found, device, args.commit, args.n, args.k)
    (args.out / f"{args.name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
