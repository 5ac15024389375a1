"""Project admins manage members from the members page, and `manage.py addmember` does from
the shell; every change is audited. (Ingest keys: tests/sessions/test_keys.py.)"""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from privacy.models import AuditEvent
from sessions.models import Membership, Project, Role
from tests.factories import make_project, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def project() -> Project:
    return make_project(name="casa-aurora")


@pytest.fixture
def admin(client: Client, project: Project) -> Client:
    client.force_login(make_user(project=project, role=Role.ADMIN, username="ana"))
    return client


def test_an_admin_adds_a_member_by_username_with_a_role(admin: Client, project: Project) -> None:
    make_user(username="bruno")
    response = admin.post(
        f"/projects/{project.pk}/members/", {"username": "bruno", "role": Role.ENGINEER}
    )
    assert response.status_code == 302
    assert Membership.objects.get(user__username="bruno").role == Role.ENGINEER
    event = AuditEvent.objects.get()
    assert (event.action, event.actor_name, event.target, event.detail) == (
        "role_change",
        "ana",
        "member:bruno",
        {"from": None, "to": "engineer"},
    )
    page = admin.get(f"/projects/{project.pk}/members/").content.decode()
    assert "bruno" in page
    assert "is now a member" in page


def test_an_admin_changes_a_role_and_removes_a_member(admin: Client, project: Project) -> None:
    member = make_user(project=project, role=Role.VIEWER, username="bia")
    admin.post(
        f"/projects/{project.pk}/members/", {"username": "bia", "role": Role.PRIVACY_REVIEWER}
    )
    membership = Membership.objects.get(user=member)
    assert membership.role == Role.PRIVACY_REVIEWER
    admin.post(f"/projects/{project.pk}/members/{membership.pk}/remove/")
    assert not Membership.objects.filter(user=member).exists()
    assert [e.detail for e in AuditEvent.objects.order_by("pk")] == [
        {"from": "viewer", "to": "privacy_reviewer"},
        {"from": "privacy_reviewer", "to": None},
    ]


def test_setting_the_same_role_again_writes_nothing(admin: Client, project: Project) -> None:
    make_user(project=project, role=Role.VIEWER, username="bia")
    admin.post(f"/projects/{project.pk}/members/", {"username": "bia", "role": Role.VIEWER})
    assert not AuditEvent.objects.exists()


@pytest.mark.parametrize(
    ("username", "role", "error"),
    [
        ("nobody", Role.VIEWER, "username: no user named &#x27;nobody&#x27;"),
        ("bia", "owner", "role: &#x27;owner&#x27; is not one of viewer, engineer,"),
    ],
)
def test_a_bad_member_form_says_which_field(
    admin: Client, project: Project, username: str, role: str, error: str
) -> None:
    make_user(username="bia")
    response = admin.post(f"/projects/{project.pk}/members/", {"username": username, "role": role})
    assert response.status_code == 400
    assert error in response.content.decode()
    assert not Membership.objects.filter(user__username="bia").exists()
    assert not AuditEvent.objects.exists()


def test_an_admin_of_one_project_cannot_see_another_projects_members(admin: Client) -> None:
    other = make_project()
    assert admin.get(f"/projects/{other.pk}/members/").status_code == 404


def test_addmember_adds_and_changes_roles_and_is_audited(project: Project) -> None:
    make_user(username="carla")
    out = io.StringIO()
    call_command("addmember", "casa-aurora", "carla", "privacy_reviewer", stdout=out)
    assert "carla is privacy reviewer in project 'casa-aurora'." in out.getvalue()
    call_command("addmember", "casa-aurora", "carla", "admin", stdout=io.StringIO())
    assert Membership.objects.get(user__username="carla").role == Role.ADMIN
    events = list(AuditEvent.objects.order_by("pk"))
    assert [(e.actor_name, e.detail["to"]) for e in events] == [
        ("manage.py addmember", "privacy_reviewer"),
        ("manage.py addmember", "admin"),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "carla", "viewer"], "project 'nope' not found"),
        (["casa-aurora", "ghost", "viewer"], "username: no user named 'ghost'"),
    ],
)
def test_addmember_errors_name_the_problem(project: Project, args: list[str], message: str) -> None:
    make_user(username="carla")
    with pytest.raises(CommandError, match=message):
        call_command("addmember", *args, stdout=io.StringIO())
