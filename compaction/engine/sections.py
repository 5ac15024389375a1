"""A summary's titled sections: from a replay's structured summary, or parsed from the text
an observed harness wrote ("Goal: ...", "## Constraints", "1. Primary Request and Intent:").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compaction.engine.summarizers import FIELDS

__all__ = ["SECTION_NAMES", "Section", "sections", "summary_sections"]

# The structured summary's fields, as a person writes them: "current state", "next steps".
SECTION_NAMES: tuple[str, ...] = tuple(name.replace("_", " ") for name in FIELDS)
# "Goal: text", "## Constraints", "**Next steps**:" (a known name, text may follow the colon),
# or a short title alone on its line: "1. Primary Request and Intent:", "## Key files".
_KNOWN_HEADING = re.compile(
    r"^\s*(?:#+\s*|\d+\.\s+)?(?:\*\*)?(" + "|".join(SECTION_NAMES) + r")(?:\*\*)?"
    r"\s*(?::(?:\*\*)?\s*(.*))?$",
    re.IGNORECASE,
)
_TITLE_LINE = re.compile(
    r"^\s*(?:#+\s*|\d+\.\s+)(?:\*\*)?([A-Z][\w'/&(), -]{2,60}?)(?:\*\*)?\s*:?(?:\*\*)?\s*$"
    r"|^\s*(?:\*\*)?([A-Z][\w'/&(), -]{2,60}?)(?:\*\*)?\s*:(?:\*\*)?\s*$"
)


def summary_sections(text: str) -> list[tuple[str, str]]:
    r"""Split a summary into its titled sections; [] when it has fewer than two.

    Text before the first title is kept as an "Overview" section, so nothing is hidden.

    >>> summary_sections("Goal: ship it\nConstraints:\n- no API change")
    [('Goal', 'ship it'), ('Constraints', '- no API change')]
    >>> summary_sections("The agent migrated billing.")
    []
    """
    found: list[tuple[str, list[str]]] = []
    preface: list[str] = []
    for line in text.splitlines():
        known = _KNOWN_HEADING.match(line)
        title = None if known else _TITLE_LINE.match(line)
        if known:
            found.append((known.group(1).capitalize(), [known.group(2)] if known.group(2) else []))
        elif title and (title.group(1) or len(title.group(2).split()) <= 5):
            found.append(((title.group(1) or title.group(2)).strip(), []))
        elif found:
            found[-1][1].append(line)
        else:
            preface.append(line)
    if len(found) < 2:
        return []
    out = [(name, body) for name, lines in found if (body := "\n".join(lines).strip())]
    if "\n".join(preface).strip():
        out.insert(0, ("Overview", "\n".join(preface).strip()))
    return out


@dataclass(frozen=True)
class Section:
    """One titled part of a summary: a list of items, or a text."""

    name: str
    items: list[str]
    text: str


def sections(structured: Mapping[str, Any], text: str) -> list[Section]:
    r"""A summary's sections: the replay's own structure when there is one, else parsed.

    >>> [(s.name, s.items) for s in sections({"goal": "", "next_steps": ["test"]}, "")]
    [('Next steps', ['test'])]
    >>> [s.name for s in sections({}, "Goal: x\nDone: y")]
    ['Goal', 'Done']
    """
    if structured:
        out = []
        for key, value in structured.items():
            if value in (None, "", []):
                continue
            name = key.replace("_", " ").capitalize()
            if isinstance(value, list):
                out.append(Section(name, [str(v) for v in value], ""))
            else:
                out.append(Section(name, [], str(value)))
        return out
    return [Section(name, [], body) for name, body in summary_sections(text)]
