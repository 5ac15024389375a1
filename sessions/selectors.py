"""Reads. Every query is scoped to a project or to the projects a user belongs to."""

from __future__ import annotations

from datetime import datetime, time
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from sessions import wire
from sessions.errors import NotFound
from sessions.filters import SORTS
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
    """The session list page: filtered, sorted, with what each row shows already joined."""
    sessions = session_list(projects=projects).select_related("analysis")
    if project := filters.get("project"):
        sessions = sessions.filter(project_id=project)
    if q := filters.get("q"):
        sessions = sessions.filter(Q(external_id__icontains=q) | Q(agent__icontains=q))
    if agent := filters.get("agent"):
        sessions = sessions.filter(agent=agent)
    if model := filters.get("model"):
        sessions = sessions.filter(model=model)
    if after := filters.get("started_after"):
        sessions = sessions.filter(started_at__gte=_day(after))
    if before := filters.get("started_before"):
        sessions = sessions.filter(started_at__lte=_day(before, end=True))
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
    elif problem == "orphans":
        sessions = sessions.exclude(analysis__orphans=[]).filter(analysis__isnull=False)
    sort = filters.get("sort") or "-updated"
    field = F(SORTS[sort.lstrip("-")])
    order = field.desc(nulls_last=True) if sort.startswith("-") else field.asc(nulls_last=True)
    return sessions.order_by(order, "-pk")


def facet_values(*, projects: QuerySet[Project], field: str) -> list[str]:
    """Distinct agents or models, for the filter drop-downs."""
    values = (
        AgentSession.objects.filter(project__in=projects)
        .exclude(**{field: ""})
        .order_by(field)
        .values_list(field, flat=True)
        .distinct()[:200]
    )
    return list(values)


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
