"""Projects, people and keys, and the canonical trace: sessions, messages, observed compactions.

Raw messages are stored as sent and never rewritten by analysis; everything derived points
back at them by (session, seq).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from compaction.engine import tokens
from compaction.engine.messages import NOT_A_MODEL, usage_from_wire
from compaction.engine.names import Trigger
from sessions import limits


class Project(models.Model):
    name = models.CharField(max_length=limits.PROJECT_NAME_MAX, unique=True)
    allow_external_models = models.BooleanField(
        default=False,
        help_text="Allow sending trace content to an external model (e.g. the Anthropic API) "
        "for summaries and judgements. Off by default for LGPD.",
    )
    judge_retention = models.BooleanField(
        default=False,
        help_text="Ask an LLM judge (the Anthropic API) about facts the offline check did not "
        "find, for observed and replayed compactions. Needs allow_external_models and "
        "ANTHROPIC_API_KEY; its tokens are recorded.",
    )
    retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Delete sessions not updated for this many days (and everything derived "
        "from them). Empty keeps them forever.",
    )
    mask_at_ingest = models.BooleanField(
        default=False,
        help_text="Store trace text with personal data already masked (privacy/detect/pii.py): "
        "the raw values are never kept. Applies to what is ingested after it is turned on.",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    ENGINEER = "engineer", "Engineer"
    PRIVACY_REVIEWER = "privacy_reviewer", "Privacy reviewer"
    ADMIN = "admin", "Admin"


class Membership(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.VIEWER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="membership_unique_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.get_role_display()})"


KEY_PREFIX = "st_"


def api_key_hash(raw_key: str) -> str:
    # Keys are long random tokens, so a fast hash is enough; no per-key salt is needed.
    return hashlib.sha256(raw_key.encode()).hexdigest()


class ApiKey(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=limits.API_KEY_NAME_MAX)
    prefix = models.CharField(max_length=16, unique=True, help_text="Shown to identify the key.")
    hashed_key = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @staticmethod
    def generate() -> tuple[str, str]:
        """Return (prefix, raw key). The raw key is shown once and never stored."""
        prefix = secrets.token_hex(4)
        return prefix, f"{KEY_PREFIX}{prefix}_{secrets.token_urlsafe(32)}"


class AgentSession(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sessions")
    external_id = models.CharField(max_length=limits.EXTERNAL_ID_MAX)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    agent = models.CharField(max_length=limits.AGENT_MAX, blank=True)
    model = models.CharField(max_length=limits.SESSION_MODEL_MAX, blank=True)
    # The metadata's title, else the first real prompt (``compaction.engine.titles``); set at
    # ingest when empty and corrected by the analysis, which sees every message.
    title = models.CharField(max_length=limits.TITLE_MAX, blank=True)
    context_window = models.PositiveIntegerField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # An importer's running state of the conversation (sessions/importers/calls.py: the hashes
    # and seqs of the context it has seen), never the client's metadata: not shown, searched
    # or scanned for personal data.
    import_state = models.JSONField(default=dict, blank=True)
    # Title, external id, agent, model and metadata as search reads them (masked).
    search_text = models.TextField(null=True, blank=True, editable=False)  # noqa: DJ001 - null: not yet
    # Kept up to date by the ingest service in the same transaction as the rows they count.
    message_count = models.PositiveIntegerField(default=0)
    compaction_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "external_id"], name="session_unique_external_id"
            )
        ]
        indexes = [
            models.Index(fields=["project", "-updated_at"], name="session_recent"),
            models.Index(fields=["project", "agent"], name="session_agent"),
            models.Index(fields=["project", "parent"], name="session_parent"),
        ]
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        # Not the external id: it is the client's text and may hold a customer's document,
        # and this is what the admin, log lines and error pages print.
        return f"session {self.pk}"


class MessageRole(models.TextChoices):
    SYSTEM = "system", "System"
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"


def message_usage(
    input_tokens: int | None,
    output_tokens: int | None,
    cache_read_input_tokens: int | None,
    cache_creation_input_tokens: int | None,
    iterations: Any,
    cache_creation_1h_input_tokens: int | None = None,
) -> dict[str, object] | None:
    """A message's usage in its wire form, from its columns (None when it reported none, or
    reported 0 in and 0 out: rows stored before ingest read that as no usage)."""
    counters = (input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens)
    if not any(counters) and not iterations:
        return None
    usage: dict[str, object] = {
        "input_tokens": input_tokens or 0,
        "output_tokens": output_tokens or 0,
        "cache_read_input_tokens": cache_read_input_tokens or 0,
        "cache_creation_input_tokens": cache_creation_input_tokens or 0,
    }
    if iterations is not None:
        usage["iterations"] = iterations
    if cache_creation_1h_input_tokens:
        written = cache_creation_input_tokens or 0
        usage["cache_creation"] = {
            "ephemeral_5m_input_tokens": max(written - cache_creation_1h_input_tokens, 0),
            "ephemeral_1h_input_tokens": cache_creation_1h_input_tokens,
        }
    return usage


class Message(models.Model):
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="messages")
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=10, choices=MessageRole.choices)
    content = models.JSONField(help_text="Anthropic-shaped content blocks, as sent.")
    timestamp = models.DateTimeField(null=True, blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cache_read_input_tokens = models.PositiveIntegerField(null=True, blank=True)
    cache_creation_input_tokens = models.PositiveIntegerField(null=True, blank=True)
    # Of cache_creation_input_tokens, the writes to the 1-hour cache (priced at its rate).
    cache_creation_1h_input_tokens = models.PositiveIntegerField(null=True, blank=True)
    iterations = models.JSONField(null=True, blank=True)
    content_hash = models.CharField(max_length=64)
    # The model of an assistant message when the trace names it per message ("" when it does
    # not: the session's model applies). "<synthetic>": a failed request, not a call.
    model = models.CharField(max_length=limits.MESSAGE_MODEL_MAX, blank=True, default="")
    # What search reads: the text a reader sees with personal data masked, written by the
    # findings step of the analysis pass (sessions/search.py). Null until then: not searchable.
    search_text = models.TextField(null=True, blank=True, editable=False)  # noqa: DJ001 - null: not yet

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "seq"], name="message_unique_seq")
        ]
        indexes = [
            # How far search is behind: the messages not yet searchable, per session.
            models.Index(
                fields=["session"],
                condition=models.Q(search_text__isnull=True),
                name="message_unsearchable",
            )
        ]
        ordering = ["session", "seq"]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq} {self.role}"

    @property
    def is_failed_request(self) -> bool:
        """A message the harness wrote for a failed API request (``messages.is_call``)."""
        return self.role == MessageRole.ASSISTANT and self.model in NOT_A_MODEL

    @property
    def context_tokens(self) -> int | None:
        """What the model saw on this call (the engine's rule: ``tokens.context_size``)."""
        usage = self.usage
        if self.input_tokens is None or usage is None:
            return None
        return tokens.context_size(usage_from_wire(usage))

    @property
    def usage(self) -> dict[str, object] | None:
        return message_usage(
            self.input_tokens,
            self.output_tokens,
            self.cache_read_input_tokens,
            self.cache_creation_input_tokens,
            self.iterations,
            self.cache_creation_1h_input_tokens,
        )


class CompactionEvent(models.Model):
    """A compaction the agent's harness reported (observed, not replayed)."""

    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="compaction_events"
    )
    seq = models.PositiveIntegerField(help_text="First message the agent sent after compacting.")
    trigger = models.CharField(
        max_length=20,
        choices=[(t.value, t.value.capitalize()) for t in Trigger],
        default=Trigger.UNKNOWN.value,
    )
    strategy = models.CharField(max_length=limits.STRATEGY_MAX, blank=True)
    tokens_before = models.PositiveIntegerField(null=True, blank=True)
    tokens_after = models.PositiveIntegerField(null=True, blank=True)
    summary = models.TextField(blank=True)
    summary_seq = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Message that carries the summary in the raw trace, if any.",
    )
    replaced_from_seq = models.PositiveIntegerField(null=True, blank=True)
    replaced_to_seq = models.PositiveIntegerField(null=True, blank=True)
    kept = models.JSONField(default=dict, blank=True, help_text="Kept head/tail seq ranges.")
    duration_ms = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    source = models.CharField(max_length=30, default="api")
    content_hash = models.CharField(max_length=64)
    # What search reads: the text a reader sees with personal data masked, written by the
    # findings step of the analysis pass (sessions/search.py). Null until then: not searchable.
    search_text = models.TextField(null=True, blank=True, editable=False)  # noqa: DJ001 - null: not yet

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "seq", "strategy"], name="compaction_unique_position"
            )
        ]
        ordering = ["session", "seq"]

    def __str__(self) -> str:
        return f"{self.session_id}@{self.seq} {self.strategy or 'compaction'}"


class Probe(models.Model):
    """A fact that must survive compaction, e.g. a constraint stated at turn 3."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="probes")
    seq = models.PositiveIntegerField(help_text="Message where the fact appeared.")
    text = models.TextField()
    check_hint = models.TextField(blank=True, help_text="How to check it, in words.")
    source = models.CharField(max_length=20, default="uploaded")
    text_hash = models.CharField(max_length=64)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "seq", "text_hash"], name="probe_unique_text"
            )
        ]
        ordering = ["session", "seq"]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.seq}: {self.text[:40]}"


class ImportStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class ImportJob(models.Model):
    """An upload to ``POST /api/v1/imports``, checked by the web process and imported by a
    worker (sessions/import_jobs.py). ``public_id`` is the ``job_id`` a client polls; a job
    is found only through its project, so another project's id reads as not found."""

    public_id = models.UUIDField(unique=True, editable=False)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="import_jobs")
    status = models.CharField(max_length=10, choices=ImportStatus, default=ImportStatus.QUEUED)
    files_total = models.PositiveIntegerField(default=0)
    files_done = models.PositiveIntegerField(default=0)
    size_bytes = models.BigIntegerField(default=0)  # after every gzip layer is undone
    report = models.JSONField(default=dict, blank=True)  # ImportReport.to_dict() once done
    error = models.TextField(blank=True, default="")
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "created_at"])]

    def __str__(self) -> str:
        return f"import {self.public_id} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (ImportStatus.DONE, ImportStatus.FAILED)

    @property
    def progress(self) -> float:
        if self.status == ImportStatus.DONE:
            return 1.0
        return round(self.files_done / self.files_total, 3) if self.files_total else 0.0


class ImportChunk(models.Model):
    """One MiB of one uploaded file (already inflated), kept until its job is imported: the
    database is the one store every web and worker process shares in either setup."""

    job = models.ForeignKey(ImportJob, on_delete=models.CASCADE, related_name="chunks")
    path = models.CharField(max_length=500)  # relative: "<task id>/ui_messages.json", "a.jsonl"
    shown = models.CharField(max_length=500)  # the name the client sent (".gz" kept)
    seq = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["job", "path", "seq"], name="import_chunk_unique")
        ]

    def __str__(self) -> str:
        return f"{self.path} #{self.seq}"
