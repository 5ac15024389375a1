"""Cost in money: the arithmetic of a price table, and which entry a model takes."""

from __future__ import annotations

import pytest

from compaction.engine.messages import Iteration, Usage
from compaction.engine.pricing import (
    Price,
    PriceTableError,
    TokenCounts,
    cost_usd,
    counts_from_wire,
    counts_of,
    price_for,
    price_table,
)

SONNET = {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}
OPUS_4 = {"input": 15, "output": 75, "cache_read": 1.5, "cache_write": 18.75}


def test_each_kind_of_token_is_charged_at_its_own_rate() -> None:
    price = Price(input=3, output=15, cache_read=0.3, cache_write=3.75)
    assert cost_usd(TokenCounts(input_tokens=1_000_000), price) == 3.0
    assert cost_usd(TokenCounts(output_tokens=1_000_000), price) == 15.0
    assert cost_usd(TokenCounts(cache_read_input_tokens=1_000_000), price) == 0.3
    assert cost_usd(TokenCounts(cache_creation_input_tokens=1_000_000), price) == 3.75
    # a real Claude Code call: 3 input, 17,842 cached, 121,689 written to the cache, 8 out
    assert cost_usd(TokenCounts(3, 8, 17_842, 121_689), price) == pytest.approx(
        (3 * 3 + 8 * 15 + 17_842 * 0.3 + 121_689 * 3.75) / 1e6
    )


def test_a_server_compaction_iteration_is_charged_with_its_call() -> None:
    usage = Usage(
        input_tokens=12,
        output_tokens=9,
        iterations=(Iteration("compaction", 150_000, 2_000), Iteration("message", 2_500, 9)),
    )
    assert counts_of(usage) == TokenCounts(150_012, 2_009, 0, 0)


def test_a_dated_model_takes_its_family_price_and_a_newer_version_takes_none() -> None:
    table = price_table({"claude-sonnet-4-5": SONNET, "claude-opus-4": OPUS_4})
    assert price_for("claude-sonnet-4-5", table) == table["claude-sonnet-4-5"]
    assert price_for("claude-sonnet-4-5-20250929", table) == table["claude-sonnet-4-5"]
    assert price_for("claude-opus-4-20250514", table) == table["claude-opus-4"]
    assert price_for("claude-opus-4-7", table) is None  # not Opus 4's price by accident
    assert price_for("sonnet", table) is None
    assert price_for(None, table) is None


@pytest.mark.parametrize(
    "entry",
    [{"input": 3}, {**SONNET, "output": -1}, {**SONNET, "cache_read": "0.3"}, [3, 15, 0.3, 3.75]],
)
def test_a_price_table_entry_must_be_four_non_negative_numbers(entry: object) -> None:
    with pytest.raises(PriceTableError):
        price_table({"m": entry})


def test_usage_from_a_trace_is_read_defensively() -> None:
    raw = {"input_tokens": 5, "output_tokens": "7", "cache_read_input_tokens": -2}
    assert counts_from_wire(raw) == TokenCounts(5, 0, 0, 0)
    assert counts_from_wire(None) == TokenCounts()
