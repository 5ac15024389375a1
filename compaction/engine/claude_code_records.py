"""Reading Claude Code transcripts (``~/.claude/projects/*.jsonl``): files, lines, records.

* :func:`transcript_groups` finds the transcripts under a folder, each main file followed by
  the ``<stem>/subagents/`` files beside it; :func:`open_transcript` opens one, gzip or plain
  by magic bytes.
* :func:`iter_records` streams one :class:`Record` per line. A line that is not a JSON object
  becomes an ``invalid`` record saying why, so a bad line spoils itself, not the file.

What the records mean (messages, compactions) is :mod:`compaction.engine.claude_code`'s part.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

from compaction.engine import unpack


@dataclass(frozen=True)
class Record:
    """One line of a transcript. ``type`` is ``invalid`` for a line that is not a JSON object."""

    line: int
    type: str
    data: Mapping[str, Any]
    repaired: int = 0

    @property
    def subtype(self) -> str | None:
        value = self.data.get("subtype")
        return value if isinstance(value, str) else None

    @property
    def uuid(self) -> str | None:
        value = self.data.get("uuid")
        return value if isinstance(value, str) else None

    @property
    def session_id(self) -> str | None:
        value = self.data.get("sessionId")
        return value if isinstance(value, str) else None

    @property
    def timestamp(self) -> str | None:
        value = self.data.get("timestamp")
        return value if isinstance(value, str) else None

    @property
    def is_sidechain(self) -> bool:
        return self.data.get("isSidechain") is True

    @property
    def is_meta(self) -> bool:
        return self.data.get("isMeta") is True

    @property
    def is_compact_summary(self) -> bool:
        return self.data.get("isCompactSummary") is True

    @property
    def message(self) -> Mapping[str, Any] | None:
        value = self.data.get("message")
        return value if isinstance(value, Mapping) else None


def open_transcript(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = unpack.DEFAULT_MAX_BYTES,
    max_line: int = unpack.DEFAULT_MAX_LINE,
) -> BinaryIO:
    """Open a transcript for reading bytes as a stream, undoing gzip (every layer) when the
    file starts with its magic; past either limit reading raises ``unpack.TooLarge``."""
    return unpack.open_unpacked(path, max_bytes=max_bytes, max_line=max_line)


TRANSCRIPT_SUFFIXES = (".jsonl.gz", ".jsonl")


def transcript_stem(path: str | os.PathLike[str]) -> str:
    """A transcript's name without its suffixes: its session id, by Claude Code's naming.

    >>> transcript_stem("projects/x/0b1c.jsonl.gz"), transcript_stem("agent-7.jsonl")
    ('0b1c', 'agent-7')
    """
    path = Path(path)
    for suffix in (*TRANSCRIPT_SUFFIXES, ".gz"):
        if path.name.endswith(suffix):
            return path.name[: -len(suffix)]
    return path.stem


def transcript_groups(paths: Iterable[str | os.PathLike[str]]) -> list[list[Path]]:
    """One group per main transcript: the file, then the ``<stem>/subagents/`` files beside it.

    A folder is searched for transcripts (``.jsonl``, ``.jsonl.gz``); a file is never listed
    twice, so a subagent found on its own joins the group of its main file when that comes
    first.
    """
    candidates: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = [
                p for p in path.rglob("*") if p.is_file() and p.name.endswith(TRANSCRIPT_SUFFIXES)
            ]
            # Main files first: "s1/subagents/a.jsonl" sorts before "s1.jsonl" as a path.
            candidates += sorted(found, key=lambda p: ("subagents" in p.parent.parts, p))
        else:
            candidates.append(path)
    out: list[list[Path]] = []
    seen: set[Path] = set()
    for path in candidates:
        if path in seen:
            continue
        group = [path]
        seen.add(path)
        subagents = path.parent / transcript_stem(path) / "subagents"
        if subagents.is_dir():
            for child in sorted(subagents.iterdir()):
                if child.name.endswith(TRANSCRIPT_SUFFIXES) and child not in seen:
                    group.append(child)
                    seen.add(child)
        out.append(group)
    return out


def _is_blank(line: str | bytes) -> bool:
    return not line.strip()


_SUSPECT_ESCAPES = re.compile(rb"\\u0000|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


_ID_KEYS = ("sessionId", "agentId")


def _repair(value: Any) -> tuple[Any, int]:
    """Replace NUL characters and lone UTF-16 surrogates with U+FFFD; return (value, count)."""
    if isinstance(value, str):
        count = value.count("\x00")
        text = value.replace("\x00", "\ufffd") if count else value
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            fixed = []
            for ch in text:
                if "\ud800" <= ch <= "\udfff":
                    fixed.append("\ufffd")
                    count += 1
                else:
                    fixed.append(ch)
            text = "".join(fixed)
        return text, count
    if isinstance(value, list):
        total = 0
        out_list = []
        for item in value:
            fixed_item, n = _repair(item)
            out_list.append(fixed_item)
            total += n
        return out_list, total
    if isinstance(value, dict):
        total = 0
        out_dict = {}
        for key, item in value.items():
            fixed_key, n_key = _repair(key)
            fixed_item, n_item = _repair(item)
            out_dict[fixed_key] = fixed_item
            total += n_key + n_item
        return out_dict, total
    return value, 0


class _NonFinite(ValueError):
    pass


def _refuse_constant(constant: str) -> Any:
    raise _NonFinite(constant)


def _non_finite(value: Any) -> bool:
    """True when a parsed JSON value holds NaN or an infinity (1e999 parses as inf).

    >>> _non_finite({"a": [1.5, 1e999]}), _non_finite({"a": "NaN"})
    (True, False)
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _parse_line(n: int, line: str | bytes, *, last: bool, repair: bool) -> Record | None:
    if _is_blank(line):
        return None
    ends_with_newline = line.endswith(b"\n") if isinstance(line, bytes) else line.endswith("\n")
    try:
        data = json.loads(line, parse_constant=_refuse_constant)
    except _NonFinite as exc:
        return Record(
            n,
            "invalid",
            {"error": f"line {n}: {exc} is not a number JSON allows", "reason": "json"},
        )
    except UnicodeDecodeError as exc:
        return Record(
            n,
            "invalid",
            {"error": f"line {n}: not UTF-8 text (byte {exc.start})", "reason": "utf8"},
        )
    except json.JSONDecodeError as exc:
        if last and not ends_with_newline:
            return Record(
                n,
                "invalid",
                {"error": f"line {n}: truncated last line ({exc.msg})", "reason": "truncated"},
            )
        return Record(n, "invalid", {"error": f"line {n}: not JSON ({exc.msg})", "reason": "json"})
    except RecursionError:
        return Record(n, "invalid", {"error": f"line {n}: nested too deeply", "reason": "json"})
    if not isinstance(data, dict):
        return Record(n, "invalid", {"error": f"line {n}: not a JSON object", "reason": "json"})
    if _non_finite(data):
        return Record(
            n, "invalid", {"error": f"line {n}: a number beyond what JSON allows", "reason": "json"}
        )
    repaired = 0
    if repair:
        raw = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
        if _SUSPECT_ESCAPES.search(raw):
            # Ids are never repaired: two sessions would merge into one; the importer refuses
            # an id storage cannot hold, naming it.
            ids = {k: data[k] for k in _ID_KEYS if k in data}
            fixed, repaired = _repair({k: v for k, v in data.items() if k not in _ID_KEYS})
            data = {**fixed, **ids}
    kind = data.get("type")
    return Record(n, kind if isinstance(kind, str) else "unknown", data, repaired)


def iter_records(
    source: str | os.PathLike[str] | Iterable[str] | Iterable[bytes], *, repair: bool = False
) -> Iterator[Record]:
    """Stream the records of a transcript file (plain or gzipped) or of an iterable of lines.

    Blank lines are skipped; a line that is not a JSON object yields ``type="invalid"`` with
    ``data["error"]`` saying why and ``data["reason"]`` one of ``json``, ``truncated`` (the
    last line, cut off before its newline) or ``utf8``. Files are read as bytes, one line at a
    time, so a bad byte spoils one line, not the file. With ``repair=True``, NUL characters
    and lone surrogates (which PostgreSQL cannot store) become U+FFFD and ``Record.repaired``
    counts them.

    >>> [r.type for r in iter_records(['{"type": "user"}', "", "not json"])]
    ['user', 'invalid']
    """
    if isinstance(source, str | os.PathLike):
        with open_transcript(source) as fh:
            yield from iter_records(fh, repair=repair)
        return
    previous: tuple[int, str | bytes] | None = None
    for n, line in enumerate(source, start=1):
        if previous is not None:
            record = _parse_line(*previous, last=False, repair=repair)
            if record is not None:
                yield record
        previous = (n, cast(str | bytes, line))
    if previous is not None:
        record = _parse_line(*previous, last=True, repair=repair)
        if record is not None:
            yield record
