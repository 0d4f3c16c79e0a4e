"""The generator tests' harness: paths, an in-process CLI, generating and importing
a package from a registry, reading the expectations of the broken-registry corpus."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner, Result

from generator.cli import main as cli_main
from generator.registry.loader import load_file, load_text
from generator.registry.validate import validate
from generator.targets.python import render

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
MINI_DIR = FIXTURES / "mini"
MINI = MINI_DIR / "ops.yaml"
MINI_RT = MINI_DIR / "mini_rt"
BROKEN = FIXTURES / "broken"
GOLDEN = REPO / "tests" / "golden" / "mini"

# A registry-position diagnostic as the CLI prints it: FILE:LINE:COL: message
DIAGNOSTIC = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<message>.+)$")


# ----------------------------------------------------------------------------- CLI


def run_cli(*args: object) -> Result:
    """Run `gen` in-process. Unexpected exceptions are caught into result.exception."""
    return CliRunner().invoke(cli_main, [str(a) for a in args], catch_exceptions=True)


def crashed(result: Result) -> bool:
    """True when the CLI ended in a Python exception rather than an exit status."""
    return result.exception is not None and not isinstance(result.exception, SystemExit)


def diagnostics(result: Result, path: Path | str) -> list[tuple[int, int, str]]:
    """(line, col, message) of every `path:line:col: message` line on stderr, in order."""
    out = []
    for line in result.stderr.splitlines():
        m = DIAGNOSTIC.match(line)
        if m and m["path"] == str(path):
            out.append((int(m["line"]), int(m["col"]), m["message"]))
    return out


# ----------------------------------------------------------------------------- workspaces


def workspace(root: Path) -> Path:
    """A directory holding a copy of the fixture runtimes (mini_rt/), so that registries
    written into it resolve `runtime: mini_rt.<name>` the way the fixture's does."""
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "mini_rt").exists():
        shutil.copytree(MINI_RT, root / "mini_rt", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def snapshot(directory: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under `directory` (recursively): bytes, inode and mtime_ns."""
    out = {}
    for path in sorted(directory.rglob("*")):
        if path.is_file():
            st = path.stat()
            out[str(path.relative_to(directory))] = (path.read_bytes(), st.st_ino, st.st_mtime_ns)
    return out


# ----------------------------------------------------------------------------- generating


def model_of_text(text: str, name: str = "registry.yaml", runtime_root: Path = MINI_DIR):
    return validate(load_text(text, name), runtime_root)


def render_text(text: str, name: str = "registry.yaml", runtime_root: Path = MINI_DIR) -> dict[str, str]:
    return render(model_of_text(text, name, runtime_root))


def render_file(path: Path = MINI) -> dict[str, str]:
    return render(validate(load_file(str(path)), path.resolve().parent))


def write_package(rendered: dict[str, str], out: Path) -> Path:
    out.mkdir(parents=True)
    for rel, text in rendered.items():
        (out / rel).write_text(text, encoding="utf-8", newline="\n")
    return out


class Importer:
    """Imports generated packages (by directory) and forgets them afterwards, so that two
    tests may each import a package called `minipkg` from their own directory."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.paths: list[str] = []

    def __call__(self, package_dir: Path):
        parent, name = str(package_dir.parent), package_dir.name
        assert name not in sys.modules or name in self.names, f"{name} already imported elsewhere"
        self._forget(name)
        if str(MINI_DIR) not in sys.path:
            sys.path.insert(0, str(MINI_DIR))
            self.paths.append(str(MINI_DIR))
        sys.path.insert(0, parent)
        self.paths.append(parent)
        importlib.invalidate_caches()
        self.names.append(name)
        try:
            return importlib.import_module(name)
        finally:
            sys.path.remove(parent)
            self.paths.remove(parent)

    @staticmethod
    def _forget(name: str) -> None:
        for mod in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[mod]

    def close(self) -> None:
        for name in self.names:
            self._forget(name)
        for path in self.paths:
            if path in sys.path:
                sys.path.remove(path)
        self.names.clear()
        self.paths.clear()


# ----------------------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class Expectation:
    line: int
    col: int
    fragment: str


EXPECT = re.compile(r"^#\s*expect:\s*(\d+):(\d+)\s+(.+?)\s*$")
SCHEMA = re.compile(r"^#\s*schema:\s*(reject|accept)\s*$")


def corpus_header(path: Path) -> tuple[list[Expectation], str | None]:
    """The `# expect: LINE:COL fragment` lines and the `# schema: reject|accept` line at the
    top of a broken registry (read as bytes: some files are deliberately not UTF-8)."""
    expectations, schema = [], None
    for raw in path.read_bytes().splitlines():
        line = raw.decode("utf-8", errors="replace")
        if not line.startswith("#"):
            break
        if m := EXPECT.match(line):
            expectations.append(Expectation(int(m[1]), int(m[2]), m[3]))
        elif m := SCHEMA.match(line):
            schema = m[1]
    return expectations, schema


def corpus() -> list[Path]:
    return sorted(BROKEN.glob("*.yaml"))


# ----------------------------------------------------------------------------- source inspection


def match_cases(function: ast.FunctionDef) -> list[list[str]]:
    """For each `match` statement in a function, the source text of each case pattern."""
    return [[ast.unparse(c.pattern) for c in node.cases] for node in ast.walk(function) if isinstance(node, ast.Match)]


def class_methods(module: ast.Module, cls: str) -> dict[str, ast.FunctionDef]:
    node = next(n for n in module.body if isinstance(n, ast.ClassDef) and n.name == cls)
    return {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}


def module_functions(module: ast.Module) -> dict[str, ast.FunctionDef]:
    return {f.name: f for f in module.body if isinstance(f, ast.FunctionDef)}


def undefined_globals(source: str, filename: str = "<generated>") -> set[str]:
    """Names a module's functions read as globals that the module never binds and that are
    not builtins: a NameError waiting for the first call (a tiny pyflakes)."""
    import builtins
    import symtable

    top = symtable.symtable(source, filename, "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    bound |= {c.get_name() for c in top.get_children()}  # def / class at module level
    bound |= {"__file__", "__name__", "__spec__", "__package__", "__doc__"}  # every module has these
    missing: set[str] = set()

    def walk(table: symtable.SymbolTable) -> None:
        for sym in table.get_symbols():
            if sym.is_referenced() and sym.is_global() and not sym.is_declared_global():
                name = sym.get_name()
                if name not in bound and not hasattr(builtins, name):
                    missing.add(name)
        for child in table.get_children():
            walk(child)

    for child in top.get_children():
        walk(child)
    for sym in top.get_symbols():  # module-level reads
        name = sym.get_name()
        if sym.is_referenced() and name not in bound and not hasattr(builtins, name):
            missing.add(name)
    return missing


def unused_imports(source: str) -> set[str]:
    """Names a module imports and never reads (a tiny pyflakes F401). An import marked
    `noqa: F401` (made for its side effect) and names listed in __all__ count as read."""
    tree = ast.parse(source)
    lines = source.splitlines()
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)) and "noqa: F401" not in lines[node.lineno - 1]:
            imported |= {alias.asname or alias.name.split(".")[0] for alias in node.names}
    read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            read |= {e.value for e in ast.walk(node.value) if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return imported - read
