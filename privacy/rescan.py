"""A detector change reaches the sessions scanned before it.

The analysis pass scans each raw message once, so a session's message findings and its subject
index are the work of the detector (``pii.DETECTOR_VERSION``) that was current when they were
stored. When the rules change (fewer false positives, a new kind), a session that gets a new
batch is rescanned by its next pass (``findings.scan_stale``); the others are rescanned here, a
few per beat on the replays queue so new traces are never kept waiting, or all at once with
``manage.py scan_personal_data``. A rescan keeps the reviewers' decisions on values it finds
again.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from django.conf import settings
from django.db import DatabaseError, transaction

from compaction.models import SessionAnalysis
from privacy import findings, message_scan, subjects
from privacy.detect import pii

logger = logging.getLogger(__name__)


def session_rescan(*, session_id: int) -> bool:
    """Scan a session's messages again when another detector scanned them: its findings and
    its subject index. False when they are current (or the session is gone)."""
    row = SessionAnalysis.objects.select_related("session").filter(session_id=session_id).first()
    if row is None or not findings.scan_stale(row):
        return False
    session = row.session
    memo = pii.ScanMemo()
    scanned = message_scan.messages_scan(session, after_pk=0, scan=memo.scan)
    with transaction.atomic():
        # The order of the analysis pass: its row, then the index mark.
        locked = SessionAnalysis.objects.select_for_update().filter(pk=row.pk).first()
        if locked is None or not findings.scan_stale(locked):
            return False  # a pass rescanned it meanwhile
        subjects.subject_index_session(
            session=session, scan=memo.scan, scanned=scanned, rescan=True
        )
    findings.session_findings_scan(
        session_id=session_id, scan=memo.scan, scanned=scanned, session=session, analysis=locked
    )
    return True


def stale_sessions(*, limit: int | None = None) -> Iterable[int]:
    """The sessions scanned by another detector, most recently updated first."""
    stale = (
        SessionAnalysis.objects.filter(pii_scanned_message_pk__gt=0)
        .exclude(pii_clean_detector=pii.DETECTOR_VERSION)
        .order_by("-session__updated_at", "-session_id")
        .values_list("session_id", flat=True)
    )
    return stale if limit is None else stale[:limit]


def stale_sessions_rescan(*, limit: int | None = None) -> int:
    """Rescan up to ``limit`` (default FINDINGS_RESCAN_BATCH) stale sessions; how many were.
    A session the detector fails on is logged and left for the next sweep; the others go on."""
    batch = settings.FINDINGS_RESCAN_BATCH if limit is None else limit
    done = 0
    for session_id in list(stale_sessions(limit=batch)):
        try:
            done += session_rescan(session_id=session_id)
        except DatabaseError:
            raise  # infrastructure: the task retries
        except Exception:
            logger.exception("personal data rescan of session %s failed", session_id)
    return done
