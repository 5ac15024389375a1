"""The audit log: append-only, written by every change it covers, shown and exported to
admins and reviewers with cells a spreadsheet cannot run."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.admin.sites import site
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client, RequestFactory

from sessions import audit
from sessions.models import ApiKey, AuditAction, AuditEvent, Membership, Project, Role
from tests.factories import make_project, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def project() -> Project:
    return make_project(name="casa-aurora")


def test_audit_record_keeps_who_what_when_why_and_where(project: Project) -> None:
    user = make_user(project=project, role=Role.ADMIN, username="ana")
    event = audit.audit_record(
        actor=user,
        action=AuditAction.ERASURE,
        project=project,
        target="subject:hmac:ab12",
        reason="LGPD art. 18 request 77",
        detail={"messages": 3},
    )
    event.refresh_from_db()
    assert (event.actor, event.actor_name, event.action, event.project_name) == (
        user,
        "ana",
        "erasure",
        "casa-aurora",
    )
    assert (event.target, event.reason, event.detail) == (
        "subject:hmac:ab12",
        "LGPD art. 18 request 77",
        {"messages": 3},
    )
    assert event.created_at is not None


def test_a_command_without_a_user_is_recorded_by_name(project: Project) -> None:
    event = audit.audit_record(
        actor=None, actor_name="manage.py erase_subject", action="erasure", project=project,
        target="subject:x",
    )
    assert event.actor is None and event.actor_name == "manage.py erase_subject"


def test_an_unknown_action_is_refused(project: Project) -> None:
    with pytest.raises(ValueError):
        audit.audit_record(actor=None, action="delete_everything", project=project, target="x")
    assert not AuditEvent.objects.exists()


def test_the_admin_shows_the_log_read_only() -> None:
    admin_user = get_user_model().objects.create_superuser("root", password="x-long-password")
    request = RequestFactory().get("/admin/")
    request.user = admin_user
    model_admin = site._registry[AuditEvent]
    event = audit.audit_record(actor=admin_user, action="export", project=None, target="t")
    assert model_admin.has_view_permission(request, event)
    assert not model_admin.has_add_permission(request)
    assert not model_admin.has_change_permission(request, event)
    assert not model_admin.has_delete_permission(request, event)
    client = Client()
    client.force_login(admin_user)
    change_url = f"/admin/traces/auditevent/{event.pk}/change/"
    assert client.get(change_url).status_code == 200  # viewable
    client.post(change_url, {"reason": "rewritten", "target": "other", "actor_name": "x"})
    assert client.post(f"/admin/traces/auditevent/{event.pk}/delete/", {"post": "yes"}).status_code == 403
    event.refresh_from_db()
    assert (event.reason, event.target) == ("", "t")
    assert AuditEvent.objects.count() == 1


def test_changing_a_role_in_the_admin_is_audited(project: Project) -> None:
    admin_user = get_user_model().objects.create_superuser("root", password="x-long-password")
    member = make_user(project=project, role=Role.VIEWER, username="bia")
    membership = Membership.objects.get(user=member)
    client = Client()
    client.force_login(admin_user)
    response = client.post(
        f"/admin/traces/membership/{membership.pk}/change/",
        {"user": member.pk, "project": project.pk, "role": Role.ADMIN},
    )
    assert response.status_code == 302
    event = AuditEvent.objects.get()
    assert (event.action, event.target, event.detail) == (
        "role_change",
        "member:bia",
        {"from": "viewer", "to": "admin", "via": "admin"},
    )


def test_revoking_keys_in_the_admin_is_audited(project: Project) -> None:
    admin_user = get_user_model().objects.create_superuser("root", password="x-long-password")
    call_command("createapikey", project.name, "--name", "agent", stdout=io.StringIO())
    key = ApiKey.objects.get()
    client = Client()
    client.force_login(admin_user)
    client.post(
        "/admin/traces/apikey/", {"action": "revoke", "_selected_action": [key.pk]}
    )
    key.refresh_from_db()
    assert key.revoked_at is not None
    event = AuditEvent.objects.get()
    assert (event.action, event.target) == ("key_change", f"key:{key.prefix}")


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
        ("+1+1", "'+1+1"),
        ("-2", "'-2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\t=1", "'\t=1"),
        ("plain reason", "plain reason"),
    ],
)
def test_csv_cells_are_neutralized_against_formula_injection(value: str, cell: str) -> None:
    assert audit.csv_cell(value) == cell


def _member(client: Client, project: Project, role: str, name: str = "") -> Client:
    extra = {"username": name} if name else {}
    client.force_login(make_user(project=project, role=role, **extra))
    return client


@pytest.mark.parametrize("role", [Role.PRIVACY_REVIEWER, Role.ADMIN])
def test_reviewers_and_admins_read_and_export_the_log_and_the_export_is_audited(
    client: Client, project: Project, role: str
) -> None:
    audit.audit_record(
        actor=None, actor_name="ops", action="reveal", project=project,
        target="message:1:2:0#0", reason="=HYPERLINK(\"http://evil\")", detail={"kind": "cpf"},
    )
    audit.audit_record(actor=None, actor_name="ops", action="reveal", project=make_project(),
                       target="elsewhere", reason="other project")
    _member(client, project, role, "auditor")
    page = client.get(f"/projects/{project.pk}/audit/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "message:1:2:0#0" in body and "elsewhere" not in body
    export = client.get(f"/projects/{project.pk}/audit.csv")
    assert export.status_code == 200 and export["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(export.content.decode())))
    assert rows[0] == audit.CSV_HEADER
    assert len(rows) == 2
    assert rows[1][5] == "'=HYPERLINK(\"http://evil\")"
    exported = AuditEvent.objects.filter(project=project, action="export").get()
    assert (exported.actor_name, exported.target, exported.detail) == (
        "auditor", "audit-log", {"rows": 1}
    )


@pytest.mark.parametrize("role", [Role.VIEWER, Role.ENGINEER])
def test_viewers_and_engineers_cannot_read_the_log(
    client: Client, project: Project, role: str
) -> None:
    _member(client, project, role)
    assert client.get(f"/projects/{project.pk}/audit/").status_code == 403
    assert client.get(f"/projects/{project.pk}/audit.csv").status_code == 403
    assert not AuditEvent.objects.exists()
