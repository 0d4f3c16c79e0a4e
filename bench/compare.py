"""opgen beside torch in one process: putting the same arrays on both, checking opgen's result
against torch's (or the cpu backend's) before any figure, and the rows of a pair timed in turn.
A wrong fast result is not a result: every GPU row's check is a row of its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from bench.timing import device_seconds, timed_pair


def to_torch(array: np.ndarray) -> Any:
    """The array on the GPU as a torch tensor (bf16 through its bits: torch reads no ml_dtypes)."""
    import ml_dtypes
    import torch

    if array.dtype == np.dtype(ml_dtypes.bfloat16):
        return torch.from_numpy(array.view(np.uint16)).cuda().view(torch.bfloat16)
    return torch.from_numpy(array).cuda()


def check(rows: dict, name: str, got: np.ndarray, want: np.ndarray, rel: float | None = None) -> None:
    """The row `name: check`: "exact" (rel None: the same shape and values) or the relative
    error by the 2-norm, MISMATCH where it is not below `rel`."""
    if rel is None:
        ok = got.shape == want.shape and np.array_equal(got, want)
        rows[f"{name}: check"] = "exact" if ok else "MISMATCH"
    else:
        err = float(np.linalg.norm((got - want).astype(np.float64)) / np.linalg.norm(want.astype(np.float64)))
        rows[f"{name}: check"] = f"rel err {err:.2e}" + ("" if err < rel else " MISMATCH")


def max_difference(ours: np.ndarray, theirs: Any) -> float:
    """max |a - b| of an opgen result (numpy) and a torch one."""
    return float(np.abs(ours.astype(np.float64) - theirs.float().cpu().numpy().astype(np.float64)).max())


def pair(
    rows: dict,
    name: str,
    ours: Callable[[], Any],
    theirs: Callable[[], Any],
    sync: Callable[[], Any],
    tsync: Callable[[], Any],
    unit_work: float | None = None,
    unit: str = "",
    repeats: int = 10,
) -> None:
    """Time both, their samples in turn (a pair timed one after the other once read a conv1d
    2.25x slower in one run of three, its device time unchanged); rows: each's ms, opgen / torch
    (time ratio, lower is better), opgen's device time, and the work rate where `unit_work`
    (units per call) is given."""
    t_ours, t_torch = timed_pair(ours, sync, theirs, tsync, repeats=repeats)
    rows[f"{name}: opgen (ms)"] = t_ours * 1e3
    rows[f"{name}: torch (ms)"] = t_torch * 1e3
    rows[f"{name}: opgen time / torch time"] = t_ours / t_torch
    rows[f"{name}: opgen, device time only (ms)"] = device_seconds(ours, repeats=repeats) * 1e3
    if unit_work:
        rows[f"{name}: opgen ({unit})"] = unit_work / t_ours
        rows[f"{name}: torch ({unit})"] = unit_work / t_torch


class FastPathChecks:
    """The GPU fast paths against the cpu backend on shapes larger than the conformance suite's:
    `compare` records each result, `data` makes inputs, `row` writes the summary row (and the
    first failures)."""

    TOLERANCE = {"bf16": 2e-2, "f16": 2e-3, "f32": 1e-5, "f64": 1e-12}  # others: exact

    def __init__(self, seed: int = 11) -> None:
        self.rng = np.random.default_rng(seed)
        self.failures: list[str] = []
        self.count = 0

    def compare(self, what: str, got: np.ndarray, want: np.ndarray, dtype: str) -> None:
        self.count += 1
        tol = self.TOLERANCE.get(dtype)
        try:
            assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape, got.dtype, want.dtype)
            if tol is None:  # exact; NaN equals NaN (also for bf16, which numpy compares as an opaque type)
                if want.dtype.kind not in "iu":
                    got, want = got.astype(np.float64), want.astype(np.float64)
                np.testing.assert_array_equal(got, want)
            else:
                np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol)
        except AssertionError as exc:
            self.failures.append(f"{what}: {str(exc).strip().splitlines()[0][:200]}")

    def data(self, dtype: str, shape, *, ties: bool = False, nans: bool = False, positive: bool = False) -> np.ndarray:
        import generated as g

        dt = g.DType(dtype)
        n = int(np.prod(shape))
        if ties or dt.kind != "float":
            hi = 6 if dtype == "u8" else 50
            x = self.rng.integers(0 if dt.kind == "uint" or positive else -hi, hi, n)
        else:
            x = self.rng.uniform(0 if positive else -3, 3, n)
        x = x.astype(dt.numpy)
        if nans and dt.kind == "float":
            x[self.rng.integers(0, n, 3)] = np.nan
        return x.reshape(shape)

    def row(self, rows: dict) -> None:
        rows["self-checks of the fast paths (cuda against cpu)"] = (
            f"{self.count - len(self.failures)} of {self.count} passed"
        )
        for failure in self.failures[:20]:
            rows[f"check FAILED: {failure}"] = "failed"
