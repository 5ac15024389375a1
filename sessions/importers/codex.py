"""Codex rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) in.

The pure reader is :mod:`compaction.engine.codex`; this module stores what it reads through
the session writer (the one door), so a re-import stores nothing new.

* A file is one session whose external id is its ``session_meta`` id (the file name without
  ``.jsonl`` when it has none).
* A file is read whole before anything is stored: a malformed line stops that file with an
  error naming the line, and nothing of it is stored.
* A rollout imported while Codex writes it (the watcher sends it whole each time it grows)
  ends equal to one import of the finished file: its last response, still waiting for its
  ``token_count``, and a compaction no call has followed yet are provisional and brought up
  to date by the next import (``writer.Provisional``).
* A fork or a spawned agent is a child of its parent. Its file starts with a copy of the
  parent's lines: where ``ordinal`` marks where its own lines start, the copy is left out;
  where nothing marks it, the file is not imported (those calls would count twice) and the
  report names the parent.
* Each ``compacted`` line is a compaction (``summarize`` when Codex wrote the summary itself,
  ``server_compaction`` when the server did and only an encrypted item remains); its trigger
  is inferred (``kept["trigger_inferred"]``), and a compaction that left the context larger
  is marked ``kept["grew"]`` (the ``failed_splice`` rule reads ``tokens_after`` /
  ``tokens_before`` and flags it too).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from compaction.engine import codex
from compaction.engine.analysis import KEPT_USER_MESSAGES
from compaction.engine.tokens import billed_tokens, context_size
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

FORMAT = "codex"
AGENT = "codex"


def expand(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Files to import: a folder is searched for ``*.jsonl`` (and ``.jsonl.gz``) files."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = [*path.rglob("*.jsonl"), *path.rglob("*.jsonl.gz")]
            out.extend(sorted(found))
        else:
            out.append(path)
    return out


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line, streamed (split on ``\\n`` only)."""
    with reading.trace_open(path) as fh:
        for number, raw in enumerate(fh, start=1):
            text = raw.rstrip(b"\n").rstrip(b"\r")
            if not text.strip():
                continue
            try:
                yield number, text.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise codex.CodexError(
                    number, f"not UTF-8 ({exc.reason} at byte {exc.start})"
                ) from None


def _stem(path: Path) -> str:
    name = path.name.removesuffix(".gz")
    return name.removesuffix(".jsonl")


def compaction_wire(event: codex.CodexCompaction) -> dict[str, Any]:
    """The wire compaction of one ``compacted`` line."""
    kept: dict[str, Any] = {
        "source": FORMAT,
        "line": event.line,
        "remote": event.remote,
        "trigger_inferred": event.trigger != "unknown",
        "trigger_basis": event.trigger_basis,
        "tokens_after_source": event.tokens_after_source,
        "replacement_items": event.replacement_items,
    }
    if event.codex_estimate_after is not None:
        kept["codex_estimate_after"] = event.codex_estimate_after
    if event.grew:
        kept["grew"] = True
    if event.kept_user_seqs:
        kept[KEPT_USER_MESSAGES] = list(event.kept_user_seqs)
    call = event.summarizer
    if call is not None:
        kept["compaction_call"] = {
            "usage": dict(call.usage.to_dict()),
            "model": call.model,
            "finished_at": call.finished_at,
            "context_tokens": context_size(call.usage),
            "output_tokens": call.usage.output_tokens,
            "billed_tokens": billed_tokens(call.usage),
        }
    return {
        "seq": event.seq,
        "trigger": event.trigger,
        "strategy": "server_compaction" if event.remote else "summarize",
        "tokens_before": event.tokens_before,
        "tokens_after": event.tokens_after,
        "summary": event.summary,
        "kept": kept,
    }


def session_fields(rollout: codex.CodexRollout, path: Path) -> dict[str, Any]:
    meta = dict(rollout.meta)
    git = meta.pop("git", None)
    metadata: dict[str, Any] = {
        "source": FORMAT,
        "file": path.name,
        **{("codex_source" if k == "source" else k): v for k, v in meta.items()},
        "models": rollout.models,
        "calls": rollout.calls,
        "summarizer_calls": rollout.summarizer_calls,
        "repeated_token_counts": rollout.repeated_counts,
        "synthetic_token_counts": rollout.synthetic_counts,
        "copied_lines": rollout.copied_lines,
    }
    read: dict[str, Any] = {
        "interrupted_responses": rollout.interrupted,
        "unfinished_responses": rollout.unfinished,
        "model_switches": [{"line": n, "model": m} for n, m in rollout.model_switches],
        "rollbacks": [{"line": n, "turns": t} for n, t in rollout.rollbacks],
        "unknown_types": dict(rollout.unknown),
    }
    metadata.update({k: v for k, v in read.items() if v})
    if isinstance(git, dict) and git.get("branch"):
        metadata["git_branch"] = git["branch"]
    if rollout.parent_id:
        metadata["parent_session"] = rollout.parent_id
    fields: dict[str, Any] = {
        "agent": AGENT if rollout.kind == "session" else f"{AGENT}:{rollout.kind}",
        "metadata": {k: v for k, v in metadata.items() if v not in (None, [])},
        "started_at": rollout.started_at,
        "ended_at": rollout.ended_at,
    }
    if rollout.models:
        fields["model"] = rollout.models[0]
    if rollout.context_window:
        fields["context_window"] = rollout.context_window
    return fields


def import_rollout(
    *,
    project: Project,
    path: Path,
    report: ImportReport,
    chunk_messages: int = CHUNK_MESSAGES,
    chunk_bytes: int = CHUNK_BYTES,
) -> FileReport:
    """Read one rollout whole, then store it (or nothing of it, if a line is malformed)."""
    file = report.file(str(path), format=FORMAT)
    try:
        rollout = codex.parse_rollout(_lines(path))
    except FileNotFoundError:
        file.error = "no such file"
        return file
    except (OSError, EOFError, zlib.error) as exc:
        file.error = f"cannot read ({exc})"
        return file
    except codex.CodexError as exc:
        file.error = f"{exc}; nothing of this file was stored"
        return file
    file.records = rollout.lines
    file.kind = rollout.kind
    for kind, count in rollout.ignored.items():
        file.ignored[kind] += count
    file.unknown_types.update(rollout.unknown)
    if rollout.relogged_parent:
        file.note = (
            f"not imported: this {rollout.kind} re-logs the history of session "
            f"{rollout.parent_id}, whose calls would count twice; import the parent's file"
        )
        return file
    if rollout.copied_lines:
        file.note = (
            f"{rollout.copied_lines} lines copied from session {rollout.parent_id} left out "
            "(they are that session's)"
        )
    if not rollout.messages and not rollout.compactions:
        file.note = "no messages"
        return file
    external_id = rollout.session_id or _stem(path)
    parent = rollout.parent_id if rollout.kind != "session" else None
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
        compactions=map(compaction_wire, rollout.compactions),
        messages=rollout.messages,
        session=session_fields(rollout, path),
        parent=parent,
        kind=rollout.kind,
        chunk_messages=chunk_messages,
        chunk_bytes=chunk_bytes,
        # a rollout read while Codex writes it: its last response is brought up to date
        provisional=Provisional(
            FORMAT, rollout.open_messages, rollout.open_compactions, rollout.lines
        ),
    )
    return file


def codex_import(
    *,
    project: Project,
    paths: Sequence[str | os.PathLike[str]],
    report: ImportReport | None = None,
    chunk_messages: int = CHUNK_MESSAGES,
    chunk_bytes: int = CHUNK_BYTES,
) -> ImportReport:
    """Import rollouts (files or folders); each file stands alone."""
    report = report or ImportReport()
    for path in expand(paths):
        import_rollout(
            project=project,
            path=path,
            report=report,
            chunk_messages=chunk_messages,
            chunk_bytes=chunk_bytes,
        )
    return report
