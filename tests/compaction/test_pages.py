"""Span, replay and experiment pages through the Django test client."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.utils.html import escape

from compaction import pipeline, services
from compaction.engine.replay import limits_below_peak
from compaction.models import CompactionSpan, ReplayRun
from sessions.models import Role
from tests.factories import (
    CONSTRAINT,
    make_long_compacted_session,
    make_project,
    make_reread_session,
    make_user,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return make_project()


@pytest.fixture
def session(project):
    return make_long_compacted_session(
        project, summary="Goal: migrate billing.\nDone:\n- modules 0-20"
    )


@pytest.fixture
def viewer(client: Client, project) -> Client:
    client.force_login(make_user(project=project))
    return client


def test_session_page_embeds_the_curve_with_one_point_per_call(viewer: Client, session):
    response = viewer.get(f"/sessions/{session.pk}/")
    figure = response.context["figure"]
    context_points = sum(len(t["x"]) for t in figure["data"] if t["name"].startswith("Context"))
    assert context_points == 60
    [markers] = [t for t in figure["data"] if t["name"] == "Observed compaction"]
    span = CompactionSpan.objects.get(session=session)
    assert markers["x"] == [100]
    assert markers["customdata"] == [span.get_absolute_url()]
    assert 'data-chart="token-curve"' in response.content.decode()


def test_span_page_groups_history_and_shows_the_lost_constraint(viewer: Client, session):
    span = CompactionSpan.objects.get(session=session)
    response = viewer.get(span.get_absolute_url())
    assert response.status_code == 200
    history = response.context["history"]
    assert [m.seq for m in history.head] == [0, 1, 2, 3]
    assert history.middle_start[0].seq == 4
    assert history.middle_end[-1].seq == 95
    assert history.middle_hidden == 92 - 80
    assert [m.seq for m in history.tail] == [96, 97, 98, 99]
    lost = [item["text"] for item in response.context["lost"]]
    assert CONSTRAINT in lost
    body = response.content.decode()
    assert "Lost by this compaction" in body
    assert [s.name for s in response.context["marked_summary"]] == ["Goal", "Done"]
    # One verdict for the splice and the loss: the splice worked, but a rule was lost.
    assert not span.failed
    assert span.verdict.status == "bad"
    assert '<span class="badge bad" title="The compaction' in body
    assert "splice ok" not in body
    session_page = viewer.get(f"/sessions/{session.pk}/").content.decode()
    assert span.verdict.label in session_page


def test_span_page_leads_with_what_was_needed_again_and_sets_mentions_apart(
    viewer: Client, project
):
    session = make_reread_session(
        project, prompt="Migrate billing to API v2. The review flagged web/page.tsx."
    )
    pipeline.session_analyse(session_id=session.pk)
    span = CompactionSpan.objects.get(session=session)
    response = viewer.get(span.get_absolute_url())
    body = response.content.decode()
    assert "Lost and needed again" in body
    assert "lost, not needed since: 4" in body  # modules 2-5, read once each
    [first] = response.context["lost"][:1]
    assert (first["text"], first["needed_again"]["how"]) == ("billing/module_1.py", "reread")
    assert "(read again) at" in body
    # named only in the prompt, never opened: listed apart, not a loss and not counted
    assert [(i["text"], i["verdict"]) for i in response.context["not_facts"]] == [
        ("web/page.tsx", "mentioned")
    ]
    assert "web/page.tsx" not in [i["text"] for i in response.context["retention"]]
    assert "Not facts, never counted as lost" in body


def test_span_middle_loads_the_hidden_messages(viewer: Client, session):
    span = CompactionSpan.objects.get(session=session)
    response = viewer.get(span.url(middle=True))
    seqs = [m.seq for m in response.context["messages"]]
    assert seqs == list(range(44, 56))


def test_pages_of_another_project_are_404(client: Client, session):
    client.force_login(make_user(project=make_project()))
    span = CompactionSpan.objects.get(session=session)
    run = services.replay_run_start(session=session, policy={})
    for url in (
        span.get_absolute_url(),
        f"/sessions/{session.pk}/spans/{span.pk}/",
        f"/sessions/{session.pk}/replay/",
        f"/replays/{run.pk}/",
        f"/replays/{run.pk}/status/",
    ):
        assert client.get(url).status_code == 404, url


def test_replay_form_starts_a_run_and_redirects(viewer: Client, session):
    form = viewer.get(f"/sessions/{session.pk}/replay/")
    # below the session's own peak, so the first replay compacts (test_replay_defaults.py)
    peak = session.analysis.peak_context_tokens
    assert form.context["form"]["hard_limit"].initial == limits_below_peak(peak, 200_000)[1]
    response = viewer.post(
        f"/sessions/{session.pk}/replay/",
        {
            "soft_limit": 6000,
            "hard_limit": 9000,
            "keep_last": 2,
            "pin_head": "on",
            "unit": "step",
            "stages": "summarize",
            "summarizer": "extractive",
        },
    )
    assert response.status_code == 302, response.context["form"].errors
    run = ReplayRun.objects.get()
    assert response["Location"] == f"/replays/{run.pk}/"
    assert run.policy["hard_limit"] == 9000
    assert run.policy["unit"] == "step"
    assert run.policy["stages"] == ["summarize"]


def test_replay_form_shows_why_a_policy_is_refused(viewer: Client, session):
    response = viewer.post(
        f"/sessions/{session.pk}/replay/",
        {"soft_limit": 9000, "hard_limit": 6000, "keep_last": 2, "summarizer": "anthropic"},
    )
    assert response.status_code == 200
    assert response.context["form"].errors["soft_limit"] == [
        "The soft limit must not exceed the hard limit."
    ]
    assert not ReplayRun.objects.exists()


def test_a_viewer_is_refused_the_replay_form_and_shown_no_link_to_it(
    client: Client, session, project
):
    client.force_login(make_user(project=project, role=Role.VIEWER))
    assert client.get(f"/sessions/{session.pk}/replay/").status_code == 403
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert f"/sessions/{session.pk}/replay/" not in page
    assert "Replay with another policy" not in page
    response = client.post(
        f"/sessions/{session.pk}/replay/",
        {"soft_limit": 6000, "hard_limit": 9000, "keep_last": 2, "summarizer": "extractive"},
    )
    assert response.status_code == 403
    assert not ReplayRun.objects.exists()


def test_a_viewer_cannot_start_an_experiment(client: Client, session, project):
    client.force_login(make_user(project=project, role=Role.VIEWER))
    response = client.post(
        "/experiments/new/",
        {
            "project": project.pk,
            "name": "grid",
            "hard_limits": "9000",
            "keep_lasts": "2",
            "unit": "turn",
            "stages": "summarize",
            "summarizer": "extractive",
            "sessions": 5,
        },
    )
    assert response.status_code == 403
    assert not project.experiments.exists()
    assert "/experiments/new/" not in client.get("/experiments/").content.decode()
    form = client.get("/experiments/new/").content.decode()
    assert "Starting an experiment takes the engineer role in a project; you have none." in form
    assert '<form method="post"' not in form.split('<main id="main">')[1]


def test_replay_status_polls_while_active_and_stops_when_done(viewer: Client, session):
    run = services.replay_run_start(
        session=session, policy={"hard_limit": 9000, "soft_limit": 6000}
    )
    polling = viewer.get(f"/replays/{run.pk}/status/").content.decode()
    assert 'hx-trigger="every 1s"' in polling
    pipeline.replay_run_execute(run_id=run.pk)
    finished = viewer.get(f"/replays/{run.pk}/status/").content.decode()
    assert "hx-trigger" not in finished
    assert "Observed vs replayed context" in finished
    figure = json.loads(
        finished.split('id="replay-curve" type="application/json">')[1].split("</script>")[0]
    )
    names = [t["name"] for t in figure["data"]]
    assert "Replayed context" in names


def test_experiment_form_starts_a_grid(viewer: Client, session, project):
    response = viewer.post(
        "/experiments/new/",
        {
            "project": project.pk,
            "name": "grid",
            "hard_limits": "9000, 20000",
            "keep_lasts": "2",
            "unit": "turn",
            "stages": "clear_tool_results,summarize",
            "summarizer": "extractive",
            "sessions": 5,
        },
    )
    assert response.status_code == 302, response.context["form"].errors
    experiment = project.experiments.get()
    assert experiment.runs.count() == 2
    page = viewer.get(response["Location"])
    assert "hx-trigger" in page.content.decode()


def test_experiment_form_rejects_a_bad_grid(viewer: Client, project):
    response = viewer.post(
        "/experiments/new/",
        {
            "project": project.pk,
            "name": "grid",
            "hard_limits": "lots",
            "keep_lasts": "2",
            "summarizer": "extractive",
            "sessions": 5,
        },
    )
    assert response.context["form"].errors["hard_limits"] == [
        "Hard limits: whole numbers separated by commas"
    ]


def test_span_page_shows_why_each_fact_was_kept_or_lost(viewer: Client, session):
    span = CompactionSpan.objects.get(session=session)
    response = viewer.get(span.get_absolute_url())
    by_text = {item["text"]: item for item in response.context["retention"]}
    lost = by_text[CONSTRAINT]
    assert not lost["kept"]
    assert lost["evidence"]  # the reason nothing matched
    body = response.content.decode()
    assert f'<span class="evidence muted small">{escape(lost["evidence"])}' in body
    kept = [item for item in response.context["retention"] if item["kept"]]
    assert kept, "the summary's goal keeps the task"
    assert f"found: {escape(kept[0]['evidence'])}" in body


def test_span_page_escapes_evidence_taken_from_the_trace(viewer: Client, session):
    span = CompactionSpan.objects.get(session=session)
    span.retention = [
        {
            "kind": "path",
            "text": "billing/api.py",
            "seq": 3,
            "kept": True,
            "method": "containment",
            "evidence": "<script>alert(1)</script> billing/api.py",
        }
    ]
    span.save()
    body = viewer.get(span.get_absolute_url()).content.decode()
    assert "<script>alert(1)</script>" not in body
    assert "found: &lt;script&gt;alert(1)&lt;/script&gt; billing/api.py" in body
