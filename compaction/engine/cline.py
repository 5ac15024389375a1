"""Cline tasks (``.../saoudrizwan.claude-dev/tasks/<task id>/``) read into messages.

A task folder holds two files, both Cline's own (cline/cline, ``src/shared/ExtensionMessage.ts``
``ClineMessage`` and ``src/core/context/context-management/ContextManager.ts``):

* ``api_conversation_history.json``: what was sent to the model, a list of Anthropic
  ``MessageParam`` (``{role, content}``; content a string or blocks);
* ``ui_messages.json``: what the UI showed, a list of ``ClineMessage`` ``{ts, type: "ask" |
  "say", ask?, say?, text?, conversationHistoryIndex?, conversationHistoryDeletedRange?,
  modelInfo?}``. Each request to the model is a ``say: "api_req_started"`` whose ``text`` is
  JSON: ``{request, tokensIn, tokensOut, cacheWrites, cacheReads, cost}``.

The rules, made exact:

* A model call is an ``api_req_started`` whose text reports tokens (a request that failed or
  was cancelled before any token, ``cancelReason`` and all counts zero, is none). Its usage
  is Anthropic's shape already (``tokensIn`` leaves the cache out): ``input_tokens =
  tokensIn``,
  ``cache_read_input_tokens = cacheReads``, ``cache_creation_input_tokens = cacheWrites``;
  ``cost`` is Cline's own figure, kept as ``reported_usd`` beside the product's price.
* A call's response is the assistant message that follows the history index it names
  (``conversationHistoryIndex`` + 1); without indexes (older Cline), the n-th call is the n-th
  assistant message. A call with no response in the history (cancelled, failed) is still a
  call: an empty assistant message carries its usage.
* Cline truncates the history by itself when the context nears the window
  (``ContextManager``): the range it leaves out, ``conversationHistoryDeletedRange`` ``[start,
  end]`` (inclusive indexes into the history), is stamped on every UI message written while it
  is in force, and it changes while a request is being set up, after that request's
  ``api_req_started``. Each change is a truncation: the messages it newly drops, sized by the
  context of the last call before and the first call sent with it. The trigger is ``auto``,
  inferred from how Cline works, and marked as inferred.

>>> t = parse_task(ui=[{"ts": 1700000000000, "type": "say", "say": "task", "text": "hi"},
...     {"ts": 1700000001000, "type": "say", "say": "api_req_started",
...      "text": '{"tokensIn":10,"tokensOut":5,"cacheReads":900,"cacheWrites":100,"cost":0.01}',
...      "conversationHistoryIndex": 0}],
...     history=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
>>> t.calls, t.messages[1].usage.cache_read_input_tokens, t.reported_usd
(1, 900, 0.01)
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
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

MAX_TOKENS = 2**62
MAX_USD = 1e9


class ClineError(ValueError):
    """Input that is not a Cline task, naming the file and the entry."""


@dataclass(frozen=True, slots=True)
class ClineCall:
    """One ``api_req_started`` that reported tokens."""

    index: int  # position in ui_messages.json
    ts: str | None
    usage: Usage
    cost: float | None
    model: str | None
    history_index: int | None  # conversationHistoryIndex of the request


@dataclass(frozen=True, slots=True)
class ClineTruncation:
    """One change of the deleted range. ``seq`` is the first message after it (DESIGN.md)."""

    seq: int
    ui_index: int
    timestamp: str | None
    range_before: tuple[int, int] | None
    range_after: tuple[int, int]
    dropped: tuple[int, int] | None  # history indexes newly left out, inclusive
    tokens_before: int | None
    tokens_after: int | None


@dataclass
class ClineTask:
    """A task folder read whole."""

    messages: list[Message] = field(default_factory=list)
    truncations: list[ClineTruncation] = field(default_factory=list)
    calls: int = 0
    reported_usd: float | None = None
    models: list[str] = field(default_factory=list)
    started_at: str | None = None
    ended_at: str | None = None
    task: str | None = None
    ui_records: int = 0
    history_records: int = 0
    unmatched_calls: int = 0  # calls whose response is not in the history
    ignored: Counter[str] = field(default_factory=Counter)
    unknown: Counter[str] = field(default_factory=Counter)  # history roles not known, skipped


def _iso(ts: Any) -> str | None:
    if isinstance(ts, bool) or not isinstance(ts, int | float) or not math.isfinite(ts):
        return None
    try:
        return datetime.fromtimestamp(ts / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None


def _show(value: float) -> str:
    """A number for an error message, a huge one cut short."""
    text = f"{value:.6g}" if isinstance(value, float) else str(value)
    return text if len(text) <= 24 else f"{text[:6]}... ({len(text)} digits)"


def _count(value: Any, where: str) -> int:
    if value is None or isinstance(value, bool):
        return 0
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        if not 0 <= value <= MAX_TOKENS:
            raise ClineError(f"{where}: {_show(value)} is out of range")
        value = int(value)
    if not isinstance(value, int):
        raise ClineError(f"{where}: not a whole number ({value!r:.40})")
    if value < 0 or value > MAX_TOKENS:
        raise ClineError(f"{where}: {_show(value)} is out of range")
    return value


def request_info(text: Any, where: str) -> tuple[Usage, float | None] | None:
    """(usage, Cline's cost) of an ``api_req_started`` text, or None when it reports no tokens.

    >>> u, cost = request_info('{"tokensIn":3,"tokensOut":4,"cacheReads":5,"cacheWrites":6,'
    ...                        '"cost":0.2}', "x")
    >>> u.input_tokens, u.output_tokens, u.cache_read_input_tokens, cost
    (3, 4, 5, 0.2)
    """
    if not isinstance(text, str):
        return None
    try:
        info = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(info, Mapping) or not any(
        k in info for k in ("tokensIn", "tokensOut", "cacheReads", "cacheWrites")
    ):
        return None
    usage = Usage(
        input_tokens=_count(info.get("tokensIn"), f"{where}.tokensIn"),
        output_tokens=_count(info.get("tokensOut"), f"{where}.tokensOut"),
        cache_read_input_tokens=_count(info.get("cacheReads"), f"{where}.cacheReads"),
        cache_creation_input_tokens=_count(info.get("cacheWrites"), f"{where}.cacheWrites"),
    )
    if not (
        usage.input_tokens
        or usage.output_tokens
        or usage.cache_read_input_tokens
        or usage.cache_creation_input_tokens
    ):
        return None  # a request that failed or was cancelled before any token: no call
    cost = info.get("cost")
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost):
        cost = None
    elif not 0 <= cost <= MAX_USD:
        raise ClineError(f"{where}.cost: {cost} is out of range")
    return usage, (float(cost) if cost is not None else None)


def _range(value: Any) -> tuple[int, int] | None:
    if (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)
    ):
        return int(value[0]), int(value[1])
    return None


def _blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [TextBlock(content)]
    out: list[Block] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            out.append(TextBlock(str(block.get("text") or "")))
        elif kind == "tool_use":
            raw = block.get("input")
            out.append(
                ToolUseBlock(
                    str(block.get("id") or ""),
                    str(block.get("name") or "tool"),
                    raw if isinstance(raw, dict) else {},
                )
            )
        elif kind == "tool_result":
            inner = block.get("content")
            text = (
                inner
                if isinstance(inner, str)
                else "\n".join(
                    str(b.get("text") or "")
                    for b in (inner if isinstance(inner, list) else [])
                    if isinstance(b, Mapping) and b.get("type") == "text"
                )
            )
            out.append(
                ToolResultBlock(
                    str(block.get("tool_use_id") or ""), text, block.get("is_error") is True
                )
            )
        elif kind == "thinking":
            out.append(ThinkingBlock(str(block.get("thinking") or "")))
        elif kind == "image":
            out.append(TextBlock("[image]"))
    return out


def _model_of(msg: Mapping[str, Any]) -> str | None:
    info = msg.get("modelInfo")
    if isinstance(info, Mapping) and isinstance(info.get("modelId"), str) and info["modelId"]:
        return str(info["modelId"])
    return None


def _calls(ui: Sequence[Any], out: ClineTask) -> list[ClineCall]:
    calls: list[ClineCall] = []
    model: str | None = None
    for i, msg in enumerate(ui):
        if not isinstance(msg, Mapping):
            raise ClineError(f"ui_messages.json[{i}]: not an object")
        model = _model_of(msg) or model
        if msg.get("say") != "api_req_started":
            continue
        info = request_info(msg.get("text"), f"ui_messages.json[{i}].text")
        if info is None:
            out.ignored["api_req_started without tokens (failed or cancelled)"] += 1
            continue
        usage, cost = info
        h = msg.get("conversationHistoryIndex")
        history_index = h if isinstance(h, int) and not isinstance(h, bool) else None
        calls.append(ClineCall(i, _iso(msg.get("ts")), usage, cost, model, history_index))
    return calls


def parse_task(
    *,
    ui: Sequence[Any],
    history: Sequence[Any] | None,
    model: str | None = None,
) -> ClineTask:
    """Read a task's two lists (``history`` None: only ``ui_messages.json`` was there)."""
    out = ClineTask(ui_records=len(ui), history_records=len(history or ()))
    calls = _calls(ui, out)
    out.calls = len(calls)
    costs = [c.cost for c in calls if c.cost is not None]
    out.reported_usd = round(sum(costs), 6) if costs else None
    for msg in ui:
        if msg.get("say") == "task" and isinstance(msg.get("text"), str):
            out.task = msg["text"]
            break
    stamps = [_iso(m.get("ts")) for m in ui]
    known = [s for s in stamps if s]
    out.started_at, out.ended_at = (known[0], known[-1]) if known else (None, None)

    # Which history message answers which call.
    entries: list[tuple[str, list[Block], str | None]] = []  # role, blocks, ts
    for i, item in enumerate(history or ()):
        if not isinstance(item, Mapping) or not isinstance(item.get("role"), str):
            raise ClineError(f"api_conversation_history.json[{i}]: not a {{role, content}} object")
        role = str(item["role"])
        if role not in ("user", "assistant"):
            # A role this reader does not know: skipped and counted, its place kept so the
            # calls' history indexes still point where Cline wrote them.
            out.unknown[f"history role {role[:40]!r}"] += 1
        entries.append((role, _blocks(item.get("content")), _iso(item.get("ts"))))
    assistants = [i for i, (role, _, _) in enumerate(entries) if role == "assistant"]
    answer: dict[int, int] = {}  # history index -> call number
    extra_after: dict[int, list[int]] = {}  # history index -> calls with no response
    indexed = calls and all(c.history_index is not None for c in calls)
    used: set[int] = set()
    for n, call in enumerate(calls if entries else []):
        target: int | None = None
        if indexed:
            assert call.history_index is not None
            guess = call.history_index + 1
            if 0 <= guess < len(entries) and entries[guess][0] == "assistant":
                target = guess
        elif n < len(assistants):
            target = assistants[n]
        if target is not None and target not in used:
            used.add(target)
            answer[target] = n
        else:
            at = call.history_index if call.history_index is not None else len(entries) - 1
            extra_after.setdefault(min(max(at, -1), len(entries) - 1), []).append(n)
            out.unmatched_calls += 1

    first_model = next((c.model for c in calls if c.model), model)
    if first_model:
        out.models.append(first_model)
    for c in calls:
        if c.model and c.model not in out.models:
            out.models.append(c.model)
    call_seq: dict[int, int] = {}

    def add(role: Role, blocks: list[Block], ts: str | None, n: int | None) -> None:
        seq = len(out.messages)
        usage = calls[n].usage if n is not None else None
        own = calls[n].model if n is not None else None
        own = own if own and own != first_model else None
        if n is not None:
            call_seq[n] = seq
            ts = ts or calls[n].ts
        out.messages.append(Message(seq, role, tuple(blocks), ts, usage, own))

    if not entries:  # only the UI file: one assistant message a call, with the task first
        if out.task is not None:
            add("user", [TextBlock(out.task)], out.started_at, None)
        for n in range(len(calls)):
            add("assistant", [], None, n)
    for n in extra_after.get(-1, []):
        add("assistant", [], None, n)
    for i, (role, blocks, ts) in enumerate(entries):
        if role in ("user", "assistant"):
            add("assistant" if role == "assistant" else "user", blocks, ts, answer.get(i))
        for n in extra_after.get(i, []):
            add("assistant", [], None, n)
    _truncations(ui, calls, call_seq, out)
    return out


def _truncations(
    ui: Sequence[Any], calls: list[ClineCall], call_seq: dict[int, int], out: ClineTask
) -> None:
    """Each change of ``conversationHistoryDeletedRange``: the range it newly dropped, placed at
    the request that was set up while it changed (the last ``api_req_started`` before it)."""
    by_ui = {c.index: n for n, c in enumerate(calls)}
    current: tuple[int, int] | None = None
    last_call: int | None = None
    for i, msg in enumerate(ui):
        if i in by_ui:
            last_call = by_ui[i]
        if "conversationHistoryDeletedRange" not in msg:
            continue
        new = _range(msg.get("conversationHistoryDeletedRange"))
        if new is None or new == current:
            continue
        previous = current
        current = new
        if previous is None:
            dropped: tuple[int, int] | None = new
        elif new[1] > previous[1]:
            dropped = (max(previous[1] + 1, new[0]), new[1])
        else:
            dropped = None  # the range shrank or moved back (a checkpoint restored)
        if last_call is None:
            n = None
        elif i == calls[last_call].index and last_call > 0:
            n = last_call - 1  # stamped first on a request's own start: set up for the one before
        else:
            n = last_call
        after = context_size(calls[n].usage) if n is not None else None
        before = context_size(calls[n - 1].usage) if n is not None and n > 0 else None
        seq = call_seq.get(n, len(out.messages)) if n is not None else 0
        out.truncations.append(
            ClineTruncation(
                seq=seq,
                ui_index=i,
                timestamp=_iso(msg.get("ts")),
                range_before=previous,
                range_after=new,
                dropped=dropped,
                tokens_before=before,
                tokens_after=after,
            )
        )


def _load(data: bytes, name: str) -> list[Any]:
    try:
        value = json.loads(data)
    except RecursionError:
        raise ClineError(f"{name}: nested too deeply") from None
    except UnicodeDecodeError as exc:
        raise ClineError(f"{name}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        raise ClineError(f"{name}: not JSON ({exc})") from None
    if not isinstance(value, list):
        raise ClineError(f"{name}: not a JSON list")
    return value


def parse_task_bytes(ui: bytes, history: bytes | None, model: str | None = None) -> ClineTask:
    """:func:`parse_task` of the two files' bytes."""
    ui_list = _load(ui, "ui_messages.json")
    for i, msg in enumerate(ui_list):
        if not isinstance(msg, Mapping):
            raise ClineError(f"ui_messages.json[{i}]: not an object")
    history_list = _load(history, "api_conversation_history.json") if history is not None else None
    return parse_task(ui=ui_list, history=history_list, model=model)
