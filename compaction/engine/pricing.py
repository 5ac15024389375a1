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
from collections.abc import Iterable, Iterator, Mapping
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


def counts_of(usage: Usage) -> TokenCounts:
    """A call's charged tokens: its counters plus its non-``message`` iterations (a
    server-side compaction), as ``tokens.billed_tokens`` counts them.

    >>> from compaction.engine.messages import Iteration
    >>> counts_of(Usage(input_tokens=10, output_tokens=2,
    ...                 iterations=(Iteration("compaction", 5000, 800),))).total
    5812
    """
    return _counters(usage) + _compacting_counts(usage)


def _counters(u: Usage | Iteration) -> TokenCounts:
    return TokenCounts(
        u.input_tokens,
        u.output_tokens,
        u.cache_read_input_tokens,
        u.cache_creation_input_tokens,
        u.cache_creation_1h_input_tokens if isinstance(u, Usage) else 0,
    )


def _compacting_counts(usage: Usage) -> TokenCounts:
    """The non-``message`` iterations of a call (a server-side compaction), summed."""
    total = TokenCounts()
    for it in usage.iterations:
        if it.type != "message":
            total = total + _counters(it)
    return total


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
    return PricedCall(model, _counters(usage), _compacting_counts(usage))


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
