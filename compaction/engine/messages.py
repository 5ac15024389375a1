"""Messages in the Anthropic shape, turns, and the tool-pair check.

Everything here is immutable and pure. The wire format is the one in DESIGN.md ("Ingest wire
format, v1"): ``content`` is a string or a list of Anthropic-shaped block dicts, ``usage`` is
optional, and unknown block types are kept as :class:`OpaqueBlock` instead of failing.

(About 670 lines, over the usual 600: the block and message types, their wire conversion,
turns and the pair check are the vocabulary every other engine module imports, kept together
so the wire contract has one home.)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypeAlias, TypedDict

Role: TypeAlias = Literal["system", "user", "assistant"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant")


class WireError(ValueError):
    """A wire message or block that cannot be read; the text names the field."""


@dataclass(frozen=True, slots=True)
class TextBlock:
    """Plain text. ``TextBlock("hello").to_wire() == {"type": "text", "text": "hello"}``."""

    text: str

    def to_wire(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class ToolUseBlock:
    """A tool call. ``ToolUseBlock("toolu_1", "read_file", {"path": "a.py"})``."""

    id: str
    name: str
    input: Mapping[str, Any] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": dict(self.input)}


@dataclass(frozen=True, slots=True)
class ToolResultBlock:
    """A tool result; ``content`` is a string or nested blocks, as the API allows.

    >>> ToolResultBlock("toolu_1", "boom", is_error=True).text
    'boom'
    """

    tool_use_id: str
    content: str | tuple[Block, ...] = ""
    is_error: bool = False

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "\n".join(block_text(b) for b in self.content)

    def to_wire(self) -> dict[str, Any]:
        content: Any = (
            self.content if isinstance(self.content, str) else [b.to_wire() for b in self.content]
        )
        return {
            "type": "tool_result",
            "tool_use_id": self.tool_use_id,
            "content": content,
            "is_error": self.is_error,
        }


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    """Model reasoning; ``redacted`` marks ``redacted_thinking`` (``data`` holds the payload)."""

    thinking: str
    signature: str | None = None
    redacted: bool = False

    def to_wire(self) -> dict[str, Any]:
        if self.redacted:
            return {"type": "redacted_thinking", "data": self.thinking}
        out: dict[str, Any] = {"type": "thinking", "thinking": self.thinking}
        if self.signature is not None:
            out["signature"] = self.signature
        return out


@dataclass(frozen=True, slots=True)
class CompactionBlock:
    """A server-side compaction block (``compact_20260112``); ``content`` None means failed."""

    content: str | None
    encrypted_content: str | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "compaction", "content": self.content}
        if self.encrypted_content is not None:
            out["encrypted_content"] = self.encrypted_content
        return out


@dataclass(frozen=True, slots=True)
class ImageBlock:
    """An image kept by reference (url, file id or a sha256 of inline data), never the bytes.

    >>> ImageBlock("url", "https://x/y.png").ref
    'https://x/y.png'
    """

    source_type: str
    ref: str
    media_type: str | None = None
    size_bytes: int | None = None

    def to_wire(self) -> dict[str, Any]:
        source: dict[str, Any] = {"type": self.source_type}
        if self.source_type == "url":
            source["url"] = self.ref
        elif self.source_type == "file":
            source["file_id"] = self.ref
        else:
            source["ref"] = self.ref
        if self.media_type is not None:
            source["media_type"] = self.media_type
        if self.size_bytes is not None:
            source["size_bytes"] = self.size_bytes
        return {"type": "image", "source": source}


@dataclass(frozen=True, slots=True)
class OpaqueBlock:
    """A block type the engine does not model (``server_tool_use``, ``document``), kept whole."""

    type: str
    data: Mapping[str, Any]

    def to_wire(self) -> dict[str, Any]:
        return dict(self.data)


Block: TypeAlias = (
    TextBlock
    | ToolUseBlock
    | ToolResultBlock
    | ThinkingBlock
    | CompactionBlock
    | ImageBlock
    | OpaqueBlock
)


class IterationDict(TypedDict):
    type: str
    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    model: NotRequired[str]


class UsageDict(TypedDict):
    """``Usage.to_dict()``: stored in replay totals (summarizer cost) and span details."""

    input_tokens: int
    output_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    iterations: NotRequired[list[IterationDict]]
    cache_creation: NotRequired[CacheCreationDict]


class CacheCreationDict(TypedDict):
    """Anthropic's split of the cache writes between the 5-minute and the 1-hour cache."""

    ephemeral_5m_input_tokens: int
    ephemeral_1h_input_tokens: int


@dataclass(frozen=True, slots=True)
class Iteration:
    """One entry of ``usage.iterations``: a sampling step (``message``), a ``compaction``, or
    another model's inference inside the call (``advisor_message``: the advisor tool's model,
    named in ``model``, billed at its own price and not in the call's top-level counters)."""

    type: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    model: str | None = None

    def to_dict(self) -> IterationDict:
        out: IterationDict = {
            "type": self.type,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }
        if self.model is not None:
            out["model"] = self.model
        return out


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage of one model call, as the API reports it.

    >>> Usage(input_tokens=10, output_tokens=5).to_dict()["output_tokens"]
    5
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    iterations: tuple[Iteration, ...] = ()
    # Of cache_creation_input_tokens, the writes to the 1-hour cache (priced higher than the
    # 5-minute ones): Anthropic's usage.cache_creation.ephemeral_1h_input_tokens.
    cache_creation_1h_input_tokens: int = 0

    @property
    def reports_nothing(self) -> bool:
        """0 in and 0 out: a proxy that passes no counts, never an empty context. Such a call
        is a call without usage (estimated), as if the trace had no usage at all.

        >>> Usage(input_tokens=0, output_tokens=0).reports_nothing
        True
        """
        counters = (
            self.input_tokens,
            self.output_tokens,
            self.cache_read_input_tokens,
            self.cache_creation_input_tokens,
        )
        return not any(counters) and not any(
            it.input_tokens
            or it.output_tokens
            or it.cache_read_input_tokens
            or it.cache_creation_input_tokens
            for it in self.iterations
        )

    def to_dict(self) -> UsageDict:
        out: UsageDict = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }
        if self.iterations:
            out["iterations"] = [it.to_dict() for it in self.iterations]
        if self.cache_creation_1h_input_tokens:
            out["cache_creation"] = {
                "ephemeral_5m_input_tokens": self.cache_creation_input_tokens
                - self.cache_creation_1h_input_tokens,
                "ephemeral_1h_input_tokens": self.cache_creation_1h_input_tokens,
            }
        return out

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation_input_tokens=(
                self.cache_creation_input_tokens + other.cache_creation_input_tokens
            ),
            iterations=self.iterations + other.iterations,
            cache_creation_1h_input_tokens=(
                self.cache_creation_1h_input_tokens + other.cache_creation_1h_input_tokens
            ),
        )

    def __sub__(self, earlier: Usage) -> Usage:
        """What was spent since ``earlier`` (a running total read before): token counts only.

        >>> (Usage(input_tokens=900, output_tokens=40) - Usage(input_tokens=600)).input_tokens
        300
        """
        return Usage(
            input_tokens=self.input_tokens - earlier.input_tokens,
            output_tokens=self.output_tokens - earlier.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens - earlier.cache_read_input_tokens,
            cache_creation_input_tokens=(
                self.cache_creation_input_tokens - earlier.cache_creation_input_tokens
            ),
        )


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a trace, in dense ``seq`` order.

    >>> m = Message(0, "user", (TextBlock("Fix the bug. Do not touch auth."),))
    >>> is_prompt(m)
    True
    """

    seq: int
    role: Role
    content: tuple[Block, ...]
    timestamp: str | None = None
    usage: Usage | None = None
    model: str | None = None  # the model that wrote an assistant message, when the trace says

    @property
    def text(self) -> str:
        """All readable text of the message, blocks joined by newlines."""
        return "\n".join(t for t in (block_text(b) for b in self.content) if t)

    def tool_uses(self) -> Iterator[ToolUseBlock]:
        return (b for b in self.content if isinstance(b, ToolUseBlock))

    def tool_results(self) -> Iterator[ToolResultBlock]:
        return (b for b in self.content if isinstance(b, ToolResultBlock))


def block_text(block: Block) -> str:
    """The readable text of one block (tool inputs as compact JSON, images as a reference).

    >>> block_text(ToolUseBlock("t1", "read_file", {"path": "a.py"}))
    'read_file {"path": "a.py"}'
    """
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ToolUseBlock):
        return f"{block.name} {json.dumps(block.input, ensure_ascii=False, sort_keys=True)}"
    if isinstance(block, ToolResultBlock):
        return block.text
    if isinstance(block, ThinkingBlock):
        return "" if block.redacted else block.thinking
    if isinstance(block, CompactionBlock):
        return block.content or ""
    if isinstance(block, ImageBlock):
        return f"[image {block.ref}]"
    return json.dumps(block.data, ensure_ascii=False, sort_keys=True, default=str)


def carries_tool_results(role: str, content: Iterable[Block]) -> bool:
    """The one rule for a tool_result carrier: a user message with a tool_result block.

    >>> carries_tool_results("user", [ToolResultBlock("t1", "ok")])
    True
    """
    if role != "user":
        return False
    # A plain loop, not any(): this runs for every message of every replay step.
    for block in content:  # noqa: SIM110
        if isinstance(block, ToolResultBlock):
            return True
    return False


def is_tool_result_carrier(message: Message) -> bool:
    """True for a user message that carries tool results (it belongs to the turn before it)."""
    return carries_tool_results(message.role, message.content)


def is_prompt(message: Message) -> bool:
    """True for a real user prompt: a user message that carries no tool result."""
    return message.role == "user" and not is_tool_result_carrier(message)


@dataclass(frozen=True, slots=True)
class Turn:
    """A prompt and everything up to the next prompt; ``messages[0]`` is the prompt.

    The only exception is a leading group before the first prompt (system messages, or a trace
    that starts mid-conversation), which forms turn 0 on its own.
    """

    index: int
    messages: tuple[Message, ...]

    @property
    def first_seq(self) -> int:
        return self.messages[0].seq

    @property
    def last_seq(self) -> int:
        return self.messages[-1].seq


def turns(messages: Sequence[Message]) -> list[Turn]:
    """Split a history into turns; a turn never starts at a tool_result carrier.

    >>> ms = [Message(0, "user", (TextBlock("hi"),)), Message(1, "assistant", (TextBlock("yo"),))]
    >>> [t.first_seq for t in turns(ms)]
    [0]
    """
    groups: list[list[Message]] = []
    for m in messages:
        if not groups or is_prompt(m):
            groups.append([])
        groups[-1].append(m)
    return [Turn(i, tuple(g)) for i, g in enumerate(groups)]


def step_starts(messages: Sequence[Message]) -> list[int]:
    """Indexes where a history can be cut without splitting a tool pair.

    A cut before message ``i`` is pair-safe when ``messages[i]`` is not a tool_result carrier:
    the results of any tool_use before it then lie before it too.

    >>> ms = [Message(0, "user", (TextBlock("go"),)),
    ...       Message(1, "assistant", (ToolUseBlock("t", "ls", {}),)),
    ...       Message(2, "user", (ToolResultBlock("t", "a.py"),)),
    ...       Message(3, "assistant", (TextBlock("done"),))]
    >>> step_starts(ms)
    [0, 1, 3]
    """
    return [i for i, m in enumerate(messages) if not is_tool_result_carrier(m)]


class OrphanDict(TypedDict):
    """``Orphan.to_dict()``: stored in ``SessionAnalysis.orphans``."""

    kind: Literal["tool_use", "tool_result"]
    tool_use_id: str
    seq: int


@dataclass(frozen=True, slots=True)
class Orphan:
    """Half of a tool pair whose other half is not where the API needs it."""

    kind: Literal["tool_use", "tool_result"]
    tool_use_id: str
    seq: int

    def to_dict(self) -> OrphanDict:
        return {"kind": self.kind, "tool_use_id": self.tool_use_id, "seq": self.seq}


def check_pairs(messages: Sequence[Message]) -> list[Orphan]:
    """Every tool_use without a result in the next message, and every result without its use.

    This is the rule the Messages API enforces: results answer the tool_use blocks of the
    assistant message right before them.

    >>> ms = [Message(0, "user", (TextBlock("go"),)),
    ...       Message(1, "assistant", (ToolUseBlock("t1", "ls", {}),))]
    >>> check_pairs(ms)
    [Orphan(kind='tool_use', tool_use_id='t1', seq=1)]
    """
    orphans: list[Orphan] = []
    for i, m in enumerate(messages):
        if m.role == "assistant":
            uses = [b.id for b in m.tool_uses()]
            if not uses:
                continue
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            answered = (
                {b.tool_use_id for b in nxt.tool_results()}
                if nxt is not None and nxt.role == "user"
                else set()
            )
            orphans.extend(Orphan("tool_use", u, m.seq) for u in uses if u not in answered)
        elif m.role == "user":
            results = [b.tool_use_id for b in m.tool_results()]
            if not results:
                continue
            prev = messages[i - 1] if i > 0 else None
            asked = (
                {b.id for b in prev.tool_uses()}
                if prev is not None and prev.role == "assistant"
                else set()
            )
            orphans.extend(Orphan("tool_result", r, m.seq) for r in results if r not in asked)
    return orphans


# --- wire format ---------------------------------------------------------------------------


def _image_from_wire(raw: Mapping[str, Any]) -> ImageBlock:
    source = raw.get("source")
    if not isinstance(source, Mapping):
        return ImageBlock("unknown", "", None)
    kind = str(source.get("type", "unknown"))
    media = source.get("media_type")
    media_type = str(media) if media is not None else None
    if kind == "url":
        return ImageBlock("url", str(source.get("url", "")), media_type)
    if kind == "file":
        return ImageBlock("file", str(source.get("file_id", "")), media_type)
    if kind == "base64":
        data = str(source.get("data", ""))
        digest = hashlib.sha256(data.encode()).hexdigest()
        return ImageBlock("base64", f"sha256:{digest}", media_type, len(data) * 3 // 4)
    size = source.get("size_bytes")
    return ImageBlock(kind, str(source.get("ref", "")), media_type, int(size) if size else None)


def block_from_wire(raw: Any, where: str = "block") -> Block:
    """Read one Anthropic-shaped block dict; unknown types become :class:`OpaqueBlock`.

    >>> block_from_wire({"type": "text", "text": "hi"})
    TextBlock(text='hi')
    >>> block_from_wire({"type": "web_search_tool_result", "x": 1}).type
    'web_search_tool_result'
    """
    if isinstance(raw, str):
        return TextBlock(raw)
    if not isinstance(raw, Mapping):
        raise WireError(f"{where}: expected an object or a string, got {type(raw).__name__}")
    kind = raw.get("type")
    if not isinstance(kind, str):
        raise WireError(f"{where}.type: missing or not a string")
    if kind == "text":
        return TextBlock(str(raw.get("text", "")))
    if kind == "tool_use":
        tool_id, name = raw.get("id"), raw.get("name")
        if not isinstance(tool_id, str) or not isinstance(name, str):
            raise WireError(f"{where}: tool_use needs string 'id' and 'name'")
        tool_input = raw.get("input") or {}
        if not isinstance(tool_input, Mapping):
            tool_input = {"value": tool_input}
        return ToolUseBlock(tool_id, name, dict(tool_input))
    if kind == "tool_result":
        use_id = raw.get("tool_use_id")
        if not isinstance(use_id, str):
            raise WireError(f"{where}.tool_use_id: missing or not a string")
        content = raw.get("content", "")
        body: str | tuple[Block, ...]
        if content is None:
            body = ""
        elif isinstance(content, str):
            body = content
        elif isinstance(content, list):
            body = tuple(block_from_wire(c, f"{where}.content[{i}]") for i, c in enumerate(content))
        else:
            raise WireError(f"{where}.content: expected a string or a list of blocks")
        return ToolResultBlock(use_id, body, bool(raw.get("is_error", False)))
    if kind == "thinking":
        sig = raw.get("signature")
        return ThinkingBlock(str(raw.get("thinking", "")), str(sig) if sig is not None else None)
    if kind == "redacted_thinking":
        return ThinkingBlock(str(raw.get("data", "")), None, redacted=True)
    if kind == "compaction":
        content_c = raw.get("content")
        enc = raw.get("encrypted_content")
        return CompactionBlock(
            str(content_c) if content_c is not None else None,
            str(enc) if enc is not None else None,
        )
    if kind == "image":
        return _image_from_wire(raw)
    return OpaqueBlock(kind, dict(raw))


def _int(raw: Mapping[str, Any], key: str, where: str) -> int:
    value = raw.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WireError(f"{where}.{key}: expected a number")
    return int(value)


def usage_from_wire(raw: Mapping[str, Any], where: str = "usage") -> Usage:
    """Read a usage dict; missing counters are 0, extra keys are ignored. Anthropic's
    ``cache_creation`` split is kept as the 1-hour part of the cache writes.

    >>> usage_from_wire({"input_tokens": 3, "cache_read_input_tokens": 7}).cache_read_input_tokens
    7
    >>> usage_from_wire({"cache_creation": {"ephemeral_5m_input_tokens": 10,
    ...                  "ephemeral_1h_input_tokens": 90}}).cache_creation_1h_input_tokens
    90
    """
    iterations: list[Iteration] = []
    raw_its = raw.get("iterations") or []
    if isinstance(raw_its, list):
        for i, it in enumerate(raw_its):
            if isinstance(it, Mapping):
                w = f"{where}.iterations[{i}]"
                model = it.get("model")
                iterations.append(
                    Iteration(
                        type=str(it.get("type", "message")),
                        input_tokens=_int(it, "input_tokens", w),
                        output_tokens=_int(it, "output_tokens", w),
                        cache_read_input_tokens=_int(it, "cache_read_input_tokens", w),
                        cache_creation_input_tokens=_int(it, "cache_creation_input_tokens", w),
                        model=model if isinstance(model, str) and model else None,
                    )
                )
    written = _int(raw, "cache_creation_input_tokens", where)
    one_hour = 0
    split = raw.get("cache_creation")
    if isinstance(split, Mapping):
        w = f"{where}.cache_creation"
        five_minutes = _int(split, "ephemeral_5m_input_tokens", w)
        one_hour = _int(split, "ephemeral_1h_input_tokens", w)
        # the split alone says how much was written; beside the total, it only divides it
        written = written or five_minutes + one_hour
        one_hour = min(max(one_hour, 0), max(written, 0))
    return Usage(
        input_tokens=_int(raw, "input_tokens", where),
        output_tokens=_int(raw, "output_tokens", where),
        cache_read_input_tokens=_int(raw, "cache_read_input_tokens", where),
        cache_creation_input_tokens=written,
        iterations=tuple(iterations),
        cache_creation_1h_input_tokens=one_hour,
    )


def content_from_wire(content: Any, where: str = "content") -> tuple[Block, ...]:
    """Read ``content``: a string becomes one text block, a list is read block by block."""
    if isinstance(content, str):
        return (TextBlock(content),)
    if content is None:
        return ()
    if not isinstance(content, list):
        raise WireError(f"{where}: expected a string or a list of blocks")
    return tuple(block_from_wire(b, f"{where}[{i}]") for i, b in enumerate(content))


# What a harness writes as the model of a message no model wrote: Claude Code records a failed
# API request (a 502, an overload, a usage limit) as an assistant message of model
# "<synthetic>" with zero usage. "<interrupted>": a response the user stopped before the
# harness recorded any usage for it (a Codex ``turn_aborted``, a Gemini CLI cancelled tool
# call with no tokens): kept as what was streamed, never a call. "<unfinished>": the last
# response of a log that ends before its usage was written and before its turn completed.
NOT_A_MODEL = frozenset({"<synthetic>", "<interrupted>", "<unfinished>"})


def is_failed_request(message: Message) -> bool:
    """An assistant message the harness wrote in place of a model response (an API error)."""
    return message.role == "assistant" and message.model in NOT_A_MODEL


def is_call(message: Message) -> bool:
    """Whether a message is one model call: an assistant message a model wrote. A failed
    request is kept as a message but is never drawn, billed or counted as a call.

    >>> is_call(Message(1, "assistant", (TextBlock("API Error: 502"),), model="<synthetic>"))
    False
    """
    return message.role == "assistant" and message.model not in NOT_A_MODEL


def message_from_wire(raw: Mapping[str, Any], where: str = "message") -> Message:
    """Read one message of the ingest wire format.

    >>> message_from_wire({"seq": 0, "role": "user", "content": "Do not change the API."}).text
    'Do not change the API.'
    """
    if not isinstance(raw, Mapping):
        raise WireError(f"{where}: expected an object")
    seq = raw.get("seq")
    if isinstance(seq, bool) or not isinstance(seq, int):
        raise WireError(f"{where}.seq: missing or not an integer")
    role = raw.get("role")
    if role not in ROLES:
        raise WireError(f"{where}.role: must be one of system, user, assistant")
    if "content" not in raw:
        raise WireError(f"{where}.content: missing")
    usage_raw = raw.get("usage")
    usage = None
    if usage_raw is not None:
        if not isinstance(usage_raw, Mapping):
            raise WireError(f"{where}.usage: expected an object")
        usage = usage_from_wire(usage_raw, f"{where}.usage")
        if usage.reports_nothing:
            usage = None
    ts = raw.get("timestamp")
    model = raw.get("model")
    return Message(
        seq=seq,
        role=role,
        content=content_from_wire(raw["content"], f"{where}.content"),
        timestamp=str(ts) if ts is not None else None,
        usage=usage,
        model=str(model) if model else None,
    )


def messages_from_wire(raw: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Read a list of wire messages, sorted by ``seq``; errors name ``messages[i]``.

    >>> [m.seq for m in messages_from_wire([{"seq": 1, "role": "assistant", "content": "b"},
    ...                                     {"seq": 0, "role": "user", "content": "a"}])]
    [0, 1]
    """
    out = [message_from_wire(m, f"messages[{i}]") for i, m in enumerate(raw)]
    out.sort(key=lambda m: m.seq)
    return out


def message_to_wire(message: Message) -> dict[str, Any]:
    """The wire dict of a message (content always as a list of blocks).

    >>> message_to_wire(Message(0, "user", (TextBlock("hi"),)))["content"]
    [{'type': 'text', 'text': 'hi'}]
    """
    out: dict[str, Any] = {
        "seq": message.seq,
        "role": message.role,
        "content": [b.to_wire() for b in message.content],
    }
    if message.timestamp is not None:
        out["timestamp"] = message.timestamp
    if message.usage is not None:
        out["usage"] = message.usage.to_dict()
    if message.model is not None:
        out["model"] = message.model
    return out


def to_api_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(system text, API ``messages``) ready for the Messages API.

    System messages go to the system text. Thinking without a signature (redacted in traces)
    cannot be sent back and is dropped, images by reference become a text note unless they point
    at a url or a file, and seq, timestamp and usage stay behind.

    >>> to_api_messages([Message(0, "system", (TextBlock("Be brief."),)),
    ...                  Message(1, "user", (TextBlock("hi"),))])
    ('Be brief.', [{'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}])
    """
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            system.append(m.text)
            continue
        blocks: list[dict[str, Any]] = []
        for b in m.content:
            if isinstance(b, ThinkingBlock) and not b.redacted and not b.signature:
                continue
            if isinstance(b, ImageBlock) and b.source_type not in ("url", "file"):
                blocks.append({"type": "text", "text": f"[image {b.ref}]"})
                continue
            if isinstance(b, ImageBlock):
                source = b.to_wire()["source"]
                source.pop("size_bytes", None)
                source.pop("media_type", None)
                blocks.append({"type": "image", "source": source})
                continue
            blocks.append(b.to_wire())
        if not blocks:
            blocks = [{"type": "text", "text": "."}]
        out.append({"role": m.role, "content": blocks})
    return "\n\n".join(system), out


@dataclass(frozen=True, slots=True)
class ObservedCompaction:
    """A compaction the original harness performed, as a trace reports it.

    ``seq`` is the seq of the first message the agent sent after compacting (DESIGN.md).
    """

    seq: int
    trigger: str
    strategy: str = "summarize"
    tokens_before: int | None = None
    tokens_after: int | None = None
    summary: str | None = None
    replaced_from: int | None = None
    replaced_to: int | None = None
    duration_ms: int | None = None
    error: str | None = None
    # Where the summary sits in the raw trace, if a message carries it (else ``summary``).
    summary_seq: int | None = None
    # The kept head/tail seq ranges, as the harness reported them.
    kept: Mapping[str, Any] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        replaced = (
            {"from_seq": self.replaced_from, "to_seq": self.replaced_to}
            if self.replaced_from is not None and self.replaced_to is not None
            else None
        )
        return {
            "seq": self.seq,
            "trigger": self.trigger,
            "strategy": self.strategy,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "summary": self.summary,
            "replaced": replaced,
            "duration_ms": self.duration_ms,
            "error": self.error,
        }
