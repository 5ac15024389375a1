"""The role check every page and endpoint calls."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied

from sessions import access
from sessions.models import Membership, Project, Role

pytestmark = pytest.mark.django_db


@pytest.fixture
def project() -> Project:
    return Project.objects.create(name="p")


def _member(project: Project, role: str) -> User:
    user = User.objects.create_user(f"u-{role}")
    Membership.objects.create(user=user, project=project, role=role)
    return user


@pytest.mark.parametrize(
    ("held", "needed", "allowed"),
    [
        (Role.VIEWER, Role.VIEWER, True),
        (Role.VIEWER, Role.ENGINEER, False),
        (Role.ENGINEER, Role.ENGINEER, True),
        (Role.ENGINEER, Role.PRIVACY_REVIEWER, False),
        (Role.PRIVACY_REVIEWER, Role.ENGINEER, True),
        (Role.PRIVACY_REVIEWER, Role.ADMIN, False),
        (Role.ADMIN, Role.PRIVACY_REVIEWER, True),
    ],
)
def test_roles_are_cumulative(project: Project, held: str, needed: str, allowed: bool) -> None:
    assert access.has_role(_member(project, held), project, needed) is allowed


def test_non_members_and_anonymous_hold_no_role(project: Project) -> None:
    other = Project.objects.create(name="other")
    admin_elsewhere = _member(other, Role.ADMIN)
    assert access.role_in(admin_elsewhere, project) is None
    assert not access.has_role(admin_elsewhere, project, Role.VIEWER)
    assert not access.has_role(AnonymousUser(), project, Role.VIEWER)


def test_superuser_is_admin_everywhere(project: Project) -> None:
    root = User.objects.create_superuser("root")
    assert access.role_in(root, project.pk) == Role.ADMIN


def test_require_role_names_the_missing_role(project: Project) -> None:
    with pytest.raises(PermissionDenied, match="engineer role"):
        access.require_role(_member(project, Role.VIEWER), project, Role.ENGINEER)
