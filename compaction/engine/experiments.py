"""Many replays summed up per policy: the aggregate an experiment stores.

:func:`experiment_aggregate` turns finished replays (:class:`RunOutcome`) into one row per
policy (``Experiment.aggregate``): input tokens saved, compactions per session, retention and
failed splices; :func:`policy_key` is the label that groups them, the same for equal policies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

__all__ = [
    "ExperimentAggregate",
    "PolicyRow",
    "RunOutcome",
    "experiment_aggregate",
    "policy_key",
]


class PolicyRow(TypedDict):
    """One row of ``Experiment.aggregate["policies"]``."""

    policy: dict[str, Any]
    label: str
    sessions: int
    failed_runs: int
    input_tokens_saved: int
    compactions_per_session: float | None
    retention_score: float | None
    failed_splices: int
    overflow_calls: int
    overflowed_runs: int


class ExperimentAggregate(TypedDict):
    """``Experiment.aggregate``."""

    policies: list[PolicyRow]


# The stages in a label's words: short, one each.
STAGE_WORDS = {
    "clear_tool_results": "clear",
    "drop_turns": "drop turns",
    "summarize": "summarize",
    "sliding_window": "slide",
}


def tokens_short(value: Any) -> str:
    """A token count the way a label says it, exact: ``90k``, ``90.5k``, ``1,234``.

    >>> [tokens_short(n) for n in (90000, 90500, 1234, 0)]
    ['90k', '90.5k', '1,234', '0']
    """
    if not isinstance(value, int) or isinstance(value, bool):
        return str(value)
    if value and value % 100 == 0:
        return f"{value / 1000:g}k"
    return f"{value:,}"


def policy_key(policy: Mapping[str, Any]) -> str:
    """A short label for a policy, the same for equal policies and different for different
    ones: what it does, at which limits (soft/hard), what it keeps, and its summarizer.

    >>> policy_key({"hard_limit": 120000, "soft_limit": 90000, "keep_last": 6, "unit": "turn",
    ...             "stages": ["summarize"], "summarizer": "extractive"})
    'summarize at 90k/120k · keep 6 turns only · extractive'
    """
    unit = policy.get("unit", "turn")
    # runs stored before the step fallback existed have no key: they cut at turns only
    strict = unit == "turn" and not policy.get("step_fallback", False)
    stages = " + ".join(STAGE_WORDS.get(s, str(s)) for s in policy.get("stages") or ()) or "none"
    return (
        f"{stages} at {tokens_short(policy.get('soft_limit'))}/"
        f"{tokens_short(policy.get('hard_limit'))} · "
        f"keep {policy.get('keep_last')} {unit}s{' only' if strict else ''} · "
        f"{policy.get('summarizer')}"
    )


@dataclass(frozen=True)
class RunOutcome:
    """One finished replay of an experiment: ``totals`` and ``evals`` are set when ``done``."""

    policy: Mapping[str, Any]
    done: bool
    failed: bool
    totals: Mapping[str, Any]
    evals: Mapping[str, Any]


def experiment_aggregate(runs: Sequence[RunOutcome]) -> ExperimentAggregate:
    """Per policy: input tokens saved, compactions per session, retention, failed splices.

    >>> policy = {"hard_limit": 9, "soft_limit": 6, "keep_last": 1, "stages": [], "summarizer": "x"}
    >>> run = RunOutcome(policy, True, False, {"compactions": 2}, {"retention_score": 0.5,
    ...     "failed_splices": 0, "difference": {"input_tokens": -300}})
    >>> row = experiment_aggregate([run, run])["policies"][0]
    >>> row["input_tokens_saved"], row["compactions_per_session"], row["sessions"]
    (600, 2.0, 2)
    """
    by_policy: dict[str, list[RunOutcome]] = {}
    for run in runs:
        by_policy.setdefault(policy_key(run.policy), []).append(run)
    rows: list[PolicyRow] = []
    for key, group in by_policy.items():
        done = [r for r in group if r.done]
        retention = [
            r.evals["retention_score"] for r in done if r.evals.get("retention_score") is not None
        ]
        rows.append(
            {
                "policy": dict(group[0].policy),
                "label": key,
                "sessions": len(group),
                "failed_runs": sum(r.failed for r in group),
                "input_tokens_saved": sum(-r.evals["difference"]["input_tokens"] for r in done),
                "compactions_per_session": (
                    sum(r.totals["compactions"] for r in done) / len(done) if done else None
                ),
                "retention_score": sum(retention) / len(retention) if retention else None,
                "failed_splices": sum(r.evals["failed_splices"] for r in done),
                "overflow_calls": sum(r.totals.get("overflow_calls", 0) for r in done),
                "overflowed_runs": sum(1 for r in done if r.totals.get("overflow_calls")),
            }
        )
    return {"policies": rows}
