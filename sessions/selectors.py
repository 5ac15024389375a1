"""Reads. Every query is scoped to a project or to the projects a user belongs to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Count, F, Max, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from privacy import masking
from privacy import selectors as privacy_selectors
from privacy.selectors import summary_personal_data
from sessions import search, wire
from sessions.errors import NotFound
from sessions.filters import PERIODS, SORTS
from sessions.models import AgentSession, Message, Project


def projects_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    if getattr(user, "is_superuser", False):
        return Project.objects.all()
    return Project.objects.filter(memberships__user__pk=user.pk)


def session_list(*, projects: QuerySet[Project]) -> QuerySet[AgentSession]:
    return AgentSession.objects.filter(project__in=projects).select_related("project")


def _day(moment: Any, end: bool = False) -> datetime:
    return timezone.make_aware(datetime.combine(moment, time.max if end else time.min))


def session_search(
    *, projects: QuerySet[Project], filters: dict[str, Any]
) -> QuerySet[AgentSession]:
    """The session list page: filtered, sorted, with what each row shows already joined.

    ``filters`` without ``sort`` also scope the content search page (``sessions/search.py``)."""
    sessions = session_list(projects=projects).select_related("analysis")
    if project := filters.get("project"):
        sessions = sessions.filter(project_id=project)
    if q := filters.get("q"):
        sessions = search.sessions_matching(sessions, q)
    elif not filters.get("subagents"):
        # Subagents sit under their parent; a search finds them wherever they are.
        sessions = sessions.filter(parent__isnull=True)
    for facet in ("agent", "model"):
        if value := filters.get(facet):
            raw = facet_resolve(projects=projects, field=facet, value=value)
            sessions = sessions.filter(**{facet: raw}) if raw else sessions.none()
    if after := filters.get("started_after"):
        sessions = sessions.filter(started_at__gte=_day(after))
    if before := filters.get("started_before"):
        sessions = sessions.filter(started_at__lte=_day(before, end=True))
    if period := filters.get("period"):  # relative range: "last 24 h / 7 d / 30 d"
        sessions = sessions.filter(updated_at__gte=timezone.now() - PERIODS[period])
    if filters.get("compacted") == "yes":
        sessions = sessions.filter(compaction_count__gt=0)
    elif filters.get("compacted") == "no":
        sessions = sessions.filter(compaction_count=0)
    if (min_fill := filters.get("min_fill")) is not None:
        sessions = sessions.filter(analysis__peak_fill__gte=min_fill / 100)
    problem = filters.get("problems")
    if problem == "failed":
        sessions = sessions.filter(analysis__failed_splices__gt=0)
    elif problem == "lost":
        sessions = sessions.filter(analysis__lost_facts__gt=0)
    elif problem == "lost_files":
        sessions = sessions.filter(analysis__lost_files_only__gt=0)
    elif problem == "pii_open":
        sessions = sessions.filter(privacy_selectors.has_open_personal_data())
    elif problem == "overflow":
        # A call over the window; an API refusal of a too-long prompt is the overflow alert's.
        sessions = sessions.filter(analysis__peak_fill__gt=1)
    elif problem == "orphans":
        sessions = sessions.exclude(analysis__orphans=[]).filter(analysis__isnull=False)
    elif problem == "pii":
        # The alert rule's own test, on the session's findings (one join: the same finding).
        sessions = sessions.filter(summary_personal_data("findings__")).distinct()
    sort = filters.get("sort") or "-updated"
    field = F(SORTS[sort.lstrip("-")])
    order = field.desc(nulls_last=True) if sort.startswith("-") else field.asc(nulls_last=True)
    return sessions.order_by(order, "-pk")


@dataclass(frozen=True)
class Facet:
    """One choice of a filter drop-down: ``value`` is what the link or form carries (the value,
    or an opaque handle when it holds personal data), ``label`` what it shows (masked)."""

    value: str
    label: str


FACET_LIMIT = 200


def _facet_raw(projects: QuerySet[Project], field: str) -> list[str]:
    values = (
        AgentSession.objects.filter(project__in=projects)
        .exclude(**{field: ""})
        .order_by(field)
        .values_list(field, flat=True)
        .distinct()[:FACET_LIMIT]
    )
    return list(values)


def facet_values(*, projects: QuerySet[Project], field: str) -> list[Facet]:
    """Distinct agents or models, for the filter drop-downs."""
    return [
        Facet(value=masking.handle(v), label=masking.text_mask(v))
        for v in _facet_raw(projects, field)
    ]


def facet_resolve(*, projects: QuerySet[Project], field: str, value: str) -> str:
    """The agent or model a filter names: itself, or the value behind an opaque handle
    (none when no session of ``projects`` has it)."""
    if not value.startswith(masking.OPAQUE_PREFIX):
        return value
    for raw in _facet_raw(projects, field):
        if masking.handle_matches(value, raw):
            return raw
    return ""


def with_subagent_counts(sessions: QuerySet[AgentSession]) -> QuerySet[AgentSession]:
    """Annotate ``subagent_count`` (direct children) in the same query as the rows."""
    children = (
        AgentSession.objects.filter(parent_id=OuterRef("pk"))
        .order_by()
        .values("parent_id")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return sessions.annotate(subagent_count=Coalesce(Subquery(children), 0))


@dataclass(frozen=True)
class TreeNode:
    session: AgentSession
    depth: int


SUBAGENT_TREE_LIMIT = 500


def subagent_tree(*, session: AgentSession, max_depth: int = 4) -> list[TreeNode]:
    """The session's subagents, depth first (children under their parent), one query a level."""
    by_parent: dict[int, list[AgentSession]] = {}
    level, depth, total = [session.pk], 1, 0
    while level and depth <= max_depth and total < SUBAGENT_TREE_LIMIT:
        children = list(
            AgentSession.objects.filter(parent_id__in=level)
            .only(
                "pk",
                "parent_id",
                "external_id",
                "title",
                "agent",
                "message_count",
                "compaction_count",
                "started_at",
            )
            .order_by("started_at", "pk")[: SUBAGENT_TREE_LIMIT - total]
        )
        for child in children:
            by_parent.setdefault(child.parent_id or 0, []).append(child)
        level, depth, total = [c.pk for c in children], depth + 1, total + len(children)
    out: list[TreeNode] = []

    def walk(pk: int, depth: int) -> None:
        for child in by_parent.get(pk, []):
            out.append(TreeNode(session=child, depth=depth))
            walk(child.pk, depth + 1)

    walk(session.pk, 1)
    return out


def session_get(*, projects: QuerySet[Project], pk: int) -> AgentSession:
    session = session_list(projects=projects).filter(pk=pk).first()
    if session is None:
        raise NotFound(f"session {pk} not found")
    return session


def session_by_external_id(*, project: Project, external_id: str) -> AgentSession:
    wire.external_id_check(external_id)
    session = AgentSession.objects.filter(project=project, external_id=external_id).first()
    if session is None:
        raise NotFound(f"session {external_id!r} not found in this project")
    return session


def message_page(*, session: AgentSession, offset: int, limit: int) -> QuerySet[Message]:
    return Message.objects.filter(session=session).order_by("seq")[offset : offset + limit]


# How far back before the first shown message a tool call is looked for (a result usually
# answers the call in the message just before it).
TOOL_CALL_LOOKBACK = 20


def tool_names(*, session_id: int, messages: list[Message]) -> dict[str, str]:
    """tool_use id -> tool name for every tool result among `messages`.

    Calls are found among the messages themselves, then in the few messages just before the
    first of them (a page or a lazily loaded stretch can start with a result).
    """
    names: dict[str, str] = {}
    wanted: set[str] = set()
    for message in messages:
        _collect_tool_calls(message, names, wanted)
    missing = wanted - names.keys()
    if missing and messages:
        first = min(m.seq for m in messages)
        earlier = Message.objects.filter(
            session_id=session_id, seq__lt=first, seq__gte=first - TOOL_CALL_LOOKBACK
        ).only("seq", "content")
        for message in earlier:
            _collect_tool_calls(message, names, set())
    return names


def _collect_tool_calls(message: Message, names: dict[str, str], wanted: set[str]) -> None:
    for block in message.content if isinstance(message.content, list) else ():
        if not isinstance(block, dict):
            continue
        if block.get("type") == "tool_use" and block.get("id"):
            names[str(block["id"])] = str(block.get("name", ""))
        elif block.get("type") == "tool_result" and block.get("tool_use_id"):
            wanted.add(str(block["tool_use_id"]))


# A session that received data this recently is marked live in the list (the watcher uploads
# within a second or two of a line being written; an idle agent goes quiet within a minute).
LIVE_SECONDS = 60


def session_is_live(session: AgentSession, *, now: datetime | None = None) -> bool:
    """Whether data reached ``session`` in the last ``LIVE_SECONDS`` (any ingest stamps
    ``updated_at``)."""
    moment = now or timezone.now()
    return (moment - session.updated_at).total_seconds() <= LIVE_SECONDS


def session_page_version(session: AgentSession, *, now: datetime | None = None) -> str:
    """What the top of a session page shows (header, curve, compactions, the live mark, the
    count of new messages) changes only when this does. One query; the page's poll answers
    304 while it holds (sessions.views.session_detail)."""
    moment = now or timezone.now()
    rows = (
        AgentSession.objects.filter(pk=session.pk)
        .values("updated_at", "message_count", "compaction_count")
        .annotate(
            analysed=Max("analysis__analysed_generation"),
            analysis_status=Max("analysis__status"),
            alert_count=Count("alerts", distinct=True),
            alerts_changed=Max("alerts__updated_at"),
        )
        .order_by()[:1]
    )
    found = next(iter(rows), None)
    if found is None:
        return "gone"
    live = (moment - found["updated_at"]).total_seconds() <= LIVE_SECONDS
    changed = found["alerts_changed"].isoformat() if found["alerts_changed"] else "-"
    return (
        f"{found['updated_at'].isoformat()}.{found['message_count']}.{found['compaction_count']}"
        f".{found['analysed']}.{found['analysis_status']}.{found['alert_count']}.{changed}.{live}"
    )


def session_list_version(*, projects: QuerySet[Project], now: datetime | None = None) -> str:
    """What the session list shows changes only when this does: sessions added, grown or
    deleted, analyses finished, and sessions going quiet (the live mark). One query; the
    list's poll answers 304 while it holds (sessions.views.session_list)."""
    moment = now or timezone.now()
    found = AgentSession.objects.filter(project__in=projects).aggregate(
        n=Count("pk"),
        last=Max("updated_at"),
        live=Count("pk", filter=Q(updated_at__gte=moment - timedelta(seconds=LIVE_SECONDS))),
        analysed=Sum("analysis__analysed_generation"),
        failed=Count("analysis", filter=Q(analysis__status="failed")),
    )
    last = found["last"].isoformat() if found["last"] else "-"
    return f"{found['n']}.{last}.{found['live']}.{found['analysed'] or 0}.{found['failed']}"
