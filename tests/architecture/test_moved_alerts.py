"""The alert models left the compaction app for the alerts app keeping their tables, so a
database made before the move, alerts and webhook deliveries in it, migrates in place: every
row is read afterwards through the alerts app's models, foreign keys and all."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from alerts.models import Alert, AlertEvent, AlertSettings, Webhook, WebhookDelivery

BEFORE_THE_MOVE = ("compaction", "0016_limits_one_place")
TABLES = {
    AlertSettings: "compaction_alertsettings",
    Alert: "compaction_alert",
    AlertEvent: "compaction_alertevent",
    Webhook: "compaction_webhook",
    WebhookDelivery: "compaction_webhookdelivery",
}
OPENED = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def _migrate_to_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_the_moved_models_keep_their_tables() -> None:
    assert {model: model._meta.db_table for model in TABLES} == TABLES
    assert {model._meta.app_label for model in TABLES} == {"alerts"}


@pytest.mark.django_db(transaction=True)
def test_alerts_stored_before_the_move_are_read_through_the_alerts_app() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE_THE_MOVE, ("alerts", None)])
    try:
        old = executor.loader.project_state([BEFORE_THE_MOVE]).apps
        assert not [m for m in old.get_models() if m._meta.app_label == "alerts"]
        user = old.get_model("auth", "User").objects.create(username="ana")
        project = old.get_model("traces", "Project").objects.create(name="legacy")
        session = old.get_model("traces", "AgentSession").objects.create(
            project=project, external_id="run-before-the-move"
        )
        old.get_model("compaction", "AlertSettings").objects.create(
            project=project, repeated_compaction_count=5, email_recipients="ops@example.com"
        )
        alert = old.get_model("compaction", "Alert").objects.create(
            project=project,
            session=session,
            rule="overflow",
            severity="critical",
            state="acknowledged",
            title="a call over the window",
            evidence={"seq": 42, "spans": [7]},
            assignee=user,
            opened_at=OPENED,
            updated_at=OPENED,
        )
        old.get_model("compaction", "AlertEvent").objects.create(
            alert=alert, actor=user, kind="acknowledged", from_state="open", to_state="acknowledged"
        )
        hook = old.get_model("compaction", "Webhook").objects.create(
            project=project, url="https://hooks.example.com/x", secret_encrypted="fernet1:sealed"
        )
        delivery = old.get_model("compaction", "WebhookDelivery").objects.create(
            webhook=hook, alert=alert, event="opened", body='{"event": "alert.opened"}'
        )

        _migrate_to_latest()

        executor = MigrationExecutor(connection)
        new = executor.loader.project_state(executor.loader.graph.leaf_nodes()).apps
        with pytest.raises(LookupError):
            new.get_model("compaction", "Alert")
        assert set(TABLES.values()) <= set(connection.introspection.table_names())

        moved = Alert.objects.select_related("project", "session", "assignee").get(pk=alert.pk)
        assert (moved.rule, moved.state, moved.evidence, moved.opened_at) == (
            "overflow",
            "acknowledged",
            {"seq": 42, "spans": [7]},
            OPENED,
        )
        assert (moved.project.name, moved.session.external_id, moved.assignee.username) == (
            "legacy",
            "run-before-the-move",
            "ana",
        )
        [event] = moved.events.select_related("actor")
        assert (event.kind, event.actor.username) == ("acknowledged", "ana")
        [sent] = moved.deliveries.select_related("webhook")
        assert (sent.pk, sent.delivery_id, sent.body) == (
            delivery.pk,
            delivery.delivery_id,
            '{"event": "alert.opened"}',
        )
        assert (sent.webhook.url, sent.webhook.secret_encrypted) == (
            "https://hooks.example.com/x",
            "fernet1:sealed",
        )
        assert moved.project.alert_settings.repeated_compaction_count == 5
        assert list(moved.session.alerts.all()) == [moved]
        assert [h.pk for h in moved.project.webhooks.all()] == [hook.pk]

        # The tables' id sequences go on where they were.
        newer = Alert.objects.create(
            project=moved.project, session=moved.session, rule="near_overflow", severity="warning"
        )
        assert newer.pk > moved.pk
    finally:
        _migrate_to_latest()
