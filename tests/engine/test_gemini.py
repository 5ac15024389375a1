"""The pure Gemini CLI chat reader: the three forms, each rule on a small file, hostile input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compaction.engine import gemini
from compaction.engine.messages import (
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    check_pairs,
    is_call,
)
from compaction.engine.tokens import context_size, observed_curve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gemini"
SINGLE = FIXTURES / "session-2026-04-01T11-11-5f0c2a7e.json"
LINES = FIXTURES / "session-2026-05-02T09-00-9a8b7c6d.jsonl"
CHECKPOINT = FIXTURES / "checkpoint-tests.json"


def chat(*messages: dict[str, Any], **meta: Any) -> bytes:
    return json.dumps({"sessionId": "s", "projectHash": "h", **meta, "messages": messages}).encode()


def reply(mid: str, tokens: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": mid, "type": "gemini", "content": "ok", **extra}
    if tokens is not None:
        out["tokens"] = tokens
    return out


def test_single_json_calls_context_and_tool_status() -> None:
    raw = json.loads(SINGLE.read_bytes())
    r = gemini.parse_chat_bytes(SINGLE.read_bytes())
    assert r.form == "json"
    assert r.session_id == raw["sessionId"]
    # by reading the file: a call is a gemini message with tokens; three of them
    expected = [m["tokens"] for m in raw["messages"] if m["type"] == "gemini" and "tokens" in m]
    calls = [m for m in r.messages if m.usage is not None]
    assert r.calls == len(calls) == len(expected) == 3
    # context = input (cached inside it) + tool prompt, counted once
    assert [context_size(m.usage) for m in calls if m.usage] == [
        t["input"] + t["tool"] for t in expected
    ]
    assert [m.usage.output_tokens for m in calls if m.usage] == [
        t["output"] + t["thoughts"] for t in expected
    ]
    assert r.tool_calls == {"error": 1, "success": 1}
    results = [b for m in r.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert [(b.tool_use_id, b.is_error) for b in results] == [("c1", True), ("c2", False)]
    assert check_pairs(r.messages) == []
    assert any(isinstance(b, ThinkingBlock) for b in r.messages[1].content)
    # the model named per message when it is not the session's first
    assert r.models == ["gemini-2.5-pro", "gemini-2.5-flash"]
    assert r.messages[-1].model == "gemini-2.5-flash"
    assert r.ignored == {"info message": 1}


def test_the_compression_takes_the_figures_gemini_reported() -> None:
    r = gemini.parse_chat_bytes(SINGLE.read_bytes())
    assert len(r.compactions) == 1
    c = r.compactions[0]
    assert (c.tokens_before, c.tokens_after) == (612012, 41230)
    assert (c.tokens_before_source, c.tokens_after_source) == ("reported", "reported")
    assert r.messages[c.seq].content[0].text.startswith("<state_snapshot>")  # type: ignore[union-attr]
    assert c.summary_seq == c.seq
    assert c.trigger == "auto"  # 612012 of 1048576 is more than half
    assert c.trigger_basis.startswith("inferred:")


def test_a_snapshot_alone_is_sized_by_the_calls_around_it() -> None:
    r = gemini.parse_chat_bytes(
        chat(
            {"id": "u", "type": "user", "content": "hi"},
            reply("a", {"input": 100_000, "cached": 0, "output": 1}),
            {"id": "s", "type": "user", "content": "<state_snapshot>x</state_snapshot>"},
            reply("b", {"input": 9_000, "cached": 0, "output": 1}),
        )
    )
    (c,) = r.compactions
    assert (c.tokens_before, c.tokens_after) == (100_000, 9_000)
    assert (c.tokens_before_source, c.tokens_after_source) == ("last_call", "next_call")
    assert c.trigger == "manual"  # 10 % of the window: /compress


def test_reported_figures_without_a_snapshot_still_make_a_compaction() -> None:
    r = gemini.parse_chat_bytes(
        chat(
            {
                "id": "i",
                "type": "info",
                "content": "Chat history compressed from 1,000 to 200 tokens.",
            }
        )
    )
    (c,) = r.compactions
    assert (c.tokens_before, c.tokens_after, c.seq) == (1000, 200, 0)


def test_json_lines_rewrites_rewinds_and_metadata() -> None:
    r = gemini.parse_chat_bytes(LINES.read_bytes())
    assert r.form == "jsonl"
    assert r.session_id == "9a8b7c6d-2222-4e5f-8a9b-0c1d2e3f4a5b"
    # g1 written twice (tokens added) counts once; u2 and g3 were rewound
    assert r.calls == 3
    assert r.rewound == 2
    texts = [b.text for m in r.messages for b in m.content if hasattr(b, "text")]
    assert "delete them" not in texts
    assert r.tool_calls == {"success": 1}
    uses = [b for m in r.messages for b in m.content if isinstance(b, ToolUseBlock)]
    assert [u.name for u in uses] == ["list_directory"]
    assert r.meta["summary"] == "List and inspect files"
    assert r.ended_at == "2026-05-02T09:02:02.000Z"


def test_a_set_of_messages_replaces_the_history() -> None:
    lines = [
        {"sessionId": "s", "projectHash": "h"},
        {"id": "a", "type": "user", "content": "old"},
        {"$set": {"messages": [{"id": "n", "type": "user", "content": "<state_snapshot>s"}]}},
        {"id": "b", "type": "gemini", "content": "x", "tokens": {"input": 50, "output": 1}},
    ]
    r = gemini.parse_chat_bytes("\n".join(json.dumps(x) for x in lines).encode())
    assert [m.role for m in r.messages] == ["user", "assistant"]
    assert len(r.compactions) == 1
    assert r.compactions[0].tokens_after == 50


def test_checkpoint_history() -> None:
    r = gemini.parse_chat_bytes(CHECKPOINT.read_bytes())
    assert r.form == "checkpoint"
    assert r.calls == 0  # a checkpoint keeps no token counts
    assert [m.role for m in r.messages] == ["user", "assistant"] * 3
    assert check_pairs(r.messages) == []
    wrapped = gemini.parse_chat_bytes(
        json.dumps({"history": json.loads(CHECKPOINT.read_bytes())}).encode()
    )
    assert len(wrapped.messages) == len(r.messages)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b'{"sessionId":"s","projectHash":"h"}\n{oops\n', "line 2: not JSON"),
        (b'{"sessionId":"s","projectHash":"h"}\n[1]\n', "line 2: not a JSON object"),
        (b'{"id":"a","type":"user","content":"x"}\n', "no sessionId"),
        (chat({"id": "a", "type": 3}), "messages[0]: type is missing or not a string"),
        (chat(reply("a", "many")), "messages[0].tokens: not an object"),  # type: ignore[arg-type]
        (chat(reply("a", {"input": "12"})), "messages[0].tokens.input: not a whole number"),
        (
            chat(reply("a", {"input": 10**30})),
            "messages[0].tokens.input: 100000... (31 digits) is out of range",
        ),
        (chat(reply("a", {"output": -5})), "out of range"),
        (b'{"sessionId":"s","projectHash":"h","messages":"no"}', "messages: not a list"),
        (b"[1, 2]", "history[0]: not a {role, parts} object"),
        (b'{"sessionId":"s","projectHash":"h"}\n{"$set": 5}\n', "line 2: $set: not an object"),
        (b'{"sessionId":"s","projectHash":"h"}\n\xff\xfe\n', "line 2: not UTF-8"),
        (b"[" * 100_000, "nested too deeply"),
    ],
)
def test_hostile_input_is_refused_naming_the_place(data: bytes, error: str) -> None:
    with pytest.raises(gemini.GeminiError) as info:
        gemini.parse_chat_bytes(data)
    assert error in str(info.value)


def test_reported_figures_read_commas() -> None:
    assert gemini.reported_figures("compressed from 526,049 to 115,614 tokens") == (526049, 115614)
    assert gemini.reported_figures("nothing here") is None


def test_all_zero_tokens_are_no_call() -> None:
    # As in real chats: a hook's warning splits the tool calls off the call that made them,
    # and Gemini CLI writes them as a message of their own with every count zero; an
    # interrupted last request is an empty message with every count zero.
    zero = {"input": 0, "output": 0, "cached": 0, "thoughts": 0, "tool": 0, "total": 0}
    call = {"id": "t1", "name": "replace", "args": {}, "status": "error", "result": "no match"}
    r = gemini.parse_chat_bytes(
        chat(
            {"id": "u", "type": "user", "content": [{"text": "fix it"}]},
            reply("a", {"input": 186_984, "cached": 183_941, "output": 436, "total": 187_726}),
            {"id": "w", "type": "warning", "content": "Hook(s) [x] failed for event AfterTool."},
            reply("b", zero, content="", toolCalls=[call]),
            reply("c", {"input": 187_462, "cached": 183_636, "output": 407}),
            reply("d", zero, content=""),
        )
    )
    assert r.calls == 2
    assert [context_size(m.usage) for m in r.messages if m.usage] == [186_984, 187_462]
    # the split message stays, with its tool call and result, but without usage
    uses = [b for m in r.messages for b in m.content if isinstance(b, ToolUseBlock)]
    assert [u.id for u in uses] == ["t1"]
    assert check_pairs(r.messages) == []
    assert r.ignored["gemini message with all-zero tokens (no usage recorded)"] == 2
    assert r.compactions == []  # a zero is no drop in context


# (file, calls, context first, max, last, sum, compactions, all-zero tokens): the counts of
# count_by_hand.py; SOURCES.md says where each file comes from.
REAL = [
    (FIXTURES / "agent-history" / "session-01.json", 1, 4383, 4383, 4383, 4383, 0, 0),
    (
        FIXTURES / "ai-sessions" / "gemini-cli-pomodoro-timer.json",
        13,
        7269,
        12707,
        12707,
        120730,
        0,
        1,
    ),
    (FIXTURES / "aim" / "control_pro_run4_abandoned.json", 10, 9000, 14522, 14522, 114614, 0, 1),
    (FIXTURES / "aim" / "matrix_pro.json", 35, 6609, 37845, 37845, 724212, 0, 0),
]


@pytest.mark.parametrize(
    ("path", "calls", "first", "peak", "last", "total", "compactions", "zeros"), REAL
)
def test_real_chats_match_the_count_by_hand(
    path: Path,
    calls: int,
    first: int,
    peak: int,
    last: int,
    total: int,
    compactions: int,
    zeros: int,
) -> None:
    raw = json.loads(path.read_bytes())
    r = gemini.parse_chat_bytes(path.read_bytes())
    contexts = [context_size(m.usage) for m in r.messages if m.usage]
    assert r.calls == len(contexts) == calls
    assert (contexts[0], max(contexts), contexts[-1], sum(contexts)) == (first, peak, last, total)
    assert len(r.compactions) == compactions
    assert r.ignored["gemini message with all-zero tokens (no usage recorded)"] == zeros
    # every gemini message is kept (tool calls and all), a call or not
    assert sum(m["type"] == "gemini" for m in raw["messages"]) == sum(
        m.role == "assistant" for m in r.messages
    )
    assert check_pairs(r.messages) == []


# --- the faults of issue 41, on the record shapes Gemini CLI writes -----------------------


def test_the_interactive_compression_notice_with_a_colon_is_a_compaction() -> None:
    notice = (
        "IMPORTANT: This conversation approached the input token limit for gemini-2.5-pro. "
        "A compressed context will be sent for future messages (compressed from: 526049 to "
        "115614 tokens)."
    )
    r = gemini.parse_chat_bytes(
        chat(
            {"id": "u", "type": "user", "content": "go on"},
            reply("a", {"input": 449_534, "cached": 400_000, "output": 10, "tool": 0}),
            {"id": "i", "type": "info", "content": notice},
            {"id": "u2", "type": "user", "content": "next"},
            reply("b", {"input": 169_274, "cached": 0, "output": 10, "tool": 0}),
        )
    )
    (c,) = r.compactions
    assert (c.reported_before, c.reported_after) == (526_049, 115_614)
    assert (c.tokens_before, c.tokens_after) == (526_049, 115_614)
    assert c.seq == 2  # the first message after it: the next prompt
    assert gemini.reported_figures(notice) == (526_049, 115_614)


def test_a_record_of_cancelled_tool_calls_alone_without_tokens_is_no_call() -> None:
    cancelled = {
        "id": "run_shell_command-1760000000000-abc",
        "name": "run_shell_command",
        "args": {"command": "npm test"},
        "result": [
            {
                "functionResponse": {
                    "id": "run_shell_command-1760000000000-abc",
                    "name": "run_shell_command",
                    "response": {"error": "[Operation Cancelled] Reason: User cancelled"},
                }
            }
        ],
        "status": "cancelled",
        "timestamp": "2026-05-01T10:00:05Z",
        "resultDisplay": "Tool call cancelled by user.",
    }
    r = gemini.parse_chat_bytes(
        chat(
            {"id": "u", "type": "user", "content": "run the tests"},
            reply("a", {"input": 9_000, "cached": 0, "output": 10, "tool": 0}),
            {"id": "b", "type": "gemini", "content": "", "toolCalls": [cancelled]},
            {"id": "u2", "type": "user", "content": "no, stop"},
            reply("c", {"input": 9_500, "cached": 0, "output": 10, "tool": 0}),
        )
    )
    assert (r.calls, r.interrupted) == (2, 1)
    cut = [m for m in r.messages if m.model == gemini.INTERRUPTED]
    assert len(cut) == 1
    assert cut[0].usage is None
    assert not is_call(cut[0])
    assert check_pairs(r.messages) == []  # the cancelled call keeps its (error) result
    curve = observed_curve(r.messages)
    assert [(p.context_tokens, p.estimated) for p in curve] == [(9_000, False), (9_500, False)]


def test_a_real_request_cut_off_while_thinking_is_no_point_of_the_curve() -> None:
    # The run was abandoned: its last message has thoughts, no text, no tool call and every
    # count zero (BrianV1981/aim, a real chat; SOURCES.md).
    r = gemini.parse_chat_bytes((FIXTURES / "aim" / "control_pro_run4_abandoned.json").read_bytes())
    curve = observed_curve(r.messages, context_window=gemini.GEMINI_WINDOW)
    assert (r.calls, r.interrupted) == (10, 1)
    assert [p.estimated for p in curve] == [False] * 10
    assert r.messages[-1].model == gemini.INTERRUPTED
