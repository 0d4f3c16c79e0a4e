"""The `gen` command line: generate, check for staleness, show backend parity, emit the schema."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from generator import __version__, stamp

EXIT_STALE = 1
EXIT_INVALID = 2
SCHEMA_PATH = Path(__file__).resolve().parent / "ops.schema.json"


def _load(registry: Path):
    """The validated model; on a broken registry print every error and exit 2."""
    from generator.diagnostics import RegistryError
    from generator.loader import load_file
    from generator.validate import validate

    try:
        return validate(load_file(str(registry)), registry.resolve().parent)
    except RegistryError as exc:
        for diagnostic in exc.diagnostics:
            click.echo(str(diagnostic), err=True)
        n = len(exc.diagnostics)
        click.echo(f"{registry}: {n} error{'s' if n != 1 else ''}; nothing written", err=True)
        sys.exit(EXIT_INVALID)


def _render(model, out: Path):
    from generator.render import RenderError, render

    try:
        return render(model, out=out)
    except RenderError as exc:
        click.echo(f"error: {exc}; nothing written", err=True)
        sys.exit(EXIT_INVALID)


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--registry", type=click.Path(dir_okay=False, path_type=Path), default=Path("ops.yaml"),
              show_default=True, help="The op registry to generate from.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=Path("generated"),
              show_default=True, help="Directory of the generated package.")
@click.option("--check", is_flag=True,
              help="Write nothing; exit 1 and print a unified diff if any generated file is stale.")
@click.version_option(__version__, prog_name="gen")
@click.pass_context
def main(ctx: click.Context, registry: Path, out: Path, check: bool) -> None:
    """Generate the package in --out from the op registry.

    With no subcommand, regenerate: write the files that changed, remove generated files
    that are no longer produced, and print what was written, left unchanged and removed.
    A broken registry prints every error as FILE:LINE:COL and exits 2 without writing.

    \b
    Exit status: 0 up to date or written, 1 stale (--check), 2 invalid registry.
    """
    ctx.obj = {"registry": registry, "out": out}
    if ctx.invoked_subcommand is not None:
        return
    started = time.perf_counter()
    current = stamp.up_to_date(registry, out)
    if current is not None:
        click.echo(f"{out}: {current} generated files up to date")
        return
    from generator.render import TEMPLATES
    from generator.writer import WriteRefused, apply, plan

    model = _load(registry)
    rendered = _render(model, out)
    inputs = [*map(Path, model.input_files), *sorted(TEMPLATES.glob("*.j2"))]
    try:
        result = plan(out, rendered)
    except WriteRefused as exc:
        click.echo(f"error: {exc}; nothing written", err=True)
        sys.exit(EXIT_INVALID)
    if check:
        if result.stale:
            click.echo(f"stale generated files in {out} (run `gen`):", err=True)
            for rel in result.stale:
                click.echo(f"  {out / rel}", err=True)
            click.echo(result.diff(), nl=False)
            sys.exit(EXIT_STALE)
        stamp.record(registry, inputs, out)
        click.echo(f"{out}: {len(result.unchanged)} generated files up to date")
        return
    apply(out, result)
    stamp.record(registry, inputs, out)
    for rel in sorted(result.write):
        click.echo(f"wrote     {out / rel}")
    for rel in result.remove:
        click.echo(f"removed   {out / rel}")
    click.echo(f"{len(result.write)} written, {len(result.unchanged)} unchanged, {len(result.remove)} removed "
               f"in {time.perf_counter() - started:.2f}s")


@main.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@click.pass_context
def parity(ctx: click.Context, fmt: str) -> None:
    """Show which backend implements which op.

    Computed from the registry and from the runtime modules' source (read with libcst):
    'yes' the runtime implements it, 'fallback' it runs on the fallback backend through
    host memory, 'hook' a custom op's <backend>_fwd runs it, 'MISSING' it raises.
    """
    from generator.parity import parity_rows, render_table

    rows = parity_rows(_load(ctx.obj["registry"]))
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
    else:
        click.echo(render_table(rows))


@main.command()
@click.option("--write", is_flag=True, help=f"Write it to {SCHEMA_PATH.name} beside the generator.")
def schema(write: bool) -> None:
    """Print the JSON Schema of the registry format (for YAML editors)."""
    from generator.spec import registry_json_schema

    text = json.dumps(registry_json_schema(), indent=2) + "\n"
    if write:
        SCHEMA_PATH.write_text(text, encoding="utf-8")
        click.echo(f"wrote {SCHEMA_PATH}")
    else:
        click.echo(text, nl=False)


if __name__ == "__main__":
    main()
