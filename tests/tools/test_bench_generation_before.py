"""bench/generation_before.py: an earlier tree that cannot be exported or cannot generate the
registry gets a row saying why, and the bench goes on."""

from __future__ import annotations

from bench import generation_before


def test_an_unknown_revision_gets_a_row_naming_it():
    result = {"before": generation_before.rows(["no-such-revision"])}
    (row,) = result["before"].values()
    assert "no-such-revision" in row["error"]
    (line,) = [line for line in generation_before.lines(result) if "no-such-revision" in line]
    assert "not timed: git does not know the revision 'no-such-revision'" in line


def test_a_tree_that_rejects_the_registry_says_its_first_diagnostic(tmp_path):
    """The earlier tree's gen exits 2 with its diagnostics: the row quotes the first and the
    count, file names relative to the registry's folder, and nothing is timed."""
    tree = tmp_path / "tree"
    (tree / "generator").mkdir(parents=True)
    (tree / "generator" / "__init__.py").write_text("")
    (tree / "generator" / "cli.py").write_text(
        "import sys\n"
        "registry = sys.argv[sys.argv.index('--registry') + 1]\n"
        "print(f\"{registry}:3:1: unknown key 'switches'\", file=sys.stderr)\n"
        "print(f'{registry}: 1 error; nothing written', file=sys.stderr)\n"
        "sys.exit(2)\n"
    )
    registry = tmp_path / "synthetic" / "ops.yaml"
    registry.parent.mkdir()
    registry.write_text("version: 1\n")
    row = generation_before.side_by_side(tree, registry)
    assert row == {
        "error": "the earlier tree cannot generate this registry: ops.yaml:3:1: unknown key 'switches' ... "
        "ops.yaml: 1 error; nothing written"
    }


def test_the_paired_ratio_is_the_median_of_each_rounds_ratio():
    """A round slowed by load slows both of its runs: the ratio of each round, then their median."""
    before = [(9.0, 1.0), (9.0, 2.0), (9.0, 1.0)]  # (wall, CPU): only CPU time counts
    now = [(0.0, 1.1), (0.0, 2.0), (0.0, 1.3)]
    assert generation_before.paired_ratio(before, now) == 1.1
