import json

from compaction.engine.evals import Probe
from compaction.engine.messages import CompactionBlock, Message, TextBlock, check_pairs
from compaction.engine.replay import replay
from compaction.engine.strategies import Policy
from tests.engine.builders import History


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
