"""Alert rules over one session's analysis: what an on-call engineer must hear about.

Pure: plain dataclasses in, :class:`AlertFinding` out. The app builds :class:`SessionInputs`
from its stored analysis and spans, calls :func:`evaluate` once, and stores the findings; a
replay can call the same function to show what the rules would have said.

Rules and their default thresholds (:class:`Thresholds`):

- ``repeated_compaction``: N or more compactions in the session (3);
- ``compaction_storm``: K or more compactions within W minutes of trace time, by the
  timestamps of the messages at their seqs (6 within 60); skipped when those are missing;
- ``compaction_loop``: a compaction that leaves the context at or above the threshold that
  triggered it (the lowest context at which the session compacted): the first call after the
  boundary (and the size the compaction reported, if any) is already due to compact again,
  because what no compaction removes (system prompt, tools, pinned head: the fixed overhead)
  sits above the threshold;
- ``compaction_thrash``: K compactions within W model calls (2 within 20);
- ``failed_splice``: the span verdict (reported error, empty summary, barely shrank);
- ``near_overflow``: a call at or above X of the window but not over it (95 %);
- ``overflow``: a call over the window, or a context-length error in the trace;
- ``lost_constraint``: a probe or an extracted rule that a compaction lost;
- ``orphan_pairs``: the context after a compaction holds half a tool pair;
- ``personal_data``: a summary holds personal data. The detector is not here: pass any
  callable as ``personal_data=`` (the privacy detectors plug in there) and each hit in a
  compaction summary becomes evidence, masked. Never a secret: that is the next rule's.
- ``secret``: a secret (a password, an API key, a token, a private key) in any message or
  summary. The app passes the messages' hits in ``SessionInputs.secrets`` and a detector for
  summaries as ``secrets=``.

The four rules about how often a session compacts (storm, loop, thrash, repeated) tell one
story: when several fire on the same compactions only the first of ``COMPACTION_PRECEDENCE``
is kept, and the others are named in its evidence (``also``), so a session gets one alert per
group of compactions. Each of them says what the session's compaction calls cost so far
(``SessionInputs.compaction_calls_usd``, priced by the app).

Light steps (``microcompact``, ``clear_tool_results``) clear old tool output by design; they
do not count as compactions for the repeated and thrash rules, and shrinking little is not a
failure for them.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, NotRequired, TypedDict

from compaction.engine.alert_money import CompactionsPrice, cost_line
from compaction.engine.evals import BARELY_CHANGED_WARNING
from compaction.engine.messages import Message, Orphan

Severity = Literal["info", "warning", "critical"]

RULES: tuple[str, ...] = (
    "compaction_storm",
    "compaction_loop",
    "repeated_compaction",
    "compaction_thrash",
    "failed_splice",
    "near_overflow",
    "overflow",
    "lost_constraint",
    "orphan_pairs",
    "personal_data",
    "secret",
)
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "critical")
LIGHT_STAGES = frozenset({"microcompact", "clear_tool_results"})
LOST_KINDS = frozenset({"probe", "constraint", "task"})
# One alert per group of compactions: the first of these that fires wins.
COMPACTION_PRECEDENCE: tuple[str, ...] = (
    "compaction_storm",
    "compaction_loop",
    "compaction_thrash",
    "repeated_compaction",
)


class AlertEvidence(TypedDict):
    """What an alert points at, stored as JSON beside it.

    ``calls``: seqs of the model calls involved; ``spans``: seqs of the compactions involved;
    ``numbers``: the figures the rule compared; ``items``: one line per concrete thing (a lost
    rule, an orphan id, a reason); ``seq``: where to open the session chart.
    ``thresholds``: the rule's thresholds in force when it fired (:func:`rule_thresholds`);
    ``thresholds_source``: where the app took them from (``project`` or ``default``). Both
    absent on alerts stored before they were recorded. ``also``: the other compaction rules
    that fired on the same compactions and were folded into this alert (COMPACTION_PRECEDENCE).
    """

    seq: int | None
    calls: list[int]
    spans: list[int]
    numbers: dict[str, float]
    items: list[str]
    thresholds: NotRequired[dict[str, float]]
    thresholds_source: NotRequired[str]
    also: NotRequired[list[str]]


@dataclass(frozen=True)
class Call:
    """One model call: the context it saw, ``estimated`` when the trace gave no usage."""

    seq: int
    context_tokens: int
    estimated: bool = False


@dataclass(frozen=True)
class LostFact:
    kind: str
    text: str
    seq: int | None = None
    needed_again_seq: int | None = None  # where the session needed it again, if it did


@dataclass(frozen=True)
class Compaction:
    """One observed (or replayed) compaction, with what the span evals found."""

    seq: int
    stage: str = "summarize"
    trigger: str = ""
    tokens_before: int | None = None
    tokens_after: int | None = None
    failed: bool = False
    failure_reason: str = ""
    lost: tuple[LostFact, ...] = ()
    orphans_after: tuple[Orphan, ...] = ()
    summary: str = ""
    at: datetime | None = None  # the trace time of the message at ``seq``, when it has one
    # the harness's own size after when it gave one (the shown one may be the next call's)
    reported_after: int | None = None

    @property
    def light(self) -> bool:
        return self.stage in LIGHT_STAGES


@dataclass(frozen=True)
class ContextLengthError:
    """A message in the trace that reports the API refused a too-long prompt."""

    seq: int
    text: str


@dataclass(frozen=True)
class SecretHit:
    """A secret found in the session's messages (or metadata), already masked: its published
    prefix, length and keyed fingerprint, never a character of the value."""

    seq: int | None
    where: str
    masked: str


@dataclass(frozen=True)
class SessionInputs:
    context_window: int
    calls: tuple[Call, ...] = ()
    compactions: tuple[Compaction, ...] = ()
    context_length_errors: tuple[ContextLengthError, ...] = ()
    secrets: tuple[SecretHit, ...] = ()
    # What the session's compaction calls cost so far (None: not priced), and the session.
    compaction_calls_usd: float | None = None
    session_usd: float | None = None
    compactions_price: CompactionsPrice | None = None


@dataclass(frozen=True)
class Thresholds:
    storm_compactions: int = 6
    storm_window_minutes: int = 60
    repeated_compaction_count: int = 3
    thrash_compactions: int = 2
    thrash_window_calls: int = 20
    near_overflow_fill: float = 0.95
    disabled: frozenset[str] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.storm_compactions < 2:
            raise ValueError("storm_compactions: must be at least 2")
        if self.storm_window_minutes < 1:
            raise ValueError("storm_window_minutes: must be at least 1")
        if self.repeated_compaction_count < 1:
            raise ValueError("repeated_compaction_count: must be at least 1")
        if self.thrash_compactions < 2:
            raise ValueError("thrash_compactions: must be at least 2")
        if self.thrash_window_calls < 1:
            raise ValueError("thrash_window_calls: must be at least 1")
        if not 0 < self.near_overflow_fill <= 1:
            raise ValueError("near_overflow_fill: must be above 0 and at most 1")
        unknown = sorted(set(self.disabled) - set(RULES))
        if unknown:
            raise ValueError(f"disabled: unknown rule {unknown[0]!r}")


@dataclass(frozen=True)
class AlertFinding:
    rule: str
    severity: Severity
    title: str
    evidence: AlertEvidence


@dataclass(frozen=True)
class PersonalDataHit:
    """One personal identifier a detector found, already masked (never the raw value)."""

    kind: str
    masked: str


PersonalDataDetector = Callable[[str], Iterable[PersonalDataHit]]


def _evidence(
    *,
    calls: Sequence[int] = (),
    spans: Sequence[int] = (),
    numbers: dict[str, float] | None = None,
    items: Sequence[str] = (),
    seq: int | None = None,
) -> AlertEvidence:
    first = seq
    if first is None:
        first = calls[0] if calls else (spans[0] if spans else None)
    return {
        "seq": first,
        "calls": list(calls),
        "spans": list(spans),
        "numbers": dict(numbers or {}),
        "items": list(items),
    }


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _counted(inputs: SessionInputs) -> list[Compaction]:
    return [c for c in inputs.compactions if not c.light]


def _repeated(inputs: SessionInputs, t: Thresholds) -> AlertFinding | None:
    counted = _counted(inputs)
    if len(counted) < t.repeated_compaction_count:
        return None
    severity: Severity = (
        "critical" if len(counted) >= 2 * t.repeated_compaction_count else "warning"
    )
    return AlertFinding(
        "repeated_compaction",
        severity,
        f"Compacted {len(counted)} times in one session",
        _evidence(
            spans=[c.seq for c in counted],
            numbers={"compactions": len(counted), "threshold": t.repeated_compaction_count},
        ),
    )


def _errored(c: Compaction) -> bool:
    """A compaction that reported an error or wrote nothing: it did not compact."""
    reasons = c.failure_reason.split("; ")
    return any(r.startswith("reported error") or r == "empty summary" for r in reasons)


def _storm(inputs: SessionInputs, t: Thresholds) -> AlertFinding | None:
    timed = sorted(
        ((c, c.at) for c in _counted(inputs) if c.at is not None), key=lambda pair: pair[1]
    )
    k = t.storm_compactions
    window = timedelta(minutes=t.storm_window_minutes)
    runs = [
        (i, timed[i + k - 1][1] - timed[i][1])
        for i in range(len(timed) - k + 1)
        if timed[i + k - 1][1] - timed[i][1] <= window
    ]
    if not runs:
        return None
    start, tightest = min(runs, key=lambda r: r[1])
    involved = sorted({i + j for i, _ in runs for j in range(k)})
    # The most compactions any window of W minutes holds (two pointers over the times).
    most, low = 0, 0
    for high in range(len(timed)):
        while timed[high][1] - timed[low][1] > window:
            low += 1
        most = max(most, high - low + 1)
    minutes = tightest.total_seconds() / 60
    first = timed[involved[0]][1]
    return AlertFinding(
        "compaction_storm",
        "critical" if most >= 2 * k else "warning",
        f"Compaction storm: {most} compactions within {_plural(t.storm_window_minutes, 'minute')}"
        f" ({k} in {minutes:.0f} min)",
        _evidence(
            calls=[timed[i][0].seq for i in involved],
            spans=[timed[i][0].seq for i in involved],
            numbers={
                "compactions": len(involved),
                "most_in_window": most,
                "tightest_minutes": round(minutes, 2),
            },
            items=[
                f"@{c.seq} +{(at - first).total_seconds() / 60:.1f} min: "
                f"{_n(c.tokens_before)} -> {_n(c.tokens_after)} tokens"
                for c, at in (timed[i] for i in involved)
            ],
            seq=timed[start][0].seq,
        ),
    )


def _loop(inputs: SessionInputs, t: Thresholds) -> AlertFinding | None:
    compacted = [c for c in _counted(inputs) if not _errored(c) and c.tokens_before]
    if not compacted:
        return None
    # The threshold in force: the lowest context at which this session compacted.
    threshold = min(c.tokens_before or 0 for c in compacted)
    calls = sorted(inputs.calls, key=lambda c: c.seq)
    seqs = [c.seq for c in calls]
    looping: list[tuple[Compaction, Call]] = []
    for c in compacted:
        i = bisect_left(seqs, c.seq)
        # A reported size below the threshold contradicts the call: not counted as a loop.
        after = c.reported_after if c.reported_after is not None else c.tokens_after
        reported_below = after is not None and after < threshold
        if i < len(calls) and calls[i].context_tokens >= threshold and not reported_below:
            looping.append((c, calls[i]))
    if not looping:
        return None
    overhead = min(call.context_tokens for _, call in looping)
    return AlertFinding(
        "compaction_loop",
        "critical",
        f"Compaction loop: {_plural(len(looping), 'compaction')} left the context above the "
        f"{threshold:,}-token threshold that triggered it (fixed overhead ~{overhead:,} tokens)",
        _evidence(
            calls=[call.seq for _, call in looping],
            spans=[c.seq for c, _ in looping],
            numbers={
                "looping": len(looping),
                "threshold_tokens": threshold,
                "overhead_tokens": overhead,
            },
            items=[
                f"fixed overhead: ~{overhead:,} tokens that no compaction removed (system prompt,"
                f" tools, pinned head), {overhead - threshold:,} at or above the threshold",
                *(
                    f"@{c.seq}: compacted at {_n(c.tokens_before)} tokens; the next call saw "
                    f"{call.context_tokens:,}"
                    for c, call in looping
                ),
            ],
        ),
    )


def _thrash(inputs: SessionInputs, t: Thresholds) -> AlertFinding | None:
    counted = _counted(inputs)
    call_seqs = sorted(c.seq for c in inputs.calls)
    # How many calls the agent had made when each compaction happened.
    at = [bisect_left(call_seqs, c.seq) for c in counted]
    k = t.thrash_compactions
    runs = [
        (i, at[i + k - 1] - at[i])
        for i in range(len(counted) - k + 1)
        if at[i + k - 1] - at[i] <= t.thrash_window_calls
    ]
    if not runs:
        return None
    start, gap = min(runs, key=lambda r: r[1])
    tight = counted[start : start + k]
    involved = sorted({c.seq for i, _ in runs for c in counted[i : i + k]})
    between = [s for s in call_seqs if tight[0].seq <= s < tight[-1].seq]
    return AlertFinding(
        "compaction_thrash",
        "warning",
        f"{k} compactions within {_plural(gap, 'model call')}: the window refills at once",
        _evidence(
            calls=between,
            spans=involved,
            numbers={
                "calls_between": gap,
                "compactions": k,
                "window_calls": t.thrash_window_calls,
            },
            seq=tight[0].seq,
        ),
    )


def _failure_reasons(c: Compaction) -> list[str]:
    """Why a compaction failed, or [] when it did not (a light step may shrink little)."""
    if not c.failed:
        return []
    reasons = [r for r in c.failure_reason.split("; ") if r]
    if c.light:
        return [r for r in reasons if r != BARELY_CHANGED_WARNING]
    return reasons or ["failed"]


def _failed(inputs: SessionInputs, t: Thresholds) -> AlertFinding | None:
    failed = [(c, r) for c in inputs.compactions if (r := _failure_reasons(c))]
    if not failed:
        return None
    first = failed[0][0]
    numbers: dict[str, float] = {"failed": len(failed)}
    if first.tokens_before is not None and first.tokens_after is not None:
        numbers["tokens_before"] = first.tokens_before
        numbers["tokens_after"] = first.tokens_after
    return AlertFinding(
        "failed_splice",
        "critical",
        f"{_plural(len(failed), 'compaction')} failed: {failed[0][1][0]}",
        _evidence(
            spans=[c.seq for c, _ in failed],
            numbers=numbers,
            items=[f"@{c.seq}: {r}" for c, reasons in failed for r in reasons],
        ),
    )


def _near_overflow(inputs: SessionInputs, t: Thresholds) -> AlertFinding | None:
    window = inputs.context_window
    floor = t.near_overflow_fill * window
    near = [c for c in inputs.calls if floor <= c.context_tokens <= window]
    if not near or window <= 0:
        return None
    peak = max(near, key=lambda c: c.context_tokens)
    return AlertFinding(
        "near_overflow",
        "warning",
        f"{_plural(len(near), 'call')} at {peak.context_tokens / window:.0%} of the window",
        _evidence(
            calls=[c.seq for c in near],
            numbers={
                "peak_tokens": peak.context_tokens,
                "context_window": window,
                "peak_fill": round(peak.context_tokens / window, 4),
                "threshold_fill": t.near_overflow_fill,
            },
            items=["estimated"] if peak.estimated else [],
            seq=peak.seq,
        ),
    )


def _overflow(inputs: SessionInputs, t: Thresholds) -> AlertFinding | None:
    window = inputs.context_window
    over = [c for c in inputs.calls if c.context_tokens > window]
    errors = inputs.context_length_errors
    if not over and not errors:
        return None
    numbers: dict[str, float] = {"context_window": window, "errors": len(errors)}
    if over:
        peak = max(over, key=lambda c: c.context_tokens)
        numbers["peak_tokens"] = peak.context_tokens
        title = f"{_plural(len(over), 'call')} over the window ({peak.context_tokens:,} tokens)"
    else:
        title = f"The API refused a too-long prompt ({_plural(len(errors), 'error')})"
    calls = sorted({c.seq for c in over} | {e.seq for e in errors})
    return AlertFinding(
        "overflow",
        "critical",
        title,
        _evidence(
            calls=calls,
            numbers=numbers,
            items=[f"@{e.seq}: {e.text[:200]}" for e in errors],
        ),
    )


def _lost(inputs: SessionInputs, t: Thresholds) -> AlertFinding | None:
    """A lost probe or instruction: ``warning``, and ``critical`` once the session needed one
    of them again (the user repeated it), which leads the title."""
    lost = [(c, f) for c in inputs.compactions for f in c.lost if f.kind in LOST_KINDS]
    if not lost:
        return None
    spans = sorted({c.seq for c, _ in lost})
    again = [(c, f) for c, f in lost if f.needed_again_seq is not None]
    if again:
        title = (
            f"{_plural(len(again), 'constraint')} lost and needed again: {again[0][1].text[:80]}"
        )
    else:
        title = f"{_plural(len(lost), 'constraint')} lost by compaction: {lost[0][1].text[:80]}"
    return AlertFinding(
        "lost_constraint",
        "critical" if again else "warning",
        title,
        _evidence(
            calls=sorted({f.needed_again_seq for _, f in again if f.needed_again_seq is not None}),
            spans=spans,
            numbers={"lost": len(lost), "needed_again": len(again)},
            items=[
                f"@{c.seq} {f.kind}{'' if f.seq is None else f' (from #{f.seq})'}: {f.text}"
                + (
                    ""
                    if f.needed_again_seq is None
                    else f" (needed again at #{f.needed_again_seq})"
                )
                for c, f in lost
            ],
            seq=spans[0],
        ),
    )


def _orphans(inputs: SessionInputs, t: Thresholds) -> AlertFinding | None:
    bad = [(c, o) for c in inputs.compactions for o in c.orphans_after]
    if not bad:
        return None
    spans = sorted({c.seq for c, _ in bad})
    return AlertFinding(
        "orphan_pairs",
        "critical",
        f"{_plural(len(bad), 'tool block')} without its pair after compaction",
        _evidence(
            calls=sorted({o.seq for _, o in bad}),
            spans=spans,
            numbers={"orphans": len(bad)},
            items=[f"@{o.seq} {o.kind} {o.tool_use_id} without its other half" for _, o in bad],
            seq=spans[0],
        ),
    )


def _personal(inputs: SessionInputs, detector: PersonalDataDetector | None) -> AlertFinding | None:
    if detector is None:
        return None
    hits = [(c, h) for c in inputs.compactions if c.summary for h in detector(c.summary)]
    if not hits:
        return None
    kinds = sorted({h.kind for _, h in hits})
    return AlertFinding(
        "personal_data",
        "critical",
        f"A compaction summary holds personal data ({', '.join(kinds)})",
        _evidence(
            spans=sorted({c.seq for c, _ in hits}),
            numbers={"hits": len(hits)},
            items=[f"@{c.seq} {h.kind}: {h.masked}" for c, h in hits],
        ),
    )


def _secret(inputs: SessionInputs, detector: PersonalDataDetector | None) -> AlertFinding | None:
    hits = list(inputs.secrets)
    if detector is not None:
        hits += [
            SecretHit(c.seq, "summary", h.masked)
            for c in inputs.compactions
            if c.summary
            for h in detector(c.summary)
        ]
    if not hits:
        return None
    places = sorted({h.where for h in hits})
    return AlertFinding(
        "secret",
        "critical",
        f"A secret is in the session's {' and '.join(places)} ({_plural(len(hits), 'hit')})",
        _evidence(
            spans=sorted({h.seq for h in hits if h.where == "summary" and h.seq is not None}),
            numbers={"hits": len(hits)},
            items=[f"@{'-' if h.seq is None else h.seq} {h.where}: {h.masked}" for h in hits],
            seq=min((h.seq for h in hits if h.seq is not None), default=None),
        ),
    )


_RULES: dict[str, Callable[[SessionInputs, Thresholds], AlertFinding | None]] = {
    "compaction_storm": _storm,
    "compaction_loop": _loop,
    "repeated_compaction": _repeated,
    "compaction_thrash": _thrash,
    "failed_splice": _failed,
    "near_overflow": _near_overflow,
    "overflow": _overflow,
    "lost_constraint": _lost,
    "orphan_pairs": _orphans,
}


def evaluate(
    inputs: SessionInputs,
    thresholds: Thresholds | None = None,
    *,
    personal_data: PersonalDataDetector | None = None,
    secrets: PersonalDataDetector | None = None,
) -> list[AlertFinding]:
    """Every rule that fires on the session, at most one finding per rule, in RULES order.

    >>> calls = (Call(1, 120_000), Call(3, 30_000), Call(5, 125_000), Call(7, 31_000))
    >>> inputs = SessionInputs(200_000, calls, (Compaction(2), Compaction(6)))
    >>> [f.rule for f in evaluate(inputs)]
    ['compaction_thrash']
    >>> evaluate(inputs, Thresholds(repeated_compaction_count=2))[0].evidence["spans"]
    [2, 6]
    """
    t = thresholds or Thresholds()
    found = []
    for rule in RULES:
        if rule in t.disabled:
            continue
        check = _RULES.get(rule)
        if check is not None:
            finding = check(inputs, t)
        elif rule == "secret":
            finding = _secret(inputs, secrets)
        else:
            finding = _personal(inputs, personal_data)
        if finding is not None:
            finding.evidence["thresholds"] = rule_thresholds(rule, t)
            found.append(finding)
    return _one_per_group(found, inputs)


def _one_per_group(found: list[AlertFinding], inputs: SessionInputs) -> list[AlertFinding]:
    """Fold the compaction rules that fired on the same compactions into the one that comes
    first in COMPACTION_PRECEDENCE, naming them in its evidence; each kept one says what the
    compaction calls cost so far."""
    by_rule = {f.rule: f for f in found}
    kept: list[AlertFinding] = []
    folded: set[str] = set()
    for rule in COMPACTION_PRECEDENCE:
        finding = by_rule.get(rule)
        if finding is None:
            continue
        spans = set(finding.evidence["spans"])
        winner = next((w for w in kept if spans & set(w.evidence["spans"])), None)
        if winner is None:
            kept.append(finding)
            continue
        winner.evidence.setdefault("also", []).append(rule)
        winner.evidence["items"].append(f"also {rule}: {finding.title}")
        folded.add(rule)
    numbers, line = cost_line(
        inputs.compactions_price, inputs.compaction_calls_usd, inputs.session_usd
    )
    for finding in kept:
        finding.evidence["numbers"].update(numbers)
        finding.evidence["items"].append(line)
    return [f for f in found if f.rule not in folded]


def rule_thresholds(rule: str, t: Thresholds) -> dict[str, float]:
    """The thresholds of ``t`` that ``rule`` compares against; {} for a rule that fires on
    any occurrence (a failed splice, an overflow, a lost constraint, ...).

    >>> rule_thresholds("compaction_thrash", Thresholds())
    {'thrash_compactions': 2, 'thrash_window_calls': 20}
    >>> rule_thresholds("overflow", Thresholds())
    {}
    """
    if rule == "compaction_storm":
        return {
            "storm_compactions": t.storm_compactions,
            "storm_window_minutes": t.storm_window_minutes,
        }
    if rule == "repeated_compaction":
        return {"repeated_compaction_count": t.repeated_compaction_count}
    if rule == "compaction_thrash":
        return {
            "thrash_compactions": t.thrash_compactions,
            "thrash_window_calls": t.thrash_window_calls,
        }
    if rule == "near_overflow":
        return {"near_overflow_fill": t.near_overflow_fill}
    return {}


def _n(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f}"


def rule_statement(
    rule: str, numbers: dict[str, float], thresholds: dict[str, float] | None
) -> tuple[str, str]:
    """What the rule observed and the threshold it compared against, as two short phrases
    for a person; the second is "" for a rule without a threshold.

    >>> rule_statement("repeated_compaction", {"compactions": 6}, {"repeated_compaction_count": 3})
    ('6 compactions in the session', 'threshold 3')
    >>> rule_statement("near_overflow", {"peak_fill": 0.971}, {"near_overflow_fill": 0.95})
    ('a call at 97.1% of the window', 'threshold 95% of the window')
    """
    th = thresholds or {}
    get = numbers.get
    if rule == "compaction_storm":
        observed = (
            f"{_n(get('most_in_window'))} compactions within a window, "
            f"{_n(get('compactions'))} in the storm"
        )
        k, w = th.get("storm_compactions"), th.get("storm_window_minutes")
        if k is None or w is None:
            return observed, ""
        return observed, f"threshold {_n(k)} compactions within {_n(w)} minutes"
    if rule == "compaction_loop":
        return (
            f"{_n(get('looping'))} compaction(s) left {_n(get('overhead_tokens'))} tokens",
            f"the {_n(get('threshold_tokens'))}-token threshold that triggered them",
        )
    if rule == "repeated_compaction":
        n = get("compactions")
        observed = f"{_n(n)} compaction{'' if n == 1 else 's'} in the session"
        limit = th.get("repeated_compaction_count")
        return observed, "" if limit is None else f"threshold {_n(limit)}"
    if rule == "compaction_thrash":
        observed = f"{_n(get('compactions'))} compactions within {_n(get('calls_between'))} calls"
        k, w = th.get("thrash_compactions"), th.get("thrash_window_calls")
        if k is None or w is None:
            return observed, ""
        return observed, f"threshold {_n(k)} compactions within {_n(w)} calls"
    if rule == "near_overflow":
        fill = get("peak_fill")
        observed = f"a call at {fill:.1%} of the window" if fill is not None else "a call"
        limit = th.get("near_overflow_fill")
        return observed, "" if limit is None else f"threshold {limit:.0%} of the window"
    if rule == "failed_splice":
        return f"{_n(get('failed'))} failed compaction(s)", "fires on any failed splice"
    if rule == "overflow":
        peak = get("peak_tokens")
        window = get("context_window")
        if peak is not None:
            return f"a call of {_n(peak)} tokens in a {_n(window)}-token window", (
                "fires on any call over the window"
            )
        return f"{_n(get('errors'))} too-long-prompt error(s)", "fires on any context error"
    if rule == "lost_constraint":
        return f"{_n(get('lost'))} constraint(s) lost", "fires on any lost constraint"
    if rule == "orphan_pairs":
        return f"{_n(get('orphans'))} unpaired tool block(s)", "fires on any orphan"
    if rule == "personal_data":
        return f"{_n(get('hits'))} personal data hit(s) in summaries", "fires on any hit"
    if rule == "secret":
        return f"{_n(get('hits'))} secret(s) in messages or summaries", "fires on any secret"
    return "", ""


# What the Anthropic, OpenAI and Claude Code error texts say when a prompt is over the window.
CONTEXT_LENGTH_ERROR = re.compile(
    r"prompt is too long|context[_ ]length[_ ]exceeded|maximum context length"
    r"|exceed(?:s|ed)? (?:the )?context (?:limit|window)",
    re.IGNORECASE,
)
# An error notice is short; a long text that mentions the phrase is a discussion of it.
ERROR_TEXT_MAX = 1000


def context_length_errors(messages: Iterable[Message]) -> list[ContextLengthError]:
    """Short assistant or system texts that report a too-long prompt (tool output is skipped:
    it is whatever the agent read, such as source code that mentions the error).

    >>> from compaction.engine.messages import TextBlock
    >>> ms = [Message(4, "assistant", (TextBlock("API Error: 400 prompt is too long"),))]
    >>> [e.seq for e in context_length_errors(ms)]
    [4]
    """
    found = []
    for m in messages:
        if m.role == "user":
            continue
        for block in m.content:
            text = getattr(block, "text", None)
            if (
                isinstance(text, str)
                and len(text) <= ERROR_TEXT_MAX
                and CONTEXT_LENGTH_ERROR.search(text)
            ):
                found.append(ContextLengthError(m.seq, text.strip()))
                break
    return found
