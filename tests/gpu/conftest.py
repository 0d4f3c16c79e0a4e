import pytest

import runtime.gpu.memory


@pytest.fixture(autouse=True)
def poison_fresh_gpu_buffers(monkeypatch):
    """Fresh GPU buffers hold 0xFF bytes (NaN, the largest integer): an element a kernel
    fails to write cannot pass as a right answer."""
    monkeypatch.setattr(runtime.gpu.memory, "POISON", True)


@pytest.fixture(autouse=True, scope="session")
def reduce_source_variant():
    """OPGEN_TEST_REDUCE_DEFINES="NAME=VALUE,...": the GPU tests run a variant before it becomes
    the default: names OPGEN_* are #defines put before hip/reduce.hip (its -D switches; the
    runtime's COLUMN_PACKS and COLUMN_MIN_BLOCKS follow theirs), other names integer settings of
    runtime/gpu/reduce.py (COLUMN_BLOCK=512). Unset: the source and settings as they are."""
    import os

    spec = os.environ.get("OPGEN_TEST_REDUCE_DEFINES", "")
    pairs = [item.split("=", 1) for item in spec.split(",") if item.strip()]
    if not pairs:
        yield
        return
    import importlib

    import runtime.gpu.reduce as reductions
    from runtime.gpu.compile import HIP_DIR

    path = str(HIP_DIR / "reduce.hip")
    pairs = [(name.strip(), value.strip()) for name, value in pairs]
    text = "".join(f"#define {name} {value}\n" for name, value in pairs if name.startswith("OPGEN_"))
    text += (HIP_DIR / "reduce.hip").read_text(encoding="utf-8")
    settings = {name: int(value) for name, value in pairs if not name.startswith("OPGEN_")}
    for fact in ("COLUMN_PACKS", "COLUMN_MIN_BLOCKS"):  # the facts whose -D the runtime follows
        if f"OPGEN_{fact}" in dict(pairs):
            settings[fact] = int(dict(pairs)[f"OPGEN_{fact}"])
    kept = {name: getattr(reductions, name) for name in settings}  # AttributeError: no such setting
    for name, value in settings.items():
        setattr(reductions, name, value)
    runtimes = []
    for backend in ("cuda", "rocm"):
        try:
            runtimes.append(importlib.import_module(f"runtime.{backend}")._rt)
        except Exception:  # noqa: BLE001, S112  (a backend that does not load here)
            continue
    for rt in runtimes:
        rt._sources[path] = text
    yield
    for name, value in kept.items():
        setattr(reductions, name, value)
    for rt in runtimes:
        rt._sources.pop(path, None)


@pytest.fixture
def cuda_switches_restored():
    """The cuda runtime's switches as they were before the test, for the modules that set them
    (imported here only where asked: runtime.cuda needs a cuda that can run)."""
    import runtime.cuda as cuda

    kept = cuda._rt.switches.__dict__.copy()
    yield
    cuda._rt.switches.__dict__.update(kept)
