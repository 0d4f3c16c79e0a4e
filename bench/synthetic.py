"""A synthetic registry the size of PyTorch's native_functions.yaml (2,584 ops), for
timing generation. Written beside copies of the project's runtime/ and hip/ so it validates."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
N_OPS = 2584
UNARY_EXPRS = ["np.exp(x)", "np.tanh(x) * x", "x * x + 1", "np.sqrt(np.abs(x))", "np.maximum(x, 0)"]
BINARY_EXPRS = ["x + y", "x * y - y", "np.maximum(x, y)", "np.hypot(x, y)"]
PARAM_TYPES = ["Layout", "Storage", "float", "int", "Dims", "Pair", "DType", "Scalar"]


def registry(n_ops: int = N_OPS, seed: int = 0, hip: bool = True, rust: bool = False) -> dict:
    """`hip=False` keeps only the backends that need no HIP kernels (cpu), so no kernel
    source or launch wrappers are generated: the generator's core alone. `rust=True` adds the
    rust target (Candle's dispatch and launch wrappers in generated/rust) beside the package."""
    rng = random.Random(seed)
    base = yaml.safe_load((ROOT / "ops.yaml").read_text())
    if not hip:
        base["backends"] = {n: b for n, b in base["backends"].items() if b.get("kernels") != "hip"}
    counts = {"unary": n_ops * 4 // 10, "binary": n_ops * 2 // 10, "cmp": n_ops // 20, "reduce": n_ops // 20}
    # The shipped sections that are not synthesized count towards n_ops as they are.
    kept = ("device", "nn", "qstorage")
    counts["storage"] = n_ops - sum(counts.values()) - sum(len(base[k]) for k in kept)
    out = {k: base[k] for k in ("version", "dtypes", "dtype_sets", "backends", "custom_ops", "quantized", *kept)}
    if hip:
        out["kernel_facts"] = base["kernel_facts"]
    for family, exprs in (
        ("unary", UNARY_EXPRS),
        ("binary", BINARY_EXPRS),
        ("cmp", ["x < y", "x == y"]),
        ("reduce", ["np.sum(x, axis=-1)"]),
    ):
        out[family] = {
            f"{family}_op_{i}": {"numpy": rng.choice(exprs), "hip": "x", "dtypes": rng.choice(["float", "all"])}
            for i in range(counts[family])
        }
        if family in ("unary", "cmp", "reduce"):  # integer dtypes need expressions that numpy takes
            for spec in out[family].values():
                spec["dtypes"] = "float"
    storage = {name: dict(spec) for name, spec in base["storage"].items()}
    if not hip:  # no HIP kernel sources to name
        for section in (storage, out["nn"], out["qstorage"]):
            for spec in section.values():
                spec.pop("kernel", None)
    for i in range(counts["storage"] - len(storage)):
        params = {"layout": "Layout"}
        for j in range(rng.randint(0, 5)):
            params[f"arg{j}"] = rng.choice(PARAM_TYPES)
        storage[f"storage_op_{i}"] = {"params": params, "returns": rng.choice(["Storage", "None"])}
    out["storage"] = storage
    if rust:
        out["targets"] = {"python": {"out": "generated"}, "rust": {"out": "generated/rust"}}
    return out


def write(directory: Path, n_ops: int = N_OPS, hip: bool = True, rust: bool = False) -> Path:
    """Write the registry and copies of runtime/ and hip/ into `directory`; return the
    registry path."""
    directory.mkdir(parents=True, exist_ok=True)
    for part in ("runtime", "hip"):
        shutil.copytree(ROOT / part, directory / part, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__"))
    path = directory / "ops.yaml"
    path.write_text(yaml.safe_dump(registry(n_ops, hip=hip, rust=rust), sort_keys=False, width=120))
    return path


if __name__ == "__main__":
    import sys

    print(write(Path(sys.argv[1])))
