"""The analysis of an observed session, as a plain function an agent harness can call too.

:func:`analyse` draws a session's token curve, checks its tool pairs, and evaluates one span
per compaction its harness reported (retention, rework, the failure rules). The other recipes
build on what is here (the window a session is measured against, the calibration on its usage,
what a judge has spent): :mod:`compaction.engine.session_replay` replays a session under a
policy, :mod:`compaction.engine.experiments` sums many replays up per policy.

They take engine dataclasses (messages, :class:`ObservedCompaction`, probes), never database
rows, and return dataclasses whose ``to_dict()`` shapes are the TypedDicts beside them: the
JSON the dashboard stores, so a renamed key is a type error rather than a blank cell on a page.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple, NotRequired, TypedDict

from compaction.engine import evals, tokens
from compaction.engine.facts import RULE_KINDS
from compaction.engine.messages import (
    Message,
    ObservedCompaction,
    Orphan,
    OrphanDict,
    TextBlock,
    Usage,
    UsageDict,
    check_pairs,
)
from compaction.engine.names import Stage

__all__ = [
    "DEFAULT_WINDOW",
    "LOST_FACT_KINDS",
    "SPARK_BUCKETS",
    "Analysis",
    "CheckedBefore",
    "EarlierRetention",
    "ObservedDetails",
    "ObservedSpan",
    "analyse",
    "calibrated_counter",
    "checked_before",
    "nearest_points",
    "observed_failure",
    "span_inputs_key",
    "sparkline",
]

DEFAULT_WINDOW = 200_000
# The window the product uses when a trace does not say, by model name (tokens); the first
# prefix that matches wins, and an unknown model gets DEFAULT_WINDOW.
MODEL_WINDOWS: tuple[tuple[str, int], ...] = (
    ("claude-", 200_000),
    ("gpt-4o", 128_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("gemini-", 1_048_576),
)


WindowSource = Literal["sent", "reported", "model"]


def window_for(context_window: int | None, model: str | None) -> tuple[int, WindowSource]:
    """The context window a session is measured against, and where it comes from: ``sent``
    (the client or the trace said), else ``model`` (the product's figure for its model). The
    page, the analysis and the API all read it here.

    >>> window_for(None, "gpt-4o-2024-08-06"), window_for(32_000, "claude-opus-4-6")
    ((128000, 'model'), (32000, 'sent'))
    """
    if context_window:
        return context_window, "sent"
    for prefix, window in MODEL_WINDOWS:
        if model and model.startswith(prefix):
            return window, "model"
    return DEFAULT_WINDOW, "model"


SPARK_BUCKETS = 48
# Only rules count as lost facts in a session's totals: files and identifiers a summary leaves
# out are shown on the span page, but would drown the list's signal.
LOST_FACT_KINDS = RULE_KINDS


# --- the stored shapes -----------------------------------------------------------------------


class ReportedTokens(TypedDict):
    tokens_before: int | None
    tokens_after: int | None


class CheckedBefore(NamedTuple):
    """The size before a compaction once checked against the session's own calls."""

    tokens: int | None
    estimated: bool
    source: Literal["harness", "computed"] | None  # harness: the figure the trace reported
    note: str  # why the harness's figure was replaced, "" when it was not


class ObservedDetails(TypedDict):
    """``CompactionSpan.details`` of an observed span."""

    reported: ReportedTokens
    splice: evals.SpliceDict | None
    duration_ms: int | None
    orphans_after: list[OrphanDict]
    inputs_key: str
    judge_cost: NotRequired[UsageDict]
    # set when the harness's size before disagreed with the session's calls and was replaced
    tokens_before_source: NotRequired[Literal["computed"]]
    tokens_before_note: NotRequired[str]
    # the same for the size after: the harness's figure was far below the next call's context
    tokens_after_source: NotRequired[Literal["computed"]]
    tokens_after_note: NotRequired[str]


# --- calibration and the context after a compaction ---------------------------------------------


def calibrated_counter(
    messages: Sequence[Message], compactions: Sequence[ObservedCompaction]
) -> tokens.CalibratedCounter:
    """A counter fitted on the calls whose whole context is in the trace.

    After a compaction whose summary was reported beside the trace (not as a message), the
    model saw text we do not have; those calls are left out when at least three calls with
    usage precede it.

    >>> from compaction.engine.messages import Usage
    >>> ms = [Message(0, "user", (TextBlock("x" * 400),)),
    ...       Message(1, "assistant", (TextBlock("ok"),), usage=Usage(input_tokens=110))]
    >>> calibrated_counter(ms, []).report.samples
    1
    """
    starts = [c.seq for c in compactions]
    cut = min((c.seq for c in compactions if c.summary_seq is None), default=None)
    sample = list(messages)
    if cut is not None:
        before = [m for m in messages if m.seq < cut]
        if sum(1 for m in before if m.role == "assistant" and m.usage is not None) >= 3:
            sample = before
    return tokens.calibrate(sample, context_starts=starts)


# A compaction's ``kept`` key naming the user messages (seqs) that its harness keeps before
# the summary (Codex's local compaction).
KEPT_USER_MESSAGES = "user_messages"


def context_after(
    before: Sequence[Message], compaction: ObservedCompaction, summary: Message | None = None
) -> list[Message]:
    """The context after ``compaction`` from the context just before it: what it did not
    replace, with its summary (``compaction.summary``, or ``summary``: the trace's own summary
    message for a harness that writes it into the history) where the replaced stretch was.

    >>> ms = [Message(i, "user", (TextBlock(f"m{i}"),)) for i in range(4)]
    >>> done = ObservedCompaction(seq=4, trigger="auto", summary="S", replaced_from=1,
    ...                           replaced_to=2)
    >>> [m.text for m in context_after(ms, done)]
    ['m0', 'S', 'm3']
    >>> codex = ObservedCompaction(seq=4, trigger="auto", summary="S", kept={"user_messages": [2]})
    >>> [m.text for m in context_after(ms, codex)]
    ['m2', 'S']
    >>> failed = ObservedCompaction(seq=3, trigger="auto", error="prompt too long")
    >>> [m.text for m in context_after(ms[:3], failed)]
    ['m0', 'm1', 'm2']
    """
    start, end = compaction.replaced_from, compaction.replaced_to
    if compaction.error or (
        start is None and not compaction.summary and compaction.summary_seq is None
    ):
        # A compaction that failed, or that wrote no summary and says it replaced nothing,
        # left the context as it was: nothing was dropped, so nothing can have been lost.
        return list(before)
    if compaction.summary:
        summary = Message(seq=compaction.seq, role="user", content=(TextBlock(compaction.summary),))
    head: list[Message] = []
    tail: list[Message] = []
    kept_users = (compaction.kept or {}).get(KEPT_USER_MESSAGES) or ()
    if kept_users:
        wanted = {seq for seq in kept_users if isinstance(seq, int)}
        head = [m for m in before if m.seq in wanted and m.role == "user"]
    for m in before:
        # An end of 0 reads as open-ended, as it always has (a known quirk, kept as is).
        if start is not None and m.seq < start:
            head.append(m)
        elif start is not None and m.seq > (end or m.seq):
            tail.append(m)
    return [*head, *([summary] if summary is not None else []), *tail]


def nearest_points(
    curve: Sequence[tokens.CurvePoint], seq: int
) -> tuple[tokens.CurvePoint | None, tokens.CurvePoint | None]:
    """The last model call before ``seq`` and the first one at or after it.

    >>> curve = [tokens.CurvePoint(s, s * 10, s * 10, 0.0, False) for s in (1, 3, 5)]
    >>> [p.seq if p else None for p in nearest_points(curve, 3)]
    [1, 3]
    """
    before = after = None
    for point in curve:
        if point.seq < seq:
            before = point
        elif after is None:
            after = point
            break
    return before, after


# A harness's size before a compaction more than this far above the last call's context is not
# the context the compaction replaced (DESIGN.md "Money and sizes").
STALE_BEFORE_RATIO = 1.2


def _from_curve(point: tokens.CurvePoint | None) -> CheckedBefore:
    """A size the harness did not give: the call's context, or nothing without a call."""
    if point is None:
        return CheckedBefore(None, False, None, "")
    return CheckedBefore(point.context_tokens, point.estimated, "computed", "")


def checked_before(
    reported: int | None,
    previous_reported: int | None,
    point_before: tokens.CurvePoint | None,
) -> CheckedBefore:
    """The size before a compaction: the harness's figure unless it disagrees with the
    session's own calls (the same figure as the boundary before it, or more than 20 % above
    the last call's context), then the last call's context, with why; the last call's context
    when the harness gave none.

    >>> last = tokens.CurvePoint(9, 68_102, 68_500, 0.34, False)
    >>> checked_before(112_079, 112_079, last).tokens, checked_before(70_000, None, last).tokens
    (68102, 70000)
    """
    if reported is None:
        return _from_curve(point_before)
    if point_before is None or point_before.estimated:
        return CheckedBefore(reported, False, "harness", "")
    measured = point_before.context_tokens
    if reported == previous_reported and reported != measured:
        why = "the same figure as the compaction before it"
    elif reported > measured * STALE_BEFORE_RATIO:
        why = "more than 20 % above the context of the last call before it"
    else:
        return CheckedBefore(reported, False, "harness", "")
    note = (
        f"The harness reported {reported:,} tokens before, {why}; the size shown is that "
        f"call's context, {measured:,} (#{point_before.seq})."
    )
    return CheckedBefore(measured, False, "computed", note)


def checked_after(reported: int | None, point_after: tokens.CurvePoint | None) -> CheckedBefore:
    """The size after a compaction: the harness's figure unless the first call after it saw
    more than 20 % more (the harness counted the kept messages alone, without the system
    prompt and tools every call carries: Claude Code's ``postTokens``, Gemini's "compressed
    to"), then that call's context, with why; the call's context when the harness gave none.
    So the drop reads as the session's own curve does.

    >>> first = tokens.CurvePoint(12, 58_460, 58_900, 0.29, False)
    >>> checked_after(12_994, first).tokens, checked_after(55_000, first).tokens
    (58460, 55000)
    """
    if reported is None:
        return _from_curve(point_after)
    if point_after is None or point_after.estimated:
        return CheckedBefore(reported, False, "harness", "")
    measured = point_after.context_tokens
    if measured <= reported * STALE_BEFORE_RATIO:
        return CheckedBefore(reported, False, "harness", "")
    note = (
        f"The harness reported {reported:,} tokens after, more than 20 % below the context of "
        f"the first call after it (it leaves out what every call carries, such as the system "
        f"prompt and tools); the size shown is that call's context, {measured:,} "
        f"(#{point_after.seq})."
    )
    return CheckedBefore(measured, False, "computed", note)


# --- the failure rules ---------------------------------------------------------------------------


def observed_failure(compaction: ObservedCompaction, splice: evals.SpliceReport | None) -> str:
    """Why an observed compaction failed, or "": a reported error, an empty summary from a
    summarizing step, or a splice that barely shrank the context.

    >>> observed_failure(ObservedCompaction(seq=9, trigger="auto", summary="",
    ...                                     error="timed out"), None)
    'reported error: timed out; empty summary'
    """
    reasons = []
    if compaction.error:
        reasons.append(f"reported error: {compaction.error}")
    if _empty_summary(compaction):
        reasons.append("empty summary")
    if splice is not None and splice.warning:
        reasons.append(splice.warning)
    return "; ".join(reasons)


def _empty_summary(compaction: ObservedCompaction) -> bool:
    summarizing = compaction.strategy in ("", Stage.SUMMARIZE)
    return summarizing and not compaction.summary and compaction.summary_seq is None


def produced_nothing(compaction: ObservedCompaction) -> bool:
    """A compaction that reported an error or, summarizing, wrote no summary: it has no
    retention figure (a "100 %" of an untouched history would be a false green)."""
    return bool(compaction.error) or _empty_summary(compaction)


# --- analysis ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ObservedSpan:
    """One compaction the harness reported, evaluated: sizes, retention, rework, failure."""

    index: int
    compaction: ObservedCompaction
    tokens_before: int | None
    tokens_after: int | None
    tokens_estimated: bool
    retention: evals.RetentionReport
    splice: evals.SpliceReport | None
    rework: tuple[evals.ReworkSignal, ...]
    failure_reason: str
    # Half tool pairs in what the model saw from this compaction up to the next one.
    orphans_after: tuple[Orphan, ...] = ()
    judge_cost: Usage | None = None
    inputs_key: str = ""  # span_inputs_key: what the retention was computed from
    # why the harness's size before was replaced by the session's own (checked_before)
    tokens_before_note: str = ""
    tokens_after_note: str = ""  # and after (checked_after)

    @property
    def seq(self) -> int:
        return self.compaction.seq

    @property
    def stage(self) -> str:
        return self.compaction.strategy or "compaction"

    @property
    def failed(self) -> bool:
        return bool(self.failure_reason)

    @property
    def retention_score(self) -> float | None:
        return self.retention.score if self.retention.items else None

    @property
    def lost_facts(self) -> int:
        return sum(1 for f in self.retention.lost if f.kind in LOST_FACT_KINDS)

    @property
    def verdict(self) -> evals.SpanVerdict:
        report = self.retention
        return evals.span_verdict(
            self.failure_reason,
            [f.kind for f in report.lost],
            [f.text for f in report.lost_needed_again],
        )

    def details(self) -> ObservedDetails:
        out: ObservedDetails = {
            "reported": {
                "tokens_before": self.compaction.tokens_before,
                "tokens_after": self.compaction.tokens_after,
            },
            "splice": self.splice.to_dict() if self.splice else None,
            "duration_ms": self.compaction.duration_ms,
            "orphans_after": [o.to_dict() for o in self.orphans_after],
            "inputs_key": self.inputs_key,
        }
        if self.judge_cost is not None:
            out["judge_cost"] = self.judge_cost.to_dict()
        if self.tokens_before_note:
            out["tokens_before_source"] = "computed"
            out["tokens_before_note"] = self.tokens_before_note
        if self.tokens_after_note:
            out["tokens_after_source"] = "computed"
            out["tokens_after_note"] = self.tokens_after_note
        return out


def _observed_span(
    index: int,
    step: _Step,
    curve: Sequence[tokens.CurvePoint],
    probes: Sequence[evals.Probe],
    rework: Sequence[evals.ReworkSignal],
    facts: _FactsAtRisk,
    judge: evals.Judge | None = None,
    earlier: Mapping[str, EarlierRetention] | None = None,
    harness: str | None = None,
    previous: ObservedCompaction | None = None,
) -> ObservedSpan:
    compaction = step.compaction
    point_before, point_after = nearest_points(curve, compaction.seq)
    before = checked_before(
        compaction.tokens_before, previous.tokens_before if previous else None, point_before
    )
    after = checked_after(compaction.tokens_after, point_after)
    tokens_before, tokens_after = before.tokens, after.tokens
    estimated = before.estimated or after.estimated
    probes_before = [p for p in probes if p.seq is None or p.seq < compaction.seq]
    key = span_inputs_key(step, probes_before, judge, harness)
    reused = (earlier or {}).get(key)
    if reused is not None:
        report, cost = reused.report, reused.judge_cost
    elif produced_nothing(compaction):
        # nothing replaced the history: there is no summary to have kept or lost a fact
        report, cost = evals.RetentionReport(()), None
    else:
        spent = judge_cost(judge)
        report = evals.retention(
            step.before,
            step.after,
            probes=probes_before,
            facts=facts.of(step.before),
            judge=judge,
            harness=harness,
        )
        cost = judge_cost(judge) - spent if judge is not None else None
    report = evals.with_needed_again(
        report, step.before, [m for m in step.seen if m.seq > compaction.seq]
    )
    splice = None
    # whether the splice replaced the old messages is the harness's account when it gave one
    # (its size after counts what the splice kept; the next call adds the new input to it)
    spliced = compaction.tokens_after if compaction.tokens_after is not None else tokens_after
    if tokens_before is not None and spliced is not None:
        splice = evals.splice_effectiveness(tokens_before, spliced)
    return ObservedSpan(
        index=index,
        compaction=compaction,
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        tokens_estimated=estimated,
        retention=report,
        splice=splice,
        rework=tuple(r for r in rework if r.compaction_seq == compaction.seq),
        failure_reason=observed_failure(compaction, splice),
        orphans_after=tuple(check_pairs(step.seen)),
        judge_cost=cost,
        inputs_key=key,
        tokens_before_note=before.note,
        tokens_after_note=after.note,
    )


def sparkline(curve: Sequence[tokens.CurvePointDict], buckets: int = SPARK_BUCKETS) -> list[float]:
    """The highest fill of each of ``buckets`` slices of a stored curve, for a list-row chart.

    >>> points = [tokens.CurvePoint(i, 0, 0, f, False).to_dict() for i, f in enumerate(
    ...     (0.1, 0.5, 0.2, 0.9))]
    >>> sparkline(points, buckets=2)
    [0.5, 0.9]
    """
    if not curve:
        return []
    size = max(1, len(curve) / buckets) if len(curve) > buckets else 1
    out = []
    for b in range(min(buckets, len(curve))):
        chunk = curve[int(b * size) : int((b + 1) * size)] or [curve[-1]]
        out.append(round(max(float(p["fill"]) for p in chunk), 4))
    return out


@dataclass(frozen=True)
class Analysis:
    """What :func:`analyse` finds in one session."""

    message_count: int
    curve: tuple[tokens.CurvePoint, ...]
    orphans: tuple[Orphan, ...]
    calibration: tokens.CalibrationReport | None
    spans: tuple[ObservedSpan, ...]

    @property
    def peak(self) -> tokens.CurvePoint | None:
        return max(self.curve, key=lambda p: p.context_tokens, default=None)

    @property
    def estimated_calls(self) -> int:
        return sum(p.estimated for p in self.curve)

    @property
    def failed_splices(self) -> int:
        return sum(s.failed for s in self.spans)

    @property
    def lost_facts(self) -> int:
        """Rules (probes, the task, constraints) the observed compactions lost."""
        return sum(s.lost_facts for s in self.spans)

    @property
    def lost_files_only(self) -> int:
        """Compactions whose verdict is amber: they lost files or identifiers, no rule, and
        their splice did not fail."""
        return sum(s.verdict.status == "warn" for s in self.spans)

    def curve_dicts(self) -> list[tokens.CurvePointDict]:
        return [p.to_dict() for p in self.curve]

    def sparkline(self) -> list[float]:
        return sparkline(self.curve_dicts())


@dataclass(frozen=True)
class _Step:
    """One observed compaction in its chained contexts."""

    compaction: ObservedCompaction
    before: list[Message]  # what the model saw just before it
    after: list[Message]  # the context it left
    seen: list[Message]  # what the model saw from it up to the next one (or the end)


def _chained_contexts(
    messages: Sequence[Message], compactions: Sequence[ObservedCompaction]
) -> list[_Step]:
    """For each compaction in order: the context just before it (what the one before kept,
    then the messages since), the context after it, and the context as it grew until the
    next compaction. The contexts stay as large as a real context window, so the work is
    linear in the session.
    """
    by_seq = (
        {m.seq: m for m in messages} if any(c.summary_seq is not None for c in compactions) else {}
    )
    shown: set[int] = set()  # seqs of the trace's own summary messages already placed
    position = 0

    def grow(context: list[Message], until: int | None) -> list[Message]:
        nonlocal position
        while position < len(messages) and (until is None or messages[position].seq < until):
            if messages[position].seq not in shown:
                context.append(messages[position])
            position += 1
        return context

    steps: list[_Step] = []
    context: list[Message] = []
    for compaction in compactions:
        before = grow(context, compaction.seq)
        if steps:
            steps[-1] = replace(steps[-1], seen=list(before))
        summary = by_seq.get(compaction.summary_seq) if compaction.summary_seq is not None else None
        after = context_after(before, compaction, summary)
        if summary is not None:
            shown.add(summary.seq)
        steps.append(_Step(compaction, before, after, seen=[]))
        context = list(after)
    if steps:
        steps[-1] = replace(steps[-1], seen=grow(context, None))
    return steps


class _FactsAtRisk:
    """The facts at risk in a context: stated in it (a raw message or an earlier summary),
    and the session's task always. A fact an earlier compaction already lost is that
    compaction's loss, not a later one's. Each message's facts are extracted once."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.cache = evals.FactCache()
        self.task = next((f for m in messages if (f := self.cache.of(m).task) is not None), None)

    def of(self, context: Sequence[Message]) -> list[evals.Fact]:
        facts = evals.extract_facts(context, cache=self.cache)
        task = self.task
        if task is not None and not any(f.kind == "task" or f.text == task.text for f in facts):
            facts.insert(0, task)  # said before this context began, and still the goal
        return facts


@dataclass(frozen=True)
class EarlierRetention:
    """A span's retention from an earlier pass, reused when its inputs are unchanged."""

    report: evals.RetentionReport
    judge_cost: Usage | None = None


# Part of every span's inputs key: bump it when the retention rules change, so that results
# computed under the old rules are not reused.
RETENTION_RULES_VERSION = "2026-12-06c"


def span_inputs_key(
    step: _Step,
    probes: Sequence[evals.Probe],
    judge: evals.Judge | None,
    harness: str | None = None,
) -> str:
    """A digest of everything a span's verdicts depend on: the compaction, the contexts
    before and after it, the probes, the judge, the harness and the rules' version (whether
    a lost fact was needed again is looked for on every pass)."""
    digest = hashlib.blake2b(digest_size=16)

    def feed(*parts: object) -> None:
        digest.update(repr(parts).encode("utf-8", "surrogatepass"))

    feed(RETENTION_RULES_VERSION, type(judge).__name__ if judge is not None else None, harness)
    feed(step.compaction)
    for probe in probes:
        feed(probe.text, probe.seq)
    for side in (step.before, step.after):
        feed(len(side))
        for m in side:
            feed(m.seq, m.role, m.text)
    return digest.hexdigest()


def analyse(
    messages: Sequence[Message],
    compactions: Sequence[ObservedCompaction],
    *,
    probes: Sequence[evals.Probe] = (),
    context_window: int = DEFAULT_WINDOW,
    judge: evals.Judge | None = None,
    earlier: Mapping[str, EarlierRetention] | None = None,
    harness: str | None = None,
) -> Analysis:
    """Analyse a session: calibrate on its usage, draw its curve, check its tool pairs, and
    evaluate every compaction its harness reported (in ``seq`` order).

    ``earlier`` holds the retention of spans from an earlier pass by their inputs key
    (:func:`span_inputs_key`): a span whose compaction, contexts, probes and judge are
    unchanged (the usual case when a batch only adds messages after it) takes its result
    instead of being checked again, and its judge is not asked again. ``harness`` (the
    session's ``agent``) names the files its harness reloads by itself.

    >>> from compaction.engine.messages import Usage
    >>> ms = [Message(0, "user", (TextBlock("Do not touch auth."),)),
    ...       Message(1, "assistant", (TextBlock("ok"),), usage=Usage(input_tokens=9000)),
    ...       Message(2, "user", (TextBlock("go on"),)),
    ...       Message(3, "assistant", (TextBlock("ok"),), usage=Usage(input_tokens=800))]
    >>> done = ObservedCompaction(seq=3, trigger="auto", summary="Goal: go on",
    ...                           replaced_from=0, replaced_to=1)
    >>> result = analyse(ms, [done], context_window=10_000)
    >>> result.peak.fill, result.spans[0].failed, result.lost_facts
    (0.9, False, 1)
    """
    starts = [c.seq for c in compactions]
    counter = calibrated_counter(messages, compactions)
    curve = tokens.observed_curve(messages, counter, context_window, context_starts=starts)
    rework = evals.rework_signals(messages, starts)
    facts = _FactsAtRisk(messages)
    steps = _chained_contexts(messages, compactions)
    # A probe a compaction lost is gone from the contexts after it: it is that compaction's
    # loss alone, never checked (and counted lost) again at every later one.
    live = list(probes)
    spans: list[ObservedSpan] = []
    for i, step in enumerate(steps):
        span = _observed_span(
            i,
            step,
            curve,
            live,
            rework,
            facts,
            judge,
            earlier,
            harness,
            previous=steps[i - 1].compaction if i else None,
        )
        spans.append(span)
        gone = {(f.text, f.seq) for f in span.retention.lost if f.kind == "probe"}
        if gone:
            live = [p for p in live if (p.text, p.seq) not in gone]
    return Analysis(
        message_count=len(messages),
        curve=tuple(curve),
        orphans=evals.pair_validity(messages).orphans,
        calibration=counter.report,
        spans=tuple(spans),
    )


def judge_cost(judge: evals.Judge | None) -> Usage:
    """What a judge has spent so far (an offline judge, or none, spends nothing).

    >>> judge_cost(None)
    Usage(input_tokens=0, output_tokens=0, cache_read_input_tokens=0, \
cache_creation_input_tokens=0, iterations=(), cache_creation_1h_input_tokens=0)
    """
    spent = getattr(judge, "cost", None)
    return spent if isinstance(spent, Usage) else Usage()
