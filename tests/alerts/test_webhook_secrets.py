"""Webhook secrets at rest: sealed under a key derived from SECRET_KEY, so a database dump
does not reveal them; deliveries open them; no page shows them."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from alerts import webhook_secrets, webhooks
from alerts.models import DeliveryStatus, Webhook
from sessions.models import Role
from tests.alerts.test_webhook_destinations import no_connections as no_connections
from tests.alerts.test_webhook_destinations import queued_delivery
from tests.factories import make_project, make_user

SECRET = "a-receiver-secret-nobody-else-knows"


def _table_dump() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM compaction_webhook")
        rows = cursor.fetchall()
    dumped = StringIO()
    call_command("dumpdata", "alerts.webhook", stdout=dumped)
    return repr(rows) + dumped.getvalue()


@pytest.mark.django_db
def test_a_dump_of_the_webhook_table_holds_no_secret_in_clear() -> None:
    project = make_project(name="billing")
    webhooks.webhook_create(project=project, url="https://hooks.example.com/a", secret=SECRET)
    call_command(
        "addwebhook", "billing", "https://hooks.example.com/b", "--secret", SECRET[::-1],
        stdout=StringIO(),
    )  # fmt: skip
    dump = _table_dump()
    assert "hooks.example.com/a" in dump  # the dump is the table's
    assert SECRET not in dump
    assert SECRET[::-1] not in dump
    first, second = Webhook.objects.order_by("pk")
    assert first.secret_encrypted.startswith("fernet1:")
    assert webhook_secrets.secret_open(first.secret_encrypted) == SECRET
    assert webhook_secrets.secret_open(second.secret_encrypted) == SECRET[::-1]


def test_the_same_secret_seals_differently_each_time_and_opens_back() -> None:
    sealed = {webhook_secrets.secret_seal(SECRET) for _ in range(3)}
    assert len(sealed) == 3
    assert {webhook_secrets.secret_open(s) for s in sealed} == {SECRET}


def test_another_install_key_cannot_open_it_but_a_fallback_can(settings) -> None:
    sealed = webhook_secrets.secret_seal(SECRET)
    old_key = settings.SECRET_KEY
    settings.SECRET_KEY = "a-new-install-key-" + "x" * 40
    with pytest.raises(webhook_secrets.SecretUnreadable, match="SECRET_KEY_FALLBACKS"):
        webhook_secrets.secret_open(sealed)
    settings.SECRET_KEY_FALLBACKS = [old_key]  # the Django way to rotate the key
    assert webhook_secrets.secret_open(sealed) == SECRET
    with pytest.raises(webhook_secrets.SecretUnreadable, match="not sealed"):
        webhook_secrets.secret_open(SECRET)


@pytest.mark.django_db
def test_a_secret_this_install_cannot_open_fails_the_delivery_for_good(
    settings, no_connections
) -> None:
    delivery = queued_delivery("https://hooks.example.com/x")
    settings.SECRET_KEY = "a-new-install-key-" + "x" * 40
    assert webhooks.webhook_delivery_attempt(delivery_id=delivery.pk) is True
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.FAILED, 1)
    assert delivery.last_error.startswith(
        "refused, not retried: the webhook secret was sealed under another SECRET_KEY"
    )
    no_connections.assert_not_called()


@pytest.mark.django_db
def test_the_settings_page_never_shows_the_secret() -> None:
    project = make_project()
    hook = webhooks.webhook_create(
        project=project, url="https://hooks.example.com/a", secret=SECRET
    )
    client = Client()
    client.force_login(make_user(project=project, role=Role.ADMIN))
    page = client.get(f"/projects/{project.pk}/settings/").content.decode()
    assert "https://hooks.example.com/a" in page
    assert SECRET not in page
    assert hook.secret_encrypted not in page


@pytest.mark.django_db(transaction=True)
def test_the_migration_seals_existing_secrets_and_unseals_them_going_back() -> None:
    before = [("compaction", "0014_fair_turns")]
    after = [("compaction", "0015_webhook_secret_encrypted")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        old = executor.loader.project_state(before).apps
        project = old.get_model("traces", "Project").objects.create(name="legacy")
        old.get_model("compaction", "Webhook").objects.create(
            project=project, url="https://hooks.example.com/old", secret=SECRET
        )
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        new = executor.loader.project_state(after).apps
        rows = new.get_model("compaction", "Webhook").objects
        assert SECRET not in repr(list(rows.values()))
        row = rows.get()
        assert webhook_secrets.secret_open(row.secret_encrypted) == SECRET

        executor = MigrationExecutor(connection)
        executor.migrate(before)
        back = executor.loader.project_state(before).apps
        assert back.get_model("compaction", "Webhook").objects.get().secret == SECRET
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
