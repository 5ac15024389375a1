"""Derived-data endpoints: curve, observed compactions, replays, experiments."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from django.test import Client

from compaction import pipeline, services, tasks
from compaction.models import Experiment, ReplayRun
from tests.factories import (
    coding_session_messages,
    make_key,
    make_project,
    make_reread_session,
    make_session,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return make_project(name="acme")


@pytest.fixture
def auth(project) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_key(project)}"}


@pytest.fixture
def session(project):
    return make_session(
        project,
        external_id="run-1",
        messages=coding_session_messages(turns=8),
        compactions=[
            {
                "seq": 24,
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": 13_681,  # the context of the last call before it (#23)
                "tokens_after": 13_600,
                "summary": "Goal: migrate billing.",
                "replaced": {"from_seq": 0, "to_seq": 19},
            }
        ],
    )


def test_curve_is_pending_until_analysed_then_lists_points(client: Client, auth, session):
    pending = client.get("/api/v1/sessions/run-1/curve", headers=auth).json()
    assert pending["points"] == []
    assert pending["current"] is False
    pipeline.session_analyse(session_id=session.pk)
    curve = client.get("/api/v1/sessions/run-1/curve", headers=auth).json()
    assert curve["status"] == "done"
    assert curve["current"] is True
    assert curve["context_window"] == 200000
    assert len(curve["points"]) == 16
    assert set(curve["points"][0]) == {
        "seq",
        "context_tokens",
        "billed_tokens",
        "fill",
        "estimated",
    }


def test_compactions_list_observed_spans_with_their_verdict(client: Client, auth, session):
    pipeline.session_analyse(session_id=session.pk)
    [event] = client.get("/api/v1/sessions/run-1/compactions", headers=auth).json()
    assert event["seq"] == 24
    assert event["trigger"] == "auto"
    assert (event["tokens_before"], event["tokens_after"]) == (13_681, 13_600)
    assert event["replaced"] == {"from_seq": 0, "to_seq": 19}
    assert event["failed"] is True
    assert "barely change" in event["failure_reason"]
    assert "Do not change the public API of the billing module." in event["lost"]


def test_compactions_give_every_fact_its_verdict_and_the_lost_file_read_again(
    client: Client, auth, project
):
    # after the compaction at seq 24 the agent reads module_1 again: the summary lost it
    make_reread_session(project, external_id="run-2")
    session = project.sessions.get(external_id="run-2")
    pipeline.session_analyse(session_id=session.pk)
    [event] = client.get("/api/v1/sessions/run-2/compactions", headers=auth).json()
    facts = {f["text"]: f for f in event["facts"]}
    assert facts["billing/module_0.py"]["verdict"] == "kept"
    assert facts["billing/module_0.py"]["kind"] == "file"
    assert facts["billing/module_1.py"]["verdict"] == "lost"
    assert facts["billing/module_1.py"]["needed_again"] == {"seq": 29, "how": "reread"}
    assert facts["billing/module_2.py"]["needed_again"] is None
    assert set(event["lost"]) == {t for t, f in facts.items() if f["verdict"] == "lost"}
    assert event["verdict"]["label"].startswith("Lost and needed again: billing/module_1.py")


def test_replay_is_queued_then_readable(
    client: Client, auth, session, django_capture_on_commit_callbacks
):
    with (
        mock.patch.object(tasks.replay_run_execute, "delay"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = client.post(
            "/api/v1/sessions/run-1/replays",
            data={"policy": {"soft_limit": 6000, "hard_limit": 9000, "keep_last": 2}},
            content_type="application/json",
            headers=auth,
        )
    assert response.status_code == 202
    queued = response.json()
    assert queued["status"] == "queued"
    url = f"/api/v1/replays/{queued['id']}"
    assert client.get(url, headers=auth).json()["curve"] is None
    pipeline.replay_run_execute(run_id=queued["id"])
    done = client.get(url, headers=auth).json()
    assert done["status"] == "done"
    assert done["progress"] == 1.0
    assert len(done["curve"]) == 16
    assert done["totals"]["calls"] == 16
    assert isinstance(done["spans"], list)


def test_replay_with_an_empty_body_uses_the_default_policy(client: Client, auth, session):
    response = client.post(
        "/api/v1/sessions/run-1/replays", data=b"", content_type="application/json", headers=auth
    )
    assert response.status_code == 202, response.content
    assert ReplayRun.objects.get().policy["hard_limit"] == 120_000


def test_replay_rejects_a_bad_policy(client: Client, auth, session):
    response = client.post(
        "/api/v1/sessions/run-1/replays",
        data={"policy": {"hard_limit": -1}},
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code == 400
    assert response.json() == {"error": "policy.hard_limit: must be a positive number of tokens"}


def test_replays_of_another_project_are_404(client: Client, session):
    run = services.replay_run_start(session=session, policy={})
    other = {"Authorization": f"Bearer {make_key(make_project())}"}
    response = client.get(f"/api/v1/replays/{run.pk}", headers=other)
    assert response.status_code == 404
    assert response.json() == {"error": f"replay {run.pk} not found"}
    assert client.get("/api/v1/sessions/run-1/curve", headers=other).status_code == 404


def test_experiment_over_the_projects_sessions(client: Client, auth, session, project):
    make_session(project, external_id="run-2", messages=coding_session_messages(turns=4))
    response = client.post(
        "/api/v1/experiments",
        data={"name": "tight", "policies": [{"hard_limit": 9000, "soft_limit": 6000}]},
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code == 202
    body = response.json()
    assert (body["runs"], body["runs_done"], body["status"]) == (2, 0, "queued")
    assert client.get(f"/api/v1/experiments/{body['id']}", headers=auth).json()["runs"] == 2


def test_replay_refuses_an_unknown_summarizer_with_400_naming_the_field(
    client: Client, auth, session
):
    response = client.post(
        "/api/v1/sessions/run-1/replays",
        data={"policy": {"summarizer": "gpt-9"}},
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith("policy.summarizer: ")
    assert "'extractive'" in response.json()["error"]
    assert not ReplayRun.objects.exists()


def test_replay_refuses_an_unknown_stage_and_an_unknown_field(client: Client, auth, session):
    for policy, field in (
        ({"stages": ["clear_tool_results", "shred"]}, "policy.stages[1]: "),
        ({"bogus": 1}, "policy.bogus: "),
    ):
        response = client.post(
            "/api/v1/sessions/run-1/replays",
            data={"policy": policy},
            content_type="application/json",
            headers=auth,
        )
        assert response.status_code == 400
        assert response.json()["error"].startswith(field)
    assert not ReplayRun.objects.exists()


def test_the_design_documents_replay_example_is_accepted(client: Client, auth, session):
    policy = {"soft_limit": 90000, "hard_limit": 120000, "keep_last": 6, "summarizer": "extractive"}
    response = client.post(
        "/api/v1/sessions/run-1/replays",
        data={"policy": policy},
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code == 202, response.content
    stored = ReplayRun.objects.get().policy
    assert {key: stored[key] for key in policy} == policy
    assert stored["stages"] == ["clear_tool_results", "summarize"]  # the default, not null


def test_experiment_refuses_an_unknown_summarizer_naming_the_policy(client: Client, auth, session):
    response = client.post(
        "/api/v1/experiments",
        data={"policies": [{"hard_limit": 9000}, {"summarizer": "gpt-9"}]},
        content_type="application/json",
        headers=auth,
    )
    assert response.status_code == 400
    assert response.json()["error"].startswith("policies[1].summarizer: ")
    assert not Experiment.objects.exists()


def test_openapi_names_the_policy_schema_with_its_enums(client: Client):
    schema = client.get("/api/v1/openapi.json").json()
    policy = schema["components"]["schemas"]["PolicyIn"]
    assert "summarizer" in policy["properties"]
    text = json.dumps(schema["components"]["schemas"])
    for name in ("extractive", "anthropic", "server_compaction", "sliding_window", "step"):
        assert f'"{name}"' in text
    replay = schema["paths"]["/api/v1/sessions/{external_id}/replays"]["post"]
    assert "PolicyIn" in json.dumps(schema["components"]["schemas"]["ReplayIn"])
    assert "400" in replay["responses"]
