"""Summarizers: the offline one, and the Anthropic ones through the real SDK over MockTransport."""

import json
from pathlib import Path

import httpx
import httpx2
import pytest

from compaction.engine.messages import CompactionBlock, Message, TextBlock, message_from_wire
from compaction.engine.summarizers import (
    SUMMARY_HEADER,
    SYSTEM_PROMPT,
    AnthropicSummarizer,
    ExtractiveSummarizer,
    ServerCompactionSummarizer,
    SummarizerError,
    Summary,
    SummaryError,
    apply_compaction_blocks,
    clear_tool_uses_edit,
    count_with_context_editing,
    parse_summary,
    server_compactions,
)
from compaction.engine.tokens import AnthropicCounter, billed_tokens, context_size
from tests.engine.builders import History

CORPUS = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "corpus"
    / "anthropic_messages_api"
    / "anthropic-sdk-python"
)

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


def message_response(text, *, input_tokens=1200, output_tokens=300):
    return {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


class Recorder:
    """A MockTransport handler answering from a script and keeping every request it saw."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        status, body = self.answers.pop(0)
        headers = {"retry-after-ms": "1"} if status >= 500 else {}
        return httpx.Response(status, json=body, headers=headers)

    def bodies(self):
        return [json.loads(r.content) for r in self.requests]


def history():
    h = History().user("Migrate billing to API v2. Do not change the public API.")
    h.tool("read_file", "def charge(amount): ...", path="billing/api.py")
    return h.add_final("Read the module.")


History.add_final = lambda self, text: self.assistant(text).messages


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


# --- Anthropic, through the SDK ------------------------------------------------------------------


def test_anthropic_summarizer_sends_our_prompt_and_parses_the_json_answer():
    handler = Recorder((200, message_response("```json\n" + json.dumps(GOOD) + "\n```")))
    summarizer = AnthropicSummarizer(
        api_key="test-key", http_client=httpx.Client(transport=httpx.MockTransport(handler))
    )
    result = summarizer.summarize(history())
    (request,) = handler.requests
    assert request.url.path == "/v1/messages"
    assert request.headers["authorization"] == "Bearer test-key"
    body = json.loads(request.content)
    assert body["model"] == "claude-sonnet-4-6"
    assert body["system"] == SYSTEM_PROMPT
    assert body["max_tokens"] == 4096
    prompt = body["messages"][0]["content"]
    assert "[0] user: Migrate billing to API v2. Do not change the public API." in prompt
    assert 'called read_file {"path": "billing/api.py"}' in prompt
    assert "tool result for toolu_0001: def charge(amount): ..." in prompt
    assert result.summary == Summary.from_dict(GOOD)
    assert result.cost is not None
    assert (result.cost.input_tokens, result.cost.output_tokens) == (
        1200,
        300,
    )
    assert result.attempts == 1


def test_anthropic_summarizer_retries_overloaded_and_server_errors():
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    broken = {"type": "error", "error": {"type": "api_error", "message": "Internal"}}
    handler = Recorder((529, overloaded), (500, broken), (200, message_response(json.dumps(GOOD))))
    summarizer = AnthropicSummarizer(
        api_key="k", http_client=httpx2.Client(transport=httpx2.MockTransport(_httpx2(handler)))
    )
    result = summarizer.summarize(history())
    assert len(handler.requests) == 3
    assert result.summary.goal == "Migrate billing to API v2"


def _httpx2(handler):
    """The same scripted handler behind an httpx2 transport (what the SDK speaks natively)."""

    def respond(request):
        response = handler(
            httpx.Request(
                request.method,
                str(request.url),
                headers=list(request.headers.raw),
                content=request.read(),
            )
        )
        return httpx2.Response(
            response.status_code, headers=list(response.headers.raw), content=response.content
        )

    return respond


def test_anthropic_summarizer_gives_up_after_the_sdk_retries():
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    handler = Recorder(*[(529, overloaded)] * 3)
    summarizer = AnthropicSummarizer(
        api_key="k", max_retries=2, http_client=httpx.Client(transport=httpx.MockTransport(handler))
    )
    import anthropic

    with pytest.raises(anthropic.APIStatusError):
        summarizer.summarize(history())
    assert len(handler.requests) == 3


def test_anthropic_summarizer_asks_again_after_a_malformed_json_answer():
    handler = Recorder(
        (
            200,
            message_response(
                '{"goal": "Migrate billing", "constraints": [', input_tokens=1000, output_tokens=50
            ),
        ),
        (200, message_response(json.dumps(GOOD), input_tokens=1100, output_tokens=280)),
    )
    summarizer = AnthropicSummarizer(
        api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(handler))
    )
    result = summarizer.summarize(history())
    _first, second = handler.bodies()
    assert len(second["messages"]) == 3
    assert second["messages"][1] == {
        "role": "assistant",
        "content": '{"goal": "Migrate billing", "constraints": [',
    }
    assert "rejected (answer: invalid JSON" in second["messages"][2]["content"]
    assert result.attempts == 2
    assert result.cost.input_tokens == 2100
    assert result.cost.output_tokens == 330


def test_anthropic_summarizer_fails_with_its_cost_when_json_never_validates():
    handler = Recorder(
        (200, message_response("no json here")), (200, message_response('{"goal": 7}'))
    )
    summarizer = AnthropicSummarizer(
        api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(handler))
    )
    with pytest.raises(SummarizerError) as exc:
        summarizer.summarize(history())
    assert "summary.goal: expected a string" in str(exc.value)
    assert exc.value.cost is not None
    assert exc.value.cost.input_tokens == 2400


def test_count_tokens_counter_calls_the_endpoint_with_our_messages():
    handler = Recorder((200, {"input_tokens": 4321}))
    counter = AnthropicCounter(
        model="claude-opus-4-6",
        api_key="k",
        system="Be brief.",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    assert counter.count(history()) == 4321
    (body,) = handler.bodies()
    assert handler.requests[0].url.path == "/v1/messages/count_tokens"
    assert body["model"] == "claude-opus-4-6"
    assert body["system"] == "Be brief."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user", "assistant"]
    assert body["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "toolu_0001",
        "name": "read_file",
        "input": {"path": "billing/api.py"},
    }


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
    final = sse_final_message(CORPUS / "compaction_response.txt")
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


def test_server_compaction_replay_sends_the_edit_and_reads_summary_and_cost():
    response = {
        "id": "msg_c",
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-6",
        "content": [
            {
                "type": "compaction",
                "content": "Goal: migrate billing. Do not change the public API.",
                "encrypted_content": "E",
            }
        ],
        "stop_reason": "compaction",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 20,
            "output_tokens": 900,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "iterations": [
                {
                    "type": "compaction",
                    "input_tokens": 160000,
                    "output_tokens": 900,
                    "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0,
                }
            ],
        },
    }
    handler = Recorder((200, response))
    summarizer = ServerCompactionSummarizer(
        api_key="k",
        trigger_tokens=60000,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    result = summarizer.summarize(history())
    request = handler.requests[0]
    body = json.loads(request.content)
    assert "compact-2026-01-12" in request.headers["anthropic-beta"]
    assert body["context_management"] == {
        "edits": [
            {
                "type": "compact_20260112",
                "trigger": {"type": "input_tokens", "value": 60000},
                "pause_after_compaction": True,
            }
        ]
    }
    assert body["messages"][-1] == {"role": "user", "content": "Continue."}
    assert result.text.endswith("Do not change the public API.")
    assert billed_tokens(result.cost) == 20 + 900 + 160000 + 900
    assert context_size(result.cost) == 20


def test_server_compaction_below_the_trigger_is_reported_not_faked():
    handler = Recorder((200, message_response("Sure, continuing.")))
    summarizer = ServerCompactionSummarizer(
        api_key="k", http_client=httpx.Client(transport=httpx.MockTransport(handler))
    )
    with pytest.raises(SummarizerError, match="did not compact"):
        summarizer.summarize(history())


def test_context_editing_count_sends_the_edit_and_reads_both_sizes():
    handler = Recorder(
        (200, {"input_tokens": 1200, "context_management": {"original_input_tokens": 5000}})
    )
    edit = clear_tool_uses_edit(trigger_tokens=3000, keep_tool_uses=1, clear_at_least=500)
    counted = count_with_context_editing(
        history(),
        edit,
        model="claude-opus-4-6",
        api_key="k",
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    request = handler.requests[0]
    assert request.url.path == "/v1/messages/count_tokens"
    assert "context-management-2025-06-27" in request.headers["anthropic-beta"]
    assert json.loads(request.content)["context_management"] == {
        "edits": [
            {
                "type": "clear_tool_uses_20250919",
                "trigger": {"type": "input_tokens", "value": 3000},
                "keep": {"type": "tool_uses", "value": 1},
                "clear_at_least": {"type": "input_tokens", "value": 500},
            }
        ]
    }
    assert (counted.original_input_tokens, counted.input_tokens, counted.cleared_tokens) == (
        5000,
        1200,
        3800,
    )
