"""Reads. Every query is scoped to a project or to the projects a user belongs to."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet

from sessions.errors import NotFound
from sessions.models import AgentSession, Message, Project


def projects_for_user(user: AbstractBaseUser | AnonymousUser) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    if getattr(user, "is_superuser", False):
        return Project.objects.all()
    return Project.objects.filter(memberships__user__pk=user.pk)


def session_list(*, projects: QuerySet[Project]) -> QuerySet[AgentSession]:
    return AgentSession.objects.filter(project__in=projects).select_related("project")


def session_get(*, projects: QuerySet[Project], pk: int) -> AgentSession:
    session = session_list(projects=projects).filter(pk=pk).first()
    if session is None:
        raise NotFound(f"session {pk} not found")
    return session


def session_by_external_id(*, project: Project, external_id: str) -> AgentSession:
    session = AgentSession.objects.filter(project=project, external_id=external_id).first()
    if session is None:
        raise NotFound(f"session {external_id!r} not found in this project")
    return session


def message_page(*, session: AgentSession, offset: int, limit: int) -> QuerySet[Message]:
    return Message.objects.filter(session=session).order_by("seq")[offset : offset + limit]
