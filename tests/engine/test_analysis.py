"""The dashboard's recipes, run on plain engine objects: no database needed.

These are the rules a session page shows: the calibration cut, the context after a
compaction, the failure rules, retention and rework per span, replay evals, and the
experiment aggregate.
"""

from __future__ import annotations

import dataclasses

import pytest

from compaction.engine import analysis, experiments, session_replay
from compaction.engine.evals import BARELY_CHANGED_WARNING, Probe
from compaction.engine.messages import (
    Message,
    ObservedCompaction,
    TextBlock,
    Usage,
    messages_from_wire,
)
from compaction.engine.strategies import Policy
from tests.engine.builders import CONSTRAINT, coding_session_messages

SMALL_POLICY = Policy(soft_limit=6000, hard_limit=9000, keep_last=2)


def summary_compaction(summary: str, **overrides: object) -> ObservedCompaction:
    """The compaction the DB tests store: at seq 24, replacing seqs 0-19, its size before the
    context of the last call before it (a figure above it would be replaced as stale)."""
    fields: dict[str, object] = {
        "seq": 24,
        "trigger": "auto",
        "strategy": "summarize",
        "tokens_before": 13_681,
        "tokens_after": 3_000,
        "summary": summary,
        "replaced_from": 0,
        "replaced_to": 19,
    }
    fields.update(overrides)
    return ObservedCompaction(**fields)  # type: ignore[arg-type]


def coding_run(turns: int = 8, **options: object):
    return messages_from_wire(coding_session_messages(turns, **options))  # type: ignore[arg-type]


def only_span(compaction: ObservedCompaction, messages=None, probes=()) -> analysis.ObservedSpan:
    result = analysis.analyse(messages or coding_run(), [compaction], probes=probes)
    [span] = result.spans
    return span


# --- the failure rules -----------------------------------------------------------------------


def test_a_reported_error_and_an_empty_summary_are_both_failure_reasons() -> None:
    span = only_span(summary_compaction("", error="summarizer timed out after 30s"))
    assert span.failed is True
    assert span.failure_reason == "reported error: summarizer timed out after 30s; empty summary"


def test_a_compaction_that_produced_nothing_has_no_retention_figure() -> None:
    # a 100 % "kept everything" for a history nothing replaced would be a false green
    for failed in (
        summary_compaction("", error="502 from the summarizer"),
        summary_compaction(""),
    ):
        span = only_span(failed)
        assert span.failed is True
        assert span.retention.items == ()
        assert span.retention_score is None
    # a summary whose splice barely shrank the context still has one
    barely = only_span(summary_compaction("Goal: migrate billing to API v2.", tokens_after=149_000))
    assert barely.failed is True
    assert barely.retention_score is not None


def test_a_span_that_barely_shrinks_the_context_is_a_failed_splice() -> None:
    span = only_span(summary_compaction("Goal: ...", tokens_before=13_681, tokens_after=13_600))
    assert span.failed is True
    assert BARELY_CHANGED_WARNING in span.failure_reason
    assert span.details()["splice"]["ratio"] == pytest.approx(13_600 / 13_681, abs=1e-4)


def test_a_summary_carried_by_a_message_is_not_an_empty_summary() -> None:
    carried = summary_compaction("", summary_seq=24)
    assert analysis.observed_failure(carried, None) == ""


def test_a_non_summarizing_strategy_may_leave_no_summary() -> None:
    assert analysis.observed_failure(summary_compaction("", strategy="drop_turns"), None) == ""


# --- sizes, retention, rework ----------------------------------------------------------------


def test_unreported_token_counts_come_from_the_curve_around_the_compaction() -> None:
    messages = coding_run()
    result = analysis.analyse(
        messages, [summary_compaction("Goal", tokens_before=None, tokens_after=None)]
    )
    by_seq = {p.seq: p.context_tokens for p in result.curve}
    [span] = result.spans
    assert (span.tokens_before, span.tokens_after) == (by_seq[23], by_seq[25])
    assert span.tokens_estimated is False


def test_a_lost_constraint_counts_as_a_lost_fact_and_a_kept_one_does_not() -> None:
    probe = Probe(text="do not change the public API", seq=8)
    lost = only_span(summary_compaction("Goal: migrate billing. Done: 0-4."), probes=[probe])
    kept = only_span(
        summary_compaction(f"Goal: migrate. Constraints: {CONSTRAINT}"), probes=[probe]
    )
    assert probe.text in [f.text for f in lost.retention.lost]
    assert lost.lost_facts >= 1
    assert lost.retention_score is not None
    assert lost.retention_score < 1.0
    assert probe.text not in [f.text for f in kept.retention.lost]
    assert kept.failed is False


def test_rework_after_a_compaction_is_attached_to_its_span() -> None:
    wire = coding_session_messages(8)
    wire[29]["content"][1]["input"] = {"path": "billing/module_1.py"}  # re-read after seq 24
    span = only_span(summary_compaction("Goal"), messages=messages_from_wire(wire))
    assert [(r.kind, r.path) for r in span.rework] == [("reread", "billing/module_1.py")]


def test_the_context_after_a_compaction_is_the_summary_in_place_of_what_it_replaced() -> None:
    before = [m for m in coding_run(8) if m.seq < 24]
    after = analysis.context_after(before, summary_compaction("S"))
    assert [m.seq for m in after] == [24, 20, 21, 22, 23]
    assert after[0].content == (TextBlock("S"),)
    head_kept = analysis.context_after(before, summary_compaction("S", replaced_from=2))
    assert [m.seq for m in head_kept] == [0, 1, 24, 20, 21, 22, 23]


def test_calibration_leaves_out_calls_after_a_summary_the_trace_does_not_hold() -> None:
    messages = coding_run(8)
    beside = analysis.calibrated_counter(messages, [summary_compaction("Goal")])
    inline = analysis.calibrated_counter(messages, [summary_compaction("Goal", summary_seq=24)])
    assert beside.report is not None
    assert inline.report is not None
    assert beside.report.samples < inline.report.samples


def test_nearest_points_are_the_calls_either_side_of_a_seq() -> None:
    curve = analysis.analyse(coding_run(3), []).curve
    before, after = analysis.nearest_points(curve, 5)
    assert (before.seq if before else None, after.seq if after else None) == (3, 5)


def test_session_totals_sum_the_spans() -> None:
    failing = summary_compaction("", error="boom")
    fine = dataclasses.replace(summary_compaction("Goal: x"), seq=28)
    result = analysis.analyse(coding_run(8), [failing, fine])
    assert result.failed_splices == 1
    assert result.message_count == 32
    assert result.peak is not None
    assert result.peak.seq == 31
    assert result.sparkline() == analysis.sparkline(result.curve_dicts())
    assert len(result.sparkline()) == 16


# --- replays and experiments ------------------------------------------------------------------


def test_a_replay_that_never_compacts_matches_the_observed_totals() -> None:
    messages = coding_run(10, tool_chars=8000)
    loose = Policy(soft_limit=900_000, hard_limit=900_000, context_window=1_000_000)
    out = session_replay.replay_session(messages, [], loose)
    assert [(p.seq, p.context_tokens) for p in out.result.curve] == [
        (p.seq, p.context_tokens) for p in analysis.analyse(messages, []).curve
    ]
    assert out.evals["difference"] == {"input_tokens": 0, "compactions": 0, "peak_context": 0}
    assert out.spans == ()


def test_clearing_tool_results_is_not_judged_a_failed_splice() -> None:
    out = session_replay.replay_session(coding_run(10, tool_chars=8000), [], SMALL_POLICY)
    clears = [s for s in out.spans if s.stage == "clear_tool_results"]
    assert clears
    assert not any(s.failed for s in clears)
    assert out.evals["failed_splices"] == sum(s.failed for s in out.spans)


def test_replay_evals_compare_the_replay_with_what_really_happened() -> None:
    # summarizing only: with clearing first, the step fallback keeps this run under the limit
    summarize_only = Policy(soft_limit=6000, hard_limit=9000, keep_last=2, stages=("summarize",))
    out = session_replay.replay_session(
        coding_run(10, tool_chars=8000), [], summarize_only, probes=[Probe(CONSTRAINT, 8)]
    )
    observed = out.observed
    assert out.evals["observed"] == observed
    assert out.evals["difference"]["input_tokens"] == (
        out.result.totals.input_tokens - observed["input_tokens"]
    )
    assert out.evals["difference"]["input_tokens"] < 0
    assert out.result.totals.compactions > 0


def run(policy: dict[str, object], *, saved: int, compactions: int, retention: float | None):
    return experiments.RunOutcome(
        policy=policy,
        done=True,
        failed=False,
        totals={"compactions": compactions},
        evals={
            "retention_score": retention,
            "failed_splices": 1,
            "difference": {"input_tokens": -saved},
        },
    )


def test_the_experiment_aggregate_groups_runs_by_policy() -> None:
    tight = Policy(soft_limit=3000, hard_limit=5000, keep_last=1).to_dict()
    loose = Policy(soft_limit=15_000, hard_limit=20_000, keep_last=1).to_dict()
    failed = dataclasses.replace(
        run(tight, saved=0, compactions=0, retention=None), done=False, failed=True
    )
    rows = experiments.experiment_aggregate(
        [
            run(tight, saved=900, compactions=3, retention=0.5),
            run(loose, saved=100, compactions=0, retention=None),
            run(tight, saved=700, compactions=1, retention=1.0),
            failed,
        ]
    )["policies"]
    assert [row["label"] for row in rows] == [
        experiments.policy_key(tight),
        experiments.policy_key(loose),
    ]
    first, second = rows
    assert (first["sessions"], first["failed_runs"]) == (3, 1)
    assert first["input_tokens_saved"] == 1600
    assert first["compactions_per_session"] == 2.0
    assert first["retention_score"] == 0.75
    assert first["failed_splices"] == 2
    assert second["retention_score"] is None


def test_the_policy_key_names_limits_unit_stages_and_summarizer() -> None:
    key = experiments.policy_key(Policy(unit="step", stages=("drop_turns",)).to_dict())
    assert key == "drop turns at 90k/120k · keep 6 steps · extractive"


def test_policy_keys_are_short_and_tell_every_knob_apart() -> None:
    base = Policy().to_dict()
    variants = [
        base,
        {**base, "hard_limit": 120_500},
        {**base, "hard_limit": 120_001},
        {**base, "soft_limit": 80_000},
        {**base, "keep_last": 4},
        {**base, "unit": "step"},
        {**base, "step_fallback": not base["step_fallback"]},
        {**base, "stages": ["summarize", "clear_tool_results"]},
        {**base, "stages": ["summarize"]},
        {**base, "stages": []},
        {**base, "summarizer": "anthropic"},
    ]
    keys = [experiments.policy_key(v) for v in variants]
    assert len(set(keys)) == len(variants), keys
    assert max(len(k) for k in keys) <= 64, keys  # every knob spelled out took 87


def test_each_compaction_is_charged_only_with_what_it_lost() -> None:
    """Chained contexts: the second summary is judged against what the first one kept."""
    messages = coding_run(12)  # turn 2 (seq 8) states CONSTRAINT; turn k reads module_k
    first = summary_compaction(
        f"Goal: migrate billing to API v2.\n{CONSTRAINT}", seq=24, replaced_from=0, replaced_to=19
    )
    second = summary_compaction(
        "Goal: migrate billing to API v2.", seq=40, replaced_from=20, replaced_to=35
    )
    spans = analysis.analyse(messages, [first, second]).spans

    def lost(span: analysis.ObservedSpan, kind: str) -> set[str]:
        return {f.text for f in span.retention.lost if f.kind == kind}

    assert CONSTRAINT not in lost(spans[0], "constraint")  # the first summary kept it
    assert CONSTRAINT in lost(spans[1], "constraint")  # ...the second one dropped it
    # module_1 was read before the first summary, which dropped it: its loss, not the second's
    assert "billing/module_1.py" in lost(spans[0], "path")
    assert "billing/module_1.py" not in lost(spans[1], "path")
    assert "billing/module_6.py" in lost(spans[1], "path")  # read after the first summary


class CountingJudge:
    """A judge that answers "lost" and counts the facts it is asked about."""

    def __init__(self) -> None:
        self.asked = 0

    def judge(self, facts, context: str) -> list[bool]:
        self.asked += len(facts)
        return [False] * len(facts)


def earlier_of(result: analysis.Analysis) -> dict[str, analysis.EarlierRetention]:
    return {
        s.inputs_key: analysis.EarlierRetention(s.retention, s.judge_cost) for s in result.spans
    }


def test_a_later_pass_reuses_the_retention_of_spans_whose_inputs_did_not_change() -> None:
    messages = coding_run(12)
    first = summary_compaction("Goal", seq=24)
    second = summary_compaction("S2", seq=40, replaced_from=20, replaced_to=35)
    judge = CountingJudge()
    before = analysis.analyse(messages[:36], [first], judge=judge)
    asked = judge.asked
    assert asked > 0
    # A batch added messages after the first compaction and a second compaction.
    after = analysis.analyse(messages, [first, second], judge=judge, earlier=earlier_of(before))
    assert after.spans[0].inputs_key == before.spans[0].inputs_key
    assert after.spans[0].retention == before.spans[0].retention
    asked_for_second = judge.asked - asked
    fresh = CountingJudge()
    analysis.analyse(messages, [first, second], judge=fresh)
    assert 0 < asked_for_second < fresh.asked  # only the new span was judged
    # A change before the compaction (a redaction, a re-imported message) is checked again.
    edited = [*messages[:3], dataclasses.replace(messages[3], content=(TextBlock("redacted"),))]
    changed = analysis.analyse([*edited, *messages[4:36]], [first], earlier=earlier_of(before))
    assert changed.spans[0].inputs_key != before.spans[0].inputs_key


def test_a_probe_lost_at_one_compaction_is_not_lost_again_at_every_later_one() -> None:
    # chained contexts: the probe is gone from the context the first compaction left, so the
    # second has nothing of it to lose (before, each of 1,999 compactions re-checked all 500
    # probes of a long session: a million verdicts, 2 GB stored)
    messages = [
        Message(0, "user", (TextBlock("Do not touch the auth module. Start the billing work."),)),
        Message(1, "assistant", (TextBlock("ok"),), usage=Usage(input_tokens=9_000)),
        Message(3, "user", (TextBlock("go on"),)),
        Message(4, "assistant", (TextBlock("ok"),), usage=Usage(input_tokens=1_000)),
        Message(6, "user", (TextBlock("go on"),)),
        Message(7, "assistant", (TextBlock("ok"),), usage=Usage(input_tokens=1_200)),
    ]
    compactions = [
        ObservedCompaction(seq=2, trigger="auto", summary="Goal: billing.", replaced_to=1),
        ObservedCompaction(seq=5, trigger="auto", summary="Goal: billing, go on.", replaced_to=4),
    ]
    probe = Probe("do not touch the auth module", seq=0)
    first, second = analysis.analyse(messages, compactions, probes=[probe]).spans
    assert [f.text for f in first.retention.lost if f.kind == "probe"] == [probe.text]
    assert not [i for i in second.retention.items if i.fact.kind == "probe"]
