"""Gemini CLI chats (``~/.gemini/tmp/<project>/chats/``) read into messages.

The format is Gemini CLI's own (google-gemini/gemini-cli,
``packages/core/src/services/chatRecordingTypes.ts`` and ``chatRecordingService.ts``):

* the *single-JSON* chat file ``session-*.json``: a ``ConversationRecord`` ``{sessionId,
  projectHash, startTime, lastUpdated, messages: [MessageRecord], summary?, kind?}``;
* the newer *JSON Lines* form ``session-*.jsonl``: a first line with the record's metadata,
  then one line per write: a ``MessageRecord`` (it has an ``id``; a message written again
  under the same id replaces the earlier write in place: Gemini adds the tokens and the tool
  calls' results after the text), ``{"$set": {...}}`` (a metadata update; ``messages`` in it
  replaces the history, as after a compression) or ``{"$rewindTo": id}`` (that message and
  everything after it are gone);
* the ``/chat save`` checkpoint ``checkpoint-*.json``: the API history itself, a list of
  ``{role: "user"|"model", parts}`` (or ``{"history": [...]}``), with no token counts.

A ``MessageRecord`` is ``user``, ``gemini``, ``info``, ``error`` or ``warning``. The rules:

* A model call is a ``gemini`` message with ``tokens`` (a ``TokensSummary``: ``input`` is the
  prompt, cached tokens included; ``cached``; ``output``; ``thoughts``; ``tool`` the tool-use
  prompt, which the prompt count leaves out). The product's usage keeps cache reads apart, so
  ``input_tokens = input - cached + tool``, ``cache_read_input_tokens = cached`` and
  ``output_tokens = output + thoughts`` (thoughts are billed as output): the context
  (input + cache read) is ``input + tool``, counted once. ``tokens`` with every count zero
  are no measurement (a prompt is never empty): real chats hold them where Gemini CLI had no
  counts to record, on a request interrupted before any (an empty last message), on a
  response whose usage came without counts, and on a message of tool calls alone that a UI
  message (a hook's ``warning``) split off the call that made them. Such a message is kept,
  with its tool calls, but without usage: it is not a call.
* Its ``toolCalls`` are the call's tool uses; their results (``result``, a ``functionResponse``
  part) follow as one user message, an ``error`` or ``cancelled`` status marking the result as
  an error. ``info``, ``error`` and ``warning`` messages are the UI's, never sent to the model:
  counted, not stored.
* A compression is what Gemini leaves of it: the ``<state_snapshot>`` summary that starts the
  new history, and/or the figures it reports ("Chat history compressed from 526049 to 115614
  tokens", ``originalTokenCount`` / ``newTokenCount``). The reported figures are the
  compaction's size before and after; without them, the context of the last call before and
  the first call after. Gemini does not record why it compressed: the trigger is inferred
  from how full the window was (``auto`` at half the window or more, Gemini's default
  threshold) and marked as inferred.

>>> r = parse_chat_bytes(b'{"sessionId":"s1","projectHash":"h","messages":['
...     b'{"id":"a","timestamp":"t0","type":"user","content":"hi"},'
...     b'{"id":"b","timestamp":"t1","type":"gemini","content":"hello","model":"gemini-2.5-pro",'
...     b'"tokens":{"input":900,"output":5,"cached":800,"thoughts":20,"tool":0,"total":925}}]}')
>>> u = r.messages[1].usage
>>> r.session_id, r.calls, u.cache_read_input_tokens, u.output_tokens
('s1', 1, 800, 25)
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from compaction.engine.messages import (
    Block,
    Message,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from compaction.engine.tokens import context_size

# Gemini's own limit for its models (``tokenLimit``) and its compression threshold.
GEMINI_WINDOW = 1_048_576
AUTO_TRIGGER_FILL = 0.5
SNAPSHOT_TAG = "<state_snapshot>"
# "Chat history compressed from 526049 to 115614 tokens." and the notice of the interactive
# UI, "(compressed from: 526049 to 115614 tokens)": the colon is optional.
_COMPRESSED = re.compile(r"compressed from:?\s+([\d,]+)\s+to\s+([\d,]+)\s+tokens", re.IGNORECASE)
_CANCELLED = frozenset({"cancelled", "canceled"})
# The model of a message that holds only tool calls the user cancelled, with no tokens: the
# request never completed, so it is kept but is not a call (``messages.NOT_A_MODEL``).
INTERRUPTED = "<interrupted>"
_ERROR_STATUSES = frozenset({"error", "cancelled", "canceled"})
_UI_TYPES = frozenset({"info", "error", "warning"})
MAX_TOKENS = 2**62  # larger counts are not counts: refused, naming the message


class GeminiError(ValueError):
    """Input that is not a Gemini CLI chat; ``line`` is 1-based (0: the whole file)."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}" if line else reason)
        self.line = line
        self.reason = reason


@dataclass(frozen=True, slots=True)
class GeminiCompaction:
    """One compression. ``seq`` is the first message after it (DESIGN.md)."""

    seq: int
    summary: str
    summary_seq: int | None
    tokens_before: int | None
    tokens_after: int | None
    tokens_before_source: str | None  # "reported" (Gemini's figure) or "last_call"
    tokens_after_source: str | None  # "reported" or "next_call"
    reported_before: int | None
    reported_after: int | None
    trigger: str
    trigger_basis: str


@dataclass
class GeminiChat:
    """A chat file read whole: the session's facts, messages and compressions."""

    form: str = ""  # "json", "jsonl" or "checkpoint"
    session_id: str | None = None
    kind: str = "session"  # "subagent" when the record says so
    meta: dict[str, Any] = field(default_factory=dict)
    started_at: str | None = None
    ended_at: str | None = None
    models: list[str] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    compactions: list[GeminiCompaction] = field(default_factory=list)
    calls: int = 0
    interrupted: int = 0  # messages of cancelled tool calls alone, without tokens: not calls
    tool_calls: Counter[str] = field(default_factory=Counter)  # by status
    records: int = 0
    rewound: int = 0  # messages a ``$rewindTo`` removed
    ignored: Counter[str] = field(default_factory=Counter)
    unknown: Counter[str] = field(default_factory=Counter)  # record and message types not known
    # Where what a later write of the file could still change begins (a chat read while
    # Gemini CLI writes it): the last response, which Gemini rewrites in place as its tokens
    # and tool results arrive, and what follows it; and the compression no call has followed
    # yet. ``size`` grows as the chat does (records, or messages of the single-JSON form).
    open_messages: int = 0
    open_compactions: int | None = None
    size: int = 0
    # JSON Lines: (record number, first message seq it changed) of each line that changed
    # what earlier lines wrote (a ``$rewindTo``, a ``$set`` of the history, a message
    # written again under its id): an import that read fewer records has rows from that seq
    # on that the file now holds differently.
    rewrites: list[tuple[int, int]] = field(default_factory=list)


def is_chat_start(record: Mapping[str, Any]) -> bool:
    """The first record of a chat in JSON Lines: its ``sessionId`` and ``projectHash``."""
    return isinstance(record.get("sessionId"), str) and "projectHash" in record


def _show(value: float) -> str:
    """A number for an error message, a huge one cut short."""
    text = f"{value:.6g}" if isinstance(value, float) else str(value)
    return text if len(text) <= 24 else f"{text[:6]}... ({len(text)} digits)"


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or value is None:
        return 0
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        if not 0 <= value <= MAX_TOKENS:
            raise GeminiError(0, f"{where}: {_show(value)} is out of range")
        value = int(value)
    if not isinstance(value, int):
        raise GeminiError(0, f"{where}: not a whole number ({value!r:.40})")
    if value < 0 or value > MAX_TOKENS:
        raise GeminiError(0, f"{where}: {_show(value)} is out of range")
    return value


def usage_from_gemini(tokens: Mapping[str, Any], where: str = "tokens") -> Usage:
    """The product's usage of one ``TokensSummary`` (cached tokens split out).

    >>> u = usage_from_gemini({"input": 1000, "cached": 900, "output": 40, "thoughts": 30,
    ...                        "tool": 10, "total": 1080})
    >>> (u.input_tokens, u.cache_read_input_tokens, u.output_tokens, context_size(u))
    (110, 900, 70, 1010)
    """
    prompt = _int(tokens.get("input"), f"{where}.input")
    cached = min(_int(tokens.get("cached"), f"{where}.cached"), prompt)
    tool = _int(tokens.get("tool"), f"{where}.tool")
    return Usage(
        input_tokens=prompt - cached + tool,
        output_tokens=_int(tokens.get("output"), f"{where}.output")
        + _int(tokens.get("thoughts"), f"{where}.thoughts"),
        cache_read_input_tokens=cached,
    )


def reported_figures(text: str) -> tuple[int, int] | None:
    """(before, after) of Gemini's "compressed from X to Y tokens", if the text says it.

    >>> reported_figures("Chat history compressed from 526,049 to 115614 tokens.")
    (526049, 115614)
    """
    found = _COMPRESSED.search(text)
    if found is None:
        return None
    return int(found.group(1).replace(",", "")), int(found.group(2).replace(",", ""))


def _parts(content: Any) -> list[Any]:
    if content is None:
        return []
    if isinstance(content, list):
        return content
    return [content]


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    text = part.get("text") if isinstance(part, Mapping) else None
    return text if isinstance(text, str) else ""


def _text(content: Any) -> str:
    return "".join(_part_text(p) for p in _parts(content))


def _response_text(response: Any) -> str:
    if isinstance(response, Mapping):
        for key in ("output", "error", "content"):
            if isinstance(response.get(key), str):
                return str(response[key])
    if isinstance(response, str):
        return response
    return "" if response is None else json.dumps(response, ensure_ascii=False)


def _result_text(call: Mapping[str, Any]) -> str:
    texts = []
    for part in _parts(call.get("result")):
        if isinstance(part, Mapping) and isinstance(part.get("functionResponse"), Mapping):
            texts.append(_response_text(part["functionResponse"].get("response")))
        else:
            texts.append(_part_text(part))
    text = "\n".join(t for t in texts if t)
    if not text and isinstance(call.get("resultDisplay"), str):
        text = call["resultDisplay"]
    return text


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class _Builder:
    """Turns Gemini's message records (or checkpoint contents) into the product's messages."""

    def __init__(self, out: GeminiChat) -> None:
        self.out = out
        self.last_context: int | None = None
        self.open: int | None = None  # index of a compaction still missing a call after it
        self.calls_since_open = 0
        self._before_of_open: int | None = None

    def _append(
        self,
        role: Role,
        blocks: list[Block],
        ts: str | None,
        usage: Usage | None = None,
        model: str | None = None,
    ) -> int:
        seq = len(self.out.messages)
        own_model = model if model and self.out.models and model != self.out.models[0] else None
        if model == INTERRUPTED:
            own_model = model
        self.out.messages.append(Message(seq, role, tuple(blocks), ts, usage, own_model))
        if ts:
            self.out.started_at = self.out.started_at or ts
            self.out.ended_at = ts
        return seq

    # --- compressions ----------------------------------------------------------------------

    def compression(
        self, *, summary: str = "", summary_seq: int | None = None, figures: Any = None
    ) -> None:
        """A snapshot or a reported figure: one compaction, merged with the other half if no
        call came between them."""
        before_r, after_r = figures if figures else (None, None)
        index = self.open
        if index is not None and self.calls_since_open == 0:
            old = self.out.compactions[index]
            self.out.compactions[index] = replace(
                old,
                summary=old.summary or summary,
                summary_seq=old.summary_seq if old.summary_seq is not None else summary_seq,
                reported_before=old.reported_before or before_r,
                reported_after=old.reported_after or after_r,
            )
            return
        seq = summary_seq if summary_seq is not None else len(self.out.messages)
        self.out.compactions.append(
            GeminiCompaction(
                seq=seq,
                summary=summary,
                summary_seq=summary_seq,
                tokens_before=None,
                tokens_after=None,
                tokens_before_source=None,
                tokens_after_source=None,
                reported_before=before_r,
                reported_after=after_r,
                trigger="unknown",
                trigger_basis="",
            )
        )
        self.open, self.calls_since_open = len(self.out.compactions) - 1, 0
        self._before_of_open = self.last_context

    def _call_seen(self, context: int) -> None:
        if self.open is not None and self.calls_since_open == 0:
            self._settle(self.open, after=context)
        self.calls_since_open += 1
        self.last_context = context

    def _settle(self, index: int, after: int | None) -> None:
        c = self.out.compactions[index]
        before, before_src = (
            (c.reported_before, "reported")
            if c.reported_before is not None
            else (self._before_of_open, "last_call" if self._before_of_open else None)
        )
        after_v, after_src = (
            (c.reported_after, "reported")
            if c.reported_after is not None
            else (after, "next_call" if after is not None else None)
        )
        window = GEMINI_WINDOW
        if before is None:
            trigger, basis = "unknown", "no size before it"
        else:
            fill = before / window
            trigger = "auto" if fill >= AUTO_TRIGGER_FILL else "manual"
            basis = (
                f"inferred: context {before:,} of {window:,} tokens ({fill:.0%}) before it; "
                f"Gemini CLI compresses by itself at {AUTO_TRIGGER_FILL:.0%} of the window, "
                "so that or more reads as auto and less as manual (/compress)"
            )
        self.out.compactions[index] = replace(
            c,
            tokens_before=before,
            tokens_after=after_v,
            tokens_before_source=before_src if before is not None else None,
            tokens_after_source=after_src,
            trigger=trigger,
            trigger_basis=basis,
        )

    def finish(self) -> None:
        answers = [m.seq for m in self.out.messages if m.role == "assistant"]
        self.out.open_messages = answers[-1] if answers else len(self.out.messages)
        if self.open is not None and self.calls_since_open == 0:
            self.out.open_compactions = self.out.compactions[self.open].seq
            self._settle(self.open, after=None)

    # --- message records --------------------------------------------------------------------

    def record(self, msg: Mapping[str, Any], where: str) -> None:
        kind = msg.get("type")
        ts = _str(msg.get("timestamp"))
        content = msg.get("content")
        if kind == "user":
            self._user(content, ts)
        elif kind == "gemini":
            self._gemini(msg, ts, where)
        elif kind in _UI_TYPES:
            figures = reported_figures(_text(content))
            if figures is not None:
                self.compression(figures=figures)
            self.out.ignored[f"{kind} message"] += 1
        else:
            self.out.unknown[f"message type {kind!r:.40}"] += 1

    def _user(self, content: Any, ts: str | None) -> None:
        results: list[Block] = []
        texts: list[str] = []
        for part in _parts(content):
            if isinstance(part, Mapping) and isinstance(part.get("functionResponse"), Mapping):
                fr = part["functionResponse"]
                results.append(
                    ToolResultBlock(str(fr.get("id") or ""), _response_text(fr.get("response")))
                )
            else:
                texts.append(_part_text(part))
        text = "".join(texts)
        blocks: list[Block] = [*results, *([TextBlock(text)] if text or not results else [])]
        seq = self._append("user", blocks, ts)
        if SNAPSHOT_TAG in text:
            self.compression(summary=text, summary_seq=seq)

    def _gemini(self, msg: Mapping[str, Any], ts: str | None, where: str) -> None:
        blocks: list[Block] = []
        for thought in msg.get("thoughts") or []:
            if isinstance(thought, Mapping):
                subject = _str(thought.get("subject")) or ""
                body = _str(thought.get("description")) or ""
                text = f"{subject}: {body}" if subject and body else subject or body
                if text:
                    blocks.append(ThinkingBlock(text))
        for part in _parts(msg.get("content")):
            if isinstance(part, Mapping) and part.get("thought") is True:
                blocks.append(ThinkingBlock(_part_text(part)))
            elif _part_text(part):
                blocks.append(TextBlock(_part_text(part)))
        calls = msg.get("toolCalls")
        results: list[Block] = []
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, Mapping):
                continue
            call_id = str(call.get("id") or "")
            args = call.get("args")
            blocks.append(
                ToolUseBlock(
                    call_id, str(call.get("name") or "tool"), args if isinstance(args, dict) else {}
                )
            )
            status = str(call.get("status") or "unknown")
            self.out.tool_calls[status] += 1
            if call.get("result") is not None or call.get("resultDisplay") is not None:
                results.append(
                    ToolResultBlock(call_id, _result_text(call), status in _ERROR_STATUSES)
                )
        tokens = msg.get("tokens")
        usage = (
            usage_from_gemini(tokens, f"{where}.tokens") if isinstance(tokens, Mapping) else None
        )
        statuses = [str(c.get("status") or "") for c in calls or [] if isinstance(c, Mapping)]
        spoke = any(isinstance(b, TextBlock) and b.text.strip() for b in blocks)
        if tokens is None and statuses and set(statuses) <= _CANCELLED and not spoke:
            # Only tool calls the user cancelled, no tokens: the request never completed.
            self.out.interrupted += 1
            self._append("assistant", blocks, ts, None, INTERRUPTED)
            if results:
                self._append("user", results, ts)
            return
        if usage is not None and context_size(usage) == 0 and usage.output_tokens == 0:
            usage = None  # every count zero: Gemini recorded no usage for this message
            self.out.ignored["gemini message with all-zero tokens (no usage recorded)"] += 1
        model = _str(msg.get("model"))
        if model and model not in self.out.models:
            self.out.models.append(model)
        if usage is None and not spoke and not statuses:
            # Thoughts at most, no text, no tool call, no counts: a request cut off while the
            # model was still thinking (the last message of an abandoned run). Not a call.
            self.out.interrupted += 1
            model = INTERRUPTED
        self._append("assistant", blocks, ts, usage, model)
        if usage is not None:
            self.out.calls += 1
            self._call_seen(context_size(usage))
        if results:
            self._append("user", results, ts)

    # --- checkpoint contents ----------------------------------------------------------------

    def content(self, item: Mapping[str, Any]) -> None:
        role = item.get("role")
        parts = _parts(item.get("parts"))
        if role == "model":
            blocks: list[Block] = []
            for part in parts:
                if not isinstance(part, Mapping):
                    continue
                if isinstance(part.get("functionCall"), Mapping):
                    fc = part["functionCall"]
                    args = fc.get("args")
                    blocks.append(
                        ToolUseBlock(
                            str(fc.get("id") or ""),
                            str(fc.get("name") or "tool"),
                            args if isinstance(args, dict) else {},
                        )
                    )
                elif part.get("thought") is True:
                    blocks.append(ThinkingBlock(_part_text(part)))
                elif _part_text(part):
                    blocks.append(TextBlock(_part_text(part)))
            self._append("assistant", blocks, None)
        elif role == "user":
            self._user(parts, None)
        else:
            self.out.ignored[f"content role {role!r:.40}"] += 1


def _check_message(record: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(record, Mapping):
        raise GeminiError(0, f"{where}: not a JSON object")
    if not isinstance(record.get("type"), str):
        raise GeminiError(0, f"{where}: type is missing or not a string")
    tokens = record.get("tokens")
    if tokens is not None and not isinstance(tokens, Mapping):
        raise GeminiError(0, f"{where}.tokens: not an object")
    return record


def _meta(out: GeminiChat, record: Mapping[str, Any]) -> None:
    sid = _str(record.get("sessionId"))
    if sid and out.session_id is None:
        out.session_id = sid
    for key in ("projectHash", "summary", "directories", "kind"):
        if record.get(key) not in (None, "", []):
            out.meta[key] = record[key]
    if record.get("kind") == "subagent":
        out.kind = "subagent"
    start = _str(record.get("startTime"))
    if start and out.started_at is None:
        out.started_at = start


def _build(
    out: GeminiChat,
    messages: list[Mapping[str, Any]],
    wheres: list[str],
    starts: list[int] | None = None,
) -> GeminiChat:
    """Build the messages; ``starts`` (if given) gets the first seq of each record's."""
    builder = _Builder(out)
    for msg, where in zip(messages, wheres, strict=True):
        if starts is not None:
            starts.append(len(out.messages))
        try:
            builder.record(msg, where)
        except GeminiError as exc:
            raise GeminiError(exc.line, exc.reason) from None
    builder.finish()
    return out


def _single(record: Mapping[str, Any]) -> GeminiChat:
    out = GeminiChat(form="json", records=1)
    _meta(out, record)
    raw = record.get("messages")
    if not isinstance(raw, list):
        raise GeminiError(0, "messages: not a list")
    messages = [_check_message(m, f"messages[{i}]") for i, m in enumerate(raw)]
    out.started_at = out.started_at or _str(record.get("startTime"))
    chat = _build(out, messages, [f"messages[{i}]" for i in range(len(messages))])
    chat.size = len(messages)
    chat.ended_at = chat.ended_at or _str(record.get("lastUpdated"))
    return chat


def _checkpoint(history: list[Any]) -> GeminiChat:
    out = GeminiChat(form="checkpoint", records=len(history))
    builder = _Builder(out)
    for i, item in enumerate(history):
        if not isinstance(item, Mapping) or not isinstance(item.get("role"), str):
            raise GeminiError(0, f"history[{i}]: not a {{role, parts}} object")
        builder.content(item)
    builder.finish()
    out.size = len(history)
    return out


def _jsonl(lines: list[tuple[int, str]]) -> GeminiChat:
    out = GeminiChat(form="jsonl")
    order: dict[str, tuple[Mapping[str, Any], int]] = {}  # id -> (last write, line)
    cuts: list[tuple[int, int]] = []  # (record number, index in ``order`` it changed from)
    for number, text in lines:
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise GeminiError(number, f"not JSON ({exc})") from None
        if not isinstance(record, Mapping):
            raise GeminiError(number, "not a JSON object")
        out.records += 1
        if isinstance(record.get("$rewindTo"), str):
            target = record["$rewindTo"]
            ids = list(order)
            cut = ids.index(target) if target in ids else 0
            cuts.append((out.records, cut))
            for gone in ids[cut:]:
                del order[gone]
                out.rewound += 1
        elif isinstance(record.get("id"), str):
            try:
                _check_message(record, "message")
            except GeminiError as exc:
                raise GeminiError(number, exc.reason) from None
            previous = order.get(record["id"])
            if previous is not None:
                cuts.append((out.records, list(order).index(record["id"])))
            order[record["id"]] = (record, previous[1] if previous else number)
        elif "$set" in record:
            update = record["$set"]
            if not isinstance(update, Mapping):
                raise GeminiError(number, "$set: not an object")
            history = update.get("messages")
            if isinstance(history, list):  # the history replaced (after a compression)
                cuts.append((out.records, 0))
                order = {}
                for i, m in enumerate(history):
                    try:
                        checked = _check_message(m, f"$set.messages[{i}]")
                    except GeminiError as exc:
                        raise GeminiError(number, exc.reason) from None
                    order[str(checked.get("id") or f"{number}:{i}")] = (checked, number)
            _meta(out, update)
            if _str(update.get("lastUpdated")):
                out.meta["lastUpdated"] = update["lastUpdated"]
        elif isinstance(record.get("sessionId"), str):
            _meta(out, record)
        else:
            out.unknown["record without id, $set or $rewindTo"] += 1
    if out.session_id is None:
        raise GeminiError(1, "no sessionId: not a Gemini CLI chat")
    records = list(order.values())
    starts: list[int] = []
    chat = _build(out, [r for r, _ in records], [f"line {n}" for _, n in records], starts)
    chat.size = out.records
    chat.rewrites = [
        (record, starts[cut] if cut < len(starts) else len(chat.messages)) for record, cut in cuts
    ]
    chat.ended_at = chat.ended_at or _str(chat.meta.pop("lastUpdated", None))
    return chat


def split_lines(data: bytes) -> list[tuple[int, str]]:
    """(1-based line number, text) of each non-blank line, split on ``\\n`` only."""
    out = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        text = raw.rstrip(b"\r")
        if not text.strip():
            continue
        try:
            out.append((number, text.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise GeminiError(number, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    return out


def parse_chat_bytes(data: bytes) -> GeminiChat:
    """Read a chat file of any of the three forms; bad input raises :class:`GeminiError`."""
    try:
        whole = json.loads(data)
    except RecursionError:
        raise GeminiError(0, "nested too deeply") from None
    except ValueError:
        whole = None
    if isinstance(whole, list):
        return _checkpoint(whole)
    if isinstance(whole, Mapping):
        if isinstance(whole.get("history"), list):
            return _checkpoint(whole["history"])
        if "messages" in whole:
            return _single(whole)
    try:
        return _jsonl(split_lines(data))
    except RecursionError:
        raise GeminiError(0, "nested too deeply") from None
