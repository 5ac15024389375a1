"""Announcing alerts: signed webhook deliveries with retries, and the optional e-mail.

A delivery row is written in the same transaction as the alert change, and its task is
sent through the outbox on commit (a broker outage delays it, never loses it); the task makes
one attempt and Celery retries it with exponential backoff. Destinations are checked when a
webhook is added and again at every attempt (alerts/webhook_destinations.py); a refused
one fails the delivery for good.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import math
import urllib.parse
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from alerts import webhook_destinations, webhook_secrets
from alerts.models import (
    THRESHOLD_FIELDS,
    Alert,
    AlertEvent,
    AlertEventKind,
    AlertSettings,
    DeliveryStatus,
    Webhook,
    WebhookDelivery,
    WebhookFormat,
)
from compaction import outbox
from compaction.engine.alerts import RULES
from privacy import audit, masking
from privacy.models import AuditAction
from sessions.errors import BadRequest, NotFound
from sessions.models import Project

logger = logging.getLogger(__name__)

SECRET_MAX_LENGTH = 200

SIGNATURE_HEADER = "X-Sawtooth-Signature"
DELIVERY_HEADER = "X-Sawtooth-Delivery"
TIMESTAMP_HEADER = "X-Sawtooth-Timestamp"
SIGNATURE_V2_HEADER = "X-Sawtooth-Signature-V2"


def signature(*, secret: str, body: bytes) -> str:
    """``sha256=<hex HMAC-SHA256 of the raw body>``, the value of X-Sawtooth-Signature."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_v2(*, secret: str, timestamp: int, delivery_id: str, body: bytes) -> str:
    """``sha256=<hex HMAC-SHA256 of "timestamp.delivery_id.body">``, the value of
    X-Sawtooth-Signature-V2: a receiver that checks it, the timestamp's age and the delivery
    ids it has seen cannot be fooled by a captured delivery posted again."""
    signed = f"{timestamp}.{delivery_id}.".encode() + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def webhook_create(
    *,
    project: Project,
    url: str,
    secret: str,
    format: str = "json",
    rules: list[str] | None = None,
    by: Any = None,
    actor_name: str = "",
) -> Webhook:
    if not url.startswith(("http://", "https://")):
        raise BadRequest(f"url: expected an http:// or https:// address, got {url!r}")
    _secret_check(secret)
    if format not in WebhookFormat.values:
        raise BadRequest(f"format: expected one of {', '.join(WebhookFormat.values)}")
    unknown = [r for r in rules or [] if r not in RULES]
    if unknown:
        raise BadRequest(f"rules: unknown rule {unknown[0]!r}; known: {', '.join(RULES)}")
    _url_check(url)
    hook = Webhook.objects.create(
        project=project,
        url=url,
        secret_encrypted=webhook_secrets.secret_seal(secret),
        format=format,
        rules=list(rules or []),
    )
    _webhook_audit(hook, "added", by=by, actor_name=actor_name)
    return hook


def _url_check(url: str) -> None:
    if not url.startswith(("http://", "https://")):
        raise BadRequest(f"url: expected an http:// or https:// address, got {url!r}")
    try:
        webhook_destinations.destination_resolve(url)
    except webhook_destinations.DestinationError as exc:
        raise BadRequest(f"url: {exc}") from None


def _secret_check(secret: str) -> None:
    if len(secret) < 16:
        raise BadRequest("secret: use at least 16 characters")
    if len(secret) > SECRET_MAX_LENGTH:
        raise BadRequest(f"secret: use at most {SECRET_MAX_LENGTH} characters")


@transaction.atomic
def webhook_update(
    *,
    project: Project,
    webhook_id: int,
    url: str,
    format: str,
    rules: list[str],
    active: bool,
    new_secret: str = "",
    by: Any = None,
) -> Webhook:
    """Change a webhook's address, format, rules or switch; its secret is kept unless
    ``new_secret`` rotates it. A changed URL is checked like a new one (scheme, and a
    destination outside private ranges unless allowed); nothing is saved when a field is bad.
    """
    hook = Webhook.objects.select_for_update().filter(project=project, pk=webhook_id).first()
    if hook is None:
        raise NotFound(f"webhook {webhook_id}: not in this project")
    if url != hook.url:
        _url_check(url)
    if new_secret:
        _secret_check(new_secret)
    if format not in WebhookFormat.values:
        raise BadRequest(f"format: expected one of {', '.join(WebhookFormat.values)}")
    unknown = [r for r in rules if r not in RULES]
    if unknown:
        raise BadRequest(f"rules: unknown rule {unknown[0]!r}; known: {', '.join(RULES)}")
    changed = [
        name
        for name, value in (("url", url), ("format", format), ("rules", rules), ("active", active))
        if getattr(hook, name) != value
    ]
    hook.url, hook.format, hook.rules, hook.active = url, format, list(rules), active
    if new_secret:
        hook.secret_encrypted = webhook_secrets.secret_seal(new_secret)
        changed.append("secret")
    hook.save()
    if changed:
        _webhook_audit(hook, "changed: " + ", ".join(changed), by=by)
    return hook


def ping_payload(*, hook: Webhook, now: datetime) -> dict[str, Any]:
    """A test delivery's body: says it is a test and which project sent it, nothing else."""
    project = masking.text_mask(hook.project.name)
    text = f"Sawtooth test delivery from project {project}: this webhook is reached."
    if hook.format == WebhookFormat.SLACK:
        return {"text": slack_escape(text)}
    return {
        "event": "test",
        "project": project,
        "webhook": hook.pk,
        "message": text,
        "sent_at": now.isoformat(),
    }


@transaction.atomic
def webhook_test_send(*, project: Project, webhook_id: int, by: Any = None) -> WebhookDelivery:
    """Queue one signed delivery with event ``test`` through the normal path: the same
    signing, destination checks, retries and delivery log as an alert's. Sent to an inactive
    webhook too: testing it before switching it on is the point."""
    hook = Webhook.objects.select_related("project").filter(project=project, pk=webhook_id).first()
    if hook is None:
        raise NotFound(f"webhook {webhook_id}: not in this project")
    body = json.dumps(ping_payload(hook=hook, now=timezone.now()))
    delivery = WebhookDelivery.objects.create(webhook=hook, alert=None, event="test", body=body)
    outbox.outbox_add(kind=outbox.WEBHOOK_DELIVER, args=[delivery.pk])
    _webhook_audit(hook, "test sent", by=by)
    return delivery


def webhook_delete(*, project: Project, webhook_id: int, by: Any) -> bool:
    hook = Webhook.objects.filter(project=project, pk=webhook_id).first()
    if hook is None:
        return False
    _webhook_audit(hook, "removed", by=by)
    hook.delete()
    return True


def _webhook_audit(hook: Webhook, change: str, *, by: Any, actor_name: str = "") -> None:
    # Where alerts go is where a session's id and titles go: who pointed them there is kept.
    # The host only: a receiver's URL may carry its own token in the path or query.
    audit.audit_record(
        actor=by,
        actor_name=actor_name,
        action=AuditAction.WEBHOOK_CHANGE,
        project=hook.project,
        target=f"webhook:{hook.pk}",
        detail={
            "change": change,
            "host": urllib.parse.urlsplit(hook.url).hostname or "",
            "format": hook.format,
            "rules": list(hook.rules),
        },
    )


# The rules a change of the thresholds re-judges (services.alerts_reevaluate_project).
THRESHOLD_RULES = frozenset(
    {
        "compaction_storm",
        "compaction_loop",
        "compaction_thrash",
        "repeated_compaction",
        "near_overflow",
    }
)


# The settings that change what a rule says (the e-mail recipients do not).
def alert_settings_save(*, settings_row: AlertSettings, changed: list[str], by: Any) -> None:
    """Save a project's alert thresholds and recipients; audited (the recipients by count:
    who gets alert e-mails is named on the settings page, not copied into the log). A changed
    threshold queues the rules over the project's recent stored analyses
    (``services.alerts_reevaluate_project``), committed with the change."""
    settings_row.save()
    if set(changed) & set(THRESHOLD_FIELDS):
        # The stored analyses are judged again by the new thresholds, in the background: the
        # rules the thresholds change, or every rule when one may have been switched back on.
        rules = None if "disabled_rules" in changed else sorted(THRESHOLD_RULES)
        outbox.outbox_add(kind=outbox.ALERTS_REEVALUATE, args=[settings_row.project_id, rules])
    if changed:
        audit.audit_record(
            actor=by,
            action=AuditAction.SETTINGS_CHANGE,
            project=settings_row.project,
            target=f"alert-settings:{settings_row.project_id}",
            detail={"changed": sorted(changed), "recipients": len(settings_row.email_list)},
        )


def slack_escape(text: str) -> str:
    """Trace text in a Slack message: no mentions (<!channel>) or links of its own."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def alert_url(alert: Alert) -> str:
    return f"{settings.SITE_URL.rstrip('/')}/alerts/{alert.pk}/"


def payload(*, alert: Alert, event: str, format: str) -> dict[str, Any]:
    """A delivery's body. A receiver is another system's log: the session's id, the title and
    the evidence go out masked like on a page (the names its session found too); the alert's
    id and URL say which one it is."""
    with masking.names_scope(project_id=alert.project_id, session_id=alert.session_id):
        return _payload(alert=alert, event=event, format=format)


def _payload(*, alert: Alert, event: str, format: str) -> dict[str, Any]:
    session = masking.text_mask(alert.session.external_id)
    title = masking.text_mask(alert.title)
    if format == WebhookFormat.SLACK:
        return {
            "text": (
                f"[{alert.severity}] {alert.get_rule_display()} {event} on session "
                f"{slack_escape(session)} ({slack_escape(alert.project.name)}): "
                f"{slack_escape(title)} <{alert_url(alert)}|open>"
            )
        }
    return {
        "event": f"alert.{event}",
        "alert": {
            "id": alert.pk,
            "rule": alert.rule,
            "severity": alert.severity,
            "state": alert.state,
            "project": alert.project.name,
            "session": session,
            "title": title,
            "evidence": masking.json_mask(alert.evidence),
            "opened_at": alert.opened_at.isoformat(),
            "updated_at": alert.updated_at.isoformat(),
            "url": alert_url(alert),
        },
    }


def alert_announce(*, alert: Alert, event: str) -> list[WebhookDelivery]:
    """Queue one delivery per interested webhook (and the e-mail) once the change commits."""
    alert = Alert.objects.select_related("project", "session").get(pk=alert.pk)
    deliveries = []
    for hook in Webhook.objects.filter(project=alert.project_id, active=True):
        if not hook.wants(alert.rule):
            continue
        body = json.dumps(payload(alert=alert, event=event, format=hook.format))
        delivery = WebhookDelivery.objects.create(webhook=hook, alert=alert, event=event, body=body)
        outbox.outbox_add(kind=outbox.WEBHOOK_DELIVER, args=[delivery.pk])
        deliveries.append(delivery)
    if AlertSettings.objects.filter(project=alert.project_id).exclude(email_recipients="").exists():
        outbox.outbox_add(kind=outbox.ALERT_EMAIL_SEND, args=[alert.pk])
    return deliveries


def webhook_delivery_attempt(*, delivery_id: int, final: bool = False) -> bool:
    """POST the delivery once and log the attempt. True when nothing is left to try:
    delivered, already finished, or failed for good.

    ``final`` marks the delivery failed when this attempt fails too (the last retry). A
    destination refused now (its name resolves inside, or the allowance was withdrawn) or a
    secret this install cannot open fails it at once: retrying would not change the answer.
    """
    delivery = WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)
    if delivery.status != DeliveryStatus.PENDING:
        return True  # a redelivered task: already finished
    now = timezone.now()
    status_code, error, for_good = _deliver(delivery, now=now)
    ok = not error
    final = final or for_good
    delivery.attempts += 1
    delivery.log = [
        *delivery.log,
        {"at": now.isoformat(), "status_code": status_code, "error": error},
    ]
    delivery.last_status_code = status_code
    delivery.last_error = error
    if ok or final:
        delivery.status = DeliveryStatus.DELIVERED if ok else DeliveryStatus.FAILED
        delivery.finished_at = now
    delivery.save()
    if not ok:
        logger.warning("webhook delivery %s attempt %s: %s", delivery.pk, delivery.attempts, error)
    return ok or final


def _deliver(delivery: WebhookDelivery, *, now: datetime) -> tuple[int | None, str, bool]:
    """One attempt: (status code or None, error text or "", failed for good)."""
    hook = delivery.webhook
    try:
        secret = webhook_secrets.secret_open(hook.secret_encrypted)
        # Resolved and checked now, and the POST goes to the address checked (DNS rebinding).
        destination = webhook_destinations.destination_resolve(hook.url)
    except webhook_destinations.DestinationUnresolved as exc:
        return None, f"not sent: {exc}", False
    except (webhook_destinations.DestinationRefused, webhook_secrets.SecretUnreadable) as exc:
        return None, f"refused, not retried: {exc}", True
    body = delivery.body.encode()
    timestamp = int(now.timestamp())
    delivery_id = str(delivery.delivery_id)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Sawtooth-Webhook/1",
        SIGNATURE_HEADER: signature(secret=secret, body=body),
        DELIVERY_HEADER: delivery_id,
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_V2_HEADER: signature_v2(
            secret=secret, timestamp=timestamp, delivery_id=delivery_id, body=body
        ),
    }
    status_code, error = webhook_destinations.post(
        destination, body=body, headers=headers, timeout=settings.WEBHOOK_TIMEOUT_SECONDS
    )
    return status_code, error, False


def webhook_backoff(*, attempt: int) -> float:
    """Seconds before retry number ``attempt`` (1-based): base, 2 x base, 4 x base, ..."""
    base = float(settings.WEBHOOK_BACKOFF_SECONDS)
    return min(math.ldexp(base, attempt - 1), 3600.0)


def alert_email_send(*, alert_id: int) -> int:
    """E-mail the project's recipients that an alert opened or reopened. The task carries the
    id only (never content); whether it reopened is read from the alert's history."""
    alert = Alert.objects.select_related("project", "session").get(pk=alert_id)
    reopened = AlertEvent.objects.filter(alert=alert, kind=AlertEventKind.REOPENED).exists()
    event = "reopened" if reopened else "opened"
    found = AlertSettings.objects.filter(project=alert.project_id).first()
    recipients = found.email_list if found else []
    if not recipients:
        return 0
    with masking.names_scope(project_id=alert.project_id, session_id=alert.session_id):
        return _email_send(alert, event, recipients)


def _email_send(alert: Alert, event: str, recipients: list[str]) -> int:
    title = masking.text_mask(alert.title)
    return send_mail(
        subject=f"[Sawtooth] {alert.get_severity_display()}: {title}"[:200],
        message=(
            f"{alert.get_rule_display()} {event} on session "
            f"{masking.text_mask(alert.session.external_id)} in {alert.project.name}.\n\n"
            f"{title}\n\n{alert_url(alert)}\n"
        ),
        from_email=None,
        recipient_list=recipients,
    )
