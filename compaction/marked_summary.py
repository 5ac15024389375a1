"""A compaction's summary as the span page shows it: its sections and lines, each line cut
into plain stretches and marks where it says a fact the verdicts found kept or paraphrased.

Every stretch is masked trace text that the template escapes like any other value: nothing
here builds markup, so a summary holding ``<script>`` reads as those characters.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compaction.engine import fact_places, sections
from privacy import masking
from sessions import markdown

# Which verdicts have a place in the summary: a lost fact has none, and mentioned or reloaded
# ones are not facts the summary was meant to keep.
MARKED = ("kept", "paraphrased")


@dataclass(frozen=True)
class Stretch:
    """Plain text (``label`` empty), or a piece of a mark: the verdicts of the facts it says
    (``label``, as text) and the number of the first of them in the list. A mark cut by bold
    or code is several pieces: ``anchor`` (its id on the page) on the first, ``last`` on the
    one the verdict follows. ``style`` is "", "strong" or "code"."""

    text: str
    anchor: str = ""
    label: str = ""
    fact: int = 0
    last: bool = False
    style: str = ""


_INLINE = {"**": "strong", "`": "code"}


def _markers(line: str, mark: str) -> tuple[list[int], list[int]]:
    """Where ``mark`` may open and close a span: every occurrence outside a masked value
    (``[cpf ***-79]``); bold only as exactly two stars, opening before a word and closing
    after one, so a mask's or a glob's stars stay text."""
    masks = markdown.mask_spans(line)
    starts = [start for start, _ in masks]
    found, at = [], line.find(mark)
    while at >= 0:
        i = bisect_right(starts, at) - 1
        if i < 0 or at >= masks[i][1]:
            found.append(at)
        at = line.find(mark, at + len(mark))
    if mark == "`":
        return found, found
    n = len(line)

    def star(i: int) -> bool:
        return 0 <= i < n and line[i] == "*"

    def word(i: int) -> bool:
        return 0 <= i < n and not line[i].isspace() and line[i] != "*"

    opens = [p for p in found if word(p + 2) and not star(p - 1) and not word(p - 1)]
    closes = [p for p in found if word(p - 1) and not star(p + 2)]
    return opens, closes


def inline_runs(line: str) -> list[tuple[str, str]]:
    """A line's Markdown bold and code spans as (text, style) runs, the markers dropped; an
    unclosed marker, and the stars of a masked value, stay as text. Every marker is found
    once and each list is walked forward only: linear in the line.

    >>> inline_runs("Migrate **billing** with `read_file`, a * b")  # doctest: +NORMALIZE_WHITESPACE
    [('Migrate ', ''), ('billing', 'strong'), (' with ', ''), ('read_file', 'code'),
     (', a * b', '')]
    >>> inline_runs("[person_name C*** N***] and **cli_7**")
    [('[person_name C*** N***] and ', ''), ('cli_7', 'strong')]
    """
    marks = {mark: _markers(line, mark) for mark in _INLINE}
    next_open = dict.fromkeys(_INLINE, 0)
    next_close = dict.fromkeys(_INLINE, 0)
    runs: list[tuple[str, str]] = []
    at = 0
    while True:
        candidates = []
        for mark, (opens, _) in marks.items():
            i = next_open[mark]
            while i < len(opens) and opens[i] < at:
                i += 1
            next_open[mark] = i
            if i < len(opens):
                candidates.append((opens[i], mark))
        if not candidates:
            break
        pos, mark = min(candidates)
        opens, closes = marks[mark]
        j = next_close[mark]
        while j < len(closes) and closes[j] <= pos + len(mark):
            j += 1
        next_close[mark] = j
        if j == len(closes):  # nothing closes it, nor any later one
            marks[mark] = ([], closes)
            continue
        close = closes[j]
        runs.append((line[at:pos], ""))
        runs.append((line[pos + len(mark) : close], _INLINE[mark]))
        at = close + len(mark)
    runs.append((line[at:], ""))
    return [run for run in runs if run[0]]


@dataclass(frozen=True)
class Block:
    """Consecutive lines of a section: a bulleted list, or paragraphs."""

    bullets: bool
    lines: tuple[tuple[Stretch, ...], ...]


@dataclass(frozen=True)
class MarkedSection:
    name: str  # "" for a summary without titled sections
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class MarkedSummary:
    sections: list[MarkedSection]
    places: dict[int, str]  # fact number -> the id of the mark that says it


def marked_summary(
    *, structured: Mapping[str, Any], text: str, facts: Sequence[Mapping[str, Any]]
) -> MarkedSummary:
    """The summary (``structured`` sections, else ``text``) with the kept and paraphrased of
    ``facts`` marked where it says them. Each fact carries ``n``, its number on the page."""
    parts = sections.sections(structured, text) or [sections.Section("", [], text)]
    # (section, bullet, runs) for every non-empty line, masked before anything is looked for
    lines: list[tuple[int, bool, list[tuple[str, str]]]] = []
    for s, part in enumerate(parts):
        for body in part.items or [part.text]:
            for raw in fact_places.summary_lines(masking.text_mask(body)):
                runs = inline_runs(fact_places.unbulleted(raw))
                bullet = raw.startswith(fact_places.BULLETS)
                lines.append((s, bullet or bool(part.items), runs))
    wanted = [f for f in facts if f["verdict"] in MARKED]
    found = fact_places.fact_places(
        ["".join(text for text, _ in runs) for _, _, runs in lines],
        [
            fact_places.needles(
                masking.text_mask(str(f["text"])), masking.text_mask(str(f.get("evidence") or ""))
            )
            for f in wanted
        ],
    )
    by_line: dict[int, list[tuple[int, int, int]]] = {}
    verdict_of = {int(f["n"]): str(f["verdict"]) for f in wanted}
    for fact, place in zip(wanted, found, strict=True):
        if place is not None:
            by_line.setdefault(place.line, []).append((place.start, place.end, int(fact["n"])))
    places: dict[int, str] = {}
    cut: list[list[tuple[bool, tuple[Stretch, ...]]]] = [[] for _ in parts]
    for i, (s, bullet, runs) in enumerate(lines):
        line = "".join(text for text, _ in runs)
        segments = fact_places.line_segments(line, by_line.get(i, []))
        pieces: list[Stretch] = []
        for seg_text, said, style, first, last in _cut(segments, runs):
            if not said:
                pieces.append(Stretch(seg_text, style=style))
                continue
            anchor = f"said-{said[0]}"
            places.update(dict.fromkeys(said, anchor))
            label = ", ".join(dict.fromkeys(verdict_of[n] for n in said))
            pieces.append(Stretch(seg_text, anchor if first else "", label, said[0], last, style))
        cut[s].append((bullet, tuple(pieces)))
    out = []
    for part, part_lines in zip(parts, cut, strict=True):
        blocks: list[Block] = []
        for bullet, stretches in part_lines:
            if blocks and blocks[-1].bullets == bullet:
                blocks[-1] = Block(bullet, (*blocks[-1].lines, stretches))
            else:
                blocks.append(Block(bullet, (stretches,)))
        out.append(MarkedSection(part.name, tuple(blocks)))
    return MarkedSummary(out, places)


def _cut(
    segments: Sequence[fact_places.Segment], runs: Sequence[tuple[str, str]]
) -> list[tuple[str, tuple[int, ...], str, bool, bool]]:
    """The line cut where a mark or a style begins or ends: (text, facts, style, first piece
    of its mark, last piece of its mark)."""
    bounds: list[tuple[int, int, tuple[int, ...]]] = []
    at = 0
    for seg in segments:
        bounds.append((at, at + len(seg.text), seg.facts))
        at += len(seg.text)
    styles: list[tuple[int, int, str]] = []
    at = 0
    for text, style in runs:
        styles.append((at, at + len(text), style))
        at += len(text)
    line = "".join(text for text, _ in runs)
    out = []
    i = j = 0
    while i < len(bounds) and j < len(styles):
        (m_start, m_end, facts), (s_start, s_end, style) = bounds[i], styles[j]
        start, end = max(m_start, s_start), min(m_end, s_end)
        if start < end:
            out.append((line[start:end], facts, style, start == m_start, end == m_end))
        if m_end <= s_end:
            i += 1
        else:
            j += 1
    return out
