"""GET /api/v1/alerts and the acknowledge / resolve / mute endpoints."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from django.test import Client

from alerts.models import Alert, AlertState
from tests.alerts.test_alerts import THREE, analysed_session
from tests.factories import make_key, make_project

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def project():
    return make_project(name="acme")


@pytest.fixture
def client(project) -> Client:
    return Client(headers={"Authorization": f"Bearer {make_key(project)}"})


@pytest.fixture
def alert(project) -> Alert:
    session = analysed_session(project=project, compactions=THREE, external_id="run-1")
    return Alert.objects.get(session=session)


def test_list_returns_the_projects_alerts_in_the_documented_shape(client, alert) -> None:
    analysed_session(project=make_project(), compactions=THREE)  # another project's alert
    response = client.get("/api/v1/alerts")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1
    (item,) = body["items"]
    assert {k: item[k] for k in ("id", "rule", "severity", "state", "session", "title")} == {
        "id": alert.pk,
        "rule": "repeated_compaction",
        "severity": "warning",
        "state": "open",
        "session": "run-1",
        "title": "Compacted 3 times in one session",
    }
    assert item["evidence"]["spans"] == [4, 52, 100]
    assert {"opened_at", "updated_at"} <= set(item)


def test_list_filters_by_state_rule_and_session(client, alert) -> None:
    assert client.get("/api/v1/alerts?state=open&rule=repeated_compaction").json()["count"] == 1
    assert client.get("/api/v1/alerts?state=resolved").json()["count"] == 0
    assert client.get("/api/v1/alerts?rule=overflow").json()["count"] == 0
    assert client.get("/api/v1/alerts?session=run-1").json()["count"] == 1


@pytest.mark.parametrize(
    ("query", "status", "error"),
    [
        (
            "state=closed",
            400,
            "state: expected one of open, acknowledged, resolved, muted, got 'closed'",
        ),
        ("rule=nope", 400, "rule: expected one of compaction_storm, compaction_loop, "
         "repeated_compaction, compaction_thrash, "
         "failed_splice, near_overflow, overflow, lost_constraint, orphan_pairs, personal_data, "
         "secret, got 'nope'"),
        ("session=missing", 404, "session 'missing' not found in this project"),
    ],
)  # fmt: skip
def test_list_refuses_unknown_filters(client, query, status, error) -> None:
    response = client.get(f"/api/v1/alerts?{query}")
    assert (response.status_code, response.json()) == (status, {"error": error})


def test_list_needs_a_key() -> None:
    response = Client().get("/api/v1/alerts")
    assert response.status_code == 401
    assert response.json() == {"error": "Authorization: missing, unknown or revoked project key"}


def test_acknowledge_then_again_is_a_conflict(client, alert) -> None:
    response = client.post(f"/api/v1/alerts/{alert.pk}/acknowledge")
    assert response.status_code == 200
    assert response.json()["state"] == "acknowledged"
    again = client.post(f"/api/v1/alerts/{alert.pk}/acknowledge")
    assert (again.status_code, again.json()) == (
        409,
        {"error": f"alert {alert.pk}: cannot be acknowledged while acknowledged"},
    )


def test_resolve_takes_a_reason(client, alert) -> None:
    url = f"/api/v1/alerts/{alert.pk}/resolve"
    missing = client.post(url, {}, content_type="application/json")
    assert (missing.status_code, missing.json()) == (400, {"error": "reason: required"})
    blank = client.post(url, {"reason": " "}, content_type="application/json")
    assert (blank.status_code, blank.json()) == (
        400,
        {"error": "reason: required; say why the alert is resolved"},
    )
    ok = client.post(url, {"reason": "fixed in harness v2"}, content_type="application/json")
    assert ok.status_code == 200
    assert (ok.json()["state"], ok.json()["resolution"]) == ("resolved", "fixed in harness v2")


def test_mute_until_a_time(client, alert) -> None:
    url = f"/api/v1/alerts/{alert.pk}/mute"
    with time_machine.travel(NOW, tick=False):
        past = client.post(url, {"until": "2026-11-19T00:00:00Z"}, content_type="application/json")
        assert (past.status_code, past.json()) == (400, {"error": "until: must be in the future"})
        naive = client.post(url, {"until": "2026-11-21T00:00:00"}, content_type="application/json")
        assert naive.json() == {"error": "until: give a time zone, like 2026-12-01T18:00:00Z"}
        ok = client.post(url, {"until": "2026-11-21T00:00:00Z"}, content_type="application/json")
    assert ok.status_code == 200
    alert.refresh_from_db()
    assert alert.state == AlertState.MUTED
    assert alert.muted_until == datetime(2026, 11, 21, tzinfo=UTC)


def test_another_projects_alert_is_not_found(alert) -> None:
    other = Client(headers={"Authorization": f"Bearer {make_key(make_project())}"})
    response = other.post(f"/api/v1/alerts/{alert.pk}/acknowledge")
    assert (response.status_code, response.json()) == (
        404,
        {"error": f"alert {alert.pk} not found in this project"},
    )
    alert.refresh_from_db()
    assert alert.state == AlertState.OPEN


def test_the_openapi_schema_documents_the_alert_endpoints(client) -> None:
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    assert {"/api/v1/alerts", "/api/v1/alerts/{alert_id}/resolve"} <= set(paths)
