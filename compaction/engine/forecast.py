"""The next compaction, forecast: at the recent growth rate, how many calls (and minutes) until
the context reaches the compaction threshold, and how right such a forecast was before each
compaction already observed.

The rate is the mean growth per call over the last ``RECENT_CALLS`` calls since the last
compaction (a compaction, or any drop of the context, starts a new climb). Not the median: the
context grows in bursts (most calls add a little, a large tool result adds much), so the
median per-call growth underestimates the climb. On the corpus's real Claude Code
auto-compaction (tests/fixtures/corpus/claude_code/spotter/258c7280-...), 10 calls before it
the median said 21 calls and the mean 6; 10 followed. The time per call is the median gap
between those calls: a pause of the user is not the agent's pace.

>>> points = [ForecastPoint(seq=2 * i, context_tokens=10_000 + 5_000 * i) for i in range(6)]
>>> threshold = Threshold(tokens=60_000, basis="window")
>>> forecast_next(points, threshold=threshold)
Forecast(calls_to_compaction=5, minutes_to_compaction=None, threshold_tokens=60000, basis='window')
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import pairwise
from statistics import median
from typing import Any, Literal

Basis = Literal["declared_policy", "observed", "harness_default", "window"]

# How many recent calls the rate is measured over, and how few are too few to go on.
RECENT_CALLS = 12
MIN_POINTS = 3
# How many calls before each observed compaction its forecast is evaluated.
ACCURACY_LEAD = 10

# Claude Code auto-compacts when the context passes (window - reserve): the reserve is room for
# the summary's output, min(max output, 20,000) tokens, plus AUTOCOMPACT_BUFFER_TOKENS = 13,000
# (Claude Code's services/compact/autoCompact.ts, as read in the 2.x sources; for every current
# Claude model the max output is above 20,000). A 200,000-token window compacts at 167,000.
CLAUDE_CODE_SUMMARY_RESERVE = 20_000
CLAUDE_CODE_AUTOCOMPACT_BUFFER = 13_000
# Codex compacts at model_auto_compact_token_limit when set, else at 90 % of the window
# (codex-rs model info default, as described by projects configuring it).
CODEX_AUTOCOMPACT_FRACTION = 0.9

HARNESS_LABELS: dict[str, str] = {"claude-code": "Claude Code", "codex": "Codex"}


@dataclass(frozen=True, slots=True)
class ForecastPoint:
    """One model call: its seq, the context it saw and when it was made (if known)."""

    seq: int
    context_tokens: int
    at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Threshold:
    """The context size at which the history is compacted, and where that figure comes from."""

    tokens: int
    basis: Basis
    label: str = ""


@dataclass(frozen=True, slots=True)
class Forecast:
    calls_to_compaction: int
    minutes_to_compaction: float | None
    threshold_tokens: int
    basis: Basis


@dataclass(frozen=True, slots=True)
class ForecastCheck:
    """What the forecast said ``lead`` calls before the compaction at ``seq``, and the truth."""

    seq: int
    predicted_calls: int | None
    actual_calls: int


def _harness(agent: str) -> str:
    return agent.split(":", 1)[0]


def harness_threshold(agent: str, window: int) -> int | None:
    """The context size at which harness ``agent`` compacts on its own, if known.

    >>> harness_threshold("claude-code", 200_000), harness_threshold("claude-code:x", 1_000_000)
    (167000, 967000)
    >>> harness_threshold("codex", 272_000), harness_threshold("my-agent", 200_000)
    (244800, None)
    """
    harness = _harness(agent)
    if harness == "claude-code":
        return window - CLAUDE_CODE_SUMMARY_RESERVE - CLAUDE_CODE_AUTOCOMPACT_BUFFER
    if harness == "codex":
        return int(window * CODEX_AUTOCOMPACT_FRACTION)
    return None


def declared_threshold(metadata: Mapping[str, Any] | None) -> int | None:
    """The compaction limit a session's own policy declares in its metadata
    (``{"compaction_policy": {"hard_limit": ..., "soft_limit": ...}}``): the hard limit, where
    the history is summarised, else the soft limit.

    >>> declared_threshold({"compaction_policy": {"soft_limit": 90_000, "hard_limit": 120_000}})
    120000
    >>> declared_threshold({"compaction_policy": {"hard_limit": "lots"}}) is None
    True
    """
    policy = metadata.get("compaction_policy") if isinstance(metadata, Mapping) else None
    if not isinstance(policy, Mapping):
        return None
    for name in ("hard_limit", "soft_limit"):
        value = policy.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def observed_threshold(sizes: Sequence[int]) -> int | None:
    """The size at which a harness compacted before: the median of the sizes before its past
    compactions (manual ones left out by the caller), None without any.

    >>> observed_threshold([45_000, 52_000, 47_000]), observed_threshold([])
    (47000, None)
    """
    known = [s for s in sizes if s > 0]
    return int(median(known)) if known else None


def threshold_for(
    *,
    metadata: Mapping[str, Any] | None,
    agent: str,
    window: int,
    observed: int | None = None,
    observed_label: str = "where it compacted before",
) -> Threshold:
    """The threshold a forecast aims at: the declared policy, else where this session (or this
    agent in the project) compacted before (``observed``), else the harness default, else the
    context window.

    >>> threshold_for(metadata={}, agent="claude-code", window=200_000)
    Threshold(tokens=167000, basis='harness_default', label='Claude Code default')
    >>> threshold_for(metadata={}, agent="claude-code", window=200_000, observed=48_000).basis
    'observed'
    >>> threshold_for(metadata=None, agent="", window=128_000).basis
    'window'
    """
    declared = declared_threshold(metadata)
    if declared is not None:
        return Threshold(declared, "declared_policy", "declared policy")
    if observed is not None and observed > 0:
        return Threshold(observed, "observed", observed_label)
    harness = harness_threshold(agent, window)
    if harness is not None and harness > 0:
        label = f"{HARNESS_LABELS.get(_harness(agent), _harness(agent))} default"
        return Threshold(harness, "harness_default", label)
    return Threshold(window, "window", "context window")


def _climb(points: Sequence[ForecastPoint], compaction_seqs: Sequence[int]) -> list[ForecastPoint]:
    """The points since the last compaction: after the last observed one, and after the last
    drop of the context (a compaction the trace did not report)."""
    last = max(compaction_seqs, default=None)
    climb = [p for p in points if last is None or p.seq >= last]
    start = 0
    for i in range(1, len(climb)):
        if climb[i].context_tokens < climb[i - 1].context_tokens * 0.7:
            start = i
    return climb[start:]


def forecast_next(
    points: Sequence[ForecastPoint],
    *,
    threshold: Threshold,
    compaction_seqs: Sequence[int] = (),
    recent: int = RECENT_CALLS,
) -> Forecast | None:
    """Calls (and minutes, when the calls have times) until the context reaches the threshold,
    at the mean growth per call over the last ``recent`` calls since the last compaction.
    None with fewer than three such calls, or when the context is not growing.

    >>> flat = [ForecastPoint(i, 50_000) for i in range(5)]
    >>> forecast_next(flat, threshold=Threshold(100_000, "window")) is None
    True
    """
    climb = _climb(sorted(points, key=lambda p: p.seq), compaction_seqs)[-(recent + 1) :]
    if len(climb) < MIN_POINTS:
        return None
    growth = (climb[-1].context_tokens - climb[0].context_tokens) / (len(climb) - 1)
    if growth <= 0:
        return None
    left = threshold.tokens - climb[-1].context_tokens
    calls = max(0, math.ceil(left / growth))
    minutes = None
    timed = [p.at for p in climb if p.at is not None]
    if len(timed) == len(climb):
        gaps = [(b - a).total_seconds() for a, b in pairwise(timed)]
        per_call = median(gaps)
        if per_call >= 0:
            minutes = round(calls * per_call / 60, 1)
    return Forecast(calls, minutes, threshold.tokens, threshold.basis)


def forecast_checks(
    points: Sequence[ForecastPoint],
    *,
    threshold: Threshold,
    compaction_seqs: Sequence[int],
    lead: int = ACCURACY_LEAD,
    thresholds: Mapping[int, Threshold] | None = None,
) -> list[ForecastCheck]:
    """For each observed compaction, the forecast made ``lead`` calls before its last call
    (fewer when the climb was shorter) against the calls that really followed; aimed at
    ``thresholds[seq]`` where given (what was known before that compaction), else
    ``threshold``.

    >>> pts = [ForecastPoint(i, 10_000 * (i + 1)) for i in range(12)]
    >>> pts += [ForecastPoint(12 + i, 20_000 + 10_000 * i) for i in range(3)]
    >>> forecast_checks(pts, threshold=Threshold(120_000, "window"), compaction_seqs=[12])
    [ForecastCheck(seq=12, predicted_calls=9, actual_calls=9)]
    """
    ordered = sorted(points, key=lambda p: p.seq)
    checks = []
    starts = sorted(set(compaction_seqs))
    for i, seq in enumerate(starts):
        previous = starts[i - 1] if i else None
        before = [p for p in ordered if p.seq < seq and (previous is None or p.seq >= previous)]
        if len(before) < 2:
            continue
        at = max(len(before) - 1 - lead, min(MIN_POINTS - 1, len(before) - 1))
        aim = (thresholds or {}).get(seq, threshold)
        made = forecast_next(before[: at + 1], threshold=aim)
        checks.append(
            ForecastCheck(
                seq=seq,
                predicted_calls=made.calls_to_compaction if made else None,
                actual_calls=len(before) - 1 - at,
            )
        )
    return checks


def median_error(checks: Sequence[ForecastCheck]) -> float | None:
    """The median of |predicted - actual| calls over the checks that made a prediction.

    >>> median_error([ForecastCheck(1, 9, 10), ForecastCheck(2, None, 4), ForecastCheck(3, 2, 7)])
    3.0
    """
    errors = [
        abs(c.predicted_calls - c.actual_calls) for c in checks if c.predicted_calls is not None
    ]
    return float(median(errors)) if errors else None
