"""Alerts raised by the analysis pass, their history, and the webhooks that announce them.

Their tables keep the names they had in the compaction app (``compaction_alert``, ...), so
databases created before the alerts app migrate in place (alerts/migrations/0001_initial.py).
"""

from __future__ import annotations

import uuid
from typing import TypedDict

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone

from compaction.engine import alerts as engine_alerts
from compaction.engine.alerts import AlertEvidence
from sessions.models import AgentSession, Project


class AlertRule(models.TextChoices):
    COMPACTION_STORM = "compaction_storm", "Compaction storm"
    COMPACTION_LOOP = "compaction_loop", "Compaction loop"
    REPEATED_COMPACTION = "repeated_compaction", "Repeated compaction"
    COMPACTION_THRASH = "compaction_thrash", "Compaction thrash"
    FAILED_SPLICE = "failed_splice", "Failed splice"
    NEAR_OVERFLOW = "near_overflow", "Near overflow"
    OVERFLOW = "overflow", "Overflow"
    LOST_CONSTRAINT = "lost_constraint", "Lost constraint"
    ORPHAN_PAIRS = "orphan_pairs", "Orphan tool pairs"
    PERSONAL_DATA = "personal_data", "Personal data in a summary"
    SECRET = "secret", "Secret in a message or summary"


class AlertSeverity(models.TextChoices):
    INFO = "info", "Info"
    WARNING = "warning", "Warning"
    CRITICAL = "critical", "Critical"


SEVERITY_RANK: dict[str, int] = {"info": 0, "warning": 1, "critical": 2}


class AlertState(models.TextChoices):
    OPEN = "open", "Open"
    ACKNOWLEDGED = "acknowledged", "Acknowledged"
    RESOLVED = "resolved", "Resolved"
    MUTED = "muted", "Muted"


ACTIVE_STATES = (AlertState.OPEN, AlertState.ACKNOWLEDGED)


# The fields of AlertSettings that change what the rules judge (the form shows them in this
# order); a change to any of them has the stored analyses judged again.
THRESHOLD_FIELDS: tuple[str, ...] = (
    "storm_compactions",
    "storm_window_minutes",
    "repeated_compaction_count",
    "thrash_compactions",
    "thrash_window_calls",
    "near_overflow_percent",
    "disabled_rules",
)


class AlertSettings(models.Model):
    """A project's alert thresholds; a project without a row uses the engine defaults."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="alert_settings")
    storm_compactions = models.PositiveIntegerField(
        default=6,
        validators=[MinValueValidator(2)],
        help_text="K: alert when this many compactions come...",
    )
    storm_window_minutes = models.PositiveIntegerField(
        default=60,
        validators=[MinValueValidator(1), MaxValueValidator(7 * 24 * 60)],
        help_text="...within W minutes of trace time.",
    )
    repeated_compaction_count = models.PositiveIntegerField(
        default=3,
        validators=[MinValueValidator(1)],
        help_text="N: alert when a session compacts this many times.",
    )
    thrash_compactions = models.PositiveIntegerField(
        default=2,
        validators=[MinValueValidator(2)],
        help_text="K: alert when this many compactions come...",
    )
    thrash_window_calls = models.PositiveIntegerField(
        default=20,
        validators=[MinValueValidator(1)],
        help_text="...within W model calls of each other.",
    )
    near_overflow_percent = models.PositiveIntegerField(
        default=95,
        validators=[MinValueValidator(1), MaxValueValidator(100)],
        help_text="A call at or above this share of the window.",
    )
    disabled_rules = models.JSONField(default=list, blank=True)
    email_recipients = models.TextField(
        blank=True, help_text="Comma-separated addresses told of new and reopened alerts."
    )

    class Meta:
        db_table = "compaction_alertsettings"
        verbose_name_plural = "alert settings"

    def __str__(self) -> str:
        return f"alert settings of {self.project_id}"

    def thresholds(self) -> engine_alerts.Thresholds:
        return engine_alerts.Thresholds(
            storm_compactions=self.storm_compactions,
            storm_window_minutes=self.storm_window_minutes,
            repeated_compaction_count=self.repeated_compaction_count,
            thrash_compactions=self.thrash_compactions,
            thrash_window_calls=self.thrash_window_calls,
            near_overflow_fill=self.near_overflow_percent / 100,
            disabled=frozenset(self.disabled_rules),
        )

    @property
    def email_list(self) -> list[str]:
        return [a.strip() for a in self.email_recipients.split(",") if a.strip()]


class Alert(models.Model):
    """One rule firing on one session. Never duplicated: new evidence updates the row, and
    a resolved alert that fires again is reopened with its history kept."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="alerts")
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="alerts")
    rule = models.CharField(max_length=30, choices=AlertRule.choices)
    severity = models.CharField(max_length=10, choices=AlertSeverity.choices)
    state = models.CharField(max_length=15, choices=AlertState.choices, default=AlertState.OPEN)
    title = models.CharField(max_length=300)
    evidence: models.JSONField[AlertEvidence, AlertEvidence] = models.JSONField(default=dict)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assigned_alerts",
    )
    muted_until = models.DateTimeField(null=True, blank=True)
    resolution = models.TextField(blank=True)
    opened_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "compaction_alert"
        ordering = ["-opened_at", "-pk"]
        constraints = [
            # One row per rule and session for ever, so at most one can be open; a race
            # between two analysis passes ends in get_or_create's retry, not a duplicate.
            models.UniqueConstraint(fields=["session", "rule"], name="alert_one_per_rule"),
        ]
        indexes = [models.Index(fields=["project", "state", "opened_at"], name="alert_queue")]

    def __str__(self) -> str:
        return f"{self.rule} on {self.session_id} ({self.state})"

    @property
    def is_active(self) -> bool:
        return self.state in ACTIVE_STATES


class AlertEventKind(models.TextChoices):
    OPENED = "opened", "Opened"
    UPDATED = "updated", "New evidence"
    REOPENED = "reopened", "Reopened"
    ACKNOWLEDGED = "acknowledged", "Acknowledged"
    RESOLVED = "resolved", "Resolved"
    MUTED = "muted", "Muted"
    UNMUTED = "unmuted", "Mute expired"
    ASSIGNED = "assigned", "Assigned"
    COMMENTED = "commented", "Commented"


class AlertEvent(models.Model):
    """One change to an alert: who (None for the analysis pass), when, what, and a comment."""

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    kind = models.CharField(max_length=15, choices=AlertEventKind.choices)
    from_state = models.CharField(max_length=15, blank=True)
    to_state = models.CharField(max_length=15, blank=True)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "compaction_alertevent"
        ordering = ["created_at", "pk"]

    def __str__(self) -> str:
        return f"{self.kind} of alert {self.alert_id}"


class WebhookFormat(models.TextChoices):
    JSON = "json", "JSON"
    SLACK = "slack", "Slack"


class Webhook(models.Model):
    """Where a project's new and reopened alerts are POSTed, signed with its secret.

    Signing needs the secret itself, so it cannot be hashed like an API key: it is kept sealed
    under a key derived from SECRET_KEY (alerts/webhook_secrets.py), never in clear.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    secret_encrypted = models.TextField(help_text="webhook_secrets.secret_seal(secret)")
    format = models.CharField(max_length=10, choices=WebhookFormat.choices, default="json")
    rules = models.JSONField(default=list, blank=True, help_text="Empty means every rule.")
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "compaction_webhook"
        ordering = ["pk"]

    def __str__(self) -> str:
        return self.url

    def wants(self, rule: str) -> bool:
        return self.active and (not self.rules or rule in self.rules)


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"


class DeliveryAttempt(TypedDict):
    at: str
    status_code: int | None
    error: str


class WebhookDelivery(models.Model):
    """One announcement to one webhook. ``body`` is the exact bytes signed and sent, so every
    retry carries the same signature and ``X-Sawtooth-Delivery`` id."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    alert = models.ForeignKey(
        Alert, null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries"
    )
    event = models.CharField(max_length=15)
    delivery_id = models.UUIDField(default=uuid.uuid4, unique=True)
    body = models.TextField()
    status = models.CharField(
        max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    log: models.JSONField[list[DeliveryAttempt], list[DeliveryAttempt]] = models.JSONField(
        default=list, blank=True
    )
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "compaction_webhookdelivery"
        ordering = ["-created_at", "-pk"]
        verbose_name_plural = "webhook deliveries"

    def __str__(self) -> str:
        return f"delivery {self.delivery_id} ({self.status})"
