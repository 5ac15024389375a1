"""Compaction strategies, cheapest first: clear old tool results, drop old turns, summarize.

Each strategy is a pure function ``(messages, policy, ...) -> StrategyResult``: the new context
plus a record of what it did. Cuts happen only where no tool pair can split (a turn start, or
with ``unit="step"`` any message that is not a tool_result carrier), a summary is merged into a
neighbouring user message so no two user messages stand in a row, and the pinned head (system
messages and the first prompt) is kept verbatim.

Real coding sessions run one to three prompts over a hundred and more model calls, so a turn is
often the whole history. With ``unit="turn"`` and ``step_fallback`` (the default) a strategy
that cannot bring the context under its limit at turn boundaries cuts at step boundaries
instead (a step is an assistant message with the tool results that answer it).

(About 750 lines, over the usual 600: the stages share the cut-point rules (turn, step
fallback, pinned head, tool pairs); split per stage, each would re-derive them.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

from compaction.engine.messages import (
    Block,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    is_prompt,
    is_tool_result_carrier,
)
from compaction.engine.names import STAGES, UNITS
from compaction.engine.summarizers import (
    CLEARED_PREFIX,
    ExtractiveSummarizer,
    Summarizer,
    Summary,
    pinned_task,
)
from compaction.engine.tokens import CharCounter, TokenCounter

STEP_NOTE = "turn boundaries could not fit the limit: cut at a step boundary"
PLACEHOLDER = f"{CLEARED_PREFIX}; call the tool again if you need it]"
EDITING_PLACEHOLDER = "[tool result cleared by context editing]"


class PolicyError(ValueError):
    """A policy field with a bad value; the text names the field."""


@dataclass(frozen=True)
class Policy:
    """When and how a harness compacts. Limits are in tokens of the whole context.

    * ``soft_limit``: above it, clear old tool results.
    * ``hard_limit``: above it, drop turns and/or summarize (per ``stages``).
    * ``keep_last``: newest units (turns, or steps with ``unit="step"``) kept verbatim.
    * ``pin_head``: keep the system messages and the first prompt verbatim.
    * ``older_than``: tool results in the newest ``older_than`` units are never cleared.
    * ``unit``: ``turn`` cuts only at prompts; ``step`` may also cut inside a long turn,
      before any assistant message (what Claude Code does when one prompt runs for hours).
    * ``step_fallback``: with ``unit="turn"``, cut at step boundaries when turn boundaries
      cannot bring the context under the limit (one prompt is one turn, the whole history);
      ``keep_last`` and ``older_than`` then count steps. A tool pair is never split.

    >>> Policy.from_dict({"hard_limit": 120000, "keep_last": 4}).keep_last
    4
    """

    soft_limit: int = 90_000
    hard_limit: int = 120_000
    keep_last: int = 6
    pin_head: bool = True
    older_than: int = 2
    unit: Literal["turn", "step"] = "turn"
    step_fallback: bool = True
    summarizer: str = "extractive"
    stages: tuple[str, ...] = ("clear_tool_results", "summarize")
    context_window: int = 200_000
    summary_reserve: int = 4_000
    max_rounds: int = 3
    clear_step: int = 2_000
    placeholder: str = PLACEHOLDER

    def __post_init__(self) -> None:
        for name in ("soft_limit", "hard_limit", "context_window"):
            if getattr(self, name) <= 0:
                raise PolicyError(f"policy.{name}: must be a positive number of tokens")
        if self.soft_limit > self.hard_limit:
            raise PolicyError("policy.soft_limit: must not exceed hard_limit")
        if self.keep_last < 1:
            raise PolicyError("policy.keep_last: must keep at least 1 unit")
        if self.older_than < 0 or self.summary_reserve < 0 or self.clear_step < 0:
            raise PolicyError("policy: older_than, summary_reserve and clear_step must be >= 0")
        if self.max_rounds < 1:
            raise PolicyError("policy.max_rounds: must be at least 1")
        if self.unit not in UNITS:
            raise PolicyError("policy.unit: must be 'turn' or 'step'")
        unknown = [s for s in self.stages if s not in STAGES]
        if unknown:
            raise PolicyError(f"policy.stages: unknown stage {unknown[0]!r}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        """Build from JSON (the replay API's ``policy``); unknown keys are an error."""
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                raise PolicyError(f"policy.{key}: unknown field")
            default = getattr(cls(), key)
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    raise PolicyError(f"policy.{key}: expected true or false")
            elif isinstance(default, int):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise PolicyError(f"policy.{key}: expected an integer")
            elif isinstance(default, tuple):
                if not isinstance(value, list | tuple) or not all(
                    isinstance(v, str) for v in value
                ):
                    raise PolicyError(f"policy.{key}: expected a list of strings")
                value = tuple(value)
            elif not isinstance(value, str):
                raise PolicyError(f"policy.{key}: expected a string")
            values[key] = value
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


@dataclass(frozen=True)
class StrategyResult:
    """The context after one strategy, and what the strategy did to it.

    ``removed`` are seqs no longer in the context; ``changed`` are seqs still there with new
    content (cleared results, a summary merged in). ``kept_head``/``kept_tail`` are inclusive
    seq ranges kept verbatim.
    """

    stage: str
    messages: tuple[Message, ...]
    tokens_before: int
    tokens_after: int
    applied: bool
    removed: tuple[int, ...] = ()
    changed: tuple[int, ...] = ()
    kept_head: tuple[int, int] | None = None
    kept_tail: tuple[int, int] | None = None
    cleared: int = 0
    summary: Summary | None = None
    summary_text: str | None = None
    cost: Usage | None = None
    rounds: int = 0
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "applied": self.applied,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "removed": seq_ranges(self.removed),
            "changed": seq_ranges(self.changed),
            "kept_head": list(self.kept_head) if self.kept_head else None,
            "kept_tail": list(self.kept_tail) if self.kept_tail else None,
            "cleared": self.cleared,
            "summary": self.summary.to_dict() if self.summary is not None else None,
            "summary_text": self.summary_text,
            "cost": self.cost.to_dict() if self.cost is not None else None,
            "rounds": self.rounds,
            "notes": list(self.notes),
        }


def seq_ranges(seqs: Iterable[int]) -> list[list[int]]:
    """Compress seqs into inclusive ranges.

    >>> seq_ranges([1, 2, 3, 7, 9, 10])
    [[1, 3], [7, 7], [9, 10]]
    """
    out: list[list[int]] = []
    for s in sorted(set(seqs)):
        if out and s == out[-1][1] + 1:
            out[-1][1] = s
        else:
            out.append([s, s])
    return out


# --- shared helpers -------------------------------------------------------------------------------


def split_head(messages: Sequence[Message], policy: Policy) -> int:
    """Index where the body starts: after the system messages and, if pinned, the first prompt.

    >>> ms = [Message(0, "system", (TextBlock("s"),)), Message(1, "user", (TextBlock("go"),)),
    ...       Message(2, "assistant", (TextBlock("ok"),))]
    >>> split_head(ms, Policy())
    2
    """
    i = 0
    while i < len(messages) and messages[i].role == "system":
        i += 1
    if policy.pin_head and i < len(messages) and is_prompt(messages[i]):
        i += 1
    return i


def unit_starts(body: Sequence[Message], unit: str) -> list[int]:
    """Indexes into ``body`` where a unit (turn or step) starts; index 0 always starts one."""
    if not body:
        return []
    if unit == "step":
        starts = [i for i, m in enumerate(body) if not is_tool_result_carrier(m)]
    else:
        starts = [i for i, m in enumerate(body) if is_prompt(m)]
    if not starts or starts[0] != 0:
        starts.insert(0, 0)
    return starts


def _join(
    head: Sequence[Message],
    tail: Sequence[Message],
    note: str | None,
    note_seq: int,
) -> list[Message]:
    """Splice ``note`` between head and tail without two user messages in a row.

    The note goes into the first kept prompt; failing that, into a head prompt right before the
    seam; failing that, it becomes its own user message. Two prompts meeting at the seam are
    merged into one message, the older content first.
    """
    out = list(head)
    rest = list(tail)
    block = (TextBlock(note),) if note else ()
    if rest and is_prompt(rest[0]):
        rest[0] = replace(rest[0], content=block + rest[0].content)
    elif block and out and is_prompt(out[-1]):
        out[-1] = replace(out[-1], content=out[-1].content + block)
    elif block or (rest and rest[0].role == "assistant" and not _ends_with_user(out)):
        text = note or "[earlier conversation removed]"
        out.append(Message(note_seq, "user", (TextBlock(text),)))
    if rest and out and is_prompt(out[-1]) and is_prompt(rest[0]):
        first = rest.pop(0)
        out[-1] = replace(out[-1], content=out[-1].content + first.content)
    return out + rest


def _ends_with_user(messages: Sequence[Message]) -> bool:
    return bool(messages) and messages[-1].role == "user"


def _count(counter: TokenCounter, messages: Sequence[Message], base: int) -> int:
    return base + counter.count(messages)


def _diff(
    before: Sequence[Message], after: Sequence[Message]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(removed seqs, changed seqs) between two contexts."""
    after_by_seq = {m.seq: m for m in after}
    removed = tuple(m.seq for m in before if m.seq not in after_by_seq)
    changed = tuple(m.seq for m in before if m.seq in after_by_seq and after_by_seq[m.seq] is not m)
    return removed, changed


# --- stage 1: clear old tool results -------------------------------------------------------------


def clear_tool_results(
    messages: Sequence[Message],
    policy: Policy,
    *,
    counter: TokenCounter | None = None,
    base_tokens: int = 0,
    limit: int | None = None,
    tokens: int | None = None,
    scan_from: int = 0,
) -> StrategyResult:
    """Replace the body of old tool results with a pointer; the call and the block stay.

    Results in the newest ``policy.older_than`` units are left alone. Oldest first, and with a
    ``limit`` only until the context fits it. With the step fallback, when clearing outside the
    newest turns is not enough (or they are the whole body), the newest ``older_than`` steps
    are what stays untouched. For incremental callers: ``tokens`` is the known
    size of ``messages`` (base included), and messages before index ``scan_from`` are known
    to hold no result left to clear.

    >>> ms = [Message(0, "user", (TextBlock("go"),)),
    ...       Message(1, "assistant", (ToolUseBlock("t", "read_file", {"path": "a.py"}),)),
    ...       Message(2, "user", (ToolResultBlock("t", "x" * 4000),)),
    ...       Message(3, "assistant", (TextBlock("read it"),)),
    ...       Message(4, "user", (TextBlock("thanks"),)),
    ...       Message(5, "assistant", (TextBlock("ok"),))]
    >>> r = clear_tool_results(ms, Policy(older_than=1))
    >>> r.messages[2].content[0].content
    '[content removed; call the tool again if you need it]'
    """
    counter = counter or CharCounter()
    before = tokens if tokens is not None else _count(counter, messages, base_tokens)
    h = split_head(messages, policy)
    start = max(h, scan_from)
    protected_from = _protected_from(messages, h, policy.older_than, policy.unit)
    total = before
    cleared = 0
    changed: list[int] = []
    out = list(messages)
    notes: tuple[str, ...] = ()

    def clear_range(lo: int, hi: int) -> None:
        nonlocal total, cleared
        for i in range(lo, hi):
            if limit is not None and total <= limit:
                return
            m = messages[i]
            if m.role != "user" or not is_tool_result_carrier(m):
                continue
            new_blocks: list[Block] = []
            touched = False
            for b in m.content:
                if isinstance(b, ToolResultBlock) and b.content != policy.placeholder:
                    new_blocks.append(
                        ToolResultBlock(b.tool_use_id, policy.placeholder, b.is_error)
                    )
                    touched = True
                    cleared += 1
                else:
                    new_blocks.append(b)
            if touched:
                new = replace(m, content=tuple(new_blocks))
                total += counter.count_message(new) - counter.count_message(m)
                out[i] = new
                changed.append(m.seq)

    clear_range(start, protected_from)
    if policy.unit == "turn" and policy.step_fallback:
        # Without a limit, fall back only when the newest turns are the whole body.
        short = total > limit if limit is not None else protected_from <= start
        if short:  # the step boundary is looked for only then: most calls are not short
            step_from = _protected_from(messages, h, policy.older_than, "step")
            before_fallback = cleared
            clear_range(max(start, protected_from), step_from)
            if cleared > before_fallback:
                notes = ("cleared inside the newest turns, at step boundaries",)
    return StrategyResult(
        stage="clear_tool_results",
        messages=tuple(out),
        tokens_before=before,
        tokens_after=total,
        applied=cleared > 0,
        changed=tuple(changed),
        cleared=cleared,
        notes=notes,
    )


def _protected_from(messages: Sequence[Message], head_end: int, older_than: int, unit: str) -> int:
    """Index of the first message of the newest ``older_than`` units (scans backwards)."""
    if older_than == 0:
        return len(messages)
    found = 0
    for i in range(len(messages) - 1, head_end - 1, -1):
        m = messages[i]
        starts_unit = (
            is_prompt(m) if unit == "turn" else not is_tool_result_carrier(m)
        ) or i == head_end
        if starts_unit:
            found += 1
            if found == older_than:
                return i
    return head_end


def clear_tool_uses_20250919(
    messages: Sequence[Message],
    *,
    trigger_tokens: int = 100_000,
    keep_tool_uses: int = 3,
    clear_at_least: int = 0,
    exclude_tools: Sequence[str] = (),
    clear_tool_inputs: bool = False,
    counter: TokenCounter | None = None,
    base_tokens: int = 0,
) -> StrategyResult:
    """Offline emulation of the API's ``clear_tool_uses_20250919`` context edit.

    Above ``trigger_tokens``, clear tool results oldest first, keeping the newest
    ``keep_tool_uses`` tool uses and any tool in ``exclude_tools``; with ``clear_tool_inputs``
    the call's input is emptied too. Nothing changes unless ``clear_at_least`` tokens go.
    Use :func:`compaction.engine.anthropic.count_with_context_editing` for the API's count.
    """
    counter = counter or CharCounter()
    before = _count(counter, messages, base_tokens)
    if before < trigger_tokens:
        return StrategyResult("clear_tool_uses_20250919", tuple(messages), before, before, False)
    names: dict[str, str] = {}
    order: list[str] = []
    for m in messages:
        for use in m.tool_uses():
            names[use.id] = use.name
            order.append(use.id)
    eligible = [
        uid
        for uid in order[: max(0, len(order) - keep_tool_uses)]
        if names[uid] not in exclude_tools
    ]
    targets = set(eligible)
    out: list[Message] = []
    cleared = 0
    for m in messages:
        blocks: list[Block] = []
        touched = False
        for b in m.content:
            if (
                isinstance(b, ToolResultBlock)
                and b.tool_use_id in targets
                and b.content != EDITING_PLACEHOLDER
            ):
                blocks.append(ToolResultBlock(b.tool_use_id, EDITING_PLACEHOLDER, b.is_error))
                touched = True
                cleared += 1
                continue
            if clear_tool_inputs and isinstance(b, ToolUseBlock) and b.id in targets and b.input:
                blocks.append(ToolUseBlock(b.id, b.name, {}))
                touched = True
                continue
            blocks.append(b)
        out.append(replace(m, content=tuple(blocks)) if touched else m)
    after = _count(counter, out, base_tokens)
    if before - after < clear_at_least or cleared == 0:
        return StrategyResult("clear_tool_uses_20250919", tuple(messages), before, before, False)
    removed, changed = _diff(messages, out)
    return StrategyResult(
        stage="clear_tool_uses_20250919",
        messages=tuple(out),
        tokens_before=before,
        tokens_after=after,
        applied=True,
        removed=removed,
        changed=changed,
        cleared=cleared,
    )


# --- stage 2: drop whole turns -------------------------------------------------------------------


def drop_turns(
    messages: Sequence[Message],
    policy: Policy,
    *,
    counter: TokenCounter | None = None,
    base_tokens: int = 0,
    limit: int | None = None,
    tokens: int | None = None,
) -> StrategyResult:
    """Drop the oldest whole units after the pinned head until the context fits ``limit``.

    The newest ``policy.keep_last`` units always stay. With the step fallback, when dropping
    whole turns cannot fit the limit, the oldest steps go instead, down to ``keep_last`` steps.

    >>> ms = [Message(i, "user" if i % 2 == 0 else "assistant", (TextBlock("x" * 400),))
    ...       for i in range(8)]
    >>> [m.seq for m in drop_turns(ms, Policy(keep_last=1, pin_head=False),
    ...                            limit=250).messages]
    [6, 7]
    """
    counter = counter or CharCounter()
    limit = policy.hard_limit if limit is None else limit
    before = tokens if tokens is not None else _count(counter, messages, base_tokens)
    h = split_head(messages, policy)
    head, body = list(messages[:h]), list(messages[h:])
    sizes = [counter.count_message(m) for m in body]
    unit = policy.unit
    cut, dropped_units, total = _oldest_cut(
        unit_starts(body, unit), sizes, before, limit, policy.keep_last
    )
    if total > limit and unit == "turn" and policy.step_fallback:
        unit = "step"
        cut, dropped_units, total = _oldest_cut(
            unit_starts(body, unit), sizes, before, limit, policy.keep_last
        )
    if cut == 0:
        return StrategyResult("drop_turns", tuple(messages), before, before, False)
    note = None
    out = _join(head, body[cut:], note, body[0].seq)
    after = _count(counter, out, base_tokens)
    removed, changed = _diff(messages, out)
    notes = [f"dropped {dropped_units} oldest {unit}s"]
    if unit != policy.unit:
        notes.append(STEP_NOTE)
    return StrategyResult(
        stage="drop_turns",
        messages=tuple(out),
        tokens_before=before,
        tokens_after=after,
        applied=True,
        removed=removed,
        changed=changed,
        kept_head=(head[0].seq, head[-1].seq) if head else None,
        kept_tail=(body[cut].seq, body[-1].seq) if cut < len(body) else None,
        notes=tuple(notes),
    )


def _oldest_cut(
    starts: Sequence[int], sizes: Sequence[int], total: int, limit: int, keep_last: int
) -> tuple[int, int, int]:
    """(cut index, units dropped, size after) dropping the oldest units until under ``limit``,
    always keeping the newest ``keep_last`` units."""
    dropped_units = 0
    cut = 0
    max_drop = max(0, len(starts) - keep_last)
    while total > limit and dropped_units < max_drop:
        nxt = starts[dropped_units + 1] if dropped_units + 1 < len(starts) else len(sizes)
        total -= sum(sizes[cut:nxt])
        cut = nxt
        dropped_units += 1
    return cut, dropped_units, total


# --- stage 3: summarize the middle ---------------------------------------------------------------


def summarize(
    messages: Sequence[Message],
    policy: Policy,
    *,
    summarizer: Summarizer | None = None,
    counter: TokenCounter | None = None,
    base_tokens: int = 0,
    limit: int | None = None,
    tokens: int | None = None,
) -> StrategyResult:
    """Replace the middle with a structured synopsis; head and newest units stay verbatim.

    The cut keeps as many of the newest ``keep_last`` units as fit under ``limit`` (with
    ``summary_reserve`` tokens set aside for the synopsis), and never fewer than one. When the
    result still overflows, the synopsis and more units are summarized again, up to
    ``max_rounds`` times. The synopsis lands in the first kept prompt. With the step fallback,
    when one turn is the whole body or the newest turn alone overflows, the cut is at a step
    boundary and ``keep_last`` counts steps.

    >>> ms = [Message(0, "user", (TextBlock("Ship v2. Do not touch auth."),)),
    ...       Message(1, "assistant", (TextBlock("x" * 4000),)),
    ...       Message(2, "user", (TextBlock("Now the docs."),)),
    ...       Message(3, "assistant", (TextBlock("ok"),))]
    >>> r = summarize(ms, Policy(keep_last=1, pin_head=False, summary_reserve=0), limit=500)
    >>> [m.seq for m in r.messages], "Do not touch auth." in r.messages[0].text
    ([2, 3], True)
    """
    summarizer = summarizer or ExtractiveSummarizer()
    counter = counter or CharCounter()
    limit = policy.hard_limit if limit is None else limit
    before = tokens if tokens is not None else _count(counter, messages, base_tokens)
    current = list(messages)
    keep = policy.keep_last
    cost: Usage | None = None
    summary: Summary | None = None
    summary_text: str | None = None
    rounds = 0
    tail_first: int | None = None
    after = before
    task = pinned_task(messages)
    use_steps = policy.unit == "step"
    can_fall_back = policy.unit == "turn" and policy.step_fallback
    fell_back = False
    while rounds < policy.max_rounds:
        h = split_head(current, policy)
        head, body = current[:h], current[h:]
        sizes = [counter.count_message(m) for m in body]
        suffix = [0] * (len(body) + 1)
        for i in range(len(body) - 1, -1, -1):
            suffix[i] = suffix[i + 1] + sizes[i]
        fixed = base_tokens + counter.count(head) + policy.summary_reserve
        starts = unit_starts(body, "step" if use_steps else "turn")
        if (
            not use_steps
            and can_fall_back
            and (len(starts) < 2 or fixed + suffix[starts[-1]] > limit)
        ):
            # one turn is the whole body, or even the newest turn alone does not fit
            use_steps = fell_back = True
            keep = policy.keep_last
            starts = unit_starts(body, "step")
        if len(starts) < 2:
            break
        kept = min(keep, len(starts) - 1)
        while kept > 1 and fixed + suffix[starts[-kept]] > limit:
            kept -= 1
        cut = starts[-kept]
        old = body[:cut]
        if isinstance(summarizer, ExtractiveSummarizer):
            # the task sits in the pinned head, outside the slab being summarized
            result = summarizer.summarize(old, task=task)
        else:
            result = summarizer.summarize(old)
        cost = result.cost if cost is None else (cost + result.cost if result.cost else cost)
        summary, summary_text = result.summary, result.text
        current = _join(head, body[cut:], result.text, old[0].seq)
        tail_first = body[cut].seq
        rounds += 1
        after = _count(counter, current, base_tokens)
        if after <= limit:
            break
        if kept <= 1:
            if use_steps or not can_fall_back:
                break
            use_steps = fell_back = True
            keep = policy.keep_last
            continue
        keep = kept - 1
    if rounds == 0:
        return StrategyResult("summarize", tuple(messages), before, before, False)
    removed, changed = _diff(messages, current)
    h = split_head(messages, policy)
    return StrategyResult(
        stage="summarize",
        messages=tuple(current),
        tokens_before=before,
        tokens_after=after,
        applied=True,
        removed=removed,
        changed=changed,
        kept_head=(messages[0].seq, messages[h - 1].seq) if h else None,
        kept_tail=(tail_first, messages[-1].seq) if tail_first is not None else None,
        summary=summary,
        summary_text=summary_text,
        cost=cost,
        rounds=rounds,
        notes=(STEP_NOTE,) if fell_back else (),
    )


# --- the naive baseline --------------------------------------------------------------------------


def sliding_window(
    messages: Sequence[Message],
    policy: Policy,
    *,
    counter: TokenCounter | None = None,
    base_tokens: int = 0,
    limit: int | None = None,
    tokens: int | None = None,
) -> StrategyResult:
    """Keep only the newest ``keep_last`` units (and system messages): the naive baseline.

    It loses the head, which is exactly what the seeds warn about; it is here to compare.

    >>> ms = [Message(i, "user" if i % 2 == 0 else "assistant", (TextBlock("t"),))
    ...       for i in range(6)]
    >>> [m.seq for m in sliding_window(ms, Policy(keep_last=1)).messages]
    [4, 5]
    """
    counter = counter or CharCounter()
    before = tokens if tokens is not None else _count(counter, messages, base_tokens)
    h = 0
    while h < len(messages) and messages[h].role == "system":
        h += 1
    head, body = list(messages[:h]), list(messages[h:])
    if not body:
        return StrategyResult("sliding_window", tuple(messages), before, before, False)
    sizes = [counter.count_message(m) for m in body]
    fixed = base_tokens + counter.count(head)
    cut = _window_cut(unit_starts(body, policy.unit), sizes, fixed, limit, policy.keep_last)
    fell_back = False
    if (
        limit is not None
        and policy.unit == "turn"
        and policy.step_fallback
        and fixed + sum(sizes[cut:]) > limit
    ):
        cut = _window_cut(unit_starts(body, "step"), sizes, fixed, limit, policy.keep_last)
        fell_back = True
    if cut == 0:
        return StrategyResult("sliding_window", tuple(messages), before, before, False)
    out = _join(head, body[cut:], None, body[0].seq)
    after = _count(counter, out, base_tokens)
    removed, changed = _diff(messages, out)
    return StrategyResult(
        stage="sliding_window",
        messages=tuple(out),
        tokens_before=before,
        tokens_after=after,
        applied=True,
        removed=removed,
        changed=changed,
        kept_tail=(body[cut].seq, body[-1].seq),
        notes=(STEP_NOTE,) if fell_back else (),
    )


def _window_cut(
    starts: Sequence[int], sizes: Sequence[int], fixed: int, limit: int | None, keep_last: int
) -> int:
    """Index of the first kept message: the newest ``keep_last`` units, fewer if over ``limit``."""
    idx = max(0, len(starts) - keep_last)
    if limit is not None:
        while idx < len(starts) - 1 and fixed + sum(sizes[starts[idx] :]) > limit:
            idx += 1
    return starts[idx]


# --- the ladder ----------------------------------------------------------------------------------


def compact(
    messages: Sequence[Message],
    policy: Policy,
    *,
    summarizer: Summarizer | None = None,
    counter: TokenCounter | None = None,
    base_tokens: int = 0,
    tokens: int | None = None,
) -> list[StrategyResult]:
    """Run the policy's stages in order, cheapest first, and return what each one did.

    Over ``soft_limit``: clear old tool results (until under it). Over ``hard_limit``: drop
    turns, then summarize, then slide the window, as far as ``policy.stages`` allows. Only
    applied stages are returned; the last one's ``messages`` is the new context. ``tokens`` is
    the known size of ``messages`` (base included) for callers that keep it, as a replay does.

    >>> compact([Message(0, "user", (TextBlock("hi"),))], Policy())
    []
    """
    counter = counter or CharCounter()
    current: Sequence[Message] = messages
    total = tokens if tokens is not None else _count(counter, current, base_tokens)
    done: list[StrategyResult] = []
    if total > policy.soft_limit and "clear_tool_results" in policy.stages:
        r = clear_tool_results(
            current,
            policy,
            counter=counter,
            base_tokens=base_tokens,
            limit=policy.soft_limit,
            tokens=total,
        )
        if r.applied:
            done.append(r)
            current, total = r.messages, r.tokens_after
    for stage in ("drop_turns", "summarize", "sliding_window"):
        if total <= policy.hard_limit or stage not in policy.stages:
            continue
        # Each stage starts from the size the one before left (``total``), not a recount.
        if stage == "drop_turns":
            r = drop_turns(current, policy, counter=counter, base_tokens=base_tokens, tokens=total)
        elif stage == "summarize":
            r = summarize(
                current,
                policy,
                summarizer=summarizer,
                counter=counter,
                base_tokens=base_tokens,
                tokens=total,
            )
        else:
            r = sliding_window(
                current,
                policy,
                counter=counter,
                base_tokens=base_tokens,
                limit=policy.hard_limit,
                tokens=total,
            )
        if r.applied:
            done.append(r)
            current, total = r.messages, r.tokens_after
    return done
