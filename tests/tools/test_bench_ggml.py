"""bench/ggml.py's host side: the cases it adds to ggml's perf list, how it reads ggml's
perf lines, and the table of both."""

from __future__ import annotations

import dataclasses
import io
import subprocess
from types import SimpleNamespace

from bench import ggml as bench
from runtime import ggml

PERF_HEAD = (
    "static void init_tensor_uniform(ggml_tensor * tensor, float min = -1.0f, float max = 1.0f) {\n"
    "    size_t nels = ggml_nelements(tensor);\n}\n"
    "static std::vector<std::unique_ptr<test_case>> make_test_cases_perf() {\n"
    "    std::vector<std::unique_ptr<test_case>> test_cases;\n"
    "    test_cases.emplace_back(new test_mul_mat(type_a, type_b, 4096, bs, 14336, {1,  1}, {1, 1}));\n"
    "    return test_cases;\n}\n"
    "        } while (total_time_us < 1000*1000); // run for at least 1 second\n"
)


def test_patch_adds_the_shapes_and_the_repeated_sample_once_and_sets_the_least_time(tmp_path):
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
    assert text.count(bench.INIT_MARKER) == 1 and text.count("if (opgen_init_repeated(tensor, min, max))") == 1
    head = text.index(bench.INIT_HEAD)  # the sample first, the call at the top of ggml's initializer
    assert (
        text.index(bench.INIT_MARKER)
        < head
        < text.index("opgen_init_repeated(tensor, min, max))")
        < text.index("size_t nels")
    )
    assert f"sample = {bench.SAMPLE}," in text


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
    ggml_us = {("q4_0", 16384, 16384, 1): [30.0, 22.0, 21.0], ("q4_0", 4096, 4096, 1): [5.5]}  # medians 22, 5.5
    nbytes = {"q4_0": 16384 * 16384 // 32 * 18}
    exact = {("q4_0", 16384, 16384, 1): [30.0, 31.0, 29.0]}
    row = bench.table(opgen, ggml_us, nbytes, 1000.0, ["q4_0"], [1], exact).splitlines()[2]
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[:3] == ["q4_0", "1", "11.0 / 22.0 (2.00x)"]
    assert cells[3] == "11.0 / -" and cells[5] == "11.0 / 5.5 (0.50x) **slower**"
    assert cells[6] == f"{nbytes['q4_0'] / 11e-6 / 1e9 / 1000.0:.1%}"
    assert cells[7] == "30.0"  # the exact-x kernel's median at 16384²
    row = bench.table(opgen, ggml_us, nbytes, 1000.0, ["q4_0"], [1], {}).splitlines()[2]
    assert row.rstrip().endswith("| - |")  # not timed


def test_the_shipped_figures_take_the_exact_x_kernel_where_the_runtime_does():
    """EXACT_X_FASTER's cells take the exact-x figure, but where the stream product takes the
    shape (q6_K by one row at k = 16384: the tables' devices have the bulk copy engine)."""
    from runtime.gpu.quant import EXACT_X_FASTER, stream_shape

    fmt, rows = sorted(EXACT_X_FASTER)[0]
    assert stream_shape(fmt, rows, 16384) and not stream_shape(fmt, rows, 4096)
    quantized = {
        (fmt, 4096, 4096, rows): [5.0],
        (fmt, 16384, 16384, rows): [3.0],
        (fmt, 16384, 16384, 16): [6.0],
        ("q5_0", 4096, 4096, rows): [7.0],
    }
    exact = {(fmt, 4096, 4096, rows): [4.0], (fmt, 16384, 16384, rows): [3.5], (fmt, 16384, 16384, 16): [9.0]}
    shipped = bench.as_shipped(quantized, exact)
    assert shipped == {**quantized, (fmt, 4096, 4096, rows): [4.0]}  # streamed, 16 rows, q5_0: x in q8_1
    assert "q6_k x1 where the stream product does not take it" in bench._exact_rows()


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
    merged = results.with_earlier({("q4_0", 4096, 4096, 8): [20.0, 21.0]}, earlier)
    assert merged == {("q4_0", 4096, 4096, 1): [9.0], ("q4_0", 4096, 4096, 8): [20.0, 21.0]}  # row 8: this run's
    assert "rows of 1: an earlier call" in results.note and "card A, 2026-01-02" in results.note
    assert results.with_earlier(merged, tmp_path / "missing.json") == merged


def test_ggml_runs_of_other_calls_of_this_card_join_each_cell(tmp_path):
    import json

    def pass_file(name, device, figures):
        path = tmp_path / name
        path.write_text(json.dumps({"device": device, "date": "2026-01-03", "source": "a pass", "ggml_us": figures}))
        return path

    first = pass_file("first.json", "dev", {"q4_0/4096/4096/1": [9.0], "q4_0/4096/4096/8": [30.0]})
    elsewhere = pass_file("other.json", "card B", {"q4_0/4096/4096/1": [1.0]})
    results = _results(tmp_path)  # its device: "dev"
    ours = {("q4_0", 4096, 4096, 1): [10.0]}
    joined = results.with_added(ours, first)
    assert joined == {("q4_0", 4096, 4096, 1): [10.0, 9.0], ("q4_0", 4096, 4096, 8): [30.0]}
    assert "added from first.json" in results.note
    assert results.with_added(joined, elsewhere) == joined  # another card's runs never join
    assert "other.json: from card B, not this card" in results.note
    assert results.with_added(joined, tmp_path / "missing.json") == joined
    assert ours == {("q4_0", 4096, 4096, 1): [10.0]}  # the caller's figures untouched


def test_ggml_figures_read_as_lists_of_runs_an_older_number_as_one():
    part = {"q4_0/4096/4096/1": 9.0, "q4_k/16384/16384/8": [30.0, 31.5, 29.0], "q6_k/4096/4096/2": 7}
    assert bench.ggml_keyed(part) == {
        ("q4_0", 4096, 4096, 1): [9.0],
        ("q4_k", 16384, 16384, 8): [30.0, 31.5, 29.0],
        ("q6_k", 4096, 4096, 2): [7.0],
    }


class _Clock:
    """time.monotonic for ggml_passes: each timed row of x takes `row_s` seconds."""

    def __init__(self, row_s: float):
        self.now, self.row_s, self.rows = 0.0, row_s, []

    def monotonic(self) -> float:
        return self.now

    def ggml_times(self, build, rows, formats, log) -> dict:
        self.rows.append(rows)
        self.now += self.row_s
        (r,) = rows
        return {(f, 4096, 4096, r): 10.0 * r + len(self.rows) for f in formats}


def _passes(monkeypatch, runs: int, deadline: float, rows=(1, 8)):
    import argparse

    clock = _Clock(row_s=10.0)
    monkeypatch.setattr(bench, "ggml_times", clock.ggml_times)
    monkeypatch.setattr(bench.time, "monotonic", clock.monotonic)
    args = argparse.Namespace(ggml_runs=runs, deadline=deadline, build=None)
    written = []
    found = bench.ggml_passes(args, list(rows), ["q4_0"], io.StringIO(), 0.0, lambda f: written.append(repr(f)))
    return clock, found, written


def test_ggml_passes_time_every_row_then_every_row_again(monkeypatch):
    clock, found, written = _passes(monkeypatch, runs=3, deadline=1000.0)
    assert clock.rows == [[1], [8]] * 3  # interleaved: all rows once, then again
    assert found == {("q4_0", 4096, 4096, 1): [11.0, 13.0, 15.0], ("q4_0", 4096, 4096, 8): [82.0, 84.0, 86.0]}
    assert len(written) == 6 and written[0] == repr({("q4_0", 4096, 4096, 1): [11.0]})  # after each row


def test_opgen_times_every_cell_once_then_every_cell_again(monkeypatch):
    timed = []
    monkeypatch.setattr(bench, "graph_us", lambda enqueue, stream: timed.append(enqueue()) or float(len(timed)))
    stream = type("Stream", (), {"handle": 0})()
    found = bench.opgen_passes({"a": lambda: "a", "b": lambda: "b"}, 3, stream)
    assert timed == ["a", "b"] * 3
    assert found == {"a": [1.0, 3.0, 5.0], "b": [2.0, 4.0, 6.0]}


def test_an_earlier_tables_order_of_runs_is_said_as_it_was(tmp_path):
    import argparse
    import json

    args = argparse.Namespace(out=tmp_path, name="t", ggml_seconds=0.25)
    nbytes = {"q4_0": 16384 * 16384 // 32 * 18}
    opgen = {("q4_0", n, k, 1): [10.0] for n, k in bench.SHAPES}
    results = bench.Results(args, "dev", "c", 1000.0, opgen, {}, {}, nbytes, ["q4_0"], [1], order=bench.EARLIER_ORDER)
    assert "opgen: one run (a cell's runs back to back)," in results.write({})
    assert json.loads((tmp_path / "t.json").read_text())["opgen_order"] == bench.EARLIER_ORDER


def test_a_pass_cut_short_by_the_deadline_keeps_what_it_timed(monkeypatch, tmp_path):
    # rows begin at 0, 10, 20 s; the fourth, at 30 s, is past the deadline
    clock, found, written = _passes(monkeypatch, runs=3, deadline=25.0)
    assert clock.rows == [[1], [8], [1]]
    assert found == {("q4_0", 4096, 4096, 1): [11.0, 13.0], ("q4_0", 4096, 4096, 8): [82.0]}
    assert bench.runs_said(found) == "the median of the runs each row of x got (1: 2, 8: 1)"
    assert bench.runs_said({key: [*runs, 1.0][:2] for key, runs in found.items()}) == "the median of 2 runs"
    assert bench.runs_said({("q4_0", 4096, 4096, 1): [3.0]}) == "one run"


def test_ggml_only_writes_every_pass_as_lists(monkeypatch, tmp_path):
    import argparse
    import json

    clock = _Clock(row_s=10.0)
    monkeypatch.setattr(bench, "ggml_times", clock.ggml_times)
    monkeypatch.setattr(bench.time, "monotonic", clock.monotonic)
    device = subprocess.CompletedProcess([], 0, stdout="card A, 1.0\n", stderr="")
    monkeypatch.setattr(bench.subprocess, "run", lambda *a, **k: device)
    out = tmp_path / "rows.json"
    args = argparse.Namespace(
        formats="q4_0,q8_1", rows="1,2", ggml_rows="8", ggml_runs=2, deadline=100.0, build=None, ggml_only=out
    )
    bench.ggml_only(args, 0.0)
    record = json.loads(out.read_text())
    assert clock.rows == [[8], [8]] and record["device"] == "card A, 1.0"
    assert record["ggml_us"] == {"q4_0/4096/4096/8": [81.0, 82.0]}  # no q8_1: ggml multiplies none


def test_cells_met_by_median_and_by_every_run_a_tie_met():
    opgen = {
        ("q4_0", 4096, 4096, 1): [10.0, 11.0, 12.0],  # median 11 = ggml's 11: met; slowest 12 > fastest 11
        ("q4_0", 16384, 16384, 1): [10.0, 10.0, 10.0],  # slowest 10 = ggml's fastest 10: met both ways
        ("q4_0", 4096, 4096, 2): [20.0, 21.0, 22.0],  # median 21 > 20: not met
        ("q4_0", 16384, 16384, 2): [5.0, 5.0, 5.0],  # ggml did not time it: no cell
        ("q8_1", 4096, 4096, 1): [1.0],  # ggml has no q8_1 weight: no cell
    }
    ggml_us = {
        ("q4_0", 4096, 4096, 1): [11.0, 11.0, 13.0],
        ("q4_0", 16384, 16384, 1): [10.0, 12.0],  # a pass cut short
        ("q4_0", 4096, 4096, 2): [20.0, 19.0, 25.0],
        ("q4_0", 4096, 4096, 4): [1.0],  # rows of x opgen did not time: no cell
    }
    met = bench.cells_met(opgen, ggml_us, ["q4_0", "q8_1"], [1, 2])
    assert met == {
        "median": {"1": [2, 2], "2": [0, 1], "all": [2, 3]},
        "every_run": {"1": [1, 2], "2": [0, 1], "all": [1, 3]},
    }
    line = bench.met_line(met)
    assert "in 2 of 3 cells: rows 1 2/2, rows 2 0/1;" in line and line.endswith(
        "in 1 of 3 cells: rows 1 1/2, rows 2 0/1."
    )


def test_results_state_both_sides_runs_and_the_cells_met(tmp_path):
    import argparse
    import json

    args = argparse.Namespace(out=tmp_path, name="t", ggml_seconds=0.25)
    opgen = {("q4_0", n, k, 1): [10.0, 12.0, 11.0] for n, k in bench.SHAPES}
    nbytes = {"q4_0": 16384 * 16384 // 32 * 18}
    nmse = {"q4_0": {"default": 1e-4, "exact_x": 1e-5}}
    results = bench.Results(args, "dev", "c", 1000.0, opgen, {}, nmse, nbytes, ["q4_0"], [1])
    ggml_us = {("q4_0", n, k, 1): [12.0, 9.0, 11.0] for n, k in bench.SHAPES}  # medians 11: ties, met
    text = results.write(ggml_us)
    assert "opgen: the median of 3 runs (in passes: every cell once, then every cell again)," in text
    assert "ggml: the median of 3 runs of test-backend-ops perf (least 0.25 s a case)" in text
    assert "opgen as fast or faster (its median <= ggml's) in 4 of 4 cells: rows 1 4/4;" in text
    assert "in every run (opgen's slowest <= ggml's fastest) in 0 of 4 cells" in text
    record = json.loads((tmp_path / "t.json").read_text())
    assert record["ggml_us"]["q4_0/4096/4096/1"] == [12.0, 9.0, 11.0]  # every run kept
    assert record["cells_met"]["median"]["all"] == [4, 4] and record["cells_met"]["every_run"]["all"] == [0, 4]
    assert (tmp_path / "t.md").read_text() == text + "\n"
    assert "ggml: no runs of" in results.write({}) and "No cell has both sides' figures yet." in results.write({})


def test_the_table_names_the_tree_it_timed(tmp_path):
    """--tree names the opgen commit (a device's copy has no git); without it, this checkout's HEAD."""
    import argparse
    import json
    import subprocess

    args = argparse.Namespace(out=tmp_path, name="t", ggml_seconds=0.25, tree="abc1234")
    nbytes = {"q4_0": 16384 * 16384 // 32 * 18}
    opgen = {("q4_0", n, k, 1): [10.0] for n, k in bench.SHAPES}
    results = bench.Results(args, "dev", "c", 1000.0, opgen, {}, {}, nbytes, ["q4_0"], [1])
    assert (
        results.write({}).startswith("# opgen qmatvec beside ggml's CUDA MUL_MAT\n\ndev, ")
        and ", tree abc1234; " in (tmp_path / "t.md").read_text()
    )
    assert json.loads((tmp_path / "t.json").read_text())["tree"] == "abc1234"
    head = subprocess.run(
        ["git", "-C", str(bench.ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    assert bench.tree_of(argparse.Namespace(tree=None)) == (
        head.stdout.strip() or None if head.returncode == 0 else None
    )


class _Geometry:
    """A runtime's grid of a block per 256 elements (GpuRuntime.geometry below its cap), on a device
    without tensor cores."""

    name = "rocm"

    def geometry(self, numel: int, ordinal: int) -> int:
        return -(-numel // 256)


class _Cuda(_Geometry):
    """A cuda runtime whose device has compute capability `arch` (the tensor cores from sm_80)."""

    name = "cuda"

    def __init__(self, arch: str, shared: int = 232448):
        self.driver = SimpleNamespace(arch=lambda ordinal: arch, shared_per_block=lambda ordinal: shared)


def test_explore_builds_define_their_facts_and_launch_by_them(tmp_path):
    from generated import kernel_facts as kf

    older = tmp_path / "qmatvec_q8.hip"  # a source before the float family and lane items
    older.write_text("".join(f"// OPGEN_QMATVEC_Q8_ROWS{f}_X{c}\n" for f in ("", "_K") for c in (1, 2, 4, 8)))
    four, by_block, baseline = bench.explore_variants(["rows-4", "block-items"], older)
    assert four.path.read_text().startswith("#define OPGEN_QMATVEC_Q8_ROWS_X1 4\n")
    assert "#define" not in baseline.path.read_text()
    assert (four.item_rows("q4_0", 8, 4096, 4096), four.item_rows("f16", 2, 4096, 4096)) == (4, 4)
    assert four.item_rows("q4_k", 1, 4096, 4096) == kf.QMATVEC_Q8_ROWS_K_X1  # the blocks of 256 as shipped
    assert baseline.item_rows("f16", 4, 4096, 4096) == kf.QMATVEC_Q8_ROWS_X4  # its floats take the blocks of 32's rows
    assert baseline.item_rows("q4_0", 4, 4096, 4096) == kf.QMATVEC_Q8_ROWS_X4  # no narrow rows in an older source
    narrow = bench.explore_variants(["shipped"], None)[0]
    below, above = kf.QMATVEC_Q8_NARROW_N - 1, kf.QMATVEC_Q8_NARROW_N
    assert narrow.item_rows("q4_0", 4, below, 4096) == kf.QMATVEC_Q8_ROWS_X4_NARROW
    assert narrow.item_rows("q4_0", 4, above, 4096) == kf.QMATVEC_Q8_ROWS_X4
    assert narrow.item_rows("q4_0", 8, below, 4096) == kf.QMATVEC_Q8_ROWS_X8  # 3 or 4 rows of x only
    assert narrow.item_rows("q4_k", 4, below, 4096) == kf.QMATVEC_Q8_ROWS_K_X4  # the blocks of 32 only
    rt = _Geometry()
    items = 4096 // kf.QMATVEC_Q8_ROWS_X1  # q4_0, 4096 x 4096, one row of x: 128 units, 4 a lane
    lane_items = kf.QMATVEC_Q8_LANE_UNITS >= 4
    threads = kf.QMATVEC_Q8_THREADS
    assert by_block.grid(rt, "q4_0", 4096, 4096, 1) == baseline.grid(rt, "q4_0", 4096, 4096, 1) == items
    shipped = bench.explore_variants(["shipped"], None)[0]
    one = 4096 // kf.QMATVEC_Q8_ROWS_X1_NARROW if lane_items else items  # groups of lanes: narrow rows an item
    four = bench.explore_variants(["rows-x1-narrow-4"], None)[0]
    assert four.grid(rt, "q4_0", 4096, 4096, 1) == 4096 // 4 // (threads // 32)
    assert shipped.grid(rt, "q4_0", 4096, 4096, 1) == (-(-one // (threads // 32)) if lane_items else items)
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
    assert mma.grid(sm90, "f16", 4096, 4096, 11) == 4096 // (16 * kf.QMATVEC_Q8_MMA_F_TILES) * 2  # by 8 x rows
    assert tiles.grid(sm90, "bf16", 4100, 4096, 1) == -(-4100 // 32)  # 2 tiles an item at any n
    wide = kf.QMATVEC_Q8_MMA_WIDE_N <= 4096
    narrow = kf.QMATVEC_Q8_MMA_TILES_F if wide else kf.QMATVEC_Q8_MMA_F_TILES  # tiles an item at n of 4096
    assert shipped.grid(sm90, "f32", 4096, 4096, 8) == 4096 // (16 * narrow)
    assert mma.grid(sm75, "f16", 4096, 4096, 8) == shipped.grid(sm75, "f16", 4096, 4096, 8)  # sm_75: no mma
    assert mma.grid(sm90, "q4_0", 4096, 4096, 8) == shipped.grid(sm90, "q4_0", 4096, 4096, 8)  # floats only
    assert [shipped.entry(rt, "q4_1", r, 4096) for r in (1, 2, 3)] == ["qmatvec_q8_1_few_q4_1"] * 2 + [
        "qmatvec_q8_1_q4_1"
    ]
    assert [shipped.entry(rt, "q4_0", r, 4096) for r in (1, 2)] == ["qmatvec_q8_1_one_q4_0", "qmatvec_q8_1_few_q4_0"]
    from runtime.gpu import quant as gpu_quant

    apart = [f for f in ggml.FORMATS if gpu_quant.q8_one_apart(f)]
    assert apart == ["q4_0", "q5_0", "q2_k", "q3_k", "q6_k"]
    assert [shipped.entry(rt, "q2_k", r, 4096) for r in (1, 2)] == ["qmatvec_q8_1_one_q2_k", "qmatvec_q8_1_few_q2_k"]
    assert gpu_quant.q8_entry(1, False) == gpu_quant.K.QMATVEC_Q8_1_FEW_SELF
    assert gpu_quant.q8_entry(1, False, apart=True) == gpu_quant.K.QMATVEC_Q8_1_ONE_SELF
    assert baseline.entry(rt, "q4_0", 1, 4096) == "qmatvec_q8_1_q4_0"  # one entry point for every class of x rows
    from runtime.gpu.compile import HIP_DIR

    before_one = tmp_path / "before-one.hip"  # its few entry took one row of x too
    before_one.write_text((HIP_DIR / "qmatvec_q8.hip").read_text().replace("qmatvec_q8_1_one", "qmatvec_q8_1_older"))
    (few,) = bench.explore_variants([], before_one)
    assert [few.entry(rt, "q2_k", r, 4096) for r in (1, 2)] == ["qmatvec_q8_1_few_q2_k"] * 2
    assert "__device__ void qmatvec_q8_1_one(" in few.path.read_text()
    assert baseline.entry(sm90, "f16", 8, 4096) == "qmatvec_q8_1_f16"  # its tensor cores inside the general entry
    assert shipped.entry(sm90, "f16", 8, 4096) == "qmatvec_q8_1_mma_f16"
    assert shipped.entry(sm75, "f16", 8, 4096) == "qmatvec_q8_1_f16"


def test_explore_builds_put_the_blocks_of_32_on_the_tensor_cores_by_their_facts():
    """The blocks of 32 take qmatvec_q8_1_mma_<fmt> from QMATVEC_Q8_MMA_Q_FROM rows of x on weights of
    QMATVEC_Q8_MMA_Q_N rows and more, on sm_80 and up: a block per item of 8 x rows and of one tile of
    16 weight rows, or two (QMATVEC_Q8_MMA_Q_PAIR_BLOCKS, where their stages fit: not q8_0's);
    never the blocks of 256, never where the variant turns them off."""
    from generated import kernel_facts as kf

    shipped, off, wide, single = bench.explore_variants(
        ["shipped", "mma-q-off", "mma-q-wide", "mma-q-pairs-none"], None
    )
    sm90, sm75 = _Cuda("sm_90"), _Cuda("sm_75")
    big, small = max(16384, kf.QMATVEC_Q8_MMA_Q_N), kf.QMATVEC_Q8_MMA_Q_N - 1
    rows = max(kf.QMATVEC_Q8_MMA_Q_FROM, 3)
    pair = 2 if kf.QMATVEC_Q8_MMA_Q_PAIR_BLOCKS & 1 else 1
    assert shipped.entry(sm90, "q4_0", rows, big) == "qmatvec_q8_1_mma_q4_0"
    assert shipped.grid(sm90, "q4_0", big, 4096, rows) == -(-big // (16 * pair))
    assert single.grid(sm90, "q4_0", big, 4096, rows) == -(-big // 16)
    assert shipped.grid(sm90, "q8_0", big, 4096, 17) == -(-big // 16) * 3  # x rows by 8; q8_0's pair does not fit
    assert shipped.entry(sm90, "q4_0", rows, small) == "qmatvec_q8_1_q4_0"
    assert wide.entry(sm90, "q4_0", rows, small) == "qmatvec_q8_1_mma_q4_0"
    assert shipped.entry(sm75, "q4_0", rows, big) == off.entry(sm90, "q4_0", rows, big) == "qmatvec_q8_1_q4_0"
    assert shipped.entry(sm90, "q4_k", rows, big) == "qmatvec_q8_1_q4_k"
    assert off.grid(sm90, "q4_0", big, 4096, rows) == shipped.grid(sm75, "q4_0", big, 4096, rows)


def test_explore_builds_put_the_blocks_of_32_of_the_x4_bits_on_the_tensor_cores_from_3_rows():
    """QMATVEC_Q8_MMA_Q_X4_BLOCKS: the blocks of 32 whose bit it has take the tensor cores from 3
    rows of x (the class of 4) on weights of QMATVEC_Q8_MMA_Q_N rows, the others from
    QMATVEC_Q8_MMA_Q_FROM; mma-q-x4-none: none at 3 or 4 rows, the same at 8."""
    from generated import kernel_facts as kf
    from runtime.gpu import quant as gpu_quant

    shipped, none = bench.explore_variants(["shipped", "mma-q-x4-none"], None)
    sm90, big = _Cuda("sm_90"), max(16384, kf.QMATVEC_Q8_MMA_Q_N)
    for bit, fmt in enumerate(gpu_quant.BLOCK32_BITS):
        tensor = f"qmatvec_q8_1_mma_{fmt}"
        at_four = tensor if kf.QMATVEC_Q8_MMA_Q_X4_BLOCKS >> bit & 1 else f"qmatvec_q8_1_{fmt}"
        assert [shipped.entry(sm90, fmt, r, big) for r in (3, 4)] == [at_four] * 2, fmt
        assert [none.entry(sm90, fmt, r, big) for r in (3, 4)] == [f"qmatvec_q8_1_{fmt}"] * 2, fmt
        assert none.entry(sm90, fmt, 8, big) == shipped.entry(sm90, fmt, 8, big) == tensor, fmt
        assert shipped.entry(sm90, fmt, 3, kf.QMATVEC_Q8_MMA_Q_N - 1) == f"qmatvec_q8_1_{fmt}", fmt
    assert 0 <= kf.QMATVEC_Q8_MMA_Q_X4_BLOCKS < 1 << len(gpu_quant.BLOCK32_BITS)
    block32 = {f for f, spec in ggml.FORMATS.items() if spec.block == 32 and f not in ggml.PLAIN}
    assert set(gpu_quant.BLOCK32_BITS) == block32


def test_the_table_log_is_this_runs_console_else_the_earlier_runs_else_left_as_it_was(tmp_path):
    """A run whose ggml did not run here (--ggml-from, --prebuilt) must not empty the .log that
    holds the console of the figures its table shows."""
    log = tmp_path / "anchor.log"
    log.write_text("an earlier console\n")
    log.with_suffix(".log.part").write_text("")
    bench._keep_console(log, [tmp_path / "none.json"])
    assert log.read_text() == "an earlier console\n" and not log.with_suffix(".log.part").exists()
    (tmp_path / "first.log").write_text("MUL_MAT rows 1\n")
    log.with_suffix(".log.part").write_text("")
    bench._keep_console(log, [tmp_path / "first.json", tmp_path / "none.json"])
    assert log.read_text() == "# ggml's console of first.log\nMUL_MAT rows 1\n"
    log.with_suffix(".log.part").write_text("this run's passes\n")
    bench._keep_console(log, [tmp_path / "first.json"])
    assert log.read_text() == "this run's passes\n" and not log.with_suffix(".log.part").exists()


def test_float_weights_on_the_tensor_cores_launch_their_own_block_size(tmp_path):
    """Float weights on the tensor cores launch QMATVEC_Q8_MMA_F_THREADS threads a block (their
    entry's launch bound), every other entry QMATVEC_Q8_THREADS; a source from before the fact
    launches QMATVEC_Q8_THREADS, with kMmaThreads given to it by the bench's shim."""
    from generated import kernel_facts as kf
    from runtime.gpu import quant as gpu_quant

    shipped, wide, before = bench.explore_variants(["shipped", "mma-f-threads-256", "mma-f-threads-128"], None)
    sm90, sm75 = _Cuda("sm_90"), _Cuda("sm_75")
    rows = max(kf.QMATVEC_Q8_MMA_F_FROM, 3)
    assert shipped.threads(sm90, "f16", rows, 4096) == kf.QMATVEC_Q8_MMA_F_THREADS
    assert wide.threads(sm90, "f16", rows, 4096) == 256
    assert before.threads(sm90, "f16", rows, 4096) == 128
    assert before.grid(sm90, "f16", 16384, 4096, 8) == 16384 // (16 * 4)  # 4 tiles an item from 8192 rows
    assert shipped.threads(sm75, "f16", rows, 4096) == kf.QMATVEC_Q8_THREADS  # no tensor cores
    assert shipped.threads(sm90, "f16", 1, 4096) == kf.QMATVEC_Q8_THREADS
    assert shipped.threads(sm90, "q4_0", 8, 16384) == kf.QMATVEC_Q8_THREADS
    assert gpu_quant.q8_threads("f32", True) == kf.QMATVEC_Q8_MMA_F_THREADS
    assert gpu_quant.q8_threads("f32", True, wide=True) == kf.QMATVEC_Q8_MMA_F_WIDE_THREADS
    assert gpu_quant.q8_threads("q8_0", True) == gpu_quant.q8_threads("f32", False) == kf.QMATVEC_Q8_THREADS
    older = tmp_path / "qmatvec_q8.hip"
    from runtime.gpu.compile import HIP_DIR

    text = (HIP_DIR / "qmatvec_q8.hip").read_text()
    older.write_text(text.replace("kMmaThreads", "kOlderThreads").replace("OPGEN_QMATVEC_Q8_MMA_F_THREADS", "kThreads"))
    (baseline,) = [v for v in bench.explore_variants([], older)]
    assert baseline.threads(sm90, "f16", rows, 4096) == kf.QMATVEC_Q8_THREADS
    assert "constexpr int kMmaThreads = kThreads;" in baseline.path.read_text()


def test_float_weights_of_many_rows_take_the_wide_entry_with_its_tiles_and_block_size(tmp_path):
    """From QMATVEC_Q8_MMA_WIDE_N weight rows, float weights on the tensor cores launch
    qmatvec_q8_1_mma_wide_<fmt>: QMATVEC_Q8_MMA_F_WIDE_THREADS a block, items of
    QMATVEC_Q8_MMA_TILES_F tiles; below it qmatvec_q8_1_mma_<fmt>; never the other formats. A
    source from before the wide entry launches its tensor-core entry at every n (the shim names
    the wide one for the generated entry points)."""
    from generated import kernel_facts as kf
    from runtime.gpu import quant as gpu_quant

    shipped, off = bench.explore_variants(["shipped", "mma-f-wide-off"], None)
    sm90 = _Cuda("sm_90")
    rows, wide_n = max(kf.QMATVEC_Q8_MMA_F_FROM, 3), kf.QMATVEC_Q8_MMA_WIDE_N
    assert shipped.entry(sm90, "bf16", rows, wide_n) == "qmatvec_q8_1_mma_wide_bf16"
    assert shipped.threads(sm90, "bf16", rows, wide_n) == kf.QMATVEC_Q8_MMA_F_WIDE_THREADS
    assert shipped.grid(sm90, "bf16", wide_n, 4096, 8) == -(-wide_n // (16 * kf.QMATVEC_Q8_MMA_TILES_F))
    assert shipped.entry(sm90, "bf16", rows, wide_n - 1) == "qmatvec_q8_1_mma_bf16"
    assert shipped.threads(sm90, "bf16", rows, wide_n - 1) == kf.QMATVEC_Q8_MMA_F_THREADS
    assert shipped.grid(sm90, "bf16", wide_n - 1, 4096, 8) == -(-(wide_n - 1) // (16 * kf.QMATVEC_Q8_MMA_F_TILES))
    assert off.entry(sm90, "f32", rows, 16384) == "qmatvec_q8_1_mma_f32"
    assert shipped.entry(sm90, "q4_0", 8, 16384) == "qmatvec_q8_1_mma_q4_0"
    assert gpu_quant.q8_wide("f16", wide_n) and not gpu_quant.q8_wide("f16", wide_n - 1)
    assert not gpu_quant.q8_wide("q8_0", 16384)
    assert gpu_quant.q8_entry(8, True, True) == gpu_quant.K.QMATVEC_Q8_1_MMA_WIDE_SELF
    assert gpu_quant.q8_entry(8, True) == gpu_quant.K.QMATVEC_Q8_1_MMA_SELF
    from runtime.gpu.compile import HIP_DIR

    older = tmp_path / "qmatvec_q8.hip"
    older.write_text(
        (HIP_DIR / "qmatvec_q8.hip").read_text().replace("qmatvec_q8_1_mma_wide", "qmatvec_q8_1_mma_older")
    )
    (baseline,) = bench.explore_variants([], older)
    assert baseline.entry(sm90, "f16", rows, 16384) == "qmatvec_q8_1_mma_f16"
    assert "__device__ void qmatvec_q8_1_mma_wide(" in baseline.path.read_text()


def test_the_blocks_of_256_of_the_two_bits_take_two_weight_rows_at_their_rows_of_x():
    """QMATVEC_Q8_ROWS_K_X2_TWO and _X1_TWO: the blocks of 256 with a bit take items of 2 weight
    rows at 2 rows of x, or at one (QMATVEC_Q8_ROWS_K_X2, _X1 without it), the runtime and the
    bench's builds alike."""
    from generated import kernel_facts as kf
    from runtime.gpu import quant as gpu_quant

    shipped, none, all_one = bench.explore_variants(["shipped", "rows-k-x2-two-none", "rows-k-x1-two-all"], None)
    for bit, fmt in enumerate(gpu_quant.BLOCK256_BITS):
        assert all_one.item_rows(fmt, 1, 4096, 4096) == (2 if bit < 5 else kf.QMATVEC_Q8_ROWS_K_X1), fmt
        two = 2 if kf.QMATVEC_Q8_ROWS_K_X2_TWO >> bit & 1 else kf.QMATVEC_Q8_ROWS_K_X2
        assert shipped.item_rows(fmt, 2, 4096, 4096) == gpu_quant.q8_item_rows(fmt, 2, 4096, 4096) == two, fmt
        assert none.item_rows(fmt, 2, 4096, 4096) == kf.QMATVEC_Q8_ROWS_K_X2, fmt
        one = 2 if kf.QMATVEC_Q8_ROWS_K_X1_TWO >> bit & 1 else kf.QMATVEC_Q8_ROWS_K_X1
        assert shipped.item_rows(fmt, 1, 4096, 4096) == gpu_quant.q8_item_rows(fmt, 1, 4096, 4096) == one, fmt
    block256 = {f for f, spec in ggml.FORMATS.items() if spec.block == 256}
    assert set(gpu_quant.BLOCK256_BITS) == block256


def test_the_kernel_and_the_runtime_number_the_format_bits_alike():
    """hip/qmatvec_q8.hip's bits of the blocks of 32 (kBlock32Bit) and of 256 (each *_halves'
    kBit) are runtime/gpu/quant.py's BLOCK32_BITS and BLOCK256_BITS orders: the facts that hold a
    bit a format (QMATVEC_Q8_WIDE_K, _ROWS_K_X2_TWO, _MMA_Q_X4_BLOCKS ...) mean one thing to both."""
    import re

    from runtime.gpu import quant as gpu_quant
    from runtime.gpu.compile import HIP_DIR

    text = (HIP_DIR / "qmatvec_q8.hip").read_text()
    block32 = dict(re.findall(r"constexpr int kBlock32Bit<(\w+)> = (\d+);", text))
    block256 = dict(
        re.findall(r"struct (\w+)_halves \{\n    static constexpr int kElems = 256, kBytes = \d+, kBit = (\d+);", text)
    )
    assert {f: int(b) for f, b in block32.items()} == {f: i for i, f in enumerate(gpu_quant.BLOCK32_BITS)}
    assert {f: int(b) for f, b in block256.items()} == {f: i for i, f in enumerate(gpu_quant.BLOCK256_BITS)}


def test_long_k_names_only_blocks_of_256_that_have_a_long_unit():
    """QMATVEC_Q8_LONG_K's bits (the order of BLOCK256_BITS) name only formats whose *_halves
    define a Long (hip/qmatvec_q8.hip takes a bit without one as no bit), and the long units of
    kLongParts units of 32 divide a block of 256."""
    import re

    from generated import kernel_facts as kf
    from runtime.gpu import quant as gpu_quant
    from runtime.gpu.compile import HIP_DIR

    text = (HIP_DIR / "qmatvec_q8.hip").read_text()
    halves = dict(re.findall(r"struct (\w+)_halves \{(.*?)\n\};", text, re.S))
    parts = {f: int(m.group(1)) for f, body in halves.items() if (m := re.search(r"kLongParts = (\d+);", body))}
    longs = {f for f, body in halves.items() if "struct Long {" in body}
    assert set(parts) == longs == {"q2_k", "q3_k", "q4_k", "q5_k", "q6_k"}
    assert all(8 % p == 0 for p in parts.values())
    named = {f for bit, f in enumerate(gpu_quant.BLOCK256_BITS) if kf.QMATVEC_Q8_LONG_K >> bit & 1}
    assert named and named <= set(parts) and kf.QMATVEC_Q8_LONG_K >> len(gpu_quant.BLOCK256_BITS) == 0
    dots = {f for f, body in halves.items() if "long_dot(" in body}
    for mask, among in ((kf.QMATVEC_Q8_LONG_DOT, dots), (kf.QMATVEC_Q8_LONG_X_SHARED, set(parts))):
        bits = {f for bit, f in enumerate(gpu_quant.BLOCK256_BITS) if mask >> bit & 1}
        assert bits <= among and mask >> len(gpu_quant.BLOCK256_BITS) == 0, (mask, among)


class _Sms(_Cuda):
    """An sm_90 device of 132 multiprocessors."""

    def __init__(self):
        super().__init__("sm_90")

    def _sms(self, ordinal: int) -> int:
        return 132


def test_long_units_reading_x_from_shared_memory_take_an_even_capped_grid():
    """At one row of x on cuda, the formats of QMATVEC_Q8_LONG_X_SHARED (up to
    QMATVEC_Q8_LONG_X_SHARED_K values of x) take at most LONG_X_SHARED_BLOCKS blocks a
    multiprocessor, each as many items as the others or one fewer (a block copies x once); the
    others, more rows of x, a longer k and a build without the cap a block per item."""
    from generated import kernel_facts as kf
    from runtime.gpu import quant as gpu_quant

    rt, per_sm = _Sms(), kf.QMATVEC_Q8_LONG_X_SHARED_BLOCKS
    shared = [f for f in ("q2_k", "q3_k") if gpu_quant.q8_x_shared(rt, f, 1, 16384)]
    assert shared == ["q2_k", "q3_k"] and per_sm > 0
    rows_k = kf.QMATVEC_Q8_ROWS_K_X1
    for n in (16384, 4096, 4096 * 3 + 8):
        items = -(-n // rows_k)
        grid = gpu_quant.q8_grid(rt, 0, "q2_k", n, 16384, 1, rows_k)
        each = -(-items // grid)
        assert grid <= 132 * per_sm and (grid - 1) * each < items <= grid * each, (n, grid)
    items = 16384 // rows_k
    assert gpu_quant.q8_grid(rt, 0, "q4_k", 16384, 16384, 1, rows_k) == items  # no bit: a block an item
    assert gpu_quant.q8_grid(rt, 0, "q2_k", 16384, kf.QMATVEC_Q8_LONG_X_SHARED_K + 256, 1, rows_k) == items
    assert not gpu_quant.q8_x_shared(rt, "q2_k", 2, 16384)
    assert not gpu_quant.q8_x_shared(_Geometry(), "q2_k", 1, 16384)  # rocm: x from global memory
    none, capped = bench.explore_variants(["x-shared-blocks-none", "shipped"], None)
    streamed = capped.entry(rt, "q2_k", 1, 16384, 16384) == "qmatvec_q8_1_stream_q2_k"
    assert streamed == bool(kf.QMATVEC_Q8_STREAM_K & 1) and capped.grid(rt, "q2_k", 16384, 16384, 1) == (
        132 if streamed else gpu_quant.q8_grid(rt, 0, "q2_k", 16384, 16384, 1, rows_k)
    )
    # the long units' grid, in builds without the stream product (which takes q2_K's one row here)
    none, capped = (dataclasses.replace(v, facts={**v.facts, "QMATVEC_Q8_STREAM_K": 0}) for v in (none, capped))
    q2_k_bit = kf.QMATVEC_Q8_LANE_K_ONE_BLOCKS >> gpu_quant.BLOCK256_BITS.index("q2_k") & 1
    lanes = q2_k_bit and items >= kf.QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS  # q2_K's groups of lanes take the items
    assert none.grid(rt, "q2_k", 16384, 16384, 1) == (items // 4 if lanes else items)
    assert capped.grid(rt, "q2_k", 16384, 16384, 1) == gpu_quant.q8_grid(rt, 0, "q2_k", 16384, 16384, 1, rows_k)


def test_groups_of_lanes_take_their_own_items_of_the_long_rows_of_one_row_of_x():
    """QMATVEC_Q8_LANE_K_ONE_BLOCKS (q2_K, q5_K): at one row of x their groups of lanes take their
    own items up to QMATVEC_Q8_LANE_UNITS_K_ONE units a lane, where x is in shared memory (q2_K on
    cuda) from QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS items; two rows of x, the other formats and
    longer rows keep QMATVEC_Q8_LANE_UNITS."""
    from generated import kernel_facts as kf
    from runtime.gpu import quant as gpu_quant

    rt, rows_k, groups = _Sms(), kf.QMATVEC_Q8_ROWS_K_X1, kf.QMATVEC_Q8_THREADS // 32
    named = [f for bit, f in enumerate(gpu_quant.BLOCK256_BITS) if kf.QMATVEC_Q8_LANE_K_ONE_BLOCKS >> bit & 1]
    assert named == ["q2_k", "q5_k"] and kf.QMATVEC_Q8_LANE_UNITS_K_ONE > kf.QMATVEC_Q8_LANE_UNITS
    k = 32 * 32 * kf.QMATVEC_Q8_LANE_UNITS_K_ONE  # the most units a lane
    assert gpu_quant.q8_grid(rt, 0, "q5_k", 4096, k, 1, rows_k) == 4096 // rows_k // groups
    assert gpu_quant.q8_grid(rt, 0, "q5_k", 4096, k + 256, 1, rows_k) == 4096 // rows_k  # a block an item
    assert gpu_quant.q8_grid(rt, 0, "q4_k", 4096, k, 1, rows_k) == 4096 // rows_k
    two = gpu_quant.q8_item_rows("q5_k", 2, 4096, k)
    assert gpu_quant.q8_grid(rt, 0, "q5_k", 4096, k, 2, two) == 4096 // two
    enough = kf.QMATVEC_Q8_LANE_K_ONE_SHARED_ITEMS * rows_k
    for n, by_groups in ((enough, True), (enough - rows_k, False)):
        items = n // rows_k
        assert gpu_quant.q8_by_group("q2_k", 1, k // 32, items, full=True)
        assert not gpu_quant.q8_by_group("q2_k", 1, k // 32, items, full=False)
        grid = gpu_quant.q8_grid(rt, 0, "q2_k", n, k, 1, rows_k)
        each = -(-(items // groups if by_groups else items) // grid)  # the capped grid, evenly
        assert grid <= 132 * kf.QMATVEC_Q8_LONG_X_SHARED_BLOCKS and each >= 1, (n, grid)
        assert (grid - 1) * each < (items // groups if by_groups else items) <= grid * each, (n, grid)
    variant = bench.explore_variants(["shipped"], None)[0]
    assert variant.grid(rt, "q5_k", 4096, k, 1) == 4096 // rows_k // groups


def test_the_blocks_of_32_pair_their_tiles_where_two_stages_fit():
    """QMATVEC_Q8_MMA_Q_PAIR_BLOCKS: items of two tiles for the formats with its bit whose two
    stages of two tiles fit 48 KiB (not q8_0's nor q8_1's: 34 and 36 bytes a block), else one."""
    from runtime.gpu import quant as gpu_quant

    facts = dict(gpu_quant.QMATVEC_Q8_GRID_FACTS, QMATVEC_Q8_MMA_Q_PAIR_BLOCKS=63)
    assert {f: gpu_quant.q8_tiles(f, facts) for f in gpu_quant.BLOCK32_BITS} == {
        "q4_0": 2, "q4_1": 2, "q5_0": 2, "q5_1": 2, "q8_0": 1, "q8_1": 1,
    }  # fmt: skip
    assert {gpu_quant.q8_tiles(f, dict(facts, QMATVEC_Q8_MMA_Q_PAIR_BLOCKS=0)) for f in gpu_quant.BLOCK32_BITS} == {1}
    assert gpu_quant.q8_tiles("q4_1", dict(facts, QMATVEC_Q8_MMA_Q_PAIR_BLOCKS=2)) == 2
    assert gpu_quant.q8_tiles("q4_0", dict(facts, QMATVEC_Q8_MMA_Q_PAIR_BLOCKS=2)) == 1


def test_the_bulk_product_takes_one_row_of_its_blocks_of_32_on_a_capped_grid():
    """QMATVEC_Q8_BULK_BLOCKS: one row of x of those blocks of 32, k a multiple of 256, takes
    qmatvec_q8_1_one_<fmt> on BULK_PER_SM blocks a multiprocessor (or a block per item of
    BULK_ROWS weight rows) on sm_90; two rows, another k, an older device and the other formats
    keep their entry and grid. An explore build's grid follows its own BULK_PER_SM, which only
    the runtime reads."""
    from runtime.gpu import quant as gpu_quant

    rt, facts = _Sms(), dict(gpu_quant.QMATVEC_Q8_GRID_FACTS, QMATVEC_Q8_BULK_BLOCKS=0b101)  # q4_0, q5_0
    rows = facts["QMATVEC_Q8_BULK_ROWS"]
    assert [f for f in gpu_quant.BLOCK32_BITS if gpu_quant.q8_one_apart(f, facts)] == ["q4_0", "q5_0"]
    assert gpu_quant.q8_bulk(rt, 0, "q4_0", 1, 4096, facts) and not gpu_quant.q8_bulk(rt, 0, "q4_1", 1, 4096, facts)
    assert not gpu_quant.q8_bulk(rt, 0, "q4_0", 2, 4096, facts) and not gpu_quant.q8_bulk(rt, 0, "q4_0", 1, 4128, facts)
    assert gpu_quant.q8_grid(rt, 0, "q4_0", 16384, 16384, 1, 8, facts) == 132 * facts["QMATVEC_Q8_BULK_PER_SM"]
    assert gpu_quant.q8_grid(rt, 0, "q4_0", 37, 4096, 1, 8, facts) == -(-37 // rows)  # a block per item
    assert gpu_quant.q8_grid(rt, 0, "q4_0", 16384, 4128, 1, 8, facts) == gpu_quant.q8_grid(
        rt, 0, "q4_0", 16384, 4128, 1, 8
    )
    older = _Sms()
    older.driver = SimpleNamespace(arch=lambda ordinal: "sm_80")
    assert not gpu_quant.q8_bulk(older, 0, "q4_0", 1, 4096, facts) and gpu_quant.q8_one_apart("q4_0", facts)
    assert not gpu_quant.q8_x_shared(rt, "q4_0", 1, 4096, facts)  # x stays in global memory
    every, fewer, none = bench.explore_variants(["bulk-all", "bulk-per-sm-3", "bulk-none"], None)
    assert every.entry(rt, "q4_0", 1, 16384) == "qmatvec_q8_1_one_q4_0"
    assert every.grid(rt, "q4_0", 16384, 16384, 1) == 132 * gpu_quant.QMATVEC_Q8_BULK_PER_SM
    assert every.grid(rt, "q4_0", 37, 4096, 1) == -(-37 // 4)  # the build's own rows an item
    assert fewer.grid(rt, "q5_0", 16384, 16384, 1) == 132 * 3
    assert none.entry(rt, "q5_0", 1, 16384) == "qmatvec_q8_1_few_q5_0"


def test_one_row_of_a_narrow_weight_takes_fewer_rows_an_item_where_groups_of_lanes_take_them():
    """QMATVEC_Q8_ROWS_X1_NARROW (here 4): one row of x of the blocks of 32 of
    QMATVEC_Q8_ROWS_X1_NARROW_BLOCKS on fewer than QMATVEC_Q8_NARROW_N weight rows whose groups of
    lanes take the items (k / 32 at most QMATVEC_Q8_LANE_UNITS units a lane); the other blocks of
    32, longer rows (a block an item), wider weights, two rows of x and the blocks of 256 keep their
    rows; an explore build decides alike."""
    from generated import kernel_facts as kf
    from runtime.gpu import quant as gpu_quant

    facts = dict(gpu_quant.QMATVEC_Q8_ROWS_FACTS, QMATVEC_Q8_ROWS_X1_NARROW=4)
    facts["QMATVEC_Q8_ROWS_X1_NARROW_BLOCKS"] = 0b11101  # all but q4_1
    narrow, k = kf.QMATVEC_Q8_NARROW_N - 1, 32 * 32 * kf.QMATVEC_Q8_LANE_UNITS  # the longest by groups

    def rows(fmt: str, nx: int, n: int, k: int) -> int:
        return gpu_quant.q8_item_rows(fmt, nx, n, k, facts)

    assert kf.QMATVEC_Q8_ROWS_X1 != 4
    assert rows("q4_0", 1, narrow, k) == rows("q8_0", 1, narrow, k) == 4
    assert rows("q4_1", 1, narrow, k) == kf.QMATVEC_Q8_ROWS_X1  # not of the blocks named
    assert rows("q8_0", 1, narrow, k + 32) == kf.QMATVEC_Q8_ROWS_X1
    assert rows("q4_0", 1, narrow + 1, k) == kf.QMATVEC_Q8_ROWS_X1
    assert rows("q4_0", 2, narrow, k) == kf.QMATVEC_Q8_ROWS_X2
    assert rows("q4_k", 1, narrow, k) == kf.QMATVEC_Q8_ROWS_K_X1
    shipped = bench.explore_variants(["shipped"], None)[0]
    for fmt in gpu_quant.BLOCK32_BITS:  # the shipped build's rule is the runtime's
        assert shipped.item_rows(fmt, 1, narrow, k) == (
            kf.QMATVEC_Q8_ROWS_X1_NARROW
            if (kf.QMATVEC_Q8_ROWS_X1_NARROW_BLOCKS >> gpu_quant.BLOCK32_BITS.index(fmt)) & 1
            else kf.QMATVEC_Q8_ROWS_X1
        )
    four, two = bench.explore_variants(["rows-x1-narrow-4", "rows-x1-narrow-2"], None)
    assert four.item_rows("q5_1", 1, narrow, k) == 4 and two.item_rows("q5_1", 1, narrow, k) == 2
    assert four.item_rows("q5_1", 1, narrow, k + 32) == kf.QMATVEC_Q8_ROWS_X1
    assert four.item_rows("q5_1", 1, narrow + 1, k) == kf.QMATVEC_Q8_ROWS_X1


def test_every_fact_the_grid_follows_reaches_an_explore_build():
    """Each fact of QMATVEC_Q8_GRID_FACTS is read by hip/qmatvec_q8.hip (OPGEN_<name>) or named in
    bench/ggml.py's RUNTIME_FACTS, so that an explore build's grid and entry follow its own value:
    a fact only the runtime reads and RUNTIME_FACTS leaves out reaches a build as 0 (an older
    source's value), its grid then one block."""
    from runtime.gpu import quant as gpu_quant
    from runtime.gpu.compile import HIP_DIR

    text = (HIP_DIR / "qmatvec_q8.hip").read_text()
    lost = [f for f in gpu_quant.QMATVEC_Q8_GRID_FACTS if f"OPGEN_{f}" not in text and f not in bench.RUNTIME_FACTS]
    assert lost == []
    shipped = bench.explore_variants(["shipped"], None)[0]
    assert shipped.grid_facts() == gpu_quant.QMATVEC_Q8_GRID_FACTS


def test_one_row_of_the_stream_formats_takes_the_stream_entry_where_it_fits():
    """QMATVEC_Q8_STREAM_K (q2_K, q3_K, q6_K): one row of x, k a multiple of 2048 of at least
    STREAM_BLOCKS blocks, 16-byte aligned weights, on sm_90 takes qmatvec_q8_1_stream_<fmt>: a
    block a multiprocessor of STREAM_WARPS reading warps and a filling one, fewer reading warps
    where two slots a warp would not fit beside x's row (q3_K's chunks of 64 blocks, q6_K's
    blocks of 210 bytes); every other case keeps its entry. QMatMul
    takes q6_K's stream over its exact-x kernel, and keeps that kernel where the stream does not
    apply. An explore build launches as its facts say."""
    from generated import kernel_facts as kf
    from runtime.gpu import quant as gpu_quant

    rt = _Sms()
    rt.switches = SimpleNamespace(qmatmul_exact_x=False)
    warps = kf.QMATVEC_Q8_STREAM_WARPS
    assert [f for f in gpu_quant.BLOCK256_BITS if gpu_quant.q8_stream(rt, 0, f, 1, 16384, 0)] == [
        "q2_k",
        "q3_k",
        "q6_k",
    ]
    for rows, k, w in ((2, 16384, 0), (1, 4096, 0), (1, 8192 + 1024, 0), (1, 16384, 8)):
        assert not gpu_quant.q8_stream(rt, 0, "q3_k", rows, k, w), (rows, k, w)
    assert not gpu_quant.q8_stream(_Cuda("sm_80"), 0, "q3_k", 1, 16384, 0)
    assert not gpu_quant.q8_stream(_Cuda("sm_120", 101376), 0, "q3_k", 1, 16384, 0)  # 99 KiB a block
    # beside x's row (21 KiB) and the 4 KiB left to other kernels: q3_K's two slots of pairs of rows
    # of 64 blocks (14 KiB) for 7 warps, q6_K's of chunks of 32 blocks (6.6 KiB) for 15
    assert [gpu_quant.stream_warps(f, 16384) for f in ("q2_k", "q3_k", "q6_k")] == [warps, 7, 15]
    # x's row of 65536 values takes 84 KiB: room for two slots of 10 warps of q6_K's chunks of 32 blocks
    assert gpu_quant.stream_warps("q6_k", 65536) == 10 and gpu_quant.q8_stream(rt, 0, "q6_k", 1, 65536, 0)
    assert gpu_quant.q8_stream_launch(rt, 0, "q2_k", 16384, 16384) == (132, 32 * (warps + 1))
    assert gpu_quant.q8_stream_launch(rt, 0, "q6_k", 37, 16384) == (37, 32 * 16)  # a block per weight row
    assert gpu_quant.q8_stream_launch(rt, 0, "q3_k", 37, 16384) == (19, 32 * 8)  # a block per pair of rows
    # q2_K's pairs of rows in chunks of 32 blocks: STREAM_WARPS of them, not q3_K's STREAM_PAIR_WARPS
    assert gpu_quant.q8_stream_launch(rt, 0, "q2_k", 37, 16384) == (19, 32 * (warps + 1))
    assert gpu_quant.quantized_x(rt, "q6_k", 1, 16384, 16384) and not gpu_quant.quantized_x(rt, "q6_k", 1, 4096, 4096)
    shipped, none = bench.explore_variants(["shipped", "stream-none"], None)
    assert shipped.entry(rt, "q3_k", 1, 16384, 16384) == "qmatvec_q8_1_stream_q3_k"
    assert (shipped.grid(rt, "q3_k", 16384, 16384, 1), shipped.threads(rt, "q3_k", 1, 16384, 16384)) == (132, 32 * 8)
    assert shipped.entry(rt, "q3_k", 1, 16384) == none.entry(rt, "q3_k", 1, 16384, 16384) == "qmatvec_q8_1_one_q3_k"
    # a source from before STREAM_PAIR_WARPS_K held every format of pairs at STREAM_PAIR_WARPS
    older = dataclasses.replace(
        shipped, facts={f: v for f, v in shipped.facts.items() if f != "QMATVEC_Q8_STREAM_PAIR_WARPS_K"}
    )
    assert shipped.threads(rt, "q2_k", 1, 16384, 16384) == 32 * (warps + 1)
    assert older.threads(rt, "q2_k", 1, 16384, 16384) == 32 * (kf.QMATVEC_Q8_STREAM_PAIR_WARPS + 1)
