"""A compaction's summary as the span page shows it: its sections and lines, each line cut
into plain stretches and marks where it says a fact the verdicts found kept or paraphrased.

Every stretch is masked trace text that the template escapes like any other value: nothing
here builds markup, so a summary holding ``<script>`` reads as those characters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compaction.engine import fact_places, sections
from privacy import masking

# Which verdicts have a place in the summary: a lost fact has none, and mentioned or reloaded
# ones are not facts the summary was meant to keep.
MARKED = ("kept", "paraphrased")


@dataclass(frozen=True)
class Stretch:
    """Plain text (``anchor`` empty), or a mark: its id on the page, the verdicts of the
    facts it says (``label``, as text), and the number of the first of them in the list."""

    text: str
    anchor: str = ""
    label: str = ""
    fact: int = 0


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
    # (section, bullet, line) for every non-empty line, masked before anything is looked for
    lines: list[tuple[int, bool, str]] = []
    for s, part in enumerate(parts):
        for body in part.items or [part.text]:
            for raw in fact_places.summary_lines(masking.text_mask(body)):
                line = fact_places.unbulleted(raw)
                bullet = raw.startswith(fact_places.BULLETS)
                lines.append((s, bullet or bool(part.items), line))
    wanted = [f for f in facts if f["verdict"] in MARKED]
    found = fact_places.fact_places(
        [line for _, _, line in lines],
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
    for i, (s, bullet, line) in enumerate(lines):
        stretches = []
        for seg in fact_places.line_segments(line, by_line.get(i, [])):
            if not seg.facts:
                stretches.append(Stretch(seg.text))
                continue
            anchor = f"said-{seg.facts[0]}"
            places.update(dict.fromkeys(seg.facts, anchor))
            label = ", ".join(dict.fromkeys(verdict_of[n] for n in seg.facts))
            stretches.append(Stretch(seg.text, anchor, label, seg.facts[0]))
        cut[s].append((bullet, tuple(stretches)))
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
