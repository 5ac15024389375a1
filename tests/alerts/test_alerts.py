"""Alerts from the analysis pass: one per rule and session, updated, reopened, triaged."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock

import pytest
import time_machine

from alerts import services
from alerts import tasks as alert_tasks
from alerts.models import Alert, AlertSettings, AlertState
from compaction import pipeline, tasks
from compaction.models import CompactionSpan
from sessions import services as session_services
from sessions.errors import BadRequest, Conflict
from sessions.importers.claude_code import claude_code_import
from sessions.models import AgentSession
from sessions.schemas import EventBatch
from tests.factories import (
    coding_session_messages,
    make_project,
    make_session,
    make_user,
    make_webhook,
)
from tests.importers.corpus import AUTO, compaction_facts

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def compaction(seq: int, *, before: int | None = None, after: int = 1_000, **extra: Any) -> dict:
    # before None: the analysis takes the last call's context (a figure the calls contradict
    # would be replaced)
    event = {
        "seq": seq,
        "trigger": "auto",
        "strategy": "summarize",
        "tokens_before": before,
        "tokens_after": after,
        "summary": "Goal: migrate billing. Do not change the public API of the billing module.",
        "replaced": {"from_seq": 0, "to_seq": seq - 1},
    }
    event.update(extra)
    return event


def add_batch(session: AgentSession, **batch: Any) -> None:
    session_services.events_ingest(
        project=session.project,
        external_id=session.external_id,
        batch=EventBatch.model_validate(batch),
    )
    pipeline.session_analyse(session_id=session.pk)


def analysed_session(**batch: Any) -> AgentSession:
    batch.setdefault("messages", coding_session_messages(turns=40))
    session = make_session(**batch)
    pipeline.session_analyse(session_id=session.pk)
    return session


def rules_of(session: AgentSession) -> dict[str, Alert]:
    return {a.rule: a for a in Alert.objects.filter(session=session)}


def history(alert: Alert) -> list[tuple[str, str]]:
    return [(e.kind, e.to_state) for e in alert.events.order_by("created_at", "pk")]


# Compactions before prompts at seqs 4, 52 and 100: 24 model calls apart, beyond the thrash
# window; a fourth at 148 keeps that spacing.
THREE = [compaction(4), compaction(52), compaction(100)]


def test_three_compactions_open_one_repeated_compaction_alert_on_analysis() -> None:
    session = analysed_session(compactions=THREE)
    found = rules_of(session)
    assert set(found) == {"repeated_compaction"}
    alert = found["repeated_compaction"]
    assert alert.state == AlertState.OPEN
    assert alert.severity == "warning"
    assert alert.project_id == session.project_id
    assert alert.title == "Compacted 3 times in one session"
    assert alert.evidence["spans"] == [4, 52, 100]
    assert history(alert) == [("opened", "open")]


def test_re_analysing_a_session_does_not_duplicate_its_alerts() -> None:
    session = analysed_session(compactions=THREE)
    services.alerts_evaluate_session(session_id=session.pk)
    services.alerts_evaluate_session(session_id=session.pk)
    (alert,) = Alert.objects.filter(session=session)
    assert history(alert) == [("opened", "open")]


def test_new_evidence_updates_the_open_alert() -> None:
    session = analysed_session(compactions=THREE)
    add_batch(
        session, messages=coding_session_messages(turns=40)[:1], compactions=[compaction(148)]
    )
    (alert,) = Alert.objects.filter(session=session, rule="repeated_compaction")
    assert alert.evidence["spans"] == [4, 52, 100, 148]
    assert alert.title == "Compacted 4 times in one session"
    assert history(alert) == [("opened", "open"), ("updated", "open")]


def test_resolved_then_new_evidence_reopens_with_history_kept() -> None:
    session = analysed_session(compactions=THREE)
    alert = Alert.objects.get(session=session)
    user = make_user(project=session.project)
    services.alert_resolve(alert_id=alert.pk, reason="harness fixed in v2", actor=user)
    add_batch(
        session, messages=coding_session_messages(turns=40)[:1], compactions=[compaction(148)]
    )
    alert.refresh_from_db()
    assert alert.state == AlertState.OPEN
    assert alert.resolution == ""
    assert history(alert) == [("opened", "open"), ("resolved", "resolved"), ("reopened", "open")]
    resolved = alert.events.get(kind="resolved")
    assert (resolved.actor, resolved.comment, resolved.from_state) == (
        user,
        "harness fixed in v2",
        "open",
    )
    assert Alert.objects.filter(session=session).count() == 1


def test_each_rule_fires_on_a_session_built_to_trip_it() -> None:
    messages = coding_session_messages(turns=40)
    # The run grows to about 67k tokens (96 % of a 70k window); its last call reports more
    # than the window holds.
    messages[-1]["usage"] = {"input_tokens": 71_000, "output_tokens": 10}
    session = analysed_session(
        messages=messages,
        session={"context_window": 70_000},
        compactions=[
            compaction(40, summary="Goal: migrate billing to API v2."),  # loses the rule
            compaction(48, before=23_371, after=23_000),  # barely shrank; 4 calls later
            compaction(100, error="summarizer timed out"),
        ],
        probes=[{"seq": 8, "text": "do not change the public API"}],
    )
    found = rules_of(session)
    assert {
        "compaction_loop",
        "failed_splice",
        "overflow",
        "near_overflow",
        "lost_constraint",
    } <= set(found)
    assert found["failed_splice"].severity == "critical"
    # the splice at 48 left more than the session compacted at before (40): a loop, and the
    # thrash and the repeated compactions of the same compactions are named in its alert
    loop = found["compaction_loop"]
    assert loop.evidence["spans"] == [48]
    assert loop.evidence["also"] == ["compaction_thrash", "repeated_compaction"]
    assert any(
        i.startswith("also compaction_thrash: 2 compactions within 4")
        for i in loop.evidence["items"]
    )
    assert any(
        "do not change the public API" in i for i in found["lost_constraint"].evidence["items"]
    )
    assert found["overflow"].evidence["calls"] == [messages[-1]["seq"]]


def test_orphan_pairs_after_a_compaction_that_cut_a_tool_pair() -> None:
    messages = coding_session_messages(turns=10)
    # The compaction at seq 18 replaced 0..17: seq 18 is the tool_result of the use at 17.
    session = analysed_session(messages=messages, compactions=[compaction(18)])
    alert = rules_of(session)["orphan_pairs"]
    assert alert.evidence["items"] == ["@18 tool_result toolu_0004 without its other half"]
    assert alert.evidence["spans"] == [18]


def test_a_thrash_folds_the_open_repeated_compaction_alert_of_the_same_compactions() -> None:
    session = analysed_session(compactions=THREE)
    repeated = rules_of(session)["repeated_compaction"]
    add_batch(session, messages=coding_session_messages(1), compactions=[compaction(148)])
    add_batch(session, messages=coding_session_messages(1), compactions=[compaction(156)])
    found = rules_of(session)
    assert found["compaction_thrash"].state == AlertState.OPEN
    assert found["compaction_thrash"].evidence["also"] == ["repeated_compaction"]
    repeated.refresh_from_db()
    assert repeated.state == AlertState.RESOLVED
    thrash_id = found["compaction_thrash"].pk
    assert repeated.resolution == (
        f"Folded into the compaction_thrash alert #{thrash_id}: the same compactions."
    )


def test_project_thresholds_apply() -> None:
    project = make_project()
    AlertSettings.objects.create(project=project, repeated_compaction_count=2)
    session = analysed_session(project=project, compactions=THREE[:2])
    assert "repeated_compaction" in rules_of(session)


def test_a_rule_that_raises_leaves_the_analysis_done_and_logs_it(caplog) -> None:
    with mock.patch.object(services.engine, "evaluate", side_effect=ZeroDivisionError("boom")):
        session = analysed_session(compactions=THREE)
    assert session.analysis.status == "done"
    assert not Alert.objects.filter(session=session).exists()
    assert f"alert rules failed on session {session.pk}" in caplog.text


def test_a_real_claude_code_session_with_one_healthy_auto_compaction_raises_no_alert() -> None:
    claude_code_import(project=make_project(), paths=[AUTO])
    session = AgentSession.objects.get(external_id=compaction_facts(AUTO)["boundary"]["sessionId"])
    pipeline.session_analyse(session_id=session.pk)
    assert CompactionSpan.objects.filter(session=session, origin="observed").count() == 1
    assert list(Alert.objects.filter(session=session).values_list("rule", flat=True)) == []


# --- lifecycle ---------------------------------------------------------------------------


def open_alert() -> Alert:
    session = analysed_session(compactions=THREE)
    return Alert.objects.get(session=session)


def test_acknowledge_then_acknowledge_again_is_a_conflict() -> None:
    alert = open_alert()
    services.alert_acknowledge(alert_id=alert.pk)
    with pytest.raises(Conflict, match=f"alert {alert.pk}: cannot be acknowledged while"):
        services.alert_acknowledge(alert_id=alert.pk)
    assert history(Alert.objects.get(pk=alert.pk))[-1] == ("acknowledged", "acknowledged")


def test_resolve_needs_a_reason() -> None:
    alert = open_alert()
    with pytest.raises(BadRequest, match="reason: required; say why the alert is resolved"):
        services.alert_resolve(alert_id=alert.pk, reason="  ")


def test_mute_needs_a_future_time_and_expires_into_a_reopen_on_new_evidence() -> None:
    with time_machine.travel(NOW, tick=False):
        alert = open_alert()
        # 148 and 156 are close in calls: a thrash, which would fold this alert into its own
        AlertSettings.objects.create(project=alert.project, thrash_window_calls=1)
        with pytest.raises(BadRequest, match="until: must be in the future"):
            services.alert_mute(alert_id=alert.pk, until=NOW - timedelta(hours=1))
        services.alert_mute(alert_id=alert.pk, until=NOW + timedelta(hours=1))
        session = alert.session
        add_batch(session, messages=coding_session_messages(turns=1), compactions=[compaction(148)])
        alert.refresh_from_db()
        assert alert.state == AlertState.MUTED  # still muted: updated quietly
    with time_machine.travel(NOW + timedelta(hours=2), tick=False):
        add_batch(session, messages=coding_session_messages(turns=1), compactions=[compaction(156)])
        alert.refresh_from_db()
        assert alert.state == AlertState.OPEN
        assert [k for k, _ in history(alert)] == ["opened", "muted", "updated", "reopened"]


def test_an_expired_mute_puts_the_alert_back_in_the_queue() -> None:
    with time_machine.travel(NOW, tick=False):
        alert = open_alert()
        services.alert_mute(alert_id=alert.pk, until=NOW + timedelta(hours=1))
        assert services.alerts_unmute_expired() == 0
    with time_machine.travel(NOW + timedelta(hours=1, seconds=1), tick=False):
        assert services.alerts_unmute_expired() == 1
        assert services.alerts_unmute_expired() == 0
    alert.refresh_from_db()
    assert (alert.state, alert.muted_until) == (AlertState.OPEN, None)
    assert history(alert)[-1] == ("unmuted", "open")


def test_assign_comment_and_bulk_acknowledge() -> None:
    first, second = open_alert(), open_alert()
    user = make_user(project=first.project)
    services.alert_assign(alert_id=first.pk, assignee=user, actor=user)
    services.alert_comment(alert_id=first.pk, text="looking", actor=user)
    services.alert_acknowledge(alert_id=second.pk)
    assert services.alerts_acknowledge(alert_ids=[first.pk, second.pk, 999_999], actor=user) == 1
    first.refresh_from_db()
    assert first.assignee == user
    assert first.state == AlertState.ACKNOWLEDGED
    assert [e.comment for e in first.events.all()][1:3] == [
        f"assigned to {user.username}",
        "looking",
    ]


def test_webhooks_are_queued_on_open_and_reopen_only(django_capture_on_commit_callbacks) -> None:
    project = make_project()
    AlertSettings.objects.create(project=project, thrash_window_calls=1)  # see the mute test
    make_webhook(project, url="http://127.0.0.1:9/hook", rules=["repeated_compaction"])
    make_webhook(project, url="http://127.0.0.1:9/other", rules=["overflow"])
    with (
        mock.patch.object(alert_tasks.webhook_deliver, "delay") as deliver,
        mock.patch.object(tasks.session_analyse, "delay"),
    ):
        with django_capture_on_commit_callbacks(execute=True):
            session = analysed_session(project=project, compactions=THREE)
        assert deliver.call_count == 1  # the overflow-only hook does not want it
        with django_capture_on_commit_callbacks(execute=True):
            add_batch(session, messages=coding_session_messages(1), compactions=[compaction(148)])
        assert deliver.call_count == 1  # an update is not announced
        alert = Alert.objects.get(session=session)
        services.alert_resolve(alert_id=alert.pk, reason="fixed")
        with django_capture_on_commit_callbacks(execute=True):
            add_batch(session, messages=coding_session_messages(1), compactions=[compaction(156)])
        assert deliver.call_count == 2
    events = list(alert.deliveries.order_by("pk").values_list("event", flat=True))
    assert events == ["opened", "reopened"]
