import json
from dataclasses import replace

import pytest

from compaction.engine.claude_code import parse_transcript
from compaction.engine.evals import Probe
from compaction.engine.messages import (
    CompactionBlock,
    Message,
    TextBlock,
    check_pairs,
    is_prompt,
    is_tool_result_carrier,
)
from compaction.engine.replay import Totals, replay, summaries_comparable
from compaction.engine.strategies import STEP_NOTE, Policy
from compaction.engine.tokens import attribute_usage, calibrate, context_size
from tests.engine.builders import History
from tests.importers.corpus import MANUAL


def long_session(turns=30):
    h = (
        History()
        .system("agent")
        .user("Port the CLI to Rust. Do not change the flags.")
        .assistant("ok")
    )
    for i in range(turns):
        h.user(f"Part {i}.")
        for j in range(3):
            h.tool("read_file", f"src/p{i}_{j}.rs\n" + "z" * 3000, path=f"src/p{i}_{j}.rs")
        h.assistant(f"Part {i} done.")
    return h.messages


POLICY = Policy(
    soft_limit=6000, hard_limit=9000, keep_last=2, context_window=12000, stages=("summarize",)
)


def test_replay_keeps_the_context_under_the_hard_limit_with_a_sawtooth():
    result = replay(long_session(), POLICY)
    calls = [m for m in long_session() if m.role == "assistant"]
    assert result.totals.calls == len(calls) == len(result.curve)
    assert [p.seq for p in result.curve] == [m.seq for m in calls]
    assert result.totals.compactions >= 2
    assert result.totals.peak_context <= POLICY.hard_limit + 1000  # one call may add a tool result
    assert result.totals.input_tokens < result.totals.uncompacted_input_tokens
    drops = [
        a.context_tokens - b.context_tokens
        for a, b in zip(result.curve, result.curve[1:], strict=False)
    ]
    assert sum(d > 3000 for d in drops) >= 2


def test_every_splice_is_pair_valid_and_the_constraint_is_retained():
    result = replay(long_session(), POLICY, probes=[Probe("do not change the flags")])
    splices = [s for s in result.spans if s.stage == "summarize"]
    assert splices
    for span in splices:
        assert span.pairs.ok
        assert span.retention is not None
        assert span.retention.lost == []
        assert not span.splice.barely_changed
    assert check_pairs(list(result.final_context)) == []


def test_replay_is_deterministic_and_serializes_to_json():
    a = replay(long_session(), POLICY).to_dict()
    b = replay(long_session(), POLICY).to_dict()
    assert a == b
    data = json.loads(json.dumps(a))
    assert set(data) == {
        "policy",
        "counter",
        "summarizer",
        "base_tokens",
        "curve",
        "spans",
        "totals",
    }
    span = next(s for s in data["spans"] if s["stage"] == "summarize")
    assert {
        "seq",
        "tokens_before",
        "tokens_after",
        "summary",
        "kept_head",
        "kept_tail",
        "removed",
    } <= set(span)


def test_progress_is_reported_up_to_the_total():
    calls = []
    replay(long_session(), POLICY, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1][0] == calls[-1][1] == sum(m.role == "assistant" for m in long_session())
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_clearing_old_tool_results_alone_can_hold_the_soft_limit():
    result = replay(long_session(), Policy(soft_limit=6000, hard_limit=9000, keep_last=2))
    assert result.totals.clears > 0
    assert result.totals.compactions == 0
    assert result.totals.peak_context < 9000
    assert all(s.stage == "clear_tool_results" and s.result.cleared > 0 for s in result.spans)


def test_a_policy_below_the_session_size_never_compacts():
    result = replay(long_session(3), Policy(soft_limit=10**6, hard_limit=10**6))
    assert result.spans == ()
    assert result.totals.input_tokens == result.totals.uncompacted_input_tokens


def test_the_original_harness_summary_and_compaction_blocks_are_not_replayed():
    ms = [
        Message(0, "user", (TextBlock("go"),)),
        Message(1, "assistant", (CompactionBlock("old summary"), TextBlock("hi"))),
        Message(2, "user", (TextBlock("[their summary]"),)),
        Message(3, "assistant", (TextBlock("ok"),)),
    ]
    result = replay(ms, Policy(), skip_seqs=[2])
    assert [m.seq for m in result.final_context] == [0, 1, 3]
    assert result.final_context[1].content == (TextBlock("hi"),)


def test_the_sliding_window_baseline_loses_the_head_constraint():
    probe = [Probe("do not change the flags")]
    window = replay(
        long_session(),
        Policy(soft_limit=9000, hard_limit=9000, keep_last=2, stages=("sliding_window",)),
        probes=probe,
    )
    lost = [s for s in window.spans if s.retention is not None and s.retention.lost]
    assert lost, "the naive window should drop the pinned constraint"


# --- a real one-prompt coding session ------------------------------------------------------------
# Claude Code sessions run one to three prompts over 140-160 calls. The manual spotter transcript
# before its /compact is one prompt over 138 calls peaking at 141,787 tokens. The window, hard
# and soft limits are scaled to it in the ratios of "hard 160k in a 200k window"; every other
# field of the policy is the default (turn unit, clear then summarize, keep 6).
ONE_PROMPT_POLICY = Policy(soft_limit=60_000, hard_limit=80_000, context_window=100_000)


def one_prompt_session():
    transcript = parse_transcript(MANUAL)
    (observed,) = transcript.compactions
    messages = [m for m in transcript.messages if m.seq < observed.seq]
    counter = calibrate(messages)
    return messages, counter, attribute_usage(messages, counter)


def replay_one_prompt(policy):
    messages, counter, measured = one_prompt_session()
    return replay(messages, policy, counter=counter, measured=measured)


def test_the_corpus_session_is_one_prompt_over_more_than_a_hundred_calls_past_the_window():
    messages, _, _ = one_prompt_session()
    assert sum(is_prompt(m) for m in messages) == 1
    assert sum(m.role == "assistant" for m in messages) == 138
    peak = max(context_size(m.usage) for m in messages if m.usage is not None)
    assert peak > ONE_PROMPT_POLICY.context_window


def test_the_default_policy_keeps_every_call_of_a_one_prompt_session_under_the_window():
    result = replay_one_prompt(ONE_PROMPT_POLICY)
    assert result.totals.overflow_calls == 0
    assert result.totals.first_overflow_seq is None
    assert max(p.context_tokens for p in result.curve) <= ONE_PROMPT_POLICY.context_window
    assert result.totals.peak_context <= ONE_PROMPT_POLICY.context_window
    assert result.totals.compactions >= 1
    assert result.totals.verdict.healthy, result.totals.verdict.reasons


def test_the_step_fallback_on_a_real_session_leaves_zero_orphan_pairs():
    result = replay_one_prompt(ONE_PROMPT_POLICY)
    splices = [s for s in result.spans if s.stage != "clear_tool_results"]
    assert splices
    assert any(STEP_NOTE in s.result.notes for s in splices)
    for span in splices:
        assert span.pairs.ok, span.pairs.orphans
        # the cut lands on a step: the tail starts at a model call or a prompt
        first_kept = next(m for m in result.final_context if m.seq == span.result.kept_tail[0])
        assert not is_tool_result_carrier(first_kept)
    assert result.totals.orphan_pairs == 0
    assert check_pairs(list(result.final_context)) == []


def test_without_the_fallback_a_one_prompt_session_overflows_and_the_verdict_says_so():
    result = replay_one_prompt(replace(ONE_PROMPT_POLICY, step_fallback=False))
    assert result.totals.compactions == 0
    assert result.totals.overflow_calls > 0
    over = [p for p in result.curve if p.context_tokens > ONE_PROMPT_POLICY.context_window]
    assert result.totals.overflow_calls == len(over)
    assert result.totals.first_overflow_seq == over[0].seq
    verdict = result.totals.verdict
    assert verdict.status == "overflow"
    assert not verdict.healthy
    assert f"{len(over)} calls over the 100,000-token window" in verdict.reasons[0]
    assert result.totals.to_dict()["verdict"]["healthy"] is False


def test_a_policy_that_could_not_hold_its_hard_limit_under_the_window_is_a_warning():
    policy = replace(ONE_PROMPT_POLICY, context_window=200_000, step_fallback=False)
    result = replay_one_prompt(policy)
    assert result.totals.overflow_calls == 0
    over = [p for p in result.curve if p.context_tokens > policy.hard_limit]
    assert result.totals.over_hard_limit_calls == len(over) > 0
    verdict = result.totals.verdict
    assert verdict.status == "over_hard_limit"
    assert not verdict.healthy
    assert verdict.reasons == (
        f"{len(over)} calls above the hard limit: the policy could not cut enough",
    )


def test_totals_stored_before_the_verdict_existed_read_back_with_one():
    old = {
        "calls": 3,
        "input_tokens": 600,
        "output_tokens": 30,
        "billed_tokens": 630,
        "uncompacted_input_tokens": 600,
        "compactions": 0,
        "clears": 0,
        "summarizer_cost": {"input_tokens": 0, "output_tokens": 0},
        "peak_context": 250,
        "max_fill": 1.25,
        "overflow_calls": 1,
        "orphan_pairs": 0,
    }
    totals = Totals.from_dict(old, context_window=200)
    assert totals.context_window == 200
    assert totals.verdict.status == "overflow"
    assert "1 call over the 200-token window" in totals.verdict.reasons[0]


@pytest.mark.parametrize(
    ("summarizer", "observed", "comparable", "says"),
    [
        ("extractive", 1, False, "Retention is not comparable"),
        ("anthropic", 1, True, "Both sides were summarized by a model"),
        ("server_compaction", 2, True, "Both sides were summarized by a model"),
        ("extractive", 0, False, "no observed summary"),
        ("anthropic", 0, False, "no observed summary"),
    ],
)
def test_replayed_retention_is_comparable_only_between_model_summaries(
    summarizer, observed, comparable, says
):
    verdict = summaries_comparable(summarizer, observed_summaries=observed)
    assert verdict.comparable is comparable
    assert says in verdict.note


def test_a_splice_that_barely_shrank_the_context_fails_the_verdict():
    # keep 20 turns of 30 under a limit they almost fill: each summary saves little
    policy = Policy(
        soft_limit=30_000,
        hard_limit=31_000,
        keep_last=20,
        context_window=40_000,
        stages=("summarize",),
        summary_reserve=0,
    )
    result = replay(long_session(), policy)
    failed = [s for s in result.spans if s.failure]
    assert failed
    assert all(s.splice.barely_changed for s in failed)
    assert result.totals.failed_splices == len(failed)
    assert result.totals.verdict.status == "failed_splices"
    assert result.totals.to_dict()["failed_splices"] == len(failed)
