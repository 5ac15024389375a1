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

from compaction import pipeline
from privacy import audit, services
from privacy.models import AuditAction, AuditEvent
from sessions.models import ApiKey, Membership, Project, Role
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
        actor=None,
        actor_name="manage.py erase_subject",
        action="erasure",
        project=project,
        target="subject:x",
    )
    assert event.actor is None
    assert event.actor_name == "manage.py erase_subject"


def test_an_unknown_action_is_refused(project: Project) -> None:
    with pytest.raises(ValueError, match="delete_everything"):
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
    change_url = f"/admin/privacy/auditevent/{event.pk}/change/"
    assert client.get(change_url).status_code == 200  # viewable
    # where it was before the audit log moved to the privacy app
    old_url = f"/admin/traces/auditevent/{event.pk}/change/"
    assert client.get(old_url, follow=True).redirect_chain == [(change_url, 302)]
    client.post(change_url, {"reason": "rewritten", "target": "other", "actor_name": "x"})
    assert (
        client.post(f"/admin/privacy/auditevent/{event.pk}/delete/", {"post": "yes"}).status_code
        == 403
    )
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
    client.post("/admin/traces/apikey/", {"action": "revoke", "_selected_action": [key.pk]})
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
        actor=None,
        actor_name="ops",
        action="reveal",
        project=project,
        target="message:1:2:0#0",
        reason='=HYPERLINK("http://evil")',
        detail={"kind": "cpf"},
    )
    audit.audit_record(
        actor=None,
        actor_name="ops",
        action="reveal",
        project=make_project(),
        target="elsewhere",
        reason="other project",
    )
    _member(client, project, role, "auditor")
    page = client.get(f"/projects/{project.pk}/audit/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "message:1:2:0#0" in body
    assert "elsewhere" not in body
    export = client.get(f"/projects/{project.pk}/audit.csv")
    assert export.status_code == 200
    assert export["Content-Type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(export.content.decode())))
    assert rows[0] == audit.CSV_HEADER
    assert len(rows) == 2
    assert rows[1][5] == '\'=HYPERLINK("http://evil")'
    exported = AuditEvent.objects.filter(project=project, action="export").get()
    assert (exported.actor_name, exported.target, exported.detail) == (
        "auditor",
        "audit-log",
        {"rows": 1},
    )


@pytest.mark.parametrize("role", [Role.VIEWER, Role.ENGINEER])
def test_viewers_and_engineers_cannot_read_the_log(
    client: Client, project: Project, role: str
) -> None:
    _member(client, project, role)
    assert client.get(f"/projects/{project.pk}/audit/").status_code == 403
    assert client.get(f"/projects/{project.pk}/audit.csv").status_code == 403
    assert not AuditEvent.objects.exists()


# --- every action that reads a person or changes where data goes -----------------------


def _last(project: Project, action: str) -> AuditEvent:
    return AuditEvent.objects.filter(project=project, action=action).latest("pk")


def test_exports_by_any_member_are_audited(client: Client, project: Project) -> None:
    from tests.factories import make_session

    session = make_session(project)
    viewer = make_user(project=project, role=Role.VIEWER)
    client.force_login(viewer)
    for url, target in (
        (f"/sessions/{session.pk}/curve.csv", f"session:{session.pk} curve.csv"),
        (f"/sessions/{session.pk}/spans.json", f"session:{session.pk} spans.json"),
        ("/sessions/export.csv", "sessions list.csv"),
    ):
        assert client.get(url).status_code == 200
        event = _last(project, AuditAction.EXPORT)
        assert (event.actor, event.target) == (viewer, target)
    assert _last(project, AuditAction.EXPORT).detail == {"rows": 1}


def test_review_decisions_are_audited(project: Project) -> None:
    from privacy.models import Finding
    from tests.factories import make_session

    session = make_session(
        project, messages=[{"seq": 0, "role": "user", "content": "CPF 530.582.439-79"}]
    )
    pipeline.session_analyse(session_id=session.pk)
    finding = Finding.objects.get(session=session)
    reviewer = make_user(project=project, role=Role.PRIVACY_REVIEWER)
    services.finding_review(finding=finding, status="false_positive", user=reviewer)
    event = _last(project, AuditAction.REVIEW)
    assert (event.actor, event.target) == (reviewer, f"finding:{finding.pk}")
    assert event.detail == {"status": "false_positive", "kind": "cpf", "where": "message", "seq": 0}


def test_policy_changes_are_audited_with_what_changed(client: Client, project: Project) -> None:
    admin = make_user(project=project, role=Role.ADMIN)
    client.force_login(admin)
    client.post(f"/projects/{project.pk}/policy/", {"allow_external_models": "on"})
    event = _last(project, AuditAction.POLICY_CHANGE)
    assert event.actor == admin
    assert event.detail == {"allow_external_models": {"from": False, "to": True}}
    client.post(f"/projects/{project.pk}/policy/", {"allow_external_models": "on"})
    assert AuditEvent.objects.filter(action=AuditAction.POLICY_CHANGE).count() == 1  # no change


def test_webhook_and_recipient_changes_are_audited(client: Client, project: Project) -> None:
    from alerts.models import Webhook

    admin = make_user(project=project, role=Role.ADMIN)
    client.force_login(admin)
    client.post(
        f"/projects/{project.pk}/settings/",
        {
            "form": "webhook",
            "url": "https://hooks.example.net/x?token=abc",
            "secret": "s" * 20,
            "format": "json",
        },
    )
    hook = Webhook.objects.get(project=project)
    added = _last(project, AuditAction.WEBHOOK_CHANGE)
    assert (added.actor, added.target) == (admin, f"webhook:{hook.pk}")
    assert added.detail == {
        "change": "added",
        "host": "hooks.example.net",
        "format": "json",
        "rules": [],
    }
    client.post(f"/projects/{project.pk}/webhooks/{hook.pk}/delete/")
    assert _last(project, AuditAction.WEBHOOK_CHANGE).detail["change"] == "removed"
    call_command("addwebhook", project.name, "https://hooks.example.net/y", "--secret", "t" * 20)
    assert _last(project, AuditAction.WEBHOOK_CHANGE).actor_name == "manage.py addwebhook"

    client.post(
        f"/projects/{project.pk}/settings/",
        {
            "form": "thresholds",
            "storm_compactions": 6,
            "storm_window_minutes": 60,
            "repeated_compaction_count": 3,
            "thrash_compactions": 2,
            "thrash_window_calls": 20,
            "near_overflow_percent": 95,
            "email_recipients": "oncall@casa-aurora.com.br, rita@casa-aurora.com.br",
        },
    )
    changed = _last(project, AuditAction.SETTINGS_CHANGE)
    assert changed.actor == admin
    assert changed.detail["recipients"] == 2
    assert "email_recipients" in changed.detail["changed"]
    assert "rita@" not in str(changed.detail)


def test_a_delete_through_the_api_names_the_key(client: Client, project: Project) -> None:
    from sessions import services
    from tests.factories import make_session

    make_session(project, external_id="run-9")
    issued = services.api_key_create(project=project, name="ci")
    response = client.delete(
        "/api/v1/sessions/run-9?reason=cleanup", HTTP_AUTHORIZATION=f"Bearer {issued.raw_key}"
    )
    assert response.status_code == 200
    event = _last(project, AuditAction.ERASURE)
    assert (event.actor, event.actor_name) == (None, f"key {issued.api_key.prefix}")
