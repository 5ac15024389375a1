"""The seeds' technique as properties: valid pairs, newest unit untouched, head pinned."""

import itertools
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compaction.engine.messages import Message, TextBlock, check_pairs, is_prompt
from compaction.engine.strategies import (
    PLACEHOLDER,
    STEP_NOTE,
    Policy,
    PolicyError,
    clear_tool_results,
    clear_tool_uses_20250919,
    compact,
    drop_turns,
    sliding_window,
    split_head,
    summarize,
    unit_starts,
)
from compaction.engine.summarizers import ExtractiveSummarizer
from compaction.engine.text import normalize
from compaction.engine.tokens import CharCounter
from tests.engine.builders import History

COUNTER = CharCounter()
CONSTRAINT = "Do not touch the auth module."


@st.composite
def histories(draw):
    """A system prompt, then turns of: prompt, 0-4 tool calls of random size, a final answer."""
    h = History()
    if draw(st.booleans()):
        h.system("You are a coding agent.")
    n_turns = draw(st.integers(1, 7))
    constraint_turn = draw(st.integers(0, n_turns - 1))
    for t in range(n_turns):
        prompt = f"Task {t}: update module_{t}."
        if t == constraint_turn:
            prompt += " " + CONSTRAINT
        h.user(prompt)
        for c in range(draw(st.integers(0, 4))):
            size = draw(st.sampled_from([10, 200, 1500, 6000]))
            h.tool("read_file", f"line {t}.{c}\n" * (size // 10), path=f"pkg/mod_{t}_{c}.py")
        h.assistant(f"Finished task {t}.")
    return h.messages


policies = st.builds(
    Policy,
    soft_limit=st.just(1),
    hard_limit=st.just(1),
    keep_last=st.integers(1, 4),
    pin_head=st.booleans(),
    older_than=st.integers(1, 3),
    unit=st.sampled_from(["turn", "step"]),
    step_fallback=st.booleans(),
    summary_reserve=st.sampled_from([0, 200]),
)


def newest_unit(messages, policy):
    """The newest unit a strategy must keep whole: a turn, or a step when a turn-cutting
    policy may fall back to steps (it does when the turns cannot fit the budget)."""
    h = split_head(messages, policy)
    body = messages[h:]
    starts = unit_starts(body, "step" if policy.step_fallback else policy.unit)
    return list(body[starts[-1] :]) if starts else []


def run(strategy, messages, policy, budget):
    if strategy == "clear":
        return clear_tool_results(messages, policy, limit=budget)
    if strategy == "drop":
        return drop_turns(messages, policy, limit=budget)
    if strategy == "summarize":
        return summarize(messages, policy, limit=budget)
    return sliding_window(messages, policy, limit=budget)


def assert_valid(out):
    assert check_pairs(out) == []
    for a, b in itertools.pairwise(out):
        assert not (a.role == "user" and b.role == "user"), f"two user messages: {a.seq}, {b.seq}"
    non_system = [m for m in out if m.role != "system"]
    if non_system:
        assert non_system[0].role == "user"


STRATEGIES = ["clear", "drop", "summarize", "window"]


@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=histories(), policy=policies, budget=st.integers(50, 8000))
def test_no_strategy_leaves_an_orphan_pair_or_two_user_messages_in_a_row(
    strategy, messages, policy, budget
):
    out = list(run(strategy, messages, policy, budget).messages)
    assert_valid(out)


@pytest.mark.parametrize("strategy", STRATEGIES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=histories(), policy=policies, budget=st.integers(50, 8000))
def test_the_newest_unit_is_kept_verbatim(strategy, messages, policy, budget):
    newest = newest_unit(messages, policy)
    out = list(run(strategy, messages, policy, budget).messages)
    assert len(out) >= len(newest)
    tail = out[len(out) - len(newest) :]
    for original, kept in zip(newest, tail, strict=True):
        if kept is tail[0] and is_prompt(original):
            # a synopsis may be merged in front of the first kept prompt; its own blocks stay
            assert kept.content[len(kept.content) - len(original.content) :] == original.content
        else:
            assert kept == original


@pytest.mark.parametrize("strategy", ["clear", "drop", "summarize"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=histories(), policy=policies, budget=st.integers(50, 8000))
def test_the_pinned_head_is_kept(strategy, messages, policy, budget):
    policy = replace(policy, pin_head=True)
    head = messages[: split_head(messages, policy)]
    out = list(run(strategy, messages, policy, budget).messages)
    systems = [m for m in head if m.role == "system"]
    assert out[: len(systems)] == systems
    prompts = [m for m in head if m.role == "user"]
    if prompts:
        first_user = out[len(systems)]
        assert first_user.seq == prompts[0].seq
        assert first_user.content[: len(prompts[0].content)] == prompts[0].content


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=histories(), policy=policies, budget=st.integers(50, 8000))
def test_a_constraint_survives_the_offline_summary(messages, policy, budget):
    out = summarize(messages, policy, limit=budget).messages
    assert normalize(CONSTRAINT) in normalize("\n".join(m.text for m in out))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=histories(), policy=policies)
def test_the_full_ladder_is_valid_at_every_budget(messages, policy):
    for budget in (100, 400, 1600, 6400):
        p = replace(
            policy,
            soft_limit=budget // 2,
            hard_limit=budget,
            stages=("clear_tool_results", "drop_turns", "summarize"),
        )
        steps = compact(messages, p)
        out = list(steps[-1].messages) if steps else list(messages)
        assert_valid(out)


# --- the seed's own cases (trim-and-compact) -----------------------------------------------------


def naive_trim(messages, max_tokens):
    """The seed's counterexample: drop the oldest message, one at a time, until it fits."""
    out = list(messages)
    while COUNTER.count(out) > max_tokens and len(out) > 1:
        out.pop(0)
    return out


def tool_heavy_history():
    h = History().user("Refactor billing. Decision: keep the endpoint names.")
    for i in range(6):
        h.tool("read_file", "x" * (300 + 150 * i), path=f"billing/f{i}.py")
        h.assistant(f"Read f{i}.")
        h.user(f"Continue with f{i + 1}.")
    h.tool("run_tests", "ok " * 100, cmd="pytest")
    h.assistant("All green.")
    return h.messages


BUDGETS = range(50, COUNTER.count(tool_heavy_history()) + 50, 25)


def test_naive_one_message_at_a_time_trim_leaves_an_orphan_at_some_budget():
    messages = tool_heavy_history()
    broken = [b for b in BUDGETS if check_pairs(naive_trim(messages, b))]
    assert broken, "the naive trim should split a tool pair at some budget"


def test_trim_clear_then_drop_never_leaves_an_orphan_at_any_budget():
    messages = tool_heavy_history()
    policy = Policy(keep_last=1, pin_head=False, older_than=1, step_fallback=False)
    for budget in BUDGETS:
        cleared = clear_tool_results(messages, policy, limit=budget)
        dropped = drop_turns(cleared.messages, policy, limit=budget)
        assert check_pairs(dropped.messages) == [], budget
        assert dropped.messages[-2:] == tuple(messages[-2:])


def test_trim_clear_then_drop_with_the_step_fallback_keeps_the_newest_step_and_every_pair():
    messages = tool_heavy_history()
    policy = Policy(keep_last=1, pin_head=False, older_than=1)
    for budget in BUDGETS:
        cleared = clear_tool_results(messages, policy, limit=budget)
        dropped = drop_turns(cleared.messages, policy, limit=budget)
        assert check_pairs(dropped.messages) == [], budget
        assert dropped.messages[-1] == messages[-1]
        assert dropped.tokens_after <= max(budget, COUNTER.count(dropped.messages[-2:]))


def test_compact_never_leaves_an_orphan_and_keeps_the_old_decision_in_the_synopsis():
    messages = tool_heavy_history()
    policy = Policy(keep_last=2, pin_head=False)
    for budget in BUDGETS:
        out = summarize(messages, policy, limit=budget)
        assert check_pairs(out.messages) == [], budget
        if out.applied:
            assert "keep the endpoint names" in "\n".join(m.text for m in out.messages)


def test_recursive_compaction_keeps_a_fact_from_the_first_summary():
    h = History().system("agent").user("Ship v2. Never use float for money.")
    for i in range(12):
        h.tool("read_file", "y" * 2000, path=f"m{i}.py").assistant(f"Step {i} done.").user(
            f"Next {i}."
        )
    h.assistant("Working.")
    policy = Policy(keep_last=3, pin_head=False, summary_reserve=0)
    first = summarize(h.messages, policy, limit=3000)
    assert first.applied
    assert "Never use float for money." in first.summary_text
    more = History()
    more.messages = list(first.messages)
    for i in range(12, 20):
        more.tool("read_file", "z" * 2000, path=f"m{i}.py").assistant(f"Step {i} done.").user(
            f"Next {i}."
        )
    more.messages = [replace(m, seq=i) for i, m in enumerate(more.messages)]
    second = summarize(more.messages, policy, limit=3000)
    assert second.applied
    assert "Never use float for money." in "\n".join(m.text for m in second.messages)


def test_summarize_recurses_when_the_first_result_still_overflows():
    h = History().user("Goal: port the CLI. Only use the stdlib.").assistant("Starting.")
    for i in range(6):
        h.user(f"Part {i}.").tool("read_file", "w" * 3000, path=f"cli/p{i}.py")
        h.assistant(f"Part {i} ok.")
    policy = Policy(keep_last=5, pin_head=True, summary_reserve=0)
    last_two_turns = h.messages[-8:]
    budget = COUNTER.count(h.messages[:1]) + COUNTER.count(last_two_turns) + 20
    out = summarize(h.messages, policy, limit=budget)
    # the two newest turns fit without the synopsis, not with it: a second round keeps one
    assert out.rounds == 2
    assert out.kept_tail == (h.messages[-4].seq, h.messages[-1].seq)
    assert out.tokens_after <= budget
    assert "Only use the stdlib." in out.messages[0].text


def test_cleared_results_keep_the_call_and_point_to_it():
    h = History().user("go").tool("read_file", "secret body " * 100, path="billing/api.py")
    h.assistant("read").user("more").assistant("ok")
    out = clear_tool_results(h.messages, Policy(older_than=1)).messages
    assert out[1] == h.messages[1]
    assert out[2].content[0].content == PLACEHOLDER
    assert out[2].content[0].tool_use_id == h.messages[1].content[1].id


def test_context_editing_emulation_keeps_the_newest_tool_uses_and_excluded_tools():
    h = History().user("go")
    for i in range(5):
        h.tool("read_file" if i != 1 else "memory", "v" * 800, path=f"f{i}.py")
    h.assistant("done")
    r = clear_tool_uses_20250919(
        h.messages,
        trigger_tokens=100,
        keep_tool_uses=2,
        exclude_tools=["memory"],
        clear_tool_inputs=True,
    )
    cleared = [m.seq for m in r.messages if m.role == "user" and "context editing" in m.text]
    assert cleared == [2, 6]
    assert r.messages[1].content[1].input == {}
    assert r.messages[3] == h.messages[3]


def test_splice_merges_the_synopsis_into_the_first_kept_prompt():
    h = (
        History()
        .user("Build the importer.")
        .tool("read_file", "q" * 4000, path="a.py")
        .assistant("ok")
    )
    h.user("Now tests.").assistant("on it")
    out = summarize(h.messages, Policy(keep_last=1, pin_head=False, summary_reserve=0), limit=100)
    first = out.messages[0]
    assert first.seq == 4
    assert first.content[-1] == TextBlock("Now tests.")
    assert first.content[0].text.startswith("[summary of earlier conversation]")


def test_policy_from_dict_rejects_unknown_fields_and_bad_values():
    assert (
        Policy.from_dict(
            {"soft_limit": 90000, "hard_limit": 120000, "keep_last": 6, "summarizer": "extractive"}
        ).hard_limit
        == 120000
    )
    with pytest.raises(PolicyError, match=r"policy\.bogus: unknown field"):
        Policy.from_dict({"bogus": 1})
    with pytest.raises(PolicyError, match=r"policy\.soft_limit: must not exceed hard_limit"):
        Policy.from_dict({"soft_limit": 5, "hard_limit": 4})
    with pytest.raises(PolicyError, match=r"policy\.keep_last: expected an integer"):
        Policy.from_dict({"keep_last": "6"})
    assert Policy.from_dict(Policy().to_dict()) == Policy()


def test_summarizer_is_deterministic():
    messages = tool_heavy_history()
    a = ExtractiveSummarizer().summarize(messages)
    b = ExtractiveSummarizer().summarize(list(messages))
    assert a == b


def test_strategies_do_not_mutate_their_input():
    messages = tool_heavy_history()
    snapshot = [Message(m.seq, m.role, m.content) for m in messages]
    for strategy in STRATEGIES:
        run(strategy, messages, Policy(keep_last=1, older_than=1), 100)
    assert [Message(m.seq, m.role, m.content) for m in messages] == snapshot


# --- one prompt is one turn: the step fallback ----------------------------------------------------


def one_prompt_history(calls=12, size=2000):
    """A coding session as Claude Code runs one: one prompt, then call after call."""
    h = History().system("agent").user("Implement spotter-gqc. Never push to main.")
    for i in range(calls):
        h.tool("read_file", f"body {i}\n" + "r" * size, path=f"lib/m{i}.ex")
    h.assistant("Implemented; tests pass.")
    return h.messages


@pytest.mark.parametrize("strategy", ["drop", "summarize", "window"])
def test_a_turn_policy_cannot_cut_a_one_prompt_session_without_the_fallback(strategy):
    messages = one_prompt_history()
    policy = Policy(keep_last=2, step_fallback=False)
    assert not run(strategy, messages, policy, 5000).applied


@pytest.mark.parametrize("strategy", ["drop", "summarize", "window"])
def test_the_step_fallback_cuts_a_one_prompt_session_at_a_step_boundary(strategy):
    messages = one_prompt_history()
    policy = Policy(keep_last=2)
    out = run(strategy, messages, policy, 5000)
    assert out.applied
    assert STEP_NOTE in out.notes
    assert out.tokens_after <= 5000
    assert_valid(list(out.messages))
    first_kept = next(m for m in messages if m.seq == out.kept_tail[0])
    assert first_kept.role == "assistant"
    assert list(out.messages[-3:]) == messages[-3:]


def test_the_summary_of_a_one_prompt_session_keeps_the_pinned_task_and_its_rule():
    messages = one_prompt_history()
    out = summarize(messages, Policy(keep_last=2), limit=5000)
    assert out.messages[1].seq == 1  # the pinned prompt, with the synopsis merged in
    assert "Never push to main." in out.messages[1].text
    assert out.summary.goal.startswith("Implement spotter-gqc.")


def test_clearing_falls_back_to_steps_when_the_newest_turns_are_the_whole_body():
    messages = one_prompt_history()
    by_turn = clear_tool_results(messages, Policy(older_than=2, step_fallback=False), limit=5000)
    assert not by_turn.applied
    by_step = clear_tool_results(messages, Policy(older_than=2), limit=5000)
    assert by_step.applied
    assert by_step.tokens_after <= 5000
    # oldest first, and the newest two steps (the last call and its result, the answer) stay
    assert by_step.messages[-3:] == tuple(messages[-3:])
    assert by_step.messages[3].content[0].content == PLACEHOLDER


def test_the_fallback_is_not_used_when_whole_turns_fit():
    h = History().user("Task one.")
    for i in range(4):
        h.tool("read_file", "t" * 2000, path=f"a{i}.py")
    h.assistant("one done").user("Task two.").tool("read_file", "small", path="b.py")
    h.assistant("two done")
    policy = Policy(keep_last=1, pin_head=False, summary_reserve=0)
    out = summarize(h.messages, policy, limit=3000)
    assert out.applied
    assert out.notes == ()
    assert out.kept_tail[0] == h.messages[-4].seq  # the prompt of the newest turn


def test_the_fallback_cuts_inside_the_newest_turn_when_it_alone_overflows():
    h = History().user("Task one.").assistant("one done").user("Task two.")
    for i in range(8):
        h.tool("read_file", "u" * 2000, path=f"c{i}.py")
    h.assistant("two done")
    policy = Policy(keep_last=2, pin_head=False, summary_reserve=0)
    out = summarize(h.messages, policy, limit=3000)
    assert out.applied
    assert STEP_NOTE in out.notes
    assert out.tokens_after <= 3000
    assert check_pairs(out.messages) == []
