"""Claude Code transcripts in: the real corpus, re-imports, and every malformed case."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from compaction import pipeline
from compaction import services as compaction_services
from compaction.engine.messages import check_pairs
from sessions.importers.claude_code import claude_code_import
from sessions.models import AgentSession, CompactionEvent, Message
from tests.factories import make_project
from tests.importers.corpus import (
    AUTO,
    CLAUDE_CODE,
    MANUAL,
    SPOTTER,
    compaction_facts,
    context,
    read_lines,
    records,
)

pytestmark = pytest.mark.django_db

SHORT = SPOTTER / "short.jsonl"


def stored(session: AgentSession) -> list[tuple[int, str, str]]:
    return list(
        Message.objects.filter(session=session)
        .order_by("seq")
        .values_list("seq", "role", "content_hash")
    )


@pytest.mark.parametrize("path", [AUTO, MANUAL], ids=["auto", "manual"])
def test_spotter_transcript_has_one_observed_compaction_with_the_files_numbers(path: Path) -> None:
    facts = compaction_facts(path)
    report = claude_code_import(project=make_project(), paths=[path])

    session = AgentSession.objects.get(external_id=facts["boundary"]["sessionId"])
    (event,) = CompactionEvent.objects.filter(session=session)
    assert report.sessions[session.external_id].compactions == 1
    assert event.trigger == facts["trigger"]
    assert event.tokens_before == facts["pre_tokens"]
    assert event.strategy == "summarize"
    summary = Message.objects.get(session=session, seq=event.summary_seq)
    assert summary.role == "user"
    assert summary.content == [{"type": "text", "text": event.summary}]
    assert event.summary.startswith("This session is being continued")
    assert (event.replaced_from_seq, event.replaced_to_seq) == (0, event.summary_seq - 1)

    calls = Message.objects.filter(session=session, role="assistant").order_by("seq")
    before = [m for m in calls if m.seq < event.seq][-1]
    after = next(m for m in calls if m.seq > event.seq)
    assert before.context_tokens == facts["context_before"]
    assert after.context_tokens == facts["context_after"]
    assert event.tokens_after == facts["context_after"]
    assert calls.count() == facts["calls"]
    assert check_pairs(compaction_services.engine_messages(session)) == []


@pytest.mark.parametrize("path", [AUTO, MANUAL], ids=["auto", "manual"])
def test_the_acompact_file_is_the_cost_of_the_compaction_not_a_session(path: Path) -> None:
    (call_file,) = (SPOTTER / path.name.removesuffix(".jsonl.gz") / "subagents").glob(
        "agent-acompact-*.jsonl"
    )
    reply = [r for r in records(call_file) if r["type"] == "assistant"][-1]
    prompt = [r for r in records(call_file) if r["type"] == "user" and not r.get("isMeta")][-1]
    boundary = compaction_facts(path)["boundary"]
    assert prompt["parentUuid"] == boundary["logicalParentUuid"]

    claude_code_import(project=make_project(), paths=[path])

    event = CompactionEvent.objects.get(session__external_id=boundary["sessionId"])
    call = event.kept["compaction_call"]
    assert call["agent_id"] == reply["agentId"]
    assert (
        call["usage"]["cache_read_input_tokens"]
        == reply["message"]["usage"]["cache_read_input_tokens"]
    )
    assert call["context_tokens"] == context(reply["message"]["usage"])
    assert call["model"] == reply["message"]["model"]
    assert not AgentSession.objects.filter(external_id__contains="acompact").exists()


def test_other_subagent_files_become_child_sessions_of_the_main_one() -> None:
    claude_code_import(project=make_project(), paths=[AUTO])
    (sub_file,) = (SPOTTER / "258c7280-ae70-4798-800f-63464d01a85d" / "subagents").glob(
        "agent-a8*.jsonl"
    )
    agent_id = records(sub_file)[0]["agentId"]
    child = AgentSession.objects.get(external_id__endswith=f":agent-{agent_id}")
    assert child.parent is not None
    assert child.parent.external_id == "258c7280-ae70-4798-800f-63464d01a85d"
    assert child.message_count > 0
    assert check_pairs(compaction_services.engine_messages(child)) == []


def test_a_subagent_file_imported_alone_creates_its_parent_to_link_to() -> None:
    (sub_file,) = (SPOTTER / "ae4a77f8-aedd-4bc1-888f-c94edc91af04" / "subagents").glob(
        "agent-aa*.jsonl"
    )
    claude_code_import(project=make_project(), paths=[sub_file])
    child = AgentSession.objects.get(parent__isnull=False)
    assert child.parent.external_id == records(sub_file)[0]["sessionId"]


CORPUS_FILES = sorted(
    p
    for p in CLAUDE_CODE.rglob("*")
    if p.name.endswith((".jsonl", ".jsonl.gz")) and "acompact" not in p.name
)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=[p.name for p in CORPUS_FILES])
def test_every_corpus_transcript_imports(path: Path) -> None:
    report = claude_code_import(project=make_project(), paths=[path])
    (file,) = [f for f in report.files if f.path == str(path)]
    assert file.error is None
    assert file.skipped_count == 0
    assert file.sessions
    session_ids = {r["sessionId"] for r in records(path) if "sessionId" in r}
    for external_id in file.sessions:
        assert external_id.split(":")[0] in session_ids
        assert report.sessions[external_id].messages > 0
        session = AgentSession.objects.get(external_id=external_id)
        assert check_pairs(compaction_services.engine_messages(session)) == []


def test_inline_sidechains_of_old_versions_become_child_sessions() -> None:
    path = CLAUDE_CODE / "claude-code-viewer" / "fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl.gz"
    roots = [r["uuid"] for r in records(path) if r.get("isSidechain") and not r["parentUuid"]]
    claude_code_import(project=make_project(), paths=[path])
    children = AgentSession.objects.filter(parent__external_id=path.name.split(".")[0])
    assert sorted(c.external_id.split(":sidechain-")[1] for c in children) == sorted(roots)


def test_reimport_stores_nothing_new() -> None:
    project = make_project()
    first = claude_code_import(project=project, paths=[AUTO])
    again = claude_code_import(project=project, paths=[AUTO])
    assert first.messages > 0
    assert again.messages == 0
    assert again.duplicates == first.messages
    assert again.compactions == 0
    assert CompactionEvent.objects.count() == 1


def _prefix_file(tmp_path: Path, source: Path, upto: int) -> Path:
    target = tmp_path / source.name.removesuffix(".gz")
    target.write_bytes(b"".join(read_lines(source)[:upto]))
    return target


def test_importing_a_longer_version_adds_only_what_is_new(tmp_path: Path) -> None:
    lines = read_lines(AUTO)
    # cut right before a real user prompt, a point where no response is half written
    prompts = [
        i
        for i, line in enumerate(lines)
        if (r := json.loads(line)).get("type") == "user"
        and isinstance(r["message"]["content"], str)
        and not r.get("isMeta")
    ]
    cut = prompts[len(prompts) // 2]
    growing = _prefix_file(tmp_path, AUTO, cut)
    project = make_project()
    part = claude_code_import(project=project, paths=[growing])
    full_file = _prefix_file(tmp_path, AUTO, len(lines))
    rest = claude_code_import(project=project, paths=[full_file])

    reference = make_project()
    claude_code_import(project=reference, paths=[AUTO])
    grown = AgentSession.objects.get(project=project)
    fresh = AgentSession.objects.get(project=reference, parent__isnull=True)
    assert stored(grown) == stored(fresh)
    assert rest.duplicates == part.messages
    assert part.messages + rest.messages == fresh.message_count
    assert rest.sessions[grown.external_id].kept_stored == []


def _stored_rows(session: AgentSession) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    messages = list(
        Message.objects.filter(session=session)
        .order_by("seq")
        .values_list(
            "seq",
            "role",
            "content",
            "content_hash",
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "timestamp",
        )
    )
    events = list(
        CompactionEvent.objects.filter(session=session)
        .order_by("seq", "strategy")
        .values_list(
            "seq",
            "trigger",
            "strategy",
            "tokens_before",
            "tokens_after",
            "summary",
            "summary_seq",
            "replaced_from_seq",
            "replaced_to_seq",
            "kept",
            "duration_ms",
            "error",
            "content_hash",
        )
    )
    return messages, events


def _live_cut(lines: list[bytes], *, where: str) -> tuple[int, str]:
    """(line count, message id): a live transcript read while Claude Code was still writing
    one response over several lines. ``tool calls``: right after the first tool_use of a
    response with at least three; ``after compaction``: right after the first line of the
    first response after the compaction (whose context is its tokens_after)."""
    boundary = next(
        i for i, line in enumerate(lines) if json.loads(line).get("subtype") == "compact_boundary"
    )
    by_id: dict[str, list[tuple[int, bool]]] = {}
    for i, line in enumerate(lines):
        r = json.loads(line)
        if r.get("type") != "assistant" or r.get("isSidechain"):
            continue
        if where == "after compaction" and i < boundary:
            continue
        tool = any(b.get("type") == "tool_use" for b in r["message"]["content"])
        by_id.setdefault(r["message"]["id"], []).append((i, tool))
    if where == "tool calls":
        return next(
            (at[0] + 1, mid)
            for mid, parts in by_id.items()
            if len(at := [i for i, tool in parts if tool]) >= 3
        )
    return next((parts[0][0] + 1, mid) for mid, parts in by_id.items() if len(parts) > 1)


@pytest.mark.parametrize("where", ["tool calls", "after compaction"])
def test_a_live_transcript_imported_twice_equals_one_import_of_the_whole_file(
    tmp_path: Path, where: str
) -> None:
    lines = read_lines(AUTO)
    cut, message_id = _live_cut(lines, where=where)
    whole = _prefix_file(tmp_path, AUTO, len(lines))
    (tmp_path / "live").mkdir()
    live = _prefix_file(tmp_path / "live", AUTO, cut)

    project = make_project()
    first = claude_code_import(project=project, paths=[live])
    external_id = next(iter(first.sessions))
    growing = AgentSession.objects.get(project=project, external_id=external_id)
    cut_call = Message.objects.filter(session=growing, role="assistant").order_by("-seq")[0]
    whole_parts = [
        json.loads(line)["message"]
        for line in lines
        if json.loads(line).get("message", {}).get("id") == message_id
    ]
    assert len(cut_call.content) < sum(len(m["content"]) for m in whole_parts)  # live moment
    again = claude_code_import(project=project, paths=[whole])

    reference = make_project()
    claude_code_import(project=reference, paths=[whole])
    once = AgentSession.objects.get(project=reference, external_id=external_id)
    growing.refresh_from_db()

    assert _stored_rows(growing) == _stored_rows(once)
    assert growing.message_count == once.message_count
    assert growing.compaction_count == once.compaction_count == 1
    complete = Message.objects.get(session=growing, seq=cut_call.seq)
    assert [b["type"] for b in complete.content] == [
        b["type"] for m in whole_parts for b in m["content"]
    ]
    assert complete.output_tokens == whole_parts[-1]["usage"]["output_tokens"]
    report = again.sessions[external_id]
    assert report.kept_stored == []
    assert any(f"message seq {cut_call.seq}" in text for text in report.replaced)

    analysed = pipeline.session_analyse(session_id=growing.pk)
    single = pipeline.session_analyse(session_id=once.pk)
    assert analysed is not None
    assert single is not None
    assert analysed.orphans == single.orphans == []
    assert analysed.curve == single.curve
    assert analysed.call_count == single.call_count


def test_a_changed_message_before_the_open_tail_is_kept_as_stored_and_reported(
    tmp_path: Path,
) -> None:
    lines = read_lines(AUTO)
    project = make_project()
    claude_code_import(project=project, paths=[_prefix_file(tmp_path, AUTO, len(lines))])
    session = AgentSession.objects.get(project=project, parent__isnull=True)
    stored_before = _stored_rows(session)
    # the file now says something else about its first response, long finished
    first_id = next(
        r["message"]["id"] for line in lines if (r := json.loads(line)).get("type") == "assistant"
    )
    changed = []
    for line in lines:
        r = json.loads(line)
        if r.get("type") == "assistant" and r["message"]["id"] == first_id:
            r["message"]["content"].append({"type": "text", "text": "rewritten afterwards"})
            line = (json.dumps(r) + "\n").encode()
        changed.append(line)
    edited = tmp_path / "edited" / AUTO.name.removesuffix(".gz")
    edited.parent.mkdir()
    edited.write_bytes(b"".join(changed))

    again = claude_code_import(project=project, paths=[edited])

    (note,) = again.sessions[session.external_id].kept_stored
    assert "differs from the file" in note
    assert again.sessions[session.external_id].replaced == []
    assert again.messages == 0
    assert _stored_rows(session) == stored_before


# --- malformed input -----------------------------------------------------------------------


def _write(tmp_path: Path, name: str, lines: list[bytes]) -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(lines))
    return path


def test_truncated_last_line_is_reported_and_the_rest_imports(tmp_path: Path) -> None:
    lines = read_lines(SHORT)
    path = _write(tmp_path, "s.jsonl", [*lines[:-1], lines[-1][: len(lines[-1]) // 2]])
    report = claude_code_import(project=make_project(), paths=[path])
    (file,) = report.files
    assert [(s.line, s.reason.split(" (")[0]) for s in file.skipped] == [
        (len(lines), f"line {len(lines)}: truncated last line")
    ]
    assert report.messages > 0


def test_non_json_line_is_reported_by_number_and_the_rest_imports(tmp_path: Path) -> None:
    lines = read_lines(SHORT)
    path = _write(tmp_path, "s.jsonl", [*lines[:3], b"this is not json\n", *lines[3:]])
    reference = claude_code_import(project=make_project(), paths=[SHORT])
    report = claude_code_import(project=make_project(), paths=[path])
    (file,) = report.files
    assert [s.line for s in file.skipped] == [4]
    assert file.skipped[0].reason.startswith("line 4: not JSON")
    assert report.messages == reference.messages


def test_record_missing_its_message_is_reported(tmp_path: Path) -> None:
    lines = read_lines(SHORT)
    index = next(i for i, line in enumerate(lines) if json.loads(line)["type"] == "assistant")
    broken = json.loads(lines[index])
    del broken["message"]
    lines[index] = json.dumps(broken).encode() + b"\n"
    report = claude_code_import(project=make_project(), paths=[_write(tmp_path, "s.jsonl", lines)])
    (file,) = report.files
    assert [(s.line, s.reason) for s in file.skipped] == [
        (index + 1, "assistant record without a 'message' object")
    ]
    assert report.messages > 0


def test_binary_file_is_refused_with_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "image.jsonl"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    report = claude_code_import(project=make_project(), paths=[path])
    (file,) = report.files
    assert file.error == "binary file (contains NUL bytes), not JSON lines"
    assert not AgentSession.objects.exists()


def test_empty_file_is_refused_with_a_reason(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"\n\n")
    report = claude_code_import(project=make_project(), paths=[path])
    assert report.files[0].error == "empty file"
    assert "empty.jsonl [claude-code]: not imported: empty file" in report.render()
    assert not AgentSession.objects.exists()


def test_a_line_that_is_not_utf8_is_skipped_alone(tmp_path: Path) -> None:
    lines = read_lines(SHORT)
    bad = b'{"type": "user", "x": "\xff\xfe"}\n'
    path = _write(tmp_path, "s.jsonl", [*lines[:2], bad, *lines[2:]])
    report = claude_code_import(project=make_project(), paths=[path])
    (file,) = report.files
    assert [(s.line, s.reason) for s in file.skipped] == [(3, "line 3: not UTF-8 text (byte 23)")]


def test_characters_postgres_cannot_store_are_replaced_and_reported(tmp_path: Path) -> None:
    lines = read_lines(SHORT)
    index = next(
        i
        for i, line in enumerate(lines)
        if (r := json.loads(line))["type"] == "user" and isinstance(r["message"]["content"], str)
    )
    record = json.loads(lines[index])
    record["message"]["content"] = "nul \u0000 and lone \ud800 here"
    lines[index] = json.dumps(record).encode() + b"\n"
    report = claude_code_import(project=make_project(), paths=[_write(tmp_path, "s.jsonl", lines)])
    (file,) = report.files
    assert [s.line for s in file.skipped] == [index + 1]
    assert "replaced 2 character(s)" in file.skipped[0].reason
    texts = [m.content[0].get("text") for m in Message.objects.filter(role="user")]
    assert "nul \ufffd and lone \ufffd here" in texts


def test_unknown_record_types_are_counted_not_fatal(tmp_path: Path) -> None:
    lines = read_lines(SHORT)
    extra = [b'{"type": "hologram", "x": 1}\n', b'{"type": "hologram"}\n', b'{"type": "x-new"}\n']
    path = _write(tmp_path, "s.jsonl", [*lines[:2], *extra, *lines[2:]])
    report = claude_code_import(project=make_project(), paths=[path])
    assert dict(report.unknown_types) == {"hologram": 2, "x-new": 1}
    assert "unknown record types: hologram 2, x-new 1" in report.render()
    assert report.messages > 0


def test_gzipped_copy_imports_like_the_plain_file(tmp_path: Path) -> None:
    packed = tmp_path / "short.jsonl.gz"
    packed.write_bytes(gzip.compress(SHORT.read_bytes()))
    plain = claude_code_import(project=make_project(), paths=[SHORT])
    zipped = claude_code_import(project=make_project(), paths=[packed])
    assert zipped.messages == plain.messages > 0


def test_projects_are_isolated() -> None:
    a, b = make_project(), make_project()
    claude_code_import(project=a, paths=[SHORT])
    report = claude_code_import(project=b, paths=[SHORT])
    assert report.messages > 0
    assert report.duplicates == 0
    assert AgentSession.objects.filter(project=a).count() == 1
    assert AgentSession.objects.filter(project=b).count() == 1


def test_small_chunks_store_the_same_trace(tmp_path: Path) -> None:
    whole, chunked = make_project(), make_project()
    claude_code_import(project=whole, paths=[AUTO])
    claude_code_import(project=chunked, paths=[AUTO], chunk_messages=7, chunk_bytes=50_000)
    sessions = AgentSession.objects.filter(parent__isnull=True)
    assert stored(sessions.get(project=whole)) == stored(sessions.get(project=chunked))


@pytest.mark.parametrize("path", [AUTO, MANUAL], ids=["auto", "manual"])
def test_the_analysis_of_an_imported_spotter_session_sees_the_same_numbers(path: Path) -> None:
    facts = compaction_facts(path)
    claude_code_import(project=make_project(), paths=[path])
    session = AgentSession.objects.get(external_id=facts["boundary"]["sessionId"])
    event = CompactionEvent.objects.get(session=session)

    analysis = pipeline.session_analyse(session_id=session.pk)

    assert analysis is not None
    assert analysis.orphans == []
    before = [p for p in analysis.curve if p["seq"] < event.seq][-1]
    after = next(p for p in analysis.curve if p["seq"] > event.seq)
    assert (before["context_tokens"], after["context_tokens"]) == (
        facts["context_before"],
        facts["context_after"],
    )
    assert not before["estimated"]
    assert not after["estimated"]
    assert analysis.call_count == facts["calls"]


def test_each_response_keeps_its_model_and_an_api_error_is_a_failed_request(
    tmp_path: Path,
) -> None:
    """Claude Code falls back from Opus to Sonnet, and writes a failed API call as an
    assistant record of model "<synthetic>" (isApiErrorMessage) with zero usage."""
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 40000}
    records = [
        {
            "type": "user",
            "uuid": "u1",
            "sessionId": "s-fb",
            "message": {"role": "user", "content": "fix it"},
        },
        {
            "type": "assistant",
            "uuid": "a1",
            "sessionId": "s-fb",
            "message": {
                "id": "m1",
                "role": "assistant",
                "model": "claude-opus-4-20250514",
                "content": [{"type": "text", "text": "looking"}],
                "usage": usage,
            },
        },
        {
            "type": "user",
            "uuid": "u2",
            "sessionId": "s-fb",
            "message": {"role": "user", "content": "go on"},
        },
        {
            "type": "assistant",
            "uuid": "a2",
            "sessionId": "s-fb",
            "isApiErrorMessage": True,
            "message": {
                "id": "m2",
                "role": "assistant",
                "model": "<synthetic>",
                "content": [{"type": "text", "text": "API Error: 502 Bad Gateway"}],
                "usage": {"input_tokens": 0, "output_tokens": 0},
            },
        },
        {
            "type": "user",
            "uuid": "u3",
            "sessionId": "s-fb",
            "message": {"role": "user", "content": "again"},
        },
        {
            "type": "assistant",
            "uuid": "a3",
            "sessionId": "s-fb",
            "message": {
                "id": "m3",
                "role": "assistant",
                "model": "claude-sonnet-4-20250514",
                "content": [{"type": "text", "text": "done"}],
                "usage": usage,
            },
        },
    ]
    path = _write(tmp_path, "s-fb.jsonl", [json.dumps(r).encode() + b"\n" for r in records])
    project = make_project()
    claude_code_import(project=project, paths=[path])
    session = AgentSession.objects.get(project=project, external_id="s-fb")
    models = list(session.messages.filter(role="assistant").values_list("seq", "model"))
    assert models == [
        (1, "claude-opus-4-20250514"),
        (3, "<synthetic>"),
        (5, "claude-sonnet-4-20250514"),
    ]
    assert session.messages.get(seq=3).is_failed_request
    analysis = pipeline.session_analyse(session_id=session.pk)
    assert analysis is not None
    assert [p["seq"] for p in analysis.curve] == [1, 5]
