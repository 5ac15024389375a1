"""Summaries: the schema and the offline extractive summarizer (the default).

Also what a trace's server-side compactions (``compact_20260112``: ``compaction`` blocks and
``usage.iterations``) did to its history. The summarizers that call the Anthropic API live in
:mod:`compaction.engine.anthropic`, which builds on this module; a policy's summarizer is
chosen by name in :mod:`compaction.engine.summarizer_choice`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypedDict

from compaction.engine import harness
from compaction.engine import text as txt
from compaction.engine.messages import (
    CompactionBlock,
    Message,
    ObservedCompaction,
    TextBlock,
    ToolUseBlock,
    Usage,
    is_prompt,
)
from compaction.engine.tokens import context_size

SUMMARY_HEADER = "[summary of earlier conversation]"
LIST_FIELDS: tuple[str, ...] = (
    "constraints",
    "decisions",
    "done",
    "next_steps",
    "files_touched",
    "errors",
)
TEXT_FIELDS: tuple[str, ...] = ("goal", "current_state")
FIELDS: tuple[str, ...] = (
    "goal",
    "constraints",
    "decisions",
    "done",
    "current_state",
    "next_steps",
    "files_touched",
    "errors",
)
_TITLES = {
    "goal": "Goal",
    "constraints": "Constraints",
    "decisions": "Decisions",
    "done": "Done",
    "current_state": "Current state",
    "next_steps": "Next steps",
    "files_touched": "Files touched",
    "errors": "Errors",
}
_BY_TITLE = {v.lower(): k for k, v in _TITLES.items()}


class SummaryError(ValueError):
    """A summary that does not match the schema; the text names the field."""


class SummarizerError(RuntimeError):
    """A summarizer that could not produce a summary; ``cost`` is what was spent trying."""

    def __init__(self, message: str, cost: Usage | None = None) -> None:
        super().__init__(message)
        self.cost = cost


class SummaryDict(TypedDict):
    """``Summary.to_dict()``: stored in ``CompactionSpan.summary_sections``."""

    goal: str
    constraints: list[str]
    decisions: list[str]
    done: list[str]
    current_state: str
    next_steps: list[str]
    files_touched: list[str]
    errors: list[str]


@dataclass(frozen=True)
class Summary:
    """The structured synopsis that replaces the middle of a history.

    >>> s = Summary(goal="Migrate billing", constraints=("do not change the public API",))
    >>> Summary.from_dict(s.to_dict()) == s
    True
    """

    goal: str = ""
    constraints: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    done: tuple[str, ...] = ()
    current_state: str = ""
    next_steps: tuple[str, ...] = ()
    files_touched: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()

    def to_dict(self) -> SummaryDict:
        return {
            "goal": self.goal,
            "constraints": list(self.constraints),
            "decisions": list(self.decisions),
            "done": list(self.done),
            "current_state": self.current_state,
            "next_steps": list(self.next_steps),
            "files_touched": list(self.files_touched),
            "errors": list(self.errors),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Summary:
        """Validate a decoded JSON object against the schema (missing lists become empty)."""
        if not isinstance(data, Mapping):
            raise SummaryError("summary: expected a JSON object")
        unknown = sorted(set(data) - set(FIELDS))
        if unknown:
            raise SummaryError(f"summary: unknown keys {', '.join(unknown)}")
        values: dict[str, Any] = {}
        for key in TEXT_FIELDS:
            value = data.get(key, "")
            if value is None:
                value = ""
            if not isinstance(value, str):
                raise SummaryError(f"summary.{key}: expected a string")
            values[key] = value.strip()
        for key in LIST_FIELDS:
            items = data.get(key, [])
            if items is None:
                items = []
            if isinstance(items, str):
                items = [items] if items.strip() else []
            if not isinstance(items, list):
                raise SummaryError(f"summary.{key}: expected a list of strings")
            for i, item in enumerate(items):
                if not isinstance(item, str):
                    raise SummaryError(f"summary.{key}[{i}]: expected a string")
            values[key] = tuple(s.strip() for s in items if s.strip())
        if not values["goal"] and not values["current_state"]:
            raise SummaryError("summary: goal and current_state are both empty")
        return cls(**values)

    def to_text(self) -> str:
        """The note spliced into the history; :func:`parse_summary` reads it back.

        >>> print(Summary(goal="Ship v2", next_steps=("run tests",)).to_text())
        [summary of earlier conversation]
        Goal: Ship v2
        Next steps:
        - run tests
        """
        lines = [SUMMARY_HEADER]
        for key in FIELDS:
            value = getattr(self, key)
            if key in TEXT_FIELDS:
                if value:
                    lines.append(f"{_TITLES[key]}: {value}")
            elif value:
                lines.append(f"{_TITLES[key]}:")
                lines.extend(f"- {item}" for item in value)
        return "\n".join(lines)

    def merge(self, newer: Summary) -> Summary:
        """Fold a newer summary into this older one: lists accumulate, state comes from newer."""
        return Summary(
            goal=self.goal or newer.goal,
            constraints=tuple(txt.dedupe([*self.constraints, *newer.constraints])),
            decisions=tuple(txt.dedupe([*self.decisions, *newer.decisions])),
            done=tuple(txt.dedupe([*self.done, *newer.done])),
            current_state=newer.current_state or self.current_state,
            next_steps=newer.next_steps or self.next_steps,
            files_touched=tuple(txt.dedupe([*self.files_touched, *newer.files_touched])),
            errors=tuple(txt.dedupe([*self.errors, *newer.errors])),
        )


def parse_summary(text: str) -> Summary | None:
    """Read back a note written by :meth:`Summary.to_text`; None if ``text`` is not one.

    >>> parse_summary(Summary(goal="g", constraints=("never push",)).to_text()).constraints
    ('never push',)
    """
    if not text.startswith(SUMMARY_HEADER):
        return None
    values: dict[str, Any] = {k: [] for k in LIST_FIELDS}
    values.update(dict.fromkeys(TEXT_FIELDS, ""))
    current: str | None = None
    for line in text[len(SUMMARY_HEADER) :].splitlines():
        if not line.strip():
            continue
        if line.startswith("- ") and current in LIST_FIELDS:
            values[current].append(line[2:])
            continue
        title, sep, rest = line.partition(":")
        key = _BY_TITLE.get(title.strip().lower()) if sep else None
        if key is None:
            if current in TEXT_FIELDS:
                values[current] += "\n" + line
            continue
        current = key
        if key in TEXT_FIELDS:
            values[key] = rest.strip()
    return Summary(
        goal=values["goal"],
        constraints=tuple(values["constraints"]),
        decisions=tuple(values["decisions"]),
        done=tuple(values["done"]),
        current_state=values["current_state"],
        next_steps=tuple(values["next_steps"]),
        files_touched=tuple(values["files_touched"]),
        errors=tuple(values["errors"]),
    )


def summary_blocks(message: Message) -> list[Summary]:
    """The summaries spliced into a message by an earlier compaction."""
    out = []
    for b in message.content:
        if isinstance(b, TextBlock) and b.text.startswith(SUMMARY_HEADER):
            parsed = parse_summary(b.text)
            if parsed is not None:
                out.append(parsed)
    return out


@dataclass(frozen=True)
class SummaryResult:
    """A summary, the note text spliced in, and what producing it cost (None when free)."""

    summary: Summary
    text: str
    summarizer: str
    cost: Usage | None = None
    model: str | None = None
    attempts: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "summary": self.summary.to_dict(),
            "text": self.text,
            "summarizer": self.summarizer,
            "cost": self.cost.to_dict() if self.cost is not None else None,
            "model": self.model,
            "attempts": self.attempts,
        }


class Summarizer(Protocol):
    """Turns the messages being compacted into a :class:`SummaryResult`."""

    name: str

    def summarize(self, messages: Sequence[Message]) -> SummaryResult: ...


# --- what tools did -----------------------------------------------------------------------------

_PATH_KEYS = ("file_path", "path", "filepath", "notebook_path", "filename", "target_file", "file")
_EDIT_WORDS = ("edit", "write", "create", "replace", "patch", "insert", "apply", "update", "delete")
_READ_WORDS = ("read", "view", "open", "cat", "grep", "glob", "search", "ls", "find", "list")


def file_actions(block: ToolUseBlock) -> list[tuple[str, str]]:
    """(action, path) pairs a tool call performed, action being ``read`` or ``edit``.

    >>> file_actions(ToolUseBlock("t", "Edit", {"file_path": "a.py", "old_string": "x"}))
    [('edit', 'a.py')]
    >>> file_actions(ToolUseBlock("t", "str_replace_editor", {"command": "view", "path": "b.py"}))
    [('read', 'b.py')]
    """
    name = block.name.lower()
    command = block.input.get("command")
    verb_source = f"{name} {command}" if isinstance(command, str) and "_" in name else name
    if any(w in verb_source for w in _EDIT_WORDS) and not (
        isinstance(command, str) and command in ("view", "read")
    ):
        action = "edit"
    elif any(w in verb_source for w in _READ_WORDS):
        action = "read"
    else:
        action = "use"
    paths = [str(block.input[k]) for k in _PATH_KEYS if isinstance(block.input.get(k), str)]
    patched = patch_paths(block)
    if patched:
        return [("edit", p) for p in patched]
    if not paths and isinstance(command, str) and action == "use":
        paths = [p for p in txt.find_paths(command) if "/" in p]
    return [(action, p) for p in paths]


_PATCH_BEGIN = "*** Begin Patch"
_PATCH_FILE_LINES = ("*** Update File: ", "*** Add File: ", "*** Delete File: ", "*** Move to: ")


def patch_paths(block: ToolUseBlock) -> list[str]:
    """The files a Codex patch (``apply_patch``, its own tool or a shell heredoc) changes.

    >>> patch_paths(ToolUseBlock("c", "apply_patch", {"input": "*** Begin Patch\\n"
    ...     "*** Update File: src/app.ts\\n@@\\n-a\\n+b\\n"
    ...     "*** Add File: b.md\\n+x\\n*** End Patch"}))
    ['src/app.ts', 'b.md']
    """
    if any(key in block.input for key in _PATH_KEYS):
        return []  # a file tool: its own path is what it touches, whatever text it writes
    out: list[str] = []
    for value in block.input.values():
        if not isinstance(value, str) or _PATCH_BEGIN not in value:
            continue
        for line in value.splitlines():
            for start in _PATCH_FILE_LINES:
                if line.startswith(start) and line[len(start) :].strip():
                    out.append(line[len(start) :].strip())
    return list(dict.fromkeys(out))


# --- the extractive summarizer -----------------------------------------------------------------


# Where a tool result says the file was not there (some harnesses do not set is_error).
_FAILED_RESULT = re.compile(
    r"^\s*<tool_use_error>|\bFile does not exist\b|\bNo such file or directory\b|"
    r"\bEISDIR\b|\bis a directory\b|\bFile not found\b",
    re.IGNORECASE,
)
# Devices and temp files are not work the summary should name (prefixes matched, not opened).
_NOT_FILES = ("/dev/", "/proc/", "/sys/", "/tmp/", "/private/tmp/", "/var/folders/")  # noqa: S108
_SEARCH_TOOL = re.compile(r"(?:^|[^a-z])(?:grep|glob|search|find|ls|list)", re.IGNORECASE)
_FILE_NAME = re.compile(r"[^/]*[^/.]\.[A-Za-z0-9_+-]{1,12}$|(?:[A-Z][A-Za-z]+file|README|LICENSE)$")


def touched_file(tool: str, action: str, path: str) -> bool:
    """Whether a file tool's ``path`` names a real file: reads and edits only, never a device,
    a temp file or ``.``; a search tool's path counts only when it names a file, not a folder.

    >>> touched_file("Read", "read", "lib/billing/client.ex"), touched_file("Bash", "use", "a.py")
    (True, False)
    >>> touched_file("Grep", "read", "lib/billing"), touched_file("Write", "edit", "/dev/null")
    (False, False)
    """
    if action not in ("read", "edit") or not path.strip() or path.rstrip("/") in ("", ".", ".."):
        return False
    if path.endswith("/") or path.startswith(_NOT_FILES) or any(c in path for c in "*?{}"):
        return False
    if action == "read" and _SEARCH_TOOL.search(tool):
        return bool(_FILE_NAME.search(path))
    return True


def pinned_task(messages: Sequence[Message]) -> str:
    """The session's task: the goal of a summary spliced in earlier, else the first prompt in
    the user's own words (harness records such as ``<task-notification>`` are skipped).

    >>> pinned_task([Message(0, "user", (TextBlock("<command-name>/clear</command-name>"),)),
    ...              Message(1, "user", (TextBlock("Implement spotter-gqc."),))])
    'Implement spotter-gqc.'
    """
    for m in messages:
        for s in summary_blocks(m):
            if s.goal:
                return s.goal
        text = harness.prompt_text(m, skip=(SUMMARY_HEADER,))
        if text.strip():
            return txt.clip(text, 500)
    return ""


@dataclass
class ExtractiveSummarizer:
    """Deterministic, offline summary built from cues in the messages (no network).

    Goal from the pinned task (``task``, else the first prompt in the user's own words);
    constraints from imperative sentences of the user (English and Portuguese), never from
    harness records; decisions from the assistant's choices, not its narration ("Let me
    check..."); done items from its own words; files from the reads and edits that succeeded;
    errors from failed tool results; state and next steps from the latest turns. Summaries
    spliced in by earlier compactions are folded in, so a fact survives recursion.

    >>> ms = [Message(0, "user", (TextBlock("Migrate billing. Não altere a API pública."),))]
    >>> ExtractiveSummarizer().summarize(ms).summary.constraints
    ('Não altere a API pública.',)
    """

    name: str = "extractive"
    max_constraints: int = 40
    max_decisions: int = 12
    max_done: int = 15
    max_files: int = 60
    max_errors: int = 10
    max_next: int = 8
    sentence_chars: int = 300

    def summarize(self, messages: Sequence[Message], *, task: str = "") -> SummaryResult:
        """Summarize ``messages``; ``task`` is the session's pinned task when the caller
        keeps it outside them (see :func:`pinned_task`)."""
        previous = Summary()
        has_previous = False
        goal = txt.clip(task, 500) if task.strip() else ""
        constraints: list[str] = []
        decisions: list[str] = []
        done: list[str] = []
        files: dict[str, list[str]] = {}
        errors: list[str] = []
        assistant_texts: list[str] = []
        answers: list[str] = []
        tool_names: dict[str, str] = {}
        pending: dict[str, list[tuple[str, str]]] = {}
        for m in messages:
            for s in summary_blocks(m):
                previous = previous.merge(s) if has_previous else s
                has_previous = True
            if is_prompt(m):
                prose = harness.prompt_text(m, skip=(SUMMARY_HEADER,))
                if not goal and prose.strip():
                    goal = txt.clip(prose, 500)
                constraints.extend(txt.constraint_sentences(prose, self.sentence_chars))
            elif m.role == "assistant":
                prose = "\n".join(b.text for b in m.content if isinstance(b, TextBlock))
                if prose.strip():
                    assistant_texts.append(prose)
                    if not any(isinstance(b, ToolUseBlock) for b in m.content):
                        answers.append(prose)  # a text that is not the lead-in to a call
                    decisions.extend(txt.decision_sentences(prose, self.sentence_chars))
                    done.extend(txt.done_sentences(prose, self.sentence_chars))
                for use in m.tool_uses():
                    tool_names[use.id] = use.name
                    pending[use.id] = [
                        (action, path)
                        for action, path in file_actions(use)
                        if touched_file(use.name, action, path)
                    ]
            for result in m.tool_results():
                failed = result.is_error or bool(_FAILED_RESULT.search(result.text[:300]))
                # a file counts once its tool said it worked
                for action, path in pending.pop(result.tool_use_id, []):
                    if not failed:
                        verbs = files.setdefault(path, [])
                        if action not in verbs:
                            verbs.append(action)
                if result.is_error and not result.text.startswith(CLEARED_PREFIX):
                    first = next((ln for ln in result.text.splitlines() if ln.strip()), "")
                    name = tool_names.get(result.tool_use_id, "tool")
                    errors.append(f"{name}: {txt.clip(first, 200)}")
        for path, verbs in files.items():
            if "edit" in verbs:
                done.append(f"edited {path}")
        current = _current_state(answers) or _current_state(assistant_texts)
        next_steps: list[str] = []
        for t in assistant_texts[-3:]:
            next_steps.extend(txt.next_sentences(t, self.sentence_chars))
        files_touched = [f"{p} ({', '.join(v)})" for p, v in files.items()]
        new = Summary(
            goal=goal,
            constraints=tuple(txt.dedupe(constraints)[: self.max_constraints]),
            decisions=tuple(txt.dedupe(decisions)[-self.max_decisions :]),
            done=tuple(txt.dedupe(done)[-self.max_done :]),
            current_state=current,
            next_steps=tuple(txt.dedupe(next_steps)[-self.max_next :]),
            files_touched=tuple(files_touched[-self.max_files :]),
            errors=tuple(txt.dedupe(errors)[-self.max_errors :]),
        )
        summary = previous.merge(new) if has_previous else new
        summary = Summary(
            goal=summary.goal,
            constraints=summary.constraints[: self.max_constraints],
            decisions=summary.decisions[-self.max_decisions :],
            done=summary.done[-self.max_done :],
            current_state=summary.current_state,
            next_steps=summary.next_steps[-self.max_next :],
            files_touched=_files_merged(summary.files_touched)[-self.max_files :],
            errors=summary.errors[-self.max_errors :],
        )
        return SummaryResult(summary, summary.to_text(), self.name)


# What a cleared tool result says in place of its output (strategies.PLACEHOLDER): a
# placeholder, not an error to carry into a summary.
CLEARED_PREFIX = "[content removed"


def _current_state(assistant_texts: Sequence[str]) -> str:
    """Where the work stands: the latest of the agent's texts that says something once its
    narration ("Let me check…") and reactions ("Good catch!") are left out."""
    for text in reversed(assistant_texts[-5:]):
        said = " ".join(txt.said_sentences(text))
        if said.strip():
            return txt.clip(said, 600)
    return ""


def _files_merged(items: Iterable[str]) -> tuple[str, ...]:
    """Merge ``path (read)`` and ``path (edit)`` entries of successive summaries."""
    merged: dict[str, list[str]] = {}
    for item in items:
        m = re.fullmatch(r"(.*) \(([\w, ]+)\)", item)
        path, verbs = (m.group(1), m.group(2).split(", ")) if m else (item, [])
        acc = merged.setdefault(path, [])
        acc.extend(v for v in verbs if v not in acc)
    return tuple(f"{p} ({', '.join(v)})" if v else p for p, v in merged.items())


# --- server-side compaction in a trace (compact_20260112) ----------------------------------------


def apply_compaction_blocks(messages: Sequence[Message]) -> list[Message]:
    """What the API keeps of a history that carries compaction blocks: from the last one on.

    The API drops every block before the last ``compaction`` block it returned; a block with
    ``content`` None (a failed compaction) is a no-op.

    >>> ms = [Message(0, "user", (TextBlock("old"),)),
    ...       Message(1, "assistant", (CompactionBlock("sum"), TextBlock("hi"))),
    ...       Message(2, "user", (TextBlock("next"),))]
    >>> [(m.seq, len(m.content)) for m in apply_compaction_blocks(ms)]
    [(1, 2), (2, 1)]
    """
    from dataclasses import replace

    for i in range(len(messages) - 1, -1, -1):
        content = messages[i].content
        for j in range(len(content) - 1, -1, -1):
            b = content[j]
            if isinstance(b, CompactionBlock) and b.content is not None:
                return [replace(messages[i], content=content[j:]), *messages[i + 1 :]]
    return list(messages)


def server_compactions(messages: Sequence[Message]) -> list[ObservedCompaction]:
    """Observed server-side compactions: one per assistant message with a compaction block.

    ``tokens_before`` is the context of the previous call; ``tokens_after`` the context of the
    call that compacted, from its last ``message`` iteration (never the compaction entry).
    """
    out: list[ObservedCompaction] = []
    last_ctx: int | None = None
    for m in messages:
        if m.role != "assistant":
            continue
        blocks = [b for b in m.content if isinstance(b, CompactionBlock)]
        if blocks:
            block = blocks[-1]
            out.append(
                ObservedCompaction(
                    seq=m.seq,
                    trigger="server",
                    strategy="compact_20260112",
                    tokens_before=last_ctx,
                    tokens_after=context_size(m.usage) if m.usage is not None else None,
                    summary=block.content,
                    error=None if block.content is not None else "compaction returned no summary",
                )
            )
        if m.usage is not None:
            last_ctx = context_size(m.usage)
    return out
