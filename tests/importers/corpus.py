"""Paths into the corpus of real traces and facts read straight from its files (no importer code).

The corpus is a byte-for-byte copy, kept in ``tests/fixtures/corpus/``, of traces others wrote
and published; its ``SOURCES.md`` and ``MANIFEST.json`` give each file's repository, commit and
licence. Tests read only this copy, never anything outside the repository.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
CLAUDE_CODE = CORPUS / "claude_code"
SPOTTER = CLAUDE_CODE / "spotter"
AUTO = SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz"
MANUAL = SPOTTER / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"


def read_lines(path: Path) -> list[bytes]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        return list(fh)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in read_lines(path) if line.strip()]


def context(usage: dict[str, Any]) -> int:
    return (
        usage["input_tokens"]
        + usage.get("cache_read_input_tokens", 0)
        + usage.get("cache_creation_input_tokens", 0)
    )


def compaction_facts(path: Path) -> dict[str, Any]:
    """The boundary's metadata, and the context of the main-chain calls around it, by
    message id with the last line's usage (Claude Code splits a response over lines)."""
    recs = records(path)
    (at,) = [i for i, r in enumerate(recs) if r.get("subtype") == "compact_boundary"]
    last_usage: dict[str, dict[str, Any]] = {}
    order_before: list[str] = []
    order_after: list[str] = []
    for i, r in enumerate(recs):
        if r.get("type") != "assistant" or r.get("isSidechain"):
            continue
        mid = r["message"]["id"]
        last_usage[mid] = r["message"]["usage"]
        target = order_before if i < at else order_after
        if mid not in target:
            target.append(mid)
    return {
        "boundary": recs[at],
        "trigger": recs[at]["compactMetadata"]["trigger"],
        "pre_tokens": recs[at]["compactMetadata"]["preTokens"],
        "context_before": context(last_usage[order_before[-1]]),
        "context_after": context(last_usage[order_after[0]]),
        "calls": len(last_usage),
    }


def first_write(message: dict[str, Any]) -> dict[str, Any]:
    """A response as Gemini CLI writes it first: no tokens yet, its tools still running."""
    early = {k: v for k, v in message.items() if k != "tokens"}
    if early.get("toolCalls"):
        early["toolCalls"] = [
            {k: v for k, v in call.items() if k not in ("result", "resultDisplay")}
            | {"status": "executing"}
            for call in early["toolCalls"]
        ]
    return early


def refused_file(folder: Path, project_name: str) -> dict[str, Any]:
    """Run ``import_traces`` on a folder holding one file it must refuse: the command exits 1
    (a CommandError carrying that code), and its JSON report names the file's error."""
    from io import StringIO

    import pytest
    from django.core.management import call_command
    from django.core.management.base import CommandError

    out = StringIO()
    with pytest.raises(CommandError) as refused:
        call_command("import_traces", str(folder), "--project", project_name, "--json", stdout=out)
    assert refused.value.returncode == 1
    (file,) = json.loads(out.getvalue())["files"]
    return file
