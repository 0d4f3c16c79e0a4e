"""generator/ops.schema.json is the loader's own spec (generator.registry.spec) as JSON Schema, and the
two agree: what the loader accepts the schema accepts, and structurally broken registries
are rejected by both."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml
from gen_harness import MINI, REPO, corpus, corpus_header, run_cli

from generator.registry.spec import registry_json_schema

SCHEMA_FILE = REPO / "generator" / "ops.schema.json"


@pytest.fixture(scope="module")
def validator():
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_file_is_up_to_date():
    """Written by `gen schema --write`; stale when generator/registry/spec.py changed without it."""
    assert json.loads(SCHEMA_FILE.read_text(encoding="utf-8")) == registry_json_schema(), (
        "generator/ops.schema.json is stale: run `gen schema --write`"
    )


def test_schema_command_prints_the_file():
    result = run_cli("schema")
    assert result.exit_code == 0
    assert result.stdout == SCHEMA_FILE.read_text(encoding="utf-8")


def test_schema_write_writes_the_same_bytes(tmp_path, monkeypatch):
    import generator.cli

    target = tmp_path / "ops.schema.json"
    monkeypatch.setattr(generator.cli, "SCHEMA_PATH", target)
    result = run_cli("schema", "--write")
    assert result.exit_code == 0 and str(target) in result.stdout
    assert target.read_bytes() == SCHEMA_FILE.read_bytes()


@pytest.mark.parametrize("registry", [REPO / "ops.yaml", MINI], ids=["ops.yaml", "fixture"])
def test_shipped_registries_validate(validator, registry):
    errors = sorted(validator.iter_errors(yaml.safe_load(registry.read_text(encoding="utf-8"))), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)


SCHEMA_CASES = [(p, corpus_header(p)[1]) for p in corpus()]
REJECT = [p for p, s in SCHEMA_CASES if s == "reject"]
ACCEPT = [p for p, s in SCHEMA_CASES if s == "accept"]


def test_corpus_marks_schema_cases():
    assert len(REJECT) >= 10 and len(ACCEPT) >= 10
    names = {p.stem for p in REJECT}
    for needed in (
        "unknown_key_did_you_mean",
        "wrong_type_str_for_int",
        "wrong_type_list_for_mapping",
        "missing_required_key",
        "version_not_1",
        "unknown_dtype_kind",
    ):
        assert needed in names


@pytest.mark.parametrize("path", REJECT, ids=[p.stem for p in REJECT])
def test_structurally_broken_registries_are_rejected_by_the_schema(validator, path):
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert list(validator.iter_errors(data)), f"{path.name} passes the JSON Schema but the loader rejects it"


@pytest.mark.parametrize("path", ACCEPT, ids=[p.stem for p in ACCEPT])
def test_semantic_errors_pass_the_schema(validator, path):
    """The schema checks shape only: a registry broken in meaning (an unknown dtype name, a bad
    expression) is well-formed, and an editor must not flag it as malformed."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    errors = list(validator.iter_errors(data))
    assert not errors, "\n".join(e.message for e in errors)
