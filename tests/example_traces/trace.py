"""Building a trace: messages with dense seqs, timestamps, usage, compactions and probes."""

from __future__ import annotations

import copy
import json
import math
import random
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sessions.example_data import ExampleSession

SEED = 20261102


_CHARS_PER_TOKEN = 3.5


_BATCH_SIZE = 40


_ID_ALPHABET = string.ascii_letters + string.digits


@dataclass(frozen=True)
class Call:
    """One tool call as the agent made it, with the result the tool gave back."""

    name: str
    input: dict[str, Any]
    output: str
    is_error: bool = False
    seconds: float = 1.5


def _text_tokens(text: str) -> int:
    return math.ceil(len(text) / _CHARS_PER_TOKEN)


def _content_tokens(content: str | list[dict[str, Any]]) -> int:
    if isinstance(content, str):
        return _text_tokens(content) + 4
    total = 4
    for block in content:
        kind = block["type"]
        if kind == "text":
            total += _text_tokens(block["text"])
        elif kind == "thinking":
            total += _text_tokens(block["thinking"])
        elif kind == "tool_use":
            total += _text_tokens(block["name"] + json.dumps(block["input"])) + 12
        elif kind == "tool_result":
            total += _text_tokens(block["content"]) + 8
    return total


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def truncated_output(output: str, limit: int = 30_000) -> str:
    """Tool output as agent harnesses pass it on: the middle of a long output is cut."""
    if len(output) <= limit:
        return output
    lines = output.splitlines()
    head: list[str] = []
    tail: list[str] = []
    size = 0
    while lines and size + len(lines[0]) < limit // 2:
        size += len(lines[0]) + 1
        head.append(lines.pop(0))
    size = 0
    while lines and size + len(lines[-1]) < limit // 2:
        size += len(lines[-1]) + 1
        tail.insert(0, lines.pop())
    return "\n".join([*head, "", f"... [{len(lines)} lines truncated] ...", "", *tail])


class Trace:
    """Appends messages with dense seqs, timestamps and the usage a real model call reports.

    ``context`` is what the next model call would see: the system prompt plus every message
    still in the window. Before each call the session's ``policy`` may compact it.
    """

    def __init__(
        self,
        *,
        external_id: str,
        rng: random.Random,
        tool_ids: set[str],
        session: dict[str, Any],
        system_tokens: int,
    ) -> None:
        self.external_id = external_id
        self.rng = rng
        self.session = session
        self.system_tokens = system_tokens
        self.policy: Callable[[Trace], None] | None = None
        self.messages: list[dict[str, Any]] = []
        self.sizes: list[int] = []
        self.prompt_seqs: list[int] = []
        self.compactions: list[dict[str, Any]] = []
        self.probes: list[dict[str, Any]] = []
        self.context = system_tokens
        self._cached = 0
        self._tool_ids = tool_ids
        self._clock = datetime.fromisoformat(session["started_at"])

    # -- messages ------------------------------------------------------------------------

    def prompt(self, text: str, *, wait: float | None = None) -> int:
        """A real user prompt; returns its seq."""
        if self.messages and self.messages[-1]["role"] != "assistant":
            raise RuntimeError(f"{self.external_id}: two user messages in a row")
        self._wait(self.rng.uniform(6, 30) if wait is None else wait)
        seq = self._append("user", text)
        self.prompt_seqs.append(seq)
        return seq

    def step(self, *calls: Call, text: str | None = None, thinking: str | None = None) -> None:
        """One model call that asks for tools, then the user message carrying their results."""
        uses = [
            {"type": "tool_use", "id": self._tool_id(), "name": call.name, "input": call.input}
            for call in calls
        ]
        self._assistant([*self._opening(text, thinking), *uses])
        self._wait(sum(call.seconds for call in calls))
        results = [
            {
                "type": "tool_result",
                "tool_use_id": use["id"],
                "content": truncated_output(call.output),
                "is_error": call.is_error,
            }
            for use, call in zip(uses, calls, strict=True)
        ]
        self._append("user", results)

    def reply(self, text: str, *, thinking: str | None = None) -> None:
        """A model call that ends the turn with text."""
        self._assistant(self._opening(text, thinking))

    def probe(self, seq: int, text: str, check: str) -> None:
        self.probes.append({"seq": seq, "text": text, "check": check})

    # -- compactions ---------------------------------------------------------------------

    def tokens_after(self, summary: str, keep_from: int) -> int:
        """Context after replacing seqs 1..keep_from-1 with ``summary`` (seq 0 stays pinned)."""
        return (
            self.system_tokens
            + self.sizes[0]
            + _content_tokens(summary)
            + sum(self.sizes[keep_from:])
        )

    def keep_from(self, summary: str, *, target_after: int, after_seq: int) -> int:
        """The real prompt to cut before so the compacted context lands near ``target_after``."""
        candidates = [seq for seq in self.prompt_seqs if seq > after_seq]
        return min(candidates, key=lambda s: abs(self.tokens_after(summary, s) - target_after))

    def summarize(self, *, summary: str, keep_from: int, duration_ms: int) -> None:
        after = self.tokens_after(summary, keep_from)
        self.compactions.append(
            {
                "seq": len(self.messages),
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": self.context,
                "tokens_after": after,
                "summary": summary,
                "replaced": {"from_seq": 1, "to_seq": keep_from - 1},
                "duration_ms": duration_ms,
                "error": None,
            }
        )
        self.context = after
        # The prefix changed, so only the system prompt is still cached.
        self._cached = self.system_tokens
        self._wait(duration_ms / 1000)

    def fail_compaction(self, *, error: str, duration_ms: int) -> None:
        self.compactions.append(
            {
                "seq": len(self.messages),
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": self.context,
                "tokens_after": self.context,
                "duration_ms": duration_ms,
                "error": error,
            }
        )
        self._wait(duration_ms / 1000)

    def splice_saving_nothing(
        self, *, summary: str, to_seq: int, saved: int, duration_ms: int
    ) -> None:
        after = self.context - saved
        self.compactions.append(
            {
                "seq": len(self.messages),
                "trigger": "threshold",
                "strategy": "summarize",
                "tokens_before": self.context,
                "tokens_after": after,
                "summary": summary,
                "replaced": {"from_seq": 1, "to_seq": to_seq},
                "duration_ms": duration_ms,
                "error": None,
            }
        )
        self.context = after
        self._cached = self.system_tokens
        self._wait(duration_ms / 1000)

    # -- output --------------------------------------------------------------------------

    def example(self, *, batch_size: int = _BATCH_SIZE) -> ExampleSession:
        if self.messages[-1]["role"] != "assistant":
            raise RuntimeError(f"{self.external_id}: a session must end on an assistant reply")
        batches: list[dict[str, Any]] = []
        for start in range(0, len(self.messages), batch_size):
            chunk = self.messages[start : start + batch_size]
            seqs = range(start, start + len(chunk))
            session = copy.deepcopy(self.session)
            if start + batch_size >= len(self.messages):
                session["ended_at"] = chunk[-1]["timestamp"]
            batch: dict[str, Any] = {"session": session, "messages": copy.deepcopy(chunk)}
            compactions = [c for c in self.compactions if c["seq"] in seqs]
            if compactions:
                batch["compactions"] = copy.deepcopy(compactions)
            probes = [p for p in self.probes if p["seq"] in seqs]
            if probes:
                batch["probes"] = copy.deepcopy(probes)
            batches.append(batch)
        return ExampleSession(external_id=self.external_id, batches=batches)

    # -- internals -----------------------------------------------------------------------

    def _opening(self, text: str | None, thinking: str | None) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if thinking:
            signature = "".join(self.rng.choices(_ID_ALPHABET + "+/", k=96))
            blocks.append({"type": "thinking", "thinking": thinking, "signature": signature})
        if text:
            blocks.append({"type": "text", "text": text})
        return blocks

    def _assistant(self, blocks: list[dict[str, Any]]) -> None:
        if self.messages and self.messages[-1]["role"] != "user":
            raise RuntimeError(f"{self.external_id}: two assistant messages in a row")
        if self.policy is not None:
            self.policy(self)
        fresh = self.context - self._cached
        input_tokens = min(fresh, self.rng.randint(2, 9))
        usage = {
            "input_tokens": input_tokens,
            "output_tokens": _content_tokens(blocks) + self.rng.randint(0, 12),
            "cache_read_input_tokens": self._cached,
            "cache_creation_input_tokens": fresh - input_tokens,
        }
        self._cached = self.context - input_tokens
        self._wait(self.rng.uniform(1.5, 4.0) + usage["output_tokens"] / 90)
        self._append("assistant", blocks, usage)

    def _append(
        self,
        role: str,
        content: str | list[dict[str, Any]],
        usage: dict[str, int] | None = None,
    ) -> int:
        seq = len(self.messages)
        message: dict[str, Any] = {
            "seq": seq,
            "role": role,
            "content": content,
            "timestamp": _iso(self._clock),
        }
        if usage is not None:
            message["usage"] = usage
        size = _content_tokens(content)
        self.messages.append(message)
        self.sizes.append(size)
        self.context += size
        return seq

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._clock += timedelta(seconds=max(1, round(seconds)))

    def _tool_id(self) -> str:
        while True:
            candidate = "toolu_01" + "".join(self.rng.choices(_ID_ALPHABET, k=20))
            if candidate not in self._tool_ids:
                self._tool_ids.add(candidate)
                return candidate


@dataclass
class Progress:
    """What a summarizer would know about the task so far."""

    decisions: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    current: str = ""
    next_steps: list[str] = field(default_factory=list)


def bullets(items: Sequence[str], empty: str = "(none)") -> str:
    return "\n".join(f"- {item}" for item in items) if items else f"- {empty}"
