"""The Anthropic adapter: the real SDK builds each request and parses each answer, over an
httpx2 MockTransport that plays the API."""

import json

import anthropic
import httpx2
import pytest

from compaction.engine.anthropic import (
    JUDGE_PROMPT,
    SYSTEM_PROMPT,
    AnthropicCounter,
    AnthropicJudge,
    AnthropicSummarizer,
    ServerCompactionSummarizer,
    clear_tool_uses_edit,
    count_with_context_editing,
)
from compaction.engine.evals import Probe, retention
from compaction.engine.messages import Message, TextBlock
from compaction.engine.summarizer_choice import summarizer_from_name
from compaction.engine.summarizers import (
    SummarizerError,
    Summary,
    SummaryError,
)
from compaction.engine.tokens import billed_tokens, context_size
from tests.engine.builders import History

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
        return httpx2.Response(status, json=body, headers=headers)

    def bodies(self):
        return [json.loads(r.content) for r in self.requests]


def mock_client(handler):
    """An httpx2 client (what the SDK speaks) whose transport is the scripted handler."""
    return httpx2.Client(transport=httpx2.MockTransport(handler))


def history():
    h = History().user("Migrate billing to API v2. Do not change the public API.")
    h.tool("read_file", "def charge(amount): ...", path="billing/api.py")
    return h.add_final("Read the module.")


History.add_final = lambda self, text: self.assistant(text).messages


# --- the summarizer --------------------------------------------------------------------------


def test_anthropic_summarizer_sends_our_prompt_and_parses_the_json_answer():
    handler = Recorder((200, message_response("```json\n" + json.dumps(GOOD) + "\n```")))
    summarizer = AnthropicSummarizer(api_key="test-key", http_client=mock_client(handler))
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


def test_a_policy_naming_an_anthropic_summarizer_gets_one_that_calls_the_api():
    handler = Recorder((200, message_response(json.dumps(GOOD))))
    summarizer = summarizer_from_name(
        "anthropic", api_key="k", model="claude-opus-4-6", http_client=mock_client(handler)
    )
    assert isinstance(summarizer, AnthropicSummarizer)
    assert summarizer.summarize(history()).summary == Summary.from_dict(GOOD)
    assert handler.bodies()[0]["model"] == "claude-opus-4-6"
    server = summarizer_from_name("server_compaction", api_key="k")
    assert isinstance(server, ServerCompactionSummarizer)
    with pytest.raises(ValueError, match=r"policy\.summarizer: unknown summarizer 'gpt'"):
        summarizer_from_name("gpt")


def test_anthropic_summarizer_retries_overloaded_and_server_errors():
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    broken = {"type": "error", "error": {"type": "api_error", "message": "Internal"}}
    handler = Recorder((529, overloaded), (500, broken), (200, message_response(json.dumps(GOOD))))
    summarizer = AnthropicSummarizer(api_key="k", http_client=mock_client(handler))
    result = summarizer.summarize(history())
    assert len(handler.requests) == 3
    assert result.summary.goal == "Migrate billing to API v2"


def test_anthropic_summarizer_gives_up_after_the_sdk_retries():
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    handler = Recorder(*[(529, overloaded)] * 3)
    summarizer = AnthropicSummarizer(api_key="k", max_retries=2, http_client=mock_client(handler))
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
    summarizer = AnthropicSummarizer(api_key="k", http_client=mock_client(handler))
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
    summarizer = AnthropicSummarizer(api_key="k", http_client=mock_client(handler))
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
        http_client=mock_client(handler),
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
        http_client=mock_client(handler),
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
    summarizer = ServerCompactionSummarizer(api_key="k", http_client=mock_client(handler))
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
        http_client=mock_client(handler),
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


# --- the retention judge -----------------------------------------------------------------------


def test_llm_judge_is_asked_only_about_facts_not_found_offline():
    before = [
        Message(3, "user", (TextBlock("Migrate billing. Do not change the public API."),)),
        Message(5, "user", (TextBlock("Use billing/api.py."),)),
    ]
    after = [
        Message(9, "user", (TextBlock("Migrate billing. Public signatures are frozen."),)),
        Message(10, "user", (TextBlock("Files: billing/api.py"),)),
    ]
    handler = Recorder((200, message_response('{"kept": [true]}', input_tokens=300)))
    judge = AnthropicJudge(api_key="test-key", http_client=mock_client(handler))
    report = retention(
        before, after, probes=[Probe("do not change the public API", 3)], judge=judge
    )

    (request,) = handler.requests
    body = json.loads(request.content)
    assert body["system"] == JUDGE_PROMPT
    asked = body["messages"][0]["content"].split("<facts>")[1]
    # the probe's auto-extracted copy is not asked twice; what matched offline is not asked
    assert asked.strip().splitlines() == ["1. do not change the public API", "</facts>"]
    assert [(i.fact.kind, i.kept, i.method) for i in report.items] == [
        ("probe", True, "judge"),
        ("task", True, "containment"),
        ("path", True, "containment"),
    ]
    assert report.items[0].evidence.startswith("the judge found it")
    assert report.items[2].evidence == "Files: billing/api.py"
    assert judge.cost.input_tokens == 300


def test_llm_judge_answer_of_the_wrong_shape_is_an_error():
    handler = Recorder((200, message_response('{"kept": [true]}')))
    judge = AnthropicJudge(api_key="test-key", http_client=mock_client(handler))
    with pytest.raises(SummaryError, match="judge: expected 2 booleans under 'kept'"):
        judge.judge(["a", "b"], "context")


def test_the_analysis_asks_the_judge_what_it_cannot_decide_and_records_its_cost():
    from compaction.engine import analysis
    from compaction.engine.messages import ObservedCompaction

    messages = [
        Message(0, "user", (TextBlock("Migrate billing. Do not change the public API."),)),
        Message(1, "assistant", (TextBlock("Working on it."),)),
        Message(2, "user", (TextBlock("Go on."),)),
    ]
    paraphrase = ObservedCompaction(
        seq=3,
        trigger="auto",
        summary="Goal: migrate billing. Public signatures stay frozen.",
        replaced_from=0,
        replaced_to=2,
    )
    handler = Recorder((200, message_response('{"kept": [true]}', input_tokens=410)))
    judge = AnthropicJudge(api_key="test-key", http_client=mock_client(handler))

    (span,) = analysis.analyse(messages, [paraphrase], judge=judge).spans

    (request,) = handler.requests
    assert "Do not change the public API" in json.loads(request.content)["messages"][0]["content"]
    judged = [i for i in span.retention.items if i.method == "judge"]
    assert [(i.fact.kind, i.kept) for i in judged] == [("constraint", True)]
    assert span.details()["judge_cost"]["input_tokens"] == 410
    # offline, the same span has no judge cost and the paraphrase reads as lost
    (offline,) = analysis.analyse(messages, [paraphrase]).spans
    assert "judge_cost" not in offline.details()
    assert [f.kind for f in offline.retention.lost] == ["constraint"]


def test_a_replay_judged_by_the_llm_reports_what_the_judge_cost():
    from compaction.engine import session_replay
    from compaction.engine.messages import messages_from_wire
    from compaction.engine.strategies import Policy
    from tests.engine.builders import coding_session_messages

    messages = messages_from_wire(coding_session_messages(10, tool_chars=8000))
    handler = Recorder()

    def answer(request):
        asked = json.loads(request.content)["messages"][0]["content"].split("<facts>")[1]
        facts = [line for line in asked.strip().splitlines() if line[:1].isdigit()]
        handler.requests.append(request)
        return httpx2.Response(
            200, json=message_response(json.dumps({"kept": [False] * len(facts)}), input_tokens=100)
        )

    judge = AnthropicJudge(api_key="test-key", http_client=mock_client(answer))
    policy = Policy(soft_limit=6000, hard_limit=9000, keep_last=2, stages=("summarize",))
    # a probe no summary states: the offline check cannot find it, so the judge is asked
    probes = [Probe("Invoices stay in euros", 0)]
    out = session_replay.replay_session(messages, [], policy, probes=probes, judge=judge)

    assert handler.requests, "the probe was left to the judge"
    assert out.evals["judge_cost"]["input_tokens"] == 100 * len(handler.requests)
    assert out.evals["lost_facts"] == ["Invoices stay in euros"]  # the judge said so too
    assert (
        "judge_cost" not in session_replay.replay_session(messages, [], policy, probes=probes).evals
    )
