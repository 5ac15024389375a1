"""Policy advice: the front keeps hard constraints, the interval is reproducible and holds the
estimate, and every checked fact lands in one of the six kinds."""

from __future__ import annotations

from pathlib import Path

import pytest

from compaction.engine.advice import (
    KINDS,
    OBSERVED,
    OBSERVED_LABEL,
    RETENTION_TOLERANCE,
    Outcome,
    advise,
    baseline_policies,
    bootstrap_ci,
    classify_text,
    fact_kind,
    lost_and_checked,
    pareto_front,
    summary_drift,
)
from compaction.engine.claude_code import parse_transcript
from compaction.engine.facts import extract_facts

REALTRACES = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "realtraces"


def _grid(policy: str, usd: list[float], retention: float, **kw: object) -> list[Outcome]:
    return [
        Outcome(policy, f"s{i}", u, retention, agent="a" if i % 2 else "b", **kw)  # type: ignore[arg-type]
        for i, u in enumerate(usd)
    ]


def test_front_never_holds_a_policy_that_overflowed_or_failed_a_splice_on_any_session() -> None:
    outcomes = [
        *_grid(OBSERVED, [3.0, 3.0, 3.0], 0.9),
        *_grid("cheap", [2.0, 2.0, 2.0], 0.9),
        # the cheapest and most retentive, but it overflowed on one session
        Outcome("overflows", "s0", 0.5, 1.0),
        Outcome("overflows", "s1", 0.5, 1.0, overflowed=True),
        Outcome("overflows", "s2", 0.5, 1.0),
        *_grid("splits", [0.4, 0.4, 0.4], 1.0, failed_splice=True),
    ]
    advice = advise(outcomes, policies={}, min_sessions=1)
    assert [row["label"] for row in advice["front"]] == ["cheap"]
    assert advice["recommended"]["label"] == "cheap"
    rows = {row["label"]: row for row in advice["policies"]}
    assert rows["overflows"]["overflowed_sessions"] == 1
    assert rows["splits"]["failed_splices"] == 3
    assert not rows["overflows"]["on_front"]


def test_recommendation_keeps_retention_within_the_tolerance_of_the_baseline() -> None:
    outcomes = [
        *_grid(OBSERVED, [3.0, 3.0], 0.95),
        *_grid("cheapest", [0.5, 0.5], 0.95 - RETENTION_TOLERANCE - 0.01),
        *_grid("cheaper", [1.0, 1.0], 0.95 - RETENTION_TOLERANCE + 0.01),
    ]
    advice = advise(outcomes, policies={"cheaper": {"hard_limit": 9000}}, min_sessions=1)
    assert {row["label"] for row in advice["front"]} == {"cheapest", "cheaper", OBSERVED_LABEL}
    rec = advice["recommended"]
    assert (rec["label"], rec["policy"], rec["usd_saved"]) == ("cheaper", {"hard_limit": 9000}, 4.0)


def test_nothing_saves_money_recommends_the_observed_policy() -> None:
    outcomes = [*_grid(OBSERVED, [1.0, 1.0], 0.9), *_grid("dear", [2.0, 2.0], 1.0)]
    rec = advise(outcomes, policies={}, min_sessions=1)["recommended"]
    assert (rec["label"], rec["usd_saved"], rec["usd_saved_ci"]) == (OBSERVED_LABEL, 0.0, [0, 0])


def test_a_policy_missing_a_session_is_left_out() -> None:
    outcomes = [*_grid(OBSERVED, [3.0, 3.0], 0.9), Outcome("half", "s0", 0.1, 1.0)]
    advice = advise(outcomes, policies={}, min_sessions=1)
    assert [row["label"] for row in advice["policies"]] == [OBSERVED_LABEL]


def test_bootstrap_is_deterministic_and_its_interval_holds_the_estimate() -> None:
    savings = [0.3, -0.1, 1.2, 0.05, 0.8, 0.0, 2.5, 0.4, -0.6, 0.9]
    first = bootstrap_ci(savings, seed=7)
    assert bootstrap_ci(savings, seed=7) == first
    assert bootstrap_ci(savings, seed=8) != first
    low, high = first
    assert low < sum(savings) < high
    assert high - low > 0.5  # the sessions disagree: the interval says so


def test_advice_interval_holds_the_point_estimate_and_is_reproducible() -> None:
    usd = [1.0, 4.0, 2.5, 0.7, 3.3, 1.9]
    observed = _grid(OBSERVED, usd, 0.9)
    cheaper = [
        Outcome("cut", o.session, o.usd * f, 0.9)
        for o, f in zip(observed, [0.5, 0.9, 0.6, 1.0, 0.4, 0.8], strict=True)
    ]
    one = advise([*observed, *cheaper], policies={}, min_sessions=1)
    two = advise([*observed, *cheaper], policies={}, min_sessions=1)
    rec = one["recommended"]
    low, high = rec["usd_saved_ci"]
    assert low <= rec["usd_saved"] <= high
    assert rec == two["recommended"]


def test_recommendation_per_agent_uses_only_that_agents_sessions() -> None:
    outcomes = [
        *_grid(OBSERVED, [1.0, 1.0, 1.0, 1.0], 0.9),
        # saves on agent a's sessions (odd), costs more on agent b's (even)
        *[Outcome("mixed", f"s{i}", 0.5 if i % 2 else 1.5, 0.9) for i in range(4)],
    ]
    advice = advise([*outcomes], policies={}, min_sessions=1)
    assert advice["recommended_by_agent"]["a"]["label"] == "mixed"
    assert advice["recommended_by_agent"]["a"]["usd_saved"] == 1.0
    assert advice["recommended_by_agent"]["b"]["label"] == OBSERVED_LABEL


def test_worst_session_is_the_lowest_retention_under_the_recommended_policy() -> None:
    outcomes = [
        *_grid(OBSERVED, [2.0, 2.0, 2.0], 0.9),
        Outcome("cut", "s0", 1.0, 0.95),
        Outcome("cut", "s1", 1.0, 0.8, lost_by_kind={"file": 3, "constraint": 1}),
        Outcome("cut", "s2", 1.0, 0.95, lost_by_kind={"file": 1}),
    ]
    rec = advise(outcomes, policies={}, min_sessions=1)["recommended"]
    assert rec["worst_session"] == "s1"
    assert rec["lost_by_kind"] == {
        "task": 0,
        "constraint": 1,
        "file": 4,
        "identifier": 0,
        "decision": 0,
        "next_step": 0,
    }


def test_pareto_front_ties_and_domination() -> None:
    assert pareto_front({"a": (1.0, 0.5), "b": (1.0, 0.5)}) == ["a", "b"]
    assert pareto_front({"a": (1.0, 0.5), "b": (1.0, 0.6)}) == ["b"]
    assert pareto_front({}) == []


def test_baselines_are_clear_only_and_keep_last_without_a_summary() -> None:
    clear, keep = baseline_policies({"hard_limit": 9000, "soft_limit": 6000, "keep_last": 4})
    assert clear["stages"] == ["clear_tool_results"]
    assert clear["hard_limit"] == 9000
    assert keep["stages"] == ["drop_turns"]
    assert keep["keep_last"] == 4


def test_retention_by_kind_counts_each_fact_once_per_run() -> None:
    lost, checked = lost_and_checked(
        [
            {"kind": "path", "text": "lib/a.ex", "kept": True},
            {"kind": "path", "text": "lib/a.ex", "kept": False},  # a later span lost it
            {"kind": "constraint", "text": "Never push to main.", "kept": True},
            {"kind": "probe", "text": "TODO: update the changelog", "kept": False},
        ]
    )
    assert (lost["file"], checked["file"]) == (1, 1)
    assert (lost["constraint"], checked["constraint"]) == (0, 1)
    assert (lost["next_step"], checked["next_step"]) == (1, 1)


@pytest.mark.parametrize(
    ("kind", "text", "expected"),
    [
        # real facts the extractor found in the held-out Claude Code sessions
        (
            "constraint",
            "don't use ClMail for communication, use the builtin subagent teams.",
            "constraint",
        ),
        ("constraint", "(don't add to many, just the core issue(s)", "constraint"),
        ("decision", "Ok ultrathink and try again", "decision"),
        ("task", "Please fix these lint errors", "task"),
        ("path", "Sources/FitToday/Services/ChatService.swift", "file"),
        ("identifier", "_cachedChatService", "identifier"),
        # probes, uploaded as plain words
        ("probe", "do not change the public API", "constraint"),
        ("probe", "Nunca use float para dinheiro", "constraint"),
        ("probe", "billing/api.py", "file"),
        ("probe", "https://github.com/daaain/danieldemmel.me-next", "identifier"),
        ("probe", "9f1c2ab", "identifier"),
        ("probe", "BILL-42", "identifier"),
        ("probe", "12345", "identifier"),
        ("probe", "We decided to keep the v1 endpoint", "decision"),
        ("probe", "let's go with httpx", "decision"),
        ("probe", "Next: regenerate the migrations", "next_step"),
        ("probe", "TODO update README", "next_step"),
        ("probe", "then run the full test suite", "next_step"),
    ],
)
def test_fact_kind(kind: str, text: str, expected: str) -> None:
    assert fact_kind(kind, text) == expected


def test_every_fact_of_a_real_session_gets_one_of_the_six_kinds() -> None:
    transcripts = sorted(REALTRACES.rglob("*.jsonl"))
    assert transcripts, "the held-out real traces are missing"
    seen = set()
    for path in transcripts[:6]:
        for fact in extract_facts(parse_transcript(path).messages):
            kind = fact_kind(fact.kind, fact.text)
            assert kind in KINDS
            if fact.kind == "path":
                assert kind == "file"
            seen.add(kind)
    assert {"task", "file", "identifier"} <= seen


def test_classify_text_defaults_to_a_rule() -> None:
    assert classify_text("the customer is on the enterprise plan") == "constraint"


def test_drift_counts_only_what_the_previous_summary_still_held() -> None:
    first = [
        {"kind": "path", "text": "lib/a.ex", "kept": True},
        {"kind": "constraint", "text": "Never push to main.", "kept": False},
    ]
    second = [
        {"kind": "path", "text": "lib/a.ex", "kept": False},
        # lost already by the first summary: not this one's loss
        {"kind": "constraint", "text": "Never push to main.", "kept": False},
        {"kind": "task", "text": "Port the parser.", "kept": True},
    ]
    third = [
        {"kind": "path", "text": "lib/a.ex", "kept": False},
        {"kind": "task", "text": "Port the parser.", "kept": False},
    ]
    rows = summary_drift([(10, first), (30, second), (50, third)])
    assert [(r["seq"], r["previous_seq"], r["carried"], r["lost"]) for r in rows] == [
        (30, 10, 1, 1),
        (50, 30, 1, 1),
    ]
    assert rows[0]["lost_by_kind"]["file"] == 1
    assert rows[0]["lost_by_kind"]["constraint"] == 0
    assert rows[1]["lost_by_kind"]["task"] == 1
    assert summary_drift([(10, first)]) == []


# --- advice only when the evidence supports it -------------------------------------------------


def test_a_saving_whose_interval_includes_a_loss_is_not_recommended() -> None:
    # twelve sessions: the policy saves a lot on a few and costs more on most
    observed = _grid(OBSERVED, [10.0] * 12, 0.9)
    risky = _grid("risky", [4.0, 4.0, *[11.0] * 10], 0.9)
    advice = advise([*observed, *risky], policies={"risky": {"hard_limit": 9000}})
    assert advice["recommended"] is None
    why = advice["no_recommendation"]
    assert why is not None
    assert why["reason"].startswith("the saving's 90 % interval includes a loss (-$")
    assert why["sessions_needed"] is not None
    assert why["sessions_needed"] > 12
    # every recommendation made has an interval above zero
    for agent_rec in advice["recommended_by_agent"].values():
        assert agent_rec is None or agent_rec["usd_saved_ci"][0] >= 0


def test_fewer_sessions_than_the_minimum_back_no_recommendation() -> None:
    observed = _grid(OBSERVED, [2.0] * 9, 0.9)
    cheap = _grid("cheap", [1.0] * 9, 0.9)
    advice = advise([*observed, *cheap], policies={})
    assert advice["recommended"] is None
    assert advice["no_recommendation"] == {
        "reason": "9 sessions back it; at least 10 needed",
        "sessions_needed": 10,
    }
    ten = advise([*_grid(OBSERVED, [2.0] * 10, 0.9), *_grid("cheap", [1.0] * 10, 0.9)], policies={})
    assert ten["recommended"] is not None
    assert ten["recommended"]["usd_saved_ci"] == [10.0, 10.0]
    assert ten["no_recommendation"] is None


def test_a_policy_that_wrote_no_summary_has_no_retention_never_100() -> None:
    observed = _grid(OBSERVED, [2.0] * 10, 0.9)
    silent = _grid("silent", [1.0] * 10, None)  # type: ignore[arg-type]
    advice = advise([*observed, *silent], policies={}, min_sessions=1)
    rows = {r["label"]: r for r in advice["policies"]}
    assert rows["silent"]["retention"] is None
    # it cannot claim to keep facts, so it is not recommended on retention it never had
    assert advice["recommended"] is not None
    assert advice["recommended"]["label"] == OBSERVED_LABEL
