"""Personal data findings: the scan step of the analysis pass, and the detector of the
``personal_data`` alert rule.

Called by the analysis pass (compaction/pipeline.py); a reviewer's decisions and redactions
are in privacy/services.py, the reads in privacy/selectors.py. The detection rules are the
detector's (privacy/detect/pii.py).

A finding never stores the value it found: only a masked preview and a keyed hash
(HMAC-SHA256 of the normalized value with `masking.pii_key()`), so two findings, or a subject
search, can be compared without a plain-text copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from compaction.engine import alerts as alert_rules
from compaction.models import CompactionSpan, SessionAnalysis, SpanOrigin
from privacy import known_clean, masking, message_scan
from privacy.detect import person_names, pii
from privacy.message_scan import MessageScan, Scan
from privacy.models import Finding, FindingStatus, FindingWhere, KnownName, NamePart, SummaryDelta
from sessions import search
from sessions.models import AgentSession, CompactionEvent


def finding_value_hash(normalized: str) -> str:
    """The keyed hash stored for a normalized value (e.g. a CPF's eleven digits)."""
    return pii.value_hash(normalized, masking.pii_key())


def finding_masked(detection: pii.Detection, value_hash: str) -> str:
    """What a finding shows of its value: the masked preview; for a secret, its published
    prefix and length and a short keyed fingerprint (the head of the keyed hash), so a
    reviewer can tell two secrets apart, or match one they hold, without seeing either."""
    masked = pii.masked_preview(detection)
    if detection.kind == "secret":
        masked = f"{masked} #{value_hash[:8]}"
    return masked[:200]


def _finding(path: str, detection: pii.Detection, key: bytes, **where: Any) -> Finding:
    value_hash = pii.value_hash(detection.normalized, key)
    return Finding(
        kind=detection.kind,
        path=path[:300],
        masked=finding_masked(detection, value_hash),
        value_hash=value_hash,
        form_hash=pii.value_hash(detection.value, key),
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


def summary_delta(row: Finding, raw_forms: Sequence[tuple[int, str]]) -> str:
    """What a summary did with a value, from the raw findings of the same value before it
    ((seq, form hash) pairs): ``introduced`` when none came before, ``carried`` when one was
    written the same way (or stored before forms were recorded), else ``reworded``."""
    earlier = [form for seq, form in raw_forms if row.seq is not None and seq < row.seq]
    if not earlier:
        return SummaryDelta.INTRODUCED
    if any(form in ("", row.form_hash) for form in earlier):
        return SummaryDelta.CARRIED
    return SummaryDelta.REWORDED


def _known_names(session: AgentSession, detections: Iterable[pii.Detection]) -> list[KnownName]:
    """The name parts of the persons found for sure (a name at level finding, high confidence:
    a cue, an author line, a document beside it), by keyed hash: their first names are masked
    alone in this session, their surnames in the whole project."""
    rows: dict[tuple[str, str], KnownName] = {}
    for detection in detections:
        if detection.kind != "person_name" or detection.level != "finding":
            continue
        if detection.confidence != "high":
            continue
        parts = person_names.name_parts(detection.value)
        if parts is None:
            continue
        named = [(NamePart.FIRST, parts.first), *((NamePart.SURNAME, w) for w in parts.surnames)]
        for part, word in named:
            digest = masking.name_digest(word)
            rows[(part, digest)] = KnownName(
                project_id=session.project_id, session=session, part=part, digest=digest
            )
    return list(rows.values())


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

    derived_texts = [
        *(event.summary for event in events),
        *(text for _, text in pii.json_strings(session.metadata, "metadata")),
        session.external_id,
        session.agent,
        session.title,
    ]
    names = _known_names(
        session,
        [
            *(hit.detection for hit in scanned.hits_after(scanned_up_to)),
            *(d for text in derived_texts if text for d in scan(text)),
        ],
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
            KnownName.objects.filter(session=session).delete()  # found again by the new rules
        elif locked.pii_scanned_message_pk > scanned_up_to:  # a concurrent pass got there first
            done = locked.pii_scanned_message_pk
            message_rows = [r for r in message_rows if r.message_id and r.message_id > done]
        Finding.objects.bulk_create(message_rows)
        KnownName.objects.bulk_create(names, ignore_conflicts=True)

        derived = Finding.objects.filter(session=session).exclude(where=FindingWhere.MESSAGE)
        decided = _decisions(derived)
        derived.exclude(status=FindingStatus.REDACTED).delete()
        raw_forms: dict[str, list[tuple[int, str]]] = {}
        raw = Finding.objects.filter(session=session, where=FindingWhere.MESSAGE)
        for value_hash, seq, form_hash in raw.values_list("value_hash", "seq", "form_hash"):
            if seq is not None:
                raw_forms.setdefault(value_hash, []).append((seq, form_hash))
        for row in derived_rows:
            if row.where == FindingWhere.SUMMARY:
                row.summary_delta = summary_delta(row, raw_forms.get(row.value_hash, []))
            row.copied_from_raw = row.summary_delta in (SummaryDelta.CARRIED, SummaryDelta.REWORDED)
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
            if found.kind == "secret":
                continue  # the ``secret`` rule's
            status = decided.get(pii.value_hash(found.normalized, key))
            if status == FindingStatus.FALSE_POSITIVE:
                continue
            if found.confidence == "high" or status == FindingStatus.CONFIRMED:
                yield alert_rules.PersonalDataHit(found.kind, pii.masked_preview(found))

    return detect


def summary_secret_detector(*, session_id: int) -> alert_rules.PersonalDataDetector:
    """The detector behind the ``secret`` alert rule, for a session's summaries (observed or
    replayed): every secret at level finding, less what a reviewer marked a false positive.
    Hits come masked as their findings are (prefix, length, keyed fingerprint)."""
    rejected = set(
        Finding.objects.filter(
            session_id=session_id, kind="secret", status=FindingStatus.FALSE_POSITIVE
        ).values_list("value_hash", flat=True)
    )
    key = masking.pii_key()

    def detect(text: str) -> Iterable[alert_rules.PersonalDataHit]:
        for found in pii.scan(text):
            if found.kind != "secret" or found.level != "finding":
                continue
            value_hash = pii.value_hash(found.normalized, key)
            if value_hash not in rejected:
                yield alert_rules.PersonalDataHit("secret", finding_masked(found, value_hash))

    return detect


def session_secret_hits(*, session_id: int) -> tuple[alert_rules.SecretHit, ...]:
    """The secrets the findings step found in the session's messages, metadata and fields (the
    ``secret`` rule's evidence beside the summaries), less those a reviewer rejected; one hit
    per value and place."""
    rows = (
        Finding.objects.filter(session_id=session_id, kind="secret", level="finding")
        .exclude(where=FindingWhere.SUMMARY)
        .exclude(status=FindingStatus.FALSE_POSITIVE)
        .order_by("seq", "pk")
        .values_list("seq", "where", "masked")
        .distinct()
    )
    return tuple(alert_rules.SecretHit(seq, where, masked) for seq, where, masked in rows)
