"""Where a summary says each fact it kept: the places a page marks in the summary's own text.

The summary is read as lines, each with its runs of whitespace read as one space (the way the
verdicts quote an evidence line), so a place never spans two lines. A fact is looked for by a
few needles, best first (:func:`needles`): the fact as written, a path's file name, then the
evidence line the verdict quoted. No regular expression reads the summary: each needle is one
``str.find`` over it, and a needle is at most :data:`NEEDLE_MAX` characters, so finding a fact
costs time linear in the summary's length whatever the text holds.

>>> lines = summary_lines("Goal: ship billing/api.py\\n\\n- Do not   change the API")
>>> lines
['Goal: ship billing/api.py', '- Do not change the API']
>>> fact_places(lines, [needles("billing/api.py", ""), needles("x.py", "")])
[Place(line=0, start=11, end=25), None]
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "NEEDLE_MAX",
    "Place",
    "Segment",
    "fact_places",
    "line_segments",
    "needles",
    "summary_lines",
    "unbulleted",
]

# A needle longer than this is cut: the cost of one find stays linear in the summary.
NEEDLE_MAX = 200
# Shorter needles ("a", "go") would be found inside any word.
NEEDLE_MIN = 3
# The mark that :func:`compaction.engine.text.clip` leaves where it cut a quoted line.
CLIP_MARK = "\u2026"
BULLETS = ("- ", "* ", "\u2022 ")


@dataclass(frozen=True)
class Place:
    """A fact's place: [start, end) in ``lines[line]``."""

    line: int
    start: int
    end: int


@dataclass(frozen=True)
class Segment:
    """A stretch of a line: plain text (``facts`` empty) or a mark naming the facts it says."""

    text: str
    facts: tuple[int, ...] = ()


def summary_lines(text: str) -> list[str]:
    """The summary's non-empty lines, whitespace runs inside each read as one space."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def unbulleted(line: str) -> str:
    """A line without its list bullet or heading marks, as a page shows it.

    >>> unbulleted("- do not push"), unbulleted("## Goal"), unbulleted("-1 is fine")
    ('do not push', 'Goal', '-1 is fine')
    """
    for bullet in BULLETS:
        if line.startswith(bullet):
            return line[len(bullet) :]
    return line.lstrip("#").strip() if line.startswith("#") else line


def needles(text: str, evidence: str) -> list[str]:
    """What to look for, best first: the fact as written, a path's file name (a summary often
    names ``api.py`` for ``billing/api.py``), then the longest stretch of the evidence line
    between the marks of a clip.

    >>> needles("lib/billing/api.py", "see api.py for the …")
    ['lib/billing/api.py', 'api.py', 'see api.py for the']
    """
    out = [" ".join(text.split())]
    tail = out[0].rstrip("/").rsplit("/", 1)[-1]
    if tail != out[0] and "." in tail:
        out.append(tail)
    if evidence:
        stretches = [" ".join(part.split()) for part in evidence.split(CLIP_MARK)]
        out.append(unbulleted(max(stretches, key=len)))
    return [n[:NEEDLE_MAX] for n in dict.fromkeys(out) if len(n) >= NEEDLE_MIN]


def fact_places(lines: Sequence[str], wanted: Sequence[Sequence[str]]) -> list[Place | None]:
    """For each fact (its needles, best first), the first place in ``lines`` that says it, or
    None. Case is ignored where lowering keeps every offset (it does for nearly all text)."""
    joined = "\n".join(lines)
    lowered = joined.lower()
    fold = len(lowered) == len(joined)
    hay = lowered if fold else joined
    starts, at = [], 0
    for line in lines:
        starts.append(at)
        at += len(line) + 1
    out: list[Place | None] = []
    for fact_needles in wanted:
        place = None
        for needle in fact_needles:
            # a needle holds no newline, so a find never crosses from one line into the next
            n = " ".join(needle.split())[:NEEDLE_MAX]
            if len(n) < NEEDLE_MIN:
                continue
            found = hay.find(n.lower() if fold else n)
            if found >= 0:
                row = bisect_right(starts, found) - 1
                place = Place(row, found - starts[row], found - starts[row] + len(n))
                break
        out.append(place)
    return out


def line_segments(line: str, marks: Sequence[tuple[int, int, int]]) -> list[Segment]:
    """Cut ``line`` into plain and marked stretches. ``marks`` are (start, end, fact); marks
    that overlap become one mark naming every fact in it.

    >>> line_segments("keep api.py and db.py", [(5, 11, 1), (16, 21, 2), (5, 8, 3)])
    [Segment(text='keep ', facts=()), Segment(text='api.py', facts=(1, 3)), \
Segment(text=' and ', facts=()), Segment(text='db.py', facts=(2,))]
    """
    merged: list[tuple[int, int, tuple[int, ...]]] = []
    for start, end, fact in sorted(marks):
        if merged and start < merged[-1][1]:
            s, e, facts = merged[-1]
            merged[-1] = (s, max(e, end), tuple(sorted((*facts, fact))))
        else:
            merged.append((start, end, (fact,)))
    out, at = [], 0
    for start, end, facts in merged:
        if start > at:
            out.append(Segment(line[at:start]))
        out.append(Segment(line[start:end], facts))
        at = end
    if at < len(line):
        out.append(Segment(line[at:]))
    return out
