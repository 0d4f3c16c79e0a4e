"""The generated dtype checks compare the runtime's dtype objects first and map them to
registry dtypes only when they are not the same object. Dtypes that are equal but distinct
objects (numpy dtypes carrying metadata) must still count as the same dtype, and different
dtypes must still raise DTypeMismatch, for every binary and cmp op and every declared dtype."""

from __future__ import annotations

import numpy as np
import pytest

from generated import BinaryOp, CmpOp, DTypeMismatch, Layout, Storage
from generated.backends import Backend

from .conftest import REGISTRY, expand
from .refs import NP

LAYOUT = Layout.contiguous((6,))
CASES = [
    (family, op, dt)
    for family in ("binary", "cmp")
    for op, spec in REGISTRY[family].items()
    for dt in expand(spec.get("dtypes"))
]


def _storages(dt: str, rng) -> tuple[np.ndarray, np.ndarray]:
    x = (rng.random(6) * 4 + 1).astype(NP[dt])
    y = (rng.random(6) * 4 + 1).astype(NP[dt])
    return x, y


@pytest.mark.parametrize(("family", "op", "dt"), CASES)
def test_equal_dtype_objects_that_are_not_identical_agree(family, op, dt):
    rng = np.random.default_rng(abs(hash((family, op, dt))) % 2**32)
    x, y = _storages(dt, rng)
    tagged = np.dtype(NP[dt], metadata={"origin": "test"})
    y_tagged = y.view(tagged)
    assert y_tagged.dtype == y.dtype and y_tagged.dtype is not y.dtype
    member = {"binary": BinaryOp, "cmp": CmpOp}[family](op)
    method = getattr(Storage, family)
    sx = Storage(Backend.CPU, x)
    want = method(sx, member, Storage(Backend.CPU, y), LAYOUT, LAYOUT).inner
    got = method(sx, member, Storage(Backend.CPU, y_tagged), LAYOUT, LAYOUT).inner
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize(("family", "op", "dt"), CASES)
def test_different_dtypes_raise(family, op, dt):
    other = next(d for d in expand(None) if d != dt)
    rng = np.random.default_rng(0)
    x, _ = _storages(dt, rng)
    _, y = _storages(other, rng)
    member = {"binary": BinaryOp, "cmp": CmpOp}[family](op)
    with pytest.raises(DTypeMismatch, match=f"^{family} on cpu: expected dtype {dt}, got {other}$"):
        getattr(Storage, family)(Storage(Backend.CPU, x), member, Storage(Backend.CPU, y), LAYOUT, LAYOUT)
