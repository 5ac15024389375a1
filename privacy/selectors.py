"""What the privacy pages and the other apps read about personal data findings. Never writes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Exists, Min, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from privacy.models import FINDING_PLACE, Finding, FindingLevel, FindingStatus, FindingWhere
from sessions.errors import NotFound
from sessions.models import AgentSession, Project, Role


def summary_personal_data(prefix: str = "") -> Q:
    """What counts as "personal data in a summary": a reviewer confirmed it, or it is still
    open and the detector was sure (a check digit or a pattern, not a name). ``prefix``
    reaches the findings from another model (``findings__`` from a session)."""
    return (
        Q(**{f"{prefix}where": FindingWhere.SUMMARY})
        & ~Q(**{f"{prefix}level": FindingLevel.INFO})
        & (
            Q(**{f"{prefix}status": FindingStatus.CONFIRMED})
            | Q(**{f"{prefix}status": FindingStatus.OPEN, f"{prefix}confidence": "high"})
        )
    )


def _open_personal_data() -> QuerySet[Finding]:
    return Finding.objects.filter(
        session=OuterRef("pk"), status=FindingStatus.OPEN, level=FindingLevel.FINDING
    )


def has_open_personal_data() -> Exists:
    """For a session query: it has personal data waiting for review (see below)."""
    return Exists(_open_personal_data())


def with_open_finding_counts(sessions: QuerySet[AgentSession]) -> QuerySet[AgentSession]:
    """Annotate ``open_personal_data``: how many distinct personal data values of each session
    wait for review (open findings, "info" ones left out). A count only, never a value; a
    subquery, so a list keeps its fixed number of queries."""
    open_values = (
        _open_personal_data()
        .order_by()
        .values("session")
        .annotate(n=Count("value_hash", distinct=True))
        .values("n")
    )
    return sessions.annotate(open_personal_data=Coalesce(Subquery(open_values), 0))


def session_findings(session: AgentSession) -> QuerySet[Finding]:
    return Finding.objects.filter(session=session).order_by("where", "seq", "pk")


def session_has_summary_personal_data(*, session_id: int) -> bool:
    """Whether a session's summaries hold confirmed or high-confidence open findings.

    The alerts rule `personal_data` fires from this.
    """
    return Finding.objects.filter(summary_personal_data(), session_id=session_id).exists()


def reviewer_projects(user: Any) -> QuerySet[Project]:
    """Projects where the user may review findings (privacy reviewer or admin)."""
    if not user.is_authenticated:
        return Project.objects.none()
    if getattr(user, "is_superuser", False):
        return Project.objects.all()
    return Project.objects.filter(
        memberships__user__pk=user.pk,
        memberships__role__in=[Role.PRIVACY_REVIEWER, Role.ADMIN],
    )


def finding_groups(findings: QuerySet[Finding]) -> QuerySet[Any, dict[str, Any]]:
    """One row per value at a place (``services.finding_occurrences``: the same kind and keyed
    hash in one message, summary or metadata, with the same status): the pk of its first
    finding and how many times it occurs there. ``finding_rows`` turns them into findings."""
    groups: QuerySet[Any, dict[str, Any]] = findings.values(
        *FINDING_PLACE, "seq", "status"
    ).annotate(first=Min("pk"), occurrences=Count("pk"))
    return groups


def finding_queue(
    *, projects: QuerySet[Project], filters: dict[str, Any]
) -> QuerySet[Any, dict[str, Any]]:
    """The review queue: findings of the given projects, filtered, newest sessions first,
    a value repeated at one place once (``finding_groups``)."""
    findings = Finding.objects.filter(session__project__in=projects)
    if project := filters.get("project"):
        findings = findings.filter(session__project_id=project)
    # What looks like personal data and is nobody's is listed only when asked for.
    findings = findings.filter(level=filters.get("level") or FindingLevel.FINDING)
    for field in ("kind", "where", "status", "summary_delta"):
        if value := filters.get(field):
            findings = findings.filter(**{field: value})
    return finding_groups(findings).order_by(
        "-session__updated_at", "session_id", "where", "seq", "first"
    )


def session_finding_rows(session: AgentSession, *, limit: int) -> list[FindingRow]:
    """A session's findings for its page, a value repeated at one place once."""
    found = Finding.objects.filter(session=session).exclude(level=FindingLevel.INFO)
    return finding_rows(finding_groups(found).order_by("where", "seq", "first")[:limit])


@dataclass(frozen=True)
class FindingRow:
    finding: Finding
    occurrences: int


def finding_rows(groups: Iterable[dict[str, Any]]) -> list[FindingRow]:
    """The first finding of each group and how many times it occurs, in the groups' order."""
    groups = list(groups)
    found = Finding.objects.select_related("session", "session__project", "span").in_bulk(
        [group["first"] for group in groups]
    )
    return [
        FindingRow(found[group["first"]], group["occurrences"])
        for group in groups
        if group["first"] in found
    ]


def finding_get(*, projects: QuerySet[Project], pk: int) -> Finding:
    finding = (
        Finding.objects.filter(session__project__in=projects, pk=pk)
        .select_related("session")
        .first()
    )
    if finding is None:
        raise NotFound(f"finding {pk} not found")
    return finding


def summary_delta_rows(*, event_id: int | None) -> list[Finding]:
    """The personal data and secrets of one compaction's summary, each value once, carried
    first, then reworded, then introduced (what the compaction page lists)."""
    if event_id is None:
        return []
    rows = Finding.objects.filter(
        event_id=event_id, where="summary", level=FindingLevel.FINDING
    ).order_by("summary_delta", "kind", "pk")
    seen: set[tuple[str, str]] = set()
    out: list[Finding] = []
    for row in rows:
        if (row.kind, row.value_hash) not in seen:
            seen.add((row.kind, row.value_hash))
            out.append(row)
    return out
