"""The backend contract (generated/contract.py): one Protocol per backend, which mypy checks
each runtime module against, and from which `gen new-backend` writes its stubs.

mypy runs as a subprocess on a generated package in a temporary workspace; each test needs
the answer of one run, about 5 s."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

from tools_harness import REPO, mini_copy, run_cli

from generator import contract
from generator.registry.loader import load_file
from generator.registry.validate import validate


def mypy(contract_file: Path, cwd: Path) -> subprocess.CompletedProcess:
    """mypy on one generated contract.py, following imports silently as `make lint` does: it
    reports what breaks the contract, not the runtime modules' own typing."""
    env = {**os.environ, "MYPYPATH": str(REPO)}
    args = ["--follow-imports=silent", "--ignore-missing-imports", "--no-incremental", "--python-version", "3.11"]
    return subprocess.run(
        [sys.executable, "-m", "mypy", *args, str(contract_file.relative_to(cwd))],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _protocol_members(path: Path, protocol: str) -> dict[str, list[str]]:
    """member -> parameter names (self dropped) of a Protocol class of a generated contract."""
    cls = next(n for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef) and n.name == protocol)
    return {
        f.name: [a.arg for a in (*f.args.posonlyargs, *f.args.args)][1:]
        for f in cls.body
        if isinstance(f, ast.FunctionDef)
    }


def _stub_params(path: Path) -> dict[str, list[str]]:
    return {
        f.name: [a.arg for a in f.args.args] for f in ast.parse(path.read_text()).body if isinstance(f, ast.FunctionDef)
    }


def test_the_shipped_runtimes_satisfy_their_contracts():
    """cpu, cuda and rocm against CpuRuntime, CudaRuntime and RocmRuntime, as `make lint` checks."""
    result = mypy(REPO / "generated" / "contract.py", REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    text = (REPO / "generated" / "contract.py").read_text()
    for backend in ("cpu", "cuda", "rocm"):
        assert f"    _{backend}: {backend.capitalize()}Runtime = runtime.{backend}\n" in text


def test_a_scaffold_satisfies_the_contract_and_a_changed_signature_breaks_it(tmp_path):
    """`gen new-backend toy` writes one stub per member of ToyRuntime, with its parameters;
    mypy accepts the module, then names the member whose arity a person got wrong."""
    registry = mini_copy(tmp_path)
    assert run_cli("--registry", registry, "new-backend", "toy").exit_code == 0
    out = tmp_path / "pkg"
    result = run_cli("--registry", registry, "--out", out)
    assert result.exit_code == 0, result.output
    toy = tmp_path / "mini_rt" / "toy.py"
    members = _protocol_members(out / "contract.py", "ToyRuntime")
    stubs = _stub_params(toy)
    assert stubs.pop("availability") == [] and members.pop("availability") == []
    assert stubs == members  # one source: the same functions, the same parameters, in order
    assert "    _toy: ToyRuntime = mini_rt.toy\n" in (out / "contract.py").read_text()
    assert mypy(out / "contract.py", tmp_path).returncode == 0

    text = toy.read_text()
    toy.write_text(re.sub(r"def affine\(inner, layout, mul, add\):", "def affine(inner, layout, mul):", text))
    assert run_cli("--registry", registry, "--out", out).exit_code == 0
    broken = mypy(out / "contract.py", tmp_path)
    assert broken.returncode == 1
    assert 'variable has type "ToyRuntime"' in broken.stdout and "def affine(" in broken.stdout, broken.stdout


def test_a_runtime_lacking_a_function_is_named_not_checked(tmp_path):
    """The fixture's gpu runtime implements only some ops: its arms raise or fall back, and
    the contract says what it lacks instead of asserting what mypy would refuse."""
    registry = mini_copy(tmp_path)
    out = tmp_path / "pkg"
    assert run_cli("--registry", registry, "--out", out).exit_code == 0
    text = (out / "contract.py").read_text()
    lacks = re.search(r"# mini_rt\.gpu: not checked while it lacks (.+(?:\n    # .+)*)", text)  # wrapped at 120
    assert lacks is not None, text
    model = validate(load_file(str(registry)), tmp_path)
    gpu = model.backend("gpu")
    expected = [f.name for f in contract.functions(model, gpu) if not gpu.defines(f.name)]
    assert re.split(r",\s+(?:#\s+)?", lacks[1]) == expected and "unary" in expected
    assert "_gpu: GpuRuntime" not in text
    assert mypy(out / "contract.py", tmp_path).returncode == 0


def test_every_call_of_the_generated_arms_is_a_member_of_the_contract():
    """Each `_rt_<backend>.<fn>(...)` call in the generated package (Storage, Device, QStorage,
    nn, conversions) names a member of that backend's Protocol and passes as many arguments
    as it declares; every member but availability (backends.py calls it through a table) and
    to_host is called by some arm."""
    package = REPO / "generated"
    protocols = {
        b: _protocol_members(package / "contract.py", f"{b.capitalize()}Runtime") for b in ("cpu", "cuda", "rocm")
    }
    called = set()
    for name in ("storage.py", "device.py", "quantized.py", "nn.py", "conversions.py"):
        for node in ast.walk(ast.parse((package / name).read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id.startswith("_rt_")
            ):
                backend, fn = node.func.value.id.removeprefix("_rt_"), node.func.attr
                assert fn in protocols[backend], f"{name}: {backend} arm calls {fn}, not in the contract"
                assert len(node.args) == len(protocols[backend][fn]), f"{name}: {backend}.{fn} arity"
                called.add((backend, fn))
    # and nothing in the contract that no arm calls; to_host only fallback arms call, and no
    # shipped backend falls back today
    assert called == {
        (b, fn) for b, members in protocols.items() for fn in members if fn not in ("availability", "to_host")
    }
