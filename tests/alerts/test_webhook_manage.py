"""Webhooks tested and edited from the project's alert settings page (admins only)."""

from __future__ import annotations

import hashlib
import hmac
import json
from unittest import mock

import pytest
from django.test import Client

from alerts import tasks, webhook_secrets, webhooks
from alerts.models import DeliveryStatus, WebhookDelivery
from privacy.models import AuditEvent
from sessions.errors import BadRequest
from sessions.models import Role
from tests.alerts.test_webhooks import SECRET, receiver  # noqa: F401  (fixture)
from tests.factories import make_project, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return make_project(name="acme")


def admin(client: Client, project, role: str = Role.ADMIN) -> Client:
    client.force_login(make_user(project=project, role=role))
    return client


def test_send_test_reaches_a_real_receiver_signed_and_logged(
    receiver,  # noqa: F811
    settings,
    project,
    client,
    django_capture_on_commit_callbacks,
) -> None:
    url, handler = receiver
    handler.statuses = [200]
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    target = webhooks.webhook_create(project=project, url=url, secret=SECRET, format="json")
    admin(client, project)
    with (
        mock.patch.object(tasks.webhook_deliver, "delay") as delay,
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = client.post(f"/projects/{project.pk}/webhooks/{target.pk}/test/")
    assert response.status_code == 302
    delivery = WebhookDelivery.objects.get(webhook=target)
    delay.assert_called_once_with(delivery.pk)
    assert (delivery.event, delivery.alert_id) == ("test", None)

    tasks.webhook_deliver.apply(args=(delivery.pk,))  # what the worker runs

    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED
    headers, body = handler.received[-1]
    expected = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert headers["X-Sawtooth-Signature"] == f"sha256={expected}"
    assert headers["X-Sawtooth-Delivery"] == str(delivery.delivery_id)
    sent = json.loads(body)
    assert (sent["event"], sent["project"], sent["webhook"]) == ("test", "acme", target.pk)
    html = client.get(f"/projects/{project.pk}/settings/").content.decode()
    assert "test delivery" in html
    assert "Delivered" in html


def test_a_test_send_to_a_private_address_fails_in_the_log(settings, project) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    target = webhooks.webhook_create(
        project=project, url="http://127.0.0.1:9/x", secret=SECRET, format="json"
    )
    settings.WEBHOOK_ALLOWED_NETWORKS = []  # the allowance withdrawn since
    with mock.patch.object(tasks.webhook_deliver, "delay"):
        delivery = webhooks.webhook_test_send(project=project, webhook_id=target.pk)
    tasks.webhook_deliver.apply(args=(delivery.pk,))
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED
    assert delivery.last_error.startswith("refused, not retried:")


def test_edit_changes_url_rules_and_switch_and_keeps_the_secret(settings, project, client) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    target = webhooks.webhook_create(project=project, url="http://127.0.0.1:8001/a", secret=SECRET)
    sealed = target.secret_encrypted
    admin(client, project)
    page = client.get(f"/projects/{project.pk}/webhooks/{target.pk}/edit/")
    assert page.status_code == 200
    assert 'value="http://127.0.0.1:8001/a"' in page.content.decode()
    response = client.post(
        f"/projects/{project.pk}/webhooks/{target.pk}/edit/",
        {"url": "http://127.0.0.1:8002/b", "format": "slack", "rules": ["overflow"]},
    )
    assert response.status_code == 302
    target.refresh_from_db()
    assert (target.url, target.format, target.rules, target.active) == (
        "http://127.0.0.1:8002/b",
        "slack",
        ["overflow"],
        False,
    )
    assert target.secret_encrypted == sealed
    change = AuditEvent.objects.filter(target=f"webhook:{target.pk}").order_by("-pk").first()
    assert change is not None
    assert change.detail["change"] == "changed: url, format, rules, active"


def test_edit_rotates_the_secret_when_given(settings, project) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    target = webhooks.webhook_create(project=project, url="http://127.0.0.1:8001/a", secret=SECRET)
    webhooks.webhook_update(
        project=project,
        webhook_id=target.pk,
        url=target.url,
        format="json",
        rules=[],
        active=True,
        new_secret="another-secret-of-enough-length",
    )
    target.refresh_from_db()
    assert webhook_secrets.secret_open(target.secret_encrypted) == (
        "another-secret-of-enough-length"
    )


def test_a_changed_url_is_checked_like_a_new_one_and_nothing_is_saved(
    settings, project, client
) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    target = webhooks.webhook_create(project=project, url="http://127.0.0.1:8001/a", secret=SECRET)
    with pytest.raises(BadRequest) as refused:
        webhooks.webhook_update(
            project=project,
            webhook_id=target.pk,
            url="http://169.254.169.254/latest/meta-data/",
            format="slack",
            rules=[],
            active=True,
        )
    assert refused.value.message.startswith("url: ")
    admin(client, project)
    page = client.post(
        f"/projects/{project.pk}/webhooks/{target.pk}/edit/",
        {"url": "http://10.0.0.5/hook", "format": "json", "active": "on"},
    )
    assert page.status_code == 200
    assert "url: " in page.content.decode()
    target.refresh_from_db()
    assert (target.url, target.format) == ("http://127.0.0.1:8001/a", "json")


def test_another_projects_webhook_is_404_and_members_below_admin_get_403(
    settings, project, client
) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    other = make_project(name="other")
    theirs = webhooks.webhook_create(project=other, url="http://127.0.0.1:8001/a", secret=SECRET)
    admin(client, project)
    assert client.get(f"/projects/{project.pk}/webhooks/{theirs.pk}/edit/").status_code == 404
    assert client.post(f"/projects/{project.pk}/webhooks/{theirs.pk}/test/").status_code == 404
    assert client.post(f"/projects/{other.pk}/webhooks/{theirs.pk}/test/").status_code == 404
    ours = webhooks.webhook_create(project=project, url="http://127.0.0.1:8001/a", secret=SECRET)
    engineer = admin(Client(), project, role=Role.ENGINEER)
    assert engineer.post(f"/projects/{project.pk}/webhooks/{ours.pk}/test/").status_code == 403
    assert engineer.get(f"/projects/{project.pk}/webhooks/{ours.pk}/edit/").status_code == 403
    assert not WebhookDelivery.objects.exists()
