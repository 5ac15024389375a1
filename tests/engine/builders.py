"""Builders for engine tests: plain functions that make small histories."""

from __future__ import annotations

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
