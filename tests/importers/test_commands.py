"""The import commands print the report people read."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests.factories import make_project
from tests.importers.corpus import AUTO, SPOTTER

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_import_claude_code_prints_sessions_compactions_and_totals() -> None:
    make_project(name="acme")
    text = run("import_claude_code", str(AUTO), "--project", "acme")
    assert "session 258c7280-ae70-4798-800f-63464d01a85d: " in text
    assert ", 1 compactions" in text
    assert "agent-acompact-fffbd0.jsonl [claude-code, compaction call]" in text
    assert "not messages: file-history-snapshot 28, progress 1333" in text
    assert text.rstrip().splitlines()[-1].startswith("Total: 2 sessions, ")


def test_import_claude_code_json_report() -> None:
    make_project(name="acme")
    report = json.loads(
        run("import_claude_code", str(SPOTTER / "short.jsonl"), "--project", "acme", "--json")
    )
    assert report["messages"] > 0
    assert report["files"][0]["skipped"] == []


def test_unknown_project_is_an_error() -> None:
    with pytest.raises(
        CommandError, match="project 'nope' not found; create it with createproject"
    ):
        run("import_claude_code", str(AUTO), "--project", "nope")
