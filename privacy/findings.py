"""Writes for personal data findings: the scan step of the analysis pass, review, redaction.

Called by the analysis pass (compaction/pipeline.py) for its scan step, and by the review
pages; the reads are in privacy/selectors.py. The detection rules are the detector's
(privacy/detect/pii.py).

A finding never stores the value it found: only a masked preview and a keyed hash
(HMAC-SHA256 of the normalized value with `masking.pii_key()`), so two findings, or a subject
search, can be compared without a plain-text copy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from compaction.engine import alerts as alert_rules
from compaction.models import CompactionSpan, SessionAnalysis, SpanOrigin
from privacy import audit, known_clean, masking, message_scan
from privacy.detect import pii
from privacy.message_scan import MessageScan, Scan
from privacy.models import FINDING_PLACE, AuditAction, Finding, FindingStatus, FindingWhere
from sessions import limits, search
from sessions.errors import BadRequest
from sessions.models import AgentSession, CompactionEvent, Message

REVIEW_STATUSES = (FindingStatus.CONFIRMED, FindingStatus.FALSE_POSITIVE, FindingStatus.OPEN)
REDACT_REASON_MIN_CHARS = 10


def finding_value_hash(normalized: str) -> str:
    """The keyed hash stored for a normalized value (e.g. a CPF's eleven digits)."""
    return pii.value_hash(normalized, masking.pii_key())


def _finding(path: str, detection: pii.Detection, key: bytes, **where: Any) -> Finding:
    return Finding(
        kind=detection.kind,
        path=path[:300],
        masked=pii.masked_preview(detection)[:200],
        value_hash=pii.value_hash(detection.normalized, key),
        confidence=detection.confidence,
        level=detection.level,
        **where,
    )


def _rows(
    strings: Iterable[tuple[str, str]], key: bytes, scan: Scan, **where: Any
) -> list[Finding]:
    return [_finding(path, d, key, **where) for path, text in strings for d in scan(text)]


def _identity(row: Finding) -> tuple[Any, ...]:
    return (row.where, row.message_id, row.event_id, row.path, row.kind, row.value_hash)


_DECISION_FIELDS = ("status", "reviewed_by", "reviewed_at")


def _decisions(findings: QuerySet[Finding]) -> dict[tuple[Any, ...], Finding]:
    """The review decisions (confirmed, false positive, redacted) among ``findings``."""
    identity = ("where", "message_id", "event_id", "path", "kind", "value_hash")
    decided = findings.exclude(status=FindingStatus.OPEN).only(*identity, *_DECISION_FIELDS)
    return {_identity(row): row for row in decided}


def _carry_over(rows: Iterable[Finding], decided: dict[tuple[Any, ...], Finding]) -> None:
    """Give each new row the decision a reviewer made on the same value at the same place."""
    for row in rows:
        previous = decided.get(_identity(row))
        if previous is not None and previous.status != FindingStatus.REDACTED:
            for name in _DECISION_FIELDS:
                setattr(row, name, getattr(previous, name))


def scan_stale(analysis: SessionAnalysis, detector: str = pii.DETECTOR_VERSION) -> bool:
    """Whether the session's messages were scanned by another detector than ``detector``
    (or before the detector was recorded): its message findings are then the old rules' and
    a full rescan replaces them. A scan with no version (a test's stand-in) never is."""
    return (
        detector != ""
        and analysis.pii_scanned_message_pk > 0
        and analysis.pii_clean_detector != detector
    )


def session_findings_scan(
    *,
    session_id: int,
    scan: Scan = pii.scan,
    scanned: MessageScan | None = None,
    session: AgentSession | None = None,
    analysis: SessionAnalysis | None = None,
    events: Sequence[CompactionEvent] | None = None,
    spans: Sequence[CompactionSpan] | None = None,
) -> int:
    """Scan a session for personal data and store its findings. Idempotent; returns the count.

    Raw messages are scanned once each (those past `pii_scanned_message_pk`: a re-analysis
    after a new batch scans only the new ones). Summaries and metadata are scanned afresh each
    time and replace their earlier findings; review decisions (confirmed, false positive)
    carry over to the same value at the same place, and redacted findings are kept as the
    record of what was rewritten. ``scan`` is the detector; ``scanned`` is what the analysis
    pass already found in the new messages (it reads them once for all its steps).
    ``session``, ``analysis``, ``events`` and observed ``spans``: the rows when the caller
    (the analysis pass) holds them, else read.
    """
    if session is None:
        session = AgentSession.objects.get(pk=session_id)
    if analysis is None:
        analysis, _ = SessionAnalysis.objects.get_or_create(session=session)
    if events is None:
        events = list(CompactionEvent.objects.filter(session=session).order_by("seq", "pk"))
    if spans is None:
        spans = list(CompactionSpan.objects.filter(session=session, origin=SpanOrigin.OBSERVED))
    key = masking.pii_key()
    detector = known_clean.detector_of(scan)
    rescan = scan_stale(analysis, detector)
    scanned_up_to = 0 if rescan else analysis.pii_scanned_message_pk
    scanned = message_scan.messages_scan(
        session, after_pk=scanned_up_to, scan=scan, scanned=scanned
    )
    message_rows = [
        _finding(
            hit.path,
            hit.detection,
            key,
            session=session,
            where=FindingWhere.MESSAGE,
            seq=hit.seq,
            message_id=hit.message_id,
        )
        for hit in scanned.hits_after(scanned_up_to)
    ]
    last_pk = max(scanned.last_pk, scanned_up_to)

    span_of_event = {span.event_id: span for span in spans}
    derived_rows: list[Finding] = []
    for event in events:
        derived_rows += _rows(
            [("summary", event.summary)],
            key,
            scan,
            session=session,
            where=FindingWhere.SUMMARY,
            seq=event.seq,
            event=event,
            span=span_of_event.get(event.pk),
        )
    derived_rows += _rows(
        pii.json_strings(session.metadata, "metadata"),
        key,
        scan,
        session=session,
        where=FindingWhere.METADATA,
        seq=None,
    )
    # The session's own fields are a client's text too: an id that holds a customer's CPF.
    derived_rows += _rows(
        [
            (name, value)
            for name in ("external_id", "agent", "model", "title")
            if (value := getattr(session, name))
        ],
        key,
        scan,
        session=session,
        where=FindingWhere.SESSION,
        seq=None,
    )

    search.search_texts_store(
        session=session,
        messages={pk: scanned.search_texts[pk] for pk in scanned.pks_after(scanned_up_to)},
        events=events,
        detect=scan,
    )
    with transaction.atomic():
        locked = SessionAnalysis.objects.select_for_update().get(pk=analysis.pk)
        if rescan:
            # The old rules' findings in the messages scanned now give way to the new rules'
            # (a reviewer's decision stays with the same value at the same place; redacted
            # findings stay as the record of what was rewritten).
            old_rules = Finding.objects.filter(
                session=session, where=FindingWhere.MESSAGE, message_id__lte=last_pk
            )
            _carry_over(message_rows, _decisions(old_rules))
            old_rules.exclude(status=FindingStatus.REDACTED).delete()
        elif locked.pii_scanned_message_pk > scanned_up_to:  # a concurrent pass got there first
            done = locked.pii_scanned_message_pk
            message_rows = [r for r in message_rows if r.message_id and r.message_id > done]
        Finding.objects.bulk_create(message_rows)

        derived = Finding.objects.filter(session=session).exclude(where=FindingWhere.MESSAGE)
        decided = _decisions(derived)
        derived.exclude(status=FindingStatus.REDACTED).delete()
        first_raw_seq: dict[str, int] = {}
        raw = Finding.objects.filter(session=session, where=FindingWhere.MESSAGE)
        for value_hash, seq in raw.values_list("value_hash", "seq"):
            if seq is not None and seq < first_raw_seq.get(value_hash, seq + 1):
                first_raw_seq[value_hash] = seq
        for row in derived_rows:
            earlier = first_raw_seq.get(row.value_hash)
            row.copied_from_raw = (
                row.where == FindingWhere.SUMMARY
                and earlier is not None
                and row.seq is not None
                and earlier < row.seq
            )
        _carry_over(derived_rows, decided)
        Finding.objects.bulk_create(derived_rows)
        locked.pii_scanned_message_pk = max(last_pk, locked.pii_scanned_message_pk)
        locked.save(update_fields=["pii_scanned_message_pk"])
        known_clean.clean_range_record(
            locked,
            detector=detector,
            after_pk=scanned_up_to,
            through_pk=last_pk,
            scanned=scanned.pks_after(scanned_up_to),
            flagged={hit.message_id for hit in scanned.hits_after(scanned_up_to)},
            one_read=scanned.reads <= 1,
        )
    return Finding.objects.filter(session=session).count()


def finding_occurrences(finding: Finding) -> QuerySet[Finding]:
    """The finding and its repeats: the same value of the same kind in the same message,
    summary or metadata (``FINDING_PLACE``)."""
    # None matches NULL: a summary has no message, the metadata neither.
    return Finding.objects.filter(**{name: getattr(finding, name) for name in FINDING_PLACE})


def finding_review(*, finding: Finding, status: str, user: Any) -> Finding:
    """Confirm a finding, mark it a false positive, or reopen it, with its repeats."""
    if status not in REVIEW_STATUSES:
        raise BadRequest(f"status: must be one of {', '.join(REVIEW_STATUSES)}")
    if finding.status == FindingStatus.REDACTED:
        raise BadRequest("status: a redacted finding is final")
    finding.status = status
    finding.reviewed_by = user if getattr(user, "is_authenticated", False) else None
    finding.reviewed_at = timezone.now()
    # A false positive silences the personal data alert for that value: who decided is kept.
    session = AgentSession.objects.select_related("project").get(pk=finding.session_id)
    audit.audit_record(
        actor=user,
        action=AuditAction.REVIEW,
        project=session.project,
        target=f"finding:{finding.pk}",
        detail={"status": status, "kind": finding.kind, "where": finding.where, "seq": finding.seq},
    )
    finding_occurrences(finding).exclude(status=FindingStatus.REDACTED).update(
        status=finding.status, reviewed_by=finding.reviewed_by, reviewed_at=finding.reviewed_at
    )
    return finding


@transaction.atomic
def finding_redact(*, finding: Finding, user: Any, reason: str) -> Finding:
    """Replace the finding's value by its mask where it was found. Rewrites stored text, so
    it needs a reason, kept in the audit log.

    This is the one place where Sawtooth rewrites raw data: the value is re-found by its keyed
    hash in the message content, the summary (the event and its observed span) or the session
    metadata, and every occurrence of it there is masked (`[cpf ***.***.***-25]`).
    """
    if len(reason.strip()) < REDACT_REASON_MIN_CHARS:
        raise BadRequest(
            f"reason: required to redact, at least {REDACT_REASON_MIN_CHARS} characters"
        )
    limits.text_check(reason.strip(), limit=limits.REDACT_REASON_MAX, field="reason")
    key = masking.pii_key()

    def same_value(detection: pii.Detection) -> bool:
        return detection.kind == finding.kind and (
            pii.value_hash(detection.normalized, key) == finding.value_hash
        )

    if finding.where == FindingWhere.MESSAGE and finding.message_id is not None:
        # NO KEY: the findings step holds a KEY SHARE lock on it while it holds the analysis.
        message = Message.objects.select_for_update(no_key=True).get(pk=finding.message_id)
        message.content = pii.mask_json(message.content, only=same_value)
        message.search_text = search.message_search_text(message.content)
        message.save(update_fields=["content", "search_text"])
        known_clean.messages_rewritten(message.session_id, [message.pk])
    elif finding.where == FindingWhere.SUMMARY and finding.event_id is not None:
        event = CompactionEvent.objects.select_for_update().get(pk=finding.event_id)
        event.summary = _mask_text(event.summary, same_value)
        event.search_text = search.summary_search_text(event.summary)
        event.save(update_fields=["summary", "search_text"])
        for span in CompactionSpan.objects.filter(event=event):
            span.summary = _mask_text(span.summary, same_value)
            span.summary_sections = pii.mask_json(span.summary_sections, only=same_value)
            span.save(update_fields=["summary", "summary_sections"])
    elif finding.where == FindingWhere.METADATA:
        session = AgentSession.objects.select_for_update(no_key=True).get(pk=finding.session_id)
        session.metadata = pii.mask_json(session.metadata, only=same_value)
        session.search_text = search.session_search_text(session)
        session.save(update_fields=["metadata", "search_text"])
    else:
        raise BadRequest("finding: it no longer points at stored text")
    finding_occurrences(finding).update(
        status=FindingStatus.REDACTED,
        reviewed_by=user if getattr(user, "is_authenticated", False) else None,
        reviewed_at=timezone.now(),
    )
    finding.refresh_from_db()
    session = AgentSession.objects.select_related("project").get(pk=finding.session_id)
    audit.audit_record(
        actor=user,
        action=AuditAction.ERASURE,
        project=session.project,
        target=f"finding:{finding.pk}",
        reason=reason.strip(),
        detail={"kind": finding.kind, "where": finding.where, "seq": finding.seq},
    )
    return finding


def _mask_text(text: str, only: Callable[[pii.Detection], bool]) -> str:
    return pii.mask(text, [d for d in pii.scan(text) if only(d)])


def summary_personal_data_detector(*, session_id: int) -> alert_rules.PersonalDataDetector:
    """The detector behind the ``personal_data`` alert rule, for a session's summaries
    (observed or replayed): what the detectors are sure of (check digits, patterns) plus what a
    reviewer confirmed, less what a reviewer marked a false positive. Hits come masked."""
    decided = dict(
        Finding.objects.filter(
            session_id=session_id,
            status__in=(FindingStatus.CONFIRMED, FindingStatus.FALSE_POSITIVE),
        ).values_list("value_hash", "status")
    )
    key = masking.pii_key()

    def detect(text: str) -> Iterable[alert_rules.PersonalDataHit]:
        for found in pii.scan(text):
            if found.level != "finding":
                continue  # nobody's: a role mailbox, a public resolver, an example domain
            status = decided.get(pii.value_hash(found.normalized, key))
            if status == FindingStatus.FALSE_POSITIVE:
                continue
            if found.confidence == "high" or status == FindingStatus.CONFIRMED:
                yield alert_rules.PersonalDataHit(found.kind, pii.masked_preview(found))

    return detect
