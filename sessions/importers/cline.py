"""Cline tasks (``.../saoudrizwan.claude-dev/tasks/<task id>/``) in.

The pure reader is :mod:`compaction.engine.cline`; this module stores what it reads through
the session writer (the one door), so a re-import stores nothing new.

* A task folder (``ui_messages.json``, with ``api_conversation_history.json`` beside it when
  Cline wrote one) is one session whose external id is the folder's name (the task id).
* Both files are read whole before anything is stored: a file that is not JSON, or an entry of
  the wrong shape, stops that task with an error naming it, and nothing of it is stored.
* Each call is priced from the product's table like every call; what Cline itself reported
  (the sum of its ``cost``) is the session's ``metadata["reported_usd"]``.
* Each change of ``conversationHistoryDeletedRange`` is a compaction (``truncate``) of the
  history range it newly dropped (``kept["dropped_range"]``), trigger ``auto`` inferred.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compaction.engine import cline
from sessions import wire
from sessions.errors import BadRequest
from sessions.importers import reading
from sessions.importers.report import FileReport, ImportReport
from sessions.importers.writer import CHUNK_BYTES, CHUNK_MESSAGES, session_write
from sessions.models import Project

FORMAT = "cline"
AGENT = "cline"
UI_FILE = "ui_messages.json"
HISTORY_FILE = "api_conversation_history.json"
METADATA_FILE = "task_metadata.json"


def expand(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Task folders to import: a folder holding ``ui_messages.json``, or any folder below one
    given; a path to either of the two files stands for its folder."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                {p.parent for p in path.rglob(UI_FILE)}
                | {p.parent for p in path.rglob(HISTORY_FILE)}
            )
            out.extend(found or [path])
        elif path.name in (UI_FILE, HISTORY_FILE):
            out.append(path.parent)
        else:
            out.append(path)
    return list(dict.fromkeys(out))


def _task_model(folder: Path) -> str | None:
    """The model ``task_metadata.json`` names last, for tasks whose UI messages name none."""
    try:
        raw = json.loads(reading.trace_read(folder / METADATA_FILE))
    except (OSError, ValueError, RecursionError):
        return None
    usage = raw.get("model_usage") if isinstance(raw, dict) else None
    for entry in reversed(usage if isinstance(usage, list) else []):
        if isinstance(entry, dict) and isinstance(entry.get("model_id"), str):
            return str(entry["model_id"])
    return None


def compaction_wire(event: cline.ClineTruncation) -> dict[str, Any]:
    kept: dict[str, Any] = {
        "source": FORMAT,
        "ui_index": event.ui_index,
        "trigger_inferred": True,
        "trigger_basis": (
            "inferred: Cline truncates the history by itself when the context nears the "
            "window (ContextManager); the files do not say so"
        ),
        "range_before": list(event.range_before) if event.range_before else None,
        "range_after": list(event.range_after),
        "dropped_range": list(event.dropped) if event.dropped else None,
        "tokens_before_source": "last_call" if event.tokens_before is not None else None,
        "tokens_after_source": "next_call" if event.tokens_after is not None else None,
    }
    if event.dropped:
        kept["dropped_messages"] = event.dropped[1] - event.dropped[0] + 1
    return {
        "seq": event.seq,
        "trigger": "auto",
        "strategy": "truncate",
        "tokens_before": event.tokens_before,
        "tokens_after": event.tokens_after,
        "summary": "",
        "kept": kept,
    }


def session_fields(task: cline.ClineTask, folder: Path) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "source": FORMAT,
        "task_folder": folder.name,
        "models": task.models,
        "calls": task.calls,
        "calls_without_response": task.unmatched_calls,
        "reported_usd": task.reported_usd,
    }
    if task.unknown:
        metadata["unknown_types"] = dict(task.unknown)
    fields: dict[str, Any] = {
        "agent": AGENT,
        "metadata": {k: v for k, v in metadata.items() if v not in (None, [])},
        "started_at": task.started_at,
        "ended_at": task.ended_at,
    }
    if task.models:
        fields["model"] = task.models[0]
    return fields


def import_task(
    *,
    project: Project,
    folder: Path,
    report: ImportReport,
    chunk_messages: int = CHUNK_MESSAGES,
    chunk_bytes: int = CHUNK_BYTES,
) -> FileReport:
    """Read one task folder whole, then store it (or nothing of it, if a file is malformed)."""
    file = report.file(str(folder), format=FORMAT)
    if not folder.is_dir():
        file.error = (
            "no such folder"
            if not folder.exists()
            else f"not a task folder (give the folder holding {UI_FILE})"
        )
        return file
    try:
        ui = reading.trace_read(folder / UI_FILE)
    except FileNotFoundError:
        file.error = f"no {UI_FILE} in this folder: Cline's calls and costs are there"
        return file
    except OSError as exc:
        file.error = f"cannot read {UI_FILE} ({exc})"
        return file
    try:
        history: bytes | None = reading.trace_read(folder / HISTORY_FILE)
    except FileNotFoundError:
        history = None
        file.note = f"no {HISTORY_FILE}: messages rebuilt from {UI_FILE}"
    except OSError as exc:
        file.error = f"cannot read {HISTORY_FILE} ({exc})"
        return file
    try:
        task = cline.parse_task_bytes(ui, history, model=_task_model(folder))
    except cline.ClineError as exc:
        file.error = f"{exc}; nothing of this task was stored"
        return file
    file.records = task.ui_records + task.history_records
    file.kind = "task"
    for kind, count in task.ignored.items():
        file.ignored[kind] += count
    file.unknown_types.update(task.unknown)
    if task.unmatched_calls:
        file.ignored["call with no response in the history"] += task.unmatched_calls
    if not task.messages:
        file.note = "no messages"
        return file
    external_id = folder.name
    try:
        wire.external_id_check(external_id, where="session id")
    except BadRequest as exc:
        # never cut or repaired: two sessions would merge into one
        file.error = f"{exc.message}; nothing of this file was stored"
        return file
    session_write(
        project=project,
        report=report,
        file=file,
        external_id=external_id,
        compactions=map(compaction_wire, task.truncations),
        messages=task.messages,
        session=session_fields(task, folder),
        chunk_messages=chunk_messages,
        chunk_bytes=chunk_bytes,
    )
    return file


def cline_import(
    *,
    project: Project,
    paths: Sequence[str | os.PathLike[str]],
    report: ImportReport | None = None,
    chunk_messages: int = CHUNK_MESSAGES,
    chunk_bytes: int = CHUNK_BYTES,
) -> ImportReport:
    """Import task folders; each task stands alone."""
    report = report or ImportReport()
    for folder in expand(paths):
        import_task(
            project=project,
            folder=folder,
            report=report,
            chunk_messages=chunk_messages,
            chunk_bytes=chunk_bytes,
        )
    return report
