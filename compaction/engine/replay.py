"""Replay a raw trace under a policy: the context a harness with that policy would have sent.

The walk is incremental: each message is counted once (counts are cached per message object),
the running context size is kept as a sum, and the strategies run only when the policy's
limits are crossed. Everything returned has ``to_dict()`` with JSON-ready values.

(About 610 lines, over the usual 600: the walk, its totals and the verdict on them are one
unit that every replay page and experiment reads; a quarter of it is docstring examples.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, TypedDict

from compaction.engine.evals import (
    FactCache,
    Judge,
    PairReport,
    Probe,
    RetentionReport,
    SpliceReport,
    pair_validity,
    retention,
    splice_effectiveness,
)
from compaction.engine.messages import (
    CompactionBlock,
    Message,
    Usage,
    UsageDict,
    is_call,
    usage_from_wire,
)
from compaction.engine.names import Stage
from compaction.engine.strategies import (
    Policy,
    StrategyResult,
    clear_tool_results,
    compact,
    seq_ranges,
)
from compaction.engine.summarizer_choice import summarizer_from_name
from compaction.engine.summarizers import Summarizer
from compaction.engine.tokens import (
    MESSAGE_OVERHEAD,
    Attribution,
    CharCounter,
    CurvePoint,
    TokenCounter,
)

Progress = Callable[[int, int], None]


class CachedCounter:
    """Counts each message object once; the strategies reuse unchanged message objects.

    The cache keeps a reference to the message so its ``id`` cannot be reused by another one.
    """

    def __init__(self, inner: TokenCounter) -> None:
        self.inner = inner
        self.name = inner.name
        self.exact = inner.exact
        self._cache: dict[int, tuple[Message, int]] = {}

    def count_message(self, message: Message) -> int:
        hit = self._cache.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        n = self.inner.count_message(message)
        self._cache[id(message)] = (message, n)
        return n

    def count(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages)

    def seed(self, message: Message, tokens: int) -> None:
        """Use a measured count for this message object (see ``attribute_usage``)."""
        self._cache[id(message)] = (message, tokens)


@dataclass(frozen=True)
class Span:
    """One compaction step of the replay, placed before the model call at ``seq``."""

    seq: int
    call_index: int
    stage: str
    trigger: str
    result: StrategyResult
    splice: SpliceReport
    pairs: PairReport
    retention: RetentionReport | None

    @property
    def failure(self) -> str:
        """Why this step failed, or "". Clearing tool results is a small step by design, so the
        "barely changed" rule applies only to splices that replace messages."""
        reasons = []
        if self.stage != Stage.CLEAR_TOOL_RESULTS and self.splice.warning:
            reasons.append(self.splice.warning)
        if not self.pairs.ok:
            reasons.append("splice left orphan tool pairs")
        return "; ".join(reasons)

    def to_dict(self) -> dict[str, Any]:
        r = self.result
        return {
            "seq": self.seq,
            "call_index": self.call_index,
            "stage": self.stage,
            "trigger": self.trigger,
            "tokens_before": r.tokens_before,
            "tokens_after": r.tokens_after,
            "summary": r.summary.to_dict() if r.summary is not None else None,
            "summary_text": r.summary_text,
            "kept_head": list(r.kept_head) if r.kept_head else None,
            "kept_tail": list(r.kept_tail) if r.kept_tail else None,
            "removed": seq_ranges(r.removed),
            "changed": seq_ranges(r.changed),
            "cleared": r.cleared,
            "rounds": r.rounds,
            "notes": list(r.notes),
            "cost": r.cost.to_dict() if r.cost is not None else None,
            "splice": self.splice.to_dict(),
            "pairs": self.pairs.to_dict(),
            "retention": self.retention.to_dict() if self.retention is not None else None,
        }


VerdictStatus = Literal["healthy", "over_hard_limit", "failed_splices", "overflow", "orphan_pairs"]


class VerdictDict(TypedDict):
    """The stored shape of :meth:`Verdict.to_dict` (inside the replay's totals)."""

    status: str
    healthy: bool
    reasons: list[str]


class TotalsDict(TypedDict):
    """``Totals.to_dict()``: stored in ``ReplayRun.totals``."""

    calls: int
    input_tokens: int
    output_tokens: int
    billed_tokens: int
    uncompacted_input_tokens: int
    compactions: int
    clears: int
    summarizer_cost: UsageDict
    peak_context: int
    max_fill: float
    context_window: int
    overflow_calls: int
    first_overflow_seq: int | None
    over_hard_limit_calls: int
    orphan_pairs: int
    failed_splices: int
    verdict: VerdictDict


@dataclass(frozen=True)
class Verdict:
    """Whether a replayed policy held: ``overflow`` and ``orphan_pairs`` are failures (the API
    would have refused those calls), ``failed_splices`` too (a splice that barely shrank the
    context), ``over_hard_limit`` a warning, else ``healthy``.

    >>> Verdict.of(Totals.empty(overflow_calls=3, peak_context=257_000)).status
    'overflow'
    """

    status: VerdictStatus
    reasons: tuple[str, ...] = ()

    @property
    def healthy(self) -> bool:
        return self.status == "healthy"

    @classmethod
    def of(cls, totals: Totals) -> Verdict:
        reasons: list[str] = []
        if totals.overflow_calls:
            where = (
                f", the first before seq {totals.first_overflow_seq}"
                if totals.first_overflow_seq is not None
                else ""
            )
            reasons.append(
                f"{_calls(totals.overflow_calls)} over the {totals.context_window:,}-token window"
                f"{where} (peak {totals.peak_context:,} tokens, {totals.max_fill:.0%} full): the "
                "API would have refused them"
            )
        if totals.orphan_pairs:
            reasons.append(
                f"{totals.orphan_pairs} tool_use/tool_result half-pair"
                f"{'s' if totals.orphan_pairs != 1 else ''} left by a splice"
            )
        if totals.failed_splices:
            reasons.append(
                f"{totals.failed_splices} splice{'s' if totals.failed_splices != 1 else ''} "
                "failed (barely shrank the context or broke a tool pair)"
            )
        if totals.over_hard_limit_calls and not totals.overflow_calls:
            reasons.append(
                f"{_calls(totals.over_hard_limit_calls)} above the hard limit: the policy "
                "could not cut enough"
            )
        status: VerdictStatus
        if totals.overflow_calls:
            status = "overflow"
        elif totals.orphan_pairs:
            status = "orphan_pairs"
        elif totals.failed_splices:
            status = "failed_splices"
        elif totals.over_hard_limit_calls:
            status = "over_hard_limit"
        else:
            status = "healthy"
        return cls(status, tuple(reasons))

    def to_dict(self) -> VerdictDict:
        return {"status": self.status, "healthy": self.healthy, "reasons": list(self.reasons)}


def overflows(context_tokens: int, context_window: int) -> bool:
    """A call whose context exceeds the model's window: the API refuses it.

    >>> overflows(200_001, 200_000), overflows(200_000, 200_000)
    (True, False)
    """
    return context_tokens > context_window


def overflow_calls(context_tokens: Iterable[int], context_window: int) -> int:
    """How many calls of a curve overflowed the window (observed or replayed alike).

    >>> overflow_calls([150_000, 257_000, 201_000], 200_000)
    2
    """
    return sum(1 for n in context_tokens if overflows(n, context_window))


SOFT_OF_PEAK = 0.6
HARD_OF_PEAK = 0.8


def limits_below_peak(peak_tokens: int, context_window: int) -> tuple[int, int]:
    """Soft and hard limits that make a replay compact on a session that peaked at
    ``peak_tokens``: about 60 % and 80 % of that peak, rounded (to 1,000 tokens above
    10,000, else to 100), never above the window and never below 1.

    >>> limits_below_peak(143_210, 200_000)
    (86000, 115000)
    >>> limits_below_peak(250_000, 200_000)
    (150000, 200000)
    >>> limits_below_peak(1_200, 200_000)
    (700, 1000)
    """

    def rounded(n: float) -> int:
        step = 1000 if n > 10_000 else 100
        return max(1, round(n / step) * step)

    cap = context_window if context_window > 0 else peak_tokens
    soft = min(rounded(peak_tokens * SOFT_OF_PEAK), cap)
    hard = min(rounded(peak_tokens * HARD_OF_PEAK), cap)
    return min(soft, hard), hard


def _calls(n: int) -> str:
    return f"{n:,} call{'s' if n != 1 else ''}"


@dataclass(frozen=True)
class Totals:
    """Run-level numbers: input over the run, what the summarizer cost, peaks and overflow.

    ``overflow_calls`` are calls whose context exceeded ``context_window`` (the API refuses
    them), ``over_hard_limit_calls`` those the policy let past its own hard limit.
    """

    calls: int
    input_tokens: int
    output_tokens: int
    billed_tokens: int
    uncompacted_input_tokens: int
    compactions: int
    clears: int
    summarizer_cost: Usage
    peak_context: int
    max_fill: float
    overflow_calls: int
    orphan_pairs: int
    context_window: int = 200_000
    first_overflow_seq: int | None = None
    over_hard_limit_calls: int = 0
    failed_splices: int = 0

    @classmethod
    def empty(cls, **values: Any) -> Totals:
        """All zeros but ``values``; for examples and tests."""
        base: dict[str, Any] = {
            "calls": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "billed_tokens": 0,
            "uncompacted_input_tokens": 0,
            "compactions": 0,
            "clears": 0,
            "summarizer_cost": Usage(),
            "peak_context": 0,
            "max_fill": 0.0,
            "overflow_calls": 0,
            "orphan_pairs": 0,
        }
        base.update(values)
        return cls(**base)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, context_window: int = 200_000) -> Totals:
        """Read stored totals back; fields older runs did not store take their defaults.

        >>> t = Totals.empty(overflow_calls=2, peak_context=9, context_window=5)
        >>> Totals.from_dict(t.to_dict()) == t
        True
        """
        known = {f.name for f in fields(cls)} - {"summarizer_cost"}
        values: dict[str, Any] = {k: data[k] for k in known if data.get(k) is not None}
        values.setdefault("context_window", context_window)
        cost = data.get("summarizer_cost")
        values["summarizer_cost"] = usage_from_wire(cost) if isinstance(cost, Mapping) else Usage()
        return cls.empty(**values)

    @property
    def verdict(self) -> Verdict:
        return Verdict.of(self)

    def to_dict(self) -> TotalsDict:
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "billed_tokens": self.billed_tokens,
            "uncompacted_input_tokens": self.uncompacted_input_tokens,
            "compactions": self.compactions,
            "clears": self.clears,
            "summarizer_cost": self.summarizer_cost.to_dict(),
            "peak_context": self.peak_context,
            "max_fill": round(self.max_fill, 6),
            "context_window": self.context_window,
            "overflow_calls": self.overflow_calls,
            "first_overflow_seq": self.first_overflow_seq,
            "over_hard_limit_calls": self.over_hard_limit_calls,
            "orphan_pairs": self.orphan_pairs,
            "failed_splices": self.failed_splices,
            "verdict": self.verdict.to_dict(),
        }


@dataclass(frozen=True)
class ReplayResult:
    """The simulated curve (one point per model call), the spans, the totals."""

    policy: Policy
    counter: str
    summarizer: str
    base_tokens: int
    curve: tuple[CurvePoint, ...]
    spans: tuple[Span, ...]
    totals: Totals
    final_context: tuple[Message, ...] = field(repr=False, default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy.to_dict(),
            "counter": self.counter,
            "summarizer": self.summarizer,
            "base_tokens": self.base_tokens,
            "curve": [p.to_dict() for p in self.curve],
            "spans": [s.to_dict() for s in self.spans],
            "totals": self.totals.to_dict(),
        }


# Summarizers that copy from the history instead of writing: their retention is high by
# construction (every rule sentence and path is carried over verbatim).
EXTRACTIVE_SUMMARIZERS = frozenset({"extractive"})


@dataclass(frozen=True)
class Comparability:
    """Whether replayed summaries can be compared with the observed ones, and the sentence
    that says so on the replay page.

    >>> summaries_comparable("extractive", observed_summaries=1).comparable
    False
    """

    comparable: bool
    note: str

    def to_dict(self) -> dict[str, Any]:
        return {"comparable": self.comparable, "note": self.note}


def summaries_comparable(summarizer: str, *, observed_summaries: int) -> Comparability:
    """The rule for comparing a replay's summaries with what the harness wrote.

    Observed summaries come from the agent's model. The offline extractive summarizer copies
    rules and file paths verbatim, so its retention is not a measure of a summary a model
    would write: retention is comparable only between two model-written summaries.

    >>> summaries_comparable("anthropic", observed_summaries=2).comparable
    True
    >>> summaries_comparable("anthropic", observed_summaries=0).note
    'The session has no observed summary to compare the replayed ones with.'
    """
    if observed_summaries == 0:
        return Comparability(
            False, "The session has no observed summary to compare the replayed ones with."
        )
    if summarizer in EXTRACTIVE_SUMMARIZERS:
        return Comparability(
            False,
            "Retention is not comparable: the observed summaries were written by a model, the "
            f"replayed ones by the offline {summarizer} summarizer, which copies rules and "
            "file paths verbatim, so it keeps them by construction. A higher score here does "
            "not mean a better summary; replay with a model summarizer to compare like with "
            "like.",
        )
    return Comparability(
        True, "Both sides were summarized by a model, so their retention can be compared."
    )


def _without_compaction_blocks(m: Message) -> Message | None:
    """The original harness's server compaction blocks are not part of a replay's context."""
    if not any(isinstance(b, CompactionBlock) for b in m.content):
        return m
    content = tuple(b for b in m.content if not isinstance(b, CompactionBlock))
    return replace(m, content=content) if content else None


def replay(
    messages: Sequence[Message],
    policy: Policy,
    *,
    counter: TokenCounter | None = None,
    summarizer: Summarizer | None = None,
    progress: Progress | None = None,
    base_tokens: int | None = None,
    skip_seqs: Iterable[int] = (),
    probes: Iterable[Probe] = (),
    evaluate: bool = True,
    measured: Attribution | None = None,
    judge: Judge | None = None,
) -> ReplayResult:
    """Walk the trace, compacting before each model call when ``policy`` says so.

    * ``counter``: how to measure (default: 4 chars per token); its ``base_tokens``, if it has
      one (a :class:`~compaction.engine.tokens.CalibratedCounter`), is added to every call
      unless ``base_tokens`` is given.
    * ``summarizer``: default from ``policy.summarizer`` (the offline extractive one).
    * ``skip_seqs``: raw messages the original harness added when it compacted (its summary),
      which a replay under another policy must not see.
    * ``progress(done, total)`` is called about every 1% of the calls and at the end.
    * ``measured``: per-message tokens taken from the trace's usage
      (:func:`~compaction.engine.tokens.attribute_usage`); unchanged messages count as measured,
      so until the policy changes something the replayed curve is the reported one.

    Deterministic for the offline summarizer. Curve points are estimates by nature.

    >>> from compaction.engine.messages import TextBlock
    >>> ms = [Message(0, "user", (TextBlock("hi"),)), Message(1, "assistant", (TextBlock("yo"),))]
    >>> replay(ms, Policy()).totals.calls
    1
    """
    inner = counter if counter is not None else CharCounter()
    cached = CachedCounter(inner)
    if base_tokens is not None:
        base = base_tokens
    elif measured is not None:
        base = measured.base_tokens
    else:
        base = int(getattr(inner, "base_tokens", 0))
    if summarizer is None:
        summarizer = summarizer_from_name(policy.summarizer)
    skip = set(skip_seqs)
    probe_list = list(probes)
    fact_cache = FactCache()  # each message's facts are extracted once per replay
    source = [m for m in messages if m.seq not in skip]
    total_calls = sum(1 for m in source if is_call(m))
    every = max(1, total_calls // 100)

    context: list[Message] = []
    size = base
    raw_size = base
    last_clear_size: int | None = None
    cleared_upto = 0
    curve: list[CurvePoint] = []
    spans: list[Span] = []
    summarizer_cost = Usage()
    calls = input_total = output_total = billed_total = raw_input = 0
    peak = overflow = over_hard = orphans_total = compactions = clears = 0
    first_overflow: int | None = None
    window = max(1, policy.context_window)

    for raw in source:
        m = _without_compaction_blocks(raw)
        if m is None:
            continue
        if measured is not None and m is raw and m.seq in measured.counts:
            cached.seed(m, measured.counts[m.seq])
        if is_call(m):
            results: list[StrategyResult] = []
            trigger = ""
            if size > policy.hard_limit:
                trigger = "hard_limit"
                results = compact(
                    context,
                    policy,
                    summarizer=summarizer,
                    counter=cached,
                    base_tokens=base,
                    tokens=size,
                )
            elif (
                size > policy.soft_limit
                and "clear_tool_results" in policy.stages
                and (last_clear_size is None or size - last_clear_size >= policy.clear_step)
            ):
                trigger = "soft_limit"
                r = clear_tool_results(
                    context,
                    policy,
                    counter=cached,
                    base_tokens=base,
                    limit=policy.soft_limit,
                    tokens=size,
                    scan_from=cleared_upto,
                )
                # an attempt that freed little is not retried until clear_step more tokens came
                last_clear_size = r.tokens_after
                results = [r] if r.applied else []
            call_cost = Usage()
            for r in results:
                before_ctx = context
                context = list(r.messages)
                size = r.tokens_after
                # clearing keeps every block, so only a splice can break a tool pair
                splice = r.stage != "clear_tool_results"
                pairs = pair_validity(context) if evaluate and splice else PairReport(())
                kept = (
                    retention(before_ctx, context, probes=probe_list, cache=fact_cache, judge=judge)
                    if evaluate and splice
                    else None
                )
                orphans_total += len(pairs.orphans)
                if r.cost is not None:
                    call_cost = call_cost + r.cost
                if r.stage == "clear_tool_results":
                    clears += 1
                    last_clear_size = size
                    # clearing goes oldest first: everything up to the last change is done
                    while cleared_upto < len(context) and (
                        context[cleared_upto].seq <= r.changed[-1]
                    ):
                        cleared_upto += 1
                else:
                    compactions += 1
                    last_clear_size = None
                    cleared_upto = 0
                spans.append(
                    Span(
                        seq=m.seq,
                        call_index=calls,
                        stage=r.stage,
                        trigger=trigger,
                        result=r,
                        splice=splice_effectiveness(r.tokens_before, r.tokens_after),
                        pairs=pairs,
                        retention=kept,
                    )
                )
            summarizer_cost = summarizer_cost + call_cost
            out_tokens = (
                m.usage.output_tokens
                if m.usage is not None
                else max(0, cached.count_message(m) - MESSAGE_OVERHEAD)
            )
            cost_tokens = (
                call_cost.input_tokens
                + call_cost.output_tokens
                + call_cost.cache_read_input_tokens
                + call_cost.cache_creation_input_tokens
            )
            billed = size + out_tokens + cost_tokens
            curve.append(CurvePoint(m.seq, size, billed, size / window, True))
            calls += 1
            input_total += size
            output_total += out_tokens
            billed_total += billed
            raw_input += raw_size
            peak = max(peak, size)
            if overflows(size, policy.context_window):
                overflow += 1
                if first_overflow is None:
                    first_overflow = m.seq
            if size > policy.hard_limit:
                over_hard += 1
            if progress is not None and calls % every == 0:
                progress(calls, total_calls)
        n = cached.count_message(m)
        context.append(m)
        size += n
        raw_size += n

    if progress is not None and (calls == 0 or calls % every != 0):
        progress(calls, total_calls)
    totals = Totals(
        calls=calls,
        input_tokens=input_total,
        output_tokens=output_total,
        billed_tokens=billed_total,
        uncompacted_input_tokens=raw_input,
        compactions=compactions,
        clears=clears,
        summarizer_cost=summarizer_cost,
        peak_context=peak,
        max_fill=peak / window,
        overflow_calls=overflow,
        orphan_pairs=orphans_total,
        context_window=policy.context_window,
        first_overflow_seq=first_overflow,
        over_hard_limit_calls=over_hard,
        failed_splices=sum(1 for s in spans if s.failure),
    )
    return ReplayResult(
        policy=policy,
        counter=inner.name,
        summarizer=summarizer.name,
        base_tokens=base,
        curve=tuple(curve),
        spans=tuple(spans),
        totals=totals,
        final_context=tuple(context),
    )
