"""One read of a session's raw messages per analysis pass.

The pass needs every message as an engine message, and the personal data in the messages no
earlier pass scanned (for the findings and for the subject index, which keep their own marks).
Reading the rows once, as plain values, and scanning each text once serves all three: on a long
session the reads and the scans were most of the pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from compaction.engine.messages import Message as EngineMessage
from compaction.engine.messages import message_from_wire
from privacy.detect import pii
from sessions import search
from sessions.models import AgentSession, Message, message_usage

Scan = Callable[[str], list[pii.Detection]]

_COLUMNS = (
    "pk",
    "seq",
    "role",
    "content",
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "iterations",
    "cache_creation_1h_input_tokens",
    "model",
)


@dataclass(frozen=True)
class MessageHit:
    """A detection in one string of a raw message (``path`` as ``pii.json_strings`` names it)."""

    message_id: int
    seq: int
    path: str
    detection: pii.Detection


@dataclass
class MessageScan:
    """The detections in the messages whose pk is in (``after_pk``, ``last_pk``]."""

    after_pk: int
    last_pk: int
    hits: list[MessageHit] = field(default_factory=list)
    pks: list[int] = field(default_factory=list)  # every message scanned
    # What search reads of each message scanned (sessions/search.py), masked by this scan.
    search_texts: dict[int, str] = field(default_factory=dict)
    # How many queries read them: with one, the scan saw every message of the range that
    # was stored when it began (pks grow in commit order); with more, one stored between
    # two queries may have been missed (privacy/known_clean.py looks for those).
    reads: int = 0

    def hits_after(self, pk: int) -> Iterator[MessageHit]:
        """The hits in messages past ``pk`` (a caller's own mark, at least ``after_pk``)."""
        self._check(pk)
        return (hit for hit in self.hits if hit.message_id > pk)

    def pks_after(self, pk: int) -> Iterator[int]:
        """The scanned messages past ``pk``, with or without hits."""
        self._check(pk)
        return (scanned for scanned in self.pks if scanned > pk)

    def _check(self, pk: int) -> None:
        if pk < self.after_pk:
            raise ValueError(f"scanned after {self.after_pk}, asked after {pk}")


_CHUNK = 2000


def _chunks(session: AgentSession, *, after_pk: int = 0) -> Iterator[list[tuple[Any, ...]]]:
    """The rows in seq order, read in chunks of ``_CHUNK`` by seq (keyset): plain queries.

    Not ``.iterator()``: outside a transaction Django makes it a server-side cursor declared
    WITH HOLD, which PostgreSQL materializes whole (every content detoasted and copied) before
    the first row is fetched; on the many short sessions of a busy project that was a
    twentieth of an analysis.
    """
    rows = Message.objects.filter(session=session, pk__gt=after_pk).order_by("seq")
    last_seq = -1
    while True:
        chunk = list(rows.filter(seq__gt=last_seq).values_list(*_COLUMNS)[:_CHUNK])
        yield chunk
        if len(chunk) < _CHUNK:
            return
        last_seq = chunk[-1][1]


def _scan_row(row: tuple[Any, ...], found: MessageScan, scan: Scan) -> None:
    pk, seq, content, iterations = row[0], row[1], row[3], row[8]
    for path, text in [*pii.json_strings(content, "content"), *pii.json_strings(iterations)]:
        found.hits.extend(MessageHit(pk, seq, path, d) for d in scan(text))
    found.search_texts[pk] = search.message_search_text(content, detect=scan)
    found.pks.append(pk)
    found.last_pk = max(found.last_pk, pk)


def _engine_message(row: tuple[Any, ...]) -> EngineMessage:
    _, seq, role, content, *usage_columns, model = row
    wire: dict[str, Any] = {"seq": seq, "role": role, "content": content, "model": model}
    usage = message_usage(*usage_columns)
    if usage is not None:
        wire["usage"] = usage
    return message_from_wire(wire, where=f"messages[{seq}]")


def messages_read(
    session: AgentSession, *, scan_after: int, scan: Scan
) -> tuple[list[EngineMessage], MessageScan]:
    """The session's messages as engine messages in seq order, and the personal data in those
    past ``scan_after``."""
    messages = []
    found = MessageScan(after_pk=scan_after, last_pk=scan_after)
    for chunk in _chunks(session):
        found.reads += 1
        for row in chunk:
            messages.append(_engine_message(row))
            if row[0] > scan_after:
                _scan_row(row, found, scan)
    return messages, found


def messages_scan(
    session: AgentSession,
    *,
    after_pk: int,
    scan: Scan = pii.scan,
    scanned: MessageScan | None = None,
) -> MessageScan:
    """The personal data in the session's messages past ``after_pk``: ``scanned`` (what an
    analysis pass found already) when it covers them, else read and scanned now (outside a
    pass, or when a mark was reset meanwhile)."""
    if scanned is not None and scanned.after_pk <= after_pk:
        return scanned
    found = MessageScan(after_pk=after_pk, last_pk=after_pk)
    for chunk in _chunks(session, after_pk=after_pk):
        found.reads += 1
        for row in chunk:
            _scan_row(row, found, scan)
    return found


def engine_messages(session: AgentSession) -> list[EngineMessage]:
    """The raw trace as engine messages, in seq order."""
    return [_engine_message(row) for chunk in _chunks(session) for row in chunk]
