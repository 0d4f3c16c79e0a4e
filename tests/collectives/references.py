"""numpy references of the collectives: every rank's inputs from seeds every rank knows, the
reductions over ranks, and the tolerance of each dtype."""

from __future__ import annotations

import zlib
from pathlib import Path

import ml_dtypes
import numpy as np
import yaml

REGISTRY = yaml.safe_load((Path(__file__).resolve().parents[2] / "ops.yaml").read_text())
_NUMPY = {name: spec["numpy"] for name, spec in REGISTRY["dtypes"].items()}
_KIND = {name: spec["kind"] for name, spec in REGISTRY["dtypes"].items()}


def np_dtype(dtype: str) -> np.dtype:
    name = _NUMPY[dtype]
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def inputs(op: str, dtype: str, count: int, rank: int, reduction: str = "sum") -> np.ndarray:
    """Rank `rank`'s input: small values, so that no sum or product over 8 ranks overflows."""
    rng = np.random.default_rng(zlib.crc32(f"{op}/{dtype}/{count}/{rank}/{reduction}".encode()))
    if _KIND[dtype] == "float":
        low, high = (0.5, 1.5) if reduction == "prod" else (-2.0, 2.0)
        return rng.uniform(low, high, count).astype(np_dtype(dtype))
    low, high = (1, 3) if reduction == "prod" else (0, 20)
    return rng.integers(low, high, count).astype(np_dtype(dtype))


def reduce_ref(xs: list[np.ndarray], reduction: str) -> np.ndarray:
    """The reduction over ranks, computed in f32 for 16-bit floats, rounded to the dtype once."""
    dtype = xs[0].dtype
    wide = np.float32 if dtype.itemsize == 2 and dtype.kind != "u" else dtype
    stack = np.stack([x.astype(wide) for x in xs]) if xs[0].size else np.zeros((len(xs), 0), wide)
    match reduction:
        case "sum":
            out = stack.sum(axis=0, dtype=wide)
        case "prod":
            out = stack.prod(axis=0, dtype=wide)
        case "min":
            out = stack.min(axis=0, initial=None) if stack.shape[1] else stack[0]
        case "max":
            out = stack.max(axis=0) if stack.shape[1] else stack[0]
        case "avg":
            out = stack.sum(axis=0, dtype=wide) / len(xs)
        case _:
            raise ValueError(reduction)
    return np.asarray(out).astype(dtype)


def tolerance(dtype: str) -> tuple[float, float]:
    """(rtol, atol): exact for integers; GPU engines reduce 16-bit floats in their own type,
    step by step, so those get their type's rounding over a few steps."""
    return {"f16": (1e-2, 1e-2), "bf16": (4e-2, 4e-2), "f32": (1e-5, 1e-5), "f64": (1e-12, 1e-12)}.get(dtype, (0, 0))
