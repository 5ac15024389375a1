"""Messages the read path may show without scanning them for personal data again.

Raw content is masked on the way out (``privacy/masking.py``): every string of every message a
page or the API shows is scanned, and on a long message page that scan was half the read. The
analysis pass has scanned the same strings already (its findings step), so it also records which
messages held nothing: a range of message pks it scanned with one detector version, and the pks
in that range that are flagged. A message in the range and not flagged is shown without a scan
of its strings. (Keys are still masked at read: the findings scan reads values only.)

What keeps that claim true:
- another detector (its code, the check digit libraries, Python) has another
  ``pii.DETECTOR_VERSION``, and a range recorded by an older one holds nothing;
- a message stored after the pass has a larger pk than the range (the ingest inserts a
  session's messages under its row lock, so their pks grow in commit order);
- a message in the range that the pass did not read (stored between two of its chunked reads
  of a long session) is flagged, found by listing the range's pks when the mark is written;
- content rewritten in place (a redaction, an erasure) is flagged when it is rewritten,
  whatever the detector would say of the new text;
- the flags are kept apart from the findings, which an erasure deletes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db import transaction

from compaction.models import SessionAnalysis
from privacy.detect import pii
from sessions.models import AgentSession, Message


@dataclass(frozen=True)
class CleanRange:
    """Messages with a pk in (``after_pk``, ``through_pk``] were scanned by ``detector``; those
    in ``flagged`` held personal data or were rewritten since."""

    detector: str = ""
    after_pk: int = 0
    through_pk: int = 0
    flagged: frozenset[int] = frozenset()

    def holds(self, pk: int) -> bool:
        """Whether the message ``pk`` is known to hold no personal data the detector finds."""
        return (
            self.detector != ""
            and self.detector == pii.DETECTOR_VERSION
            and self.after_pk < pk <= self.through_pk
            and pk not in self.flagged
        )

    def extended(
        self, *, detector: str, after_pk: int, through_pk: int, flagged: Iterable[int]
    ) -> CleanRange:
        """This range joined with a scan of (``after_pk``, ``through_pk``] by ``detector`` that
        flagged ``flagged``. Ranges join when the detector is the same and they touch;
        otherwise the new scan's range replaces this one."""
        touches = after_pk <= self.through_pk and self.after_pk <= through_pk
        if detector == self.detector and touches:
            return CleanRange(
                detector,
                min(after_pk, self.after_pk),
                max(through_pk, self.through_pk),
                self.flagged | frozenset(flagged),
            )
        return CleanRange(detector, after_pk, through_pk, frozenset(flagged))


def detector_of(scan: Callable[[str], list[pii.Detection]]) -> str:
    """The detector version of ``scan``: the engine's own scan or its memo. Any other function
    (a test's stand-in) has none, and a scan by it makes nothing known clean."""
    owner = getattr(scan, "__self__", None)
    if scan is pii.scan or (isinstance(owner, pii.ScanMemo) and scan == owner.scan):
        return pii.DETECTOR_VERSION
    return ""


def clean_range_of(analysis: SessionAnalysis) -> CleanRange:
    return CleanRange(
        analysis.pii_clean_detector,
        analysis.pii_clean_after_pk,
        analysis.pii_clean_through_pk,
        frozenset(analysis.pii_flagged_message_pks),
    )


def clean_range_record(
    locked: SessionAnalysis,
    *,
    detector: str,
    after_pk: int,
    through_pk: int,
    scanned: Iterable[int],
    flagged: Iterable[int],
    one_read: bool,
) -> None:
    """Join a scan of the messages in (``after_pk``, ``through_pk``] to ``locked``'s range and
    save it. Called in the transaction that holds the analysis row locked. ``scanned``: the pks
    the scan read; unless it read them all in ``one_read`` (one query), any other message in
    the range is flagged (it was stored between two of its queries)."""
    unread: Iterable[int] = []
    if not one_read and through_pk > after_pk:
        unread = (
            Message.objects.filter(
                session_id=locked.session_id, pk__gt=after_pk, pk__lte=through_pk
            )
            .exclude(pk__in=set(scanned))
            .values_list("pk", flat=True)
        )
    joined = clean_range_of(locked).extended(
        detector=detector,
        after_pk=after_pk,
        through_pk=through_pk,
        flagged={*flagged, *unread},
    )
    _store(locked, joined)


def _store(analysis: SessionAnalysis, clean: CleanRange) -> None:
    analysis.pii_clean_detector = clean.detector
    analysis.pii_clean_after_pk = clean.after_pk
    analysis.pii_clean_through_pk = clean.through_pk
    analysis.pii_flagged_message_pks = sorted(clean.flagged)
    analysis.save(
        update_fields=[
            "pii_clean_detector",
            "pii_clean_after_pk",
            "pii_clean_through_pk",
            "pii_flagged_message_pks",
        ]
    )


def messages_rewritten(session_id: int, pks: Iterable[int]) -> None:
    """Flag messages whose content was rewritten in place: shown again only after a scan."""
    flagged = set(pks)
    if not flagged:
        return
    with transaction.atomic():
        analysis = SessionAnalysis.objects.select_for_update().filter(session_id=session_id).first()
        if analysis is None:
            return  # never scanned: nothing is known clean
        clean = clean_range_of(analysis)
        _store(
            analysis,
            CleanRange(clean.detector, clean.after_pk, clean.through_pk, clean.flagged | flagged),
        )


def clean_range(session: AgentSession) -> CleanRange:
    """The session's known clean messages, for a read."""
    row = (
        SessionAnalysis.objects.filter(session=session)
        .values_list(
            "pii_clean_detector",
            "pii_clean_after_pk",
            "pii_clean_through_pk",
            "pii_flagged_message_pks",
        )
        .first()
    )
    if row is None:
        return CleanRange()
    detector, after_pk, through_pk, flagged = row
    return CleanRange(detector, after_pk, through_pk, frozenset(flagged))
