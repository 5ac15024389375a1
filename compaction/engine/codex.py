"""Codex rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) read into messages.

The format is Codex's own (openai/codex, ``codex-rs/protocol/src/protocol.rs``): each line
is a ``RolloutLine`` ``{"timestamp", "type", "payload"}`` whose ``type`` is ``session_meta``,
``response_item`` (a Responses API item: ``message``, ``reasoning``, ``function_call``,
``custom_tool_call`` and their ``*_output``), ``turn_context`` (the model of the turn),
``compacted`` (a ``CompactedItem``) or ``event_msg`` (UI events; ``token_count`` carries the
usage). Rollouts older than the envelope (2025) hold the items bare, one per line, after a
first line with the session's id; both are read.

The rules, made exact:

* A model call is a ``token_count`` whose running total (``total_token_usage.total_tokens``)
  changed: it grew, or started again (a resumed session's new process counts from zero).
  Codex writes the same count two or three times, and after a compaction writes a synthetic
  one (the same total, ``last_token_usage`` holding only Codex's estimate of the new context,
  written just before the ``compacted`` line and again after it): neither is a call.
* A compaction's ``tokens_before`` is the context of the last call before it, its
  ``tokens_after`` the context of the first call after it (what the model saw); Codex's own
  estimate is kept beside it (``codex_estimate_after``) and stands in only when no call
  follows. The estimate can be far off: it counts the encrypted summary's bytes.
* A call's usage is its ``last_token_usage``. Codex's ``input_tokens`` includes the cached
  tokens; the product's usage keeps cache reads apart (Anthropic's shape), so ``input_tokens``
  becomes ``input - cached`` and ``cache_read_input_tokens`` the cached part: the context
  (input + cache read) is Codex's ``input_tokens``, counted once.
* The assistant items written before a call's ``token_count`` are that call's response (in
  a file that counts first, as 0.57 did, those written after it); a call with no item of its
  own just before a ``compacted`` line is the summarizer's. A response with no count is no
  call when the user aborted its turn or the file ends before its turn completed.
* A ``compacted`` line is a compaction: *remote* when its ``message`` is empty (the summary is
  an encrypted item in ``replacement_history``), *local* when ``message`` is the summary.
  Codex does not record why it compacted: the trigger is inferred from how full the window
  was (``auto`` at 80 % or more) and marked as inferred.
* A fork or a spawned agent starts with a copy of its parent's lines (the parent's
  ``session_meta`` second). Where the lines carry an ``ordinal`` and the header
  ``subagent_history_start_ordinal``, the copy is left out; otherwise the file is marked
  ``relogged_parent`` and the importer leaves it out whole, so no call counts twice.
* A developer note written between a tool call and its output is placed after the output,
  so the tool pair stays whole.
* Lines split on ``\\n`` only: U+2028 and friends are legal inside JSON strings.

>>> r = parse_rollout([
...     '{"timestamp":"t0","type":"session_meta","payload":{"id":"s1","cwd":"/w"}}',
...     '{"timestamp":"t1","type":"turn_context","payload":{"model":"gpt-5"}}',
...     '{"timestamp":"t2","type":"response_item","payload":{"type":"message","role":"user",'
...     '"content":[{"type":"input_text","text":"hi"}]}}',
...     '{"timestamp":"t3","type":"response_item","payload":{"type":"message",'
...     '"role":"assistant","content":[{"type":"output_text","text":"hello"}]}}',
...     '{"timestamp":"t4","type":"event_msg","payload":{"type":"token_count","info":'
...     '{"total_token_usage":{"input_tokens":900,"cached_input_tokens":800,'
...     '"output_tokens":5,"total_tokens":905},"last_token_usage":{"input_tokens":900,'
...     '"cached_input_tokens":800,"output_tokens":5,"total_tokens":905},'
...     '"model_context_window":258400}}}'])
>>> r.session_id, r.calls, r.context_window, r.messages[1].usage.cache_read_input_tokens
('s1', 1, 258400, 800)
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
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
    is_prompt,
)
from compaction.engine.tokens import context_size

AUTO_TRIGGER_FILL = 0.8  # Codex auto-compacts near its limit (90 % of the window by default)
_ASSISTANT_ITEMS = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
_RESULT_ITEMS = frozenset(
    {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
)
_ENVELOPE_TYPES = frozenset(
    {"session_meta", "response_item", "compacted", "turn_context", "event_msg"}
)
# Line types newer builds write that hold nothing the product reads (the environment Codex
# tracks, agent-to-agent bookkeeping, a per-response usage record that repeats the usage its
# ``token_count`` carries): read and counted as ignored, never a reason to refuse a file.
_KNOWN_OTHER_TYPES = frozenset(
    {"world_state", "inter_agent_communication_metadata", "token_usage_record", "ghost_snapshot"}
)
# UI events Codex writes as ``event_msg``: known, not messages (``token_count``,
# ``turn_aborted``, ``thread_settings_applied`` and ``thread_rolled_back`` are read).
_KNOWN_EVENTS = frozenset(
    {
        "agent_message", "agent_reasoning", "agent_reasoning_raw_content",
        "agent_reasoning_section_break", "user_message", "task_started", "task_complete",
        "turn_started", "turn_complete", "task_aborted", "context_compacted",
        "entered_review_mode", "exited_review_mode", "plan_update", "mcp_startup_update",
        "mcp_startup_complete", "mcp_tool_call_begin", "mcp_tool_call_end", "stream_error",
        "warning", "notice", "error", "patch_apply_begin", "patch_apply_end", "web_search_begin",
        "web_search_end", "exec_command_begin", "exec_command_end", "item_started",
        "item_completed", "sub_agent_activity", "thread_goal_updated", "thread_name_updated",
        "collab_agent_spawn_begin", "collab_agent_spawn_end", "collab_agent_interaction_begin",
        "collab_agent_interaction_end", "collab_waiting_begin", "collab_waiting_end",
        "view_image_tool_call", "request_user_input", "rate_limit", "rate_limited",
        "turn_diff", "background_event", "shutdown_complete", "image_generation_end",
    }
)  # fmt: skip
# The model of a message the user interrupted before Codex recorded its usage: kept, never
# drawn, billed or counted as a call (``messages.NOT_A_MODEL``).
INTERRUPTED = "<interrupted>"
# A response whose count never came and whose turn never completed: kept, never a call.
UNFINISHED = "<unfinished>"


def is_rollout_line(record: Mapping[str, Any]) -> bool:
    """A ``RolloutLine``: ``{timestamp, type, payload}`` with a type Codex writes."""
    return record.get("type") in _ENVELOPE_TYPES and isinstance(record.get("payload"), Mapping)


def is_bare_rollout_start(record: Mapping[str, Any]) -> bool:
    """The first line of an old bare rollout: its ``id`` and ``instructions``, no ``type``."""
    return isinstance(record.get("id"), str) and "instructions" in record and "type" not in record


class CodexError(ValueError):
    """A line that is not a rollout line; ``line`` is 1-based."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(f"line {line}: {reason}")
        self.line = line
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SummarizerCall:
    """The model call that wrote a local compaction's summary (or ran a remote one)."""

    usage: Usage
    model: str | None
    started_at: str | None
    finished_at: str | None


@dataclass(frozen=True, slots=True)
class CodexCompaction:
    """One ``compacted`` line. ``seq`` is the first message after it (DESIGN.md)."""

    seq: int
    line: int
    timestamp: str | None
    remote: bool
    summary: str
    tokens_before: int | None
    tokens_after: int | None
    tokens_after_source: str | None  # "next_call" or "codex_estimate"
    codex_estimate_after: int | None
    trigger: str
    trigger_basis: str
    replacement_items: int
    summarizer: SummarizerCall | None
    # The user messages a local compaction keeps before its summary (their seqs): Codex
    # rebuilds the history as its session prefix, the user's latest messages (up to
    # KEPT_USER_TOKENS) and the summary, so what they say is still in the context.
    kept_user_seqs: tuple[int, ...] = ()

    @property
    def grew(self) -> bool:
        """The context was larger after than before: a splice that did the opposite of its job."""
        return (
            self.tokens_before is not None
            and self.tokens_after is not None
            and self.tokens_after > self.tokens_before
        )


@dataclass
class CodexRollout:
    """A rollout file read whole: the session's facts, messages and compactions."""

    session_id: str | None = None
    kind: str = "session"  # "fork" or "subagent" when the file says so
    parent_id: str | None = None
    relogged_parent: bool = False  # the file copies another session's lines (a fork's history)
    copied_lines: int = 0  # the parent's lines a fork or subagent copied, left out by ordinal
    meta: dict[str, Any] = field(default_factory=dict)
    started_at: str | None = None
    ended_at: str | None = None
    models: list[str] = field(default_factory=list)
    context_window: int | None = None
    messages: list[Message] = field(default_factory=list)
    compactions: list[CodexCompaction] = field(default_factory=list)
    calls: int = 0  # token_counts whose running total grew, summarizer calls included
    summarizer_calls: int = 0
    repeated_counts: int = 0  # token_counts that repeat the running total
    synthetic_counts: int = 0  # the estimate Codex writes after a compaction
    lines: int = 0
    ignored: Counter[str] = field(default_factory=Counter)
    unknown: Counter[str] = field(default_factory=Counter)  # line and event types not known
    interrupted: int = 0  # responses cut short before any usage was written: not calls
    unfinished: int = 0  # the last response, when the file ends before its usage: not a call
    model_switches: list[tuple[int, str]] = field(default_factory=list)  # (line, new model)
    rollbacks: list[tuple[int, int]] = field(default_factory=list)  # (line, turns rolled back)
    # Where what more lines could still change begins (a rollout read while Codex writes it):
    # the messages closed only because the file ended (the last response, waiting for its
    # token_count; the tool results after it) and the compaction still waiting for the call
    # after it. Everything before is final: more lines only add after it.
    open_messages: int = 0
    open_compactions: int | None = None


# Codex's local compaction keeps the user's most recent messages, newest first, up to 20,000
# tokens counted as 4 bytes each, the last one cut to fit (codex-rs core compact.rs:
# COMPACT_USER_MESSAGE_MAX_TOKENS, build_compacted_history). Its session prefix (environment
# context, AGENTS.md) is put back apart, and an earlier summary is not a user message.
KEPT_USER_TOKENS = 20_000
_NOT_USER_WORDS = (
    "<environment_context>",
    "<user_instructions>",
    "# agents.md instructions",
    "another language model started to solve this problem",
)


def kept_user_seqs(messages: Iterable[Message]) -> tuple[int, ...]:
    """The seqs of the user messages a local compaction after ``messages`` keeps.

    >>> ms = [Message(i, "user", (TextBlock("x" * n),)) for i, n in enumerate((80_000, 8, 40))]
    >>> kept_user_seqs(ms)
    (0, 1, 2)
    >>> kept_user_seqs([*ms, Message(3, "user", (TextBlock("y" * 80_000),))])
    (3,)
    """
    budget = KEPT_USER_TOKENS
    kept: list[int] = []
    for message in reversed(list(messages)):
        if message.role != "user" or not is_prompt(message):
            continue
        text = message.text
        if not text.strip() or text.lstrip()[:60].casefold().startswith(_NOT_USER_WORDS):
            continue
        kept.append(message.seq)
        tokens = -(-len(text.encode("utf-8", "surrogatepass")) // 4)
        if tokens >= budget:
            break  # this one is cut to what is left, and nothing older fits
        budget -= tokens
    return tuple(reversed(kept))


def split_lines(data: bytes) -> list[tuple[int, str]]:
    """(1-based line number, text) of each non-blank line, split on ``\\n`` only.

    >>> split_lines(b'{"a":"x\\xe2\\x80\\xa8y"}\\n\\n{"b":1}\\r\\n')
    [(1, '{"a":"x\\u2028y"}'), (3, '{"b":1}')]
    """
    out = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        text = raw.rstrip(b"\r")
        if not text.strip():
            continue
        try:
            out.append((number, text.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise CodexError(number, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    return out


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def usage_from_codex(raw: Mapping[str, Any]) -> Usage:
    """The product's usage of one Codex ``TokenUsage`` (cached tokens split out).

    >>> u = usage_from_codex({"input_tokens": 1000, "cached_input_tokens": 900,
    ...                       "output_tokens": 40, "reasoning_output_tokens": 30})
    >>> (u.input_tokens, u.cache_read_input_tokens, u.output_tokens, context_size(u))
    (100, 900, 40, 1000)
    """
    total_in = _int(raw.get("input_tokens"))
    cached = min(_int(raw.get("cached_input_tokens")), total_in)
    return Usage(
        input_tokens=total_in - cached,
        output_tokens=_int(raw.get("output_tokens")),
        cache_read_input_tokens=cached,
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else json.dumps(content, ensure_ascii=False)
    parts = []
    for item in content:
        if isinstance(item, Mapping):
            if isinstance(item.get("text"), str):
                parts.append(item["text"])
            elif item.get("type") == "input_image":
                parts.append("[image]")
        elif isinstance(item, str):
            parts.append(item)
    return "\n".join(parts)


def _output(payload: Mapping[str, Any]) -> tuple[str, bool]:
    """(text, is_error) of a tool output: a string, ``{content, success}`` or content items."""
    raw = payload.get("output")
    if isinstance(raw, Mapping):
        text = _text_of(raw.get("content", raw.get("output")))
        return text, raw.get("success") is False
    return _text_of(raw), False


def _tool_use(payload: Mapping[str, Any]) -> ToolUseBlock:
    kind = payload.get("type")
    call_id = str(payload.get("call_id") or payload.get("id") or "")
    name = str(payload.get("name") or kind)
    if kind == "function_call":
        raw = payload.get("arguments")
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            parsed = None
        args = parsed if isinstance(parsed, dict) else {"arguments": raw}
        return ToolUseBlock(call_id, name, args)
    if kind == "custom_tool_call":
        return ToolUseBlock(call_id, name, {"input": payload.get("input")})
    action = payload.get("action")
    return ToolUseBlock(call_id, name, dict(action) if isinstance(action, Mapping) else {})


def _reasoning(payload: Mapping[str, Any]) -> ThinkingBlock | None:
    text = _text_of(payload.get("summary")) or _text_of(payload.get("content"))
    return ThinkingBlock(text) if text else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _parent_of(meta: Mapping[str, Any]) -> tuple[str, str | None]:
    """(kind, parent id) from ``session_meta``: a spawned agent names its parent
    (``parent_thread_id``, or a ``subagent`` source), a fork the session it copies
    (``forked_from_id``)."""
    source = meta.get("source")
    sub = source.get("subagent") if isinstance(source, Mapping) else None
    spawn = sub.get("thread_spawn") if isinstance(sub, Mapping) else None
    spawned = _str(spawn.get("parent_thread_id")) if isinstance(spawn, Mapping) else None
    parent = _str(meta.get("parent_thread_id")) or spawned
    if parent or sub is not None or meta.get("thread_source") == "subagent":
        return "subagent", parent or _str(meta.get("forked_from_id"))
    forked = _str(meta.get("forked_from_id"))
    return ("fork", forked) if forked else ("session", None)


class _Reader:
    """Turns rollout lines into messages, calls and compactions, one line at a time."""

    def __init__(self) -> None:
        self.out = CodexRollout()
        self.model: str | None = None
        self.draft: list[Block] = []
        self.draft_ts: str | None = None
        self.results: list[Block] = []
        self.results_ts: str | None = None
        self.open_calls: set[str] = set()  # tool calls of the last response not answered yet
        self.deferred: list[tuple[Role, list[Block], str | None]] = []
        self.total: int | None = None  # the running total of the last call
        self.last_context: int | None = None
        self.pending_call: tuple[Usage, str | None, str | None] | None = None
        self.waiting_after: int | None = None  # index of the compaction missing tokens_after
        self.estimate: int | None = None  # a synthetic count's estimate, not yet placed
        self.own_from: int | None = None  # ``subagent_history_start_ordinal``: the copy ends
        self.previous_call_at: str | None = None
        self.unpaid: int | None = None  # a response stored unpaid (0.142: count after outputs)
        # The file counts a call before its items (CLI 0.57), told by the first assistant
        # item (two counts with no item between: items first); ``draft_usage`` is then theirs.
        self.count_first: bool | None = None
        self.draft_usage: Usage | None = None
        self.turn_closed = False  # a ``task_complete`` since the last response item
        self.abandoned: int | None = None  # the unpaid response a user message left behind
        self.stranded: list[int] = []  # responses whose count can no longer come (Codex stopped)

    # --- messages -------------------------------------------------------------------------

    def _append(
        self, role: Role, blocks: list[Block], ts: str | None, usage: Usage | None = None
    ) -> None:
        model = None
        if (
            usage is not None
            and self.model
            and self.out.models
            and self.model != self.out.models[0]
        ):
            model = self.model
        seq = len(self.out.messages)
        self.out.messages.append(Message(seq, role, tuple(blocks), ts, usage, model))

    def _close_results(self) -> None:
        """Store the pending tool results, then the notes held back while they were due."""
        if self.results:
            self._append("user", self.results, self.results_ts)
            self.results, self.results_ts = [], None
        for role, blocks, ts in self.deferred:
            self._append(role, blocks, ts)
        self.deferred, self.open_calls = [], set()

    def _close_draft(self, usage: Usage | None = None, ts: str | None = None) -> None:
        if usage is None:
            usage, self.draft_usage = self.draft_usage, None
        if self.draft or usage is not None:
            self._append("assistant", self.draft, self.draft_ts or ts, usage)
            self.open_calls = {b.id for b in self.draft if isinstance(b, ToolUseBlock)}
            self.draft, self.draft_ts = [], None
            self.unpaid = len(self.out.messages) - 1 if usage is None else None

    def _close_as(self, model: str) -> None:
        """Store the open response without usage, as written by ``model`` (not a model)."""
        self._close_results()
        seq = len(self.out.messages)
        blocks = tuple(self.draft)
        self.out.messages.append(Message(seq, "assistant", blocks, self.draft_ts, None, model))
        self.open_calls = {b.id for b in blocks if isinstance(b, ToolUseBlock)}
        self.draft, self.draft_ts = [], None

    def _pay(self, usage: Usage) -> bool:
        """Give ``usage`` to the response stored without it, if one waits (one a user message
        came after, as a prompt typed while it streamed: its count follows); True if one did."""
        index = self.unpaid if self.unpaid is not None else self.abandoned
        self.unpaid = self.abandoned = None
        if index is not None:
            self.out.messages[index] = replace(self.out.messages[index], usage=usage)
            self.last_context = context_size(usage)
        return index is not None

    def turn_aborted(self) -> None:
        """The user stopped the turn: a response still open got no usage and never completed,
        so it is kept (what the model had streamed) but is not a call; so is one whose tools
        ran but whose count, due after them, never came (0.141, before its abort note)."""
        stranded = self.unpaid if self.unpaid is not None else self.abandoned
        if stranded is not None and not self.draft and self.pending_call is None:
            self.out.messages[stranded] = replace(self.out.messages[stranded], model=INTERRUPTED)
            self.out.interrupted += 1
        self.abandoned = None
        self._flush_pending()
        if self.draft:
            self._close_as(INTERRUPTED)
            self.out.interrupted += 1
        self.unpaid = None

    def _flush_pending(self) -> None:
        """A call with nothing of its own that did not end in a compaction: still a call."""
        if self.pending_call is not None:
            usage, _, ts = self.pending_call
            self.pending_call = None
            self._close_results()
            self._close_draft(usage, ts)
            self.last_context = context_size(usage)

    def _assistant(self, block: Block | None, ts: str | None) -> None:
        self.turn_closed = False
        if self.abandoned is not None and not self.count_first:
            self.stranded.append(self.abandoned)  # the model answers again: its count is lost
        self.abandoned = None
        if self.count_first is None:  # the first assistant item tells the file's order
            self.count_first = self.pending_call is not None
        if self.count_first and self.pending_call is not None and not self.draft:
            usage, self.pending_call = self.pending_call[0], None  # these items' own count
            self._close_results()
            self.draft_usage, self.last_context = usage, context_size(usage)
        self._flush_pending()
        self._close_results()
        if block is not None:
            self.draft.append(block)
            self.draft_ts = self.draft_ts or ts

    def _user_side(self, role: Role, block: Block, ts: str | None, result: bool) -> None:
        self._flush_pending()
        self._close_draft()
        if result:
            self.results.append(block)
            self.results_ts = self.results_ts or ts
            if isinstance(block, ToolResultBlock):
                self.open_calls.discard(block.tool_use_id)
            return
        if self.open_calls:
            # Codex writes a developer note (an approval, a permission change) or a prompt
            # typed while a tool ran between a call and its output; placed after the output
            # (where the model reads it), the tool pair stays whole.
            self.deferred.append((role, [block], ts))
            return
        self._close_results()
        if role == "user" and self.unpaid is not None:  # its count comes now or never
            self.abandoned, self.unpaid = self.unpaid, None
        self._append(role, [block], ts)

    def response_item(self, payload: Mapping[str, Any], ts: str | None) -> None:
        kind = payload.get("type")
        if kind == "message":
            role = payload.get("role")
            text = _text_of(payload.get("content"))
            if role == "assistant":
                self._assistant(TextBlock(text), ts)
            elif role in ("user", "developer", "system"):
                self._user_side("user" if role == "user" else "system", TextBlock(text), ts, False)
            else:
                self.out.ignored[f"message role {role}"] += 1
        elif kind == "reasoning":
            self._assistant(_reasoning(payload), ts)
        elif kind in _ASSISTANT_ITEMS:
            if kind == "web_search_call":
                action = payload.get("action")
                query = action.get("query") if isinstance(action, Mapping) else None
                self._assistant(TextBlock(f"[web search: {query or ''}]"), ts)
            else:
                self._assistant(_tool_use(payload), ts)
        elif kind in _RESULT_ITEMS:
            text, error = _output(payload)
            call_id = str(payload.get("call_id") or "")
            self._user_side("user", ToolResultBlock(call_id, text, error), ts, True)
        else:
            self.out.ignored[f"response_item {kind}"] += 1

    # --- usage ----------------------------------------------------------------------------

    def token_count(self, payload: Mapping[str, Any], ts: str | None) -> None:
        info = payload.get("info")
        if info is None and "input_tokens" in payload:  # before ``info`` (2025): one call each
            info = {"last_token_usage": payload}
        if not isinstance(info, Mapping):
            self.out.ignored["token_count without usage"] += 1
            return
        window = info.get("model_context_window")
        if _int(window):
            self.out.context_window = _int(window)
        last = info.get("last_token_usage")
        last = last if isinstance(last, Mapping) else {}
        totals = info.get("total_token_usage")
        total = _int(totals.get("total_tokens")) if isinstance(totals, Mapping) else None
        if total is not None and self.total is not None and total == self.total:
            estimate = _int(last.get("total_tokens"))
            if not _int(last.get("input_tokens")) and estimate:
                self.out.synthetic_counts += 1
                self._place_estimate(estimate)
            else:
                self.out.repeated_counts += 1
            return
        if total is not None:
            self.total = total
        usage = usage_from_codex(last)
        self.out.calls += 1
        if self.count_first is None and self.pending_call is not None:
            self.count_first = False  # two counts with no item between: no evidence of order
        if self.waiting_after is not None:
            self._set_after(context_size(usage), "next_call")
        started, self.previous_call_at = self.previous_call_at, ts
        if self.draft and self.draft_usage is not None:
            self._close_draft()  # a response counted before its items: this count is the next
        elif self.draft:
            self._close_draft(usage, ts)
            self.last_context = context_size(usage)
            return
        if not self.count_first and self._pay(usage):
            return
        self._flush_pending()
        self.pending_call = (usage, started, ts)

    def _place_estimate(self, estimate: int) -> None:
        index = self.waiting_after
        if index is not None and self.out.compactions[index].codex_estimate_after is None:
            self.out.compactions[index] = replace(
                self.out.compactions[index], codex_estimate_after=estimate
            )
        elif index is None:
            self.estimate = estimate

    def _set_after(self, tokens: int, source: str) -> None:
        index = self.waiting_after
        self.waiting_after = None
        if index is None:
            return
        self.out.compactions[index] = replace(
            self.out.compactions[index], tokens_after=tokens, tokens_after_source=source
        )
        self.last_context = tokens

    # --- compactions ----------------------------------------------------------------------

    def compacted(self, payload: Mapping[str, Any], line: int, ts: str | None) -> None:
        summarizer = None
        if self.pending_call is not None:
            usage, started, finished = self.pending_call
            self.pending_call = None
            summarizer = SummarizerCall(usage, self.model, started, finished)
            self.out.summarizer_calls += 1
        self._close_draft()
        self._close_results()
        message = payload.get("message")
        summary = message if isinstance(message, str) else ""
        history = payload.get("replacement_history")
        items = history if isinstance(history, list) else []
        last_item = items[-1] if items and isinstance(items[-1], Mapping) else {}
        # The server's summary is an encrypted ``compaction`` item, last in the new history.
        remote = not summary.strip() or last_item.get("type") in (
            "compaction",
            "compaction_summary",
        )
        if remote:
            summary = ""
        before = self.last_context
        window = self.out.context_window
        if before is None or not window:
            trigger, basis = "unknown", "no call before it, or no window to compare with"
        else:
            fill = before / window
            trigger = "auto" if fill >= AUTO_TRIGGER_FILL else "manual"
            basis = (
                f"inferred: context {before:,} of {window:,} tokens ({fill:.0%}) before it; "
                f"Codex compacts by itself near the limit, so {AUTO_TRIGGER_FILL:.0%} or more "
                "reads as auto and less as manual (/compact)"
            )
        self.out.compactions.append(
            CodexCompaction(
                seq=len(self.out.messages),
                line=line,
                timestamp=ts,
                remote=remote,
                summary=summary,
                tokens_before=before,
                tokens_after=None,
                tokens_after_source=None,
                codex_estimate_after=self.estimate,
                trigger=trigger,
                trigger_basis=basis,
                replacement_items=len(items),
                summarizer=summarizer,
                kept_user_seqs=() if remote else kept_user_seqs(self.out.messages),
            )
        )
        self.waiting_after = len(self.out.compactions) - 1
        self.estimate = None

    # --- lines ----------------------------------------------------------------------------

    def session_meta(self, payload: Mapping[str, Any], ts: str | None) -> None:
        sid = payload.get("id")
        sid = sid if isinstance(sid, str) and sid else None
        if self.out.session_id is None:
            self.out.session_id = sid
            self.out.meta = {
                k: payload[k]
                for k in ("cwd", "originator", "cli_version", "source", "model_provider", "git")
                if payload.get(k) not in (None, "", {})
            }
            self.out.kind, self.out.parent_id = _parent_of(payload)
            start = payload.get("subagent_history_start_ordinal")
            self.own_from = start if isinstance(start, int) and start >= 0 else None
            self.out.started_at = self.out.started_at or ts or payload.get("timestamp")
        elif sid is not None and sid != self.out.session_id:
            # A fork or a spawned agent copies its parent's lines, session_meta included.
            self.out.relogged_parent = True
            if self.out.kind == "session":
                self.out.kind = "fork"
            self.out.parent_id = self.out.parent_id or sid
        else:
            self.out.ignored["session_meta (resumed)"] += 1

    def feed(self, number: int, text: str) -> None:
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise CodexError(number, f"not JSON ({exc})") from None
        if not isinstance(record, Mapping):
            raise CodexError(number, "not a JSON object")
        self.out.lines += 1
        ts_raw = record.get("timestamp")
        ts = ts_raw if isinstance(ts_raw, str) else None
        kind = record.get("type")
        payload = record.get("payload")
        if kind in _ENVELOPE_TYPES and not isinstance(payload, Mapping):
            raise CodexError(number, f"{kind} line without a payload object")
        body: Mapping[str, Any] = payload if isinstance(payload, Mapping) else {}
        ordinal = record.get("ordinal")
        if (
            self.own_from is not None
            and isinstance(ordinal, int)
            and ordinal < self.own_from
            and self.out.session_id is not None
        ):
            self.out.copied_lines += 1  # the parent's history, copied: the parent's file has it
            return
        if ts:
            self.out.started_at = self.out.started_at or ts
            self.out.ended_at = ts
        if kind == "session_meta":
            self.session_meta(body, ts)
        elif kind == "response_item":
            self.response_item(body, ts)
        elif kind == "turn_context":
            model = body.get("model")
            if isinstance(model, str) and model:
                self.model = model
                if model not in self.out.models:
                    self.out.models.append(model)
        elif kind == "compacted":
            self.compacted(body, number, ts)
        elif kind == "event_msg":
            self.event(body, number, ts)
        elif kind in _KNOWN_OTHER_TYPES:
            self.out.ignored[str(kind)] += 1
        elif "record_type" in record:  # the old format's state lines
            self.out.ignored[f"record_type {record.get('record_type')}"] += 1
        elif kind is None and number == 1 and isinstance(record.get("id"), str):
            self.session_meta(record, ts)  # the old format's first line
        elif isinstance(kind, str) and payload is None:
            self.response_item(record, ts)  # the old format: a bare response item
        else:
            # A type a newer Codex writes that this reader does not know: skipped and
            # counted, so a new record never costs the file.
            self.out.unknown[str(kind)[:80]] += 1

    def event(self, body: Mapping[str, Any], number: int, ts: str | None) -> None:
        event = body.get("type")
        if event == "token_count":
            self.token_count(body, ts)
        elif event in ("task_complete", "turn_complete"):
            self.turn_closed = True
            self.out.ignored[f"event_msg {event}"] += 1
        elif event == "turn_aborted":
            self.turn_aborted()
            self.out.ignored["event_msg turn_aborted"] += 1
        elif event == "thread_settings_applied":
            settings = body.get("thread_settings")
            model = settings.get("model") if isinstance(settings, Mapping) else None
            if isinstance(model, str) and model and model != self.model:
                self.model = model
                self.out.model_switches.append((number, model))
                if model not in self.out.models:
                    self.out.models.append(model)
            self.out.ignored["event_msg thread_settings_applied"] += 1
        elif event == "thread_rolled_back":
            turns = body.get("num_turns")
            self.out.rollbacks.append((number, turns if isinstance(turns, int) else 0))
            self.out.ignored["event_msg thread_rolled_back"] += 1
        elif event in _KNOWN_EVENTS:
            self.out.ignored[f"event_msg {event}"] += 1
        else:
            self.out.unknown[f"event_msg {str(event)[:60]}"] += 1

    def finish(self) -> CodexRollout:
        self.out.open_messages = len(self.out.messages)
        if self.waiting_after is not None:
            self.out.open_compactions = self.out.compactions[self.waiting_after].seq
        self._flush_pending()
        if self.waiting_after is not None:
            estimate = self.out.compactions[self.waiting_after].codex_estimate_after
            if estimate is not None:
                self._set_after(estimate, "codex_estimate")
        self._unfinished()
        self._close_draft()
        self._close_results()
        return self.out

    def _unfinished(self) -> None:
        """Responses whose count never came (the file ends, its turn not complete; or Codex
        stopped and the session resumed): kept, no call (unless the file records no usage)."""
        if not self.out.calls:
            return
        if not self.turn_closed and self.draft_usage is None:
            if self.draft:
                self._close_as(UNFINISHED)
                self.stranded.append(len(self.out.messages) - 1)
            elif self.unpaid is not None:  # its count may still come: the file is open there
                self.stranded.append(self.unpaid)
                self.out.open_messages = min(self.out.open_messages, self.unpaid)
        for index in self.stranded:
            self.out.messages[index] = replace(self.out.messages[index], model=UNFINISHED)
        self.out.unfinished += len(self.stranded)


def parse_rollout(lines: Iterable[str | tuple[int, str]]) -> CodexRollout:
    """Read a whole rollout; a malformed line raises :class:`CodexError` naming it."""
    reader = _Reader()
    for index, item in enumerate(lines, start=1):
        number, text = item if isinstance(item, tuple) else (index, item)
        if text.strip():
            reader.feed(number, text)
    return reader.finish()


def parse_rollout_bytes(data: bytes) -> CodexRollout:
    """:func:`parse_rollout` of a file's bytes."""
    return parse_rollout(split_lines(data))
