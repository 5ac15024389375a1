"""Chunked writes through the one door, ``services.events_ingest``.

A writer collects one session's wire messages and compactions and stores them in chunks:
each chunk is atomic, so an import that stops halfway keeps whole chunks, and re-running it
stores only what is missing. Seqs come from the source file, so a re-import produces the
same messages and they count as duplicates.

A stored message that differs from the file is kept and reported, with one exception: the
*open tail* of a transcript that was still being written when it was last imported. Claude
Code writes one response over several lines, so a file read mid-response stores that response
with only its first blocks (and the tool results written so far). With ``replace_open_tail``
the stored messages from the last stored response on, and the compactions whose figures came
from it, are replaced by the file's complete version: importing a live transcript twice
equals one import of the whole file.

The formats read whole (Codex rollouts, Gemini CLI chats) say themselves where what more writes
could change begins (:class:`Provisional`: the last response, still waiting for its usage or
its tool results; the compaction no call has followed yet). An import keeps that mark in the
session's ``import_state``; the next import of the same format, from a file at least as large,
compares the rows from the mark on in full (content, usage, timestamp, model), replaces those
the file now holds differently and deletes those it no longer holds (a call Codex had not yet
shown to be a compaction's summarizer). So a file imported while it grows, any number of
times, equals one import of the finished file; rows before the mark are never rewritten.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from django.db.models import Max
from pydantic import ValidationError

from compaction.engine.messages import Message as EngineMessage
from compaction.engine.messages import message_to_wire
from compaction.engine.names import trigger_name
from sessions import services, wire
from sessions.importers.report import FileReport, ImportReport, SessionReport
from sessions.models import AgentSession, Message, MessageRole, Project
from sessions.schemas import CompactionIn, EventBatch, MessageIn, SessionIn

CHUNK_MESSAGES = 1000
CHUNK_BYTES = 8 * 1024 * 1024
PROVISIONAL_KEY = "provisional"  # in AgentSession.import_state


@dataclass(frozen=True)
class Provisional:
    """Where a whole-file reader's provisional rows begin: the first message seq, the first
    compaction seq (None: every compaction is final), and the file's size in the reader's own
    unit (lines, records), which only grows while the file does."""

    format: str
    messages: int
    compactions: int | None
    size: int
    # (size, first message seq): a part of the file, once it was that large, changed rows
    # from that seq on (Gemini's JSON Lines rewinds and rewrites)
    rewrites: tuple[tuple[int, int], ...] = ()

    def dump(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "messages": self.messages,
            "compactions": self.compactions,
            "size": self.size,
        }


def _provisional_before(import_state: Any, provisional: Provisional) -> tuple[int, int] | None:
    """(message seq, compaction seq) from which the stored rows were provisional at the last
    import of this format, if this file is that one grown (at least as large)."""
    stored = import_state.get(PROVISIONAL_KEY) if isinstance(import_state, dict) else None
    if not isinstance(stored, dict) or stored.get("format") != provisional.format:
        return None
    messages, compactions, size = (stored.get(k) for k in ("messages", "compactions", "size"))
    if not isinstance(messages, int) or not isinstance(size, int) or provisional.size < size:
        return None
    events = compactions if isinstance(compactions, int) else 2**31
    for at, seq in provisional.rewrites:
        if at > size:  # written after the last import read the file
            messages, events = min(messages, seq), min(events, seq)
    return messages, events


# A message keeps its content when one of these cannot be stored: the field is dropped, reported.
_DROPPABLE = ("usage", "timestamp", "model")


def _safe_message(wire: dict[str, Any], file: FileReport, line: int | None) -> MessageIn:
    """Validate one message; a block the wire format refuses is kept, wrapped, not lost, and a
    usage or timestamp storage cannot hold is dropped, not the message."""
    try:
        return MessageIn.model_validate(wire)
    except ValidationError as exc:
        first = exc.errors()[0]
    loc = first.get("loc", ())
    if loc and loc[0] in _DROPPABLE and wire.get(str(loc[0])) is not None:
        field = ".".join(str(part) for part in loc)
        file.skip(line, f"seq {wire.get('seq')}: {field} dropped ({first.get('msg')})")
        return _safe_message({**wire, str(loc[0]): None}, file, line)
    reason = first.get("msg", "invalid")
    content = wire.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": str(content)}]
    fixed = []
    for block in blocks:
        try:
            MessageIn.model_validate({"seq": 0, "role": "user", "content": [block]})
            fixed.append(block)
        except ValidationError:
            fixed.append({"type": "invalid_block", "original": block})
    file.skip(line, f"seq {wire.get('seq')}: a content block was kept as invalid_block ({reason})")
    if fixed == content:  # the content was not the problem: nothing more to drop
        return MessageIn.model_validate(wire)
    return _safe_message({**wire, "content": fixed}, file, line)


def _safe_session(fields: dict[str, Any], file: FileReport) -> SessionIn:
    """The session fields, less any the wire format refuses (a malformed start time...)."""
    fields = dict(fields)
    while True:
        try:
            return SessionIn.model_validate(fields)
        except ValidationError as exc:
            first = exc.errors()[0]
            name = str(first.get("loc", ("",))[0])
            if name not in fields:
                raise
            file.skip(None, f"session.{name} dropped ({first.get('msg')})")
            del fields[name]


def _adds_summary_call(event: CompactionIn, stored_digest: str) -> bool:
    """The stored compaction is this one without its summary call (the ``agent-acompact-*``
    file was not imported with the transcript last time): recording the call is no rewrite."""
    if not event.kept or "compaction_call" not in event.kept:
        return False
    without = {k: v for k, v in event.kept.items() if k != "compaction_call"}
    bare = event.model_copy(update={"kept": without})
    # without the call, the duration may have been unknown (the call's start gives it)
    untimed = bare.model_copy(update={"duration_ms": None})
    return stored_digest in (
        services.compaction_hash(bare),
        services.compaction_hash(untimed),
    )


def session_parent_set(*, project: Project, external_id: str, parent_external_id: str) -> None:
    """Link a child session (a subagent) to its parent, creating the parent if needed."""
    parent, _ = AgentSession.objects.get_or_create(project=project, external_id=parent_external_id)
    AgentSession.objects.filter(project=project, external_id=external_id).exclude(
        parent=parent
    ).update(parent=parent)


def session_write(
    *,
    project: Project,
    report: ImportReport,
    file: FileReport,
    external_id: str,
    compactions: Iterable[dict[str, Any]],
    messages: Iterable[EngineMessage],
    session: dict[str, Any],
    parent: str | None = None,
    kind: str = "session",
    chunk_messages: int,
    chunk_bytes: int,
    provisional: Provisional | None = None,
) -> None:
    """One session a reader parsed whole (Codex, Gemini CLI, Cline), through the writer: its
    compactions (wire dicts), its messages, its fields, then the link to its parent. With
    ``provisional`` (the reader's mark), rows the last import marked provisional are brought
    up to date, and the new mark is kept for the next import."""
    import_state: dict[str, Any] | None = None
    replaceable = None
    if provisional is not None:
        existing = (
            AgentSession.objects.filter(project=project, external_id=external_id)
            .values_list("import_state", flat=True)
            .first()
        )
        import_state = dict(existing) if isinstance(existing, dict) else {}
        replaceable = _provisional_before(import_state, provisional)
        prior = import_state.get(PROVISIONAL_KEY)
        if replaceable is not None or not (
            isinstance(prior, dict) and prior.get("format") == provisional.format
        ):
            # an older, shorter copy of the file keeps the mark of the larger one
            import_state[PROVISIONAL_KEY] = provisional.dump()
    writer = SessionWriter(
        project=project,
        external_id=external_id,
        session=report.session(external_id, parent=parent, kind=kind),
        file=file,
        chunk_messages=chunk_messages,
        chunk_bytes=chunk_bytes,
        provisional_from=replaceable,
    )
    for event in compactions:
        writer.add_compaction(event)
    for message in messages:
        writer.add_message(message_to_wire(message))
    writer.flush(session=session, import_state=import_state)
    if parent:
        session_parent_set(project=project, external_id=external_id, parent_external_id=parent)


def _stored_form(m: MessageIn) -> tuple[Any, ...]:
    """What a Message row stores of ``m`` (after its seq), as ``values_list`` reads it."""
    usage, moment = m.usage, m.timestamp
    if moment is not None and moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (
        services.message_digest(m),
        usage.input_tokens if usage else None,
        usage.output_tokens if usage else None,
        usage.cache_read_input_tokens if usage else None,
        usage.cache_creation_input_tokens if usage else None,
        moment,
        m.model or "",
    )


class SessionWriter:
    """Buffer one session's events and flush them as EventBatch chunks."""

    def __init__(
        self,
        *,
        project: Project,
        external_id: str,
        session: SessionReport,
        file: FileReport,
        chunk_messages: int = CHUNK_MESSAGES,
        chunk_bytes: int = CHUNK_BYTES,
        replace_open_tail: bool = False,
        provisional_from: tuple[int, int] | None = None,
    ) -> None:
        self.project = project
        # Refused before any query reads it (a lone surrogate cannot even be sent to the
        # database): a 400 naming the id, never an id cut or repaired into another session's.
        self.external_id = wire.external_id_check(external_id)
        self.report = session
        self.file = file
        self.chunk_messages = chunk_messages
        self.chunk_bytes = chunk_bytes
        self._messages: list[MessageIn] = []
        self._compactions: list[CompactionIn] = []
        self._bytes = 0
        self._stored_max: int | None = -2  # -2: not looked up yet
        self.replace_open_tail = replace_open_tail
        self._open_tail: tuple[int, int] | None = None  # looked up before the first write
        self._replacing_seqs: set[int] = set()
        self._replacing_events: set[tuple[int, str]] = set()
        # (message seq, compaction seq) from which stored rows were provisional: brought up
        # to date with the file, and deleted at the last flush if the file no longer has them
        self.provisional_from = provisional_from
        self._seen_top = -1  # the largest message seq of the file so far
        self._seen_events: set[tuple[int, str]] = set()
        if external_id not in file.sessions:
            file.sessions.append(external_id)

    def add_message(
        self,
        wire: dict[str, Any],
        *,
        size: int = 0,
        line: int | None = None,
        canonical: tuple[str, str] | None = None,
    ) -> None:
        """Buffer one wire message. ``canonical``: its canonical JSON and content hash, when
        the reader made them already; kept for ingest unless validation changed the content
        (a block kept as ``invalid_block``)."""
        message = _safe_message(wire, self.file, line)
        if canonical is not None and message.content == wire.get("content"):
            message.canonical_keep(canonical)
        self._messages.append(message)
        self._bytes += size
        if len(self._messages) >= self.chunk_messages or self._bytes >= self.chunk_bytes:
            self.flush()

    def add_compaction(self, wire: dict[str, Any]) -> None:
        wire = {**wire, "trigger": trigger_name(wire.get("trigger"))}
        try:
            self._compactions.append(CompactionIn.model_validate(wire))
        except ValidationError as exc:
            self.file.skip(None, f"compaction at seq {wire.get('seq')}: {exc.errors()[0]['msg']}")

    def add_bytes(self, size: int) -> None:
        self._bytes += size

    @property
    def pending(self) -> bool:
        return bool(self._messages or self._compactions)

    def _stored_maximum(self) -> int | None:
        if self._stored_max == -2:
            self._stored_max = Message.objects.filter(
                session__project=self.project, session__external_id=self.external_id
            ).aggregate(top=Max("seq"))["top"]
        return self._stored_max

    def _stored_open_tail(self) -> tuple[int, int]:
        """(first message seq, first compaction seq) of what the last import could not know
        was complete: from the last stored response on, since more lines of it, and more tool
        results after it, may have been written since; and the compactions after the response
        before it (their ``tokens_after`` is that last response's context, or unknown)."""
        if self._open_tail is None:
            top = self._stored_maximum()
            if not self.replace_open_tail or top is None:
                self._open_tail = (2**31, 2**31)  # nothing stored, or nothing replaceable
                return self._open_tail
            calls = Message.objects.filter(
                session__project=self.project,
                session__external_id=self.external_id,
                role=MessageRole.ASSISTANT,
            )
            last = calls.aggregate(top=Max("seq"))["top"]
            previous = None
            if last is None:
                last = top  # no response yet: only the last message can still grow
            else:
                previous = calls.filter(seq__lt=last).aggregate(top=Max("seq"))["top"]
            self._open_tail = (last, 0 if previous is None else previous + 1)
        return self._open_tail

    def _provisional_update(self, *, last: bool) -> None:
        """Rows stored provisionally: replaced where the file now differs in anything stored
        (content, usage, timestamp, model); at the ``last`` flush, deleted where the file no
        longer has them."""
        if self.provisional_from is None:
            return
        first_message, first_event = self.provisional_from
        if self._messages:
            self._seen_top = max(self._seen_top, *(m.seq for m in self._messages))
        self._seen_events.update((e.seq, e.strategy) for e in self._compactions)
        rows = Message.objects.filter(
            session__project=self.project,
            session__external_id=self.external_id,
            seq__gte=first_message,
        )
        seqs = [m.seq for m in self._messages if m.seq >= first_message]
        stored = {
            row[0]: row[1:]
            for row in rows.filter(seq__in=seqs).values_list(
                "seq",
                "content_hash",
                "input_tokens",
                "output_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
                "timestamp",
                "model",
            )
        }
        for m in self._messages:
            if m.seq in stored and stored[m.seq] != _stored_form(m):
                self._replacing_seqs.add(m.seq)
                self.report.replaced.append(
                    f"message seq {m.seq} was provisional at the last import (the file was "
                    "still being written): replaced by the file's version"
                )
        if last:
            gone = rows.filter(seq__gt=self._seen_top).values_list("seq", flat=True)
            for seq in gone:
                self._replacing_seqs.add(seq)
                self.report.replaced.append(
                    f"message seq {seq} was provisional at the last import and the file no "
                    "longer has it: deleted"
                )
        events = services.stored_compaction_hashes(
            project_id=self.project.pk, external_id=self.external_id
        )
        for event in self._compactions:
            key = (event.seq, event.strategy)
            if event.seq >= first_event and services.stored_differently(
                events, key, services.compaction_hash(event)
            ):
                self._replacing_events.add(key)
                self.report.replaced.append(
                    f"{event.strategy} compaction at seq {event.seq} was provisional at the "
                    "last import: replaced by the file's version"
                )
        if last:
            for key in sorted(events):
                if key[0] >= first_event and key not in self._seen_events:
                    self._replacing_events.add(key)
                    self.report.replaced.append(
                        f"{key[1]} compaction at seq {key[0]} was provisional at the last "
                        "import and the file no longer has it: deleted"
                    )

    def _drop_changed(self) -> None:
        """Leave out what is stored already with other content (the file changed since),
        unless it is the open tail of a file that was still being written: mark that for
        replacement."""
        open_messages, open_events = self._stored_open_tail()
        top = self._stored_maximum()
        if top is not None and self._messages and self._messages[0].seq <= top:
            stored = services.stored_message_hashes(
                project_id=self.project.pk,
                external_id=self.external_id,
                seqs=[m.seq for m in self._messages if m.seq <= top],
            )
            keep = []
            for m in self._messages:
                digest = services.message_digest(m)
                if m.seq in self._replacing_seqs:
                    keep.append(m)
                    continue
                if services.stored_differently(stored, m.seq, digest):
                    if m.seq >= open_messages:
                        self._replacing_seqs.add(m.seq)
                        self.report.replaced.append(
                            f"message seq {m.seq} was still being written at the last import: "
                            "replaced by the complete version"
                        )
                        keep.append(m)
                        continue
                    self.report.kept_stored.append(
                        f"message seq {m.seq} differs from the file (it changed since the last "
                        "import)"
                    )
                    continue
                keep.append(m)
            self._messages = keep
        if self._compactions:
            stored_events = services.stored_compaction_hashes(
                project_id=self.project.pk, external_id=self.external_id
            )
            kept = []
            for event in self._compactions:
                key = (event.seq, event.strategy)
                if key in self._replacing_events:
                    kept.append(event)
                    continue
                if services.stored_differently(stored_events, key, services.compaction_hash(event)):
                    reason = None
                    if event.seq >= open_events:
                        reason = "was measured on a response still being written"
                    elif _adds_summary_call(event, stored_events[key]):
                        reason = "gains the summary call imported with the file this time"
                    if reason is not None:
                        self._replacing_events.add((event.seq, event.strategy))
                        self.report.replaced.append(
                            f"{event.strategy} compaction at seq {event.seq} {reason}: replaced"
                        )
                        kept.append(event)
                        continue
                    self.report.kept_stored.append(
                        f"{event.strategy} compaction at seq {event.seq} differs from the file"
                    )
                    continue
                kept.append(event)
            self._compactions = kept

    def flush(
        self, *, session: dict[str, Any] | None = None, import_state: dict[str, Any] | None = None
    ) -> None:
        """Store what is buffered (and the session fields and the importer's state, if given)
        in one transaction."""
        if not self.pending and session is None and import_state is None:
            return
        self._provisional_update(last=session is not None)
        self._drop_changed()
        # Built from models validated one by one as they were added: not validated again
        # (a schema reads a model's attributes into a new one, every content block included).
        batch = EventBatch.model_construct(
            session=_safe_session(session, self.file) if session is not None else None,
            messages=self._messages,
            compactions=self._compactions,
        )
        replacing = services.Replacement(
            message_seqs=frozenset(self._replacing_seqs),
            compactions=frozenset(self._replacing_events),
        )
        result = services.events_ingest(
            project=self.project,
            external_id=self.external_id,
            batch=batch,
            replacing=replacing or None,
            import_state=import_state,
        )
        self._replacing_seqs, self._replacing_events = set(), set()
        self.report.messages += result.received
        self.report.duplicates += result.duplicates
        self.report.compactions += result.compactions
        if self._messages:
            top = max(m.seq for m in self._messages)
            stored = self._stored_maximum()
            self._stored_max = top if stored is None else max(stored, top)
        self._messages, self._compactions, self._bytes = [], [], 0
