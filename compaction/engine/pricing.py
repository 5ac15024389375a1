"""Cost in money: token counts times a per-model price table (USD per million tokens).

The table lives in settings (``MODEL_PRICES``); this module only does the arithmetic, so it
is the same for a session, a span or a replay. A model is priced by the table key it equals,
or that it continues with a date (``claude-sonnet-4-5-20250929`` takes ``claude-sonnet-4-5``;
``claude-opus-4-7`` does not take ``claude-opus-4``): a model the table does not know has no
cost rather than a guessed one.

Cache writes are priced at the 5-minute rate: traces report one cache-creation count, not its
split between the 5-minute and the 1-hour cache (which costs more).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from compaction.engine.messages import Iteration, Usage

PRICE_FIELDS = ("input", "output", "cache_read", "cache_write")
_DATED = re.compile(r"^(.+?)-\d{8}(?:-.*)?$")


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


@dataclass(frozen=True)
class TokenCounts:
    """What one or more calls were charged for, by kind."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def __add__(self, other: TokenCounts) -> TokenCounts:
        return TokenCounts(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
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
        u.input_tokens, u.output_tokens, u.cache_read_input_tokens, u.cache_creation_input_tokens
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
    """Counts from a usage mapping as traces write it; anything unreadable counts 0."""
    if not isinstance(raw, Mapping):
        return TokenCounts()
    return TokenCounts(
        _count(raw, "input_tokens"),
        _count(raw, "output_tokens"),
        _count(raw, "cache_read_input_tokens"),
        _count(raw, "cache_creation_input_tokens"),
    )


class PriceTableError(ValueError):
    """A price table entry that is not four non-negative numbers."""


def price_table(raw: Mapping[str, Any]) -> dict[str, Price]:
    """Validate a settings table ``{model: {input, output, cache_read, cache_write}}``.

    >>> price_table({"m": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}})
    {'m': Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)}
    """
    table: dict[str, Price] = {}
    for model, entry in raw.items():
        if not isinstance(entry, Mapping):
            raise PriceTableError(f"{model}: needs {', '.join(PRICE_FIELDS)}")
        values = []
        for name in PRICE_FIELDS:
            value = entry.get(name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise PriceTableError(f"{model}.{name}: a price in USD per million tokens")
            values.append(float(value))
        table[str(model)] = Price(*values)
    return table


def price_for(model: str | None, table: Mapping[str, Price]) -> Price | None:
    """The price of a model: the key it equals, or continues with ``-`` and a date.

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
    if not model:
        return None
    if model in table:
        return table[model]
    dated = _DATED.match(model)
    return table.get(dated.group(1)) if dated else None


def cost_usd(counts: TokenCounts, price: Price) -> float:
    """USD for the counts at a price.

    >>> cost_usd(TokenCounts(1_000_000, 100_000, 2_000_000, 400_000),
    ...          Price(input=3, output=15, cache_read=0.3, cache_write=3.75))
    6.6
    """
    micro = (
        counts.input_tokens * price.input
        + counts.output_tokens * price.output
        + counts.cache_read_input_tokens * price.cache_read
        + counts.cache_creation_input_tokens * price.cache_write
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


def call_of(model: str | None, usage: Usage) -> PricedCall:
    """A call from its usage: the ``compaction`` iterations are its compacting part.

    >>> from compaction.engine.messages import Iteration
    >>> call_of("m", Usage(input_tokens=10, output_tokens=2,
    ...         iterations=(Iteration("compaction", 5000, 800),))).compaction.total
    5800
    """
    return PricedCall(model, _counters(usage), _compacting_counts(usage))


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
        price = price_for(call.model, table)
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
