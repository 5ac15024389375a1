"""Deleting sessions in set-based SQL (sessions.erasure) does what Django's cascade does: the
same rows deleted in every table, references that are SET_NULL cleared, the same counts per
model, on a project where every table under a session holds rows, subagent sessions included."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.apps import apps
from django.db import transaction

from alerts.models import Alert, WebhookDelivery
from compaction.models import RetiredSpan
from privacy.models import AuditEvent
from sessions import erasure, services
from sessions.models import AgentSession
from team import services as team_services
from team.models import Comment
from tests.factories import conversation, make_project, make_session, wire_message
from tests.privacy.doors import labelled_project

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def table_rows() -> dict[str, set[str]]:
    """Every row of every model, each as the text of its column values."""
    return {
        model._meta.label: {repr(row) for row in model._default_manager.values_list()}
        for model in apps.get_models()
        if model._meta.managed
    }


def rich_project() -> tuple[list[int], list[int]]:
    """The labelled project (every place a value lives), a subagent session under its session,
    and a webhook delivery that refers to an alert. Returns (to delete, to keep)."""
    door = labelled_project()
    child = make_session(
        door.project, external_id="subagent", messages=[wire_message(0, "user", "sub")]
    )
    AgentSession.objects.filter(pk=child.pk).update(parent=door.session)
    alert = Alert.objects.filter(session=door.session).first()
    assert alert is not None
    WebhookDelivery.objects.create(
        webhook=door.project.webhooks.first(), alert=alert, event="opened", body="{}"
    )
    comment = Comment.objects.filter(session=door.session).first()
    assert comment is not None
    team_services.comment_edit(comment_id=comment.pk, editor=comment.author, body="revised")
    RetiredSpan.objects.create(span_id=10**12, session=door.session, seq=1)
    other = make_session(make_project(), external_id="keeps-its-data", messages=conversation(4))
    return [door.session.pk], [other.pk]


def test_every_model_under_a_session_is_in_the_plan_and_holds_rows_here() -> None:
    rich_project()
    planned = {step.model for step in erasure._plan()}
    empty = sorted(m._meta.label for m in planned if not m._default_manager.exists())
    assert empty == [], "the equivalence test below would not cover these"
    # Every model with a foreign key chain to a session is reached.
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if field.is_relation and field.related_model in planned:
                on_delete = field.remote_field.on_delete.__name__
                assert model in planned or on_delete == "SET_NULL", model._meta.label


def test_sql_erasure_deletes_what_djangos_cascade_deletes() -> None:
    doomed, kept = rich_project()
    with transaction.atomic():
        _, django_counts = AgentSession.objects.filter(pk__in=doomed).delete()
        after_django = table_rows()
        transaction.set_rollback(True)
    before = table_rows()
    assert before != after_django

    with transaction.atomic():
        counts = erasure.sessions_erase(doomed)
    assert table_rows() == after_django
    assert counts == {label: n for label, n in django_counts.items() if n}
    assert counts["traces.AgentSession"] == 2  # the session and its subagent
    assert AgentSession.objects.filter(pk__in=kept).count() == len(kept)
    assert WebhookDelivery.objects.filter(alert__isnull=True).exists()


def test_session_delete_records_the_rows_it_deleted() -> None:
    doomed, _ = rich_project()
    session = AgentSession.objects.get(pk=doomed[0])
    deleted = services.session_delete(session=session, by=None, reason="pedido do cliente")
    assert deleted.rows["traces.Message"] > 0
    event = AuditEvent.objects.get(target=f"session:{session.pk}")
    assert event.detail == {"deleted": "session", "rows": deleted.rows}


def test_the_purge_deletes_in_batches_and_audits_each_session() -> None:
    project = labelled_project().project
    project.retention_days = 7
    project.save()
    with time_machine.travel(NOW - timedelta(days=10)):
        old = [
            make_session(project, external_id=f"old-{n}", messages=[wire_message(0, "user", "x")])
            for n in range(5)
        ]
    with time_machine.travel(NOW):
        AgentSession.objects.exclude(pk__in=[s.pk for s in old]).update(updated_at=NOW)
        assert services.sessions_purge_expired(limit=4, batch=3) == 4
        assert services.sessions_purge_expired(limit=4, batch=3) == 1
        assert services.sessions_purge_expired(limit=4, batch=3) == 0
    assert not AgentSession.objects.filter(pk__in=[s.pk for s in old]).exists()
    # the labelled project's own two sessions stay (tests/privacy/doors.py)
    assert AgentSession.objects.filter(project=project).count() == 2
    audits = AuditEvent.objects.filter(action="erasure", reason="retention: 7 days")
    assert sorted(audits.values_list("target", flat=True)) == sorted(f"session:{s.pk}" for s in old)
    assert {a.detail["purge"]["sessions"] for a in audits} == {3, 1}
