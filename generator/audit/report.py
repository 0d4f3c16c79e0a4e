"""`gen audit --format`: the findings as text lines, JSON, or SARIF 2.1.0 (the format
code-scanning services read to show findings inline in a pull request)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import FileReport
from .coverage import MISSING, Finding

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
RULES = {  # kind -> (rule id, short description, SARIF level)
    MISSING: (
        "missing-backend",
        "A backend dispatch has no case for a backend (or only a wildcard that fails).",
        "error",
    ),
    "wildcard": ("wildcard-backend", "A backend is only handled by a wildcard case that does real work.", "note"),
}


def findings(reports: list[FileReport]) -> list[Finding]:
    return [f for r in reports for f in r.findings]


def as_json(reports: list[FileReport], errors: list[str], summary: list[str]) -> str:
    rows = [
        {
            "path": f.path,
            "line": f.line,
            "col": f.col,
            "kind": f.kind,
            "backends": list(f.backends),
            "message": f.message,
        }
        for f in findings(reports)
    ]
    return json.dumps({"findings": rows, "errors": errors, "summary": summary[-1]}, indent=2)


def _uri(path: str) -> str:
    """A relative URI from the working directory where the file lies under it, else file://."""
    absolute = Path(path).resolve()
    try:
        return absolute.relative_to(Path(os.getcwd()).resolve()).as_posix()
    except ValueError:
        return absolute.as_uri()


def as_sarif(reports: list[FileReport], errors: list[str]) -> str:
    rule_ids = list(RULES)
    results = [
        {
            "ruleId": RULES[f.kind][0],
            "ruleIndex": rule_ids.index(f.kind),
            "level": RULES[f.kind][2],
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(f.path)},
                        "region": {"startLine": f.line, "startColumn": f.col},
                    }
                }
            ],
        }
        for f in findings(reports)
    ]
    notifications = [{"level": "error", "message": {"text": e}} for e in errors]
    run = {
        "tool": {
            "driver": {
                "name": "gen audit",
                "rules": [
                    {"id": rid, "shortDescription": {"text": text}, "defaultConfiguration": {"level": level}}
                    for rid, text, level in RULES.values()
                ],
            }
        },
        "results": results,
        "invocations": [{"executionSuccessful": not errors, "toolExecutionNotifications": notifications}],
        "columnKind": "unicodeCodePoints",
    }
    return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}, indent=2)
