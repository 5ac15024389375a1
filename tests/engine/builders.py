"""Builders for engine tests: plain functions that make small histories."""

from __future__ import annotations

from typing import Any

from compaction.engine.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock


class History:
    """Appends messages with dense seqs, so tests read like a conversation."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def _add(self, role, blocks) -> History:
        self.messages.append(Message(len(self.messages), role, tuple(blocks)))
        return self

    def system(self, text: str) -> History:
        return self._add("system", [TextBlock(text)])

    def user(self, text: str) -> History:
        return self._add("user", [TextBlock(text)])

    def assistant(self, text: str) -> History:
        return self._add("assistant", [TextBlock(text)])

    def tool(self, name: str, output: str, *, is_error: bool = False, **tool_input) -> History:
        tool_id = f"toolu_{len(self.messages):04d}"
        self._add(
            "assistant", [TextBlock(f"Calling {name}."), ToolUseBlock(tool_id, name, tool_input)]
        )
        return self._add("user", [ToolResultBlock(tool_id, output, is_error)])


CONSTRAINT = "Do not change the public API of the billing module."


def coding_session_messages(
    turns: int = 12, *, tool_chars: int = 6000, with_usage: bool = True, start_tokens: int = 4000
) -> list[dict[str, Any]]:
    """A small coding run in wire format: each turn is a prompt, a read_file call, its
    result and an answer. The third prompt (turn index 2) states CONSTRAINT."""
    messages: list[dict[str, Any]] = []
    context = start_tokens
    for turn in range(turns):
        seq = len(messages)
        prompt = "Migrate billing to API v2." if turn == 0 else f"Continue with step {turn}."
        if turn == 2:
            prompt = f"{CONSTRAINT} Keep going."
        body = f"# billing/module_{turn}.py\n" + ("def charge(amount):\n    return amount\n" * 200)
        body = body[:tool_chars]
        context += len(prompt) // 4 + 50
        call: dict[str, Any] = {
            "seq": seq + 1,
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Reading module {turn}."},
                {
                    "type": "tool_use",
                    "id": f"toolu_{turn:04d}",
                    "name": "read_file",
                    "input": {"path": f"billing/module_{turn}.py"},
                },
            ],
        }
        answer: dict[str, Any] = {
            "seq": seq + 3,
            "role": "assistant",
            "content": [{"type": "text", "text": f"Module {turn} reviewed."}],
        }
        if with_usage:
            call["usage"] = {
                "input_tokens": 10,
                "output_tokens": 40,
                "cache_read_input_tokens": context - 10,
            }
            context += 40 + len(body) // 4
            answer["usage"] = {
                "input_tokens": 10,
                "output_tokens": 20,
                "cache_read_input_tokens": context - 10,
            }
            context += 20
        messages += [
            {"seq": seq, "role": "user", "content": prompt},
            call,
            {
                "seq": seq + 2,
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"toolu_{turn:04d}", "content": body}
                ],
            },
            answer,
        ]
    return messages
