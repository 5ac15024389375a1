"""A replay is judged by the same alert rules, shown beside the observed run, never notified."""

from __future__ import annotations

import pytest
from django.test import Client

from alerts import selectors as alert_selectors
from alerts.models import Alert, WebhookDelivery
from compaction import pipeline, services
from sessions.models import AgentSession
from tests.factories import (
    coding_session_messages,
    make_project,
    make_session,
    make_user,
    make_webhook,
)

pytestmark = pytest.mark.django_db

# Tight limits: the replay compacts again and again over a run that never compacted.
TIGHT = {"soft_limit": 6000, "hard_limit": 9000, "keep_last": 2, "stages": ["summarize"]}


def replayed(session: AgentSession):
    run = services.replay_run_start(session=session, policy=TIGHT)
    pipeline.replay_run_execute(run_id=run.pk)
    run.refresh_from_db()
    return run


@pytest.fixture
def session() -> AgentSession:
    project = make_project()
    make_webhook(project)
    session = make_session(project, messages=coding_session_messages(turns=10, tool_chars=8000))
    pipeline.session_analyse(session_id=session.pk)
    return session


def test_the_rules_judge_the_replay_without_storing_or_sending_anything(session) -> None:
    assert not Alert.objects.filter(session=session).exists()
    run = replayed(session)
    assert run.totals["compactions"] == 4
    findings = {f.rule: f for f in alert_selectors.replay_alert_findings(run)}
    # one alert per group of compactions: the thrash, naming the repeated compactions
    assert set(findings) == {"compaction_thrash"}
    assert findings["compaction_thrash"].evidence["also"] == ["repeated_compaction"]
    assert (
        "also repeated_compaction: Compacted 4 times in one session"
        in (findings["compaction_thrash"].evidence["items"])
    )
    assert findings["compaction_thrash"].evidence["numbers"]["calls_between"] == 4
    assert not Alert.objects.exists()
    assert not WebhookDelivery.objects.exists()


def test_the_replay_page_sets_the_rules_side_by_side(session, client: Client) -> None:
    run = replayed(session)
    client.force_login(make_user(project=session.project))
    html = client.get(f"/replays/{run.pk}/").content.decode()
    assert "Alerts: observed vs what this policy would have raised" in html
    assert "2 compactions within 4 model calls: the window refills at once" in html
    comparison = alert_selectors.replay_alert_comparison(run)
    assert [(r.rule, r.observed, r.replayed is not None) for r in comparison] == [
        ("compaction_thrash", None, True),
    ]
