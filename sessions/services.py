"""Writes: projects, keys, and the ingest of trace batches.

A batch is stored whole or not at all; resending is safe.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from compaction import services as compaction_services
from compaction.engine import titles
from compaction.engine.messages import message_from_wire
from privacy import audit
from privacy.detect import pii
from privacy.models import AuditAction
from sessions import erasure, limits, search, wire
from sessions.errors import BadRequest, Conflict, PayloadTooLarge
from sessions.models import (
    KEY_PREFIX,
    AgentSession,
    ApiKey,
    CompactionEvent,
    Message,
    Probe,
    Project,
    api_key_hash,
)
from sessions.schemas import CompactionIn, EventBatch, MessageIn, SessionIn


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _digest(payload: Any) -> str:
    return hashlib.sha256(_canonical_json(payload).encode()).hexdigest()


def _aware(moment: datetime | None) -> datetime | None:
    if moment is not None and timezone.is_naive(moment):
        return moment.replace(tzinfo=UTC)
    return moment


# --- projects and keys -----------------------------------------------------------------


def project_create(*, name: str, allow_external_models: bool = False) -> Project:
    if not name.strip():
        raise BadRequest("name: required")
    limits.text_check(name, limit=limits.PROJECT_NAME_MAX, field="name")
    wire.text_storable_check(name, where="name")
    return Project.objects.create(name=name, allow_external_models=allow_external_models)


@dataclass(frozen=True)
class IssuedKey:
    api_key: ApiKey
    raw_key: str


def api_key_create(*, project: Project, name: str = "default") -> IssuedKey:
    prefix, raw_key = ApiKey.generate()
    api_key = ApiKey.objects.create(
        project=project, name=name, prefix=prefix, hashed_key=api_key_hash(raw_key)
    )
    return IssuedKey(api_key=api_key, raw_key=raw_key)


def api_key_authenticate(*, raw_key: str) -> Project | None:
    """The project of an active key, or None. The hash is compared in constant time."""
    if not raw_key.startswith(KEY_PREFIX) or raw_key.count("_") < 2:
        return None
    prefix = raw_key[len(KEY_PREFIX) :].split("_", 1)[0]
    api_key = (
        ApiKey.objects.select_related("project")
        .filter(prefix=prefix, revoked_at__isnull=True)
        .first()
    )
    if api_key is None or not hmac.compare_digest(api_key.hashed_key, api_key_hash(raw_key)):
        return None
    now = timezone.now()
    # Writing on every request would serialise ingest on this row; a minute is precise enough.
    if api_key.last_used_at is None or (now - api_key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
    return api_key.project


def api_key_revoke(*, api_key: ApiKey) -> None:
    ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(revoked_at=timezone.now())


# The project pages' and the admin's doors to keys: each change writes its audit row in the
# same transaction, so the log cannot miss one.


@transaction.atomic
def project_key_create(*, actor: audit.Actor, project: Project, name: str) -> IssuedKey:
    name = name.strip()
    if not name:
        raise BadRequest("name: required, a label for the key")
    limits.text_check(name, limit=limits.API_KEY_NAME_MAX, field="name")
    issued = api_key_create(project=project, name=name)
    audit.audit_record(
        actor=actor,
        action=AuditAction.KEY_CHANGE,
        project=project,
        target=f"key:{issued.api_key.prefix}",
        detail={"change": "created", "name": name},
    )
    return issued


@transaction.atomic
def project_key_revoke(*, actor: audit.Actor, api_key: ApiKey) -> None:
    revoked = ApiKey.objects.filter(pk=api_key.pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )
    if revoked:
        audit.audit_record(
            actor=actor,
            action=AuditAction.KEY_CHANGE,
            project=api_key.project,
            target=f"key:{api_key.prefix}",
            detail={"change": "revoked", "name": api_key.name},
        )


# --- ingest ----------------------------------------------------------------------------


@dataclass(frozen=True)
class IngestResult:
    session: AgentSession
    received: int
    duplicates: int
    compactions: int
    replaced: int = 0


@dataclass(frozen=True)
class Replacement:
    """Stored rows a batch supersedes: an importer's only way to rewrite what is stored.

    A file import names the tail it stored from a transcript that was still being written
    (its last response had more lines to come); everything else stored is never rewritten.
    """

    message_seqs: frozenset[int] = frozenset()
    compactions: frozenset[tuple[int, str]] = frozenset()  # (seq, strategy)

    def __bool__(self) -> bool:
        return bool(self.message_seqs or self.compactions)


def _replaced_delete(session: AgentSession, replacement: Replacement) -> tuple[int, int]:
    """Delete the superseded rows; return (messages, compactions) deleted."""
    stale = Message.objects.filter(session=session, seq__in=sorted(replacement.message_seqs))
    messages = stale.count()
    stale.delete()
    events = 0
    for seq, strategy in sorted(replacement.compactions):
        found = CompactionEvent.objects.filter(session=session, seq=seq, strategy=strategy)
        events += found.count()
        found.delete()  # cascades to the observed span, which the analysis rebuilds
    return messages, events


def message_hash(*, role: str, blocks: list[dict[str, Any]]) -> str:
    return message_canonical(role=role, blocks=blocks)[1]


def message_canonical(*, role: str, blocks: list[dict[str, Any]]) -> tuple[str, str]:
    """The blocks' canonical JSON (stored as is) and the message's content hash."""
    content_json = _canonical_json(blocks)
    return content_json, _message_digest(role, content_json)


def message_canonical_of(message: MessageIn) -> tuple[str, str]:
    """As :func:`message_canonical`, taken from the reader when it made them already."""
    known = message.canonical_known()
    if known is not None:
        return known
    return message_canonical(role=message.role, blocks=message.blocks())


def message_digest(message: MessageIn) -> str:
    return message_canonical_of(message)[1]


def _message_digest(role: str, content_json: str) -> str:
    """``_digest({"role": role, "content": blocks})`` from the blocks' canonical JSON, which
    ingest also stores, so a message's content is serialized once: with sorted keys,
    "content" comes before "role"."""
    text = f'{{"content":{content_json},"role":{_canonical_json(role)}}}'
    return hashlib.sha256(text.encode()).hexdigest()


def compaction_hash(event: CompactionIn) -> str:
    return _digest(event.model_dump(mode="json"))


# --- the one check against already-stored content (ingest refuses, importers leave out) -----


def stored_message_hashes(
    *, project_id: int, external_id: str, seqs: Collection[int]
) -> dict[int, str]:
    """The content hash already stored for each of these seqs of a session, by seq."""
    if not seqs:
        return {}
    return dict(
        Message.objects.filter(
            session__project_id=project_id,
            session__external_id=external_id,
            seq__gte=min(seqs),
            seq__lte=max(seqs),
        ).values_list("seq", "content_hash")
    )


def stored_compaction_hashes(*, project_id: int, external_id: str) -> dict[tuple[int, str], str]:
    """The content hash of each stored compaction of a session, by (seq, strategy)."""
    return {
        (seq, strategy): digest
        for seq, strategy, digest in CompactionEvent.objects.filter(
            session__project_id=project_id, session__external_id=external_id
        ).values_list("seq", "strategy", "content_hash")
    }


def stored_differently(stored: Mapping[Any, str], key: Any, digest: str) -> bool:
    """True when ``key`` is stored already with other content (same content: a duplicate)."""
    return key in stored and stored[key] != digest


def _apply_session_fields(session: AgentSession, fields: SessionIn | None) -> None:
    if fields is None:
        return
    for name in ("agent", "model", "context_window", "metadata"):
        value = getattr(fields, name)
        if value is not None:
            setattr(session, name, value)
    if fields.started_at is not None:
        session.started_at = _aware(fields.started_at)
    if fields.ended_at is not None:
        session.ended_at = _aware(fields.ended_at)


@dataclass(frozen=True)
class _Incoming:
    index: int  # in the batch, for error messages
    message: MessageIn
    content_json: str  # the blocks' canonical JSON: hashed, and stored as is
    digest: str


def _unique_in_batch(messages: list[MessageIn]) -> tuple[dict[int, _Incoming], int]:
    """Index the batch's messages by seq; identical repeats inside the batch are duplicates."""
    by_seq: dict[int, _Incoming] = {}
    repeats = 0
    for index, message in enumerate(messages):
        content_json, digest = message_canonical_of(message)
        seen = by_seq.get(message.seq)
        if seen is None:
            by_seq[message.seq] = _Incoming(index, message, content_json, digest)
        elif seen.digest == digest:
            repeats += 1
        else:
            raise BadRequest(
                f"messages[{index}].seq: {message.seq} appears twice in this batch "
                f"with different content (first at messages[{seen.index}])",
                bad_items={"messages": [index]},
            )
    return by_seq, repeats


def _new_messages(
    session: AgentSession,
    by_seq: dict[int, _Incoming],
    *,
    stored_nothing: bool = False,
) -> tuple[list[Message], int]:
    if not by_seq:
        return [], 0
    stored = (
        {}
        if stored_nothing
        else stored_message_hashes(
            project_id=session.project_id, external_id=session.external_id, seqs=by_seq.keys()
        )
    )
    new: list[Message] = []
    duplicates = 0
    for seq, incoming in sorted(by_seq.items()):
        message, digest = incoming.message, incoming.digest
        if seq in stored:
            if stored_differently(stored, seq, digest):
                raise Conflict(
                    f"messages[{incoming.index}].seq: {seq} already stored with different content",
                    bad_items={"messages": [incoming.index]},
                )
            duplicates += 1
            continue
        usage = message.usage
        new.append(
            Message(
                session=session,
                seq=seq,
                role=message.role,
                content=message.blocks(),
                timestamp=_aware(message.timestamp),
                input_tokens=usage.input_tokens if usage else None,
                output_tokens=usage.output_tokens if usage else None,
                cache_read_input_tokens=usage.cache_read_input_tokens if usage else None,
                cache_creation_input_tokens=usage.cache_creation_input_tokens if usage else None,
                cache_creation_1h_input_tokens=usage.one_hour_writes or None if usage else None,
                iterations=(
                    [it.stored() for it in usage.iterations]
                    if usage and usage.iterations is not None
                    else None
                ),
                content_hash=digest,
                model=message.model or "",
            )
        )
    return new, duplicates


def _new_compactions(
    session: AgentSession, events: list[CompactionIn], *, stored_nothing: bool = False
) -> list[CompactionEvent]:
    if not events:
        return []
    stored = (
        {}
        if stored_nothing
        else stored_compaction_hashes(
            project_id=session.project_id, external_id=session.external_id
        )
    )
    new: list[CompactionEvent] = []
    for index, event in enumerate(events):
        key = (event.seq, event.strategy)
        digest = compaction_hash(event)
        if key in stored:
            if stored_differently(stored, key, digest):
                raise Conflict(
                    f"compactions[{index}].seq: a {event.strategy or 'compaction'} event at "
                    f"{event.seq} is already stored with different content",
                    bad_items={"compactions": [index]},
                )
            continue
        stored[key] = digest
        new.append(
            CompactionEvent(
                session=session,
                seq=event.seq,
                trigger=event.trigger,
                strategy=event.strategy,
                tokens_before=event.tokens_before,
                tokens_after=event.tokens_after,
                summary=event.summary,
                summary_seq=event.summary_seq,
                replaced_from_seq=event.replaced.from_seq if event.replaced else None,
                replaced_to_seq=event.replaced.to_seq if event.replaced else None,
                kept=event.kept or {},
                duration_ms=event.duration_ms,
                error=event.error or "",
                content_hash=digest,
            )
        )
    return new


def _new_probes(
    session: AgentSession, batch: EventBatch, *, stored_nothing: bool = False
) -> list[Probe]:
    if not batch.probes:
        return []
    stored = (
        set()
        if stored_nothing
        else set(Probe.objects.filter(session=session).values_list("seq", "text_hash"))
    )
    new: list[Probe] = []
    for probe in batch.probes:
        key = (probe.seq, hashlib.sha256(probe.text.encode()).hexdigest())
        if key not in stored:
            stored.add(key)
            new.append(
                Probe(
                    session=session,
                    seq=probe.seq,
                    text=probe.text,
                    check_hint=probe.check,
                    text_hash=key[1],
                )
            )
    return new


def _identifiers_check(external_id: str, fields: SessionIn | None) -> None:
    """Under "mask at ingest", an id, agent or model holding personal data is refused: text
    is stored masked, but an id cannot be (two sessions would merge under one mask), and
    agents and models are what the list filters by."""
    named = [("external_id", external_id)]
    if fields is not None:
        named += [("session.agent", fields.agent or ""), ("session.model", fields.model or "")]
    for field, value in named:
        kinds = sorted({d.kind for d in pii.scan(value)})
        if kinds:
            raise BadRequest(
                f"{field}: holds personal data ({', '.join(kinds)}); this project masks "
                "personal data at ingest and never stores it in clear: send it without"
            )


def _mask_personal_data(
    messages: list[Message], compactions: list[CompactionEvent], probes: list[Probe]
) -> None:
    """The project's "mask at ingest" policy: keep only masked text (privacy/detect/pii.py).

    The content hashes stay those of what was sent, so an identical resend is still a duplicate.
    """
    for message in messages:
        message.content = pii.mask_json(message.content)
        if message.iterations is not None:  # an advisor's model is named in its iteration
            message.iterations = pii.mask_json(message.iterations)
    for event in compactions:
        event.summary = pii.mask_json(event.summary)
        event.error = pii.mask_json(event.error)
        event.kept = pii.mask_json(event.kept)
    for probe in probes:
        probe.text = pii.mask_json(probe.text)
        probe.check_hint = pii.mask_json(probe.check_hint)


def _messages_insert(messages: list[Message], content_json: Mapping[int, str]) -> None:
    """Insert new messages: through COPY on PostgreSQL, a bulk INSERT elsewhere.

    An ingest batch is mostly message text; COPY streams it as rows, where Django's bulk
    INSERT (one array per column, with client-side parameter binding) quotes every value into
    the statement first, which took about a tenth of a web worker's time at full load. The
    values are the fields' own database values, so what is stored is the same either way;
    the database computes the search document (sessions/search_sql.py) in both.
    ``content_json`` (by seq) is the content already serialized for its hash, sent as is.
    """
    if connection.vendor != "postgresql":
        Message.objects.bulk_create(messages, batch_size=1000)
        return
    fields = [f for f in Message._meta.concrete_fields if not f.primary_key]
    content = Message._meta.get_field("content")
    columns = ", ".join(connection.ops.quote_name(str(f.column)) for f in fields)
    table = connection.ops.quote_name(Message._meta.db_table)
    # wrap_database_errors: Django's own exceptions (IntegrityError, DataError), as from a query
    copy_sql = f"COPY {table} ({columns}) FROM STDIN"
    with (
        connection.cursor() as cursor,
        connection.wrap_database_errors,
        cursor.copy(copy_sql) as copy,
    ):
        for message in messages:
            serialized = content_json.get(message.seq)
            copy.write_row(
                [
                    serialized
                    if f is content and serialized is not None
                    else f.get_db_prep_save(getattr(message, f.attname), connection)
                    for f in fields
                ]
            )


def batch_limits_check(batch: EventBatch) -> None:
    """413 naming the limit when a batch carries more items than one analysis may take on."""
    for field, items, limit, setting in (
        ("messages", batch.messages, settings.INGEST_MAX_MESSAGES_PER_BATCH, "MESSAGES"),
        (
            "compactions",
            batch.compactions,
            settings.INGEST_MAX_COMPACTIONS_PER_BATCH,
            "COMPACTIONS",
        ),
        ("probes", batch.probes, settings.INGEST_MAX_PROBES_PER_BATCH, "PROBES"),
    ):
        if len(items) > limit:
            raise PayloadTooLarge(
                f"{field}: {len(items)} in one batch, the limit is {limit} "
                f"(INGEST_MAX_{setting}_PER_BATCH); send them in several batches"
            )


def _session_limits_check(
    session: AgentSession, *, messages: int, compactions: int, probes: int
) -> None:
    """413 naming the limit when the batch would take the session past what one analysis pass
    holds in memory at once; the batch is refused whole (the session keeps what it had)."""
    probes_before = Probe.objects.filter(session=session).count() if probes else 0
    for field, before, adding, limit in (
        ("messages", session.message_count, messages, settings.SESSION_MAX_MESSAGES),
        ("compactions", session.compaction_count, compactions, settings.SESSION_MAX_COMPACTIONS),
        ("probes", probes_before, probes, settings.SESSION_MAX_PROBES),
    ):
        if adding > 0 and before + adding > limit:
            raise PayloadTooLarge(
                f"{field}: the session holds {before} and the batch adds {adding}, the limit "
                f"is {limit} per session (SESSION_MAX_{field.upper()}); start a new session"
            )


def _title_fill(session: AgentSession, messages: list[Message]) -> None:
    """Name the session at once: its metadata's title, else the first prompt seen so far. The
    analysis, which reads every message, corrects it when batches arrive out of order."""
    named = titles.metadata_title(session.metadata)
    if named or session.title:
        session.title = named or session.title
        return
    wires = (
        {"seq": m.seq, "role": m.role, "content": m.content} for m in messages if m.role == "user"
    )
    session.title = titles.session_title(
        message_from_wire(w, where=f"messages[{w['seq']}]") for w in wires
    )


@transaction.atomic(durable=True)
def events_ingest(
    *,
    project: Project,
    external_id: str,
    batch: EventBatch,
    replacing: Replacement | None = None,
    import_state: dict[str, Any] | None = None,
) -> IngestResult:
    """Store a batch whole or not at all. Identical resends count as duplicates.

    ``replacing`` (importers only, never the HTTP API) names stored rows the batch
    supersedes; they are deleted in the same transaction, under the session lock.
    ``import_state`` (importers only) replaces the session's, in the same transaction as the
    messages it describes."""
    wire.external_id_check(external_id)
    batch_limits_check(batch)
    if project.mask_at_ingest:
        _identifiers_check(external_id, batch.session)
    by_seq, repeats = _unique_in_batch(batch.messages)

    session, created = AgentSession.objects.get_or_create(project=project, external_id=external_id)
    if not created:
        # Lock the session row so concurrent batches for one session apply one after the
        # other. A row this transaction inserted is locked already, and holds nothing yet.
        # FOR NO KEY UPDATE, not FOR UPDATE: an analysis being stored holds the analysis row
        # this batch asks for next, and inserts rows referencing the session (a key-share
        # lock on it); a full FOR UPDATE would deadlock the two.
        session = AgentSession.objects.select_for_update(no_key=True).get(pk=session.pk)
    gone_messages, gone_events = _replaced_delete(session, replacing) if replacing else (0, 0)

    messages, duplicates = _new_messages(session, by_seq, stored_nothing=created)
    compactions = _new_compactions(session, batch.compactions, stored_nothing=created)
    probes = _new_probes(session, batch, stored_nothing=created)
    _session_limits_check(
        session,
        messages=len(messages) - gone_messages,
        compactions=len(compactions) - gone_events,
        probes=len(probes),
    )
    serialized = {seq: incoming.content_json for seq, incoming in by_seq.items()}
    if project.mask_at_ingest:
        _mask_personal_data(messages, compactions, probes)
        serialized = {}  # the content stored is the masked one
    _messages_insert(messages, serialized)
    CompactionEvent.objects.bulk_create(compactions)
    Probe.objects.bulk_create(probes)

    _apply_session_fields(session, batch.session)
    if import_state is not None:
        session.import_state = import_state
    if project.mask_at_ingest:
        session.metadata = pii.mask_json(session.metadata)
    _title_fill(session, messages)
    if session.started_at is None:
        stamps = [m.timestamp for m in messages if m.timestamp is not None]
        session.started_at = min(stamps) if stamps else None
    session.message_count += len(messages) - gone_messages
    session.compaction_count += len(compactions) - gone_events
    session.updated_at = timezone.now()
    # The session's own fields are few and short: searchable at once (masked, as everything
    # search reads); its messages and summaries once the analysis pass has masked them.
    session.search_text = search.session_search_text(session)
    session.save()
    if messages or compactions or probes or gone_messages or gone_events:
        compaction_services.analysis_request(session_id=session.pk)

    return IngestResult(
        session=session,
        received=len(messages),
        duplicates=duplicates + repeats,
        compactions=len(compactions),
        replaced=gone_messages + gone_events,
    )


def project_policy_update(
    *,
    project: Project,
    retention_days: int | None,
    mask_at_ingest: bool,
    allow_external_models: bool,
    judge_retention: bool = False,
    by: Any = None,
) -> Project:
    """Set a project's privacy policy (the admin's project policy page); audited."""
    if retention_days is not None and retention_days < 1:
        raise BadRequest("retention_days: at least 1 day, or empty to keep sessions forever")
    wanted = {
        "retention_days": retention_days,
        "mask_at_ingest": mask_at_ingest,
        "allow_external_models": allow_external_models,
        "judge_retention": judge_retention,
    }
    changed = {
        name: {"from": getattr(project, name), "to": value}
        for name, value in wanted.items()
        if getattr(project, name) != value
    }
    if changed:
        audit.audit_record(
            actor=by,
            action=AuditAction.POLICY_CHANGE,
            project=project,
            target=f"project:{project.pk}",
            detail=changed,
        )
    project.retention_days = retention_days
    project.mask_at_ingest = mask_at_ingest
    project.allow_external_models = allow_external_models
    project.judge_retention = judge_retention
    project.save(
        update_fields=[
            "retention_days",
            "mask_at_ingest",
            "allow_external_models",
            "judge_retention",
        ]
    )
    return project


# --- deletion and retention (one implementation: the delete action and the purge) -----------


@dataclass(frozen=True)
class SessionDeleted:
    external_id: str
    project_id: int
    rows: dict[str, int]


def session_delete(
    *, session: AgentSession, by: Any, reason: str, actor_name: str = ""
) -> SessionDeleted:
    """Delete a session and everything derived from it (messages, compactions, probes,
    analysis, spans, replays, findings, subject index, subagent sessions). ``by`` is the user,
    or None for a command; ``reason`` is required and recorded."""
    if not reason.strip():
        raise BadRequest("reason: required to delete a session")
    rows = _sessions_erase(
        [session], by=by, reason=reason, actor_name=actor_name, detail={"deleted": "session"}
    )
    return SessionDeleted(external_id=session.external_id, project_id=session.project_id, rows=rows)


def _sessions_erase(
    sessions: list[AgentSession], *, by: Any, reason: str, actor_name: str, detail: dict[str, Any]
) -> dict[str, int]:
    """One implementation for the delete action and the purge: the rows go in set-based SQL
    (sessions.erasure), and each session's erasure is recorded in the audit log."""
    ids = [session.pk for session in sessions]
    # A pass storing the analysis of one of them (or of a subagent session under one) holds
    # rows the delete needs: stopped, not waited on.
    compaction_services.analysis_storing_stop(session_ids=erasure.with_descendants(ids))
    with transaction.atomic():
        rows = erasure.sessions_erase(ids)
        for session in sessions:
            audit.audit_record(
                actor=by,
                actor_name=actor_name,
                action=AuditAction.ERASURE,
                project=session.project,
                target=f"session:{session.pk}",
                reason=reason,
                detail={**detail, "rows": rows},
            )
    return rows


def sessions_purge_expired(*, limit: int = 500, batch: int = 250) -> int:
    """Delete sessions not updated within their project's retention; at most ``limit`` per
    call (the periodic task runs again), ``batch`` per transaction. Returns how many were
    deleted (subagent sessions deleted with their parent are not counted)."""
    now = timezone.now()
    deleted = 0
    for project in Project.objects.filter(retention_days__isnull=False).order_by("pk"):
        cutoff = now - timedelta(days=project.retention_days or 0)
        reason = f"retention: {project.retention_days} days"
        while deleted < limit:
            expired = list(
                AgentSession.objects.filter(project=project, updated_at__lt=cutoff)
                .select_related("project")
                .order_by("updated_at", "pk")[: min(batch, limit - deleted)]
            )
            if not expired:
                break
            detail = {"deleted": "session", "purge": {"sessions": len(expired)}}
            _sessions_erase(expired, by=None, reason=reason, actor_name="", detail=detail)
            deleted += len(expired)
        if deleted >= limit:
            break
    return deleted
