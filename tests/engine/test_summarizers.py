"""Summarizers offline: the schema, the extractive one, and server compactions in a trace.

The Anthropic summarizers are specified in test_anthropic.py.
"""

import json

import pytest

from compaction.engine.messages import CompactionBlock, Message, TextBlock, message_from_wire
from compaction.engine.strategies import PLACEHOLDER, Policy, clear_tool_results
from compaction.engine.summarizers import (
    SUMMARY_HEADER,
    ExtractiveSummarizer,
    Summary,
    SummaryError,
    apply_compaction_blocks,
    parse_summary,
    server_compactions,
)
from tests.engine.builders import History
from tests.importers.corpus import CORPUS

SDK_RECORDINGS = CORPUS / "anthropic_messages_api" / "anthropic-sdk-python"

GOOD = {
    "goal": "Migrate billing to API v2",
    "constraints": ["do not change the public API"],
    "decisions": ["keep the endpoint names"],
    "done": ["internal client updated"],
    "current_state": "contract test fails in test_public_api.py:41",
    "next_steps": ["read the contract test"],
    "files_touched": ["billing/api.py (read)"],
    "errors": [],
}


# --- offline ----------------------------------------------------------------------------------


def test_extractive_summary_keeps_english_and_portuguese_constraints():
    h = History().user("Migrate billing. Do not change the public API. Use the v2 client.")
    h.assistant("I'll adapt only the internal client.")
    h.user("Nunca use float para dinheiro. Sempre rode os testes antes do commit.")
    h.tool("edit_file", "ok", file_path="billing/client.py", old_string="a", new_string="b")
    h.tool("run_tests", "FAILED test_public_api.py:41", is_error=True, command="pytest")
    h.assistant("Next I need to read the contract test.")
    s = ExtractiveSummarizer().summarize(h.messages).summary
    assert s.goal.startswith("Migrate billing.")
    assert s.constraints == (
        "Do not change the public API.",
        "Nunca use float para dinheiro.",
        "Sempre rode os testes antes do commit.",
    )
    assert "I'll adapt only the internal client." in s.decisions
    assert "billing/client.py (edit)" in s.files_touched
    assert "edited billing/client.py" in s.done
    assert s.errors == ("run_tests: FAILED test_public_api.py:41",)
    assert s.current_state == "Next I need to read the contract test."
    assert s.next_steps == ("Next I need to read the contract test.",)


def test_extractive_summary_folds_in_an_earlier_summary():
    earlier = Summary(
        goal="Ship v2", constraints=("never push to main",), files_touched=("a.py (read)",)
    )
    msgs = [
        Message(
            0, "user", (TextBlock(earlier.to_text()), TextBlock("Carry on. Only touch docs/."))
        ),
        Message(1, "assistant", (TextBlock("Done with docs."),)),
    ]
    s = ExtractiveSummarizer().summarize(msgs).summary
    assert s.goal == "Ship v2"
    assert s.constraints == ("never push to main", "Only touch docs/.")
    assert s.files_touched == ("a.py (read)",)


def test_summary_text_round_trips_through_parse_summary():
    s = Summary.from_dict(GOOD)
    assert s.to_text().startswith(SUMMARY_HEADER)
    assert parse_summary(s.to_text()) == s


def test_summary_schema_rejects_wrong_types_naming_the_field():
    with pytest.raises(SummaryError, match=r"summary.constraints\[0\]: expected a string"):
        Summary.from_dict({**GOOD, "constraints": [3]})
    with pytest.raises(SummaryError, match="summary: unknown keys mood"):
        Summary.from_dict({**GOOD, "mood": "good"})


# --- server-side compaction and context editing --------------------------------------------------


def sse_final_message(path):
    """Fold an SSE stream into the final message dict (enough for text and compaction blocks)."""
    message, blocks = None, []
    for line in path.read_text().splitlines():
        if not line.startswith("data: "):
            continue
        event = json.loads(line[6:])
        if event["type"] == "message_start":
            message = event["message"]
        elif event["type"] == "content_block_start":
            blocks.append(dict(event["content_block"]))
        elif event["type"] == "content_block_delta":
            delta, block = event["delta"], blocks[event["index"]]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            elif delta["type"] == "compaction_delta":
                block["content"] = (block.get("content") or "") + delta["content"]
                block["encrypted_content"] = delta.get("encrypted_content")
        elif event["type"] == "message_delta":
            message["usage"].update(event["usage"])
    message["content"] = blocks
    return message


def test_the_recorded_compaction_stream_yields_a_compaction_block_the_engine_reads():
    final = sse_final_message(SDK_RECORDINGS / "compaction_response.txt")
    m = message_from_wire(
        {"seq": 5, "role": "assistant", "content": final["content"], "usage": final["usage"]}
    )
    assert m.content[0] == CompactionBlock(
        "Earlier conversation summarized.", "EpwBCioIDxgCEAEYASJALd_opaque_compaction_payload"
    )
    history = [
        Message(4, "user", (TextBlock("a long past"),)),
        m,
        Message(6, "user", (TextBlock("go on"),)),
    ]
    assert [x.seq for x in apply_compaction_blocks(history)] == [5, 6]
    (observed,) = server_compactions(history)
    assert (observed.seq, observed.trigger, observed.summary) == (
        5,
        "server",
        "Earlier conversation summarized.",
    )


def test_an_extractive_summary_carries_no_narration_and_no_cleared_placeholder():
    h = History().user("Fix the rounding in billing/charge.py.")
    h.tool("run_tests", "FAILED test_charge.py:12 expected 10.01", is_error=True)
    h.assistant("Good catch! Let me check the config. Fixed the rounding in charge().")
    h.tool("run_tests", "boom: the runner crashed", is_error=True)
    h.assistant("Now I'll run the tests again:")
    cleared = clear_tool_results(h.messages, Policy(older_than=0)).messages
    assert any(PLACEHOLDER in m.text for m in cleared)  # the errors' outputs were cleared
    s = ExtractiveSummarizer().summarize(cleared).summary
    text = s.to_text()
    assert "content removed" not in text
    for narration in ("Let me", "Now I'll", "Good catch"):
        assert narration not in text
    assert s.current_state == "Fixed the rounding in charge()."
    assert "Fixed the rounding in charge()." in s.done
