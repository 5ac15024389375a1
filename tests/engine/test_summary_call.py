"""The summary call of a compaction: matching it, reading its cost, doubting its output count."""

from __future__ import annotations

from compaction.engine.summary_call import (
    MATCH_WINDOW_MS,
    CallRef,
    Match,
    SummaryCall,
    match_summary_call,
    output_tokens_note,
    summary_call_from_record,
)

FIRST = "2026-02-12T10:00:00.000Z"
SECOND = "2026-02-12T11:00:00.000Z"


def test_the_call_whose_prompt_points_at_the_boundary_wins_over_a_nearer_one() -> None:
    calls = [
        CallRef("near", None, "2026-02-12T09:59:59.900Z"),
        CallRef("linked", "u-1", "2026-02-12T09:59:30.000Z"),
    ]
    found = match_summary_call(logical_parent_uuid="u-1", timestamp=FIRST, calls=calls)
    assert found == Match("linked", "uuid", 30_000)


def test_without_uuids_each_boundary_takes_the_call_that_ended_just_before_it() -> None:
    calls = [
        CallRef("one", None, "2026-02-12T09:59:59.600Z"),
        CallRef("two", None, "2026-02-12T10:59:59.600Z"),
    ]
    claimed: set[str] = set()
    first = match_summary_call(logical_parent_uuid=None, timestamp=FIRST, calls=calls)
    assert first == Match("one", "time", 400)
    claimed.add(first.key)
    second = match_summary_call(
        logical_parent_uuid=None, timestamp=SECOND, calls=calls, claimed=claimed
    )
    assert second == Match("two", "time", 400)


def test_a_claimed_call_serves_no_second_compaction() -> None:
    calls = [CallRef("one", None, "2026-02-12T09:59:59.600Z")]
    assert (
        match_summary_call(logical_parent_uuid=None, timestamp=FIRST, calls=calls, claimed={"one"})
        is None
    )


def test_a_boundary_whose_linked_call_is_taken_borrows_none_by_time() -> None:
    calls = [
        CallRef("linked", "u-1", "2026-02-12T09:59:59.000Z"),
        CallRef("other", None, "2026-02-12T09:59:59.500Z"),
    ]
    found = match_summary_call(
        logical_parent_uuid="u-1", timestamp=FIRST, calls=calls, claimed={"linked"}
    )
    assert found is None


def test_uuids_that_link_nothing_fall_back_to_time() -> None:
    calls = [CallRef("call", "absent-from-the-transcript", "2026-02-12T09:59:59.600Z")]
    found = match_summary_call(logical_parent_uuid="u-9", timestamp=FIRST, calls=calls)
    assert found == Match("call", "time", 400)


def test_calls_outside_the_window_or_after_the_boundary_are_not_matched() -> None:
    too_early = CallRef("early", None, "2026-02-12T09:58:59.000Z")
    too_late = CallRef("late", None, "2026-02-12T10:00:05.000Z")
    undated = CallRef("undated", None, None)
    assert MATCH_WINDOW_MS < 61_000
    for call in (too_early, too_late, undated):
        assert match_summary_call(logical_parent_uuid=None, timestamp=FIRST, calls=[call]) is None


def test_the_cost_is_read_from_usage_and_hostile_values_count_as_nothing() -> None:
    call = summary_call_from_record(
        {
            "usage": {
                "input_tokens": "3",
                "cache_read_input_tokens": -5,
                "cache_creation_input_tokens": 1000,
                "output_tokens": True,
            },
            "duration_ms": 1500,
        }
    )
    assert call == SummaryCall(context_tokens=1000, output_tokens=0, duration_ms=1500)
    assert call.billed_tokens == 1000
    assert summary_call_from_record("not a mapping") is None
    assert summary_call_from_record({"usage": [1, 2]}) is None
    backwards = summary_call_from_record({"usage": {}, "started_at": SECOND, "finished_at": FIRST})
    assert backwards == SummaryCall(0, 0, None)


def test_an_output_count_is_doubted_only_when_no_tokenizer_could_produce_it() -> None:
    assert output_tokens_note(output_tokens=6, summary_chars=14_915) is not None
    assert output_tokens_note(output_tokens=1_243, summary_chars=14_915) is None  # 12 chars/token
    assert output_tokens_note(output_tokens=1_242, summary_chars=14_915) is not None
    assert output_tokens_note(output_tokens=0, summary_chars=120) is None  # too short to judge
