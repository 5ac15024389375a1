"""Evals of a compaction: pair validity, splice effectiveness, retention, rework afterwards."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol, TypedDict, TypeVar

from compaction.engine import text as txt
from compaction.engine import verdicts
from compaction.engine.fact_index import ContextIndex, checkout_root, context_index
from compaction.engine.fact_index import path_forms as path_forms
from compaction.engine.facts import RULE_KINDS
from compaction.engine.facts import Fact as Fact
from compaction.engine.facts import FactCache as FactCache
from compaction.engine.facts import FactDict as FactDict
from compaction.engine.facts import FactKind as FactKind
from compaction.engine.facts import FactLedger as FactLedger
from compaction.engine.facts import extract_facts as extract_facts
from compaction.engine.messages import Message, Orphan, OrphanDict, check_pairs
from compaction.engine.summarizers import file_actions
from compaction.engine.verdicts import FACT_VERDICTS, NeededAgain, NeededAgainDict, Verdict

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

    >>> from compaction.engine.messages import TextBlock
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


@dataclass(frozen=True)
class SpanVerdict:
    """One health verdict for a compaction, from its splice and what it lost together: a
    green splice never stands beside a lost constraint."""

    status: Literal["ok", "warn", "bad"]
    label: str
    reasons: tuple[str, ...]


def span_verdict(
    failure_reason: str, lost_kinds: Iterable[str], needed_again: Sequence[str] = ()
) -> SpanVerdict:
    """``bad`` when the splice failed, a rule (the task, a constraint, a probe) was lost, or a
    lost fact was needed again; ``warn`` when only files or identifiers were lost and not
    needed since; ``ok`` otherwise. The facts lost and needed again lead the label.

    >>> span_verdict("", ["path", "constraint"]).label
    'Lost 1 rule · lost 1 file or id'
    >>> span_verdict("the splice saved nothing", ["path"]).label
    'Failed splice · lost 1 file or id'
    >>> span_verdict("", ["path", "path"], needed_again=["lib/a.py"]).label
    'Lost and needed again: lib/a.py · lost 2 files or ids'
    >>> span_verdict("", []).status
    'ok'
    """
    kinds = list(lost_kinds)
    rules = sum(kind in RULE_KINDS for kind in kinds)
    others = len(kinds) - rules
    parts = []
    if needed_again:
        shown = ", ".join(txt.clip(t, 60) for t in needed_again[:2])
        more = f" and {len(needed_again) - 2} more" if len(needed_again) > 2 else ""
        parts.append(f"Lost and needed again: {shown}{more}")
    if failure_reason:
        parts.append("Failed splice")
    if rules:
        parts.append(f"lost {rules} rule{'s' if rules != 1 else ''}")
    if others:
        parts.append(
            f"lost {others} file{'s' if others != 1 else ''} or id{'s' if others != 1 else ''}"
        )
    if not parts:
        return SpanVerdict("ok", "Healthy", ())
    status: Literal["warn", "bad"] = "bad" if failure_reason or rules or needed_again else "warn"
    reasons = tuple(r for r in (failure_reason,) if r)
    label = " · ".join(parts)
    return SpanVerdict(status, label[0].upper() + label[1:], reasons)


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


class RetentionItemDict(FactDict):
    """``RetentionItem.to_dict()``: one entry of ``CompactionSpan.retention``."""

    kept: bool
    method: Literal["containment", "judge"]
    evidence: str
    verdict: Verdict
    needed_again: NeededAgainDict | None


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


class Judge(Protocol):
    """Decides, for each fact, whether a compacted context still conveys it."""

    def judge(self, facts: Sequence[str], context: str) -> list[bool]: ...


@dataclass(frozen=True)
class RetentionItem:
    """One fact's verdict (:mod:`~compaction.engine.verdicts`), with its ``evidence``: the
    matching line of the compacted context, or why nothing matched. ``kept`` is "not lost"
    (kept, paraphrased, or not a fact at risk); items stored before the five verdicts read as
    kept or lost."""

    fact: Fact
    kept: bool
    method: Literal["containment", "judge"]
    evidence: str = ""
    verdict: Verdict | None = None
    needed_again: NeededAgain | None = None

    def __post_init__(self) -> None:
        if self.verdict is None:
            object.__setattr__(self, "verdict", "kept" if self.kept else "lost")

    @property
    def is_fact(self) -> bool:
        """Counted by retention: kept, paraphrased or lost (not mentioned, not reloaded)."""
        return self.verdict in FACT_VERDICTS

    @property
    def lost(self) -> bool:
        return self.verdict == "lost"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RetentionItem:
        """The item back from its stored form (``to_dict``)."""
        fact = Fact(data["kind"], data["text"], data.get("seq"))
        method: Literal["containment", "judge"] = (
            "judge" if data.get("method") == "judge" else "containment"
        )
        verdict = data.get("verdict")
        again = data.get("needed_again")
        return cls(
            fact,
            bool(data["kept"]),
            method,
            str(data.get("evidence") or ""),
            verdict if verdict in verdicts.VERDICTS else None,
            NeededAgain(int(again["seq"]), again["how"]) if isinstance(again, dict) else None,
        )

    def to_dict(self) -> RetentionItemDict:
        fact = self.fact
        return {
            "kind": fact.kind,
            "text": fact.text,
            "seq": fact.seq,
            "kept": self.kept,
            "method": self.method,
            "evidence": self.evidence,
            "verdict": self.verdict or ("kept" if self.kept else "lost"),
            "needed_again": self.needed_again.to_dict() if self.needed_again else None,
        }


@dataclass(frozen=True)
class RetentionReport:
    """Which facts from before a compaction the compacted context still holds."""

    items: tuple[RetentionItem, ...]

    @property
    def facts(self) -> list[RetentionItem]:
        """The items retention counts: kept, paraphrased or lost."""
        return [i for i in self.items if i.is_fact]

    @property
    def score(self) -> float:
        facts = self.facts
        return sum(not i.lost for i in facts) / len(facts) if facts else 1.0

    @property
    def lost(self) -> list[Fact]:
        return [i.fact for i in self.items if i.lost]

    @property
    def lost_needed_again(self) -> list[Fact]:
        return [i.fact for i in self.items if i.lost and i.needed_again is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": round(self.score, 4),
            "checked": len(self.facts),
            "lost": [f.to_dict() for f in self.lost],
            "items": [i.to_dict() for i in self.items],
        }


def context_text(messages: Iterable[Message]) -> str:
    """The normalized text of a context."""
    return txt.normalize("\n".join(m.text for m in messages))


DROPPED_NOTHING = "the splice dropped no message"


def _dropped_nothing(before: Sequence[Message], after: Sequence[Message]) -> bool:
    """Every message of ``before`` is still in ``after`` (same seq and role): nothing to lose."""
    if not before or len(after) < len(before):
        return False
    kept = {(m.seq, m.role) for m in after}
    return all((m.seq, m.role) in kept for m in before)


def check_facts(
    facts: Sequence[Fact],
    after: Sequence[Message] | ContextIndex,
    *,
    judge: Judge | None = None,
    acted: verdicts.ActedIndex | None = None,
    harness: str | None = None,
) -> RetentionReport:
    """Check facts against a compacted context (or its prebuilt :class:`ContextIndex`).

    ``acted`` indexes the tool calls before the compaction: a file or name that a prompt or
    an earlier summary mentions and no call used is ``mentioned``, not a fact
    (:func:`~compaction.engine.verdicts.verdict_of`). Without it every candidate counts.
    """
    index = after if isinstance(after, ContextIndex) else context_index(after)
    root = checkout_root(f.text for f in facts if f.kind == "path")
    files = verdicts.known_files(facts)
    items: list[RetentionItem] = []
    missing: list[int] = []
    for i, f in enumerate(facts):
        checked = verdicts.verdict_of(
            f, index, acted=acted, files=files, root=root, harness=harness
        )
        items.append(
            RetentionItem(
                f, checked.verdict != "lost", "containment", checked.evidence, checked.verdict
            )
        )
        if checked.verdict == "lost":
            missing.append(i)
    if judge is not None and missing:
        answers = judge.judge([facts[i].text for i in missing], index.text)
        for i, answer in zip(missing, answers, strict=False):
            reason = "the judge found it" if answer else "the judge did not find it"
            items[i] = RetentionItem(
                facts[i],
                bool(answer),
                "judge",
                f"{reason}; offline: {items[i].evidence}",
                "paraphrased" if answer else "lost",
            )
    return RetentionReport(tuple(items))


def retention(
    before: Sequence[Message],
    after: Sequence[Message],
    *,
    probes: Iterable[Probe] = (),
    auto: bool = True,
    judge: Judge | None = None,
    facts: Sequence[Fact] | None = None,
    cache: FactCache | None = None,
    later: Sequence[Message] | None = None,
    harness: str | None = None,
) -> RetentionReport:
    """Check each probe and auto-extracted fact of ``before`` against ``after``.

    Offline a path counts when ``after`` names it (path forms, distinctive file name, module or
    class name, a file inside a folder), an id when it appears as a word, a rule when one line
    holds most of its content words with the same polarity and does not reverse it. A probe
    and the auto-extracted rule that says the same thing count once (as the probe). With a
    ``judge``, facts not found offline are asked to the judge. Files and names that no tool
    call of ``before`` used are ``mentioned``, not facts; the harness's own files ``reloaded``.

    ``facts`` are pre-extracted auto facts of ``before`` (from a :class:`FactLedger`), used
    instead of extracting them again; ``cache`` extracts each message once across calls.
    ``later`` (the messages after the boundary up to the next compaction) is where each lost
    fact is looked for again (:func:`~compaction.engine.verdicts.needed_again`).

    >>> from compaction.engine.messages import TextBlock
    >>> before = [Message(3, "user", (TextBlock("Do not change the public API."),))]
    >>> retention(before, [], probes=[Probe("do not change the public API")]).score
    0.0
    """
    probe_list = list(probes)
    checked = [Fact("probe", p.text, p.seq) for p in probe_list]
    if auto:
        extracted = facts if facts is not None else extract_facts(before, cache=cache)
        checked.extend(
            f
            for f in extracted
            if f.kind != "constraint" or not any(txt.same_rule(p.text, f.text) for p in probe_list)
        )
    if _dropped_nothing(before, after):
        return RetentionReport(
            tuple(RetentionItem(f, True, "containment", DROPPED_NOTHING) for f in checked)
        )
    report = check_facts(
        checked, after, judge=judge, acted=verdicts.acted_index(before), harness=harness
    )
    return with_needed_again(report, before, later) if later else report


def with_needed_again(
    report: RetentionReport, before: Sequence[Message], later: Sequence[Message]
) -> RetentionReport:
    """``report`` with each lost fact's first need after the boundary (``later``: the
    messages after it up to the next compaction), found again on every pass: it depends on
    what came after, which grows, while the verdicts depend only on the two contexts."""
    lost = [i for i, item in enumerate(report.items) if item.lost]
    if not lost:
        return report
    found = verdicts.needed_again([report.items[i].fact for i in lost], later, before)
    items = list(report.items)
    for i, again in zip(lost, found, strict=True):
        if items[i].needed_again != again:
            items[i] = replace(items[i], needed_again=again)
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


_Action = TypeVar("_Action", tuple[int, str], tuple[int, str, str])


def _until(actions: list[_Action], start: int, end: int | None) -> Iterator[_Action]:
    """``actions`` (sorted by seq) from index ``start`` while their seq is before ``end``."""
    for index in range(start, len(actions)):
        if end is not None and actions[index][0] >= end:
            return
        yield actions[index]


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
    reads.sort(key=lambda read: read[0])
    edits.sort(key=lambda edit: edit[0])
    # One sweep in seq order: the first reads and edits before each compaction accumulate as
    # it moves forward, and each action after it is looked at once, so the work is linear.
    out: list[ReworkSignal] = []
    first_read: dict[str, int] = {}
    first_edit: dict[str, tuple[int, str]] = {}
    read_at = edit_at = 0
    for i, c in enumerate(points):
        end = points[i + 1] if i + 1 < len(points) else None
        while read_at < len(reads) and reads[read_at][0] < c:
            first_read.setdefault(reads[read_at][1], reads[read_at][0])
            read_at += 1
        while edit_at < len(edits) and edits[edit_at][0] < c:
            seq, path, key = edits[edit_at]
            first_edit.setdefault(key, (seq, path))
            edit_at += 1
        reported: set[tuple[str, str]] = set()
        for seq, path in _until(reads, read_at, end):
            if path in first_read and ("reread", path) not in reported:
                reported.add(("reread", path))
                out.append(ReworkSignal("reread", path, first_read[path], seq, c))
        for seq, path, key in _until(edits, edit_at, end):
            if key in first_edit and ("reedit", key) not in reported:
                reported.add(("reedit", key))
                out.append(ReworkSignal("reedit", path, first_edit[key][0], seq, c))
    return out
