"""The advice page (/advice/, "Advice" in the top bar): the same answer as GET /api/v1/advice,
per agent, linking to the experiment behind it; with nothing to advise it says why, in the
API's words, and offers to start an experiment to those who may."""

from __future__ import annotations

import html

import pytest
from django.test import Client

from compaction.engine.advice import OBSERVED_LABEL
from sessions import selectors as session_selectors
from sessions.models import AgentSession, Project, Role
from tests.compaction.test_advice import (  # noqa: F401
    _experiment,
    _three_sessions_are_evidence_here,
    auth,
    project,
    sessions,
)
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_the_advice_page_is_in_the_top_bar_and_says_what_the_api_says(
    client: Client,
    auth: dict[str, str],  # noqa: F811
    project: Project,  # noqa: F811
    sessions: list[AgentSession],  # noqa: F811
) -> None:
    experiment = _experiment(project, sessions)
    api = client.get("/api/v1/advice?days=30", headers=auth).json()
    client.force_login(make_user(project=project, role=Role.VIEWER))
    assert 'href="/advice/"' in client.get("/").content.decode()
    page = client.get("/advice/").content.decode()
    assert 'id="advice-h">Recommendation</h2>' in page
    label = html.escape(api["recommended"]["label"])
    assert f'<strong class="policy-label">{label}</strong>' in page or (
        "Keep the observed policy" in page and api["recommended"]["label"] == OBSERVED_LABEL
    )
    assert "<h3>By agent</h3>" in page  # two agents: one line each
    assert f'href="/experiments/{experiment.pk}/"' in page
    assert "<b>run-3<i>" not in page  # hostile content stays text


def test_the_advice_page_narrows_to_one_agent_as_the_api_does(
    client: Client,
    auth: dict[str, str],  # noqa: F811
    project: Project,  # noqa: F811
    sessions: list[AgentSession],  # noqa: F811
) -> None:
    _experiment(project, sessions)
    api = client.get("/api/v1/advice?days=7&agent=support-bot", headers=auth).json()
    client.force_login(make_user(project=project, role=Role.VIEWER))
    handle = next(
        f.value
        for f in session_selectors.facet_values(
            projects=Project.objects.filter(pk=project.pk), field="agent"
        )
        if f.label == "support-bot"
    )
    page = client.get("/advice/", {"agent": handle, "days": 7}).content.decode()
    assert f'<option value="{handle}" selected>' in page
    assert "over 1 session" in page or "(1 session)" in page
    assert "<h3>By agent</h3>" not in page  # one agent: the recommendation is its own
    assert list(api["recommended_by_agent"]) == ["support-bot"]


@pytest.mark.parametrize(("role", "offered"), [(Role.VIEWER, False), (Role.ENGINEER, True)])
def test_with_nothing_to_advise_the_page_says_why_and_offers_an_experiment_to_engineers(
    client: Client,
    auth: dict[str, str],  # noqa: F811
    project: Project,  # noqa: F811
    sessions: list[AgentSession],  # noqa: F811
    role: str,
    offered: bool,
) -> None:
    error = client.get("/api/v1/advice?days=30", headers=auth).json()["error"]
    client.force_login(make_user(project=project, role=role))
    page = client.get("/advice/").content.decode()
    assert "Nothing to advise yet" in page
    assert f"Why: {html.escape(error.removeprefix('advice: '))}." in page
    assert ('href="/experiments/new/">Start an experiment</a>' in page) is offered
    assert 'id="advice-h"' not in page


def test_a_user_sees_only_the_advice_of_their_own_projects(
    client: Client,
    project: Project,  # noqa: F811
    sessions: list[AgentSession],  # noqa: F811
) -> None:
    other = Project.objects.create(name="elsewhere")
    client.force_login(make_user(project=other, role=Role.ADMIN))
    page = client.get("/advice/", {"project": project.pk}).content.decode()
    assert "acme" not in page  # the project asked for is not theirs: their own is shown
    assert "none of the 0 sessions" not in page
    assert "no session began in the last 30 days" in page


def test_with_no_priced_policy_the_kinds_table_says_so_instead_of_drawing_empty() -> None:
    from django.template.loader import render_to_string

    advice = {
        "policies": [],
        "baseline": {"usd": 0.0, "retention": None},
        "no_recommendation": {"reason": "0 sessions back it; at least 10 needed"},
        "unpriced_sessions": 1,
        "missing_baselines": [],
    }
    page = render_to_string(
        "compaction/_advice.html",
        {"advice": advice, "recommendation": None, "tolerance_points": 5},
    )
    assert "No policy has a finished replay of these sessions with a price yet" in page
    assert "<table" not in page
