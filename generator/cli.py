"""The `gen` command line: generate, check for staleness, show backend parity, emit the schema."""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from pathlib import Path

import click

from . import __version__
from .output import stamp

EXIT_STALE = 1
EXIT_MISSING = 1  # gen audit found a dispatch without some backend
EXIT_INVALID = 2
SCHEMA_PATH = Path(__file__).resolve().parent / "ops.schema.json"
DEFAULT_OUT = Path("generated")  # --out where the registry declares no targets


def _load(registry: Path):
    """The validated model; on a broken registry print every error and exit 2."""
    from .registry.diagnostics import RegistryError
    from .registry.loader import load_file
    from .registry.validate import validate

    searched = (click.get_current_context().find_root().obj or {}).get("searched")
    if searched and not registry.exists():
        click.echo(
            f"{registry}:1:1: cannot read registry: no {registry.name} in {Path.cwd()} or any folder above it; "
            "run gen in the registry's folder (or below it), or name the registry with --registry PATH",
            err=True,
        )
        click.echo(f"{registry}: 1 error; nothing written", err=True)
        sys.exit(EXIT_INVALID)
    if registry.is_dir():
        click.echo(
            f"error: {registry}: is a directory; --registry names the registry file (ops.yaml); nothing written",
            err=True,
        )
        sys.exit(EXIT_INVALID)
    try:
        return validate(load_file(str(registry)), registry.resolve().parent)
    except RegistryError as exc:
        for diagnostic in exc.diagnostics:
            click.echo(str(diagnostic), err=True)
        n = len(exc.diagnostics)
        click.echo(f"{registry}: {n} error{'s' if n != 1 else ''}; nothing written", err=True)
        sys.exit(EXIT_INVALID)


def _render(model, output):
    from .targets import render
    from .targets.python import RenderError

    try:
        return render(model, output)
    except RenderError as exc:
        click.echo(f"error: {exc}; nothing written", err=True)
        sys.exit(EXIT_INVALID)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--registry",
    type=click.Path(path_type=Path),
    default=Path("ops.yaml"),
    show_default=True,
    help="The op registry to generate from.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Directory of the generated Python package.  [default: the registry's python target, else generated]",
)
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit 1 and print a unified diff if any generated file is stale "
    "(its first 5,000 lines; --patch writes all of it).",
)
@click.option(
    "--patch",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --check: also write the diff to this file as a patch that `git apply` accepts "
    "(paths from the top of the git work tree; empty when nothing is stale).",
)
@click.version_option(__version__, prog_name="gen")
@click.pass_context
def main(ctx: click.Context, registry: Path, out: Path | None, check: bool, patch: Path | None) -> None:
    """Generate from the op registry: the Python package in --out, and every other target
    of the registry's `targets:` (the Rust of Candle's dispatch layer) in its folder.

    With no subcommand, regenerate: write the files that changed, remove generated files
    that are no longer produced, and print what was written, left unchanged and removed.
    A broken registry prints every error as FILE:LINE:COL and exits 2 without writing.

    \b
    Exit status: 0 up to date or written, 1 stale (--check), 2 invalid registry.
    """
    searched = ctx.get_parameter_source("registry") is click.core.ParameterSource.DEFAULT
    if searched:
        registry = _find_registry(registry)
    ctx.obj = {"registry": registry, "out": out, "searched": searched}
    if ctx.invoked_subcommand is not None:
        return
    if out is not None and out.exists() and not out.is_dir():
        click.echo(
            f"error: {out}: is a file; --out names the directory of the generated package; nothing written", err=True
        )
        sys.exit(EXIT_INVALID)
    if patch is not None and not check:
        raise click.UsageError("--patch needs --check")
    started = time.perf_counter()
    if gc.isenabled():  # a run makes ~10^6 objects and little garbage: collecting took 0.08 s of 0.9
        gc.disable()
        ctx.call_on_close(gc.enable)
    # Where the last run's stamp may be: --out, else generated/ here or beside the registry.
    for home in dict.fromkeys([out] if out else [DEFAULT_OUT, registry.parent / DEFAULT_OUT]):
        current = stamp.up_to_date(registry, home, out)
        if current is not None:
            _write_patch(patch, "")
            click.echo(f"{home}: {current} generated files up to date")
            return
    from .output.writer import OutputError, WriteRefused, apply, plan, refuse_link
    from .targets import template_files

    model = _load(registry)
    outputs = _outputs(model, out)
    inputs = [*map(Path, model.input_files), *template_files()]
    rendered = [_render(model, output) for output in outputs]  # every target alike
    results = []
    try:
        for output in outputs:  # before the locks, which create missing folders
            refuse_link(output.out)
        _lock(ctx, [o.out for o in outputs], check)  # then plan against folders no other gen is writing
        for output, files in zip(outputs, rendered):
            results.append((output, plan(output.out, files, output.owned)))
            _say_if_interrupted(output.out, results[-1][1], check)
    except WriteRefused as exc:
        click.echo(f"error: {exc}; nothing written", err=True)
        sys.exit(EXIT_INVALID)
    except OutputError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INVALID)
    home = outputs[0].out  # the stamp's folder
    folders = [(o.out, o.owned) for o in outputs]
    default_out = next((o.out for o in _outputs(model, None) if o.name == "python"), None)
    if check:
        _check(results, patch)
        return
    try:
        apply([(output.out, result) for output, result in results])
    except OutputError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_INVALID)
    stamp.record(registry, inputs, home, folders, default_out)
    written = unchanged = removed = 0
    for output, result in results:
        for rel in sorted(result.write):
            click.echo(f"wrote     {output.out / rel}")
        for rel in result.remove:
            click.echo(f"removed   {output.out / rel}")
        written, unchanged, removed = (
            written + len(result.write),
            unchanged + len(result.unchanged),
            removed + len(result.remove),
        )
    click.echo(f"{written} written, {unchanged} unchanged, {removed} removed in {time.perf_counter() - started:.2f}s")


def _check(results, patch: Path | None) -> None:
    """--check: list the stale files and print their diff (cut at DIFF_LINES lines, which
    stderr says), or say every folder is current. Writes nothing but --patch's file: the
    stamp neither (a check run over current files takes its full time again next time)."""
    from .output.writer import DIFF_LINES, capped_diff

    if not any(result.stale for _, result in results):
        _write_patch(patch, "")
        for output, result in results:
            click.echo(f"{output.out}: {len(result.unchanged)} generated files up to date")
        return
    for output, result in results:
        if result.stale:
            click.echo(f"stale generated files in {output.out} (run `gen`):", err=True)
            for rel in result.stale:
                click.echo(f"  {output.out / rel}", err=True)
    text, cut = capped_diff([(result, output.label) for output, result in results], DIFF_LINES)
    click.echo(text, nl=False)
    if cut:
        click.echo(
            f"the diff above stops after {DIFF_LINES:,} lines: {len(cut)} of the stale files' diffs are cut or "
            "not shown (`gen --check --patch FILE` writes all of it)",
            err=True,
        )
    if patch is not None:
        _write_patch(patch, "".join(_git_patch(output.out, result) for output, result in results))
        click.echo(f"wrote {patch}: apply it with `git apply {patch}`", err=True)
    sys.exit(EXIT_STALE)


def _find_registry(default: Path) -> Path:
    """Like git with its .git: ops.yaml here, else in the nearest folder above that has one
    (named relative to here). None anywhere: ops.yaml, whose error then says so."""
    here = Path.cwd()
    for folder in (here, *here.parents):
        if (folder / default).is_file():
            return default if folder == here else Path(os.path.relpath(folder / default, here))
    return default


def _outputs(model, out: Path | None):
    """The target folders of this run; --out on a registry with no python target is refused."""
    from .targets import TargetsRefused, outputs

    try:
        return outputs(model, out)
    except TargetsRefused as exc:
        click.echo(f"error: {exc}; nothing written", err=True)
        sys.exit(EXIT_INVALID)


def _lock(ctx: click.Context, outs: list[Path], check: bool) -> None:
    """Hold the output directories' locks until the command ends: runs on one tree take turns."""
    from .output.writer import locked

    def waiting(out: Path) -> None:
        click.echo(f"{out}: another gen is writing here; waiting for it", err=True)

    ctx.with_resource(locked(outs, exclusive=not check, waiting=waiting))


def _say_if_interrupted(out: Path, result, check: bool) -> None:
    from .output.writer import JOURNAL, interrupted

    changing = interrupted(out)
    if changing is not None and result.stale:
        click.echo(
            f"{out}: a gen was interrupted while writing here ({out / JOURNAL} names the {len(changing)} "
            "files it was changing): the package may mix old and new files"
            + ("; run gen" if check else "; rewriting them"),
            err=True,
        )


def _git_patch(out: Path, result) -> str:
    from .output.patch import PatchRefused, git_patch

    try:
        return git_patch(out, result, Path.cwd())
    except PatchRefused as exc:
        click.echo(f"error: {exc}; no patch written", err=True)
        sys.exit(EXIT_INVALID)


def _write_patch(patch: Path | None, text: str) -> None:
    """Written even when empty, so that a patch left by an earlier run never outlives it."""
    if patch is None:
        return
    from .output import atomic

    if not patch.parent.is_dir():
        click.echo(f"error: {patch.parent} is not a directory; no patch written", err=True)
        sys.exit(EXIT_INVALID)
    atomic.write_text(patch, text)


@main.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.pass_context
def parity(ctx: click.Context, fmt: str) -> None:
    """Show which backend implements which op.

    Computed from the registry and from the runtime modules' source (read with Python's ast):
    'yes' the runtime implements it, 'fallback' it runs on the fallback backend through
    host memory, 'hook' a custom op's <backend>_fwd runs it, 'MISSING' it raises.
    """
    from .tools.parity import parity_rows, render_table

    rows = parity_rows(_load(ctx.obj["registry"]))
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
    else:
        click.echo(render_table(rows))


@main.command()
@click.option("--write", is_flag=True, help=f"Write it to {SCHEMA_PATH.name} beside the generator.")
def schema(write: bool) -> None:
    """Print the JSON Schema of the registry format (for YAML editors)."""
    from .registry.spec import registry_json_schema

    text = json.dumps(registry_json_schema(), indent=2) + "\n"
    if write:
        SCHEMA_PATH.write_text(text, encoding="utf-8")
        click.echo(f"wrote {SCHEMA_PATH}")
    else:
        click.echo(text, nl=False)


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option(
    "--backends",
    "backend_list",
    metavar="A,B,..",
    default=None,
    help="The backends to require, comma-separated (e.g. cpu,cuda,metal,rocm); "
    "no registry is read then.  [default: the registry's backends]",
)
@click.option(
    "--lang",
    type=click.Choice(["python", "rust"]),
    default=None,
    help="Read every file as this language; in directories, only its files. Default: by extension.",
)
@click.option(
    "--require-fwd",
    type=click.Choice(["all", "none"]),
    default="all",
    show_default=True,
    help="all: a custom-op implementation with some <backend>_fwd must have every one; "
    "none: leave implementations to their trait's defaults (trait definitions are still checked).",
)
@click.option("--strict", is_flag=True, help="Notes (backends only a working wildcard takes) fail too.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "sarif"]),
    default="text",
    show_default=True,
    help="text: FILE:LINE:COL lines and a summary; json; sarif (SARIF 2.1.0, for code scanning).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Processes reading files in parallel.  [default: the number of cores]",
)
@click.pass_context
def audit(
    ctx: click.Context,
    paths: tuple[str, ...],
    backend_list: str | None,
    lang: str | None,
    require_fwd: str,
    strict: bool,
    fmt: str,
    jobs: int | None,
) -> None:
    """Find hand-written backend dispatch that lacks a backend.

    Reads PATHS (files, or directories recursed: .py with Python's ast, .rs with
    tree-sitter) and reports, as FILE:LINE:COL, every `match` on a backend enum and every
    if/elif (Rust: if let / else if let) chain over a device or backend with no case for some
    backend; a wildcard case that only fails (Err, bail!, panic!, unreachable!, raise) does
    not count as one. Also Rust traits declaring some `<backend>_fwd` but not all, and
    (--require-fwd all) custom-op implementations defining some but not all. A wildcard that
    does real work is a note. `opgen: allow(rocm)` in a comment on the reported line lets
    that backend pass there.

    \b
    Exit status: 0 nothing missing, 1 something missing (or, with --strict, a note),
    2 bad input (registry, --backends or sources).
    """
    import os

    from .audit import audit as run_audit, sources, summary
    from .audit.report import as_json, as_sarif
    from .registry.diagnostics import RegistryError
    from .registry.loader import load_file
    from .registry.validate import validate

    if backend_list is not None:
        backends = tuple(dict.fromkeys(b.strip() for b in backend_list.split(",") if b.strip()))
        bad = [b for b in backends if not b.isidentifier()]
        if not backends or bad:
            click.echo(
                f"--backends {backend_list!r}: expected backend names separated by commas, like cpu,cuda,rocm", err=True
            )
            sys.exit(EXIT_INVALID)
    else:
        registry = ctx.obj["registry"]
        if not registry.exists():
            click.echo(
                f"{registry}: no registry here; name the backends to require with "
                "--backends cpu,cuda,... or a registry with --registry",
                err=True,
            )
            sys.exit(EXIT_INVALID)
        try:
            checked = validate(load_file(str(registry)), registry.resolve().parent)
            backends = tuple(b.name for b in checked.backends)
            rust = next((t.profile for t in checked.targets if t.name == "rust" and t.profile), None)
            if lang == "rust" and rust is not None:  # the Rust output has the profile's backends too (Metal)
                backends += tuple(b.name for b in rust.backends)
        except RegistryError as exc:
            for diagnostic in exc.diagnostics:
                click.echo(str(diagnostic), err=True)
            sys.exit(EXIT_INVALID)
    files, errors = sources(list(paths), lang)
    if any(f.lang == "rust" for f in files):
        try:
            import tree_sitter  # noqa: F401
            import tree_sitter_rust  # noqa: F401
        except ImportError:
            errors.append(
                f"{next(f.path for f in files if f.lang == 'rust')}:1:1: reading Rust needs the "
                "tree-sitter and tree-sitter-rust packages (pip install tree-sitter tree-sitter-rust)"
            )
            files = [f for f in files if f.lang != "rust"]
    reports = run_audit(files, backends, jobs or os.cpu_count() or 1, require_fwd == "all")
    errors += [r.error for r in reports if r.error]
    lines = summary(reports, backends)
    if fmt == "json":
        click.echo(as_json(reports, errors, lines))
    elif fmt == "sarif":
        click.echo(as_sarif(reports, errors))
    else:
        for report in reports:
            for finding in report.findings:
                click.echo(str(finding))
        for error in errors:
            click.echo(error, err=True)
        click.echo("\n".join(lines))
    if errors:
        sys.exit(EXIT_INVALID)
    failing = {"missing", "wildcard"} if strict else {"missing"}
    if any(f.kind in failing for r in reports for f in r.findings):
        sys.exit(EXIT_MISSING)


@main.command("new-backend")
@click.argument("name")
@click.option(
    "--runtime",
    "module",
    metavar="MODULE",
    default=None,
    help="Dotted name of the runtime module to write.  "
    "[default: beside the other backends' runtime modules: runtime.NAME]",
)
@click.option(
    "--ordinal/--no-ordinal",
    default=True,
    show_default=True,
    help="Whether devices of the backend are numbered (NAME:0, NAME:1, ...).",
)
@click.option("--doc", default=None, help="A line describing the backend (the registry's `doc:`).")
@click.pass_context
def new_backend(ctx: click.Context, name: str, module: str | None, ordinal: bool, doc: str | None) -> None:
    """Add backend NAME: one line in the registry and a runtime module of stubs.

    The line goes at the end of `backends:`, in the style of the entries there; comments and
    layout are kept. The runtime module gets availability() and one function per runtime
    function the backend's arms call (storage ops, device methods, to_numpy, to_host,
    from_host), each raising NotImplementedForBackend: `gen` counts such a stub as missing,
    so `gen parity` shows what is left. Both files are checked (the registry is validated
    with the new module) before either is written; nothing changes when anything is wrong.

    \b
    Exit status: 0 added, 2 refused (invalid name or registry, backend or module exists).
    """
    from .tools.new_backend import Refused, plan, write

    registry = ctx.obj["registry"]
    try:
        new = plan(registry, name, module, ordinal, doc)
        write(new)
    except Refused as exc:
        for message in exc.messages:
            click.echo(message, err=True)
        sys.exit(EXIT_INVALID)
    for i, line in enumerate(new.entry.splitlines()):
        click.echo(f"added     {registry}:{new.line + i}: {line.strip()}")
    click.echo(f"wrote     {new.runtime}: availability() and {new.stubs} stubs raising NotImplementedForBackend")
    click.echo(
        f"next: run `gen` (every {name} arm raises until its stub is implemented), then `gen parity` for what is left"
    )


@main.command()
@click.option(
    "--out",
    "out_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the reference to this file (atomically) instead of printing it.",
)
@click.pass_context
def docs(ctx: click.Context, out_file: Path | None) -> None:
    """Print the op reference in Markdown, generated from the registry.

    Every elementwise op, storage op, device method and custom-op trait: its signature,
    dtypes, the registry line it is declared on (REGISTRY:LINE) and its status on each
    backend (implemented, fallback, hook, missing), from the same dispatch arms `gen`
    renders. Deterministic: the same registry and runtime modules give the same bytes.
    """
    from .output import atomic
    from .registry.loader import load_file
    from .tools.docs import reference

    model = _load(ctx.obj["registry"])
    text = reference(model, load_file(str(ctx.obj["registry"])))
    if out_file is None:
        click.echo(text, nl=False)
        return
    if not out_file.parent.is_dir():
        click.echo(f"error: {out_file.parent} is not a directory; nothing written", err=True)
        sys.exit(EXIT_INVALID)
    atomic.write_text(out_file, text)
    click.echo(f"wrote     {out_file}")


if __name__ == "__main__":
    main()
