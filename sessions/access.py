"""Who may do what in a project: the one role check that pages and endpoints call.

Roles are cumulative, each adding to the one before it:
viewer (reads, masked) < engineer (+ replays, experiments) < privacy reviewer (+ reveals,
finding review, subject requests) < admin (+ members, keys, webhooks, project settings).
Django superusers act as admins of every project.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet

from sessions.models import Membership, Project, Role

RANK: dict[str, int] = {
    Role.VIEWER: 0,
    Role.ENGINEER: 1,
    Role.PRIVACY_REVIEWER: 2,
    Role.ADMIN: 3,
}

User = AbstractBaseUser | AnonymousUser


def role_in(user: User, project: Project | int) -> str | None:
    """The user's role in the project, or None when they are not a member."""
    if not user.is_authenticated:
        return None
    if getattr(user, "is_superuser", False):
        return Role.ADMIN
    project_id = project if isinstance(project, int) else project.pk
    return (
        Membership.objects.filter(user__pk=user.pk, project_id=project_id)
        .values_list("role", flat=True)
        .first()
    )


def has_role(user: User, project: Project | int, role: str) -> bool:
    """Whether the user holds ``role`` or a higher one in the project.

    A role the project does not know (``RANK`` has it not) is never held.
    """
    held = role_in(user, project)
    return held is not None and RANK.get(held, -1) >= RANK[role]


def require_role(user: User, project: Project | int, role: str) -> None:
    """Raise PermissionDenied (403) unless the user holds ``role`` or a higher one."""
    if not has_role(user, project, role):
        raise PermissionDenied(f"This needs the {Role(role).label.lower()} role in the project.")


def projects_with_role(user: User, role: str) -> QuerySet[Project]:
    """The projects where the user holds ``role`` or a higher one."""
    if not user.is_authenticated:
        return Project.objects.none()
    if getattr(user, "is_superuser", False):
        return Project.objects.all()
    held = [name for name, rank in RANK.items() if rank >= RANK[role]]
    return Project.objects.filter(memberships__user__pk=user.pk, memberships__role__in=held)
