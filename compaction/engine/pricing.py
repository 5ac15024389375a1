"""Cost in money: the one module every money figure the product shows comes from.

Two figures, each with one rule (DESIGN.md "Money and sizes"):

* **billed** (``usd``): every call as it was charged, at its own model's price in force on the
  call's date: input, output, cache reads at the read rate, cache writes at the 5-minute or
  the 1-hour write rate as the usage records them (:func:`cost_usd`, :data:`BILLED_RULE`);
* **the replay rule** (``observed_usd`` beside a replay's ``usd``): every call's whole context
  at the input price and its output at the output price, no cache discount, so a replayed run
  and the observed one compare (:func:`replay_rule_call`, :data:`REPLAY_RULE`). Every saving is
  a difference of two figures by this rule.

The table lives in settings (``MODEL_PRICES``); a model is priced by the table key it equals,
or that it continues with a date (``claude-sonnet-4-5-20250929`` takes ``claude-sonnet-4-5``;
``claude-opus-4-7`` does not take ``claude-opus-4``): a model the table does not know has no
cost rather than a guessed one. An entry is one price, or a list of prices each ``from`` a date
(the price in force on a call's date is the last one from on or before it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from compaction.engine.messages import Iteration, Usage

PRICE_FIELDS = ("input", "output", "cache_read", "cache_write")
# A 1-hour cache write costs twice the input price (a 5-minute one 1.25 times), unless the
# table says otherwise with ``cache_write_1h``.
ONE_HOUR_WRITE_FACTOR = 2.0
_DATED = re.compile(r"^(.+?)-\d{8}(?:-.*)?$")

BILLED_LABEL = "billed"
BILLED_RULE = (
    "each call at its own model's price in force on its date: input, output, cache reads at "
    "the read rate and cache writes at the 5-minute or 1-hour write rate, as logged"
)
REPLAY_LABEL = "replay rule (list prices, no cache)"
REPLAY_RULE = (
    "every call's whole context at its model's input price and its output at the output "
    "price, cache discounts left out (a replayed prefix is not the one the provider cached), "
    "the observed run priced by the same rule"
)


@dataclass(frozen=True)
class Price:
    """USD per million tokens; ``cache_write`` is the 5-minute write rate."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    cache_write_1h: float | None = None  # None: ONE_HOUR_WRITE_FACTOR x input

    @property
    def one_hour_write(self) -> float:
        if self.cache_write_1h is not None:
            return self.cache_write_1h
        return self.input * ONE_HOUR_WRITE_FACTOR


@dataclass(frozen=True)
class TokenCounts:
    """What one or more calls were charged for, by kind."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    # the part of cache_creation_input_tokens written to the 1-hour cache
    cache_creation_1h_input_tokens: int = 0

    def __add__(self, other: TokenCounts) -> TokenCounts:
        return TokenCounts(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_creation_1h_input_tokens + other.cache_creation_1h_input_tokens,
        )

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_input_tokens
            + self.cache_creation_input_tokens
        )


COMPACTION_ITERATION = "compaction"


def counts_of(usage: Usage) -> TokenCounts:
    """A call's charged tokens at its own model: its counters plus its ``compaction``
    iterations (a server-side compaction). Another model's iterations are
    :func:`side_calls`.

    >>> from compaction.engine.messages import Iteration
    >>> counts_of(Usage(input_tokens=10, output_tokens=2,
    ...                 iterations=(Iteration("compaction", 5000, 800),))).total
    5812
    """
    return _counters(usage) + compacting_counts(usage)


def _counters(u: Usage | Iteration) -> TokenCounts:
    return TokenCounts(
        u.input_tokens,
        u.output_tokens,
        u.cache_read_input_tokens,
        u.cache_creation_input_tokens,
        u.cache_creation_1h_input_tokens if isinstance(u, Usage) else 0,
    )


def compacting_counts(usage: Usage) -> TokenCounts:
    """The ``compaction`` iterations of a call (a server-side compaction), summed."""
    total = TokenCounts()
    for it in usage.iterations:
        if it.type == COMPACTION_ITERATION:
            total = total + _counters(it)
    return total


def side_calls(model: str | None, usage: Usage) -> list[PricedCall]:
    """The inferences of other models inside one call (an ``advisor_message`` iteration, or
    any iteration that is neither a sampling step nor a compaction), each a call of its own
    priced at the model it names, else at the call's. They are not in the call's top-level
    counters, and they are not compaction.

    >>> from compaction.engine.messages import Iteration
    >>> [(c.model, c.counts.total) for c in side_calls("opus", Usage(input_tokens=5,
    ...     iterations=(Iteration("message", 5), Iteration("advisor_message", 900, 90,
    ...     model="fable"), Iteration("compaction", 50))))]
    [('fable', 990)]
    """
    return [
        PricedCall(it.model or model, _counters(it))
        for it in usage.iterations
        if it.type not in ("message", COMPACTION_ITERATION)
    ]


def _count(raw: Mapping[str, Any], key: str) -> int:
    value = raw.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(int(value), 0)


def counts_from_wire(raw: Any) -> TokenCounts:
    """Counts from a usage mapping as traces write it (Anthropic's ``cache_creation`` split
    kept as the 1-hour writes); anything unreadable counts 0.

    >>> counts_from_wire({"cache_creation_input_tokens": 100, "cache_creation":
    ...     {"ephemeral_5m_input_tokens": 40, "ephemeral_1h_input_tokens": 60}})
    TokenCounts(input_tokens=0, output_tokens=0, cache_read_input_tokens=0, \
cache_creation_input_tokens=100, cache_creation_1h_input_tokens=60)
    """
    if not isinstance(raw, Mapping):
        return TokenCounts()
    written = _count(raw, "cache_creation_input_tokens")
    one_hour = 0
    split = raw.get("cache_creation")
    if isinstance(split, Mapping):
        one_hour = _count(split, "ephemeral_1h_input_tokens")
        written = written or _count(split, "ephemeral_5m_input_tokens") + one_hour
    return TokenCounts(
        _count(raw, "input_tokens"),
        _count(raw, "output_tokens"),
        _count(raw, "cache_read_input_tokens"),
        written,
        min(one_hour, written),
    )


class PriceTableError(ValueError):
    """A price table entry that is not four non-negative numbers."""


class PriceTable(Mapping[str, Price]):
    """Each model's prices by date; as a mapping, each model's latest price."""

    def __init__(self, schedules: Mapping[str, tuple[tuple[date | None, Price], ...]]) -> None:
        self.schedules = dict(schedules)

    def __getitem__(self, model: str) -> Price:
        return self.schedules[model][-1][1]

    def __iter__(self) -> Iterator[str]:
        return iter(self.schedules)

    def __len__(self) -> int:
        return len(self.schedules)

    def on(self, model: str, day: date | None) -> Price:
        """The price of ``model`` in force on ``day`` (the latest when the day is unknown,
        the earliest for a day before every entry)."""
        schedule = self.schedules[model]
        if day is None:
            return schedule[-1][1]
        found = schedule[0][1]
        for since, price in schedule:
            if since is None or since <= day:
                found = price
        return found


def _price_entry(model: str, entry: Any) -> Price:
    if not isinstance(entry, Mapping):
        raise PriceTableError(f"{model}: needs {', '.join(PRICE_FIELDS)}")
    names = [
        *PRICE_FIELDS,
        *(["cache_write_1h"] if entry.get("cache_write_1h") is not None else []),
    ]
    values: list[float] = []
    for name in names:
        value = entry.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise PriceTableError(f"{model}.{name}: a price in USD per million tokens")
        values.append(float(value))
    return Price(*values)


def _since(model: str, entry: Any) -> date:
    raw = entry.get("from") if isinstance(entry, Mapping) else None
    try:
        return date.fromisoformat(str(raw))
    except ValueError:
        why = f"{model}.from: a date (YYYY-MM-DD) the price is in force from"
        raise PriceTableError(why) from None


def price_table(raw: Mapping[str, Any]) -> PriceTable:
    """Validate a settings table ``{model: {input, output, cache_read, cache_write}}``, or
    ``{model: [{from: "YYYY-MM-DD", input, ...}, ...]}`` for a price that changed on a date.

    >>> price_table({"m": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}})["m"]
    Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75, cache_write_1h=None)
    >>> dated = price_table({"m": [{"from": "2025-01-01", "input": 3, "output": 15,
    ...     "cache_read": 0.3, "cache_write": 3.75}, {"from": "2025-06-01", "input": 1,
    ...     "output": 5, "cache_read": 0.1, "cache_write": 1.25}]})
    >>> dated.on("m", date(2025, 3, 1)).input, dated.on("m", date(2025, 6, 1)).input
    (3.0, 1.0)
    """
    schedules: dict[str, tuple[tuple[date | None, Price], ...]] = {}
    for model, entry in raw.items():
        name = str(model)
        if isinstance(entry, list | tuple):
            if not entry:
                raise PriceTableError(f"{name}: an empty list of prices")
            dated = sorted(
                ((_since(name, e), _price_entry(name, e)) for e in entry), key=lambda pair: pair[0]
            )
            schedules[name] = tuple(dated)
        else:
            schedules[name] = ((None, _price_entry(name, entry)),)
    return PriceTable(schedules)


def price_key(model: str | None, table: Mapping[str, Price]) -> str | None:
    """The table key a model is priced by: the key it equals, or continues with a date."""
    if not model:
        return None
    if model in table:
        return model
    dated = _DATED.match(model)
    return dated.group(1) if dated and dated.group(1) in table else None


def price_for(
    model: str | None, table: Mapping[str, Price], on: date | None = None
) -> Price | None:
    """The price of a model on a day: the key it equals, or continues with ``-`` and a date.

    >>> table = price_table({"claude-opus-4": {"input": 15, "output": 75, "cache_read": 1.5,
    ...     "cache_write": 18.75}, "claude-opus-4-5": {"input": 5, "output": 25,
    ...     "cache_read": 0.5, "cache_write": 6.25}})
    >>> price_for("claude-opus-4-5-20251101", table).input
    5.0
    >>> price_for("claude-opus-4-20250514", table).input
    15.0
    >>> price_for("claude-opus-4-7", table) is None
    True
    """
    key = price_key(model, table)
    if key is None:
        return None
    if isinstance(table, PriceTable):
        return table.on(key, on)
    return table[key]


def cost_usd(counts: TokenCounts, price: Price) -> float:
    """USD for the counts at a price.

    >>> cost_usd(TokenCounts(1_000_000, 100_000, 2_000_000, 400_000),
    ...          Price(input=3, output=15, cache_read=0.3, cache_write=3.75))
    6.6
    """
    one_hour = min(counts.cache_creation_1h_input_tokens, counts.cache_creation_input_tokens)
    micro = (
        counts.input_tokens * price.input
        + counts.output_tokens * price.output
        + counts.cache_read_input_tokens * price.cache_read
        + (counts.cache_creation_input_tokens - one_hour) * price.cache_write
        + one_hour * price.one_hour_write
    )
    return round(micro / 1_000_000, 6)


# --- a session's calls, each at its own model ---------------------------------------------


@dataclass(frozen=True)
class PricedCall:
    """One model call as cost reads it: its model, what it was charged for as a response, and
    what it was charged for compacting (a server-side compaction's iterations, or a summary
    call of its own)."""

    model: str | None
    counts: TokenCounts
    compaction: TokenCounts = TokenCounts()
    calls: int = 1  # more than one: the sums of several calls of one model
    on: date | None = None  # the calls' date: the price in force then (None: the latest)


def call_of(model: str | None, usage: Usage) -> PricedCall:
    """A call from its usage: the ``compaction`` iterations are its compacting part.

    >>> from compaction.engine.messages import Iteration
    >>> call_of("m", Usage(input_tokens=10, output_tokens=2,
    ...         iterations=(Iteration("compaction", 5000, 800),))).compaction.total
    5800
    """
    return PricedCall(model, _counters(usage), compacting_counts(usage))


def replay_rule_call(model: str | None, context_tokens: int, output_tokens: int) -> PricedCall:
    """One call by the replay rule (:data:`REPLAY_RULE`): its whole context as input.

    >>> cost_usd(replay_rule_call("m", 1_000_000, 0).counts, Price(3, 15, 0.3, 3.75))
    3.0
    """
    return PricedCall(model, TokenCounts(context_tokens, output_tokens))


@dataclass(frozen=True)
class ModelCost:
    model: str
    calls: int
    usd: float | None  # None: the table has no price for it

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "calls": self.calls, "usd": self.usd}


@dataclass(frozen=True)
class CostBreakdown:
    """What a session's calls cost, each at its own model's price.

    ``usd`` sums the priced calls, compaction included (``compaction_usd`` is that part);
    a call whose model the table does not know is counted in ``unpriced_calls``, never
    guessed."""

    usd: float
    by_model: tuple[ModelCost, ...]
    compaction_usd: float
    unpriced_calls: int

    @property
    def calls(self) -> int:
        return sum(m.calls for m in self.by_model)

    @property
    def priced(self) -> bool:
        """Whether any call had a price (else there is no figure to show)."""
        return any(m.usd is not None for m in self.by_model)


def costs(calls: Iterable[PricedCall], table: Mapping[str, Price]) -> CostBreakdown:
    """Each call priced at its own model.

    >>> table = price_table({"opus": {"input": 15, "output": 75, "cache_read": 1.5,
    ...     "cache_write": 18.75}, "sonnet": {"input": 3, "output": 15, "cache_read": 0.3,
    ...     "cache_write": 3.75}})
    >>> b = costs([PricedCall("opus", TokenCounts(1_000_000), calls=2),
    ...            PricedCall("sonnet", TokenCounts(1_000_000)),
    ...            PricedCall("gpt-9", TokenCounts(1_000_000))], table)
    >>> b.usd, [(m.model, m.calls, m.usd) for m in b.by_model], b.unpriced_calls
    (18.0, [('opus', 2, 15.0), ('gpt-9', 1, None), ('sonnet', 1, 3.0)], 1)
    """
    order: list[str] = []
    spent: dict[str, float | None] = {}
    count: dict[str, int] = {}
    compaction = 0.0
    unpriced = 0
    for call in calls:
        model = call.model or "unknown"
        if model not in count:
            order.append(model)
            count[model] = 0
            spent[model] = 0.0
        count[model] += call.calls
        price = price_for(call.model, table, call.on)
        if price is None:
            unpriced += call.calls
            spent[model] = None
            continue
        part = cost_usd(call.compaction, price)
        compaction += part
        so_far = spent[model]
        if so_far is not None:
            spent[model] = so_far + cost_usd(call.counts, price) + part
    # Most calls first (the model the session ran on), then by name: a stable order.
    by_model = tuple(
        ModelCost(m, count[m], None if spent[m] is None else round(spent[m] or 0.0, 6))
        for m in sorted(order, key=lambda m: (-count[m], m))
    )
    usd = sum(m.usd for m in by_model if m.usd is not None)
    return CostBreakdown(round(usd, 6), by_model, round(compaction, 6), unpriced)


# --- the price of a compaction (DESIGN.md "Contracts added in the fourth step") -------------

REWORK_NOT_OBSERVABLE = "not observable in a replay"
PRICE_RULE = (
    "billed rule: the summary call as logged; the cache re-write = the first call after the "
    "boundary's cache writes, up to the new prefix's size, at their write rate less the read "
    "rate; the rework = the full price of each call a lost fact was needed again at, once; "
    "set against the tokens saved on every call until the next compaction, at the cache-read "
    "rate they would have been read at"
)

FULL_LABEL = "replay rule + re-writes"
FULL_RULE = (
    "the replay rule, summary calls included, plus the full price of each run's compactions: "
    "every new prefix written to the cache again at its write rate less the read rate "
    "(rework is not observable in a replay); what the advice weighs"
)


@dataclass(frozen=True)
class Response:
    """One model call as the price of a compaction reads it: its seq, its model and date, and
    what it was charged for (``None``: the trace reported no usage for it)."""

    seq: int
    model: str | None
    counts: TokenCounts | None
    on: date | None = None


@dataclass(frozen=True)
class Boundary:
    """One compaction: the seq of the first message after it, the context before and after,
    its own summary call (``compaction`` counts of a :class:`PricedCall`, or None when the
    harness did not log one) and the seqs its lost facts were needed again at.
    ``prefix_tokens`` is the new prefix as the harness counted it (its size after, which
    leaves out the system prompt and tools the cache already holds), the re-write's cap;
    None: ``tokens_after``."""

    seq: int
    tokens_before: int | None
    tokens_after: int | None
    summary_call: PricedCall | None = None
    needed_again: tuple[int, ...] = ()
    prefix_tokens: int | None = None


@dataclass(frozen=True)
class CompactionPrice:
    """What one compaction cost, beside what it saved (:data:`PRICE_RULE`).

    ``summary_call_usd`` is None when the trace holds no summary call (the total then counts
    the re-write and the rework only); ``rework_usd`` None in a replay (not observable)."""

    summary_call_usd: float | None
    cache_rewrite_usd: float
    rework_usd: float | None
    tokens_saved: int | None
    rework_seqs: tuple[int, ...]
    rewrite_tokens: int
    saved_usd: float | None  # the tokens saved, at each later call's cache-read rate
    calls_after: int  # model calls from the boundary to the next compaction or the end

    @property
    def total_usd(self) -> float:
        return round(
            (self.summary_call_usd or 0.0) + self.cache_rewrite_usd + (self.rework_usd or 0.0), 6
        )

    @property
    def rework_calls(self) -> int:
        return len(self.rework_seqs)

    def to_dict(self) -> dict[str, Any]:
        """The API shape (DESIGN.md), plus the seqs, the re-written tokens and the saving."""
        return {
            "summary_call_usd": self.summary_call_usd,
            "cache_rewrite_usd": self.cache_rewrite_usd,
            "rework_usd": self.rework_usd,
            "total_usd": self.total_usd,
            "tokens_saved": self.tokens_saved,
            "rework_calls": self.rework_calls,
            "rework_seqs": list(self.rework_seqs),
            "rewrite_tokens": self.rewrite_tokens,
            "tokens_saved_usd": self.saved_usd,
            "calls_after": self.calls_after,
        }


def rewrite_usd(written: int, one_hour: int, price: Price) -> float:
    """``written`` cache-creation tokens (``one_hour`` of them to the 1-hour cache) at their
    write rate, less what reading them from the cache would have cost.

    >>> rewrite_usd(1_000_000, 0, Price(3, 15, 0.3, 3.75))
    3.45
    """
    wrote = cost_usd(
        TokenCounts(cache_creation_input_tokens=written, cache_creation_1h_input_tokens=one_hour),
        price,
    )
    read = cost_usd(TokenCounts(cache_read_input_tokens=written), price)
    return round(wrote - read, 6)


def _first_call_at_or_after(seq: int, calls: Sequence[Response]) -> Response | None:
    return next((c for c in calls if c.seq >= seq), None)


def compaction_prices(
    calls: Sequence[Response],
    boundaries: Sequence[Boundary],
    table: Mapping[str, Price],
    *,
    rework_observable: bool = True,
) -> list[CompactionPrice | None]:
    """Each compaction's price from the calls around it (``calls`` in seq order), or None when
    the first call after it reported no usage or has no price.

    The calls until the next compaction are those from its seq to the next larger seq among
    ``boundaries`` (or the end). A need at a prompt (the user repeating a rule) is the first
    call after it; each call is priced once, whatever the number of facts it needed again.

    >>> table = {"m": Price(input=3, output=15, cache_read=0.3, cache_write=3.75)}
    >>> calls = [Response(1, "m", TokenCounts(10, 100, 90_000, 0)),
    ...          Response(3, "m", TokenCounts(10, 200, 5_000, 20_000)),
    ...          Response(5, "m", TokenCounts(10, 100, 25_000, 100))]
    >>> p = compaction_prices(calls, [Boundary(2, 90_010, 25_010, None, (5,))], table)[0]
    >>> p.cache_rewrite_usd, p.rework_usd, p.tokens_saved, p.rework_calls, p.total_usd
    (0.069, 0.009405, 130000, 1, 0.078405)
    """
    starts = sorted({b.seq for b in boundaries})
    out: list[CompactionPrice | None] = []
    for boundary in boundaries:
        end = next((s for s in starts if s > boundary.seq), None)
        window = [c for c in calls if c.seq >= boundary.seq and (end is None or c.seq < end)]
        first = window[0] if window else None
        first_price = price_for(first.model, table, first.on) if first and first.counts else None
        if first is None or first.counts is None or first_price is None:
            out.append(None)
            continue
        written = first.counts.cache_creation_input_tokens
        prefix = (
            boundary.prefix_tokens if boundary.prefix_tokens is not None else boundary.tokens_after
        )
        if prefix is not None:
            written = min(written, prefix)
        one_hour = min(first.counts.cache_creation_1h_input_tokens, written)
        summary: float | None = None
        if boundary.summary_call is not None:
            call = boundary.summary_call
            summary_price = price_for(call.model, table, call.on)
            if summary_price is not None:
                summary = cost_usd(call.compaction + call.counts, summary_price)
        rework_seqs: tuple[int, ...] = ()
        rework: float | None = None
        if rework_observable:
            named = {_first_call_at_or_after(seq, window) for seq in boundary.needed_again}
            found = sorted((c for c in named if c is not None), key=lambda c: c.seq)
            rework_seqs = tuple(c.seq for c in found)
            rework = 0.0
            for c in found:
                price = price_for(c.model, table, c.on) if c.counts else None
                if c.counts is not None and price is not None:
                    rework += cost_usd(c.counts, price)
            rework = round(rework, 6)
        saved_tokens: int | None = None
        saved_usd: float | None = None
        if boundary.tokens_before is not None and boundary.tokens_after is not None:
            dropped = boundary.tokens_before - boundary.tokens_after
            saved_tokens = dropped * len(window)
            saved = 0.0
            for c in window:
                price = price_for(c.model, table, c.on)
                if price is not None:
                    saved += cost_usd(TokenCounts(cache_read_input_tokens=dropped), price)
            saved_usd = round(saved, 6)
        out.append(
            CompactionPrice(
                summary_call_usd=summary,
                cache_rewrite_usd=rewrite_usd(written, one_hour, first_price),
                rework_usd=rework,
                tokens_saved=saved_tokens,
                rework_seqs=rework_seqs,
                rewrite_tokens=written,
                saved_usd=saved_usd,
                calls_after=len(window),
            )
        )
    return out


def modelled_rewrites_usd(
    new_prefixes: Iterable[int], price: Price, *, one_hour: bool = False
) -> float:
    """The cache re-writes of compactions nobody billed (a replay, or the observed run priced
    the same way): each new prefix written once at the 5-minute (or 1-hour) write rate, less
    the read rate.

    >>> modelled_rewrites_usd([1_000_000, 1_000_000], Price(3, 15, 0.3, 3.75))
    6.9
    """
    total = 0.0
    for tokens in new_prefixes:
        total += rewrite_usd(max(tokens, 0), max(tokens, 0) if one_hour else 0, price)
    return round(total, 6)
