"""Data-subject requests (LGPD art. 18): find, export and erase one person's identifier.

The services and selectors of one feature, kept together because they share one rule: where
an identifier can be. The index (``SubjectToken``) holds a keyed hash of each identifier the
detector (``privacy.detect.pii``) finds, never its text; it is rebuilt by the analysis pass
for the raw rows, summaries and observed spans, and by each replay for its own rows.

Erasure follows lineage: every row that deleting the session would delete (Django's deletion
collector, so a derived model added later is covered without a change here) has the identifier
replaced in every text and JSON column, then the analysis and the session's replays are queued
again so derived data is rebuilt from the anonymized raw history. Message ``content_hash`` is
left as it was on purpose: a client resending the original batch is then told "duplicate" and
the identifier is not stored again.
"""

from __future__ import annotations

import hmac
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict

from django.db import DEFAULT_DB_ALIAS, models, transaction
from django.db.models import F
from django.db.models.deletion import Collector

from compaction import outbox, services
from compaction.models import CompactionSpan, ReplayRun, ReplayStatus, SessionAnalysis
from privacy import audit, findings, known_clean, masking, message_scan
from privacy.detect import pii
from privacy.erasure_scope import ERASURE_APPS as ERASURE_APPS
from privacy.erasure_scope import ERASURE_EXEMPT as ERASURE_EXEMPT
from privacy.erasure_scope import project_rows as _project_rows
from privacy.erasure_scope import text_fields as _text_fields
from privacy.message_scan import MessageHit, MessageScan, Scan
from privacy.models import (
    AuditAction,
    Finding,
    SubjectAction,
    SubjectIndexMark,
    SubjectRequest,
    SubjectToken,
    SubjectWhere,
)
from sessions import search
from sessions.errors import BadRequest
from sessions.models import AgentSession, CompactionEvent, Message, Probe, Project

logger = logging.getLogger(__name__)

# What a request may name, in order of preference when one string reads as two kinds
# (an 11-digit number can be a valid CPF and a phone number).
SUBJECT_KINDS = ("cpf", "cnpj", "email", "phone")
ERASED = "[{kind} erased]"


# --- the keyed hash ----------------------------------------------------------------------


def subject_digest(*, kind: str, normalized: str) -> str:
    """The keyed hash of an identifier: the findings' one (``findings.finding_value_hash``,
    HMAC-SHA256 of the normalized value under the server's PII key), so a finding and an
    index row of the same value carry the same digest. ``kind`` is kept beside it."""
    return findings.finding_value_hash(normalized)


@dataclass(frozen=True)
class Subject:
    kind: str
    digest: str
    masked: str
    normalized: str = field(repr=False)


def subject_parse(*, identifier: str) -> Subject:
    """The subject an identifier names. BadRequest when it is no CPF, CNPJ, e-mail or phone."""
    text = identifier.strip()
    found = [d for d in pii.scan(text) if d.kind in SUBJECT_KINDS]
    if not text or not found:
        raise BadRequest(
            "identifier: not a valid CPF, CNPJ, e-mail address or phone number "
            "(check digits are verified)"
        )
    # The whole identifier, not a part of it; then the preferred kind.
    best = max(found, key=lambda d: (d.end - d.start, -SUBJECT_KINDS.index(d.kind)))
    return Subject(
        kind=best.kind,
        digest=subject_digest(kind=best.kind, normalized=best.normalized),
        # Of the normalized value, so every way of writing it gets one masked form.
        masked=pii.masked_preview(replace(best, value=best.normalized)),
        normalized=best.normalized,
    )


def _shifted(detection: pii.Detection, offset: int) -> pii.Detection:
    return replace(detection, start=detection.start - offset, end=detection.end - offset)


# --- walking the text of a row -----------------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def strings_rewrite(value: Any, edit: Callable[[str], str]) -> Any:
    """``value`` (a string or JSON) with ``edit`` applied to every string in it."""
    if isinstance(value, str):
        return edit(value)
    if isinstance(value, dict):
        return {key: strings_rewrite(item, edit) for key, item in value.items()}
    if isinstance(value, list):
        return [strings_rewrite(item, edit) for item in value]
    return value


def row_strings(row: models.Model) -> Iterator[str]:
    """Every string in the row's text and JSON columns (JSON walked, keys left out)."""
    for f in _text_fields(type(row)):
        yield from _strings(getattr(row, f.attname))


# --- the index -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Place:
    where: str
    seq: int | None
    row: models.Model
    event_id: int | None = None
    span_id: int | None = None
    replay_id: int | None = None


def _digests(strings: Iterable[str], scan: Scan) -> Counter[tuple[str, str]]:
    found: Counter[tuple[str, str]] = Counter()
    for text in strings:
        for d in scan(text):
            if d.kind in SUBJECT_KINDS:
                found[(d.kind, subject_digest(kind=d.kind, normalized=d.normalized))] += 1
    return found


def _tokens(
    session: AgentSession, places: Iterable[_Place], scan: Scan = pii.scan
) -> list[SubjectToken]:
    tokens = []
    for place in places:
        for (kind, digest), count in _digests(row_strings(place.row), scan).items():
            tokens.append(
                SubjectToken(
                    project_id=session.project_id,
                    session_id=session.pk,
                    kind=kind,
                    digest=digest,
                    where=place.where,
                    seq=place.seq,
                    event_id=place.event_id,
                    span_id=place.span_id,
                    replay_id=place.replay_id,
                    count=count,
                )
            )
    return tokens


def _session_places(
    session: AgentSession,
    events: Iterable[CompactionEvent] | None = None,
    probes: Iterable[Probe] | None = None,
    spans: Iterable[CompactionSpan] | None = None,
) -> Iterator[_Place]:
    """The places a pass may rewrite (raw messages are indexed from the pass's scan).
    ``events``, ``probes`` and ``spans`` (observed): the rows when the caller holds them,
    else read."""
    yield _Place(SubjectWhere.METADATA, None, session)
    if events is None:
        events = CompactionEvent.objects.filter(session=session).order_by("seq", "pk")
    for event in events:
        yield _Place(SubjectWhere.SUMMARY, event.seq, event, event_id=event.pk)
    if probes is None:
        probes = Probe.objects.filter(session=session).order_by("seq", "pk")
    for probe in probes:
        yield _Place(SubjectWhere.PROBE, probe.seq, probe)
    if spans is None:
        spans = CompactionSpan.objects.filter(session=session, replay__isnull=True)
    for span in spans:
        yield _Place(SubjectWhere.SPAN, span.seq, span, event_id=span.event_id, span_id=span.pk)


def _message_tokens(session: AgentSession, hits: Iterable[MessageHit]) -> list[SubjectToken]:
    found: Counter[tuple[int, int, str, str]] = Counter()
    for hit in hits:
        kind = hit.detection.kind
        if kind in SUBJECT_KINDS:
            digest = subject_digest(kind=kind, normalized=hit.detection.normalized)
            found[(hit.message_id, hit.seq, kind, digest)] += 1
    return [
        SubjectToken(
            project_id=session.project_id,
            session_id=session.pk,
            kind=kind,
            digest=digest,
            where=SubjectWhere.MESSAGE,
            seq=seq,
            message_id=message_id,
            count=count,
        )
        for (message_id, seq, kind, digest), count in found.items()
    ]


def _replay_places(run: ReplayRun) -> Iterator[_Place]:
    yield _Place(SubjectWhere.REPLAY, None, run, replay_id=run.pk)
    for span in CompactionSpan.objects.filter(replay=run).order_by("index"):
        yield _Place(SubjectWhere.REPLAY, span.seq, span, span_id=span.pk, replay_id=run.pk)


def subject_index_mark(session_id: int) -> int:
    """The pk of the last raw message of the session the index holds (0: none yet)."""
    mark = SubjectIndexMark.objects.filter(session_id=session_id).first()
    return mark.message_pk if mark is not None else 0


def subject_index_session(
    *,
    session: AgentSession,
    scan: Scan = pii.scan,
    scanned: MessageScan | None = None,
    events: Sequence[CompactionEvent] | None = None,
    probes: Sequence[Probe] | None = None,
    spans: Sequence[CompactionSpan] | None = None,
    rescan: bool = False,
) -> int:
    """Bring the index of a session's raw rows, summaries and observed spans up to date.

    Called by the analysis pass inside its transaction, after the observed spans are
    rewritten, with what the pass found in the new messages (``scanned``) and the events,
    probes and spans it holds. New messages are indexed once (raw messages never change,
    except by an erasure, which removes its own tokens); summaries, probes, metadata and
    observed spans, which a pass may rewrite, are indexed afresh. Returns how many index rows
    were written. ``rescan``: every message again (another detector), its tokens replaced."""
    mark, _ = SubjectIndexMark.objects.select_for_update().get_or_create(session=session)
    after_pk = 0 if rescan else mark.message_pk
    scanned = message_scan.messages_scan(session, after_pk=after_pk, scan=scan, scanned=scanned)
    tokens = _message_tokens(session, scanned.hits_after(after_pk))
    tokens += _tokens(session, _session_places(session, events, probes, spans), scan)
    observed = SubjectToken.objects.filter(session=session, replay__isnull=True)
    if rescan:
        observed.filter(where=SubjectWhere.MESSAGE, message_id__lte=scanned.last_pk).delete()
    observed.exclude(where=SubjectWhere.MESSAGE).delete()
    SubjectToken.objects.bulk_create(tokens, batch_size=1000)
    if scanned.last_pk > mark.message_pk:
        SubjectIndexMark.objects.filter(pk=mark.pk).update(message_pk=scanned.last_pk)
    return len(tokens)


def subject_index_replay(*, run: ReplayRun) -> int:
    """Rebuild the index of one replay (its run row and its spans)."""
    session = AgentSession.objects.get(pk=run.session_id)
    run = ReplayRun.objects.get(pk=run.pk)
    tokens = _tokens(session, _replay_places(run))
    SubjectToken.objects.filter(replay=run).delete()
    SubjectToken.objects.bulk_create(tokens, batch_size=1000)
    return len(tokens)


# --- finding and exporting -----------------------------------------------------------------


class PlaceOut(TypedDict):
    where: str
    seq: int | None
    count: int
    event_id: int | None
    span_id: int | None
    replay_id: int | None
    excerpts: list[str]


class SessionFound(TypedDict):
    session_id: int
    external_id: str
    places: list[PlaceOut]
    replays: list[int]
    findings: list[dict[str, Any]]


class SubjectReport(TypedDict):
    project: str
    kind: str
    masked: str
    sessions: list[SessionFound]
    totals: dict[str, int]


EXCERPT_CHARS = 40


def _excerpts(row: models.Model, subject: Subject) -> list[str]:
    """Context around each occurrence, with every detected identifier masked."""
    out = []
    for text in row_strings(row):
        detections = pii.scan(text)
        for d in _matching(detections, subject):
            start, end = max(0, d.start - EXCERPT_CHARS), min(len(text), d.end + EXCERPT_CHARS)
            # Never cut through another identifier: a cut one would escape the mask.
            for other in detections:
                if other.start < start < other.end:
                    start = other.start
                if other.start < end < other.end:
                    end = other.end
            inside = [
                _shifted(other, start)
                for other in detections
                if other.start >= start and other.end <= end
            ]
            out.append(pii.mask(text[start:end], inside))
    return out


def _matching(detections: Iterable[pii.Detection], subject: Subject) -> list[pii.Detection]:
    return [
        d
        for d in detections
        if d.kind == subject.kind
        and hmac.compare_digest(
            subject_digest(kind=d.kind, normalized=d.normalized), subject.digest
        )
    ]


def _row_of(token: SubjectToken) -> models.Model | None:
    if token.span_id is not None:
        return CompactionSpan.objects.filter(pk=token.span_id).first()
    if token.replay_id is not None:
        return ReplayRun.objects.filter(pk=token.replay_id).first()
    if token.event_id is not None:
        return CompactionEvent.objects.filter(pk=token.event_id).first()
    if token.seq is None:
        return AgentSession.objects.filter(pk=token.session_id).first()
    if token.message_id is not None:
        return Message.objects.filter(pk=token.message_id).first()
    if token.where == SubjectWhere.PROBE:
        return Probe.objects.filter(session_id=token.session_id, seq=token.seq).first()
    return AgentSession.objects.filter(pk=token.session_id).first()


def subject_lookup(
    *, project: Project, subject: Subject, by: Any, actor_name: str = ""
) -> SubjectReport:
    """:func:`subject_find` for a person: who looked a subject up is recorded (by kind and
    masked value, never the identifier)."""
    report = subject_find(project=project, subject=subject)
    audit.audit_record(
        actor=by,
        actor_name=actor_name,
        action=AuditAction.SUBJECT_FIND,
        project=project,
        target=f"subject:{subject.kind} {subject.masked}",
        detail={"sessions": len(report["sessions"])},
    )
    return report


def subject_find(*, project: Project, subject: Subject, excerpts: bool = True) -> SubjectReport:
    """Every place of the project that holds the subject's identifier, through the index."""
    tokens = (
        SubjectToken.objects.filter(project=project, digest=subject.digest, kind=subject.kind)
        .select_related("session")
        .order_by("session_id", "where", "seq", "pk")
    )
    by_session: dict[int, SessionFound] = {}
    totals: Counter[str] = Counter()
    scopes: dict[int, masking.NameScope] = {}
    for token in tokens:
        scope = scopes.setdefault(
            token.session_id,
            masking.NameScope(project_ids=[project.pk], session_id=token.session_id),
        )
        found = by_session.setdefault(
            token.session_id,
            SessionFound(
                session_id=token.session_id,
                # masked as every other page and export shows it: an id may hold the value
                external_id=masking.text_mask(token.session.external_id),
                places=[],
                replays=[],
                findings=[],
            ),
        )
        row = _row_of(token) if excerpts else None
        found["places"].append(
            PlaceOut(
                where=token.where,
                seq=token.seq,
                count=token.count,
                event_id=token.event_id,
                span_id=token.span_id,
                replay_id=token.replay_id,
                excerpts=[masking.names_mask(e, scope) for e in _excerpts(row, subject)]
                if row is not None
                else [],
            )
        )
        if token.replay_id is not None and token.replay_id not in found["replays"]:
            found["replays"].append(token.replay_id)
        totals[token.where] += token.count
    found_findings = Finding.objects.filter(
        session__project=project, kind=subject.kind, value_hash=subject.digest
    ).order_by("session_id", "where", "seq", "pk")
    for finding in found_findings:
        if finding.session_id not in by_session:
            continue  # the index is rebuilt after findings; a stale finding alone is not a place
        by_session[finding.session_id]["findings"].append(
            {
                "id": finding.pk,
                "kind": finding.kind,
                "where": finding.where,
                "seq": finding.seq,
                "masked": finding.masked,
                "status": finding.status,
                "copied_from_raw": finding.copied_from_raw,
            }
        )
        totals["findings"] += 1
    totals["sessions"] = len(by_session)
    return SubjectReport(
        project=project.name,
        kind=subject.kind,
        masked=subject.masked,
        sessions=list(by_session.values()),
        totals=dict(totals),
    )


def subject_sessions(*, project: Project, subject: Subject) -> list[AgentSession]:
    ids = set(
        SubjectToken.objects.filter(
            project=project, digest=subject.digest, kind=subject.kind
        ).values_list("session_id", flat=True)
    )
    return list(AgentSession.objects.filter(pk__in=ids).order_by("pk"))


_NOT_DIGITS = re.compile(r"[^0-9]")
_NOT_ALNUM = re.compile(r"[^0-9A-Z]")


def _may_hold(subject: Subject) -> Callable[[str], bool]:
    """A quick test that a text may hold the subject in any form: its digits (its letters and
    digits for a CNPJ, its lower case for an e-mail) contain the value's. Quick and loose: the
    eraser then finds the value itself, by the detector and by the forms seen."""
    if subject.kind == "email":
        email = subject.normalized.lower()
        return lambda text: email in text.lower()
    if subject.kind == "cnpj":
        alnum = _NOT_ALNUM.sub("", subject.normalized.upper())
        return lambda text: alnum in _NOT_ALNUM.sub("", text.upper())
    digits = _NOT_DIGITS.sub("", subject.normalized)
    if subject.kind == "phone":
        digits = digits.removeprefix("55")  # the national number: written with or without +55
    return lambda text: digits in _NOT_DIGITS.sub("", text)


# The raw rows of a session, read whole at erase time: the index is written by the analysis
# pass, so a session whose analysis failed or has not run yet is in no index.
_RAW_TEXT: tuple[tuple[type[models.Model], str, tuple[str, ...]], ...] = (
    (AgentSession, "pk", ("external_id", "title", "agent", "model", "metadata")),
    (Message, "session_id", ("content",)),
    (CompactionEvent, "session_id", ("summary", "error", "kept")),
    (Probe, "session_id", ("text", "check_hint")),
)


def sessions_holding(*, project: Project, subject: Subject) -> set[int]:
    """The sessions of ``project`` whose raw rows may hold the subject, read from the tables
    themselves, not from the index (which may be behind)."""
    may_hold = _may_hold(subject)
    found: set[int] = set()
    for model, session_field, columns in _RAW_TEXT:
        scope = "project" if model is AgentSession else "session__project"
        rows = model._default_manager.filter(**{scope: project}).values_list(
            session_field, *columns
        )
        for session_id, *values in rows.iterator(chunk_size=500):
            if session_id not in found and any(
                may_hold(text) for value in values for text in _strings(value)
            ):
                found.add(session_id)
    return found


@dataclass(frozen=True)
class ErasePreview:
    """What an erasure will change, said before it runs."""

    sessions: int
    outside_index: int
    other_rows: int  # deliveries, audit rows, experiments, saved filters holding it


def subject_erase_preview(*, project: Project, subject: Subject) -> ErasePreview:
    indexed = {s.pk for s in subject_sessions(project=project, subject=subject)}
    held = indexed | sessions_holding(project=project, subject=subject)
    may_hold = _may_hold(subject)
    other = sum(1 for row in _project_rows(project) if any(may_hold(t) for t in row_strings(row)))
    return ErasePreview(sessions=len(held), outside_index=len(held - indexed), other_rows=other)


def _request_record(
    *,
    project: Project,
    subject: Subject,
    action: str,
    by: Any,
    reason: str,
    result: dict[str, Any],
    by_name: str = "",
) -> SubjectRequest:
    # The request keeps the subject's keyed hash and masked form; a reason that names the
    # identifier itself ("erase 123.456.789-09") keeps it erased, here and in the audit row.
    reason = _eraser(subject, set())(reason)
    request = SubjectRequest.objects.create(
        project=project,
        kind=subject.kind,
        digest=subject.digest,
        masked=subject.masked,
        action=action,
        reason=reason,
        requested_by=by if getattr(by, "is_authenticated", False) else None,
        requested_by_name=by_name
        or (getattr(by, "get_username", lambda: "")() if by is not None else ""),
        result=result,
    )
    _audit(request)
    return request


def _audit(request: SubjectRequest) -> None:
    """One audit row per export or erasure, in the same transaction; never the identifier."""
    audit.audit_record(
        actor=request.requested_by,
        actor_name=request.requested_by_name,
        action=AuditAction.EXPORT
        if request.action == SubjectAction.EXPORT
        else AuditAction.ERASURE,
        project=request.project,
        target=f"subject:{request.kind} {request.masked}",
        reason=request.reason,
        detail={
            "subject_request": request.pk,
            "subject_digest": request.digest,
            "action": request.action,
            **request.result,
        },
    )


@transaction.atomic(durable=True)
def subject_export(
    *, project: Project, subject: Subject, by: Any, reason: str, by_name: str = ""
) -> SubjectReport:
    """The report of what was found, recorded as an export request. ``by_name`` names the
    operator when there is no user (a command: ``cli:<login>``), so the audit row says who."""
    report = subject_find(project=project, subject=subject)
    _request_record(
        project=project,
        subject=subject,
        action=SubjectAction.EXPORT,
        by=by,
        by_name=by_name,
        reason=reason,
        result={
            "sessions": [found["session_id"] for found in report["sessions"]],
            "rows": report["totals"],
        },
    )
    return report


# --- erasure -------------------------------------------------------------------------------


def lineage(session: AgentSession) -> Iterator[models.Model]:
    """The session and every row that deleting it would delete (everything derived).

    The collector loads related rows with their keys only; each model's rows are read again
    whole, a chunk at a time, rather than one deferred column per query."""
    collector = Collector(using=DEFAULT_DB_ALIAS)
    collector.collect([session])
    keys: dict[type[models.Model], set[Any]] = {}
    for model, instances in collector.data.items():
        keys.setdefault(model, set()).update(i.pk for i in instances)
    for queryset in collector.fast_deletes:
        keys.setdefault(queryset.model, set()).update(queryset.values_list("pk", flat=True))
    for model, pks in keys.items():
        ordered = sorted(pks)
        for start in range(0, len(ordered), 2000):
            chunk = ordered[start : start + 2000]
            yield from model._default_manager.filter(pk__in=chunk).order_by("pk")


def _eraser(subject: Subject, surfaces: set[str]) -> Callable[[str], str]:
    replacement = ERASED.format(kind=subject.kind)

    def erase(text: str) -> str:
        for d in sorted(_matching(pii.scan(text), subject), key=lambda d: -d.start):
            surfaces.add(text[d.start : d.end])
            text = text[: d.start] + replacement + text[d.end :]
        # A derived copy the detector cannot read in context (cut short, glued to other
        # text) still holds a surface form seen in the raw history, or the bare value.
        for surface in sorted(surfaces | {subject.normalized}, key=len, reverse=True):
            if surface and surface in text:
                text = text.replace(surface, replacement)
        return text

    return erase


def _row_erase(row: models.Model, erase: Callable[[str], str]) -> bool:
    changed = []
    for f in _text_fields(type(row)):
        old = getattr(row, f.attname)
        new = strings_rewrite(old, erase)
        if new != old:
            setattr(row, f.attname, new)
            changed.append(f.attname)
    if isinstance(row, AgentSession) and "external_id" in changed:
        row.external_id = f"erased-{row.pk}"
    if changed:
        type(row)._default_manager.filter(pk=row.pk).update(**{n: getattr(row, n) for n in changed})
    return bool(changed)


def _replays_requeue(session: AgentSession) -> list[int]:
    """Queue the session's replays again, to be rebuilt from the erased history.

    A running one is put back in the queue too: its worker read the history before the
    erasure, and finding its run no longer RUNNING it writes nothing (``replay_run_execute``
    finishes only the attempt it claimed)."""
    runs = list(
        ReplayRun.objects.filter(
            session=session,
            status__in=[ReplayStatus.DONE, ReplayStatus.FAILED, ReplayStatus.RUNNING],
        ).values_list("pk", flat=True)
    )
    ReplayRun.objects.filter(pk__in=runs).update(status=ReplayStatus.QUEUED, progress=0.0)
    for run_id in runs:
        outbox.outbox_add(kind=outbox.REPLAY_RUN_EXECUTE, args=[run_id])
    return runs


@transaction.atomic(durable=True)
def subject_erase(
    *,
    project: Project,
    subject: Subject,
    by: Any,
    reason: str,
    delete_sessions: bool = False,
    by_name: str = "",
) -> SubjectRequest:
    """Erase the subject's identifier from the project, following lineage.

    Anonymizes (replaces the identifier in raw messages, summaries, probes, metadata and
    every derived row, then rebuilds analysis and replays), or with ``delete_sessions``
    deletes each session that holds it. Returns the request record."""
    if not reason.strip():
        raise BadRequest("reason: required for an erasure")
    from sessions import services as session_services

    indexed = {s.pk for s in subject_sessions(project=project, subject=subject)}
    held = indexed | sessions_holding(project=project, subject=subject)
    sessions = list(AgentSession.objects.filter(pk__in=held).order_by("pk"))
    counts: Counter[str] = Counter()
    counts["sessions_found_outside_the_index"] = len(held - indexed)
    surfaces: set[str] = set()
    erase = _eraser(subject, surfaces)
    if delete_sessions:
        for session in sessions:
            session_services.session_delete(session=session, by=by, reason=reason)
        counts["sessions_deleted"] = len(sessions)
    else:
        for session in AgentSession.objects.select_for_update(no_key=True).filter(
            pk__in=[s.pk for s in sessions]
        ):
            # Raw rows first, so their surface forms are known when derived rows are erased.
            rewritten = []
            for row in sorted(lineage(session), key=lambda r: not _is_raw(r)):
                if _row_erase(row, erase):
                    counts[_row_label(row)] += 1
                    if isinstance(row, Message):
                        rewritten.append(row.pk)
            known_clean.messages_rewritten(session.pk, rewritten)
            search.messages_search_refresh(rewritten)
            counts["replays_requeued"] += len(_replays_requeue(session))
            services.analysis_request(session_id=session.pk)
            # A pass that read the history before now must not store what it derived from it.
            SessionAnalysis.objects.filter(session=session).update(
                erased_generation=F("requested_generation")
            )
        SubjectToken.objects.filter(project=project, digest=subject.digest).delete()
        # Findings of this value point at text that no longer holds it; the analysis pass
        # rescans only new messages, so they are removed here rather than left stale.
        counts["findings_removed"], _ = Finding.objects.filter(
            session__in=sessions, kind=subject.kind, value_hash=subject.digest
        ).delete()
        counts["sessions_anonymized"] = len(sessions)
    may_hold = _may_hold(subject)
    for row in _project_rows(project):
        if any(may_hold(text) for text in row_strings(row)) and _row_erase(row, erase):
            counts[_row_label(row)] += 1
    project.refresh_from_db(fields=["name"])  # the audit row below copies the name
    return _request_record(
        project=project,
        subject=subject,
        action=SubjectAction.DELETE if delete_sessions else SubjectAction.ANONYMIZE,
        by=by,
        by_name=by_name,
        reason=reason,
        result={
            "sessions": [s.pk for s in sessions],
            "rows": dict(counts),
        },
    )


# An erasure's counts name each model by the label it had before the alerts, privacy and team
# models left compaction and traces, so the requests recorded before and after the move read
# alike.
_LABEL_BEFORE_THE_MOVE = {
    "alerts.Alert": "compaction.Alert",
    "alerts.AlertEvent": "compaction.AlertEvent",
    "alerts.AlertSettings": "compaction.AlertSettings",
    "alerts.Webhook": "compaction.Webhook",
    "alerts.WebhookDelivery": "compaction.WebhookDelivery",
    "team.Comment": "compaction.Comment",
    "team.CommentRevision": "compaction.CommentRevision",
    "team.SavedFilter": "compaction.SavedFilter",
    "privacy.AuditEvent": "traces.AuditEvent",
    "privacy.Finding": "compaction.Finding",
    "privacy.SubjectIndexMark": "compaction.SubjectIndexMark",
    "privacy.SubjectRequest": "compaction.SubjectRequest",
    "privacy.SubjectToken": "compaction.SubjectToken",
}


def _row_label(row: models.Model) -> str:
    label = type(row)._meta.label
    return _LABEL_BEFORE_THE_MOVE.get(label, label)


def _is_raw(row: models.Model) -> bool:
    return isinstance(row, AgentSession | Message | CompactionEvent | Probe)
