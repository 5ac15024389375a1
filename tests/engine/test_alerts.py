"""Alert rules: each fires on a session built to trip it and stays quiet on healthy ones."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from compaction.engine import alerts
from compaction.engine.alert_money import CompactionsPrice
from compaction.engine.alerts import (
    Call,
    Compaction,
    ContextLengthError,
    LostFact,
    PersonalDataHit,
    SecretHit,
    SessionInputs,
    Thresholds,
    evaluate,
)
from compaction.engine.analysis import analyse
from compaction.engine.claude_code import parse_transcript
from compaction.engine.evals import BARELY_CHANGED_WARNING
from compaction.engine.messages import (
    Message,
    ObservedCompaction,
    Orphan,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from compaction.engine.tokens import observed_curve
from tests.importers.corpus import AUTO, MANUAL

WINDOW = 200_000


def calls(*sizes: int, start: int = 1, step: int = 2) -> tuple[Call, ...]:
    return tuple(Call(start + i * step, size) for i, size in enumerate(sizes))


def rules(inputs: SessionInputs, thresholds: Thresholds | None = None) -> list[str]:
    return [f.rule for f in evaluate(inputs, thresholds)]


def by_rule(inputs: SessionInputs, rule: str, thresholds: Thresholds | None = None):
    (finding,) = [f for f in evaluate(inputs, thresholds) if f.rule == rule]
    return finding


def test_a_quiet_session_raises_nothing():
    assert evaluate(SessionInputs(WINDOW, calls(10_000, 20_000, 30_000))) == []


def test_repeated_compaction_fires_at_the_threshold_and_not_below():
    # Compactions far apart (50 calls between), so thrash stays quiet.
    many = calls(*[50_000] * 200)
    two = SessionInputs(WINDOW, many, (Compaction(101), Compaction(201)))
    three = SessionInputs(WINDOW, many, (Compaction(101), Compaction(201), Compaction(301)))
    assert rules(two) == []
    finding = by_rule(three, "repeated_compaction")
    assert finding.severity == "warning"
    assert finding.title == "Compacted 3 times in one session"
    assert finding.evidence["spans"] == [101, 201, 301]
    assert finding.evidence["numbers"] == {"compactions": 3, "threshold": 3}
    assert finding.evidence["seq"] == 101
    assert rules(two, Thresholds(repeated_compaction_count=2)) == ["repeated_compaction"]


def test_twice_the_threshold_is_critical():
    spans = tuple(Compaction(100 * i) for i in range(1, 7))
    finding = by_rule(SessionInputs(WINDOW, calls(*[1000] * 400), spans), "repeated_compaction")
    assert finding.severity == "critical"


def test_light_steps_do_not_count_as_compactions():
    spans = tuple(Compaction(10 * i, stage="microcompact") for i in range(1, 6))
    assert rules(SessionInputs(WINDOW, calls(*[1000] * 40), spans)) == []


def test_thrash_counts_model_calls_between_compactions():
    # Calls at seqs 1, 3, 5, ... ; a compaction at seq s follows the calls before it.
    seq_calls = calls(*[50_000] * 60)
    near = SessionInputs(WINDOW, seq_calls, (Compaction(10), Compaction(30)))  # 10 calls apart
    far = SessionInputs(WINDOW, seq_calls, (Compaction(10), Compaction(60)))  # 25 calls apart
    finding = by_rule(near, "compaction_thrash")
    assert finding.evidence["numbers"]["calls_between"] == 10
    assert finding.evidence["spans"] == [10, 30]
    assert finding.evidence["calls"] == list(range(11, 30, 2))
    assert finding.title == "2 compactions within 10 model calls: the window refills at once"
    assert "compaction_thrash" not in rules(far)
    assert "compaction_thrash" in rules(far, Thresholds(thrash_window_calls=25))
    assert "compaction_thrash" not in rules(near, Thresholds(thrash_compactions=3))


def test_failed_splice_carries_each_reason():
    spans = (
        Compaction(
            5,
            tokens_before=150_000,
            tokens_after=148_000,
            failed=True,
            failure_reason=BARELY_CHANGED_WARNING,
        ),
        Compaction(9, failed=True, failure_reason="reported error: timeout; empty summary"),
    )
    finding = by_rule(SessionInputs(WINDOW, calls(1000), spans), "failed_splice")
    assert finding.severity == "critical"
    assert finding.evidence["spans"] == [5, 9]
    assert finding.evidence["numbers"] == {
        "failed": 2,
        "tokens_before": 150_000,
        "tokens_after": 148_000,
    }
    assert finding.evidence["items"] == [
        f"@5: {BARELY_CHANGED_WARNING}",
        "@9: reported error: timeout",
        "@9: empty summary",
    ]
    assert finding.title == f"2 compactions failed: {BARELY_CHANGED_WARNING}"


def test_a_light_step_that_shrank_little_is_not_a_failed_splice():
    light = Compaction(5, stage="microcompact", failed=True, failure_reason=BARELY_CHANGED_WARNING)
    assert rules(SessionInputs(WINDOW, calls(1000), (light,))) == []


def test_near_overflow_is_at_or_above_the_fill_and_not_over_the_window():
    inputs = SessionInputs(WINDOW, calls(100_000, 189_999, 190_000, 199_000))
    finding = by_rule(inputs, "near_overflow")
    assert finding.evidence["calls"] == [5, 7]
    assert finding.evidence["seq"] == 7
    assert finding.evidence["numbers"]["peak_fill"] == 0.995
    assert finding.title == "2 calls at 100% of the window"
    assert rules(inputs) == ["near_overflow"]
    assert rules(inputs, Thresholds(near_overflow_fill=0.996)) == []


def test_overflow_from_a_call_over_the_window_or_an_error_in_the_trace():
    over = SessionInputs(WINDOW, calls(150_000, 200_001))
    finding = by_rule(over, "overflow")
    assert finding.severity == "critical"
    assert finding.title == "1 call over the window (200,001 tokens)"
    assert finding.evidence["calls"] == [3]
    error = SessionInputs(
        WINDOW, calls(150_000), context_length_errors=(ContextLengthError(4, "Prompt is too long"),)
    )
    finding = by_rule(error, "overflow")
    assert finding.title == "The API refused a too-long prompt (1 error)"
    assert finding.evidence["items"] == ["@4: Prompt is too long"]


def test_context_length_errors_are_read_from_short_notices_not_tool_output():
    messages = [
        Message(0, "user", (TextBlock("why does it say prompt is too long?"),)),
        Message(1, "assistant", (ToolUseBlock("t1", "grep", {}),)),
        Message(2, "user", (ToolResultBlock("t1", "raise Error('prompt is too long')"),)),
        Message(3, "assistant", (TextBlock("API Error: 400 prompt is too long: 201000 > 200000"),)),
        Message(4, "assistant", (TextBlock("x" * 2000 + " maximum context length"),)),
    ]
    assert [e.seq for e in alerts.context_length_errors(messages)] == [3]


def test_lost_constraint_names_the_lost_rule_and_ignores_lost_paths():
    span = Compaction(
        12,
        lost=(
            LostFact("constraint", "Do not change the public API.", 0),
            LostFact("path", "billing/api.py", 2),
        ),
    )
    finding = by_rule(SessionInputs(WINDOW, calls(1000), (span,)), "lost_constraint")
    assert finding.evidence["items"] == ["@12 constraint (from #0): Do not change the public API."]
    assert finding.evidence["calls"] == []
    assert finding.evidence["seq"] == 12
    assert finding.severity == "warning"
    only_path = Compaction(12, lost=(LostFact("path", "billing/api.py", 2),))
    assert rules(SessionInputs(WINDOW, calls(1000), (only_path,))) == []


def test_a_lost_rule_the_user_had_to_repeat_is_critical_and_leads_the_title():
    span = Compaction(
        12,
        lost=(
            LostFact("task", "Migrate billing.", 0),
            LostFact("constraint", "Do not change the public API.", 3, needed_again_seq=20),
        ),
    )
    finding = by_rule(SessionInputs(WINDOW, calls(1000), (span,)), "lost_constraint")
    assert finding.severity == "critical"
    assert finding.title == "1 constraint lost and needed again: Do not change the public API."
    assert finding.evidence["calls"] == [20]
    assert finding.evidence["items"][1].endswith("(needed again at #20)")


def orphans_after(messages: list[Message], compaction: ObservedCompaction) -> tuple[Orphan, ...]:
    (span,) = analyse(messages, [compaction], context_window=WINDOW).spans
    return span.orphans_after


def test_orphan_pairs_after_a_compaction():
    messages = [
        Message(0, "user", (TextBlock("go"),)),
        Message(1, "assistant", (ToolUseBlock("t1", "ls", {}),)),
        Message(2, "user", (ToolResultBlock("t1", "a.py"),)),
        Message(3, "user", (TextBlock("This session is being continued..."),)),
        Message(4, "user", (ToolResultBlock("t1", "a.py"),)),
    ]
    everything = ObservedCompaction(seq=3, trigger="auto", summary_seq=3)
    orphans = orphans_after(messages, everything)
    assert orphans == (Orphan("tool_result", "t1", 4),)
    # Keeping the head (0..2) keeps the pair whole; the dangling result after is still orphaned.
    head_kept = replace(everything, replaced_from=3, replaced_to=2)
    assert orphans_after(messages, head_kept) == (Orphan("tool_result", "t1", 4),)
    finding = by_rule(
        SessionInputs(WINDOW, calls(1000), (Compaction(3, orphans_after=orphans),)),
        "orphan_pairs",
    )
    assert finding.evidence["items"] == ["@4 tool_result t1 without its other half"]
    assert finding.evidence["spans"] == [3]


def test_a_summary_reported_beside_the_trace_sits_between_a_kept_tool_use_and_its_result():
    messages = [
        Message(0, "assistant", (ToolUseBlock("t1", "ls", {}),)),
        Message(1, "user", (ToolResultBlock("t1", "a.py"),)),
    ]
    beside = ObservedCompaction(seq=1, trigger="auto", summary="S", replaced_from=1)
    assert orphans_after(messages, beside) == (
        Orphan("tool_use", "t1", 0),
        Orphan("tool_result", "t1", 1),
    )


def test_orphans_are_checked_in_the_context_an_earlier_compaction_left():
    # The first compaction dropped seqs 0-3, a tool_use among them; the second replaces seq 5
    # only and keeps the rest of what the first left: its pair check must not see the dropped
    # tool_use again.
    messages = [
        Message(0, "user", (TextBlock("go"),)),
        Message(1, "assistant", (ToolUseBlock("t1", "ls", {}),)),
        Message(2, "user", (TextBlock("interrupted"),)),
        Message(3, "assistant", (TextBlock("ok"),)),
        Message(4, "user", (TextBlock("next"),)),
        Message(5, "assistant", (TextBlock("done"),)),
        Message(6, "user", (TextBlock("more"),)),
    ]
    first = ObservedCompaction(seq=4, trigger="auto", summary="S1", replaced_from=0, replaced_to=3)
    second = ObservedCompaction(seq=6, trigger="auto", summary="S2", replaced_from=5, replaced_to=5)
    spans = analyse(messages, [first, second], context_window=WINDOW).spans
    assert [s.orphans_after for s in spans] == [(), ()]


def test_a_secret_in_a_message_or_a_summary_fires_the_secret_rule():
    span = Compaction(4, summary="Deployed with ghp_...")

    def detector(text: str):
        return [PersonalDataHit("secret", "ghp_… 40 chars #ab12cd34")] if "ghp_" in text else []

    message_hit = SecretHit(2, "message", "sk-ant-… 108 chars #0f0f0f0f")
    quiet = SessionInputs(WINDOW, calls(1000), (Compaction(4, summary="Deployed."),))
    assert [f.rule for f in evaluate(quiet, secrets=detector)] == []
    (finding,) = evaluate(replace(quiet, secrets=(message_hit,)), secrets=detector)
    assert (finding.rule, finding.severity) == ("secret", "critical")
    assert finding.evidence["items"] == ["@2 message: sk-ant-… 108 chars #0f0f0f0f"]
    both = SessionInputs(WINDOW, calls(1000), (span,), secrets=(message_hit,))
    (finding,) = evaluate(both, secrets=detector)
    assert finding.evidence["items"][1] == "@4 summary: ghp_… 40 chars #ab12cd34"
    assert finding.evidence["spans"] == [4]
    assert finding.evidence["seq"] == 2
    assert evaluate(both, Thresholds(disabled=frozenset({"secret"})), secrets=detector) == []


def test_personal_data_is_a_hook_that_stays_silent_without_a_detector():
    span = Compaction(4, summary="Customer CPF 123.456.789-09")

    def detector(text: str):
        return [PersonalDataHit("cpf", "***.***.***-09")] if "CPF" in text else []

    inputs = SessionInputs(WINDOW, calls(1000), (span,))
    assert rules(inputs) == []
    (finding,) = evaluate(inputs, personal_data=detector)
    assert finding.rule == "personal_data"
    assert finding.evidence["items"] == ["@4 cpf: ***.***.***-09"]
    assert "123.456" not in str(finding)


def test_disabled_rules_stay_quiet_and_unknown_ones_are_refused():
    inputs = SessionInputs(WINDOW, calls(201_000))
    assert rules(inputs, Thresholds(disabled=frozenset({"overflow"}))) == []
    with pytest.raises(ValueError, match="disabled: unknown rule 'nope'"):
        Thresholds(disabled=frozenset({"nope"}))
    with pytest.raises(ValueError, match="near_overflow_fill"):
        Thresholds(near_overflow_fill=1.5)


def corpus_inputs(path) -> SessionInputs:
    transcript = parse_transcript(path)
    result = analyse(transcript.messages, transcript.compactions, context_window=WINDOW)
    compactions = [
        Compaction(
            span.seq,
            stage=span.stage,
            trigger=span.compaction.trigger,
            tokens_before=span.tokens_before,
            tokens_after=span.tokens_after,
            orphans_after=span.orphans_after,
        )
        for span in result.spans
    ]
    curve = observed_curve(transcript.messages, context_window=WINDOW)
    return SessionInputs(
        WINDOW,
        tuple(Call(p.seq, p.context_tokens, p.estimated) for p in curve),
        tuple(compactions),
        tuple(alerts.context_length_errors(transcript.messages)),
    )


@pytest.mark.parametrize("path", [AUTO, MANUAL], ids=["auto", "manual"])
def test_a_real_claude_code_session_with_one_healthy_compaction_raises_no_alert(path):
    inputs = corpus_inputs(path)
    assert len(inputs.compactions) == 1
    assert max(c.context_tokens for c in inputs.calls) < 0.95 * WINDOW
    assert evaluate(inputs) == []
    # The same session does trip the count rule once its threshold is one compaction.
    assert rules(inputs, Thresholds(repeated_compaction_count=1)) == ["repeated_compaction"]


# --- storms, loops, and one alert per group of compactions ------------------------------

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)


def spaced(minutes: list[float], *, every: int = 100, before=150_000, after=38_000):
    """Compactions ``every`` seqs apart (far apart in calls), at these minutes of trace time."""
    return tuple(
        Compaction(every * (i + 1), tokens_before=before, tokens_after=after,
                   at=T0 + timedelta(minutes=m))
        for i, m in enumerate(minutes)
    )  # fmt: skip


def test_a_storm_fires_at_six_compactions_within_an_hour_and_not_at_five():
    many = calls(*[40_000] * 400)
    five = SessionInputs(WINDOW, many, spaced([0, 10, 20, 30, 40]))
    six = SessionInputs(WINDOW, many, spaced([0, 10, 20, 30, 40, 59]))
    assert "compaction_storm" not in rules(five)
    finding = by_rule(six, "compaction_storm")
    assert finding.evidence["spans"] == [100, 200, 300, 400, 500, 600]
    assert finding.evidence["calls"] == [100, 200, 300, 400, 500, 600]
    assert finding.evidence["numbers"]["most_in_window"] == 6
    assert finding.evidence["thresholds"] == {"storm_compactions": 6, "storm_window_minutes": 60}
    assert finding.title == "Compaction storm: 6 compactions within 60 minutes (6 in 59 min)"


def test_a_storm_is_counted_in_trace_time_not_in_calls():
    # the same six compactions spread over three hours: no storm
    slow = SessionInputs(WINDOW, calls(*[40_000] * 400), spaced([0, 30, 60, 90, 120, 150]))
    assert "compaction_storm" not in rules(slow)
    assert "compaction_storm" in rules(slow, Thresholds(storm_window_minutes=150))
    assert "compaction_storm" in rules(
        SessionInputs(WINDOW, calls(*[40_000] * 400), spaced([0, 30, 60])),
        Thresholds(storm_compactions=3, storm_window_minutes=60),
    )


def test_a_storm_is_skipped_without_timestamps():
    untimed = tuple(replace(c, at=None) for c in spaced([0, 1, 2, 3, 4, 5, 6, 7]))
    assert "compaction_storm" not in rules(SessionInputs(WINDOW, calls(*[40_000] * 500), untimed))


def test_a_loop_fires_when_the_context_after_compacting_is_still_above_the_trigger():
    # Compacts at 62k, 61.8k, 61.5k: the overhead (61.6k) never lets it below 61.5k.
    spans = (
        Compaction(11, tokens_before=62_000, tokens_after=61_600),
        Compaction(21, tokens_before=61_800, tokens_after=61_600),
        Compaction(31, tokens_before=61_500, tokens_after=61_600),
    )
    sizes = [30_000, 45_000, 55_000, 62_000] + [61_600] * 12
    inputs = SessionInputs(WINDOW, calls(*sizes, start=3), spans)
    finding = by_rule(inputs, "compaction_loop")
    assert finding.severity == "critical"
    assert finding.evidence["numbers"]["threshold_tokens"] == 61_500
    assert finding.evidence["spans"] == [11, 21, 31]
    assert finding.evidence["calls"] == [11, 21, 31]
    assert finding.evidence["items"][0].startswith("fixed overhead: ~61,600 tokens")


def test_a_reported_size_below_the_trigger_contradicts_the_call_and_is_no_loop():
    spans = (Compaction(11, tokens_before=62_000, tokens_after=20_000),)
    inputs = SessionInputs(WINDOW, calls(*[62_000] * 10, start=3), spans)
    assert "compaction_loop" not in rules(inputs)


def test_a_compaction_that_frees_the_window_is_no_loop():
    spans = (Compaction(11, tokens_before=150_000, tokens_after=38_000),)
    inputs = SessionInputs(
        WINDOW, calls(100_000, 150_000, 140_000, 150_000, 150_000, 38_500), spans
    )
    assert "compaction_loop" not in rules(inputs)


def test_a_compaction_that_reported_an_error_is_no_loop_but_a_failed_splice():
    failed = Compaction(
        11, tokens_before=80_000, tokens_after=80_000, failed=True,
        failure_reason="reported error: summarizer timed out",
    )  # fmt: skip
    inputs = SessionInputs(WINDOW, calls(60_000, 70_000, 75_000, 80_000, 80_000, 81_000), (failed,))
    assert rules(inputs) == ["failed_splice"]


def test_one_alert_per_group_storm_before_loop_before_thrash_before_repeated():
    # Six compactions two calls apart, within minutes, each leaving the context above the
    # trigger: storm, loop, thrash and repeated all fire on them; storm is kept.
    spans = tuple(
        Compaction(4 * i + 5, tokens_before=61_000, tokens_after=61_000,
                   at=T0 + timedelta(minutes=i))
        for i in range(6)
    )  # fmt: skip
    inputs = SessionInputs(WINDOW, calls(*[61_000] * 20), spans, compaction_calls_usd=0.42)
    alone = {
        rule: [f.rule for f in evaluate(inputs, Thresholds(disabled=frozenset(others)))]
        for rule, others in (
            ("compaction_loop", {"compaction_storm"}),
            ("compaction_thrash", {"compaction_storm", "compaction_loop"}),
        )
    }
    assert alone == {
        "compaction_loop": ["compaction_loop"],
        "compaction_thrash": ["compaction_thrash"],
    }
    (finding,) = evaluate(inputs)
    assert finding.rule == "compaction_storm"
    assert finding.evidence["also"] == ["compaction_loop", "compaction_thrash",
                                        "repeated_compaction"]  # fmt: skip
    assert finding.evidence["numbers"]["compaction_calls_usd"] == 0.42
    assert finding.evidence["items"][-1] == "cost so far: $0.42 in compaction calls"
    # with the compactions' full price known, the alert says it, part by part
    priced = replace(
        inputs,
        session_usd=12.5,
        compactions_price=CompactionsPrice(1.234, 0.42, 0.5, 0.314, priced=6),
    )
    (finding,) = evaluate(priced)
    assert finding.evidence["items"][-1] == (
        "cost so far: $1.23 for 6 compactions (summary calls $0.42, cache re-writes $0.50, "
        "rework $0.31), of $12.50 for the session"
    )
    assert finding.evidence["numbers"]["compactions_price_usd"] == 1.234


def test_rules_on_other_compactions_keep_their_own_alert():
    # a loop early (one compaction), and later two compactions a few calls apart that free
    # the window: the thrash is about other compactions, so it is an alert of its own
    spans = (
        Compaction(5, tokens_before=50_000, tokens_after=50_200),
        Compaction(105, tokens_before=150_000, tokens_after=38_000),
        Compaction(109, tokens_before=150_000, tokens_after=38_000),
    )
    sizes = [30_000, 50_000, 50_500] + [40_000] * 150
    inputs = SessionInputs(WINDOW, calls(*sizes, start=1), spans)
    found = {f.rule: f for f in evaluate(inputs, Thresholds(repeated_compaction_count=10))}
    assert set(found) == {"compaction_loop", "compaction_thrash"}
    assert found["compaction_loop"].evidence["spans"] == [5]
    assert "also" not in found["compaction_thrash"].evidence
