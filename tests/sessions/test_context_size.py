"""One rule for a call's context size, wherever it is shown (DESIGN.md "Two token series").

On a call whose usage reports compaction iterations, the top-level counters add up several
sampling steps; the context the model saw is the last ``message`` iteration. Iterations count
in billed tokens only.
"""

from __future__ import annotations

from compaction.engine.messages import message_from_wire
from compaction.engine.tokens import observed_curve
from sessions.importers.calls import context_tokens
from sessions.models import Message

USAGE = {
    "input_tokens": 150_000,
    "output_tokens": 1_200,
    "cache_read_input_tokens": 30_000,
    "cache_creation_input_tokens": 0,
    "iterations": [
        {"type": "compaction", "input_tokens": 148_000, "output_tokens": 1_000},
        {"type": "message", "input_tokens": 2_000, "cache_read_input_tokens": 28_000},
    ],
}
ONE_RIGHT_ANSWER = 30_000  # the last message iteration, never the 180,000 top-level sum


def test_the_stored_message_and_the_curve_give_the_same_context_size() -> None:
    row = Message(
        seq=1,
        role="assistant",
        content=[{"type": "text", "text": "done"}],
        input_tokens=USAGE["input_tokens"],
        output_tokens=USAGE["output_tokens"],
        cache_read_input_tokens=USAGE["cache_read_input_tokens"],
        cache_creation_input_tokens=USAGE["cache_creation_input_tokens"],
        iterations=USAGE["iterations"],
    )
    wire = {"seq": 1, "role": "assistant", "content": row.content, "usage": USAGE}
    [point] = observed_curve([message_from_wire(wire)])

    assert row.context_tokens == ONE_RIGHT_ANSWER
    assert point.context_tokens == ONE_RIGHT_ANSWER
    assert context_tokens(USAGE) == ONE_RIGHT_ANSWER
    assert point.billed_tokens > 180_000  # the compaction iteration is billed, not seen


def test_without_iterations_context_is_input_plus_both_cache_counters() -> None:
    row = Message(
        seq=1,
        role="assistant",
        content=[],
        input_tokens=3,
        output_tokens=90,
        cache_read_input_tokens=20_000,
        cache_creation_input_tokens=500,
    )
    assert row.context_tokens == 20_503


def test_a_message_without_reported_usage_has_no_context_size() -> None:
    assert Message(seq=0, role="user", content=[]).context_tokens is None
