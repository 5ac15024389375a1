"""The pure Codex rollout reader: real files counted by hand, and each rule on a small file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from compaction.engine import codex
from compaction.engine.messages import ToolResultBlock, ToolUseBlock, check_pairs, is_call
from compaction.engine.tokens import context_size, observed_curve

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
LOCALPUSH = FIXTURES / "localpush"
COMPACTED = LOCALPUSH / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"


def read(path: Path) -> bytes:
    return gzip.open(path).read() if path.name.endswith(".gz") else path.read_bytes()


# --- builders: one rollout line each -----------------------------------------------------


def line(kind: str, payload: dict[str, Any], ts: str = "2026-01-01T00:00:00Z") -> str:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload})


def meta(sid: str = "s1", **extra: Any) -> str:
    return line("session_meta", {"id": sid, "cwd": "/w", "cli_version": "0.100.0", **extra})


def turn(model: str = "gpt-5-codex") -> str:
    return line("turn_context", {"model": model, "cwd": "/w"})


def user(text: str) -> str:
    content = [{"type": "input_text", "text": text}]
    return line("response_item", {"type": "message", "role": "user", "content": content})


def say(text: str) -> str:
    content = [{"type": "output_text", "text": text}]
    return line("response_item", {"type": "message", "role": "assistant", "content": content})


def call(call_id: str, name: str = "shell", args: str = '{"command": ["ls"]}') -> str:
    payload = {"type": "function_call", "name": name, "arguments": args, "call_id": call_id}
    return line("response_item", payload)


def output(call_id: str, text: str = "ok") -> str:
    return line(
        "response_item", {"type": "function_call_output", "call_id": call_id, "output": text}
    )


def usage(inp: int, cached: int = 0, out: int = 10, total: int | None = None) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": 0,
        "total_tokens": inp + out if total is None else total,
    }


def count(total: int, last: dict[str, int], window: int = 200_000) -> str:
    info = {
        "total_token_usage": {**usage(0), "total_tokens": total},
        "last_token_usage": last,
        "model_context_window": window,
    }
    return line("event_msg", {"type": "token_count", "info": info})


def compacted(message: str = "", history: list[dict[str, Any]] | None = None) -> str:
    payload: dict[str, Any] = {"message": message}
    if history is not None:
        payload["replacement_history"] = history
    return line("compacted", payload)


def parse(*lines: str) -> codex.CodexRollout:
    return codex.parse_rollout_bytes("\n".join(lines).encode() + b"\n")


# --- real files -------------------------------------------------------------------------

# (file, calls, first, max, last context, sum of contexts): counted by count_by_hand.py
REAL = [
    ("rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl",
     81, 17203, 164606, 164606, 7204025),
    ("rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl",
     28, 17102, 108869, 108869, 1751428),
    ("rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl",
     83, 17091, 143372, 143372, 6740973),
    (COMPACTED.name, 286, 17088, 209950, 162073, 33810485),
    ("rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl",
     1, 34469, 34469, 34469, 34469),
    ("rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
     6, 42772, 63441, 63441, 298373),
]  # fmt: skip


@pytest.mark.parametrize(("name", "calls", "first", "top", "last", "total"), REAL)
def test_real_rollout_counts_match_the_count_by_hand(
    name: str, calls: int, first: int, top: int, last: int, total: int
) -> None:
    rollout = codex.parse_rollout_bytes(read(LOCALPUSH / name))
    contexts = [context_size(m.usage) for m in rollout.messages if m.usage is not None]
    assert rollout.calls == len(contexts) == calls
    assert (contexts[0], max(contexts), contexts[-1], sum(contexts)) == (first, top, last, total)
    assert rollout.context_window == 258400
    assert rollout.models == ["gpt-5.3-codex"]
    orphans = check_pairs(rollout.messages)
    assert {o.tool_use_id for o in orphans} == unanswered_calls(read(LOCALPUSH / name))
    assert {o.kind for o in orphans} <= {"tool_use"}


def unanswered_calls(data: bytes) -> set[str]:
    """Call ids with no ``*_output`` line in the file (a session that ended mid-call)."""
    calls, outputs = set(), set()
    for raw in data.split(b"\n"):
        if raw.strip():
            payload = json.loads(raw).get("payload") or {}
            kind = str(payload.get("type", ""))
            if kind in ("function_call", "custom_tool_call"):
                calls.add(payload["call_id"])
            elif kind.endswith("_call_output"):
                outputs.add(payload["call_id"])
    return calls - outputs


def test_real_remote_compaction_measures_before_and_after_and_keeps_codex_estimate() -> None:
    rollout = codex.parse_rollout_bytes(read(COMPACTED))
    (event,) = rollout.compactions
    assert (event.line, event.remote, event.replacement_items) == (1788, True, 40)
    assert (event.tokens_before, event.tokens_after) == (209950, 48297)
    assert event.tokens_after_source == "next_call"
    assert event.codex_estimate_after == 940499  # the synthetic count, over the window
    assert event.summary == ""
    assert (event.trigger, event.summarizer) == ("auto", None)  # 81 % of 258,400
    assert "inferred" in event.trigger_basis
    assert rollout.synthetic_counts == 2  # written before the compacted line and after it
    assert rollout.repeated_counts == 284
    first_after = rollout.messages[event.seq]
    assert first_after.role == "assistant"
    assert first_after.usage is not None
    assert context_size(first_after.usage) == 48297


def test_real_exec_rollout() -> None:
    rollout = codex.parse_rollout_bytes(read(FIXTURES / "agent-history" / "session-01.jsonl"))
    assert (rollout.session_id, rollout.calls, rollout.models) == (
        "019e9625-802f-7e91-840a-cfe88d14117a",
        1,
        ["gpt-5.5"],
    )
    (answer,) = [m for m in rollout.messages if m.usage is not None]
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.cache_read_input_tokens) == (1675, 20864)
    assert context_size(answer.usage) == 22539
    assert [m.role for m in rollout.messages] == ["system", "user", "user", "assistant"]


# --- the rules, one small file each ----------------------------------------------------


def test_cached_tokens_are_split_out_so_the_context_counts_them_once() -> None:
    u = codex.usage_from_codex(usage(1000, cached=900, out=40))
    assert (u.input_tokens, u.cache_read_input_tokens, u.output_tokens) == (100, 900, 40)
    assert context_size(u) == 1000


def test_repeated_token_count_is_one_call() -> None:
    first = count(1010, usage(1000))
    rollout = parse(meta(), turn(), user("hi"), say("hello"), first, first, first)
    assert rollout.calls == 1
    assert rollout.repeated_counts == 2
    assert [m.usage is not None for m in rollout.messages] == [False, True]


def test_synthetic_count_after_compaction_is_no_call_and_the_next_call_measures_after() -> None:
    rollout = parse(
        meta(),
        turn(),
        user("task"),
        say("working"),
        count(180_010, usage(180_000)),
        count(180_010, usage(0, out=0, total=30_000)),  # synthetic: the estimate
        compacted("Goal: the task. Done: step one."),
        count(180_010, usage(0, out=0, total=30_000)),
        say("continuing"),
        count(205_010, usage(25_000)),
    )
    assert rollout.calls == 2
    assert rollout.synthetic_counts == 2
    (event,) = rollout.compactions
    assert (event.tokens_before, event.tokens_after) == (180_000, 25_000)
    assert (event.codex_estimate_after, event.tokens_after_source) == (30_000, "next_call")
    assert (event.remote, event.summary) == (False, "Goal: the task. Done: step one.")
    assert event.trigger == "auto"  # 90 % of the 200,000 window
    assert event.seq == 2
    assert rollout.messages[event.seq].text == "continuing"


def test_estimate_stands_in_when_no_call_follows_the_compaction() -> None:
    rollout = parse(
        meta(),
        user("task"),
        say("a"),
        count(50_010, usage(50_000)),
        count(50_010, usage(0, out=0, total=9_000)),
        compacted("summary"),
    )
    (event,) = rollout.compactions
    assert (event.tokens_after, event.tokens_after_source) == (9_000, "codex_estimate")
    assert event.trigger == "manual"  # 25 % of the window: not Codex's own limit


def test_local_compaction_costs_its_summarizer_call() -> None:
    rollout = parse(
        meta(),
        turn(),
        user("task"),
        say("a"),
        count(100_010, usage(100_000)),
        count(201_010, usage(100_500, cached=99_000, out=500)),  # the summary is not logged
        compacted("Goal: ship it."),
        say("b"),
        count(222_020, usage(20_000, out=10)),
    )
    assert rollout.calls == 3
    assert rollout.summarizer_calls == 1
    (event,) = rollout.compactions
    assert event.summarizer is not None
    assert context_size(event.summarizer.usage) == 100_500
    assert event.summarizer.usage.output_tokens == 500
    assert event.summarizer.model == "gpt-5-codex"
    assert (event.tokens_before, event.tokens_after) == (100_000, 20_000)
    assert [m.usage is not None for m in rollout.messages] == [False, True, True]


def test_remote_compaction_has_no_text_and_is_known_by_its_encrypted_item() -> None:
    history = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "task"}]},
        {"type": "compaction", "encrypted_content": "gAAAA..."},
    ]
    for message in ("", "[REDACTED_MESSAGE len=0]"):
        rollout = parse(
            meta(), user("task"), say("a"), count(10, usage(5)), compacted(message, history)
        )
        (event,) = rollout.compactions
        assert (event.remote, event.summary, event.replacement_items) == (True, "", 2)


def test_compaction_that_grew_the_context_is_flagged() -> None:
    rollout = parse(
        meta(),
        user("task"),
        say("a"),
        count(40_010, usage(40_000)),
        compacted("a summary longer than what it replaced"),
        say("b"),
        count(95_020, usage(55_000)),
    )
    (event,) = rollout.compactions
    assert (event.tokens_before, event.tokens_after, event.grew) == (40_000, 55_000, True)


def test_tool_pairs_from_function_and_custom_tool_calls() -> None:
    custom = {
        "type": "custom_tool_call",
        "call_id": "c2",
        "name": "apply_patch",
        "input": "*** Begin",
    }
    custom_out = {"type": "custom_tool_call_output", "call_id": "c2", "output": "Done"}
    failed = {"type": "function_call_output", "call_id": "c1",
              "output": {"content": "no such file", "success": False}}  # fmt: skip
    rollout = parse(
        meta(),
        user("fix it"),
        call("c1", args='{"command": ["cat", "a.py"]}'),
        line("response_item", custom),
        count(1_010, usage(1_000)),
        line("response_item", failed),
        line("response_item", custom_out),
        say("done"),
        count(2_020, usage(2_000)),
    )
    assert check_pairs(rollout.messages) == []
    uses = [b for m in rollout.messages for b in m.content if isinstance(b, ToolUseBlock)]
    assert [(b.id, b.name, dict(b.input)) for b in uses] == [
        ("c1", "shell", {"command": ["cat", "a.py"]}),
        ("c2", "apply_patch", {"input": "*** Begin"}),
    ]
    results = [b for m in rollout.messages for b in m.content if isinstance(b, ToolResultBlock)]
    assert [(b.tool_use_id, b.text, b.is_error) for b in results] == [
        ("c1", "no such file", True),
        ("c2", "Done", False),
    ]
    assert [m.role for m in rollout.messages] == ["user", "assistant", "user", "assistant"]


def test_lines_split_on_newline_only() -> None:
    text = "a\u2028b\u2029c\x85d\x0ce"
    rollout = parse(meta(), user(text).replace("\\u2028", "\u2028").replace("\\u2029", "\u2029"))
    assert rollout.messages[0].text == text


def test_malformed_line_names_its_number() -> None:
    data = f"{meta()}\n{user('hi')}\n{{not json\n".encode()
    with pytest.raises(codex.CodexError) as caught:
        codex.parse_rollout_bytes(data)
    assert caught.value.line == 3
    assert str(caught.value).startswith("line 3: not JSON")


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ('["a list"]', "line 2: not a JSON object"),
        ('{"type":"response_item","payload":"x"}', "line 2: response_item line without a payload"),
        (b"\xff\xfe".decode("latin-1"), "line 2: not JSON"),
    ],
)
def test_other_malformed_lines(bad: str, reason: str) -> None:
    with pytest.raises(codex.CodexError, match=reason.replace("(", r"\(")):
        codex.parse_rollout_bytes(f"{meta()}\n{bad}\n".encode())


def test_invalid_utf8_names_its_line() -> None:
    with pytest.raises(codex.CodexError, match="line 2: not UTF-8"):
        codex.parse_rollout_bytes(meta().encode() + b'\n{"a":"\xff"}\n')


def test_fork_that_relogs_its_parent_is_marked() -> None:
    rollout = parse(
        meta("child", forked_from_id="parent"),
        meta("parent"),
        user("parent's prompt"),
        say("parent's answer"),
        count(1_010, usage(1_000)),
    )
    assert (rollout.kind, rollout.parent_id, rollout.relogged_parent) == ("fork", "parent", True)


def test_subagent_source_names_its_parent() -> None:
    source = {"subagent": {"thread_spawn": {"parent_thread_id": "p1", "depth": 1}}}
    rollout = parse(meta("kid", source=source), user("sub task"))
    assert (rollout.kind, rollout.parent_id, rollout.relogged_parent) == ("subagent", "p1", False)


def test_old_rollout_without_envelope() -> None:
    lines = [
        json.dumps({"id": "old-1", "timestamp": "2025-05-01T00:00:00Z", "instructions": None}),
        json.dumps({"record_type": "state"}),
        json.dumps(
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]}
        ),
        json.dumps({"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c"}),
        json.dumps({"type": "function_call_output", "call_id": "c", "output": "x"}),
    ]
    rollout = codex.parse_rollout(lines)
    assert rollout.session_id == "old-1"
    assert [m.role for m in rollout.messages] == ["user", "assistant", "user"]
    assert check_pairs(rollout.messages) == []


def with_ordinal(text: str, ordinal: int) -> str:
    return json.dumps({**json.loads(text), "ordinal": ordinal})


def test_spawned_agent_leaves_out_the_copy_of_its_parent_by_ordinal() -> None:
    source = {"subagent": {"thread_spawn": {"parent_thread_id": "p", "depth": 1}}}
    head = meta("kid", source=source, thread_source="subagent", subagent_history_start_ordinal=4)
    rollout = parse(
        with_ordinal(head, 0),
        with_ordinal(meta("p"), 1),
        with_ordinal(user("parent's prompt"), 2),
        with_ordinal(say("parent's answer"), 3),
        with_ordinal(user("the sub task"), 4),
        with_ordinal(say("sub answer"), 5),
        with_ordinal(count(1_010, usage(1_000)), 6),
    )
    assert (rollout.kind, rollout.parent_id, rollout.relogged_parent) == ("subagent", "p", False)
    assert rollout.copied_lines == 3
    assert [m.text for m in rollout.messages] == ["the sub task", "sub answer"]
    assert rollout.calls == 1


def test_top_level_parent_thread_id_names_the_parent() -> None:
    rollout = parse(meta("kid", parent_thread_id="p2", thread_source="subagent"), user("x"))
    assert (rollout.kind, rollout.parent_id) == ("subagent", "p2")


# --- the faults of issue 41 ------------------------------------------------------------
# On cuts of real rollouts (tests/fixtures/codex/cuts/): Codex Desktop 0.142 and 0.144, and a
# ``turn_aborted`` after reasoning (VS Code 0.65). The 0.12x CLI ``turn_aborted`` and
# ``thread_rolled_back`` stay on the shapes of published single lines: no real rollout holding
# them was found (ids and texts shortened).


def reasoning(text: str = "Looking at the tests") -> str:
    summary = [{"type": "summary_text", "text": text}]
    return line("response_item", {"type": "reasoning", "summary": summary, "content": None})


def event(kind: str, **fields: Any) -> str:
    return line("event_msg", {"type": kind, **fields})


def test_an_interrupted_response_is_kept_but_is_not_a_call() -> None:
    rollout = parse(
        meta(),
        turn(),
        user("fix the build"),
        say("On it."),
        count(10_010, usage(10_000)),
        user("and the docs"),
        reasoning(),
        event("turn_aborted", turn_id="019dbf8b-6f5b", reason="interrupted", duration_ms=789),
        user("never mind, stop"),
        say("Stopped."),
        count(21_030, usage(11_000, out=20)),
    )
    assert rollout.calls == 2
    assert rollout.interrupted == 1
    cut = [m for m in rollout.messages if m.model == codex.INTERRUPTED]
    assert len(cut) == 1
    assert cut[0].usage is None
    assert cut[0].text == "Looking at the tests"
    assert not is_call(cut[0])
    curve = observed_curve(rollout.messages)
    assert [(p.context_tokens, p.estimated) for p in curve] == [(10_000, False), (11_000, False)]


CUTS = FIXTURES / "cuts"  # runs of whole lines of real rollouts (SOURCES.md: which lines)


def cut(name: str) -> codex.CodexRollout:
    return codex.parse_rollout_bytes(read(CUTS / name))


def points(rollout: codex.CodexRollout) -> list[tuple[int, bool]]:
    curve = observed_curve(rollout.messages, context_window=258_400)
    return [(p.context_tokens, p.estimated) for p in curve]


def test_a_real_response_the_user_interrupted_after_its_reasoning_is_no_call() -> None:
    # codex_vscode 0.65.0-alpha.11 (counts before items): a reasoning item, then turn_aborted
    # with no count for it; the next turn is counted as usual.
    rollout = cut("vscode-0.65.0-alpha.11-aborted-after-reasoning.jsonl.gz")
    assert rollout.calls == 3
    assert rollout.interrupted == 1
    (stopped,) = [m for m in rollout.messages if m.model == codex.INTERRUPTED]
    assert stopped.usage is None
    assert points(rollout) == [(170_638, False), (167_059, False), (167_557, False)]


def test_usage_written_after_the_tool_outputs_belongs_to_the_response_before_them() -> None:
    # Codex Desktop 0.142.5: each call's token_count follows its tool outputs; a remote
    # compaction (no summarizer call of its own) then a synthetic count, written by the build.
    rollout = cut("desktop-0.142.5-remote-compaction.jsonl.gz")
    assert rollout.meta["cli_version"] == "0.142.5"
    assert rollout.calls == 3
    assert rollout.summarizer_calls == 0
    answers = [m for m in rollout.messages if m.role == "assistant"]
    assert len(answers) == 3  # no empty message carries the usage of another
    assert all(m.usage is not None and m.content for m in answers)
    assert points(rollout) == [(217_794, False), (218_740, False), (24_896, False)]
    (event_,) = rollout.compactions
    assert event_.remote
    assert (event_.tokens_before, event_.tokens_after) == (218_740, 24_896)
    assert check_pairs(rollout.messages) == []


def test_world_state_and_a_model_switch_of_desktop_0144_are_read() -> None:
    rollout = cut("desktop-0.144.0-alpha.4-model-switch.jsonl.gz")
    assert rollout.meta["cli_version"] == "0.144.0-alpha.4"
    assert rollout.ignored["world_state"] == 1
    assert rollout.unknown == {}
    assert rollout.calls == 5
    assert all(not estimated for _, estimated in points(rollout))
    assert rollout.models == ["gpt-5.6-terra", "gpt-5.6-sol"]
    assert rollout.model_switches == [(26, "gpt-5.6-sol")]  # the line of the cut


# --- faults found by real files of the harness-versions benchmark --------------------------


def test_a_file_that_ends_while_a_call_runs_draws_no_estimate_for_it() -> None:
    # codex-tui 0.140.0, copied by Entire while the model's `git add` ran: the last response
    # has no token_count yet and its turn did not complete.
    rollout = cut("tui-0.140.0-file-ends-mid-call.jsonl.gz")
    assert rollout.calls == 1
    assert rollout.unfinished == 1
    last = rollout.messages[-1]
    assert last.model == codex.UNFINISHED
    assert last.usage is None
    assert len(last.content) == 3  # what the model streamed is kept
    assert not is_call(last)
    assert points(rollout) == [(29_162, False)]


def test_a_response_whose_tools_ran_when_the_turn_was_aborted_is_not_a_call() -> None:
    # codex-tui 0.141.0: the count of a call is due after its tool outputs; the user aborted
    # the turn after the output, before the count, and Codex wrote its <turn_aborted> note.
    rollout = cut("tui-0.141.0-aborted-while-a-tool-ran.jsonl.gz")
    assert rollout.calls == 3
    assert rollout.interrupted == 1
    (stopped,) = [m for m in rollout.messages if m.model == codex.INTERRUPTED]
    assert stopped.usage is None
    assert any(isinstance(b, ToolUseBlock) for b in stopped.content)
    assert points(rollout) == [(88_026, False), (88_201, False), (88_063, False)]


def test_a_count_written_before_its_items_belongs_to_the_items_after_it() -> None:
    # codex_cli_rs 0.57.0 writes a call's token_count, then its reasoning and tool call.
    rollout = cut("cli-0.57.0-counted-before-its-items.jsonl.gz")
    assert rollout.calls == 2
    answers = [m for m in rollout.messages if m.role == "assistant"]
    assert len(answers) == 2
    assert all(m.content and m.usage is not None for m in answers)
    assert [context_size(m.usage) for m in answers if m.usage] == [3_796, 3_933]
    assert points(rollout) == [(3_796, False), (3_933, False)]


def test_a_prompt_typed_while_a_call_ran_leaves_its_count_to_that_call() -> None:
    # codex_cli_rs 0.94.0: reasoning and a tool call, then the user's new prompt, then the
    # call's token_count, then the tool's output (the model reads the prompt after it).
    rollout = cut("cli-0.94.0-prompt-typed-while-a-call-streamed.jsonl.gz")
    assert rollout.calls == 3
    assert points(rollout) == [(96_917, False), (96_105, False), (96_738, False)]
    assert check_pairs(rollout.messages) == []
    kinds = [(m.role, type(m.content[-1]).__name__) for m in rollout.messages]
    assert kinds[2:5] == [
        ("assistant", "ToolUseBlock"),
        ("user", "ToolResultBlock"),  # the output, then the prompt typed while it ran
        ("user", "TextBlock"),
    ]


def test_a_response_cut_when_codex_stopped_is_no_call_after_the_session_resumes() -> None:
    # codex_vscode 0.104.0-alpha.1: a reasoning item, no count, and an hour later the session
    # resumes (its instructions written again, a new prompt, the next call counted).
    rollout = cut("vscode-0.104.0-alpha.1-stopped-then-resumed.jsonl.gz")
    assert rollout.calls == 1
    assert rollout.unfinished == 1
    (cut_short,) = [m for m in rollout.messages if m.model == codex.UNFINISHED]
    assert cut_short.usage is None
    assert points(rollout) == [(11_926, False)]


def test_a_running_total_that_starts_again_still_counts_each_call() -> None:
    # codex_cli_rs 0.57.0 resumed three hours later: the running total starts again at the
    # new process's first call (2,962,187 then 60,023), so a lower total is a new call.
    rollout = cut("cli-0.57.0-running-total-restarts.jsonl.gz")
    assert rollout.calls == 8
    assert points(rollout) == [
        (58_841, False), (59_318, False), (59_970, False), (60_099, False),
        (60_196, False), (60_321, False), (62_258, False), (63_437, False),
    ]  # fmt: skip


def test_records_of_newer_builds_are_read_or_counted_and_never_refuse_the_file() -> None:
    rollout = parse(
        meta(originator="Codex Desktop", cli_version="0.144.4"),
        line("world_state", {"full": True, "state": {"environments": {"local": {"cwd": "/w"}}}}),
        turn("gpt-5.5"),
        user("task"),
        say("a"),
        count(1_010, usage(1_000)),
        event("thread_settings_applied", thread_settings={"model": "gpt-5.6-sol"}),
        user("go on"),
        say("b"),
        count(3_020, usage(2_000)),
        event("thread_rolled_back", num_turns=1),
        line("holodeck_state", {"a": 1}),
        event("brand_new_event"),
        user("again"),
        say("c"),
        count(5_030, usage(2_000)),
    )
    assert rollout.calls == 3
    assert rollout.models == ["gpt-5.5", "gpt-5.6-sol"]
    assert rollout.model_switches == [(7, "gpt-5.6-sol")]
    assert rollout.rollbacks == [(11, 1)]
    assert [m.model for m in rollout.messages if m.role == "assistant"] == [
        None,
        "gpt-5.6-sol",
        "gpt-5.6-sol",
    ]
    assert rollout.unknown == {"holodeck_state": 1, "event_msg brand_new_event": 1}
    assert rollout.ignored["world_state"] == 1
