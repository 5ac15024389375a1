"""Evals of a compaction: pair validity, splice effectiveness, retention, rework afterwards."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypedDict

from compaction.engine import text as txt
from compaction.engine.messages import (
    Message,
    Orphan,
    OrphanDict,
    TextBlock,
    check_pairs,
    is_prompt,
)
from compaction.engine.summarizers import file_actions

BARELY_CHANGED_RATIO = 0.9
BARELY_CHANGED_WARNING = (
    "tokens_before and tokens_after barely change: the splice did not replace the old messages"
)


class PairsDict(TypedDict):
    ok: bool
    orphans: list[OrphanDict]


@dataclass(frozen=True)
class PairReport:
    """Tool pairs after a splice: ``ok`` when no tool_use or tool_result is orphaned."""

    orphans: tuple[Orphan, ...]

    @property
    def ok(self) -> bool:
        return not self.orphans

    def to_dict(self) -> PairsDict:
        return {"ok": self.ok, "orphans": [o.to_dict() for o in self.orphans]}


def pair_validity(messages: Sequence[Message]) -> PairReport:
    """Check a context the way the API would; every orphan is listed.

    >>> pair_validity([Message(0, "user", (TextBlock("hi"),))]).ok
    True
    """
    return PairReport(tuple(check_pairs(messages)))


class SpliceDict(TypedDict):
    """``SpliceReport.to_dict()``: stored in ``CompactionSpan.details["splice"]``."""

    tokens_before: int
    tokens_after: int
    ratio: float
    saved: int
    barely_changed: bool
    warning: str | None


@dataclass(frozen=True)
class SpliceReport:
    """after/before of one splice; ``warning`` when it barely changed the size."""

    tokens_before: int
    tokens_after: int
    ratio: float
    saved: int
    barely_changed: bool
    warning: str | None

    def to_dict(self) -> SpliceDict:
        return {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "ratio": round(self.ratio, 4),
            "saved": self.saved,
            "barely_changed": self.barely_changed,
            "warning": self.warning,
        }


def splice_effectiveness(
    tokens_before: int, tokens_after: int, *, barely: float = BARELY_CHANGED_RATIO
) -> SpliceReport:
    """How much a splice shrank the context.

    >>> splice_effectiveness(150000, 148000).warning is not None
    True
    >>> splice_effectiveness(150000, 38000).barely_changed
    False
    """
    ratio = tokens_after / tokens_before if tokens_before > 0 else 1.0
    barely_changed = ratio >= barely
    return SpliceReport(
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        ratio=ratio,
        saved=tokens_before - tokens_after,
        barely_changed=barely_changed,
        warning=BARELY_CHANGED_WARNING if barely_changed else None,
    )


FactKind = Literal["probe", "constraint", "path", "identifier"]


class FactDict(TypedDict):
    kind: FactKind
    text: str
    seq: int | None


class RetentionItemDict(FactDict):
    """``RetentionItem.to_dict()``: one entry of ``CompactionSpan.retention``."""

    kept: bool
    method: Literal["containment", "judge"]


@dataclass(frozen=True)
class Fact:
    """Something the agent must still know after a compaction."""

    kind: FactKind
    text: str
    seq: int | None = None

    def to_dict(self) -> FactDict:
        return {"kind": self.kind, "text": self.text, "seq": self.seq}


@dataclass(frozen=True)
class Probe:
    """An uploaded fact to check, like the seed's ``{"constraint_turn": 3, "constraint": ...}``."""

    text: str
    seq: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Probe:
        text = data.get("text", data.get("constraint"))
        if not isinstance(text, str) or not text.strip():
            raise ValueError("probe.text: missing or empty")
        seq = data.get("seq")
        return cls(text, seq if isinstance(seq, int) else None)


def extract_facts(messages: Sequence[Message]) -> list[Fact]:
    """Constraints and identifiers the user stated, and paths from prompts and tool calls.

    >>> [f.kind for f in extract_facts([Message(3, "user", (TextBlock(
    ...     "Do not change the public API of billing/api.py."),))])]
    ['constraint', 'path']
    """
    facts: list[Fact] = []
    seen: set[tuple[str, str]] = set()

    def add(kind: FactKind, text: str, seq: int) -> None:
        key = (kind, txt.normalize(text))
        if key[1] and key not in seen:
            seen.add(key)
            facts.append(Fact(kind, text, seq))

    for m in messages:
        if is_prompt(m):
            prose = "\n".join(b.text for b in m.content if isinstance(b, TextBlock))
            for s in txt.constraint_sentences(prose):
                add("constraint", s, m.seq)
            for p in txt.find_paths(prose):
                add("path", p, m.seq)
            for ident in txt.find_identifiers(prose):
                add("identifier", ident, m.seq)
        elif m.role == "assistant":
            for use in m.tool_uses():
                for action, path in file_actions(use):
                    # files the agent read or changed; not every path a shell command named
                    if action != "use" and not path.startswith(_SYSTEM_PATHS):
                        add("path", path, m.seq)
    return facts


_SYSTEM_PATHS = ("/dev/", "/proc/", "/sys/")


# File names too common to stand for one file on their own.
_GENERIC_NAMES = frozenset(
    [
        "__init__.py",
        "__main__.py",
        "conftest.py",
        "setup.py",
        "settings.py",
        "models.py",
        "views.py",
        "urls.py",
        "utils.py",
        "main.py",
        "main.go",
        "main.rs",
        "lib.rs",
        "mod.rs",
        "index.js",
        "index.ts",
        "index.tsx",
        "index.html",
        "readme.md",
        "package.json",
        "cargo.toml",
        "pyproject.toml",
        "mix.exs",
        "config.exs",
        "test_helper.exs",
        "makefile",
        "dockerfile",
    ]
)


def path_forms(path: str) -> list[str]:
    """A path and the shorter spellings a summary may use for it: relative to the checkout,
    or the bare file name when that name is distinctive.

    >>> path_forms("/home/u/proj/lib/billing/api_client.py")
    ['/home/u/proj/lib/billing/api_client.py', 'lib/billing/api_client.py', \
'billing/api_client.py', 'api_client.py']
    >>> path_forms("src/billing/__init__.py")
    ['src/billing/__init__.py', 'billing/__init__.py']
    """
    parts = [p for p in path.strip("/").split("/") if p]
    forms = [path]
    for n in (3, 2):
        if len(parts) > n:
            forms.append("/".join(parts[-n:]))
    name = parts[-1] if parts else ""
    if len(parts) > 1 and "." in name.strip(".") and name.lower() not in _GENERIC_NAMES:
        forms.append(name)
    return forms


def _names_file(haystack: str, name: str) -> bool:
    """The bare file name as a word of its own: "api.ex" is not named by "billing_api.ex"."""
    pattern = r"(?<![\w.-])" + re.escape(txt.normalize(name)) + r"(?![\w-])"
    return re.search(pattern, haystack) is not None


def _kept(haystack: str, fact: Fact) -> bool:
    if fact.kind == "path":
        forms = path_forms(fact.text)
        if "/" not in forms[-1] and len(forms) > 1:
            return any(txt.contains(haystack, f) for f in forms[:-1]) or _names_file(
                haystack, forms[-1]
            )
        return any(txt.contains(haystack, form) for form in forms)
    return txt.contains(haystack, fact.text)


class Judge(Protocol):
    """Decides, for each fact, whether a compacted context still conveys it."""

    def judge(self, facts: Sequence[str], context: str) -> list[bool]: ...


@dataclass(frozen=True)
class RetentionItem:
    fact: Fact
    kept: bool
    method: Literal["containment", "judge"]

    def to_dict(self) -> RetentionItemDict:
        fact = self.fact
        return {
            "kind": fact.kind,
            "text": fact.text,
            "seq": fact.seq,
            "kept": self.kept,
            "method": self.method,
        }


@dataclass(frozen=True)
class RetentionReport:
    """Which facts from before a compaction the compacted context still holds."""

    items: tuple[RetentionItem, ...]

    @property
    def score(self) -> float:
        return sum(i.kept for i in self.items) / len(self.items) if self.items else 1.0

    @property
    def lost(self) -> list[Fact]:
        return [i.fact for i in self.items if not i.kept]

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": round(self.score, 4),
            "checked": len(self.items),
            "lost": [f.to_dict() for f in self.lost],
            "items": [i.to_dict() for i in self.items],
        }


def context_text(messages: Iterable[Message]) -> str:
    """The normalized text of a context, for containment checks."""
    return txt.normalize("\n".join(m.text for m in messages))


def retention(
    before: Sequence[Message],
    after: Sequence[Message],
    *,
    probes: Iterable[Probe] = (),
    auto: bool = True,
    judge: Judge | None = None,
) -> RetentionReport:
    """Check each probe and auto-extracted fact of ``before`` against ``after``.

    Offline the check is normalized containment (case, accents, spacing and edge punctuation
    ignored). With a ``judge``, facts not found verbatim are asked to the judge.

    >>> before = [Message(3, "user", (TextBlock("Do not change the public API."),))]
    >>> retention(before, [], probes=[Probe("do not change the public API")]).score
    0.0
    """
    facts = [Fact("probe", p.text, p.seq) for p in probes]
    if auto:
        facts.extend(extract_facts(before))
    haystack = context_text(after)
    items: list[RetentionItem] = []
    missing: list[int] = []
    for i, f in enumerate(facts):
        kept = _kept(haystack, f)
        items.append(RetentionItem(f, kept, "containment"))
        if not kept:
            missing.append(i)
    if judge is not None and missing:
        verdicts = judge.judge([facts[i].text for i in missing], "\n".join(m.text for m in after))
        for i, verdict in zip(missing, verdicts, strict=False):
            items[i] = RetentionItem(facts[i], bool(verdict), "judge")
    return RetentionReport(tuple(items))


class ReworkDict(TypedDict):
    """``ReworkSignal.to_dict()``: one entry of ``CompactionSpan.rework``."""

    kind: Literal["reread", "reedit"]
    path: str
    first_seq: int
    repeat_seq: int
    compaction_seq: int


@dataclass(frozen=True)
class ReworkSignal:
    """The agent redoing work after a compaction: the summary probably lost it."""

    kind: Literal["reread", "reedit"]
    path: str
    first_seq: int
    repeat_seq: int
    compaction_seq: int

    def to_dict(self) -> ReworkDict:
        return {
            "kind": self.kind,
            "path": self.path,
            "first_seq": self.first_seq,
            "repeat_seq": self.repeat_seq,
            "compaction_seq": self.compaction_seq,
        }


def rework_signals(
    messages: Sequence[Message], compaction_seqs: Iterable[int]
) -> list[ReworkSignal]:
    """Files read again, and identical edits made again, after each compaction.

    For a compaction at seq ``c``, a read of a path before ``c`` followed by a read of the same
    path after ``c`` (and before the next compaction) is a re-read; the same edit call (same
    tool, same input) on both sides is a re-edit.
    """
    points = sorted(set(compaction_seqs))
    reads: list[tuple[int, str]] = []
    edits: list[tuple[int, str, str]] = []
    for m in messages:
        if m.role != "assistant":
            continue
        for use in m.tool_uses():
            key = f"{use.name}:{json.dumps(use.input, sort_keys=True, default=str)}"
            for action, path in file_actions(use):
                if action == "read":
                    reads.append((m.seq, path))
                elif action == "edit":
                    edits.append((m.seq, path, key))
    out: list[ReworkSignal] = []
    for i, c in enumerate(points):
        end = points[i + 1] if i + 1 < len(points) else None
        first_read: dict[str, int] = {}
        for seq, path in reads:
            if seq < c:
                first_read.setdefault(path, seq)
        reported: set[tuple[str, str]] = set()
        for seq, path in reads:
            after_c = seq >= c and (end is None or seq < end)
            if after_c and path in first_read and ("reread", path) not in reported:
                reported.add(("reread", path))
                out.append(ReworkSignal("reread", path, first_read[path], seq, c))
        first_edit: dict[str, tuple[int, str]] = {}
        for seq, path, key in edits:
            if seq < c:
                first_edit.setdefault(key, (seq, path))
        for seq, path, key in edits:
            after_c = seq >= c and (end is None or seq < end)
            if after_c and key in first_edit and ("reedit", key) not in reported:
                reported.add(("reedit", key))
                out.append(ReworkSignal("reedit", path, first_edit[key][0], seq, c))
    return out
