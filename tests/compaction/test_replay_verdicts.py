"""Replay and experiment pages say when a policy overflowed and when retention is not comparable."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.test import Client

from compaction import outbox, pipeline, services
from compaction.models import ReplayRun
from tests.factories import coding_session_messages, make_project, make_session, make_user

pytestmark = pytest.mark.django_db

# A one-prompt session outgrows this window; "hard 9,000 in a 12,000 window" is the ratio of
# "hard 160k in a 200k window".
ONE_PROMPT_POLICY: dict[str, Any] = {
    "soft_limit": 6000,
    "hard_limit": 9000,
    "keep_last": 2,
    "context_window": 12_000,
}


def one_prompt_messages(calls: int = 24) -> list[dict[str, Any]]:
    """One prompt, then call after call, as a coding agent runs it."""
    messages: list[dict[str, Any]] = [
        {"seq": 0, "role": "user", "content": "Implement spotter-gqc. Never push to main."}
    ]
    for i in range(calls):
        seq = len(messages)
        messages.append(
            {
                "seq": seq,
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Reading module {i}."},
                    {
                        "type": "tool_use",
                        "id": f"toolu_{i:04d}",
                        "name": "Read",
                        "input": {"file_path": f"lib/spotter/m{i}.ex"},
                    },
                ],
            }
        )
        messages.append(
            {
                "seq": seq + 1,
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"toolu_{i:04d}",
                        "content": f"defmodule M{i} do\n" + "  def f, do: :ok\n" * 120,
                    }
                ],
            }
        )
    messages.append({"seq": len(messages), "role": "assistant", "content": "Implemented."})
    return messages


@pytest.fixture
def project():
    return make_project()


@pytest.fixture
def viewer(client: Client, project) -> Client:
    client.force_login(make_user(project=project))
    return client


def replayed(session, policy: dict[str, Any]) -> ReplayRun:
    run = services.replay_run_start(session=session, policy=policy)
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    return run


def test_a_replay_that_overflowed_is_not_presented_as_healthy(viewer: Client, project):
    session = make_session(project, messages=one_prompt_messages())
    pipeline.session_analyse(session_id=session.pk)
    run = replayed(session, {**ONE_PROMPT_POLICY, "step_fallback": False})
    assert run.totals["overflow_calls"] > 0
    assert run.totals["verdict"]["status"] == "overflow"
    page = viewer.get(f"/replays/{run.pk}/")
    body = page.content.decode()
    health = page.context["health"]
    assert not health.healthy
    assert health.overflow_calls == run.totals["overflow_calls"]
    assert "Overflowed." in body
    assert f"{run.totals['overflow_calls']} calls over the 12,000-token window" in body
    assert "Healthy." not in body
    row = next(r for r in page.context["comparison"] if r["label"] == "Calls over the window")
    assert row["replayed"] == run.totals["overflow_calls"]
    assert row["observed"] == health.observed_overflow_calls > 0


def test_the_default_policy_keeps_a_one_prompt_session_healthy(viewer: Client, project):
    session = make_session(project, messages=one_prompt_messages())
    pipeline.session_analyse(session_id=session.pk)
    run = replayed(session, ONE_PROMPT_POLICY)
    assert run.policy["step_fallback"] is True
    assert run.totals["overflow_calls"] == 0
    assert run.totals["clears"] >= 1  # inside the one turn, at step boundaries
    assert run.totals["orphan_pairs"] == 0
    body = viewer.get(f"/replays/{run.pk}/").content.decode()
    assert "Healthy." in body
    assert "Overflowed." not in body
    assert "(steps when a turn cannot fit)" in body


def test_the_page_says_extractive_retention_cannot_be_compared_with_a_models(
    viewer: Client, project
):
    session = make_session(
        project,
        messages=coding_session_messages(turns=30, tool_chars=3000),
        compactions=[
            {
                "seq": 100,
                "trigger": "auto",
                "tokens_before": 25_616,  # the context of the last call before it (#99)
                "tokens_after": 3_000,
                "summary": "Goal: migrate billing.\nDone:\n- modules 0-20",
                "replaced": {"from_seq": 4, "to_seq": 95},
            }
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    run = replayed(session, {"soft_limit": 6000, "hard_limit": 9000})
    page = viewer.get(f"/replays/{run.pk}/")
    assert page.context["health"].comparable is False
    body = page.content.decode()
    assert "Retention is not comparable" in body
    assert "not comparable</span>" in body


def test_a_session_without_an_observed_summary_has_nothing_to_compare(viewer: Client, project):
    session = make_session(project, messages=one_prompt_messages())
    pipeline.session_analyse(session_id=session.pk)
    run = replayed(session, ONE_PROMPT_POLICY)
    body = viewer.get(f"/replays/{run.pk}/").content.decode()
    assert "The session has no observed summary to compare the replayed ones with." in body


def test_the_replay_form_offers_clearing_only(viewer: Client, project):
    session = make_session(project, messages=one_prompt_messages())
    form = viewer.get(f"/sessions/{session.pk}/replay/").context["form"]
    assert ("clear_tool_results", "Clear old tool results only") in form["stages"].field.choices
    assert form["step_fallback"].initial is True
    response = viewer.post(
        f"/sessions/{session.pk}/replay/",
        {
            "soft_limit": 6000,
            "hard_limit": 9000,
            "keep_last": 2,
            "pin_head": "on",
            "unit": "turn",
            "step_fallback": "on",
            "stages": "clear_tool_results",
            "summarizer": "extractive",
        },
    )
    assert response.status_code == 302, response.context["form"].errors
    run = ReplayRun.objects.get()
    assert run.policy["stages"] == ["clear_tool_results"]
    assert run.policy["step_fallback"] is True
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.totals["clears"] > 0
    assert run.totals["compactions"] == 0


def test_the_experiment_form_offers_clearing_only(viewer: Client, project):
    make_session(project, messages=one_prompt_messages())
    with mock.patch.object(outbox, "experiment_fan_out"):
        response = viewer.post(
            "/experiments/new/",
            {
                "project": project.pk,
                "name": "clear only",
                "hard_limits": "9000",
                "keep_lasts": "2",
                "unit": "turn",
                "stages": "clear_tool_results",
                "summarizer": "extractive",
                "sessions": 5,
            },
        )
    assert response.status_code == 302, response.context["form"].errors
    (run,) = project.experiments.get().runs.all()
    assert run.policy["stages"] == ["clear_tool_results"]


def test_the_experiment_table_counts_overflow_per_policy_and_per_run(viewer: Client, project):
    sessions = [make_session(project, messages=one_prompt_messages()) for _ in range(2)]
    with mock.patch.object(outbox, "experiment_fan_out"):
        experiment = services.experiment_start(
            project=project,
            name="fallback",
            policies=[
                {**ONE_PROMPT_POLICY, "step_fallback": False},
                ONE_PROMPT_POLICY,
            ],
            sessions=sessions,
        )
    for run in experiment.runs.all():
        pipeline.replay_run_execute(run_id=run.pk)
    experiment.refresh_from_db()
    strict, fallback = experiment.aggregate["policies"]
    overflowed = [r for r in experiment.runs.all() if r.policy["step_fallback"] is False]
    assert strict["overflow_calls"] == sum(r.totals["overflow_calls"] for r in overflowed) > 0
    assert strict["overflowed_runs"] == 2
    assert fallback["overflow_calls"] == fallback["overflowed_runs"] == 0
    body = viewer.get(f"/experiments/{experiment.pk}/").content.decode()
    assert "Calls over the window" in body
    assert "overflowed in 2 sessions" in body
    assert body.count(">Overflowed</span>") == 2
