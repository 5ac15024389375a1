"""Policy advice over real replays: the API's shape is DESIGN's, a key sees only its project,
bad questions get a 400 naming the field, and the experiment page leads with the advice."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.test import Client

from compaction import outbox, pipeline, services
from compaction.models import Experiment
from sessions.models import AgentSession, Project
from tests.factories import coding_session_messages, make_key, make_project, make_session, make_user

pytestmark = pytest.mark.django_db

MODEL = "claude-opus-4-6"
POLICIES = [
    {"soft_limit": 6000, "hard_limit": 9000, "keep_last": 2},
    {"soft_limit": 11000, "hard_limit": 15000, "keep_last": 2},
]
DESIGN_KEYS = {"front", "recommended", "recommended_by_agent", "baseline"}
FRONT_KEYS = {"policy", "label", "usd", "retention", "overflowed_sessions", "failed_splices"}
RECOMMENDED_KEYS = {
    "policy",
    "label",
    "usd_saved",
    "usd_saved_ci",
    "retention",
    "lost_by_kind",
    "worst_session",
}
KINDS = {"task", "constraint", "file", "identifier", "decision", "next_step"}


@pytest.fixture(autouse=True)
def _three_sessions_are_evidence_here(settings: Any) -> None:
    # these tests read the advice's shape over three sessions; the evidence rule
    # (ADVICE_MIN_SESSIONS, default 10) has its own test below
    settings.ADVICE_MIN_SESSIONS = 1


@pytest.fixture
def project() -> Project:
    return make_project(name="acme")


@pytest.fixture
def auth(project: Project) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_key(project)}"}


def _session(project: Project, external_id: str, agent: str, turns: int) -> AgentSession:
    session = make_session(
        project,
        external_id=external_id,
        session={"model": MODEL, "agent": agent},
        messages=coding_session_messages(turns=turns),
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


@pytest.fixture
def sessions(project: Project) -> list[AgentSession]:
    return [
        _session(project, "run-1", "billing-migrator", 12),
        _session(project, "run-2", "billing-migrator", 10),
        _session(project, "<b>run-3<i>", "support-bot", 11),
    ]


def _experiment(project: Project, sessions: list[AgentSession], *, run: bool = True) -> Experiment:
    with mock.patch.object(outbox, "experiment_fan_out"):
        experiment = services.experiment_start(
            project=project, name="grid", policies=POLICIES, sessions=sessions, baselines=True
        )
    if run:
        for replay in experiment.runs.order_by("pk"):
            pipeline.replay_run_execute(run_id=replay.pk)
    experiment.refresh_from_db()
    return experiment


def test_experiment_advice_has_the_shape_design_fixes(
    client: Client, auth: dict[str, str], project: Project, sessions: list[AgentSession]
) -> None:
    experiment = _experiment(project, sessions)
    assert experiment.runs.count() == 4 * 3  # two policies and the two baselines
    response = client.get(f"/api/v1/experiments/{experiment.pk}/advice", headers=auth)
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    assert set(body) >= DESIGN_KEYS
    assert body["front"]
    for row in body["front"]:
        assert set(row) >= FRONT_KEYS
        assert row["overflowed_sessions"] == 0
        assert row["failed_splices"] == 0
        # null where the policy wrote no summary (the observed runs never compacted)
        assert row["retention"] is None or 0 <= row["retention"] <= 1
        assert set(row["retention_by_kind"]) == KINDS
    rec = body["recommended"]
    assert set(rec) >= RECOMMENDED_KEYS
    assert set(rec["lost_by_kind"]) == KINDS
    low, high = rec["usd_saved_ci"]
    assert low <= rec["usd_saved"] <= high
    named = {s.external_id for s in sessions}
    assert rec["worst_session"] in (named if rec["retention"] is not None else {None})
    assert set(body["recommended_by_agent"]) == {"billing-migrator", "support-bot"}
    assert body["recommended_by_agent"]["support-bot"]["sessions"] == 1
    assert set(body["baseline"]) == {"policy", "label", "usd", "retention"}
    assert body["baseline"]["label"].startswith("observed")
    assert body["baseline"]["usd"] > 0
    assert body["missing_baselines"] == []
    assert body["sessions"] == 3
    labels = {row["label"] for row in body["policies"]}
    assert any(label.startswith("clear at ") for label in labels)  # clear only
    assert any(label.startswith("drop turns at ") for label in labels)  # keep last N, no summary
    # the money saved is the baseline's total minus the recommended policy's
    chosen = next(r for r in body["policies"] if r["label"] == rec["label"])
    assert rec["usd_saved"] == pytest.approx(body["baseline"]["usd"] - chosen["usd"], abs=1e-5)


def test_the_recommended_policy_is_a_policy_the_replay_endpoint_takes(
    client: Client, auth: dict[str, str], project: Project, sessions: list[AgentSession]
) -> None:
    experiment = _experiment(project, sessions)
    body = client.get(f"/api/v1/experiments/{experiment.pk}/advice", headers=auth).json()
    for row in body["front"]:
        response = client.post(
            "/api/v1/sessions/run-1/replays",
            data={"policy": row["policy"]},
            content_type="application/json",
            headers=auth,
        )
        assert response.status_code == 202, (row["label"], response.content)


def test_advice_is_409_while_the_experiment_runs(
    client: Client, auth: dict[str, str], project: Project, sessions: list[AgentSession]
) -> None:
    experiment = _experiment(project, sessions, run=False)
    response = client.get(f"/api/v1/experiments/{experiment.pk}/advice", headers=auth)
    assert response.status_code == 409
    assert response.json() == {
        "error": f"experiment {experiment.pk}: 0 of 12 replays finished; "
        "the advice is ready when all are"
    }


def test_another_projects_key_never_sees_the_advice(
    client: Client, project: Project, sessions: list[AgentSession]
) -> None:
    experiment = _experiment(project, sessions)
    other = {"Authorization": f"Bearer {make_key(make_project(name='other'))}"}
    response = client.get(f"/api/v1/experiments/{experiment.pk}/advice", headers=other)
    assert response.status_code == 404
    response = client.get("/api/v1/advice", headers=other)
    assert response.status_code == 409
    assert response.json() == {"error": "advice: no session began in the last 30 days"}
    response = client.get("/api/v1/advice?agent=billing-migrator", headers=other)
    assert response.status_code == 400
    assert client.get("/api/v1/advice").status_code == 401


def test_project_advice_says_what_to_run_when_nothing_was_replayed(
    client: Client, auth: dict[str, str], sessions: list[AgentSession]
) -> None:
    response = client.get("/api/v1/advice?days=30", headers=auth)
    assert response.status_code == 409
    error = response.json()["error"]
    assert error.startswith(
        "advice: none of the 3 sessions of the last 30 days has a finished replay; "
    )
    assert '"baselines": true' in error


def test_project_advice_reuses_the_experiments_replays_per_agent(
    client: Client, auth: dict[str, str], project: Project, sessions: list[AgentSession]
) -> None:
    experiment = _experiment(project, sessions)
    expected = client.get(f"/api/v1/experiments/{experiment.pk}/advice", headers=auth).json()
    response = client.get("/api/v1/advice?days=30", headers=auth)
    assert response.status_code == 200, response.content
    assert response.json()["recommended"] == expected["recommended"]
    response = client.get("/api/v1/advice?days=7&agent=support-bot", headers=auth)
    assert response.status_code == 200
    body = response.json()
    assert body["sessions"] == 1
    assert list(body["recommended_by_agent"]) == ["support-bot"]
    rec = body["recommended"]
    # the worst session is named where the recommended policy has a retention to be worst at
    assert rec["worst_session"] == ("<b>run-3<i>" if rec["retention"] is not None else None)


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("days=0", "days: Input should be greater than or equal to 1"),
        ("days=400", "days: Input should be less than or equal to 365"),
        (
            "days=soon",
            "days: Input should be a valid integer, unable to parse string as an integer",
        ),
        ("agent=nobody", "agent: this project has no session of that agent"),
        ("agent=", "agent: String should have at least 1 character"),
    ],
)
def test_project_advice_refuses_bad_days_and_agents(
    client: Client, auth: dict[str, str], sessions: list[AgentSession], query: str, error: str
) -> None:
    response = client.get(f"/api/v1/advice?{query}", headers=auth)
    assert response.status_code == 400
    assert response.json() == {"error": error}


def test_experiment_page_leads_with_the_recommendation(
    client: Client, project: Project, sessions: list[AgentSession]
) -> None:
    experiment = _experiment(project, sessions)
    client.force_login(make_user(project=project))
    page = client.get(f"/experiments/{experiment.pk}/").content.decode()
    advice_at = page.index('id="advice-h">Recommendation</h2>')
    assert advice_at < page.index('id="agg-h"')  # above the table and the chart
    lead = page[advice_at : page.index("</p>", advice_at)]
    assert "Run <strong" in lead or "Keep the observed policy" in lead
    if "Run <strong" in lead:
        assert "90&nbsp;% CI $" in lead
        assert "over 3 sessions" in lead
        assert "worst session: <a href=" in lead
    assert "<h3>By agent</h3>" in page
    assert "Facts kept by kind" in page
    assert "on the front</span>" in page
    # hostile content stays text
    assert "<b>run-3<i>" not in page
    assert "&lt;b&gt;run-3&lt;i&gt;" in page


def test_replay_page_shows_what_each_summary_lost_of_the_one_before(
    client: Client, project: Project
) -> None:
    session = _session(project, "long-run", "billing-migrator", 24)
    run = services.replay_run_start(
        session=session,
        policy={"soft_limit": 7000, "hard_limit": 9000, "keep_last": 2, "stages": ["summarize"]},
    )
    pipeline.replay_run_execute(run_id=run.pk)
    summaries = run.spans.exclude(stage="clear_tool_results").exclude(retention=[]).count()
    assert summaries >= 2, "the policy summarizes repeatedly"
    client.force_login(make_user(project=project))
    page = client.get(f"/replays/{run.pk}/").content.decode()
    assert 'id="drift-h">Summary of a summary</h2>' in page
    table = page[page.index('id="drift-h"') : page.index("</table>", page.index('id="drift-h"'))]
    assert table.count('<th scope="row">#') == summaries - 1


def test_too_few_sessions_give_no_recommendation_and_say_how_many_it_takes(
    client: Client,
    auth: dict[str, str],
    project: Project,
    sessions: list[AgentSession],
    settings: Any,
) -> None:
    settings.ADVICE_MIN_SESSIONS = 10
    experiment = _experiment(project, sessions)
    body = client.get(f"/api/v1/experiments/{experiment.pk}/advice", headers=auth).json()
    assert body["recommended"] is None
    assert body["no_recommendation"] == {
        "reason": "3 sessions back it; at least 10 needed",
        "sessions_needed": 10,
    }
    client.force_login(make_user(project=project))
    page = client.get(f"/experiments/{experiment.pk}/").content.decode()
    assert "No recommendation: 3 sessions back it; at least 10 needed." in page
    assert "sessions would be needed" not in page  # said once, not twice
    assert "Run <strong" not in page
