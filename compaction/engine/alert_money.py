"""What the compaction alerts (storm, loop, thrash, repeated) say the compactions cost so far:
their full price when the calls around them carry usage (compaction/engine/pricing.py's rule),
else the priced compaction calls alone."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompactionsPrice:
    """The full price of a session's compactions so far (the money module's rule): their
    summary calls, the cache re-written after them and the rework they caused."""

    total_usd: float
    summary_calls_usd: float
    cache_rewrite_usd: float
    rework_usd: float
    priced: int  # compactions with a price (their calls carry usage)


def cost_line(
    price: CompactionsPrice | None, compaction_calls_usd: float | None, session_usd: float | None
) -> tuple[dict[str, float], str]:
    """What a compaction alert says the compactions cost so far: its numbers and its line."""
    if price is not None:
        numbers = {
            "compactions_price_usd": round(price.total_usd, 6),
            "summary_calls_usd": round(price.summary_calls_usd, 6),
            "cache_rewrite_usd": round(price.cache_rewrite_usd, 6),
            "rework_usd": round(price.rework_usd, 6),
        }
        plural = "s" if price.priced != 1 else ""
        line = (
            f"cost so far: ${price.total_usd:,.2f} for {price.priced} compaction{plural} "
            f"(summary calls ${price.summary_calls_usd:,.2f}, cache re-writes "
            f"${price.cache_rewrite_usd:,.2f}, rework ${price.rework_usd:,.2f})"
        )
    elif compaction_calls_usd is None:
        return {}, "cost so far: the compaction calls are not priced"
    else:
        numbers = {"compaction_calls_usd": round(compaction_calls_usd, 6)}
        line = f"cost so far: ${compaction_calls_usd:,.2f} in compaction calls"
    if session_usd is not None:
        numbers["session_usd"] = round(session_usd, 6)
        line += f", of ${session_usd:,.2f} for the session"
    return numbers, line
