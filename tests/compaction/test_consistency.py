"""One set of numbers: every page and endpoint that shows a money figure, a size or a count of
the demo sessions shows the same quantity the same way (to the cent and the token), and each
differently-defined money figure says what it is."""

from __future__ import annotations

import re
from typing import Any
from unittest import mock

import pytest
from django.test import Client
from django.utils.html import escape

from compaction import outbox, pipeline, selectors
from compaction import services as compaction_services
from sessions import example_data, services
from sessions.models import AgentSession, Project, Role
from sessions.schemas import EventBatch
from tests.factories import make_key, make_project, make_user

pytestmark = pytest.mark.django_db


def _tokens(value: int | None) -> str:
    """The pages' short token format (sessions/templatetags/traces.py ``tokens``)."""
    if value is None:
        return "\u2013"
    return f"{value / 1000:.1f}k" if value >= 1000 else str(value)


@pytest.fixture
def demo() -> Project:
    project = make_project(name="demo")
    for example in example_data.example_sessions():
        for batch in example.batches:
            services.events_ingest(
                project=project,
                external_id=example.external_id,
                batch=EventBatch.model_validate(batch),
            )
    for session in AgentSession.objects.filter(project=project):
        pipeline.session_analyse(session_id=session.pk)
    return project


def _api(client: Client, project: Project, path: str) -> Any:
    response = client.get(path, HTTP_AUTHORIZATION=f"Bearer {make_key(project)}")
    assert response.status_code == 200, (path, response.content)
    return response.json()


def _cells(html: str, row_marker: str) -> list[str]:
    """The text of each cell of the table row holding ``row_marker``."""
    start = html.index(row_marker)
    row = html[html.rfind("<tr", 0, start) : html.index("</tr>", start)]
    return [
        re.sub(r"<[^>]+>", "", cell).strip()
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
    ]


def test_every_money_size_and_count_of_the_demo_reads_the_same_everywhere(
    client: Client, demo: Project
) -> None:
    client.force_login(make_user(project=demo, role=Role.ADMIN))
    listed = client.get("/").content.decode()
    sessions = list(AgentSession.objects.filter(project=demo, parent__isnull=True))
    assert len(sessions) >= 5
    for session in sessions:
        answer = _api(client, demo, f"/api/v1/sessions/{session.external_id}")
        page = client.get(f"/sessions/{session.pk}/").content.decode()
        cost = selectors.session_cost(session)

        # money: the billed figure, to the cent, on the list, the page and the API
        usd = answer["cost"]["usd"]
        assert usd == cost.usd
        if usd is not None:
            dollars = f"${usd:,.2f}"
            assert f'<dd class="cost">{dollars}' in page, session.external_id
            assert f"{dollars}</span>" in listed, session.external_id
            if answer["cost"]["with_subagents_usd"] != usd:
                assert f"${answer['cost']['with_subagents_usd']:,.2f} with subagents" in page
        # it says what it is
        assert "(billed)</span></dt>" in page

        # counts: messages and compactions
        assert f"of {answer['message_count']:,}</span></h2>" in page or (
            f"of {answer['message_count']}</span></h2>" in page
        ), session.external_id
        compactions = _api(client, demo, f"/api/v1/sessions/{session.external_id}/compactions")
        assert answer["compaction_count"] == len(compactions)
        assert f'Compactions <span class="muted">{len(compactions)}</span>' in page

        # sizes: before and after each compaction, the API, the table and the span page
        for item in compactions:
            cells = _cells(page, f">#{item['seq']}</a></td>")
            assert cells[3].split()[0] == _tokens(item["tokens_before"]), session.external_id
            assert cells[4] == _tokens(item["tokens_after"]), session.external_id
            span_page = client.get(f"/sessions/{session.pk}/compactions/{item['seq']}/")
            assert span_page.status_code in (200, 302)
            if span_page.status_code == 200:
                text = span_page.content.decode()
                before = "\u2013" if item["tokens_before"] is None else f"{item['tokens_before']:,}"
                assert f"<dt>Tokens before</dt><dd>{before}" in text, session.external_id
                if item["tokens_before_source"] == "computed" and item["tokens_before_note"]:
                    assert item["tokens_before_note"] in text

        # the curve: one point per call, the peak the page states
        curve = _api(client, demo, f"/api/v1/sessions/{session.external_id}/curve")
        analysis = selectors.analysis_for(session)
        assert analysis is not None
        assert len(curve["points"]) == analysis.call_count
        assert all(p["context_tokens"] > 0 for p in curve["points"])
        # no size before a compaction more than 20 % above the session's own last call
        for item in compactions:
            earlier = [p for p in curve["points"] if p["seq"] < item["seq"]]
            if earlier and item["tokens_before"] is not None and not earlier[-1]["estimated"]:
                assert item["tokens_before"] <= earlier[-1]["context_tokens"] * 1.2, item


def test_the_replay_rule_and_the_billed_figure_each_say_what_they_are(
    client: Client, demo: Project
) -> None:
    session = max(
        AgentSession.objects.filter(project=demo, parent__isnull=True),
        key=lambda s: s.message_count,
    )
    run = compaction_services.replay_run_start(
        session=session, policy={"soft_limit": 20_000, "hard_limit": 30_000, "keep_last": 2}
    )
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "done", run.error
    client.force_login(make_user(project=demo, role=Role.ADMIN))
    replay = client.get(f"/replays/{run.pk}/").content.decode()
    money = _api(client, demo, f"/api/v1/replays/{run.pk}")
    observed = money["cost"]["observed_usd"] if "cost" in money else None
    assert "replay rule: list prices, no cache; not billed" in replay
    if observed is not None:
        assert f"${observed:,.2f}" in replay
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    assert "(billed)</span></dt>" in page
    assert escape(selectors.MONEY_RULE) in replay  # the rule, in full, on hover


def test_an_experiments_billed_cost_is_the_sum_of_its_sessions_billed_costs(
    client: Client, demo: Project
) -> None:
    sessions = list(AgentSession.objects.filter(project=demo, parent__isnull=True))
    with mock.patch.object(outbox, "experiment_fan_out"):
        experiment = compaction_services.experiment_start(
            project=demo,
            name="grid",
            policies=[{"soft_limit": 20_000, "hard_limit": 30_000, "keep_last": 2}],
            sessions=sessions,
            baselines=False,
        )
    for run in experiment.runs.order_by("pk"):
        pipeline.replay_run_execute(run_id=run.pk)
    experiment.refresh_from_db()
    by_session = [
        _api(client, demo, f"/api/v1/sessions/{s.external_id}")["cost"]["usd"] for s in sessions
    ]
    billed = sum(usd for usd in by_session if usd is not None)
    answer = _api(client, demo, f"/api/v1/experiments/{experiment.pk}")
    assert answer["billed_usd"] == pytest.approx(billed, abs=1e-6)
    client.force_login(make_user(project=demo, role=Role.ADMIN))
    page = client.get(f"/experiments/{experiment.pk}/").content.decode()
    assert f"Billed for its {len(sessions)} sessions: <strong>${billed:,.2f}</strong>" in page
    assert "(billed, as logged" in page
