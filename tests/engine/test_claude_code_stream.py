"""The streaming Claude Code Assembler: same result as the whole-file parse, bounded state,
and the line problems an importer reports."""

import gzip
import json

import pytest

from compaction.engine.claude_code import Assembler, assemble, iter_records, parse_transcript
from tests.importers.corpus import AUTO
from tests.importers.corpus import CLAUDE_CODE as CORPUS


def streamed(path):
    assembler = Assembler()
    messages, compactions, most_pending = [], [], 0
    for record in iter_records(path):
        assembler.feed(record)
        most_pending = max(most_pending, assembler.pending_messages)
        settled, observed = assembler.drain()
        messages += settled
        compactions += observed
    assembler.close()
    settled, observed = assembler.drain()
    return messages + settled, compactions + observed, most_pending


@pytest.mark.parametrize("path", sorted(CORPUS.rglob("*.jsonl*")), ids=lambda p: p.name)
def test_streaming_gives_the_whole_file_result(path):
    messages, compactions, _ = streamed(path)
    whole = parse_transcript(path)
    assert tuple(messages) == whole.messages
    assert tuple(c.observed for c in compactions) == whole.compactions


def test_only_the_current_response_is_held_while_streaming():
    messages, _, most_pending = streamed(AUTO)
    # held back: one response and the messages after it, until the next response starts
    groups, size = [], 0
    for m in messages:
        if m.role == "assistant":
            groups.append(size)
            size = 0
        size += 1
    groups.append(size)
    assert most_pending == max(groups)
    assert most_pending < len(messages) / 50


def test_the_compaction_record_points_at_the_cut_and_the_summary():
    _, (record,), _ = streamed(AUTO)
    with gzip.open(AUTO, "rt") as fh:
        lines = [json.loads(line) for line in fh]
    at = next(i for i, r in enumerate(lines) if r.get("subtype") == "compact_boundary")
    assert record.line == at + 1
    assert record.logical_parent_uuid == lines[at]["logicalParentUuid"]
    assert record.summary_seq == record.observed.seq


def lines_of(*records):
    return [json.dumps(r) + "\n" for r in records]


def user(uuid, text, **extra):
    return {"type": "user", "uuid": uuid, "message": {"role": "user", "content": text}, **extra}


def assistant(uuid, mid, blocks, usage=None):
    message = {"id": mid, "role": "assistant", "model": "m", "content": blocks}
    if usage:
        message["usage"] = usage
    return {"type": "assistant", "uuid": uuid, "message": message}


def test_microcompact_is_an_event_at_the_next_message_with_tokens_saved():
    records = iter_records(
        lines_of(
            user("u1", "go"),
            assistant("a1", "m1", [{"type": "text", "text": "ok"}], {"input_tokens": 50}),
            {
                "type": "system",
                "subtype": "microcompact_boundary",
                "uuid": "b1",
                "microcompactMetadata": {
                    "trigger": "auto",
                    "preTokens": 90_000,
                    "tokensSaved": 30_000,
                    "compactedToolIds": ["t1"],
                },
            },
            user("u2", "next"),
        )
    )
    (event,) = assemble(records).compactions
    assert (event.seq, event.strategy, event.trigger) == (2, "microcompact", "auto")
    assert (event.tokens_before, event.tokens_after) == (90_000, 60_000)


def test_a_failed_compaction_is_an_event_with_its_error():
    records = iter_records(
        lines_of(
            user("u1", "go"),
            {
                "type": "system",
                "subtype": "compact_error",
                "uuid": "e1",
                "content": "Error during compaction: conversation too long",
            },
            user("u2", "again"),
        )
    )
    (event,) = assemble(records).compactions
    assert event.seq == 1
    assert event.strategy == "compact_error"
    assert event.error == "Error during compaction: conversation too long"


def test_a_boundary_without_its_summary_is_a_problem_not_an_event():
    assembler = Assembler()
    for record in iter_records(
        lines_of(user("u1", "go"), {"type": "system", "subtype": "compact_boundary", "uuid": "b"})
    ):
        assembler.feed(record)
    assembler.close()
    assert assembler.drain()[1] == []
    assert [(p.line, p.reason) for p in assembler.problems] == [
        (2, "compact_boundary without the summary that should follow it")
    ]


def test_line_problems_are_named():
    raw = [
        b'{"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}\n',
        b"not json\n",
        b'{"type": "user", "bad": "\xff"}\n',
        b'{"type": "user", "uuid": "u2", "message": {"role": "user", "content": "cut',
    ]
    reasons = [r.data.get("reason") for r in iter_records(raw) if r.type == "invalid"]
    assert reasons == ["json", "utf8", "truncated"]


def test_repair_replaces_what_postgres_cannot_store():
    raw = ['{"type": "user", "message": {"content": "a\\u0000b\\ud800c"}}\n']
    (plain,) = iter_records(raw)
    (repaired,) = iter_records(raw, repair=True)
    assert plain.repaired == 0
    assert repaired.repaired == 2
    assert repaired.data["message"]["content"] == "a\ufffdb\ufffdc"


def test_legacy_summary_records_are_titles_and_unknown_types_are_counted():
    assembler = Assembler()
    for record in iter_records(
        lines_of(
            {"type": "summary", "summary": "Fix the login bug", "leafUuid": "x"},
            {"type": "brand-new-type"},
            user("u1", "go"),
        )
    ):
        assembler.feed(record)
    assembler.close()
    assert assembler.title == "Fix the login bug"
    assert dict(assembler.unknown) == {"brand-new-type": 1}
    assert [m.text for m in assembler.drain()[0]] == ["go"]
