"""Gemini CLI chats and Cline tasks in: what is stored, re-imports, the reported cost, bad files."""

from __future__ import annotations

import json
import shutil
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from sessions.importers.cline import cline_import
from sessions.importers.gemini import gemini_import
from sessions.models import AgentSession, CompactionEvent, Message
from tests.engine.test_cline import TASK
from tests.engine.test_gemini import CHECKPOINT, FIXTURES, LINES, SINGLE
from tests.factories import make_key, make_project

pytestmark = pytest.mark.django_db


def contexts(session: AgentSession) -> list[int]:
    calls = Message.objects.filter(session=session, input_tokens__isnull=False).order_by("seq")
    return [
        m.input_tokens + (m.cache_read_input_tokens or 0) + (m.cache_creation_input_tokens or 0)
        for m in calls
    ]


def test_gemini_chat_is_stored_with_its_calls_and_reported_compression() -> None:
    raw = json.loads(SINGLE.read_bytes())
    report = gemini_import(project=make_project(), paths=[SINGLE])
    assert report.files[0].error is None
    session = AgentSession.objects.get(external_id=raw["sessionId"])
    assert (session.agent, session.model) == ("gemini-cli", "gemini-2.5-pro")
    # by reading the file: input + tool of each gemini message with tokens
    assert contexts(session) == [
        m["tokens"]["input"] + m["tokens"]["tool"]
        for m in raw["messages"]
        if m["type"] == "gemini" and "tokens" in m
    ]
    assert session.metadata["tool_calls_by_status"] == {"error": 1, "success": 1}
    (event,) = CompactionEvent.objects.filter(session=session)
    assert (event.tokens_before, event.tokens_after) == (612012, 41230)
    assert (event.strategy, event.trigger) == ("summarize", "auto")
    assert event.kept["tokens_before_source"] == "reported"
    assert event.kept["trigger_inferred"] is True
    assert event.summary.startswith("<state_snapshot>")
    last = Message.objects.get(session=session, seq=6)
    assert last.model == "gemini-2.5-flash"  # priced at its own model

    again = gemini_import(project=session.project, paths=[SINGLE])
    assert again.messages == 0
    assert again.duplicates == report.messages


def test_gemini_folder_finds_every_form() -> None:
    report = gemini_import(project=make_project(), paths=[FIXTURES])
    assert sorted(f.kind for f in report.files) == ["checkpoint", "json", "json", "jsonl"]
    assert AgentSession.objects.filter(external_id="checkpoint-tests").exists()
    lines = AgentSession.objects.get(external_id="9a8b7c6d-2222-4e5f-8a9b-0c1d2e3f4a5b")
    assert len(contexts(lines)) == 3
    file = next(f for f in report.files if f.kind == "jsonl")
    assert file.ignored["rewound message"] == 2


def test_real_gemini_chat_keeps_the_message_gemini_gave_no_counts() -> None:
    # yoavf/ai-sessions' real chat (SOURCES.md): the first response's tokens are all zero
    path = FIXTURES / "ai-sessions" / "gemini-cli-pomodoro-timer.json"
    raw = json.loads(path.read_bytes())
    report = gemini_import(project=make_project(), paths=[path])
    (file,) = report.files
    assert file.error is None
    assert file.ignored["gemini message with all-zero tokens (no usage recorded)"] == 1
    session = AgentSession.objects.get(external_id=raw["sessionId"])
    # by reading the file: input + tool of each gemini message whose tokens are not all zero
    assert contexts(session) == [
        m["tokens"]["input"] + m["tokens"]["tool"]
        for m in raw["messages"]
        if m["type"] == "gemini" and any(m["tokens"].values())
    ]
    first = Message.objects.filter(session=session, role="assistant").order_by("seq").first()
    assert first is not None
    assert first.input_tokens is None  # kept, with no usage


def test_gemini_subagent_is_a_child_of_the_folder_it_is_in(tmp_path: Path) -> None:
    folder = tmp_path / "chats" / "parent-session"
    folder.mkdir(parents=True)
    lines = [
        {"sessionId": "child", "projectHash": "h", "kind": "subagent"},
        {"id": "a", "type": "user", "content": "look"},
        {"id": "b", "type": "gemini", "content": "seen", "tokens": {"input": 5, "output": 1}},
    ]
    (folder / "child.jsonl").write_text("\n".join(json.dumps(x) for x in lines))
    gemini_import(project=make_project(), paths=[tmp_path])
    child = AgentSession.objects.get(external_id="child")
    assert child.agent == "gemini-cli:subagent"
    assert child.parent is not None
    assert child.parent.external_id == "parent-session"


def test_a_malformed_gemini_file_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "session-bad.jsonl"
    good = LINES.read_text().splitlines()
    path.write_text("\n".join([*good[:4], "{oops", *good[4:]]))
    report = gemini_import(project=make_project(), paths=[path])
    assert report.files[0].error == (
        "line 5: not JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
        "(char 1)); nothing of this file was stored"
    )
    assert not AgentSession.objects.exists()


def test_cline_task_is_stored_with_calls_truncations_and_the_reported_cost(client: Client) -> None:
    project = make_project()
    report = cline_import(project=project, paths=[TASK])
    assert report.files[0].error is None
    session = AgentSession.objects.get(external_id=TASK.name)
    ui = json.loads((TASK / "ui_messages.json").read_bytes())
    requests = [json.loads(m["text"]) for m in ui if m.get("say") == "api_req_started"]
    assert contexts(session) == [
        r["tokensIn"] + r["cacheReads"] + r["cacheWrites"] for r in requests
    ]
    events = list(CompactionEvent.objects.filter(session=session).order_by("seq"))
    assert [(e.seq, e.strategy, e.trigger) for e in events] == [
        (7, "truncate", "auto"),
        (9, "truncate", "auto"),
    ]
    assert [e.kept["dropped_range"] for e in events] == [[2, 3], [4, 5]]
    assert [(e.tokens_before, e.tokens_after) for e in events] == [
        (165005, 122005),
        (122005, 91006),
    ]
    reported = round(sum(r["cost"] for r in requests), 6)
    assert session.metadata["reported_usd"] == reported

    key = make_key(project)
    body = client.get(
        f"/api/v1/sessions/{TASK.name}", headers={"Authorization": f"Bearer {key}"}
    ).json()
    assert body["cost"]["reported_usd"] == reported
    assert body["cost"]["by_model"][0]["calls"] == len(requests)

    again = cline_import(project=project, paths=[TASK / "ui_messages.json"])
    assert (again.messages, again.duplicates) == (0, report.messages)


def test_a_malformed_cline_task_stores_nothing(tmp_path: Path) -> None:
    task = tmp_path / "1700000000000"
    shutil.copytree(TASK, task)
    (task / "api_conversation_history.json").write_text('[{"role": ["robot"]}]')
    report = cline_import(project=make_project(), paths=[task])
    assert report.files[0].error == (
        "api_conversation_history.json[0]: not a {role, content} object; nothing of this task "
        "was stored"
    )
    assert not AgentSession.objects.exists()


def test_a_folder_without_ui_messages_is_named(tmp_path: Path) -> None:
    report = cline_import(project=make_project(), paths=[tmp_path])
    assert report.files[0].error == (
        "no ui_messages.json in this folder: Cline's calls and costs are there"
    )


def test_commands_print_the_report() -> None:
    project = make_project()
    out = StringIO()
    call_command("import_gemini", str(CHECKPOINT), "--project", project.name, stdout=out)
    assert "checkpoint-tests.json [gemini-cli, checkpoint]" in out.getvalue()
    out = StringIO()
    call_command("import_cline", str(TASK), "--project", project.name, "--json", stdout=out)
    assert json.loads(out.getvalue())["sessions"][0]["external_id"] == TASK.name


@pytest.mark.parametrize(
    ("session_id", "error"),
    [
        ("x" * 201, "session id: 201 characters, the limit is 200"),
        ("a\x00b", "session id: "),
    ],
)
def test_a_session_id_storage_cannot_hold_is_refused_not_cut(
    tmp_path: Path, session_id: str, error: str
) -> None:
    path = tmp_path / "session-x.json"
    path.write_text(
        json.dumps(
            {
                "sessionId": session_id,
                "projectHash": "h",
                "messages": [{"id": "a", "type": "user", "content": "hi"}],
            }
        )
    )
    report = gemini_import(project=make_project(), paths=[path])
    assert report.files[0].error is not None
    assert report.files[0].error.startswith(error)
    assert report.files[0].error.endswith("; nothing of this file was stored")
    assert not AgentSession.objects.exists()
