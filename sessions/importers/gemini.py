"""Gemini CLI chats (``~/.gemini/tmp/<project>/chats/``) in.

The pure reader is :mod:`compaction.engine.gemini`; this module stores what it reads through
the session writer (the one door), so a re-import stores nothing new.

* A file is one session whose external id is its ``sessionId`` (a ``/chat save`` checkpoint,
  which has none, is named by its file: ``checkpoint-<tag>``). The single-JSON file and the
  JSON Lines file Gemini migrates it to are the same session.
* A file is read whole before anything is stored: a malformed line or a message of the wrong
  shape stops that file with an error naming it, and nothing of it is stored.
* A chat imported while Gemini CLI writes it ends equal to one import of the finished file:
  its last response (rewritten in place as tokens and tool results arrive), a compression no
  call has followed yet, and in JSON Lines whatever a later ``$rewindTo``, ``$set`` of the
  history or rewrite of a message changed, are brought up to date (``writer.Provisional``).
* A subagent's chat (``chats/<parent session id>/<id>.jsonl``, ``kind: "subagent"``) is a
  child of the session its folder names.
* Each compression is a compaction (``summarize``) with the figures Gemini reported
  (``kept["tokens_before_source"] == "reported"``), else the sizes of the calls around it; its
  trigger is inferred (``kept["trigger_inferred"]``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from compaction.engine import gemini
from sessions import wire
from sessions.errors import BadRequest
from sessions.importers import reading
from sessions.importers.report import FileReport, ImportReport
from sessions.importers.writer import (
    CHUNK_BYTES,
    CHUNK_MESSAGES,
    Provisional,
    session_write,
)
from sessions.models import Project

FORMAT = "gemini-cli"
AGENT = "gemini-cli"


def _is_chat_name(path: Path) -> bool:
    name = path.name
    if name.startswith(("session-", "checkpoint-")) and name.endswith((".json", ".jsonl")):
        return True
    return name.endswith(".jsonl") and path.parent.parent.name == "chats"


def expand(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Files to import: a folder is searched for Gemini's chat and checkpoint files."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*.json*") if p.is_file() and _is_chat_name(p)))
        else:
            out.append(path)
    return out


def compaction_wire(event: gemini.GeminiCompaction) -> dict[str, Any]:
    """The wire compaction of one compression."""
    kept: dict[str, Any] = {
        "source": FORMAT,
        "trigger_inferred": event.trigger != "unknown",
        "trigger_basis": event.trigger_basis,
        "tokens_before_source": event.tokens_before_source,
        "tokens_after_source": event.tokens_after_source,
    }
    if event.reported_before is not None:
        kept["gemini_original_tokens"] = event.reported_before
    if event.reported_after is not None:
        kept["gemini_new_tokens"] = event.reported_after
    if (
        event.tokens_before is not None
        and event.tokens_after is not None
        and event.tokens_after > event.tokens_before
    ):
        kept["grew"] = True
    return {
        "seq": event.seq,
        "trigger": event.trigger,
        "strategy": "summarize",
        "tokens_before": event.tokens_before,
        "tokens_after": event.tokens_after,
        "summary": event.summary,
        "summary_seq": event.summary_seq,
        "kept": kept,
    }


def session_fields(chat: gemini.GeminiChat, path: Path) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "source": FORMAT,
        "file": path.name,
        "form": chat.form,
        "models": chat.models,
        "calls": chat.calls,
        "tool_calls_by_status": dict(chat.tool_calls),
        "rewound_messages": chat.rewound,
        "interrupted_responses": chat.interrupted,
        "unknown_types": dict(chat.unknown),
        **{k: v for k, v in chat.meta.items() if k in ("projectHash", "summary", "kind")},
    }
    fields: dict[str, Any] = {
        "agent": AGENT if chat.kind == "session" else f"{AGENT}:{chat.kind}",
        "metadata": {k: v for k, v in metadata.items() if v not in (None, [], {})},
        "started_at": chat.started_at,
        "ended_at": chat.ended_at,
    }
    if chat.models:
        fields["model"] = chat.models[0]
    return fields


def _parent(chat: gemini.GeminiChat, path: Path) -> str | None:
    if chat.kind != "subagent":
        return None
    folder = path.parent
    return folder.name if folder.parent.name == "chats" and folder.name != "chats" else None


def import_chat(
    *,
    project: Project,
    path: Path,
    report: ImportReport,
    data: bytes | None = None,
    chunk_messages: int = CHUNK_MESSAGES,
    chunk_bytes: int = CHUNK_BYTES,
) -> FileReport:
    """Read one chat file whole, then store it (or nothing of it, if it is malformed)."""
    file = report.file(str(path), format=FORMAT)
    try:
        chat = gemini.parse_chat_bytes(reading.trace_read(path) if data is None else data)
    except FileNotFoundError:
        file.error = "no such file"
        return file
    except OSError as exc:
        file.error = f"cannot read ({exc})"
        return file
    except gemini.GeminiError as exc:
        file.error = f"{exc}; nothing of this file was stored"
        return file
    file.records = chat.records
    file.kind = chat.form
    for kind, count in chat.ignored.items():
        file.ignored[kind] += count
    file.unknown_types.update(chat.unknown)
    if chat.rewound:
        file.ignored["rewound message"] += chat.rewound
    if not chat.messages and not chat.compactions:
        file.note = "no messages"
        return file
    external_id = chat.session_id or path.name.rsplit(".", 1)[0]
    parent = _parent(chat, path)
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
        compactions=map(compaction_wire, chat.compactions),
        messages=chat.messages,
        session=session_fields(chat, path),
        parent=parent,
        kind=chat.kind,
        chunk_messages=chunk_messages,
        chunk_bytes=chunk_bytes,
        # a chat read while Gemini CLI writes it: its last response is brought up to date
        provisional=Provisional(
            f"{FORMAT}:{chat.form}",
            chat.open_messages,
            chat.open_compactions,
            chat.size,
            tuple(chat.rewrites),
        ),
    )
    return file


def gemini_import(
    *,
    project: Project,
    paths: Sequence[str | os.PathLike[str]],
    report: ImportReport | None = None,
    chunk_messages: int = CHUNK_MESSAGES,
    chunk_bytes: int = CHUNK_BYTES,
) -> ImportReport:
    """Import chat files (files or folders); each file stands alone."""
    report = report or ImportReport()
    for path in expand(paths):
        import_chat(
            project=project,
            path=path,
            report=report,
            chunk_messages=chunk_messages,
            chunk_bytes=chunk_bytes,
        )
    return report
