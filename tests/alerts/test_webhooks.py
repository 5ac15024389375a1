"""Webhook deliveries: signed, retried with backoff, logged; and the addwebhook command."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import StringIO
from typing import Any
from unittest import mock

import pytest
from django.core import mail
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from alerts import tasks, webhook_secrets, webhooks
from alerts.models import Alert, AlertSettings, DeliveryStatus, Webhook
from tests.alerts.test_alerts import THREE, analysed_session
from tests.factories import make_project

pytestmark = pytest.mark.django_db

SECRET = "correct-horse-battery-staple"
# The receivers tests start listen on 127.0.0.1, which webhooks reach only when allowed.
LOCAL_RECEIVERS = override_settings(WEBHOOK_ALLOWED_NETWORKS=["127.0.0.0/8"])


class Receiver(BaseHTTPRequestHandler):
    """Answers each POST with the next status in ``statuses`` and keeps what it got."""

    statuses: list[int] = []
    received: list[tuple[dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append((dict(self.headers), body))
        status = type(self).statuses.pop(0) if type(self).statuses else 200
        self.send_response(status)
        self.end_headers()
        self.wfile.write(b"ok" if status == 200 else b"try again")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, type[Receiver]]]:
    handler = type("R", (Receiver,), {"statuses": [500, 500, 200], "received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hook", handler
    server.shutdown()
    server.server_close()


def queued_delivery(url: str, **hook: Any) -> Any:
    project = make_project(name="billing")
    webhooks.webhook_create(project=project, url=url, secret=SECRET, **hook)
    with mock.patch.object(tasks.webhook_deliver, "delay"):
        session = analysed_session(project=project, compactions=THREE)
    alert = Alert.objects.get(session=session)
    return alert.deliveries.get()


def test_a_failing_endpoint_gets_retries_until_delivered_once_signed(receiver, settings) -> None:
    url, handler = receiver
    # Through the settings fixture, not the LOCAL_RECEIVERS decorator: the fixture restores
    # what it saw first, and under the decorator that would leak the allowance.
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.WEBHOOK_BACKOFF_SECONDS = 0
    delivery = queued_delivery(url)

    tasks.webhook_deliver.apply(args=(delivery.pk,))

    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED
    assert delivery.attempts == 3
    assert [a["status_code"] for a in delivery.log] == [500, 500, 200]
    assert delivery.log[0]["error"] == "HTTP 500: try again"
    assert len(handler.received) == 3
    ids = {headers["X-Sawtooth-Delivery"] for headers, _ in handler.received}
    assert ids == {str(delivery.delivery_id)}
    for headers, body in handler.received:
        expected = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert headers["X-Sawtooth-Signature"] == f"sha256={expected}"
    sent = json.loads(handler.received[-1][1])
    assert sent["event"] == "alert.opened"
    assert sent["alert"]["rule"] == "repeated_compaction"
    assert sent["alert"]["evidence"]["spans"] == [4, 52, 100]
    # A redelivered task does not send again.
    tasks.webhook_deliver.apply(args=(delivery.pk,))
    assert len(handler.received) == 3


def test_a_dead_endpoint_is_tried_at_least_five_times_then_marked_failed(settings) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.WEBHOOK_BACKOFF_SECONDS = 0
    delivery = queued_delivery("http://127.0.0.1:9/nobody-listens")
    tasks.webhook_deliver.apply(args=(delivery.pk,))
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED
    assert delivery.attempts == settings.WEBHOOK_MAX_ATTEMPTS >= 5
    assert delivery.last_status_code is None
    assert delivery.last_error == "ConnectionRefusedError: [Errno 111] Connection refused"


def test_backoff_doubles_from_the_base(settings) -> None:
    settings.WEBHOOK_BACKOFF_SECONDS = 30
    assert [webhooks.webhook_backoff(attempt=n) for n in (1, 2, 3, 4, 5)] == [30, 60, 120, 240, 480]
    assert webhooks.webhook_backoff(attempt=30) == 3600


@LOCAL_RECEIVERS
def test_slack_format_is_a_text_message() -> None:
    delivery = queued_delivery("http://127.0.0.1:9/slack", format="slack")
    body = json.loads(delivery.body)
    assert list(body) == ["text"]
    assert "[warning] Repeated compaction opened on session" in body["text"]


def test_slack_text_cannot_ping_the_channel() -> None:
    assert webhooks.slack_escape("<!channel> & <http://x|y>") == (
        "&lt;!channel&gt; &amp; &lt;http://x|y&gt;"
    )


def test_email_goes_through_the_mail_backend(django_capture_on_commit_callbacks) -> None:
    project = make_project()
    AlertSettings.objects.create(project=project, email_recipients="oncall@example.com")
    with (
        mock.patch.object(tasks.alert_email_send, "delay") as send,
        django_capture_on_commit_callbacks(execute=True),
    ):
        session = analysed_session(project=project, compactions=THREE)
    alert = Alert.objects.get(session=session)
    send.assert_called_once_with(alert.pk)
    assert webhooks.alert_email_send(alert_id=alert.pk) == 1
    (message,) = mail.outbox
    assert message.to == ["oncall@example.com"]
    assert message.subject == "[Sawtooth] Warning: Compacted 3 times in one session"


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_addwebhook_command() -> None:
    make_project(name="billing")
    output = run(
        "addwebhook", "billing", "https://hooks.example.com/x", "--secret", SECRET,
        "--format", "slack", "--rules", "overflow,failed_splice",
    )  # fmt: skip
    hook = Webhook.objects.get()
    assert output == f"Added webhook {hook.pk} (slack, overflow, failed_splice) to 'billing'.\n"
    assert (hook.url, webhook_secrets.secret_open(hook.secret_encrypted), hook.rules) == (
        "https://hooks.example.com/x",
        SECRET,
        ["overflow", "failed_splice"],
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "https://x.example/h", "--secret", SECRET], "project 'nope' not found"),
        (["billing", "ftp://x.example/h", "--secret", SECRET], "url: expected an http://"),
        (["billing", "https://x.example/h", "--secret", "short"], "secret: use at least 16"),
        (
            ["billing", "https://x.example/h", "--secret", SECRET, "--rules", "overflow,bogus"],
            "rules: unknown rule 'bogus'",
        ),
    ],
)
def test_addwebhook_refuses_bad_input(args: list[str], message: str) -> None:
    make_project(name="billing")
    with pytest.raises(CommandError, match=message):
        run("addwebhook", *args)
    assert not Webhook.objects.exists()
