"""Codex rollouts and Gemini CLI chats imported while they grow (the watcher sends the whole
file each time): however many times a file is imported on its way, the session equals one
import of the finished file, message for message, compaction for compaction, call for call."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from sessions.importers.codex import codex_import
from sessions.importers.gemini import gemini_import
from sessions.models import AgentSession, Project
from tests.engine.test_codex import COMPACTED, LOCALPUSH
from tests.engine.test_gemini import FIXTURES as GEMINI
from tests.engine.test_gemini import LINES, SINGLE
from tests.factories import make_project
from tests.importers.corpus import first_write
from tests.importers.test_claude_code import _stored_rows

pytestmark = pytest.mark.django_db

ROLLOUTS = sorted(p for p in LOCALPUSH.iterdir() if p.name.startswith("rollout-"))
CHATS = [
    SINGLE,
    GEMINI / "ai-sessions" / "gemini-cli-pomodoro-timer.json",
    GEMINI / "aim" / "matrix_pro.json",
    GEMINI / "aim" / "control_pro_run4_abandoned.json",
]


def _sessions(project: Project) -> dict[str, Any]:
    """Each session's stored rows (messages with their usage, compactions) and counts."""
    return {
        s.external_id: (_stored_rows(s), s.message_count, s.compaction_count, s.metadata)
        for s in AgentSession.objects.filter(project=project).order_by("external_id")
    }


def _bytes(path: Path) -> bytes:
    return gzip.open(path).read() if path.name.endswith(".gz") else path.read_bytes()


def _one_shot(importer: Any, path: Path, data: bytes) -> dict[str, Any]:
    reference = make_project(name="one-shot import")
    path.write_bytes(data)
    importer(project=reference, paths=[path])
    return _sessions(reference)


def _codex_lines(source: Path) -> list[bytes]:
    return [line + b"\n" for line in _bytes(source).split(b"\n") if line.strip()]


@pytest.mark.parametrize("source", ROLLOUTS, ids=lambda p: p.name[-24:])
def test_a_rollout_imported_while_it_grows_equals_one_import_of_the_whole(
    tmp_path: Path, source: Path
) -> None:
    lines = _codex_lines(source)
    path = tmp_path / source.name.removesuffix(".gz")
    whole = _one_shot(codex_import, path, b"".join(lines))
    project = make_project(name="grown")
    step = max(1, len(lines) // 30)
    for cut in [*range(1, len(lines), step), len(lines)]:
        path.write_bytes(b"".join(lines[:cut]))
        codex_import(project=project, paths=[path])
    assert _sessions(project) == whole
    again = codex_import(project=project, paths=[path])
    (session,) = again.sessions.values()
    assert (session.messages, session.compactions, session.replaced) == (0, 0, [])


def test_a_rollout_cut_at_every_line_around_its_compaction_then_finished(tmp_path: Path) -> None:
    """Cut while the summarizer's call looks like an ordinary call, right after the
    ``compacted`` line (no call after it yet), and so on: the finished file puts it right."""
    lines = _codex_lines(COMPACTED)
    at = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "compacted")
    path = tmp_path / COMPACTED.name.removesuffix(".gz")
    whole = _one_shot(codex_import, path, b"".join(lines))
    for cut in range(at - 3, at + 8):
        project = make_project(name=f"cut at {cut}")
        path.write_bytes(b"".join(lines[:cut]))
        codex_import(project=project, paths=[path])
        path.write_bytes(b"".join(lines))
        codex_import(project=project, paths=[path])
        assert _sessions(project) == whole, cut


@pytest.mark.parametrize("source", CHATS, ids=lambda p: p.name)
def test_a_chat_rewritten_while_it_grows_equals_one_import_of_the_whole(
    tmp_path: Path, source: Path
) -> None:
    record = json.loads(source.read_bytes())
    path = tmp_path / "session-grown.json"
    whole = _one_shot(gemini_import, path, source.read_bytes())
    project = make_project(name="grown")
    messages = record["messages"]
    for n in range(1, len(messages) + 1):
        if messages[n - 1]["type"] == "gemini":
            early = [*messages[: n - 1], first_write(messages[n - 1])]
            path.write_text(json.dumps({**record, "messages": early}))
            gemini_import(project=project, paths=[path])
        path.write_text(json.dumps({**record, "messages": messages[:n]}))
        gemini_import(project=project, paths=[path])
    assert _sessions(project) == whole


@pytest.mark.parametrize("cut", range(1, 12))
def test_a_json_lines_chat_cut_anywhere_then_finished_equals_one_import(
    tmp_path: Path, cut: int
) -> None:
    """The file rewrites a response under its id, then rewinds two messages away: a cut
    before either is put right by the finished file."""
    lines = [line + b"\n" for line in LINES.read_bytes().split(b"\n") if line.strip()]
    path = tmp_path / LINES.name
    whole = _one_shot(gemini_import, path, b"".join(lines))
    project = make_project(name="grown")
    path.write_bytes(b"".join(lines[:cut]))
    gemini_import(project=project, paths=[path])
    path.write_bytes(b"".join(lines))
    gemini_import(project=project, paths=[path])
    assert _sessions(project) == whole


def test_an_older_copy_of_a_rollout_rewrites_nothing(tmp_path: Path) -> None:
    """Only a file at least as large as the last one imported brings rows up to date: an
    older, shorter copy of it changes nothing stored (as for any re-import)."""
    lines = _codex_lines(ROLLOUTS[0])
    path = tmp_path / ROLLOUTS[0].name
    whole = _one_shot(codex_import, path, b"".join(lines))
    reference = AgentSession.objects.get(project__name="one-shot import")
    path.write_bytes(b"".join(lines[: len(lines) // 2]))
    report = codex_import(project=reference.project, paths=[path])
    (session,) = report.sessions.values()
    assert (session.messages, session.replaced) == (0, [])
    rows = _sessions(reference.project)
    assert [r[:3] for r in rows.values()] == [w[:3] for w in whole.values()]
