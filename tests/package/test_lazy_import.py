"""What importing loads. The generated package imports its names on first use (PEP 562) and
each dispatch module takes the backend runtime modules and kernel tables on their first use
(generated/backends.py's lazy_module): importing generated.kernel_facts, as the GPU runtime
does, loads no backend; a cpu op loads no GPU runtime. Each check runs in a fresh interpreter,
since this test process has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

import generated as g

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ("runtime.cpu", "runtime.cuda", "runtime.rocm")
DISPATCH = ("generated.storage", "generated.device", "generated.conversions", "generated.nn", "generated.quantized")
TABLES = ("generated.kernels_hip", "generated.kernels_numpy")
WATCHED = (*BACKENDS, *DISPATCH, *TABLES, "scipy", "numpy")


def loaded_after(code: str) -> dict:
    """{"loaded": the WATCHED modules in sys.modules after running `code`, "out": what it
    printed last (JSON), if anything}."""
    probe = f"import json, sys\n{code}\nprint(json.dumps([m for m in {WATCHED!r} if m in sys.modules]))"
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    lines = run.stdout.strip().splitlines()
    return {"loaded": set(json.loads(lines[-1])), "out": json.loads(lines[-2]) if len(lines) > 1 else None}


def test_kernel_facts_alone_loads_no_backend():
    assert loaded_after("import generated.kernel_facts")["loaded"] == set()


def test_a_gpu_runtime_module_alone_loads_no_backend_runtime_module_of_the_package():
    """runtime.gpu.<x> imports generated.kernel_facts; neither the generated dispatch modules,
    the vendor modules nor the cpu runtime come with it (the GPU rand ops borrow the cpu's
    samplers on first use)."""
    loaded = loaded_after("import runtime.gpu.launch, runtime.gpu.nn")["loaded"]
    assert not loaded & {*BACKENDS, *DISPATCH, *TABLES}, loaded


def test_importing_the_package_loads_nothing_heavy():
    assert loaded_after("import generated")["loaded"] == set()


def test_a_cpu_op_loads_no_gpu_runtime():
    code = (
        "import numpy as np\nimport generated as g\n"
        "cpu = g.Device.parse('cpu')\n"
        "x = cpu.storage_from_slice(np.arange(6, dtype=np.float32))\n"
        "y = x.affine(g.Layout.contiguous((6,)), 2.0, 1.0)\n"
        "print(json.dumps(g.to_numpy(y, g.Layout.contiguous((6,))).tolist()))"
    )
    result = loaded_after(code)
    assert result["out"] == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]
    assert "runtime.cpu" in result["loaded"]
    assert not result["loaded"] & {"runtime.cuda", "runtime.rocm", "generated.kernels_hip", "scipy"}, result["loaded"]


def test_scipy_loads_with_the_first_op_that_calls_it():
    """generated/kernels_numpy.py takes scipy.special (erf, gelu_erf) on first use."""
    code = (
        "import numpy as np\nimport generated as g\n"
        "x = g.Device.parse('cpu').storage_from_slice(np.array([0.5], dtype=np.float32))\n"
        "layout = g.Layout.contiguous((1,))\n"
        "exp = g.to_numpy(x.unary(g.UnaryOp.EXP, layout), layout).tolist()\n"
        "before = 'scipy' in sys.modules\n"
        "erf = g.to_numpy(x.unary(g.UnaryOp.ERF, layout), layout).tolist()\n"
        "print(json.dumps([exp, before, erf]))"
    )
    result = loaded_after(code)
    exp, before, erf = result["out"]
    assert exp == [float(np.float32(np.exp(np.float32(0.5))))] and not before
    assert erf == [float(np.float32(0.5204998778130465))] and "scipy" in result["loaded"]


def test_availability_loads_the_backend_it_asks_about():
    code = "import generated as g\nprint(json.dumps(g.Backend.ROCM.unavailable_reason()))"
    result = loaded_after(code)
    assert result["out"] == g.Backend.ROCM.unavailable_reason()
    assert "runtime.rocm" in result["loaded"] and "runtime.cuda" not in result["loaded"]


def test_after_first_use_the_arms_read_the_module_itself():
    """The stand-in puts the module in its place in every module of the package (and in the
    availability table): the arms read a plain module global, as after `import`."""
    import runtime.cpu
    import runtime.cuda
    from generated import backends, conversions, device, nn, quantized, storage

    g.Device.parse("cpu").zeros((2,), g.DType.F32)  # a first use, if this process had none
    for backend in (g.Backend.CPU, g.Backend.CUDA):
        backend.unavailable_reason()
    for module in (storage, device, conversions, nn, quantized):
        assert module._rt_cpu is runtime.cpu, module.__name__
        assert module._rt_cuda is runtime.cuda, module.__name__
    assert backends._RUNTIMES[g.Backend.CPU] is runtime.cpu
    assert backends.lazy_module("runtime.cpu") is runtime.cpu


def test_threads_meeting_at_the_first_use_all_get_the_module():
    code = (
        "import threading\nimport numpy as np\nimport generated as g\n"
        "cpu, layout, out, barrier = g.Device.parse('cpu'), g.Layout.contiguous((4,)), [], threading.Barrier(8)\n"
        "def work():\n"
        "    barrier.wait()\n"
        "    x = cpu.storage_from_slice(np.ones(4, dtype=np.float32))\n"
        "    out.append(g.to_numpy(x.affine(layout, 3.0, 1.0), layout).tolist())\n"
        "threads = [threading.Thread(target=work) for _ in range(8)]\n"
        "[t.start() for t in threads]\n[t.join() for t in threads]\n"
        "print(json.dumps(out))"
    )
    assert loaded_after(code)["out"] == [[4.0] * 4] * 8


def test_every_public_name_and_module_is_an_attribute():
    """__all__, dir(), `from generated import *` and the package's modules as attributes, as
    when the package imported them eagerly."""
    namespace: dict = {}
    exec("from generated import *", namespace)
    assert set(g.__all__) <= set(namespace) and set(g.__all__) <= set(dir(g))
    assert g.Device.parse("cpu").backend is g.Backend.CPU
    assert g.nn.__name__ == "generated.nn" and g.storage.Storage is g.Storage
    code = "import generated as g\nprint(json.dumps([g.kernels_hip.__name__, hasattr(g, 'no_such_name')]))"
    assert loaded_after(code)["out"] == ["generated.kernels_hip", False]


def test_a_gpu_backend_runtime_brings_its_kernel_tables():
    """Importing a GPU vendor module (what a device's first use does) loads the generated launch
    tables with it, so the first op does not; it needs no GPU to import."""
    for vendor in ("runtime.cuda", "runtime.rocm"):
        assert "generated.kernels_hip" in loaded_after(f"import {vendor}")["loaded"], vendor


def test_storage_and_device_modules_import_one_way():
    """storage.py and quantized.py do not import device.py (device.py builds their objects and
    imports them): importing either alone leaves device.py out. Storage.device() takes the Device
    class that device.py registers with backends.py on import; a storage built by hand from a
    runtime buffer before that says what to import, and names its device once it is."""
    code = (
        "import numpy as np\nimport runtime.cpu as rt\n"
        "from generated.backends import On\nfrom generated.storage import Storage\n"
        "import generated.quantized\n"
        "alone = 'generated.device' in sys.modules\n"
        "s = Storage(On.CPU, rt.storage_from_slice(0, np.ones(2, np.float32)))\n"
        "try:\n    s.device()\n    before = None\nexcept RuntimeError as exc:\n    before = str(exc)\n"
        "import generated.device\n"
        "print(json.dumps([alone, before, str(s.device()), s.device() == generated.device.Device.parse('cpu')]))"
    )
    alone, before, after, same = loaded_after(code)["out"]
    assert alone is False
    assert before == "cpu: import generated.device before asking a storage for its device"
    assert after == "cpu" and same
