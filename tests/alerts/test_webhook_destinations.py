"""Webhooks reach public addresses only: checked when added and again at each delivery, and the
delivery connects to the address checked. No test here asks real DNS (the resolver is injected)
or connects anywhere but to receivers it starts on 127.0.0.1."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import ipaddress
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import time_machine
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client, override_settings

from alerts import tasks, webhook_destinations, webhooks
from alerts.models import Alert, DeliveryStatus, Webhook
from alerts.webhook_destinations import DestinationRefused, legacy_ipv4
from sessions.errors import BadRequest
from sessions.models import Role
from tests.alerts.test_alerts import THREE, analysed_session
from tests.alerts.test_webhooks import LOCAL_RECEIVERS, SECRET, Receiver
from tests.factories import make_project, make_user

ROOT = Path(__file__).resolve().parents[2]
LOOPBACK = "a loopback address; webhooks reach public addresses only unless "
LOOPBACK += "WEBHOOK_ALLOWED_NETWORKS allows it"
METADATA = "a cloud metadata address (never allowed)"


def dns(table: dict[str, list[str]]) -> Callable[[str, int], list[str]]:
    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"no such name: {host}")
        return list(table[host])

    return resolve


@pytest.fixture
def no_connections() -> Iterator[mock.Mock]:
    """Fails any test that would open a connection (the refusals must come first)."""
    with mock.patch.object(
        webhook_destinations.socket, "create_connection", side_effect=AssertionError("connected")
    ) as connect:
        yield connect


REFUSED = [
    ("http://10.0.0.1/", "10.0.0.1 is a private address"),
    ("http://192.168.1.10:8080/hook", "192.168.1.10 is a private address"),
    ("http://169.254.169.254/latest/meta-data/", f"169.254.169.254 is {METADATA}"),
    ("http://[fd00:ec2::254]/", f"fd00:ec2::254 is {METADATA}"),
    ("http://100.100.100.200/", f"100.100.100.200 is {METADATA}"),
    ("http://[::1]:8000/", f"::1 is {LOOPBACK}"),
    ("http://127.0.0.1:6379/", f"127.0.0.1 is {LOOPBACK}"),
    ("http://localhost:5432/", "'localhost' resolves to 127.0.0.1, a loopback address"),
    ("http://2130706433/", f"127.0.0.1 is {LOOPBACK}"),
    ("http://0x7f.1/", f"127.0.0.1 is {LOOPBACK}"),
    ("http://0177.0.0.1/", f"127.0.0.1 is {LOOPBACK}"),
    ("http://127.1/", f"127.0.0.1 is {LOOPBACK}"),
    ("http://0xa9fea9fe/", f"169.254.169.254 is {METADATA}"),
    ("http://[::ffff:127.0.0.1]/", f"::ffff:127.0.0.1 is {LOOPBACK}"),
    ("http://[::ffff:a9fe:a9fe]/", f"::ffff:169.254.169.254 is {METADATA}"),
    ("http://[2002:7f00:1::]/", "2002:7f00:1:: is an IPv6 form of 127.0.0.1, a loopback"),
    ("http://[64:ff9b::a9fe:a9fe]/", f"an IPv6 form of 169.254.169.254, {METADATA}"),
    ("http://0.0.0.0:8000/", "0.0.0.0 is an unspecified address"),
    ("http://[::]/", ":: is an unspecified address"),
    ("http://224.0.0.1/", "224.0.0.1 is a multicast address"),
    ("http://[ff02::1]/", "ff02::1 is a multicast address"),
    ("http://[fe80::1]/", "fe80::1 is a link-local address"),
    ("http://169.254.10.1/", "169.254.10.1 is a link-local address"),
    ("http://240.0.0.1/", "240.0.0.1 is a reserved address"),
    ("http://100.64.0.1/", "100.64.0.1 is a reserved address"),
    ("http://[fc00::1]/", "fc00::1 is a private address"),
    ("http://internal.corp.test/", "'internal.corp.test' resolves to 10.20.0.5, a private"),
    ("http://mixed.corp.test/", "'mixed.corp.test' resolves to 172.16.0.1, a private"),
    ("http://1.2.3.4.5/", "'1.2.3.4.5' is neither a name nor a valid IPv4 address"),
    ("http://1.256.3.4/", "'1.256.3.4' is not a valid IPv4 address"),
    ("http://09.1.1.1/", "'09.1.1.1' is not a valid IPv4 address"),
    ("http://nowhere.corp.test/", "host 'nowhere.corp.test' does not resolve"),
    ("http://example.com:99999/", "'http://example.com:99999/' has an invalid port"),
]
CORP_DNS = {
    "localhost": ["127.0.0.1", "::1"],
    "internal.corp.test": ["10.20.0.5"],
    "mixed.corp.test": ["93.184.215.14", "172.16.0.1"],  # one bad answer is enough
}


@pytest.mark.django_db
@pytest.mark.parametrize(("url", "message"), REFUSED)
def test_inner_destinations_are_refused_when_added(
    url: str, message: str, monkeypatch: pytest.MonkeyPatch, no_connections: mock.Mock
) -> None:
    monkeypatch.setattr(webhook_destinations, "resolve", dns(CORP_DNS))
    project = make_project(name="billing")
    with pytest.raises(BadRequest) as refused:
        webhooks.webhook_create(project=project, url=url, secret=SECRET)
    assert refused.value.message.startswith("url: ")
    assert message in refused.value.message
    with pytest.raises(CommandError, match="url: "):
        call_command("addwebhook", "billing", url, "--secret", SECRET)
    assert not Webhook.objects.exists()


@pytest.mark.django_db
def test_the_settings_form_names_the_refusal_and_stores_nothing(no_connections) -> None:
    project = make_project()
    admin = make_user(project=project, role=Role.ADMIN)
    client = Client()
    client.force_login(admin)
    form = {"form": "webhook", "url": "http://169.254.169.254/latest/", "secret": SECRET}
    page = client.post(f"/projects/{project.pk}/settings/", {**form, "format": "json"})
    assert page.status_code == 200
    assert "url: 169.254.169.254 is a cloud metadata address (never allowed)" in (
        page.content.decode()
    )
    assert SECRET not in page.content.decode()  # the refused form does not echo the secret
    assert not Webhook.objects.exists()


@pytest.mark.django_db
def test_public_destinations_are_accepted(no_connections) -> None:
    project = make_project()
    for url in ("https://hooks.example.com/x", "http://93.184.215.14/", "http://[2606:4700::1]/"):
        webhooks.webhook_create(project=project, url=url, secret=SECRET)
    assert Webhook.objects.count() == 3


@pytest.mark.django_db
@override_settings(WEBHOOK_ALLOWED_NETWORKS=["10.0.0.0/8", "169.254.0.0/16", "::1/128"])
def test_an_install_allows_ranges_explicitly_but_never_metadata(no_connections) -> None:
    project = make_project()
    for url in ("http://10.1.2.3/", "http://[::ffff:10.1.2.3]/", "http://[::1]:8000/"):
        webhooks.webhook_create(project=project, url=url, secret=SECRET)
    for url in ("http://169.254.169.254/", "http://192.168.0.1/", "http://172.16.0.1/"):
        with pytest.raises(BadRequest):
            webhooks.webhook_create(project=project, url=url, secret=SECRET)
    assert Webhook.objects.count() == 3


def test_numeric_ipv4_forms_mean_what_inet_aton_says() -> None:
    for form in ("2130706433", "0x7f.1", "0177.0.0.1", "127.1", "0x7f000001", "127.0.0.1."):
        assert legacy_ipv4(form) == ipaddress.IPv4Address("127.0.0.1")
        assert legacy_ipv4(form) == ipaddress.IPv4Address(socket.inet_aton(form.rstrip(".")))
    assert legacy_ipv4("hooks.example.com") is None
    assert legacy_ipv4("0x7f.example") is None
    with pytest.raises(DestinationRefused):
        legacy_ipv4("example.1")


def test_a_bad_allowed_network_stops_the_start(tmp_path: Path) -> None:
    started = subprocess.run(
        [sys.executable, "-c", "from django.conf import settings; settings.DEBUG"],
        env={
            "PATH": "/usr/bin:/bin",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "SAWTOOTH_VAR_DIR": str(tmp_path),
            "WEBHOOK_ALLOWED_NETWORKS": "127.0.0.0/8, 10.0.0.0/33",
        },
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert started.returncode != 0
    assert "WEBHOOK_ALLOWED_NETWORKS: '10.0.0.0/33' is not a network" in started.stderr


# Deliveries: checked again after resolving, sent to the address checked.


def queued_delivery(url: str) -> Any:
    project = make_project(name="billing")
    webhooks.webhook_create(project=project, url=url, secret=SECRET)
    with mock.patch.object(tasks.webhook_deliver, "delay"):
        session = analysed_session(project=project, compactions=THREE)
    return Alert.objects.get(session=session).deliveries.get()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("rebound", "why"),
    [("169.254.169.254", METADATA), ("127.0.0.1", LOOPBACK), ("::ffff:10.0.0.1", "private")],
)
def test_a_name_rebound_inside_after_it_was_added_is_refused_and_not_retried(
    rebound: str, why: str, monkeypatch: pytest.MonkeyPatch, no_connections, settings
) -> None:
    settings.WEBHOOK_BACKOFF_SECONDS = 0
    monkeypatch.setattr(webhook_destinations, "resolve", dns({"hooks.corp.test": ["8.8.8.8"]}))
    delivery = queued_delivery("https://hooks.corp.test/alerts")
    monkeypatch.setattr(webhook_destinations, "resolve", dns({"hooks.corp.test": [rebound]}))

    tasks.webhook_deliver.apply(args=(delivery.pk,))

    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.FAILED
    assert delivery.attempts == 1  # failed for good: no retry
    assert delivery.last_status_code is None
    assert delivery.last_error.startswith(
        f"refused, not retried: 'hooks.corp.test' resolves to {rebound}, "
    )
    assert why in delivery.last_error
    assert delivery.finished_at is not None
    no_connections.assert_not_called()


@pytest.mark.django_db
def test_an_allowance_withdrawn_after_the_webhook_was_added_refuses_delivery(
    no_connections, settings
) -> None:
    settings.WEBHOOK_ALLOWED_NETWORKS = ["10.0.0.0/8"]
    delivery = queued_delivery("http://10.9.9.9/hook")
    settings.WEBHOOK_ALLOWED_NETWORKS = []
    assert webhooks.webhook_delivery_attempt(delivery_id=delivery.pk) is True
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (DeliveryStatus.FAILED, 1)
    assert delivery.last_error.startswith("refused, not retried: 10.9.9.9 is a private address")


@pytest.mark.django_db
def test_a_name_that_stops_resolving_is_retried(monkeypatch, no_connections) -> None:
    delivery = queued_delivery("https://hooks.example.com/x")
    monkeypatch.setattr(webhook_destinations, "resolve", dns({}))
    assert webhooks.webhook_delivery_attempt(delivery_id=delivery.pk) is False
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.PENDING
    assert delivery.last_error == (
        "not sent: host 'hooks.example.com' does not resolve (no such name: hooks.example.com)"
    )


@pytest.fixture
def receiver() -> Iterator[tuple[int, type[Receiver]]]:
    handler = type("R", (Receiver,), {"statuses": [], "received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port, handler
    server.shutdown()
    server.server_close()


@pytest.mark.django_db
@LOCAL_RECEIVERS
def test_the_delivery_goes_to_the_address_checked_with_the_name_as_host(
    receiver: tuple[int, type[Receiver]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, handler = receiver
    answers = iter([["127.0.0.1"], ["127.0.0.1"], ["169.254.169.254"]])
    calls: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        calls.append(host)  # a second lookup within one attempt would get the metadata address
        return next(answers)

    monkeypatch.setattr(webhook_destinations, "resolve", rebinding)
    delivery = queued_delivery(f"http://receiver.corp.test:{port}/in?x=1")
    assert webhooks.webhook_delivery_attempt(delivery_id=delivery.pk) is True
    assert calls == ["receiver.corp.test", "receiver.corp.test"]  # added, then this attempt
    [(headers, body)] = handler.received
    assert headers["Host"] == f"receiver.corp.test:{port}"
    assert body == delivery.body.encode()
    delivery.refresh_from_db()
    assert delivery.status == DeliveryStatus.DELIVERED


def _tls_files(tmp_path: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def tls_receiver(tmp_path: Path) -> Iterator[tuple[int, type[Receiver], list[str], Path]]:
    """An HTTPS receiver on 127.0.0.1 whose certificate names receiver.corp.test."""
    cert, key = _tls_files(tmp_path, "receiver.corp.test")
    handler = type("R", (Receiver,), {"statuses": [], "received": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    names: list[str] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    def sni(sock: Any, name: str | None, ctx: Any) -> None:
        names.append(name or "")

    context.sni_callback = sni
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port, handler, names, cert
    server.shutdown()
    server.server_close()


@pytest.mark.django_db
@LOCAL_RECEIVERS
def test_https_sends_the_name_as_sni_and_verifies_the_certificate_against_it(
    tls_receiver: tuple[int, type[Receiver], list[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, handler, names, ca = tls_receiver
    monkeypatch.setattr(webhook_destinations, "resolve", dns({"receiver.corp.test": ["127.0.0.1"]}))
    delivery = queued_delivery(f"https://receiver.corp.test:{port}/in")

    # Not a certificate this machine trusts: refused, nothing sent.
    assert webhooks.webhook_delivery_attempt(delivery_id=delivery.pk) is False
    delivery.refresh_from_db()
    assert "CERTIFICATE_VERIFY_FAILED" in delivery.last_error
    assert handler.received == []

    # Trusted, and valid for the name (not for 127.0.0.1, where the connection goes): sent.
    trusted = ssl.create_default_context(cafile=str(ca))
    monkeypatch.setattr(webhook_destinations.ssl, "create_default_context", lambda: trusted)
    assert webhooks.webhook_delivery_attempt(delivery_id=delivery.pk) is True
    assert names[-1] == "receiver.corp.test"
    [(headers, _)] = handler.received
    assert headers["Host"] == f"receiver.corp.test:{port}"

    # The same trusted certificate for another name: refused.
    handler.received.clear()
    monkeypatch.setattr(webhook_destinations, "resolve", dns({"other.corp.test": ["127.0.0.1"]}))
    other = queued_delivery_for_project(delivery, f"https://other.corp.test:{port}/in")
    assert webhooks.webhook_delivery_attempt(delivery_id=other.pk) is False
    other.refresh_from_db()
    assert "Hostname mismatch" in other.last_error
    assert handler.received == []


def queued_delivery_for_project(like: Any, url: str) -> Any:
    hook = webhooks.webhook_create(project=like.webhook.project, url=url, secret=SECRET)
    return hook.deliveries.create(alert=like.alert, event="opened", body=like.body)


# Signing: the body signature stays; V2 covers the timestamp and the delivery id too.


def receiver_verify(
    *, secret: str, headers: dict[str, str], body: bytes, now: float, seen: set[str]
) -> bool:
    """The receiver recipe of the README, as a receiver would write it."""
    timestamp = headers.get("X-Sawtooth-Timestamp", "")
    delivery = headers.get("X-Sawtooth-Delivery", "")
    signed = f"{timestamp}.{delivery}.".encode() + body
    expected = "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, headers.get("X-Sawtooth-Signature-V2", "")):
        return False  # forged or tampered
    if not timestamp.isdigit() or abs(now - int(timestamp)) > 300:
        return False  # stale: a captured delivery posted again later
    if delivery in seen:
        return False  # replayed within the window
    seen.add(delivery)
    return True


@pytest.mark.django_db
@LOCAL_RECEIVERS
def test_each_attempt_is_signed_with_its_timestamp_and_the_delivery_id(
    receiver: tuple[int, type[Receiver]],
) -> None:
    port, handler = receiver
    handler.statuses = [500, 200]
    delivery = queued_delivery(f"http://127.0.0.1:{port}/hook")
    at = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
    with time_machine.travel(at, tick=False):
        assert webhooks.webhook_delivery_attempt(delivery_id=delivery.pk) is False
    with time_machine.travel(at + dt.timedelta(seconds=30), tick=False):
        assert webhooks.webhook_delivery_attempt(delivery_id=delivery.pk) is True
    (first, body), (second, again) = handler.received
    assert body == again == delivery.body.encode()
    assert [first["X-Sawtooth-Timestamp"], second["X-Sawtooth-Timestamp"]] == [
        str(int(at.timestamp())),
        str(int(at.timestamp()) + 30),
    ]
    for headers in (first, second):
        assert headers["X-Sawtooth-Delivery"] == str(delivery.delivery_id)
        v1 = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert headers["X-Sawtooth-Signature"] == f"sha256={v1}"
        signed = f"{headers['X-Sawtooth-Timestamp']}.{delivery.delivery_id}.".encode() + body
        v2 = hmac.new(SECRET.encode(), signed, hashlib.sha256).hexdigest()
        assert headers["X-Sawtooth-Signature-V2"] == f"sha256={v2}"
    assert first["X-Sawtooth-Signature-V2"] != second["X-Sawtooth-Signature-V2"]

    # The recipe: the fresh delivery passes once; replayed, stale or tampered, it does not.
    now = at.timestamp() + 31
    seen: set[str] = set()
    assert receiver_verify(secret=SECRET, headers=second, body=body, now=now, seen=seen)
    assert not receiver_verify(secret=SECRET, headers=second, body=body, now=now, seen=seen)
    later = now + 301
    assert not receiver_verify(secret=SECRET, headers=second, body=body, now=later, seen=set())
    tampered = body.replace(b"alert.opened", b"alert.closed")
    assert tampered != body
    assert not receiver_verify(secret=SECRET, headers=second, body=tampered, now=now, seen=set())
    moved = {**second, "X-Sawtooth-Timestamp": str(int(later))}  # a fresh stamp on old bytes
    assert not receiver_verify(secret=SECRET, headers=moved, body=body, now=later, seen=set())
    other_id = {**second, "X-Sawtooth-Delivery": "00000000-0000-0000-0000-000000000000"}
    assert not receiver_verify(secret=SECRET, headers=other_id, body=body, now=now, seen=set())
