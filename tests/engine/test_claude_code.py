"""The real spotter transcripts: parsing, observed compactions, the observed curve, a replay."""

import gzip
import json

import pytest

from compaction.engine.claude_code import iter_records, parse_transcript
from compaction.engine.messages import check_pairs
from compaction.engine.replay import replay
from compaction.engine.strategies import Policy
from compaction.engine.tokens import attribute_usage, calibrate, context_size, observed_curve
from tests.importers.corpus import AUTO, MANUAL


def raw_records(path):
    with gzip.open(path, "rt") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def file_facts(path):
    """What the file itself says, read without the parser: boundary metadata and API calls."""
    records = raw_records(path)
    boundaries = [r["compactMetadata"] for r in records if r.get("subtype") == "compact_boundary"]
    last_usage = {}
    for r in records:
        if r.get("type") == "assistant" and not r.get("isSidechain"):
            last_usage[r["message"]["id"]] = r["message"]["usage"]
    return boundaries, last_usage


@pytest.mark.parametrize("path", [AUTO, MANUAL], ids=["auto", "manual"])
def test_spotter_transcript_has_one_compaction_with_the_files_trigger_and_pre_tokens(path):
    boundaries, _ = file_facts(path)
    transcript = parse_transcript(path)
    assert len(boundaries) == 1
    (observed,) = transcript.compactions
    assert observed.trigger == boundaries[0]["trigger"]
    assert observed.tokens_before == boundaries[0]["preTokens"]
    summary = transcript.messages[observed.seq]
    assert summary.role == "user"
    assert summary.text.startswith("This session is being continued")
    assert transcript.summary_seqs == (observed.seq,)
    assert check_pairs(transcript.messages) == []


@pytest.mark.parametrize("path", [AUTO, MANUAL], ids=["auto", "manual"])
def test_one_assistant_message_per_api_response_with_the_last_lines_usage(path):
    _, last_usage = file_facts(path)
    transcript = parse_transcript(path)
    calls = [m for m in transcript.messages if m.role == "assistant"]
    assert len(calls) == len(last_usage)
    curve = observed_curve(transcript.messages)
    expected = [
        u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        for u in last_usage.values()
    ]
    assert [p.context_tokens for p in curve] == expected
    assert not any(p.estimated for p in curve)
    assert [m.usage.output_tokens for m in calls] == [
        u["output_tokens"] for u in last_usage.values()
    ]


def test_auto_compaction_happens_right_after_the_largest_context_and_shrinks_it():
    transcript = parse_transcript(AUTO)
    (observed,) = transcript.compactions
    before = [m for m in transcript.messages[: observed.seq] if m.role == "assistant"][-1]
    assert context_size(before.usage) == 166759
    assert observed.tokens_after == 33960
    assert observed.replaced_from == 0
    assert observed.replaced_to == observed.seq - 1


def test_records_stream_and_noise_is_skipped_and_counted():
    types = {r.type for r in iter_records(AUTO)}
    assert {"progress", "file-history-snapshot", "assistant", "user", "system"} <= types
    transcript = parse_transcript(AUTO)
    assert transcript.skipped["progress"] == 1333
    assert transcript.session_id == "258c7280-ae70-4798-800f-63464d01a85d"
    assert transcript.models == ("claude-opus-4-6",)


def calibrated(transcript):
    return calibrate(transcript.messages, context_starts=transcript.summary_seqs)


@pytest.mark.parametrize("path", [AUTO, MANUAL], ids=["auto", "manual"])
def test_calibrated_counter_reproduces_the_reported_context_sizes(path):
    transcript = parse_transcript(path)
    counter = calibrated(transcript)
    assert counter.report.samples == len([m for m in transcript.messages if m.role == "assistant"])
    assert counter.report.mean_abs_pct_error < 0.03


HARD_160K = Policy(
    soft_limit=160_000, hard_limit=160_000, keep_last=6, unit="step", stages=("summarize",)
)


def test_replay_at_160k_compacts_the_auto_session_where_its_context_crossed_160k():
    transcript = parse_transcript(AUTO)
    result = replay(
        transcript.messages,
        HARD_160K,
        counter=calibrated(transcript),
        skip_seqs=transcript.summary_seqs,
    )
    observed = {p.seq: p.context_tokens for p in observed_curve(transcript.messages)}
    (span,) = result.spans
    # before Claude Code's own auto-compaction (at 167k), at a call that really was near 160k
    assert span.seq < transcript.compactions[0].seq
    assert 155_000 <= observed[span.seq] <= 167_094
    assert span.result.tokens_after < 80_000
    assert span.pairs.ok
    assert result.totals.peak_context <= 160_000


def test_replay_at_160k_compacts_the_manual_session_only_after_its_own_compaction_point():
    transcript = parse_transcript(MANUAL)
    (observed,) = transcript.compactions
    assert observed.tokens_before < 160_000
    result = replay(
        transcript.messages,
        HARD_160K,
        counter=calibrated(transcript),
        skip_seqs=transcript.summary_seqs,
    )
    (span,) = result.spans
    # without the manual /compact, the raw history keeps growing past 160k after that point
    assert span.seq > observed.seq
    assert span.pairs.ok


@pytest.mark.parametrize("path", [AUTO, MANUAL], ids=["auto", "manual"])
def test_replay_with_measured_counts_reproduces_the_reported_curve_until_it_compacts(path):
    transcript = parse_transcript(path)
    starts = transcript.summary_seqs
    counter = calibrate(transcript.messages, context_starts=starts)
    never = Policy(soft_limit=10_000_000, hard_limit=10_000_000, context_window=10_000_000)
    result = replay(
        transcript.messages,
        never,
        counter=counter,
        skip_seqs=starts,
        measured=attribute_usage(transcript.messages, counter, context_starts=starts),
    )
    first_compaction = transcript.compactions[0].seq
    reported = {p.seq: p.context_tokens for p in observed_curve(transcript.messages)}
    replayed = {p.seq: p.context_tokens for p in result.curve}
    before = [seq for seq in reported if seq < first_compaction]
    assert len(before) > 50
    assert [replayed[seq] for seq in before] == [reported[seq] for seq in before]


def test_a_transcript_groups_with_its_subagents_once_however_it_is_named(tmp_path):
    from compaction.engine.claude_code import transcript_groups

    main = tmp_path / "s1.jsonl.gz"
    other = tmp_path / "s2.jsonl"
    subagents = tmp_path / "s1" / "subagents"
    subagents.mkdir(parents=True)
    for path in (main, other, subagents / "agent-a.jsonl", subagents / "notes.txt"):
        path.write_text("")
    assert transcript_groups([tmp_path]) == [[main, subagents / "agent-a.jsonl"], [other]]
    assert transcript_groups([main, main]) == [[main, subagents / "agent-a.jsonl"]]
