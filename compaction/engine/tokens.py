"""Token counting and the two token series (DESIGN.md "Two token series, never mixed").

* Context size of a call = input + cache-read + cache-creation tokens: what the model saw.
* Billed tokens of a call = everything charged, compaction iterations included.

Counters estimate the tokens of messages: a character heuristic and a counter calibrated per block
kind on the usage a trace reports. The exact one, the Anthropic ``count_tokens`` endpoint, is
:class:`compaction.engine.anthropic.AnthropicCounter`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Protocol, TypedDict, runtime_checkable

from compaction.engine.messages import (
    CompactionBlock,
    ImageBlock,
    Message,
    OpaqueBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    is_call,
)

KINDS: tuple[str, ...] = ("prose", "code", "tool_output")
MESSAGE_OVERHEAD = 4
IMAGE_TOKENS = 1600
DEFAULT_CHARS_PER_TOKEN = 4.0
# A fitted ratio outside this band is a fitting artefact, not a tokenizer property.
MIN_CHARS_PER_TOKEN = 1.5
MAX_CHARS_PER_TOKEN = 12.0


# --- the two series ----------------------------------------------------------------------------


def context_size(usage: Usage) -> int:
    """Tokens the model saw in one call: input + cache-read + cache-creation.

    When the API reports ``iterations`` (server tool loops, server-side compaction), the
    top-level counters add up several sampling steps; the context is the last ``message``
    iteration, never a sum and never a ``compaction`` entry.

    >>> context_size(Usage(input_tokens=3, cache_read_input_tokens=20000,
    ...                    cache_creation_input_tokens=500, output_tokens=90))
    20503
    """
    steps = [it for it in usage.iterations if it.type == "message"]
    if steps:
        last = steps[-1]
        return last.input_tokens + last.cache_read_input_tokens + last.cache_creation_input_tokens
    return usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens


def billed_tokens(usage: Usage) -> int:
    """Every token charged for one call, compaction iterations included.

    The top-level counters already hold the sampling iterations; ``compaction`` iterations are
    reported beside them and are added here.

    >>> from compaction.engine.messages import Iteration
    >>> billed_tokens(Usage(input_tokens=100, output_tokens=10,
    ...                     iterations=(Iteration("compaction", 5000, 800),)))
    5910
    """
    total = (
        usage.input_tokens
        + usage.cache_read_input_tokens
        + usage.cache_creation_input_tokens
        + usage.output_tokens
    )
    for it in usage.iterations:
        if it.type != "message":
            total += (
                it.input_tokens
                + it.output_tokens
                + it.cache_read_input_tokens
                + it.cache_creation_input_tokens
            )
    return total


# --- character breakdown -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CharBreakdown:
    """Characters of a message by block kind, plus images counted apart."""

    prose: int = 0
    code: int = 0
    tool_output: int = 0
    images: int = 0

    def get(self, kind: str) -> int:
        return int(getattr(self, kind))

    @property
    def chars(self) -> int:
        return self.prose + self.code + self.tool_output


def _text_split(text: str) -> tuple[int, int]:
    """(prose chars, code chars): fenced ``` blocks count as code."""
    if "```" not in text:
        return len(text), 0
    parts = text.split("```")
    code = sum(len(p) for p in parts[1::2])
    return len(text) - code, code


def char_breakdown(message: Message) -> CharBreakdown:
    """Characters by kind: prose (text, thinking), code (tool inputs, fenced code), tool output.

    >>> char_breakdown(Message(0, "user", (ToolResultBlock("t", "x" * 40),))).tool_output
    40
    """
    prose = code = tool = images = 0
    for b in message.content:
        if isinstance(b, TextBlock):
            p, c = _text_split(b.text)
            prose += p
            code += c
        elif isinstance(b, ThinkingBlock):
            prose += len(b.thinking)
        elif isinstance(b, CompactionBlock):
            prose += len(b.content or "")
        elif isinstance(b, ToolUseBlock):
            code += len(b.name) + _json_len(b.input)
        elif isinstance(b, ToolResultBlock):
            if isinstance(b.content, str):
                tool += len(b.content)
            else:
                for inner in b.content:
                    if isinstance(inner, ImageBlock):
                        images += 1
                    elif isinstance(inner, TextBlock):
                        tool += len(inner.text)
                    else:
                        tool += _json_len(inner.to_wire())
        elif isinstance(b, ImageBlock):
            images += 1
        elif isinstance(b, OpaqueBlock):
            code += _json_len(b.data)
    return CharBreakdown(prose, code, tool, images)


def _json_len(value: Any) -> int:
    """Length of a JSON rendering, without paying for json.dumps on big nested inputs."""
    if isinstance(value, str):
        return len(value) + 2
    if isinstance(value, Mapping):
        return 2 + sum(len(str(k)) + 4 + _json_len(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return 2 + sum(_json_len(v) + 1 for v in value)
    return len(str(value))


# --- counters ----------------------------------------------------------------------------------


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of messages. ``exact`` is True only for a real tokenizer."""

    name: str
    exact: bool

    def count_message(self, message: Message) -> int: ...

    def count(self, messages: Iterable[Message]) -> int: ...


@dataclass
class CharCounter:
    """The seed's heuristic: characters divided by a fixed ratio.

    >>> CharCounter().count_message(Message(0, "user", (TextBlock("x" * 400),)))
    104
    """

    chars_per_token: float = DEFAULT_CHARS_PER_TOKEN
    name: str = "chars"
    exact: bool = False

    def count_message(self, message: Message) -> int:
        b = char_breakdown(message)
        return (
            math.ceil(b.chars / self.chars_per_token) + MESSAGE_OVERHEAD + b.images * IMAGE_TOKENS
        )

    def count(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages)


class CalibrationDict(TypedDict):
    """``CalibrationReport.to_dict()``: stored in ``SessionAnalysis.calibration``."""

    samples: int
    chars_per_token: dict[str, float]
    base_tokens: int
    mean_abs_error: float
    mean_abs_pct_error: float
    max_abs_pct_error: float
    note: str


@dataclass(frozen=True)
class CalibrationReport:
    """How well the calibrated counter reproduces the context sizes the trace reported."""

    samples: int
    chars_per_token: Mapping[str, float]
    base_tokens: int
    mean_abs_error: float
    mean_abs_pct_error: float
    max_abs_pct_error: float
    note: str = ""

    def to_dict(self) -> CalibrationDict:
        return {
            "samples": self.samples,
            "chars_per_token": {k: round(v, 4) for k, v in self.chars_per_token.items()},
            "base_tokens": self.base_tokens,
            "mean_abs_error": round(self.mean_abs_error, 2),
            "mean_abs_pct_error": round(self.mean_abs_pct_error, 4),
            "max_abs_pct_error": round(self.max_abs_pct_error, 4),
            "note": self.note,
        }


@dataclass
class CalibratedCounter:
    """Chars-per-token by block kind, plus ``base_tokens`` (system prompt and tools) per call.

    Build one with :func:`calibrate`. ``base_tokens`` is not part of :meth:`count`; add it to
    a context size, as :func:`observed_curve` and the replay do.

    >>> c = CalibratedCounter({"prose": 4.0, "code": 2.0, "tool_output": 3.0})
    >>> c.count_message(Message(0, "user", (TextBlock("x" * 40),)))
    14
    """

    chars_per_token: Mapping[str, float]
    base_tokens: int = 0
    report: CalibrationReport | None = None
    name: str = "calibrated"
    exact: bool = False
    _per_char: tuple[float, float, float] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._per_char = tuple(  # type: ignore[assignment]
            1.0 / self.chars_per_token.get(k, DEFAULT_CHARS_PER_TOKEN) for k in KINDS
        )

    def count_message(self, message: Message) -> int:
        b = char_breakdown(message)
        a_prose, a_code, a_tool = self._per_char
        est = b.prose * a_prose + b.code * a_code + b.tool_output * a_tool
        return math.ceil(est) + MESSAGE_OVERHEAD + b.images * IMAGE_TOKENS

    def count(self, messages: Iterable[Message]) -> int:
        return sum(self.count_message(m) for m in messages)


def _solve(a: list[list[float]], b: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None when singular."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-12:
            return None
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                if f:
                    for c in range(col, n + 1):
                        m[r][c] -= f * m[col][c]
    return [m[i][n] / m[i][i] for i in range(n)]


def _nnls(rows: list[list[float]], y: list[float]) -> list[float]:
    """Non-negative least squares for a handful of columns, by trying every column subset."""
    ncols = len(rows[0])
    best: list[float] = [0.0] * ncols
    best_err = sum(v * v for v in y)
    for size in range(1, ncols + 1):
        for cols in combinations(range(ncols), size):
            ata = [[sum(r[i] * r[j] for r in rows) for j in cols] for i in cols]
            aty = [sum(r[i] * v for r, v in zip(rows, y, strict=True)) for i in cols]
            sol = _solve(ata, aty)
            if sol is None or any(s < 0 for s in sol):
                continue
            coef = [0.0] * ncols
            for c, s in zip(cols, sol, strict=True):
                coef[c] = s
            err = sum(
                (v - sum(c * x for c, x in zip(coef, r, strict=True))) ** 2
                for r, v in zip(rows, y, strict=True)
            )
            if err < best_err:
                best, best_err = coef, err
    return best


def calibrate(
    messages: Sequence[Message],
    *,
    context_starts: Iterable[int] = (),
    min_samples: int = 3,
) -> CalibratedCounter:
    """Fit chars-per-token by block kind and a per-call base on the usage the trace reports.

    Each assistant message with usage is one sample: its context size against the characters of
    the messages before it (back to the last seq in ``context_starts``, where an observed
    compaction restarted the context). The fit is a non-negative least squares with an
    intercept (the system prompt and tools every call carries); the report gives its error.

    >>> calibrate([]).report.note
    'not enough samples with usage; using 4.0 chars per token'
    """
    starts = set(context_starts)
    rows: list[list[float]] = []
    ys: list[float] = []
    cum = [0.0, 0.0, 0.0]
    fixed = 0.0
    for m in messages:
        if m.seq in starts or any(isinstance(b, CompactionBlock) for b in m.content):
            cum, fixed = [0.0, 0.0, 0.0], 0.0
        if m.role == "assistant" and m.usage is not None:
            observed = context_size(m.usage)
            if observed > 0:
                rows.append([1.0, *cum])
                ys.append(observed - fixed)
        b = char_breakdown(m)
        cum = [cum[0] + b.prose, cum[1] + b.code, cum[2] + b.tool_output]
        fixed += MESSAGE_OVERHEAD + b.images * IMAGE_TOKENS
    if len(rows) < min_samples:
        ratios = dict.fromkeys(KINDS, DEFAULT_CHARS_PER_TOKEN)
        report = CalibrationReport(
            samples=len(rows),
            chars_per_token=ratios,
            base_tokens=0,
            mean_abs_error=0.0,
            mean_abs_pct_error=0.0,
            max_abs_pct_error=0.0,
            note=f"not enough samples with usage; using {DEFAULT_CHARS_PER_TOKEN} chars per token",
        )
        return CalibratedCounter(ratios, 0, report)
    coef = _nnls(rows, ys)
    ratios = {}
    used = [any(r[i + 1] for r in rows) for i in range(len(KINDS))]
    for i, kind in enumerate(KINDS):
        a = coef[i + 1]
        cpt = 1.0 / a if a > 0 and used[i] else DEFAULT_CHARS_PER_TOKEN
        ratios[kind] = min(MAX_CHARS_PER_TOKEN, max(MIN_CHARS_PER_TOKEN, cpt))
    per_char = [1.0 / ratios[k] for k in KINDS]
    residual = [
        y - sum(a * x for a, x in zip(per_char, r[1:], strict=True))
        for r, y in zip(rows, ys, strict=True)
    ]
    # The least-squares intercept is the mean residual; recomputing it after clamping the
    # ratios keeps the level right even when a ratio had to be clamped or defaulted.
    base = max(0, round(sum(residual) / len(residual)))
    errors = []
    pct = []
    fixed_rows = _fixed_parts(messages, starts)
    for r, y, f in zip(rows, ys, fixed_rows, strict=True):
        est = base + sum(a * x for a, x in zip(per_char, r[1:], strict=True))
        errors.append(abs(est - y))
        pct.append(abs(est - y) / (y + f) if (y + f) else 0.0)
    report = CalibrationReport(
        samples=len(rows),
        chars_per_token=ratios,
        base_tokens=base,
        mean_abs_error=sum(errors) / len(errors),
        mean_abs_pct_error=sum(pct) / len(pct),
        max_abs_pct_error=max(pct),
    )
    return CalibratedCounter(ratios, base, report)


def _fixed_parts(messages: Sequence[Message], starts: set[int]) -> list[float]:
    """The fixed per-message tokens removed from each sample (to express errors in %)."""
    out: list[float] = []
    fixed = 0.0
    for m in messages:
        if m.seq in starts or any(isinstance(b, CompactionBlock) for b in m.content):
            fixed = 0.0
        if m.role == "assistant" and m.usage is not None and context_size(m.usage) > 0:
            out.append(fixed)
        b = char_breakdown(m)
        fixed += MESSAGE_OVERHEAD + b.images * IMAGE_TOKENS
    return out


# --- attribution ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attribution:
    """Tokens per message measured from reported usage, and the per-call base.

    ``counts`` maps a seq to the tokens that message added to the context, taken from the
    growth of the reported context size between two calls; ``estimated`` lists the seqs that
    had no such measurement and were counted with the counter instead.
    """

    base_tokens: int
    counts: Mapping[int, int]
    estimated: frozenset[int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "base_tokens": self.base_tokens,
            "measured": len(self.counts) - len(self.estimated),
            "estimated": len(self.estimated),
        }


def _share(total: int, weights: Sequence[int]) -> list[int]:
    """Split ``total`` in proportion to ``weights`` (largest remainders), summing exactly."""
    weight_sum = sum(weights)
    if weight_sum <= 0:
        weights = [1] * len(weights)
        weight_sum = len(weights)
    raw = [total * w / weight_sum for w in weights]
    out = [math.floor(x) for x in raw]
    order = sorted(range(len(raw)), key=lambda i: raw[i] - out[i], reverse=True)
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def attribute_usage(
    messages: Sequence[Message],
    counter: TokenCounter,
    *,
    context_starts: Iterable[int] = (),
) -> Attribution:
    """Measure each message's tokens from the usage the trace reports.

    Between two calls with usage, the context grew by exactly the messages in between (the
    earlier call's answer and what followed it), so that growth is split over them in
    proportion to the counter's estimates. The first call fixes the base (system prompt and
    tools) as its context minus the estimated messages before it. Where no measurement is
    possible (no usage, a shrinking context, the first call after an observed compaction) the
    counter's estimate stands. Replaying with these counts reproduces the reported curve
    exactly until the replay's policy changes something.

    >>> ms = [Message(0, "user", (TextBlock("x" * 400),)),
    ...       Message(1, "assistant", (TextBlock("ok"),), usage=Usage(input_tokens=1000)),
    ...       Message(2, "user", (TextBlock("y" * 40),)),
    ...       Message(3, "assistant", (TextBlock("ok"),), usage=Usage(input_tokens=1300))]
    >>> a = attribute_usage(ms, CharCounter())
    >>> a.base_tokens + sum(a.counts[s] for s in (0,)), sum(a.counts[s] for s in (1, 2))
    (1000, 300)
    """
    starts = set(context_starts)
    counts: dict[int, int] = {}
    estimated: set[int] = set()
    base: int | None = None
    pending: list[Message] = []
    previous: int | None = None  # context size of the last call with usage, in this segment
    first_segment = True

    def estimate(batch: Iterable[Message]) -> None:
        for m in batch:
            counts[m.seq] = counter.count_message(m)
            estimated.add(m.seq)

    for m in messages:
        if m.seq in starts or any(isinstance(b, CompactionBlock) for b in m.content):
            estimate(pending)
            pending, previous, first_segment = [], None, False
        if m.role == "assistant" and m.usage is not None and context_size(m.usage) > 0:
            size = context_size(m.usage)
            guesses = [counter.count_message(p) for p in pending]
            if previous is not None and size - previous >= len(pending):
                for p, n in zip(pending, _share(size - previous, guesses), strict=True):
                    counts[p.seq] = n
            else:
                estimate(pending)
                if previous is None and first_segment and base is None:
                    base = max(0, size - sum(guesses))
            pending, previous = [], size
        pending.append(m)
    estimate(pending)
    if base is None:
        base = int(getattr(counter, "base_tokens", 0))
    return Attribution(base, counts, frozenset(estimated))


# --- observed curve ----------------------------------------------------------------------------


class CurvePointDict(TypedDict):
    """``CurvePoint.to_dict()``: stored in ``SessionAnalysis.curve`` and ``ReplayRun.curve``."""

    seq: int
    context_tokens: int
    billed_tokens: int
    fill: float
    estimated: bool


@dataclass(frozen=True, slots=True)
class CurvePoint:
    """One model call: the context it saw and what it cost. ``estimated`` when not reported."""

    seq: int
    context_tokens: int
    billed_tokens: int
    fill: float
    estimated: bool

    def to_dict(self) -> CurvePointDict:
        return {
            "seq": self.seq,
            "context_tokens": self.context_tokens,
            "billed_tokens": self.billed_tokens,
            "fill": round(self.fill, 6),
            "estimated": self.estimated,
        }


def observed_curve(
    messages: Sequence[Message],
    counter: TokenCounter | None = None,
    context_window: int = 200_000,
    *,
    base_tokens: int | None = None,
    context_starts: Iterable[int] = (),
) -> list[CurvePoint]:
    """One point per model call (an assistant message a model wrote: not a failed request the
    harness wrote in its place), from usage where the trace has it.

    Without usage (or with usage of 0 in and 0 out: no counts, never an empty context) the
    point is estimated with ``counter`` over the messages the call saw
    (back to the last seq in ``context_starts`` or the last compaction block), plus
    ``base_tokens`` (defaults to the counter's own, if it has one).

    >>> ms = [Message(0, "user", (TextBlock("hi"),)),
    ...       Message(1, "assistant", (TextBlock("yo"),), usage=Usage(input_tokens=900,
    ...                output_tokens=12, cache_read_input_tokens=100))]
    >>> observed_curve(ms, context_window=1000)[0].fill
    1.0
    """
    counter = counter if counter is not None else CharCounter()
    base = base_tokens if base_tokens is not None else int(getattr(counter, "base_tokens", 0))
    starts = set(context_starts)
    window = max(1, context_window)
    running = 0
    points: list[CurvePoint] = []
    for m in messages:
        if m.seq in starts or any(isinstance(b, CompactionBlock) for b in m.content):
            running = 0
        if is_call(m):
            if m.usage is not None and not m.usage.reports_nothing:
                ctx = context_size(m.usage)
                points.append(CurvePoint(m.seq, ctx, billed_tokens(m.usage), ctx / window, False))
            else:
                ctx = base + running
                out = counter.count_message(m)
                points.append(CurvePoint(m.seq, ctx, ctx + out, ctx / window, True))
        running += counter.count_message(m)
    return points
