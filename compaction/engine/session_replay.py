"""A session replayed under a policy, next to what its harness really did.

:func:`replay_session` calibrates on the session's usage (the counter
:func:`compaction.engine.analysis.analyse` uses), replays it under a :class:`Policy` with the
original harness's summaries skipped (:mod:`compaction.engine.replay` does the replaying) and
compares it with the observed curve: a :class:`SessionReplay`, whose spans have the shape the
dashboard stores beside observed spans and whose evals are ``ReplayRun.evals``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NotRequired, TypedDict

from compaction.engine import evals, replay, tokens
from compaction.engine.analysis import DEFAULT_WINDOW, calibrated_counter, judge_cost
from compaction.engine.messages import Message, ObservedCompaction, Usage, UsageDict
from compaction.engine.strategies import Policy, seq_ranges
from compaction.engine.summarizers import Summarizer, SummaryDict

__all__ = [
    "ObservedTotals",
    "ReplayEvals",
    "ReplayedDetails",
    "ReplayedSpan",
    "SessionReplay",
    "SpanKept",
    "observed_totals",
    "replay_evals",
    "replay_session",
    "replayed_failure",
]

# --- the stored shapes -----------------------------------------------------------------------


class ReplayedDetails(TypedDict):
    """``CompactionSpan.details`` of a replayed span."""

    splice: evals.SpliceDict
    pairs: evals.PairsDict
    removed: list[list[int]]
    changed: list[list[int]]
    cleared: int
    rounds: int
    cost: UsageDict | None


class SpanKept(TypedDict):
    """``CompactionSpan.kept`` of a replayed span: the seqs kept verbatim at each end."""

    head: list[int] | None
    tail: list[int] | None


class ObservedTotals(TypedDict):
    """What the agent really did, in a replay's terms (``ReplayRun.evals["observed"]``)."""

    calls: int
    input_tokens: int
    billed_tokens: int
    compactions: int
    peak_context: int


class Difference(TypedDict):
    input_tokens: int
    compactions: int
    peak_context: int


class ReplayEvals(TypedDict):
    """``ReplayRun.evals``."""

    retention_score: float | None
    mean_retention_score: float | None
    lost_facts: list[str]
    failed_splices: int
    orphan_pairs: int
    observed: ObservedTotals
    difference: Difference
    judge_cost: NotRequired[UsageDict]


def replayed_failure(span: replay.Span) -> str:
    """Why a replayed step failed, or "": the replay engine's rule (``Span.failure``)."""
    return span.failure


def observed_totals(curve: Sequence[tokens.CurvePoint], compactions: int) -> ObservedTotals:
    """What the agent really did, in the replay's terms, for the difference.

    >>> observed_totals([tokens.CurvePoint(1, 100, 120, 0.1, False)], compactions=0)["peak_context"]
    100
    """
    return {
        "calls": len(curve),
        "input_tokens": sum(p.context_tokens for p in curve),
        "billed_tokens": sum(p.billed_tokens for p in curve),
        "compactions": compactions,
        "peak_context": max((p.context_tokens for p in curve), default=0),
    }


def replay_evals(
    result: replay.ReplayResult, observed: ObservedTotals, *, judge_spent: Usage | None = None
) -> ReplayEvals:
    """A replay's retention, failures and difference from what really happened, and what the
    LLM judge of its retention cost when one was asked."""
    spans = result.spans
    scores = [s.retention.score for s in spans if s.retention is not None and s.retention.items]
    evals_out: ReplayEvals = {
        "retention_score": min(scores) if scores else None,
        "mean_retention_score": sum(scores) / len(scores) if scores else None,
        "lost_facts": sorted({f.text for s in spans if s.retention for f in s.retention.lost}),
        "failed_splices": sum(1 for s in spans if replayed_failure(s)),
        "orphan_pairs": result.totals.orphan_pairs,
        "observed": observed,
        "difference": {
            "input_tokens": result.totals.input_tokens - observed["input_tokens"],
            "compactions": result.totals.compactions - observed["compactions"],
            "peak_context": result.totals.peak_context - observed["peak_context"],
        },
    }
    if judge_spent is not None:
        evals_out["judge_cost"] = judge_spent.to_dict()
    return evals_out


@dataclass(frozen=True)
class ReplayedSpan:
    """One step of a replay, in the shape the dashboard stores beside observed spans."""

    index: int
    span: replay.Span
    failure_reason: str

    @property
    def seq(self) -> int:
        return self.span.seq

    @property
    def stage(self) -> str:
        return self.span.stage

    @property
    def trigger(self) -> str:
        return self.span.trigger

    @property
    def failed(self) -> bool:
        return bool(self.failure_reason)

    @property
    def replaced_from_seq(self) -> int | None:
        removed = seq_ranges(self.span.result.removed)
        return removed[0][0] if removed else None

    @property
    def replaced_to_seq(self) -> int | None:
        removed = seq_ranges(self.span.result.removed)
        return removed[-1][-1] if removed else None

    @property
    def summary_text(self) -> str:
        return self.span.result.summary_text or ""

    @property
    def retention_score(self) -> float | None:
        return self.span.retention.score if self.span.retention else None

    def kept(self) -> SpanKept:
        r = self.span.result
        return {
            "head": list(r.kept_head) if r.kept_head else None,
            "tail": list(r.kept_tail) if r.kept_tail else None,
        }

    def summary_sections(self) -> SummaryDict | None:
        summary = self.span.result.summary
        return summary.to_dict() if summary is not None else None

    def retention_items(self) -> list[evals.RetentionItemDict]:
        report = self.span.retention
        return [item.to_dict() for item in report.items] if report else []

    def details(self) -> ReplayedDetails:
        r = self.span.result
        return {
            "splice": self.span.splice.to_dict(),
            "pairs": self.span.pairs.to_dict(),
            "removed": seq_ranges(r.removed),
            "changed": seq_ranges(r.changed),
            "cleared": r.cleared,
            "rounds": r.rounds,
            "cost": r.cost.to_dict() if r.cost is not None else None,
        }


@dataclass(frozen=True)
class SessionReplay:
    """A replay of one session next to what its harness really did."""

    result: replay.ReplayResult
    observed: ObservedTotals
    evals: ReplayEvals
    spans: tuple[ReplayedSpan, ...]


def replay_session(
    messages: Sequence[Message],
    compactions: Sequence[ObservedCompaction],
    policy: Policy,
    *,
    probes: Iterable[evals.Probe] = (),
    context_window: int = DEFAULT_WINDOW,
    summarizer: Summarizer | None = None,
    progress: Callable[[int, int], None] | None = None,
    judge: evals.Judge | None = None,
) -> SessionReplay:
    """Replay a session under ``policy`` (calibrated on its usage, the original harness's
    summaries skipped) and compare it with the observed curve.

    >>> from compaction.engine.messages import TextBlock, Usage
    >>> ms = [Message(0, "user", (TextBlock("hi"),)),
    ...       Message(1, "assistant", (TextBlock("yo"),), usage=Usage(input_tokens=50))]
    >>> out = replay_session(ms, [], Policy())
    >>> out.evals["difference"]["input_tokens"], out.spans
    (0, ())
    """
    starts = [c.seq for c in compactions]
    counter = calibrated_counter(messages, compactions)
    observed = observed_totals(
        tokens.observed_curve(messages, counter, context_window, context_starts=starts),
        compactions=len(starts),
    )
    result = replay.replay(
        messages,
        policy,
        counter=counter,
        summarizer=summarizer,
        progress=progress,
        skip_seqs=[c.summary_seq for c in compactions if c.summary_seq is not None],
        probes=probes,
        measured=tokens.attribute_usage(messages, counter, context_starts=starts),
        judge=judge,
    )
    spans = tuple(
        ReplayedSpan(index=i, span=span, failure_reason=replayed_failure(span))
        for i, span in enumerate(result.spans)
    )
    return SessionReplay(
        result=result,
        observed=observed,
        evals=replay_evals(result, observed, judge_spent=judge_cost(judge) if judge else None),
        spans=spans,
    )
