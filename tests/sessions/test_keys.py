"""Project admins issue and revoke ingest keys from the project pages; every change is audited.
(Members: tests/team/test_members.py.)"""

from __future__ import annotations

import pytest
from django.test import Client

from privacy.models import AuditEvent
from sessions import services
from sessions.models import ApiKey, Project, Role
from tests.factories import make_project, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def project() -> Project:
    return make_project(name="casa-aurora")


@pytest.fixture
def admin(client: Client, project: Project) -> Client:
    client.force_login(make_user(project=project, role=Role.ADMIN, username="ana"))
    return client


def test_a_key_is_shown_once_then_only_its_prefix(admin: Client, project: Project) -> None:
    response = admin.post(f"/projects/{project.pk}/keys/", {"name": "production agent"})
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    key = ApiKey.objects.get()
    raw = response.context["issued"].raw_key
    assert raw in response.content.decode()
    assert services.api_key_authenticate(raw_key=raw) == project
    later = admin.get(f"/projects/{project.pk}/keys/").content.decode()
    assert raw not in later
    assert f"{key.prefix}…" in later
    event = AuditEvent.objects.get()
    assert (event.action, event.target, event.detail) == (
        "key_change",
        f"key:{key.prefix}",
        {"change": "created", "name": "production agent"},
    )
    assert raw not in str(event.detail)
    assert raw not in event.target


def test_a_revoked_key_no_longer_opens_the_api(admin: Client, project: Project) -> None:
    issued = services.api_key_create(project=project, name="old")
    admin.post(f"/projects/{project.pk}/keys/{issued.api_key.pk}/revoke/")
    assert services.api_key_authenticate(raw_key=issued.raw_key) is None
    assert AuditEvent.objects.get().detail == {"change": "revoked", "name": "old"}
    # A second revoke changes nothing and logs nothing.
    admin.post(f"/projects/{project.pk}/keys/{issued.api_key.pk}/revoke/")
    assert AuditEvent.objects.count() == 1


def test_a_key_needs_a_name(admin: Client, project: Project) -> None:
    response = admin.post(f"/projects/{project.pk}/keys/", {"name": "  "})
    assert response.status_code == 400
    assert "name: required, a label for the key" in response.content.decode()
    assert not ApiKey.objects.exists()


def test_an_admin_of_one_project_cannot_revoke_another_projects_key(admin: Client) -> None:
    other = make_project()
    issued = services.api_key_create(project=other)
    assert admin.post(f"/projects/{other.pk}/keys/{issued.api_key.pk}/revoke/").status_code == 404
    assert services.api_key_authenticate(raw_key=issued.raw_key) == other
