"""Writes of the review pages: a reviewer's decision on a finding, and a redaction.

The scan that makes findings is the analysis pass's step (privacy/findings.py); the reads are
in privacy/selectors.py. Each write is recorded in the audit log (privacy/audit.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from compaction.models import CompactionSpan
from privacy import audit, known_clean, masking
from privacy.detect import pii
from privacy.models import FINDING_PLACE, AuditAction, Finding, FindingStatus, FindingWhere
from sessions import limits, search
from sessions.errors import BadRequest
from sessions.models import AgentSession, CompactionEvent, Message

REVIEW_STATUSES = (FindingStatus.CONFIRMED, FindingStatus.FALSE_POSITIVE, FindingStatus.OPEN)
REDACT_REASON_MIN_CHARS = 10


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
