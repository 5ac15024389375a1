"""Any trace in: each file's (or folder's) format found by its content, then imported.

One entry point for ``manage.py import_traces`` and ``POST /api/v1/imports``: every format the
product reads, old and new versions, told apart by what the file holds, never by its name
alone (a name only says which folder a Cline task is):

==============  ===========================================================================
claude-code     JSON lines whose records carry ``uuid`` / ``leafUuid`` and a Claude Code type
codex           JSON lines of ``{timestamp, type, payload}`` (``session_meta``...), or the old
                bare form whose first line has ``id`` and ``instructions``
gemini-cli      ``{sessionId, projectHash, messages}``; JSON lines starting with
                ``{sessionId, projectHash}``; a checkpoint ``[{role, parts}]``
cline           a task folder, or ``ui_messages.json`` (``[{ts, type: say|ask}]``) /
                ``api_conversation_history.json`` (stands for its folder)
otlp            ``{resourceSpans}``, or span dumps / attribute maps with ``gen_ai.*`` keys
anthropic-log   request/response exchanges, VCR cassettes, SSE streams, a Messages response
trajectory      SWE-agent / mini-swe-agent / OpenHands trajectories and evaluation output
==============  ===========================================================================

A file of no known format is reported, not imported: "skipped: not a format Sawtooth reads
(looked like ...)". Each file is stored whole or not at all, as its own importer does.
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from compaction.engine import cline as cline_engine
from compaction.engine import codex as codex_engine
from compaction.engine import gemini as gemini_engine
from compaction.engine import names, unpack
from sessions.importers import (
    anthropic_logs,
    claude_code,
    cline,
    codex,
    gemini,
    otlp,
    reading,
    trajectories,
)
from sessions.importers.report import ImportReport
from sessions.models import Project

# The first look at a file; a JSON document longer than it is read whole (within
# IMPORT_MAX_RECORD_BYTES) when its first lines say nothing.
SNIFF_BYTES = 4 * 1024 * 1024
SNIFF_LINES = 50
FORMATS = (
    claude_code.FORMAT,
    codex.FORMAT,
    gemini.FORMAT,
    cline.FORMAT,
    otlp.FORMAT,
    anthropic_logs.FORMAT,
    trajectories.FORMAT,
)
_CLAUDE_TYPES = frozenset(
    {"user", "assistant", "summary", "system", "attachment", "progress", "file-history-snapshot"}
)
CLINE_FILES = frozenset({cline.UI_FILE, cline.HISTORY_FILE})


@dataclass(frozen=True)
class Found:
    """What a path holds: a format, or why it is none (``looked_like``)."""

    path: Path
    format: str | None
    looked_like: str = ""
    refused: str = ""  # past a size limit or broken compression: the reason, limit named


def _keys(value: Mapping[str, Any]) -> str:
    names = [str(k)[:30] for k in list(value)[:6]]
    more = ", ..." if len(value) > 6 else ""
    return ", ".join(names) + more if names else "no keys"


def _describe(value: Any) -> str:
    if isinstance(value, Mapping):
        return f"a JSON object with keys {_keys(value)}"
    if isinstance(value, list):
        if not value:
            return "an empty JSON list"
        first = value[0]
        inner = f"objects with keys {_keys(first)}" if isinstance(first, Mapping) else "values"
        return f"a JSON list of {inner}"
    return f"a JSON {type(value).__name__}"


def _head(path: Path) -> bytes:
    with reading.trace_open(path) as fh:
        data: bytes = fh.read(SNIFF_BYTES + 1)
        return data


def _is_gemini_message(m: Any) -> bool:
    return isinstance(m, Mapping) and m.get("type") in (
        "user",
        "gemini",
        "info",
        "error",
        "warning",
    )


def _document(value: Any) -> str | None:
    """The format of a whole JSON document, or None."""
    if isinstance(value, Mapping):
        if "resourceSpans" in value:
            return otlp.FORMAT
        if (
            isinstance(value.get("sessionId"), str)
            and isinstance(value.get("messages"), list)
            and all(_is_gemini_message(m) for m in value["messages"][:20])
        ):
            return gemini.FORMAT
        history = value.get("history")
        if (
            isinstance(history, list)
            and history
            and isinstance(history[0], Mapping)
            and "parts" in history[0]
        ):
            return gemini.FORMAT
        if "interactions" in value or ("request" in value and "response" in value):
            return anthropic_logs.FORMAT
        if value.get("type") == "message" and "content" in value:
            return anthropic_logs.FORMAT
        if "body" in value and ("status" in value or "headers" in value):
            return anthropic_logs.FORMAT
        if "trajectory" in value or ("instance_id" in value and "history" in value):
            return trajectories.FORMAT
        if isinstance(value.get("history"), list):
            return trajectories.FORMAT
        messages = value.get("messages")
        if (
            isinstance(messages, list)
            and messages
            and isinstance(messages[0], Mapping)
            and "role" in messages[0]
        ):
            return trajectories.FORMAT
        if any(str(k).startswith("gen_ai.") for k in value):
            return otlp.FORMAT
        return None
    if isinstance(value, list) and value and all(isinstance(x, Mapping) for x in value[:20]):
        first = value[0]
        if "ts" in first and first.get("type") in ("say", "ask"):
            return cline.FORMAT
        if "parts" in first and first.get("role") in ("user", "model"):
            return gemini.FORMAT
        if "request" in first or "response" in first:
            return anthropic_logs.FORMAT
        if "source" in first and ("action" in first or "observation" in first):
            return trajectories.FORMAT
        if "role" in first:
            return trajectories.FORMAT
        attributes = first.get("attributes")
        if isinstance(attributes, Mapping) and any(
            str(k).startswith("gen_ai.") for k in attributes
        ):
            return otlp.FORMAT
        if any(str(k).startswith("gen_ai.") for k in first):
            return otlp.FORMAT
    return None


def _line_format(records: list[Mapping[str, Any]]) -> str | None:
    """The format of JSON lines, from their first records."""
    first = records[0]
    if gemini_engine.is_chat_start(first):
        return gemini.FORMAT
    if codex_engine.is_bare_rollout_start(first):
        return codex.FORMAT
    for record in records:
        kind = record.get("type")
        if codex_engine.is_rollout_line(record):
            return codex.FORMAT
        if kind in _CLAUDE_TYPES and ("uuid" in record or "leafUuid" in record):
            return claude_code.FORMAT
        if "$rewindTo" in record or "$set" in record:
            return gemini.FORMAT
    if "instance_id" in first and "history" in first:
        return trajectories.FORMAT
    if "source" in first and ("action" in first or "observation" in first):
        return trajectories.FORMAT
    if "request" in first or "response" in first:
        return anthropic_logs.FORMAT
    return None


def sniff(path: Path) -> Found:
    """The format of one file, by its content."""
    if path.name in CLINE_FILES:
        return Found(path.parent, cline.FORMAT)
    try:
        head = _head(path)
    except FileNotFoundError:
        return Found(path, None, "no such file")
    except (unpack.TooLarge, unpack.BadCompression) as exc:
        return Found(path, None, refused=str(exc))
    except (OSError, EOFError, zlib.error) as exc:
        return Found(path, None, f"an unreadable file ({exc})")
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        return Found(path, None, "an empty file")
    if b"\x00" in text[:4096]:
        return Found(path, None, "binary data")
    if text.startswith((b"event:", b"data:")):
        return Found(path, anthropic_logs.FORMAT)
    if path.suffix in (".yaml", ".yml") and b"interactions" in text[:SNIFF_BYTES]:
        return Found(path, anthropic_logs.FORMAT)
    lines = [line for line in text.split(b"\n")[:SNIFF_LINES] if line.strip()]
    records: list[Mapping[str, Any]] = []
    for line in lines:
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            break
        if not isinstance(value, Mapping):
            break
        records.append(value)
    whole: Any = None
    whole_ok = False
    if len(head) <= SNIFF_BYTES:
        with contextlib.suppress(ValueError, RecursionError):
            whole, whole_ok = json.loads(text), True
    if not whole_ok and not records and len(head) > SNIFF_BYTES and text[:1] in (b"{", b"["):
        # A document longer than the first look (a 4.5 MB Gemini chat): read whole, within
        # the record limit every reader of a document keeps to.
        try:
            whole, whole_ok = json.loads(reading.trace_read(path)), True
        except (unpack.TooLarge, unpack.BadCompression) as exc:
            return Found(path, None, refused=str(exc))
        except (OSError, ValueError, RecursionError):
            pass
        if not whole_ok:
            # JSON lines whose first record is longer than the first look: that line, read
            # whole within the record limit, says which format
            with (
                contextlib.suppress(OSError, ValueError, RecursionError),
                reading.trace_open(path) as fh,
            ):
                first = json.loads(fh.readline())
                if isinstance(first, Mapping):
                    records.append(first)
    if whole_ok:
        found = _document(whole)
        if found is None and isinstance(whole, Mapping):
            found = _line_format([whole])
        return Found(path, found, "" if found else _describe(whole))
    if records:
        found = _line_format(records)
        if found is not None:
            return Found(path, found)
        return Found(path, None, f"JSON lines whose first record has keys {_keys(records[0])}")
    if text[:1] in (b"{", b"["):
        return Found(path, None, "JSON that does not parse")
    sample = " ".join(text[:40].decode("utf-8", "replace").split())
    return Found(path, None, f"text starting {sample!r}")


def discover(paths: Sequence[str | os.PathLike[str]]) -> list[Found]:
    """Every file or task folder below the paths, with its format."""
    out: list[Found] = []
    seen: set[Path] = set()

    def add(found: Found) -> None:
        if found.path not in seen:
            seen.add(found.path)
            out.append(found)

    def walk(folder: Path) -> None:
        if any((folder / name).is_file() for name in CLINE_FILES):
            add(Found(folder, cline.FORMAT))
            return
        for child in sorted(folder.iterdir()):
            if child.name.startswith(".") and child.name not in (".gemini", ".codex", ".claude"):
                continue
            if child.is_dir() and not child.is_symlink():
                walk(child)
            elif child.is_file():
                add(sniff(child))

    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            walk(path)
        else:
            add(sniff(path))
    return out


_DOCUMENTS = frozenset({gemini.FORMAT, otlp.FORMAT, anthropic_logs.FORMAT, cline.FORMAT})


def _limits_problem(item: Found) -> str | None:
    """Why a found file is refused before anything of it is stored: read through once, every
    gzip layer counted (a document, read whole, within the record limit)."""
    if item.format is None:
        return None
    document = item.format in _DOCUMENTS
    files = [item.path / name for name in CLINE_FILES] if item.path.is_dir() else [item.path]
    for path in files:
        if path.is_file():
            problem = reading.trace_check(path, document=document)
            if problem is not None:
                return problem
    return None


def _otlp_import(project: Project, path: Path, report: ImportReport) -> None:
    try:
        data = json.loads(reading.trace_read(path))
    except (OSError, ValueError, RecursionError) as exc:
        report.file(str(path), format=otlp.FORMAT).error = f"not readable JSON: {exc}"
        return
    result = otlp.spans_ingest(
        project=project, spans=otlp.spans_from_file_data(data), source=str(path)
    )
    report.files += result.report.files
    for key, value in result.report.sessions.items():
        report.sessions.setdefault(key, value)


def traces_import(
    *,
    project: Project,
    paths: Sequence[str | os.PathLike[str]],
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Find each path's format and import it; a path of no known format is reported.
    ``progress(done, total)`` is told after each file (or each group a reader imports
    together: a Claude Code session with its subagents)."""
    report = ImportReport()
    found = discover(paths)
    done = 0

    def step(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None and n:
            progress(done, len(found))

    by_format: dict[str, list[Path]] = {name: [] for name in FORMATS}
    for item in found:
        if item.refused:
            report.file(
                str(item.path), format="unknown"
            ).error = f"refused: {item.refused}; nothing of this file was stored"
            step(1)
            continue
        refused = _limits_problem(item)
        if refused is not None:
            report.file(str(item.path), format=item.format or "unknown").error = refused
            step(1)
            continue
        if item.format is None:
            report.file(
                str(item.path), format="unknown"
            ).error = f"skipped: not a format Sawtooth reads (looked like {item.looked_like})"
            step(1)
        else:
            by_format[item.format].append(item.path)
    if by_format[claude_code.FORMAT]:
        claude_code.claude_code_import(
            project=project, paths=by_format[claude_code.FORMAT], report=report
        )
        step(len(by_format[claude_code.FORMAT]))
    if by_format[codex.FORMAT]:
        codex.codex_import(project=project, paths=by_format[codex.FORMAT], report=report)
        step(len(by_format[codex.FORMAT]))
    for path in by_format[gemini.FORMAT]:
        try:
            data = reading.trace_read(path)
        except (OSError, EOFError, zlib.error) as exc:
            report.file(str(path), format=gemini.FORMAT).error = f"cannot read ({exc})"
        else:
            gemini.import_chat(project=project, path=path, report=report, data=data)
        step(1)
    for folder in by_format[cline.FORMAT]:
        cline.import_task(project=project, folder=folder, report=report)
        step(1)
    for path in by_format[otlp.FORMAT]:
        _otlp_import(project, path, report)
        step(1)
    if by_format[anthropic_logs.FORMAT]:
        anthropic_logs.anthropic_logs_import(
            project=project, paths=by_format[anthropic_logs.FORMAT], report=report
        )
        step(len(by_format[anthropic_logs.FORMAT]))
    if by_format[trajectories.FORMAT]:
        trajectories.trajectories_import(
            project=project, paths=by_format[trajectories.FORMAT], report=report
        )
        step(len(by_format[trajectories.FORMAT]))
    return report


def _plain(path: Path) -> bytes:
    """A file's bytes, every gzip layer undone within the import limit (Gemini's files are
    plain; an upload may not be); past it, ``unpack.TooLarge`` (an ``OSError``)."""
    return unpack.read_unpacked(path, max_bytes=settings.IMPORT_MAX_BYTES)


def _problem(item: Found) -> str | None:
    """Why a discovered file cannot be read, found by its pure reader without storing
    anything; None when it reads (or when only its import can tell)."""
    path = item.path
    if item.format is None:
        return f"not a format Sawtooth reads (looked like {item.looked_like})"
    try:
        session_id: str | None = None
        if item.format == codex.FORMAT:
            session_id = codex_engine.parse_rollout_bytes(_plain(path)).session_id
        elif item.format == gemini.FORMAT:
            session_id = gemini_engine.parse_chat_bytes(_plain(path)).session_id
        elif item.format == cline.FORMAT:
            ui = path / cline.UI_FILE
            if not ui.is_file():
                return f"no {cline.UI_FILE} in this folder: Cline's calls and costs are there"
            history = path / cline.HISTORY_FILE
            cline_engine.parse_task_bytes(
                ui.read_bytes(), history.read_bytes() if history.is_file() else None
            )
        elif item.format == claude_code.FORMAT:
            return claude_code.file_problem(path)
        elif item.format == otlp.FORMAT:
            json.loads(_plain(path))
        elif item.format == anthropic_logs.FORMAT:
            list(anthropic_logs.exchanges(anthropic_logs.load(path)))
    except (codex_engine.CodexError, gemini_engine.GeminiError, cline_engine.ClineError) as exc:
        return str(exc)
    except (OSError, EOFError, zlib.error) as exc:
        return f"cannot read ({exc})"
    except (ValueError, RecursionError, anthropic_logs.LogError) as exc:
        return f"not readable ({type(exc).__name__}: {str(exc)[:200]})"
    except Exception as exc:  # a YAML log's parser errors
        return f"not readable ({type(exc).__name__}: {str(exc)[:200]})"
    # the id each importer checks, checked here too, so the upload is refused at once
    bad_id = names.path_segment_problem(session_id) if session_id else None
    if bad_id is not None:
        return f"session id: {bad_id}; nothing of this file was stored"
    return None


def traces_check(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[str, str]]:
    """(path, why) of each file or task folder below ``paths`` that cannot be read: the check
    an upload passes before anything of it is stored."""
    return [(str(item.path), why) for item in discover(paths) if (why := _problem(item))]
