"""bench/ggml_agree.py's host side: both processes see the same cases from one seed, the figures
are what their formula says, and the table's verdict follows the bound."""

from __future__ import annotations

import numpy as np

from bench import ggml_agree as bench


def test_the_cases_are_the_same_for_one_seed_and_cover_every_format_ggml_multiplies():
    first = list(bench.cases(4, 256, (1, 3), seed=5))
    again = list(bench.cases(4, 256, (1, 3), seed=5))
    other = list(bench.cases(4, 256, (1, 3), seed=6))
    assert [fmt for fmt, _, _ in first] == [fmt for fmt, _, _ in again]
    assert not {fmt for fmt, _, _ in first} & set(bench.ACTIVATION)
    assert len(first) == 13  # Candle's 15 formats less the two activation formats
    for (fmt, data, xs), (_, data2, xs2) in zip(first, again, strict=True):
        np.testing.assert_array_equal(data, data2, err_msg=fmt)
        assert sorted(xs) == [1, 3] and all(xs[r].shape == (r, 256) for r in xs)
        assert all(np.array_equal(xs[r], xs2[r]) for r in xs)
    assert not np.array_equal(first[0][1], other[0][1])


def test_nmse_is_the_squared_error_over_the_reference_energy():
    want = np.array([[3.0, 4.0]])
    assert bench.nmse(want, want) == 0.0
    assert bench.nmse(np.array([[3.0, 3.0]]), want) == 1.0 / 25.0


def test_the_verdict_follows_the_bound():
    figures = dict.fromkeys(bench.FIGURES, 1e-5)
    assert "(bound 0.0005: met)" in bench.table({"q4_0": {1: figures}}, "a GPU", "abc", 8, 32)
    over = {**figures, "opgen_vs_ggml": 2 * bench.BOUND}
    text = bench.table({"q4_0": {1: figures, 8: over}}, "a GPU", "abc", 8, 32)
    assert "NOT met" in text and "| q4_0 | 8 | 1.00e-05 | 1.00e-05 | 1.00e-05 | 1.00e-03 |" in text
