"""Team's reads: a session's or a span's comments, a user's saved filters and the link each
one opens, a project's members, and the marks on the product's verdicts (per fact and alert,
the project's precision per verdict kind, the JSON Lines export). Selectors never write.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict
from urllib.parse import parse_qsl, urlencode

from django.db.models import Count, Q, QuerySet
from django.urls import reverse

from alerts.models import Alert, AlertRule
from compaction.models import CompactionSpan, SpanOrigin
from privacy import masking
from privacy.detect import pii
from privacy.models import FINDING_PLACE, Finding, FindingStatus
from sessions.models import AgentSession, Membership, Project
from team.models import Comment, FactVerdict, Mark, SavedFilter, VerdictKind, VerdictMark

# The list's own parameters; anything else in a saved query string is dropped.
FILTER_KEYS = (
    "q",
    "project",
    "agent",
    "model",
    "started_after",
    "started_before",
    "period",
    "compacted",
    "min_fill",
    "problems",
    "sort",
)


def comments_for(*, session: AgentSession, span: CompactionSpan | None = None) -> QuerySet[Comment]:
    """A session's own comments (span=None) or one span's, oldest first, history joined."""
    return (
        Comment.objects.filter(session=session, span=span)
        .select_related("author")
        .prefetch_related("revisions")
    )


def filter_query_clean(query: str) -> str:
    """The list parameters of a query string, in a stable order; page and unknowns dropped,
    and a search for a person's identifier too (refused by search, never put in a link).

    >>> filter_query_clean("page=3&agent=billing&evil=1&period=7d")
    'agent=billing&period=7d'
    """
    pairs = [
        (k, v)
        for k, v in parse_qsl(query.lstrip("?"))
        if k in FILTER_KEYS and v and not (k == "q" and masking.query_refusal(v))
    ]
    return urlencode(sorted(pairs, key=lambda kv: FILTER_KEYS.index(kv[0])))


def saved_filters_for(*, user: Any) -> QuerySet[SavedFilter]:
    return SavedFilter.objects.filter(user=user)


def memberships_for(*, project: Project) -> QuerySet[Membership]:
    """The project's members by username, each with its user."""
    return project.memberships.select_related("user").order_by("user__username")


# ---- verdict feedback ------------------------------------------------------------------


def fact_key(text: str) -> str:
    """What names a fact in a form, a mark and an anchor: a keyed hash of its text, so no
    fact (which may quote personal data) travels in a page's markup or a URL."""
    return pii.value_hash(text, masking.pii_key())


@dataclass(frozen=True)
class Review:
    """How the privacy review marked a session's personal data: the mark of its alert."""

    confirmed: int
    false_positive: int
    open: int


@dataclass(frozen=True)
class VerdictMarks:
    """One verdict's marks as its page shows them: the counts, the reader's own mark and
    note, and where a new mark is posted (empty when the reader may not mark)."""

    anchor: str
    verdict: str
    right: int
    wrong: int
    mine: str
    note: str
    action: str
    fact_key: str = ""
    review: Review | None = None
    should_be: str = ""  # the reader's own wrong mark: the verdict it says is right

    @property
    def should_be_choices(self) -> list[tuple[str, str]]:
        """What a wrong mark may say the verdict should have been: the other four."""
        return [(v, label) for v, label in FactVerdict.choices if v != self.verdict]


def _counts(marks: Sequence[VerdictMark], user: Any) -> tuple[int, int, VerdictMark | None]:
    right = sum(1 for m in marks if m.mark == Mark.RIGHT)
    mine = next((m for m in marks if m.author_id == getattr(user, "pk", None)), None)
    return right, len(marks) - right, mine


def item_verdict(item: Mapping[str, Any]) -> VerdictKind:
    """A stored fact's verdict: one of the five, or kept / lost for items stored before them."""
    verdict = item.get("verdict") or ("kept" if item.get("kept") else "lost")
    return VerdictKind(verdict)


def fact_marks_for(
    *, span: CompactionSpan, retention: Sequence[Any], user: Any, can_mark: bool
) -> list[VerdictMarks | None]:
    """Beside each retention item of ``span`` (in that order), its marks; None for every item
    of a replayed compaction, whose verdicts are a simulation's and take no marks.

    A mark counts for the verdict it judged: after a new analysis turns "lost" into "kept",
    the earlier marks stay in the project's figures but are not shown as this verdict's."""
    if span.origin != SpanOrigin.OBSERVED:
        return [None for _ in retention]
    stored: dict[tuple[str, str], list[VerdictMark]] = {}
    for m in VerdictMark.objects.filter(session_id=span.session_id, seq=span.seq, alert=None):
        stored.setdefault((m.fact_hash, m.kind), []).append(m)
    action = reverse("team:fact-mark", args=[span.session_id, span.seq])
    rows: list[VerdictMarks | None] = []
    for item in retention:
        key = fact_key(str(item["text"]))
        verdict = item_verdict(item)
        right, wrong, mine = _counts(stored.get((key, verdict), []), user)
        rows.append(
            VerdictMarks(
                anchor=f"fact-{key[:16]}",
                verdict=verdict,
                right=right,
                wrong=wrong,
                mine=mine.mark if mine else "",
                note=mine.note if mine else "",
                action=action if can_mark else "",
                fact_key=key,
                should_be=mine.should_be if mine else "",
            )
        )
    return rows


def fact_marks_one(
    *, span: CompactionSpan, key: str, user: Any, can_mark: bool
) -> VerdictMarks | None:
    """The marks of the one fact of ``span`` named by ``key`` (what a click re-renders)."""
    retention = [i for i in span.retention if fact_key(str(i.get("text"))) == key]
    found = fact_marks_for(span=span, retention=retention[:1], user=user, can_mark=can_mark)
    return found[0] if found else None


def _review(alert: Alert) -> Review:
    """The review of the personal data found in the session's summaries, one row per place
    as the review queue shows them."""
    places = (
        Finding.objects.filter(session_id=alert.session_id, where="summary", level="finding")
        .order_by()
        .values(*FINDING_PLACE, "status")
        .distinct()
    )
    counts = Counter(str(row["status"]) for row in places)
    return Review(
        confirmed=counts[FindingStatus.CONFIRMED] + counts[FindingStatus.REDACTED],
        false_positive=counts[FindingStatus.FALSE_POSITIVE],
        open=counts[FindingStatus.OPEN],
    )


def alert_marks_for(*, alert: Alert, user: Any, can_mark: bool) -> VerdictMarks:
    """An alert's marks; for a personal-data alert, its findings' review instead."""
    marks = list(VerdictMark.objects.filter(alert=alert))
    right, wrong, mine = _counts(marks, user)
    personal = alert.rule == AlertRule.PERSONAL_DATA
    return VerdictMarks(
        anchor="alert-marks",
        verdict=VerdictKind.ALERT,
        right=right,
        wrong=wrong,
        mine=mine.mark if mine else "",
        note=mine.note if mine else "",
        action=reverse("team:alert-mark", args=[alert.pk]) if can_mark and not personal else "",
        review=_review(alert) if personal else None,
    )


@dataclass(frozen=True)
class PrecisionRow:
    """``GET /api/v1/feedback/summary``'s item: how often a verdict kind was marked right."""

    kind: str
    marked: int
    right: int
    wrong: int
    precision: float | None  # right / marked; None when nothing is marked


def _row(kind: str, right: int, wrong: int) -> PrecisionRow:
    marked = right + wrong
    return PrecisionRow(kind, marked, right, wrong, round(right / marked, 4) if marked else None)


# The kinds the summary lists, in order; "personal_data" is the privacy review's decisions.
SUMMARY_KINDS = (VerdictKind.LOST, VerdictKind.KEPT, VerdictKind.ALERT)
# The verdicts added with the five (DESIGN.md, "Verdicts"), listed after the review's row so
# the first four items stay where they were.
LATER_KINDS = (VerdictKind.PARAPHRASED, VerdictKind.MENTIONED, VerdictKind.RELOADED)
PERSONAL_DATA = "personal_data"


def feedback_summary(*, project: Project) -> list[PrecisionRow]:
    """The project's precision per verdict kind from its members' marks (lost, kept, alert),
    then the personal-data findings its reviewers confirmed or called false positives (one
    per place, as the review queue counts them)."""
    counted: dict[str, tuple[int, int]] = {
        str(row["kind"]): (int(row["right"]), int(row["wrong"]))
        for row in VerdictMark.objects.filter(session__project=project)
        .order_by()
        .values("kind")
        .annotate(
            right=Count("pk", filter=Q(mark=Mark.RIGHT)),
            wrong=Count("pk", filter=Q(mark=Mark.WRONG)),
        )
    }
    rows = [_row(kind, *counted.get(kind, (0, 0))) for kind in SUMMARY_KINDS]
    places = (
        Finding.objects.filter(session__project=project, level="finding")
        .exclude(status=FindingStatus.OPEN)
        .order_by()
        .values(*FINDING_PLACE, "status")
        .distinct()
    )
    review = Counter(str(row["status"]) for row in places)
    rows.append(
        _row(
            PERSONAL_DATA,
            review[FindingStatus.CONFIRMED] + review[FindingStatus.REDACTED],
            review[FindingStatus.FALSE_POSITIVE],
        )
    )
    rows += [_row(kind, *counted.get(kind, (0, 0))) for kind in LATER_KINDS]
    return rows


def marks_recent(*, project: Project, limit: int = 50) -> QuerySet[VerdictMark]:
    """The project's latest marks, newest first, with what their rows link to."""
    return VerdictMark.objects.filter(session__project=project).select_related(
        "session", "alert", "author"
    )[:limit]


class FeedbackRecord(TypedDict):
    """One line of the feedback export (DESIGN.md): what ``benchmarks/retention.py
    --feedback`` reads. ``verdict`` is what the product said: for a fact its verdict and the
    fact's kind ("lost constraint"), for an alert its rule; ``fact`` is the fact's text or
    the alert's title, masked like every page shows it. ``should_be``: on a wrong mark of a
    fact, the verdict the member says is right (else null), so each line is a label in the
    five words."""

    kind: str
    session: str
    seq: int | None
    fact: str
    verdict: str
    mark: str
    note: str
    should_be: str | None


def _alert_seq(alert: Alert) -> int | None:
    evidence = alert.evidence if isinstance(alert.evidence, dict) else {}
    spans = evidence.get("spans") or []
    seq = spans[0] if spans else evidence.get("seq")
    return seq if isinstance(seq, int) else None


def feedback_record(mark: VerdictMark) -> FeedbackRecord:
    if mark.alert is not None:
        fact, verdict, seq = mark.alert.title, str(mark.alert.rule), _alert_seq(mark.alert)
    else:
        fact, verdict, seq = mark.fact, f"{mark.kind} {mark.fact_kind}".strip(), mark.seq
    return FeedbackRecord(
        kind=mark.kind,
        session=masking.text_mask(mark.session.external_id),
        seq=seq,
        fact=masking.text_mask(fact),
        verdict=verdict,
        mark=mark.mark,
        note=masking.text_mask(mark.note),
        should_be=mark.should_be or None,
    )


def feedback_records(*, project: Project) -> Iterator[FeedbackRecord]:
    """Every mark of the project, oldest first, as export lines."""
    marks = (
        VerdictMark.objects.filter(session__project=project)
        .select_related("session", "alert")
        .order_by("created_at", "pk")
    )
    for mark in marks.iterator(chunk_size=500):
        yield feedback_record(mark)


def feedback_lines(*, project: Project) -> Iterator[str]:
    """The export's JSON Lines: one record a line, UTF-8 as written."""
    for record in feedback_records(project=project):
        yield json.dumps(record, ensure_ascii=False) + "\n"
