"""Identifiers in the fields around the content: filter handles, saved filters, alerts, the
audit log and the admin hold no value in clear, and still work."""

from __future__ import annotations

import pytest
from django.test import Client

from alerts.models import Alert
from privacy import masking
from privacy.models import AuditAction, AuditEvent
from sessions.errors import BadRequest
from sessions.models import AgentSession, Role
from team import selectors as team_selectors
from team import services as team_services
from tests.factories import make_project, make_session, make_user
from tests.privacy.doors import CPF, EMAIL, labelled_project, leaks

pytestmark = pytest.mark.django_db


def test_an_agent_holding_personal_data_is_filtered_by_an_opaque_handle(client: Client) -> None:
    project = make_project()
    mine = make_session(project, session={"agent": f"suporte {EMAIL}"})
    make_session(project, session={"agent": "billing-migrator"})
    client.force_login(make_user(project=project, role=Role.VIEWER))
    body = client.get("/").content.decode()
    handle = masking.handle(f"suporte {EMAIL}")
    assert handle.startswith("~")
    assert EMAIL not in handle
    assert f'<option value="{handle}">suporte [email c***@***.com]</option>' in body
    assert '<option value="billing-migrator">billing-migrator</option>' in body
    listed = client.get("/", {"agent": handle}).content.decode()
    assert f'href="/sessions/{mine.pk}/"' in listed
    assert listed.count('class="ellipsis session-cell"') == 1
    # A guessed handle or another project's agent finds nothing.
    assert client.get("/", {"agent": "~0000"}).content.decode().count("session-cell") == 0


def test_saved_filters_never_keep_an_identifier() -> None:
    user = make_user()
    with pytest.raises(BadRequest, match="name: holds personal data"):
        team_services.saved_filter_save(user=user, name=f"cliente {CPF}", query="problems=failed")
    saved = team_services.saved_filter_save(
        user=user, name="falhas", query=f"q={CPF}&problems=failed"
    )
    assert saved.query == "problems=failed"
    assert team_selectors.filter_query_clean("q=erro+502&q2=x&agent=a") == "q=erro+502&agent=a"


def test_alerts_are_stored_masked_whatever_door_reads_them() -> None:
    door = labelled_project()
    alerts = list(Alert.objects.filter(session=door.session))
    assert {a.rule for a in alerts} >= {"lost_constraint", "failed_splice"}
    for alert in alerts:
        assert leaks(f"{alert.title} {alert.evidence}") == [], alert.rule
    lost = next(a for a in alerts if a.rule == "lost_constraint")
    assert "[phone (**) *****-**21]" in lost.title


def test_the_audit_log_stores_what_people_type_masked() -> None:
    door = labelled_project()
    reveal = AuditEvent.objects.get(action=AuditAction.REVEAL, project=door.project)
    assert reveal.reason == "pedido de revisão da titular, CPF [cpf ***.***.***-79]"
    assert leaks(f"{reveal.target} {reveal.reason} {reveal.detail}") == []


def test_the_admin_shows_sessions_masked_and_audits_a_delete(client: Client) -> None:
    door = labelled_project()
    client.force_login(door.users["superuser"])
    change = client.get(f"/admin/traces/agentsession/{door.session.pk}/change/")
    assert change.status_code == 200
    body = change.content.decode()
    assert leaks(body) == []
    assert "cliente-[cpf ***.***.***-79]" in body
    assert str(door.session) == f"session {door.session.pk}"
    assert client.get("/admin/traces/agentsession/add/").status_code == 403
    deleted = client.post(f"/admin/traces/agentsession/{door.session.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 302
    assert not AgentSession.objects.filter(pk=door.session.pk).exists()
    event = AuditEvent.objects.get(action=AuditAction.ERASURE, target=f"session:{door.session.pk}")
    assert (event.actor, event.reason) == (door.users["superuser"], "deleted in the Django admin")
