"""The next-compaction forecast: rate, threshold basis, and its past accuracy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from compaction.engine.forecast import (
    RECENT_CALLS,
    Forecast,
    ForecastCheck,
    ForecastPoint,
    Threshold,
    forecast_checks,
    forecast_next,
    threshold_for,
)

T0 = datetime(2026, 11, 2, 10, 0, tzinfo=UTC)
WINDOW = Threshold(200_000, "window")


def climb(start: int, steps: list[int], *, seq0: int = 0, gap_s: float = 30.0):
    tokens, points = start, []
    for i, step in enumerate([0, *steps]):
        tokens += step
        points.append(ForecastPoint(seq0 + 2 * i, tokens, T0 + timedelta(seconds=gap_s * i)))
    return points


def test_forecast_counts_calls_and_minutes_at_the_recent_rate() -> None:
    points = climb(40_000, [5_000] * 4)  # 60,000 after four calls, 30 s apart
    made = forecast_next(points, threshold=Threshold(167_000, "harness_default"))
    # 107,000 left at 5,000 a call: 21.4, so 22 calls; 22 x 30 s = 11 min
    assert made == Forecast(22, 11.0, 167_000, "harness_default")


def test_the_rate_is_the_mean_growth_so_a_large_tool_result_counts() -> None:
    points = climb(40_000, [5_000, 5_000, 80_000, 5_000, 5_000])  # 100,000 in five calls
    made = forecast_next(points, threshold=WINDOW)
    assert made is not None
    assert made.calls_to_compaction == (200_000 - 140_000) // 20_000


def test_only_the_recent_calls_set_the_rate() -> None:
    slow_then_fast = climb(20_000, [500] * 30 + [4_000] * RECENT_CALLS)
    made = forecast_next(slow_then_fast, threshold=WINDOW)
    assert made is not None
    now = 20_000 + 500 * 30 + 4_000 * RECENT_CALLS
    assert made.calls_to_compaction == -(-(200_000 - now) // 4_000)


def test_the_rate_is_measured_since_the_last_compaction_only() -> None:
    before = climb(100_000, [20_000] * 3)  # fast climb, then compacted at seq 8
    after = climb(30_000, [2_000] * 3, seq0=8)
    made = forecast_next(before + after, threshold=WINDOW, compaction_seqs=[8])
    assert made is not None
    assert made.calls_to_compaction == (200_000 - 36_000) // 2_000


def test_a_drop_the_trace_did_not_report_starts_a_new_climb() -> None:
    before = climb(100_000, [20_000] * 3)
    after = climb(30_000, [2_000] * 3, seq0=8)
    made = forecast_next(before + after, threshold=WINDOW)
    assert made is not None
    assert made.calls_to_compaction == 82


def test_no_forecast_with_too_few_calls_or_a_flat_context() -> None:
    assert forecast_next(climb(40_000, [5_000]), threshold=WINDOW) is None
    assert forecast_next(climb(40_000, [0, 0, 0]), threshold=WINDOW) is None
    assert forecast_next(climb(40_000, [-1_000, -1_000, -1_000]), threshold=WINDOW) is None


def test_no_minutes_without_timestamps_and_zero_calls_past_the_threshold() -> None:
    points = [ForecastPoint(i, 150_000 + 10_000 * i) for i in range(4)]
    assert forecast_next(points, threshold=WINDOW) == Forecast(2, None, 200_000, "window")
    over = [ForecastPoint(i, 195_000 + 10_000 * i) for i in range(3)]
    made = forecast_next(over, threshold=WINDOW)
    assert made is not None
    assert made.calls_to_compaction == 0


def test_threshold_prefers_declared_policy_then_harness_then_window() -> None:
    declared = {"compaction_policy": {"soft_limit": 90_000, "hard_limit": 120_000}}
    assert threshold_for(metadata=declared, agent="claude-code", window=200_000) == Threshold(
        120_000, "declared_policy", "declared policy"
    )
    assert threshold_for(metadata={}, agent="claude-code", window=200_000).tokens == 167_000
    assert threshold_for(metadata={}, agent="codex", window=272_000).basis == "harness_default"
    assert threshold_for(metadata={}, agent="billing-bot", window=128_000) == Threshold(
        128_000, "window", "context window"
    )


def test_accuracy_compares_the_forecast_ten_calls_before_with_the_calls_that_followed() -> None:
    # 3,000 a call, then 6,000 a call for the last six before the compaction at seq 32
    first = climb(110_000, [3_000] * 9 + [6_000] * 6)
    second = climb(40_000, [5_000] * 4, seq0=32)
    checks = forecast_checks(
        first + second, threshold=Threshold(167_000, "harness_default"), compaction_seqs=[32]
    )
    # made at call 5 (125,000): 42,000 left at 3,000 a call = 14; ten calls followed
    assert checks == [ForecastCheck(seq=32, predicted_calls=14, actual_calls=10)]


def test_accuracy_lists_a_compaction_with_no_forecast_possible_before_it() -> None:
    points = climb(100_000, [0, 0, 0]) + climb(30_000, [1_000] * 3, seq0=8)
    checks = forecast_checks(points, threshold=WINDOW, compaction_seqs=[8])
    assert checks == [ForecastCheck(seq=8, predicted_calls=None, actual_calls=1)]
