"""bench/ggml.py's host side: the cases it adds to ggml's perf list, how it reads ggml's
perf lines, and the table of both."""

from __future__ import annotations

import io
import subprocess
from types import SimpleNamespace

from bench import ggml as bench

PERF_HEAD = (
    "static std::vector<std::unique_ptr<test_case>> make_test_cases_perf() {\n"
    "    std::vector<std::unique_ptr<test_case>> test_cases;\n"
    "    test_cases.emplace_back(new test_mul_mat(type_a, type_b, 4096, bs, 14336, {1,  1}, {1, 1}));\n"
    "    return test_cases;\n}\n"
    "        } while (total_time_us < 1000*1000); // run for at least 1 second\n"
)


def test_patch_adds_the_shapes_once_and_sets_the_least_time(tmp_path):
    (tmp_path / "tests").mkdir()
    source = tmp_path / "tests" / "test-backend-ops.cpp"
    source.write_text(PERF_HEAD)
    for _ in range(2):
        bench.patch_ggml(tmp_path, ["q4_0", "q5_k"], 0.25)
    text = source.read_text()
    assert text.count(bench.MARKER) == 1
    assert "{GGML_TYPE_Q4_0, GGML_TYPE_Q5_K}" in text
    assert "{16384, 16384}, {14336, 4096}, {4096, 4096}" in text  # 4096 x 14336 is ggml's own case
    assert text.index(bench.MARKER) < text.index("4096, bs, 14336")
    assert "while (total_time_us < 250000);" in text and "1000*1000" not in text


def test_ggml_lines_become_cells(tmp_path, monkeypatch):
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "test-backend-ops").write_text("")
    lines = [
        "  MUL_MAT(type_a=q5_K,type_b=f32,m=4096,n=1,k=14336,bs=[1,1],nr=[1,1],per=[0,1,2,3],k_v=0,o=1):"
        "        18780 runs -    19.30 us/run -  117.44 MFLOP/run -   6.08 TFLOPS",
        "  MUL_MAT(type_a=q4_0,type_b=f32,m=16384,n=1,k=16384,bs=[1,1],nr=[1,1],per=[0,1,2,3],k_v=0,o=1):"
        "          939 runs -    54.10 us/run -    1.07 GFLOP/run -  19.86 TFLOPS",
        "  MUL_MAT(type_a=q4_0,type_b=f32,m=128,n=1,k=16384,bs=[1,1],nr=[1,1],per=[0,1,2,3],k_v=0,o=1):"
        "          939 runs -     3.00 us/run -    1.07 GFLOP/run -  19.86 TFLOPS",  # not a goal shape
        "  MUL_MAT(type_a=q6_K,type_b=f32,m=4096,n=1,k=4096,bs=[1,1],nr=[1,1],per=[0,1,2,3],k_v=0,o=1): not supported",
    ]
    calls = []

    def run(args, **kwargs):
        calls.append(args)
        return subprocess.CompletedProcess(args, 0, stdout="\n".join(lines), stderr="")

    monkeypatch.setattr(bench.subprocess, "run", run)
    got = bench.ggml_times(tmp_path, [1], ["q4_0", "q5_k", "q6_k"], io.StringIO())
    assert got == {("q5_k", 4096, 14336, 1): 19.30, ("q4_0", 16384, 16384, 1): 54.10}
    assert "type_a=(q4_0|q5_K|q6_K)" in calls[0][-1] and ",n=1," in calls[0][-1]


def test_table_marks_where_opgen_is_slower():
    opgen = {("q4_0", n, k, 1): [10.0, 12.0, 11.0] for n, k in bench.SHAPES}
    ggml_us = {("q4_0", 16384, 16384, 1): 22.0, ("q4_0", 4096, 4096, 1): 5.5}
    nbytes = {"q4_0": 16384 * 16384 // 32 * 18}
    exact = {("q4_0", 16384, 16384, 1): [30.0, 31.0, 29.0]}
    row = bench.table(opgen, ggml_us, nbytes, 1000.0, ["q4_0"], [1], exact).splitlines()[2]
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[:3] == ["q4_0", "1", "11.0 / 22.0 (2.00x)"]
    assert cells[3] == "11.0 / -" and cells[5] == "11.0 / 5.5 (0.50x) **slower**"
    assert cells[6] == f"{nbytes['q4_0'] / 11e-6 / 1e9 / 1000.0:.0%}"
    assert cells[7] == "30.0"  # the exact-x kernel's median at 16384²
    row = bench.table(opgen, ggml_us, nbytes, 1000.0, ["q4_0"], [1], {}).splitlines()[2]
    assert row.rstrip().endswith("| - |")  # not timed


def test_the_shipped_figures_take_the_exact_x_kernel_where_the_runtime_does():
    from runtime.gpu.quant import EXACT_X_FASTER

    fmt, rows = sorted(EXACT_X_FASTER)[0]
    quantized = {(fmt, 16384, 16384, rows): [5.0], (fmt, 16384, 16384, 16): [6.0], ("q5_0", 4096, 4096, rows): [7.0]}
    exact = {(fmt, 16384, 16384, rows): [4.0], (fmt, 16384, 16384, 16): [9.0]}
    shipped = bench.as_shipped(quantized, exact)
    assert shipped == {**quantized, (fmt, 16384, 16384, rows): [4.0]}  # 16 rows, q5_0: x in q8_1


def _results(tmp_path) -> bench.Results:
    import argparse

    return bench.Results(argparse.Namespace(), "dev", "c", 1.0, {}, {}, {}, {}, [], [])


def test_ggml_figures_of_rows_not_timed_come_from_an_earlier_run(tmp_path):
    import json

    earlier = tmp_path / "earlier.json"
    earlier.write_text(
        json.dumps(
            {
                "device": "card A",
                "date": "2026-01-02",
                "ggml_us": {"q4_0/4096/4096/1": 9.0, "q4_0/4096/4096/8": 30.0},
            }
        )
    )
    results = _results(tmp_path)
    merged = results.with_earlier({("q4_0", 4096, 4096, 8): 20.0}, earlier)
    assert merged == {("q4_0", 4096, 4096, 1): 9.0, ("q4_0", 4096, 4096, 8): 20.0}  # this run's row 8 kept
    assert "rows of 1: an earlier call" in results.note and "card A, 2026-01-02" in results.note
    assert results.with_earlier(merged, tmp_path / "missing.json") == merged


class _Geometry:
    """A runtime's grid of a block per 256 elements (GpuRuntime.geometry below its cap)."""

    def geometry(self, numel: int, ordinal: int) -> int:
        return -(-numel // 256)


class _Cuda(_Geometry):
    """A cuda runtime whose device has compute capability `arch` (the tensor cores from sm_80)."""

    name = "cuda"

    def __init__(self, arch: str):
        self.driver = SimpleNamespace(arch=lambda ordinal: arch)


def test_explore_builds_define_their_facts_and_launch_by_them(tmp_path):
    from generated import kernel_facts as kf

    older = tmp_path / "qmatvec_q8.hip"  # a source before the float family and lane items
    older.write_text("".join(f"// OPGEN_QMATVEC_Q8_ROWS{f}_X{c}\n" for f in ("", "_K") for c in (1, 2, 4, 8)))
    four, by_block, baseline = bench.explore_variants(["rows-4", "block-items"], older)
    assert four.path.read_text().startswith("#define OPGEN_QMATVEC_Q8_ROWS_X1 4\n")
    assert "#define" not in baseline.path.read_text()
    assert (four.item_rows("q4_0", 8), four.item_rows("f16", 2)) == (4, 4)
    assert four.item_rows("q4_k", 1) == kf.QMATVEC_Q8_ROWS_K_X1  # the blocks of 256 as shipped
    assert baseline.item_rows("f16", 4) == kf.QMATVEC_Q8_ROWS_X4  # its floats take the blocks of 32's rows
    rt = _Geometry()
    items = 4096 // kf.QMATVEC_Q8_ROWS_X1  # q4_0, 4096 x 4096, one row of x: 128 units, 4 a lane
    lane_items = kf.QMATVEC_Q8_LANE_UNITS >= 4
    threads = kf.QMATVEC_Q8_THREADS
    assert by_block.grid(rt, "q4_0", 4096, 4096, 1) == baseline.grid(rt, "q4_0", 4096, 4096, 1) == items
    shipped = bench.explore_variants(["shipped"], None)[0]
    assert shipped.grid(rt, "q4_0", 4096, 4096, 1) == (-(-items // (threads // 32)) if lane_items else items)
    assert shipped.grid(rt, "q4_0", 4096, 4096 * 64, 1) == items  # 64 units a lane: a block per item
    many = 16384 // kf.QMATVEC_Q8_ROWS_X4  # 16384 x 16384, 4 rows: 16 units a lane, items from LANE_ITEMS
    by_groups = kf.QMATVEC_Q8_LANE_UNITS_MANY >= 16 and many >= kf.QMATVEC_Q8_LANE_ITEMS
    assert shipped.grid(rt, "q4_0", 16384, 16384, 4) == (-(-many // (threads // 32)) if by_groups else many)
    assert by_block.grid(rt, "q4_0", 16384, 16384, 4) == many
    assert shipped.grid(rt, "q4_0", 16384, 16384, 1) == 16384 // kf.QMATVEC_Q8_ROWS_X1  # 1 row: a block an item
    f32_items = 4096 // kf.QMATVEC_Q8_ROWS_F_X1  # f32 4096 x 4096: 512 units, 16 a lane
    f32_lane = kf.QMATVEC_Q8_LANE_UNITS_F >= 16
    assert shipped.grid(rt, "f32", 4096, 4096, 1) == (-(-f32_items // (threads // 32)) if f32_lane else f32_items)
    assert baseline.grid(rt, "f32", 4096, 4096, 1) == 4096 // kf.QMATVEC_Q8_ROWS_X1  # a block per item
    [mma, tiles] = bench.explore_variants(["mma-1", "mma-1-tiles-2"], None)
    sm90, sm75 = _Cuda("sm_90"), _Cuda("sm_75")
    assert mma.grid(sm90, "f16", 4096, 4096, 11) == 4096 // 16 * 2  # tiles of 16 weight rows by 8 x rows
    assert tiles.grid(sm90, "bf16", 4100, 4096, 1) == -(-4100 // 32)  # 2 tiles an item at any n
    narrow = 1 if kf.QMATVEC_Q8_MMA_WIDE_N > 4096 else kf.QMATVEC_Q8_MMA_TILES_F  # tiles an item at n of 4096
    assert shipped.grid(sm90, "f32", 4096, 4096, 8) == 4096 // (16 * narrow)
    assert mma.grid(sm75, "f16", 4096, 4096, 8) == shipped.grid(sm75, "f16", 4096, 4096, 8)  # sm_75: no mma
    assert mma.grid(sm90, "q4_0", 4096, 4096, 8) == shipped.grid(sm90, "q4_0", 4096, 4096, 8)  # floats only
    assert [shipped.entry("q4_0", r) for r in (1, 2, 3)] == ["qmatvec_q8_1_few_q4_0"] * 2 + ["qmatvec_q8_1_q4_0"]
    assert baseline.entry("q4_0", 1) == "qmatvec_q8_1_q4_0"  # one entry point for every class of x rows
