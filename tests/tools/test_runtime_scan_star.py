"""A runtime module may take its functions from another with `from <module> import *` (the GPU
vendor modules take theirs from runtime/gpu/exports.py): runtime_scan follows it as Python does,
to the other module's `__all__`, or else its public names, and lists the files it read."""

from __future__ import annotations

import functools
import textwrap
from pathlib import Path

from generator.registry.runtime_scan import scan

ROOT = Path(__file__).resolve().parents[2]


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root.joinpath(*name.split(".")).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_public_names_of_a_star_imported_module_count(tmp_path):
    write(
        tmp_path,
        {
            "rt.vendor": "from rt.shared import *  # noqa\n\ndef own():\n    return 1\n",
            "rt.shared": """\
            import functools as _functools
            from rt.helpers import helper as _helper
            _private = 1
            affine = _functools.partial(_helper, 1)
            def unary(x):
                return x
            def zeros(ordinal):
                raise NotImplementedForBackend("toy", "zeros")
            """,
            "rt.helpers": "def helper(*a):\n    return a\n",
        },
    )
    module = scan(tmp_path, "rt.vendor")
    assert module.functions == {"own", "affine", "unary"} and module.stubs == {"zeros"}
    assert module.paths == (tmp_path / "rt/vendor.py", tmp_path / "rt/shared.py")


def test_all_limits_what_a_star_import_takes(tmp_path):
    write(
        tmp_path,
        {
            "vendor": "from shared import *\n",
            "shared": "__all__ = ['affine']\naffine = 1\nunary = 2\n",
        },
    )
    assert scan(tmp_path, "vendor").functions == {"affine"}


def test_star_imports_are_followed_through_chains_and_cycles_once(tmp_path):
    write(
        tmp_path,
        {
            "a": "from b import *\ndef fa(): ...\n",
            "b": "from c import *\nfrom a import *\ndef fb(): ...\n",
            "c": "from numpy import *\ndef fc(): ...\n",  # not a module under the root: not read
        },
    )
    module = scan(tmp_path, "a")
    assert module.functions == {"fa", "fb", "fc"}
    assert [p.name for p in module.paths] == ["a.py", "b.py", "c.py"]


def test_an_unreadable_star_imported_module_is_named(tmp_path):
    write(tmp_path, {"vendor": "from shared import *\n", "shared": "def broken(:\n"})
    module = scan(tmp_path, "vendor")
    assert module.error and "shared.py" in module.error


def test_the_gpu_vendor_modules_read_as_they_import():
    """What gen reads from runtime.cuda and runtime.rocm is what Python binds there."""
    import runtime.cuda
    import runtime.rocm

    for module in (runtime.cuda, runtime.rocm):
        read = scan(ROOT, module.__name__)
        assert read.paths[1:] == (ROOT / "runtime/gpu/exports.py", ROOT / "runtime/comm/calls.py")
        assert all(hasattr(module, name) for name in read.functions)
        bound = {
            n
            for n, v in vars(module).items()
            if getattr(v, "__self__", None) is module._rt
            or isinstance(v, functools.partial)
            and v.args[:1] == (module._rt,)
        }
        assert bound <= read.functions and len(bound) >= 58
