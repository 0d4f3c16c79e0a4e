"""bench/spread.py: several bench/gpu.py runs side by side, each row's range."""

from bench.spread import spread_table


def _run(device: str, rows: dict) -> dict:
    return {"device": device, "rows": rows}


def test_each_numeric_row_gets_every_run_and_its_range():
    runs = [
        _run("H100", {"exp: opgen / torch": 0.97, "status": "cuDNN 9"}),
        _run("H100", {"exp: opgen / torch": 1.03, "status": "cuDNN 9"}),
        _run("H100", {"exp: opgen / torch": 0.91, "status": "cuDNN 9"}),
    ]
    lines = spread_table(runs).splitlines()
    assert lines[0] == "Device: H100. 3 runs, each a fresh process."
    assert "| exp: opgen / torch | 0.970 | 1.030 | 0.910 | 0.910-1.030 |" in lines
    assert "| status | cuDNN 9 | cuDNN 9 | cuDNN 9 |  |" in lines


def test_a_row_one_run_lacks_says_so_and_gets_no_range():
    runs = [_run("H100", {"q4_0: % copy": 57.5}), _run("H200", {"quant failed": "DTypeMismatch: a | b"})]
    text = spread_table(runs)
    assert text.startswith("Device: H100; H200.")
    assert "| q4_0: % copy | 57.500 | (absent) |  |" in text
    assert "| quant failed | (absent) | DTypeMismatch: a / b |  |" in text


def test_make_bench_runs_are_read_by_their_sections():
    """cpu.json nests its figures by section and row; each figure becomes a row of its own,
    the per-run lists (every timed run) left out, the machine standing for the device."""
    run = {
        "machine": "x86_64, 2 cores",
        "generation": {"shipped ops.yaml": {"full_s": 0.5, "full_runs_s": [0.5, 0.6]}},
        "torchgen": {"full_s": 25.0, "torch": "2.13.0"},
        "dispatch": {"unary exp, 16 f32": {"kind": "unary", "added_ns": 300.0}},
    }
    later = {**run, "dispatch": {"unary exp, 16 f32": {"kind": "unary", "added_ns": 500.0}}}
    text = spread_table([run, later])
    assert text.startswith("Device: x86_64, 2 cores. 2 runs")
    assert "| generation: shipped ops.yaml: full_s | 0.500 | 0.500 | 0.500-0.500 |" in text
    assert "| torchgen: full_s | 25.000 | 25.000 | 25.000-25.000 |" in text
    assert "| dispatch: unary exp, 16 f32: added_ns | 300.000 | 500.000 | 300.000-500.000 |" in text
    assert "full_runs_s" not in text
