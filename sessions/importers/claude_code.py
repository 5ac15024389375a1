"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``) in.

Built on the engine's streaming parser (``compaction.engine.claude_code`` reads the
records and assembles them): records are read one line at a
time and messages are written as soon as they settle, in chunks, so a file of any size
imports in bounded memory.

* The main file is a session whose external id is its ``sessionId``.
* ``<session>/subagents/agent-<id>.jsonl`` files are child sessions (``parent`` set), with
  external id ``<sessionId>:agent-<id>``; older versions wrote those records inline
  (``isSidechain``) and each such chain becomes a child ``<sessionId>:sidechain-<root uuid>``.
* ``agent-acompact-<id>.jsonl`` is the summarisation call of a compaction, not a session: its
  usage is recorded as the cost of the compaction it produced (``kept["compaction_call"]``),
  matched by the boundary's ``logicalParentUuid``, or by time when the uuids are missing
  (``compaction.engine.summary_call``).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compaction.engine import claude_code as cc
from compaction.engine.messages import message_to_wire, usage_from_wire
from compaction.engine.summary_call import CallRef, match_summary_call, millis_between
from compaction.engine.tokens import billed_tokens, context_size
from sessions import wire
from sessions.errors import BadRequest
from sessions.importers import reading
from sessions.importers.report import FileReport, ImportReport
from sessions.importers.writer import (
    CHUNK_BYTES,
    CHUNK_MESSAGES,
    SessionWriter,
    session_parent_set,
)
from sessions.models import Project

FORMAT = "claude-code"
AGENT = "claude-code"
_SNIFF_BYTES = 64 * 1024
_SNIFF_LINES = 50


# --- reading files -------------------------------------------------------------------------


class CountingLines:
    """Iterate a binary file's lines and count the bytes read (to size chunks)."""

    def __init__(self, fh: Iterable[bytes]) -> None:
        self._fh = fh
        self.bytes = 0

    def __iter__(self) -> Iterator[bytes]:
        for line in self._fh:
            self.bytes += len(line)
            yield line


def _head(path: Path) -> bytes:
    with reading.trace_open(path) as fh:
        return fh.read(_SNIFF_BYTES)


def file_problem(path: Path) -> str | None:
    """Why a file cannot be a transcript at all (empty, binary, broken gzip), or None."""
    try:
        head = _head(path)
    except (OSError, EOFError, zlib.error) as exc:
        return f"cannot read ({exc})"
    if not head.strip():
        return "empty file"
    # A NUL byte inside a JSON line spoils that line, which is skipped; NUL bytes elsewhere
    # (a line that does not even open a JSON object) mean a binary file, not a transcript.
    if any(b"\x00" in line and not line.lstrip().startswith(b"{") for line in head.split(b"\n")):
        return "binary file (contains NUL bytes), not JSON lines"
    text = head.decode("utf-8", errors="replace")
    bad = text.count("\ufffd") - head.decode("utf-8", errors="ignore").count("\ufffd")
    # One bad line is skipped on its own; a file that is mostly not UTF-8 is not a transcript.
    if bad > len(head) // 10:
        return "binary file (mostly not UTF-8), not JSON lines"
    return None


@dataclass(frozen=True)
class FileInfo:
    path: Path
    session_id: str | None
    agent_id: str | None
    sidechain: bool

    @property
    def is_compaction_call(self) -> bool:
        name = self.agent_id or self.path.name.removeprefix("agent-")
        return name.startswith("acompact")

    @property
    def is_subagent(self) -> bool:
        return self.agent_id is not None or self.path.name.startswith("agent-")


def sniff(path: Path) -> FileInfo:
    session_id = agent_id = None
    sidechain = False
    with reading.trace_open(path) as fh:
        lines = []
        for _, line in zip(range(_SNIFF_LINES), fh, strict=False):
            lines.append(line)
        for rec in cc.iter_records(lines):
            if rec.type not in cc.MESSAGE_RECORD_TYPES:
                continue
            session_id = session_id or rec.session_id
            agent_id = agent_id or cc._str(rec.data.get("agentId"))
            sidechain = sidechain or rec.is_sidechain
            if session_id and agent_id:
                break
    return FileInfo(path, session_id, agent_id, sidechain)


_stem = cc.transcript_stem


def expand(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Files to import: folders are searched for transcripts; a transcript brings along the
    ``subagents/`` folder beside it (the engine's grouping, flattened)."""
    return [path for group in cc.transcript_groups(paths) for path in group]


# --- the compaction call (agent-acompact-*) ------------------------------------------------


@dataclass(frozen=True)
class CompactionCall:
    """The summarisation call Claude Code made for one compaction, and what it cost."""

    path: Path
    agent_id: str | None
    prompt_parent_uuid: str | None
    started_at: str | None
    finished_at: str | None
    model: str | None
    usage: dict[str, Any] | None

    @property
    def ref(self) -> CallRef:
        return CallRef(self.path.name, self.prompt_parent_uuid, self.finished_at)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "agent_id": self.agent_id,
            "file": self.path.name,
            "model": self.model,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration_ms": millis_between(self.started_at, self.finished_at),
            "usage": self.usage,
        }
        if self.usage is not None:
            usage = usage_from_wire(self.usage)
            out["context_tokens"] = context_size(usage)
            out["output_tokens"] = usage.output_tokens
            out["billed_tokens"] = billed_tokens(usage)
        return out


def read_compaction_call(path: Path) -> CompactionCall:
    prompt_parent = started = finished = model = None
    agent_id = None
    usage: dict[str, Any] | None = None
    with reading.trace_open(path) as fh:
        for rec in cc.iter_records(fh):
            agent_id = agent_id or cc._str(rec.data.get("agentId"))
            msg = rec.message
            if rec.type == "user" and not rec.is_meta:
                prompt_parent = cc._str(rec.data.get("parentUuid"))
                started = rec.timestamp
            elif rec.type == "assistant" and msg is not None:
                finished = rec.timestamp
                model = cc._str(msg.get("model")) or model
                raw = msg.get("usage")
                if isinstance(raw, dict):
                    usage = {
                        key: raw.get(key, 0)
                        for key in (
                            "input_tokens",
                            "output_tokens",
                            "cache_read_input_tokens",
                            "cache_creation_input_tokens",
                        )
                    }
                    split = raw.get("cache_creation")
                    if isinstance(split, dict):
                        # the split between 5-minute and 1-hour writes, priced apart
                        usage["cache_creation"] = {
                            key: split.get(key, 0)
                            for key in ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")
                        }
    return CompactionCall(path, agent_id, prompt_parent, started, finished, model, usage)


# --- one transcript ------------------------------------------------------------------------


def _call_owners(
    calls_by_session: dict[str | None, list[CompactionCall]], children: Sequence[FileInfo]
) -> dict[Path, Path]:
    """The subagent transcript each summary call summarised, where its prompt follows one of
    that transcript's records. Such a call is that subagent's alone: the main session, imported
    first, never takes it by time, however near its own boundary it finished. A call whose
    prompt follows no record of a subagent stays open to every transcript of its session."""
    owners: dict[Path, Path] = {}
    for info in children:
        wanted = {
            call.prompt_parent_uuid: call.path
            for call in calls_by_session.get(info.session_id, ())
            if call.prompt_parent_uuid is not None and call.path not in owners
        }
        if not wanted:
            continue
        with reading.trace_open(info.path) as fh:
            for rec in cc.iter_records(fh):
                found = wanted.get(rec.uuid) if rec.uuid is not None else None
                if found is not None:
                    owners[found] = info.path
    return owners


def compaction_wire(
    record: cc.CompactionRecord,
    calls: Sequence[CompactionCall],
    claimed: set[str] | None = None,
) -> dict[str, Any]:
    """The wire compaction of one boundary, with the summary call that wrote it (matched by
    uuid, else by time; a call serves one compaction, noted in ``claimed``)."""
    observed = record.observed
    kept: dict[str, Any] = dict(record.details)
    duration = observed.duration_ms
    claimed = set() if claimed is None else claimed
    match = None
    if observed.strategy == "summarize":
        match = match_summary_call(
            logical_parent_uuid=record.logical_parent_uuid,
            timestamp=record.timestamp,
            calls=[c.ref for c in calls],
            claimed=claimed,
        )
    call = next((c for c in calls if match is not None and c.path.name == match.key), None)
    if call is not None and match is not None:
        claimed.add(match.key)
        kept["compaction_call"] = {**call.to_dict(), "matched_by": match.by}
        if duration is None:
            duration = millis_between(call.started_at, record.timestamp)
    wire = observed.to_dict()
    wire.update(summary=observed.summary or "", summary_seq=record.summary_seq, kept=kept)
    wire["duration_ms"] = duration
    return wire


class _Stream:
    """One session being written from one file: its assembler and its writer."""

    def __init__(
        self,
        *,
        project: Project,
        report: ImportReport,
        file: FileReport,
        external_id: str | None,
        parent: str | None,
        kind: str,
        assembler: cc.Assembler,
        calls: Sequence[CompactionCall],
        chunk_messages: int,
        chunk_bytes: int,
        claimed: set[str] | None = None,
    ) -> None:
        self.project = project
        self.report = report
        self.file = file
        self.external_id = external_id
        self.parent = parent
        self.kind = kind
        self.assembler = assembler
        self.calls = calls
        self.chunk_messages = chunk_messages
        self.chunk_bytes = chunk_bytes
        self.writer: SessionWriter | None = None
        self.last_line: int | None = None
        # shared by a session and its subagents: a summary call serves one compaction
        self.claimed_calls: set[str] = claimed if claimed is not None else set()

    def _writer(self) -> SessionWriter:
        if self.writer is None:
            external_id = (
                self.external_id or self.assembler.session_id or _stem(Path(self.file.path))
            )
            self.external_id = external_id
            self.writer = SessionWriter(
                project=self.project,
                external_id=external_id,
                session=self.report.session(external_id, parent=self.parent, kind=self.kind),
                file=self.file,
                chunk_messages=self.chunk_messages,
                chunk_bytes=self.chunk_bytes,
                replace_open_tail=True,  # a live transcript's last response may be unfinished
            )
        return self.writer

    def pump(self, size: int = 0) -> None:
        messages, compactions = self.assembler.drain()
        if not messages and not compactions:
            if self.writer is not None:
                self.writer.add_bytes(size)
            return
        writer = self._writer()
        writer.add_bytes(size)
        for record in compactions:
            writer.add_compaction(compaction_wire(record, self.calls, self.claimed_calls))
        for message in messages:
            writer.add_message(message_to_wire(message), line=self.last_line)

    def session_fields(self) -> dict[str, Any]:
        a = self.assembler
        models = list(a.models)
        metadata: dict[str, Any] = {
            "source": FORMAT,
            "file": Path(self.file.path).name,
            "version": a.version,
            "cwd": a.cwd,
            "git_branch": a.git_branch,
            "models": models,
        }
        if a.title:
            metadata["title"] = a.title
        if a.agent_id:
            metadata["agent_id"] = a.agent_id
        if self.parent:
            metadata["parent_session"] = self.parent
        fields: dict[str, Any] = {
            "agent": AGENT if self.kind == "session" else f"{AGENT}:{self.kind}",
            "metadata": {k: v for k, v in metadata.items() if v not in (None, [])},
            "started_at": a.started_at,
            "ended_at": a.ended_at,
        }
        if models:
            fields["model"] = models[0]
        return fields

    def finish(self) -> None:
        self.assembler.close()
        self.pump()
        if self.writer is None:
            return  # not one message or compaction: no session to create
        writer = self._writer()
        writer.flush(session=self.session_fields())
        if self.parent:
            session_parent_set(
                project=self.project,
                external_id=writer.external_id,
                parent_external_id=self.parent,
            )


def _note_assembler(file: FileReport, assembler: cc.Assembler) -> None:
    for problem in assembler.problems:
        file.skip(problem.line, problem.reason)
    extra = assembler.problem_count - len(assembler.problems)
    file.skipped_count += max(extra, 0)
    file.unknown_types.update(assembler.unknown)
    for kind, count in assembler.skipped.items():
        if kind not in ("duplicate",):
            file.ignored[kind] += count


def import_transcript(
    *,
    project: Project,
    path: Path,
    report: ImportReport,
    info: FileInfo | None = None,
    calls: Sequence[CompactionCall] = (),
    claimed: set[str] | None = None,
    chunk_messages: int = CHUNK_MESSAGES,
    chunk_bytes: int = CHUNK_BYTES,
) -> FileReport:
    """Stream one transcript (main session or subagent file) into the project. ``calls``: the
    summary calls found beside it, ``claimed`` those another transcript of the same session
    already took (a subagent's own compaction call is the subagent's)."""
    file = report.file(str(path), format=FORMAT)
    problem = file_problem(path)
    if problem is not None:
        file.error = problem
        return file
    info = info or sniff(path)
    subagent = info.is_subagent and info.sidechain
    parent = info.session_id if subagent else None
    external_id = None
    if subagent and info.session_id:
        external_id = f"{info.session_id}:agent-{info.agent_id or _stem(path)}"
    try:
        wire.external_id_check(external_id or info.session_id or _stem(path))
    except BadRequest as exc:
        # never cut or repaired: two sessions would merge into one
        file.error = f"{exc.message}; nothing of this file was stored"
        return file
    file.kind = "subagent" if subagent else "session"
    main = _Stream(
        project=project,
        report=report,
        file=file,
        external_id=external_id,
        parent=parent,
        kind="subagent" if subagent else "session",
        assembler=cc.Assembler(include_sidechain=subagent),
        calls=calls,
        claimed=claimed,
        chunk_messages=chunk_messages,
        chunk_bytes=chunk_bytes,
    )
    sidechains: dict[str, _Stream] = {}
    root_of: dict[str, str] = {}
    try:
        with reading.trace_open(path) as fh:
            lines = CountingLines(fh)
            read = 0
            for rec in cc.iter_records(lines, repair=True):
                size, read = lines.bytes - read, lines.bytes
                stream = main
                if (
                    not subagent
                    and rec.is_sidechain
                    and rec.type in cc.MESSAGE_RECORD_TYPES
                    and rec.uuid
                ):
                    stream = _sidechain(rec, main, sidechains, root_of)
                stream.last_line = rec.line
                stream.assembler.feed(rec)
                stream.pump(size)
    except (OSError, EOFError, zlib.error) as exc:
        file.skip(None, f"stopped reading: {exc}")
    file.records = main.assembler.records + sum(s.assembler.records for s in sidechains.values())
    main.finish()
    for stream in sidechains.values():
        stream.parent = main.external_id
        stream.finish()
    _note_assembler(file, main.assembler)
    for stream in sidechains.values():
        _note_assembler(file, stream.assembler)
    return file


def _sidechain(
    rec: cc.Record, main: _Stream, sidechains: dict[str, _Stream], root_of: dict[str, str]
) -> _Stream:
    parent_uuid = cc._str(rec.data.get("parentUuid"))
    root = root_of.get(parent_uuid) if parent_uuid else None
    uuid = rec.uuid or ""
    if root is None:
        root = uuid
    root_of[uuid] = root
    stream = sidechains.get(root)
    if stream is None:
        session_id = rec.session_id or main.assembler.session_id or _stem(Path(main.file.path))
        stream = sidechains[root] = _Stream(
            project=main.project,
            report=main.report,
            file=main.file,
            external_id=f"{session_id}:sidechain-{root}",
            parent=session_id,
            kind="sidechain",
            assembler=cc.Assembler(include_sidechain=True),
            calls=(),
            chunk_messages=main.chunk_messages,
            chunk_bytes=main.chunk_bytes,
        )
    return stream


# --- many files ----------------------------------------------------------------------------


def claude_code_import(
    *,
    project: Project,
    paths: Sequence[str | os.PathLike[str]],
    report: ImportReport | None = None,
    chunk_messages: int = CHUNK_MESSAGES,
    chunk_bytes: int = CHUNK_BYTES,
) -> ImportReport:
    """Import transcripts (files or folders). Main sessions first, so children find their
    parent; each main session gets the compaction calls found beside it."""
    report = report or ImportReport()
    files = expand(paths)
    infos: list[FileInfo] = []
    for path in files:
        if not path.exists():
            report.file(str(path), format=FORMAT).error = "no such file"
            continue
        problem = file_problem(path) or reading.trace_check(path)
        if problem is not None:
            report.file(str(path), format=FORMAT).error = problem
            continue
        infos.append(sniff(path))
    calls_by_session: dict[str | None, list[CompactionCall]] = {}
    for info in infos:
        if info.is_compaction_call:
            calls_by_session.setdefault(info.session_id, []).append(read_compaction_call(info.path))
    mains = [i for i in infos if not (i.is_subagent and i.sidechain)]
    children = [i for i in infos if i.is_subagent and i.sidechain and not i.is_compaction_call]
    owners = _call_owners(calls_by_session, children)

    def calls_of(info: FileInfo) -> list[CompactionCall]:
        return [
            call
            for call in calls_by_session.get(info.session_id, ())
            if owners.get(call.path, info.path) == info.path
        ]

    imported_sessions: set[str | None] = set()
    claimed: dict[str | None, set[str]] = {}
    for info in mains:
        import_transcript(
            project=project,
            path=info.path,
            report=report,
            info=info,
            calls=calls_of(info),
            claimed=claimed.setdefault(info.session_id, set()),
            chunk_messages=chunk_messages,
            chunk_bytes=chunk_bytes,
        )
        imported_sessions.add(info.session_id)
    for info in children:
        # a subagent that compacted made its own summary call: it is the subagent's cost
        import_transcript(
            project=project,
            path=info.path,
            report=report,
            info=info,
            calls=calls_of(info),
            claimed=claimed.setdefault(info.session_id, set()),
            chunk_messages=chunk_messages,
            chunk_bytes=chunk_bytes,
        )
    for session_id, calls in calls_by_session.items():
        for call in calls:
            file = report.file(str(call.path), format=FORMAT)
            file.kind = "compaction call"
            if session_id in imported_sessions:
                file.note = f"the summarisation call of a compaction in session {session_id}"
            else:
                file.note = (
                    f"the summarisation call of a compaction in session {session_id}; import "
                    "that session's transcript with it to record its cost"
                )
    return report
