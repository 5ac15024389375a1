"""Codex rollouts in: real files counted by hand, re-imports, forks, hostile and broken files."""

from __future__ import annotations

import gzip
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from compaction import pipeline
from compaction.engine.summary_call import summary_call_from_record
from compaction.models import CompactionSpan
from sessions.importers.codex import codex_import
from sessions.models import AgentSession, CompactionEvent, Message
from tests.engine.test_codex import (
    COMPACTED,
    FIXTURES,
    LOCALPUSH,
    REAL,
    call,
    compacted,
    count,
    meta,
    output,
    say,
    turn,
    usage,
    user,
)
from tests.factories import make_project

pytestmark = pytest.mark.django_db


def write(tmp_path: Path, *lines: str, name: str = "rollout-x.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def contexts(session: AgentSession) -> list[int]:
    calls = Message.objects.filter(session=session, input_tokens__isnull=False).order_by("seq")
    return [
        m.input_tokens + (m.cache_read_input_tokens or 0) + (m.cache_creation_input_tokens or 0)
        for m in calls
    ]


def session_id(name: str) -> str:
    return name.removesuffix(".gz").removesuffix(".jsonl")[-36:]


@pytest.mark.parametrize(("name", "calls", "first", "top", "last", "total"), REAL)
def test_real_rollout_stores_one_call_per_count_by_hand(
    name: str, calls: int, first: int, top: int, last: int, total: int
) -> None:
    report = codex_import(project=make_project(), paths=[LOCALPUSH / name])
    session = AgentSession.objects.get(external_id=session_id(name))
    stored = contexts(session)
    assert len(stored) == calls
    assert (stored[0], max(stored), stored[-1], sum(stored)) == (first, top, last, total)
    assert (session.agent, session.model, session.context_window) == (
        "codex",
        "gpt-5.3-codex",
        258400,
    )
    assert session.metadata["calls"] == calls
    assert session.metadata["originator"] == "Codex Desktop"
    assert report.files[0].error is None


def test_real_remote_compaction_is_stored_with_sizes_and_an_inferred_trigger() -> None:
    codex_import(project=make_project(), paths=[COMPACTED])
    session = AgentSession.objects.get(external_id=session_id(COMPACTED.name))
    (event,) = CompactionEvent.objects.filter(session=session)
    assert (event.strategy, event.trigger) == ("server_compaction", "auto")
    assert (event.tokens_before, event.tokens_after) == (209950, 48297)
    assert event.summary == ""
    assert event.kept["remote"] is True
    assert event.kept["trigger_inferred"] is True
    assert event.kept["codex_estimate_after"] == 940499
    assert event.kept["tokens_after_source"] == "next_call"
    assert "grew" not in event.kept
    first_after = Message.objects.get(session=session, seq=event.seq)
    assert first_after.role == "assistant"
    assert first_after.cache_read_input_tokens == 22912


def test_real_exec_rollout_from_another_uploader() -> None:
    codex_import(project=make_project(), paths=[FIXTURES / "agent-history" / "session-01.jsonl"])
    session = AgentSession.objects.get(external_id="019e9625-802f-7e91-840a-cfe88d14117a")
    assert contexts(session) == [22539]
    assert (session.model, session.metadata["originator"]) == ("gpt-5.5", "codex_exec")


def test_reimport_stores_nothing_new() -> None:
    project = make_project()
    first = codex_import(project=project, paths=[LOCALPUSH])
    again = codex_import(project=project, paths=[LOCALPUSH])
    assert len(first.sessions) == 6
    assert first.messages > 0
    assert first.compactions == 1
    assert (again.messages, again.compactions) == (0, 0)
    assert again.duplicates == first.messages
    assert CompactionEvent.objects.count() == 1
    assert Message.objects.count() == first.messages


def test_repeated_and_synthetic_counts_store_no_call(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        meta(),
        turn(),
        user("task"),
        say("a"),
        count(180_010, usage(180_000)),
        count(180_010, usage(180_000)),
        count(180_010, usage(0, out=0, total=30_000)),
        compacted("Goal: task."),
        count(180_010, usage(0, out=0, total=30_000)),
        say("b"),
        count(210_020, usage(30_000)),
        count(210_020, usage(30_000)),
    )
    codex_import(project=make_project(), paths=[path])
    session = AgentSession.objects.get(external_id="s1")
    assert contexts(session) == [180_000, 30_000]
    assert session.metadata["repeated_token_counts"] == 2
    assert session.metadata["synthetic_token_counts"] == 2


def test_local_compaction_keeps_its_summary_and_summarizer_cost(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        meta(),
        turn(),
        user("task"),
        say("a"),
        count(100_010, usage(100_000)),
        count(201_010, usage(100_500, cached=99_000, out=500)),
        compacted("Goal: ship it. Constraint: do not change the API."),
        say("b"),
        count(222_020, usage(20_000)),
    )
    codex_import(project=make_project(), paths=[path])
    (event,) = CompactionEvent.objects.all()
    assert (event.strategy, event.summary) == (
        "summarize",
        "Goal: ship it. Constraint: do not change the API.",
    )
    assert (event.tokens_before, event.tokens_after) == (100_000, 20_000)
    cost = summary_call_from_record(event.kept["compaction_call"])
    assert cost is not None
    assert (cost.context_tokens, cost.output_tokens) == (100_500, 500)
    assert contexts(event.session) == [100_000, 20_000]  # the summarizer is not a message


def test_compaction_that_grew_the_context_is_flagged(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        meta(),
        user("task"),
        say("a"),
        count(40_010, usage(40_000)),
        compacted("a long summary"),
        say("b"),
        count(95_020, usage(55_000)),
    )
    codex_import(project=make_project(), paths=[path])
    (event,) = CompactionEvent.objects.all()
    assert (event.tokens_before, event.tokens_after) == (40_000, 55_000)
    assert event.kept["grew"] is True


def test_html_in_messages_is_stored_as_text(tmp_path: Path) -> None:
    hostile = "<script>alert('x')</script><img src=x onerror=alert(1)>"
    path = write(
        tmp_path,
        meta(),
        user(hostile),
        call("c1", args=json.dumps({"command": [hostile]})),
        count(1_010, usage(1_000)),
        output("c1", hostile),
        say(hostile),
        count(2_020, usage(2_000)),
    )
    codex_import(project=make_project(), paths=[path])
    prompt, tool_call, result, answer = Message.objects.order_by("seq")
    assert prompt.content == [{"type": "text", "text": hostile}]
    assert tool_call.content[0]["input"] == {"command": [hostile]}
    assert result.content[0]["content"] == hostile
    assert answer.content == [{"type": "text", "text": hostile}]


def test_malformed_line_is_named_and_nothing_is_stored(tmp_path: Path) -> None:
    path = write(tmp_path, meta(), user("hi"), say("a"), count(10, usage(5)), '{"type": "event_')
    report = codex_import(project=make_project(), paths=[path])
    (file,) = report.files
    assert file.error is not None
    assert file.error.startswith("line 5: not JSON")
    assert file.error.endswith("nothing of this file was stored")
    assert AgentSession.objects.count() == 0
    assert Message.objects.count() == 0


def test_command_reports_the_bad_line(tmp_path: Path) -> None:
    good = write(tmp_path, meta("ok"), user("hi"), say("a"), count(10, usage(5)), name="good.jsonl")
    bad = write(tmp_path, meta("bad"), "[1, 2]", name="bad.jsonl")
    make_project(name="p")
    out = StringIO()
    call_command("import_codex", str(good), str(bad), "--project", "p", stdout=out)
    text = out.getvalue()
    assert "bad.jsonl [codex]: not imported: line 2: not a JSON object" in text
    assert "session ok: 2 messages stored" in text
    assert list(AgentSession.objects.values_list("external_id", flat=True)) == ["ok"]


def test_fork_that_relogs_its_parent_is_skipped_with_the_reason(tmp_path: Path) -> None:
    parent = write(
        tmp_path, meta("parent"), user("p"), say("a"), count(10, usage(5)), name="p.jsonl"
    )
    fork = write(
        tmp_path,
        meta("child", forked_from_id="parent"),
        meta("parent"),
        user("p"),
        say("a"),
        count(10, usage(5)),
        user("child's own question"),
        say("b"),
        count(30, usage(15)),
        name="q.jsonl",
    )
    report = codex_import(project=make_project(), paths=[parent, fork])
    skipped = report.files[1]
    assert skipped.kind == "fork"
    assert skipped.note is not None
    assert "re-logs the history of session parent" in skipped.note
    assert list(AgentSession.objects.values_list("external_id", flat=True)) == ["parent"]
    assert contexts(AgentSession.objects.get(external_id="parent")) == [5]


def test_subagent_without_copied_history_is_a_child_of_its_parent(tmp_path: Path) -> None:
    source = {"subagent": {"thread_spawn": {"parent_thread_id": "parent", "depth": 1}}}
    kid = write(
        tmp_path, meta("kid", source=source), user("sub task"), say("a"), count(9, usage(4))
    )
    codex_import(project=make_project(), paths=[kid])
    child = AgentSession.objects.get(external_id="kid")
    assert child.parent is not None
    assert child.parent.external_id == "parent"
    assert child.agent == "codex:subagent"


def test_gzipped_rollout_is_read(tmp_path: Path) -> None:
    path = tmp_path / "rollout-y.jsonl.gz"
    path.write_bytes(gzip.compress(f"{meta('gz')}\n{user('hi')}\n".encode()))
    codex_import(project=make_project(), paths=[path])
    assert AgentSession.objects.get(external_id="gz").message_count == 1


def test_subagent_copy_left_out_by_ordinal_is_imported_as_a_child(tmp_path: Path) -> None:
    def at(text: str, ordinal: int) -> str:
        return json.dumps({**json.loads(text), "ordinal": ordinal})

    head = meta("kid", parent_thread_id="parent", subagent_history_start_ordinal=3)
    kid = write(
        tmp_path,
        at(head, 0),
        at(meta("parent"), 1),
        at(user("parent's prompt"), 2),
        at(user("sub task"), 3),
        at(say("a"), 4),
        at(count(9, usage(4)), 5),
    )
    report = codex_import(project=make_project(), paths=[kid])
    child = AgentSession.objects.get(external_id="kid")
    assert child.parent is not None
    assert child.parent.external_id == "parent"
    assert contexts(child) == [4]
    assert [
        m.content[0]["text"] for m in Message.objects.filter(session=child).order_by("seq")
    ] == [
        "sub task",
        "a",
    ]
    assert (
        report.files[0].note
        == "2 lines copied from session parent left out (they are that session's)"
    )


def test_the_analysis_of_the_real_compacted_session_sees_one_point_per_call() -> None:
    codex_import(project=make_project(), paths=[COMPACTED])
    session = AgentSession.objects.get(external_id=session_id(COMPACTED.name))
    event = CompactionEvent.objects.get(session=session)

    analysis = pipeline.session_analyse(session_id=session.pk)

    assert analysis is not None
    assert analysis.call_count == 286
    assert len(analysis.curve) == 286
    assert not any(p["estimated"] for p in analysis.curve)
    before = [p for p in analysis.curve if p["seq"] < event.seq][-1]
    after = next(p for p in analysis.curve if p["seq"] >= event.seq)
    assert (before["context_tokens"], after["context_tokens"]) == (209950, 48297)
    assert analysis.orphans == []


def test_an_interrupted_response_is_stored_but_the_analysis_draws_no_point_for_it(
    tmp_path: Path,
) -> None:
    aborted = json.dumps(
        {
            "timestamp": "2026-01-01T00:00:05Z",
            "type": "event_msg",
            "payload": {"type": "turn_aborted", "turn_id": "t2", "reason": "interrupted"},
        }
    )
    thinking = json.dumps(
        {
            "timestamp": "2026-01-01T00:00:04Z",
            "type": "response_item",
            "payload": {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "Planning the docs"}],
            },
        }
    )
    path = write(
        tmp_path,
        meta(),
        turn(),
        user("fix the build"),
        say("On it."),
        count(10_010, usage(10_000)),
        user("and the docs"),
        thinking,
        aborted,
        user("stop"),
        say("Stopped."),
        count(21_030, usage(11_000, out=20)),
    )
    codex_import(project=make_project(), paths=[path])
    session = AgentSession.objects.get()
    cut = Message.objects.get(session=session, model="<interrupted>")
    assert cut.role == "assistant"
    assert cut.input_tokens is None
    analysis = pipeline.session_analyse(session_id=session.pk)
    assert analysis is not None
    assert analysis.call_count == 2
    assert [(p["context_tokens"], p["estimated"]) for p in analysis.curve] == [
        (10_000, False),
        (11_000, False),
    ]


def test_a_local_compaction_keeps_the_users_latest_messages_so_their_facts_are_not_lost(
    tmp_path: Path,
) -> None:
    """Codex rebuilds the history as the user's latest messages (up to 20,000 tokens) and the
    summary: a rule the user wrote is still in the context even when the summary omits it, and
    a message older than the budget is not."""
    old_rule = "Never push to main without a review."
    path = write(
        tmp_path,
        meta(),
        turn(),
        user(f"{old_rule} Fix the parser."),
        say("a"),
        count(100_010, usage(100_000)),
        user("x" * 90_000),  # 22,500 tokens: the budget ends inside it
        say("b"),
        count(150_010, usage(140_000)),
        user("Keep the public API of billing/api.py unchanged."),
        say("c"),
        count(170_020, usage(160_000)),
        compacted("Goal: fix the parser."),
        say("d"),
        count(190_020, usage(20_000)),
    )
    codex_import(project=make_project(), paths=[path])
    (event,) = CompactionEvent.objects.all()
    prompts = list(
        Message.objects.filter(session=event.session, role="user")
        .order_by("seq")
        .values_list("seq", flat=True)
    )
    assert event.kept["user_messages"] == prompts[-2:]  # the long one and the last, not the first
    pipeline.session_analyse(session_id=event.session_id)
    span = CompactionSpan.objects.get(session=event.session, replay=None)
    verdicts = {item["text"]: item["verdict"] for item in span.retention}
    assert verdicts["Keep the public API of billing/api.py unchanged."] == "kept"
    assert verdicts[old_rule] == "lost"
