"""What privacy keeps: personal data findings, the subject index, data-subject requests and
the audit log. The tables keep the names they had in the apps these models came from
(``compaction_*``, ``traces_auditevent``), so existing databases did not move a row.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from compaction.models import CompactionSpan, ReplayRun
from sessions import limits
from sessions.models import AgentSession, CompactionEvent, Message, Project


class FindingWhere(models.TextChoices):
    MESSAGE = "message", "Message"
    SUMMARY = "summary", "Summary"
    METADATA = "metadata", "Metadata"
    SESSION = "session", "Session fields"  # the external id, agent, model or title


class FindingLevel(models.TextChoices):
    FINDING = "finding", "Personal data"
    INFO = "info", "Not a person's (info)"


class SummaryDelta(models.TextChoices):
    """What a compaction summary did with a value (findings ``where="summary"`` only)."""

    CARRIED = "carried", "Carried from the raw history"
    INTRODUCED = "introduced", "Introduced by the summary"
    REWORDED = "reworded", "Reworded (the same value written another way)"


class FindingStatus(models.TextChoices):
    OPEN = "open", "Open"
    CONFIRMED = "confirmed", "Confirmed"
    FALSE_POSITIVE = "false_positive", "False positive"
    REDACTED = "redacted", "Redacted"


# What makes findings repeats of one value at one place (a tool result listing one address
# twenty times makes twenty findings): the review queue shows them as one row, and a review
# decision or a redaction applies to all of them (privacy/findings.py, selectors.py).
FINDING_PLACE = ("session_id", "where", "message_id", "event_id", "kind", "value_hash")


class Finding(models.Model):
    """Personal data found by the analysis pass in a raw message, a summary or the metadata.

    Never holds the value itself: a masked preview for people and a keyed hash (HMAC-SHA256
    of the normalized value, privacy/findings.py) for comparisons. `message`, `event` and
    `span` point back at where it came from, so an erasure can follow the lineage.
    """

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="findings")
    kind = models.CharField(max_length=20)
    where = models.CharField(max_length=10, choices=FindingWhere.choices)
    seq = models.PositiveIntegerField(
        null=True, blank=True, help_text="The message's seq, or a summary's compaction seq."
    )
    path = models.CharField(max_length=300, blank=True, help_text="Where in the JSON it is.")
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.CASCADE, related_name="findings"
    )
    event = models.ForeignKey(
        CompactionEvent, null=True, blank=True, on_delete=models.CASCADE, related_name="findings"
    )
    span = models.ForeignKey(
        CompactionSpan, null=True, blank=True, on_delete=models.SET_NULL, related_name="findings"
    )
    masked = models.CharField(max_length=200)
    value_hash = models.CharField(max_length=64, db_index=True)
    confidence = models.CharField(max_length=10, default="high")
    # "info": looks like personal data and is nobody's (a role mailbox, a public resolver):
    # listed by the API, hidden by the review queue by default, never alerted on.
    level = models.CharField(
        max_length=10, choices=FindingLevel.choices, default=FindingLevel.FINDING
    )
    copied_from_raw = models.BooleanField(default=False)
    # A summary finding: carried, introduced or reworded (SummaryDelta); "" elsewhere.
    summary_delta = models.CharField(max_length=10, blank=True, choices=SummaryDelta.choices)
    # Keyed hash of the value as written ("529.982.247-25" and "52998224725" differ): how a
    # summary's rewording of a raw value is told from a copy. "" on rows stored before it.
    form_hash = models.CharField(max_length=64, blank=True)
    status = models.CharField(
        max_length=20, choices=FindingStatus.choices, default=FindingStatus.OPEN
    )
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "compaction_finding"
        ordering = ["session", "where", "seq", "pk"]
        indexes = [
            models.Index(fields=["session", "where", "status"], name="finding_session_where"),
            models.Index(fields=["status", "kind"], name="finding_queue"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} in {self.where} @{self.seq} ({self.status})"


class NamePart(models.TextChoices):
    FIRST = "first", "First name"
    SURNAME = "surname", "Surname"


class KnownName(models.Model):
    """A part of a person's name the analysis found for sure, by keyed hash only: a surname is
    masked alone across its project, a first name alone within its session (``masking``'s
    name scope). ``digest`` is HMAC-SHA256 of the lowercase word under the server secret."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="+")
    part = models.CharField(max_length=10, choices=NamePart.choices)
    digest = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "part", "digest"], name="known_name_once_per_session"
            )
        ]
        indexes = [models.Index(fields=["project", "part"], name="known_name_project")]

    def __str__(self) -> str:
        return f"{self.part} of session {self.session_id}"


# --- data-subject requests (LGPD art. 18) ---------------------------------------------------


class SubjectWhere(models.TextChoices):
    MESSAGE = "message", "Message"
    SUMMARY = "summary", "Summary"
    METADATA = "metadata", "Session metadata"
    PROBE = "probe", "Probe"
    SPAN = "span", "Compaction span"
    REPLAY = "replay", "Replay"


class SubjectToken(models.Model):
    """Where an identifier (CPF, e-mail, phone, ...) occurs, by keyed hash only.

    ``digest`` is HMAC-SHA256 of ``kind:normalized`` under a server secret
    (``privacy.subjects.subject_digest``): the index finds a subject's rows without
    holding the identifier in clear. Rebuilt by the analysis pass (raw rows, summaries,
    observed spans) and by each replay (its run and spans).
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20)
    digest = models.CharField(max_length=64)
    where = models.CharField(max_length=10, choices=SubjectWhere.choices)
    seq = models.PositiveIntegerField(null=True, blank=True)
    message = models.ForeignKey(
        Message, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    event = models.ForeignKey(
        CompactionEvent, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    span = models.ForeignKey(
        CompactionSpan, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    replay = models.ForeignKey(
        ReplayRun, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    count = models.PositiveIntegerField(default=1, help_text="Occurrences at this place.")

    class Meta:
        db_table = "compaction_subjecttoken"
        indexes = [models.Index(fields=["project", "digest"], name="subject_token_digest")]

    def __str__(self) -> str:
        return f"{self.kind} in {self.where} of session {self.session_id}"


class SubjectIndexMark(models.Model):
    """How far a session's raw messages are indexed: each message is scanned once, since
    stored messages are immutable (a replaced one is deleted, its tokens with it)."""

    session = models.OneToOneField(AgentSession, on_delete=models.CASCADE, related_name="+")
    message_pk = models.PositiveBigIntegerField(default=0)

    class Meta:
        db_table = "compaction_subjectindexmark"

    def __str__(self) -> str:
        return f"subject index of {self.session_id} up to message {self.message_pk}"


class SubjectAction(models.TextChoices):
    FIND = "find", "Find"
    EXPORT = "export", "Export"
    ANONYMIZE = "anonymize", "Anonymize"
    DELETE = "delete", "Delete sessions"


class SubjectRequest(models.Model):
    """A data-subject request and what was done. Never holds the identifier in clear:
    its kind, keyed hash and a masked form only."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="subject_requests")
    kind = models.CharField(max_length=20)
    digest = models.CharField(max_length=64)
    masked = models.CharField(max_length=200)
    action = models.CharField(max_length=10, choices=SubjectAction.choices)
    reason = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    requested_by_name = models.CharField(max_length=150, blank=True)
    result = models.JSONField(default=dict, blank=True, help_text="Counts of what was found/done.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "compaction_subjectrequest"
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.get_action_display()} {self.masked} in {self.project_id}"

    @property
    def result_text(self) -> str:
        """What was found or done, by stored name: "traces.Message 6, sessions_anonymized 1"."""
        rows = self.result.get("rows") or {}
        return ", ".join(f"{name} {count}" for name, count in sorted(rows.items()))

    @property
    def result_words(self) -> str:
        """What was found or done, as a reviewer reads it: "messages: 6, sessions anonymized:
        1". Counts of nothing are left out."""
        rows = self.result.get("rows") or {}
        said = [
            (RESULT_WORDS.get(name) or _words_of(name), count)
            for name, count in rows.items()
            if isinstance(count, int) and count
        ]
        return ", ".join(f"{words}: {count}" for words, count in sorted(said)) or "nothing"


# The rows an erasure or a find counts, by the label it stores (see privacy.subjects'
# _LABEL_BEFORE_THE_MOVE), in the words of the page; a label not listed reads as its name.
RESULT_WORDS: dict[str, str] = {
    "traces.AgentSession": "session titles or metadata",
    "traces.Message": "messages",
    "traces.CompactionEvent": "compaction summaries",
    "traces.Probe": "probes",
    "traces.AuditEvent": "audit records",
    "compaction.CompactionSpan": "compaction spans",
    "compaction.ReplayRun": "replays",
    "compaction.SessionAnalysis": "analyses",
    "compaction.Experiment": "experiments",
    "compaction.Alert": "alerts",
    "compaction.AlertEvent": "alert events",
    "compaction.Comment": "comments",
    "compaction.CommentRevision": "comment revisions",
    "compaction.Finding": "findings",
    "compaction.SavedFilter": "saved filters",
    "compaction.Webhook": "webhooks",
    "compaction.WebhookDelivery": "webhook deliveries",
    "team.VerdictMark": "verdict notes",
    "sessions_anonymized": "sessions anonymized",
    "sessions_deleted": "sessions deleted",
    "sessions_found_outside_the_index": "sessions found outside the index",
    "replays_requeued": "replays run again",
    "findings_removed": "findings removed",
}


def _words_of(name: str) -> str:
    """``compaction.SomeThing`` -> "some thing rows"; ``some_count`` -> "some count"."""
    if "." not in name:
        return name.replace("_", " ")
    model = name.rsplit(".", 1)[-1]
    words = "".join(f" {c.lower()}" if c.isupper() else c for c in model).strip()
    return f"{words} rows"


class AuditAction(models.TextChoices):
    REVEAL = "reveal", "Reveal"
    EXPORT = "export", "Export"
    ERASURE = "erasure", "Erasure"
    ROLE_CHANGE = "role_change", "Role change"
    KEY_CHANGE = "key_change", "Key change"
    SUBJECT_FIND = "subject_find", "Subject find"
    REVIEW = "review", "Review decision"
    POLICY_CHANGE = "policy_change", "Policy change"
    WEBHOOK_CHANGE = "webhook_change", "Webhook change"
    SETTINGS_CHANGE = "settings_change", "Alert settings change"


class AuditEvent(models.Model):
    """Who did what, when and why: append-only (rows are only ever inserted; see privacy/audit.py).

    The actor and project are kept by name too, so a row outlives a deleted user or project.
    A row never holds a revealed value: only where it was and what kind it was.
    """

    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_name = models.CharField(max_length=150)
    action = models.CharField(max_length=20, choices=AuditAction.choices)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="audit_events"
    )
    project_name = models.CharField(max_length=limits.PROJECT_NAME_MAX, blank=True)
    target = models.CharField(max_length=300, help_text="What was acted on, e.g. message:12#3.")
    reason = models.TextField(blank=True)
    detail = models.JSONField(default=dict, blank=True)

    class Meta:
        db_table = "traces_auditevent"
        ordering = ["-created_at", "-pk"]
        indexes = [models.Index(fields=["project", "-created_at"], name="audit_recent")]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_name} {self.action} {self.target}"
