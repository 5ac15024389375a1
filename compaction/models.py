"""What the workers derive from raw traces: analyses, compaction spans, replays, experiments.

Nothing here rewrites a raw message; every row points back at the session (and seqs) it was
computed from, so deleting a session removes everything derived from it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from compaction.engine.evals import SpanVerdict, span_verdict
from compaction.engine.experiments import policy_key
from sessions import limits
from sessions.models import AgentSession, CompactionEvent, Message, Project


class AnalysisStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class SessionAnalysis(models.Model):
    """The per-session pass run after each ingest: token curve, pair check, span evals."""

    session = models.OneToOneField(AgentSession, on_delete=models.CASCADE, related_name="analysis")
    status = models.CharField(
        max_length=10, choices=AnalysisStatus.choices, default=AnalysisStatus.PENDING
    )
    # Bumped by every ingest that changes the session; the worker records which one it saw,
    # so a batch that lands mid-analysis is never mistaken for analysed.
    requested_generation = models.PositiveIntegerField(default=0)
    analysed_generation = models.PositiveIntegerField(default=0)
    # The request generation of the session's last erasure: a pass that read the history
    # before it stores nothing (its results would copy an erased value back).
    erased_generation = models.PositiveIntegerField(default=0)
    message_count = models.PositiveIntegerField(default=0)
    curve = models.JSONField(default=list, blank=True)
    sparkline = models.JSONField(default=list, blank=True, help_text="Peak fill per slice.")
    orphans = models.JSONField(default=list, blank=True)
    calibration = models.JSONField(default=dict, blank=True)
    peak_context_tokens = models.PositiveIntegerField(null=True, blank=True)
    peak_fill = models.FloatField(null=True, blank=True)
    call_count = models.PositiveIntegerField(default=0)
    estimated_calls = models.PositiveIntegerField(default=0)
    failed_splices = models.PositiveIntegerField(default=0)
    lost_facts = models.PositiveIntegerField(
        default=0, help_text="Probes and constraints lost by observed compactions."
    )
    pii_scanned_message_pk = models.PositiveBigIntegerField(
        default=0, help_text="Messages up to this pk have been scanned for personal data."
    )
    # Which messages the read path may show without scanning them again: those with a pk in
    # (after, through], scanned by the detector of this version, and not flagged (a detection,
    # or content rewritten since). See compaction/known_clean.py.
    pii_clean_detector = models.CharField(max_length=16, blank=True)
    pii_clean_after_pk = models.PositiveBigIntegerField(default=0)
    pii_clean_through_pk = models.PositiveBigIntegerField(default=0)
    pii_flagged_message_pks = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    # Set by the first request a pass has not served yet, cleared when a worker takes it: the
    # analyses waiting their turn, which the fair pick (compaction/fair.py) chooses among.
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # While running: refreshed every few seconds by its worker (compaction/liveness.py), so
    # an analysis whose worker died is found within seconds, however long a live one takes.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name_plural = "session analyses"
        indexes = [
            models.Index(fields=["peak_fill"], name="analysis_peak_fill"),
            # The waiting rows, read by every worker's fair pick.
            models.Index(
                fields=["queued_at"],
                condition=models.Q(queued_at__isnull=False),
                name="analysis_queued",
            ),
            # The few running rows, read every few seconds by the sweep for abandoned work.
            models.Index(
                fields=["heartbeat_at"],
                condition=models.Q(status=AnalysisStatus.RUNNING),
                name="analysis_running",
            ),
        ]

    def __str__(self) -> str:
        return f"analysis of {self.session_id} ({self.status})"

    @property
    def is_current(self) -> bool:
        return self.analysed_generation >= self.requested_generation


class SweepMark(models.Model):
    """One row (pk 1): when the sweep for abandoned work last ran, and since when it has run
    without a gap, both by the database's clock (compaction/liveness.py).

    A gap (the database down, beat stopped, every worker busy) may have kept live workers from
    beating, so running work's silence counts only from ``reachable_since``.
    """

    swept_at = models.DateTimeField()
    reachable_since = models.DateTimeField()

    def __str__(self) -> str:
        return f"swept at {self.swept_at}, without a gap since {self.reachable_since}"


class WorkShare(models.Model):
    """When a worker last took up one of the project's analyses and one of its replays. The
    fair pick serves first the project with the fewest running, then the one served longest
    ago (compaction/fair.py), so one project's flood cannot hold every worker."""

    project = models.OneToOneField(
        Project, primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    analysis_served_at = models.DateTimeField(null=True, blank=True)
    replay_served_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"work share of project {self.project_id}"


class ReplayStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class Experiment(models.Model):
    """One policy, or a grid of them, replayed over many sessions of a project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="experiments")
    name = models.CharField(max_length=limits.EXPERIMENT_NAME_MAX)
    policies = models.JSONField(help_text="A list of policy dicts.")
    status = models.CharField(
        max_length=10, choices=ReplayStatus.choices, default=ReplayStatus.QUEUED
    )
    aggregate = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_active(self) -> bool:
        return self.status in (ReplayStatus.QUEUED, ReplayStatus.RUNNING)


class ReplayRun(models.Model):
    """A session replayed offline under a policy: what would this harness have done?"""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="replays")
    experiment = models.ForeignKey(
        Experiment, null=True, blank=True, on_delete=models.CASCADE, related_name="runs"
    )
    policy = models.JSONField()
    summarizer = models.CharField(max_length=30, default="extractive")
    status = models.CharField(
        max_length=10, choices=ReplayStatus.choices, default=ReplayStatus.QUEUED
    )
    progress = models.FloatField(default=0.0)
    calls_done = models.PositiveIntegerField(default=0)
    calls_total = models.PositiveIntegerField(default=0)
    curve = models.JSONField(default=list, blank=True)
    totals = models.JSONField(default=dict, blank=True)
    evals = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["status", "heartbeat_at"], name="replay_stuck")]

    def __str__(self) -> str:
        return f"replay {self.pk} of {self.session_id} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in (ReplayStatus.QUEUED, ReplayStatus.RUNNING)

    @property
    def policy_label(self) -> str:
        """Every knob of the policy (the engine's label), so two replays never read the same."""
        policy = self.policy if isinstance(self.policy, dict) else {}
        label = policy_key({**policy, "summarizer": self.summarizer})
        return label if policy.get("pin_head", True) else f"{label} · head not pinned"


class SpanOrigin(models.TextChoices):
    OBSERVED = "observed", "Observed"
    REPLAYED = "replayed", "Replayed"


class CompactionSpan(models.Model):
    """One compaction, observed in the trace or produced by a replay, with its evals."""

    session = models.ForeignKey(
        AgentSession, on_delete=models.CASCADE, related_name="compaction_spans"
    )
    origin = models.CharField(max_length=10, choices=SpanOrigin.choices)
    event = models.OneToOneField(
        CompactionEvent, null=True, blank=True, on_delete=models.CASCADE, related_name="span"
    )
    replay = models.ForeignKey(
        ReplayRun, null=True, blank=True, on_delete=models.CASCADE, related_name="spans"
    )
    index = models.PositiveIntegerField(help_text="Order of this span within its session/run.")
    seq = models.PositiveIntegerField(help_text="First message sent after the compaction.")
    # an observed span's stage is its compaction's strategy, so it holds as much
    stage = models.CharField(max_length=limits.STRATEGY_MAX)
    trigger = models.CharField(max_length=20, blank=True)
    tokens_before = models.PositiveIntegerField(null=True, blank=True)
    tokens_after = models.PositiveIntegerField(null=True, blank=True)
    tokens_estimated = models.BooleanField(default=False)
    replaced_from_seq = models.PositiveIntegerField(null=True, blank=True)
    replaced_to_seq = models.PositiveIntegerField(null=True, blank=True)
    kept = models.JSONField(default=dict, blank=True)
    summary = models.TextField(blank=True)
    summary_sections = models.JSONField(default=dict, blank=True)
    retention = models.JSONField(default=list, blank=True)
    retention_score = models.FloatField(null=True, blank=True)
    rework = models.JSONField(default=list, blank=True)
    failed = models.BooleanField(default=False)
    failure_reason = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["session", "origin", "index"]
        constraints = [
            # A redelivered replay task must not add a second copy of its spans.
            models.UniqueConstraint(
                fields=["replay", "index"],
                condition=models.Q(replay__isnull=False),
                name="span_unique_per_replay",
            ),
            models.UniqueConstraint(
                fields=["session", "index"],
                condition=models.Q(origin="observed"),
                name="span_unique_observed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.origin} {self.stage} @{self.seq}"

    @property
    def tokens_dropped(self) -> int | None:
        if self.tokens_before is None or self.tokens_after is None:
            return None
        return self.tokens_before - self.tokens_after

    @property
    def effectiveness(self) -> float | None:
        """after / before: near 1.0 means the splice saved nothing."""
        if not self.tokens_before or self.tokens_after is None:
            return None
        return self.tokens_after / self.tokens_before

    @property
    def verdict(self) -> SpanVerdict:
        """The one health verdict of this compaction (its splice and what it lost)."""
        lost = [str(item.get("kind")) for item in self.retention if not item.get("kept")]
        return span_verdict(self.failure_reason if self.failed else "", lost)


class FindingWhere(models.TextChoices):
    MESSAGE = "message", "Message"
    SUMMARY = "summary", "Summary"
    METADATA = "metadata", "Metadata"
    SESSION = "session", "Session fields"  # the external id, agent, model or title


class FindingLevel(models.TextChoices):
    FINDING = "finding", "Personal data"
    INFO = "info", "Not a person's (info)"


class FindingStatus(models.TextChoices):
    OPEN = "open", "Open"
    CONFIRMED = "confirmed", "Confirmed"
    FALSE_POSITIVE = "false_positive", "False positive"
    REDACTED = "redacted", "Redacted"


# What makes findings repeats of one value at one place (a tool result listing one address
# twenty times makes twenty findings): the review queue shows them as one row, and a review
# decision or a redaction applies to all of them (compaction/findings.py, selectors.py).
FINDING_PLACE = ("session_id", "where", "message_id", "event_id", "kind", "value_hash")


class Finding(models.Model):
    """Personal data found by the analysis pass in a raw message, a summary or the metadata.

    Never holds the value itself: a masked preview for people and a keyed hash (HMAC-SHA256
    of the normalized value, compaction/findings.py) for comparisons. `message`, `event` and
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
    status = models.CharField(
        max_length=20, choices=FindingStatus.choices, default=FindingStatus.OPEN
    )
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["session", "where", "seq", "pk"]
        indexes = [
            models.Index(fields=["session", "where", "status"], name="finding_session_where"),
            models.Index(fields=["status", "kind"], name="finding_queue"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} in {self.where} @{self.seq} ({self.status})"


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
    (``compaction.subjects.subject_digest``): the index finds a subject's rows without
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
        "CompactionSpan", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    replay = models.ForeignKey(
        ReplayRun, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    count = models.PositiveIntegerField(default=1, help_text="Occurrences at this place.")

    class Meta:
        indexes = [models.Index(fields=["project", "digest"], name="subject_token_digest")]

    def __str__(self) -> str:
        return f"{self.kind} in {self.where} of session {self.session_id}"


class SubjectIndexMark(models.Model):
    """How far a session's raw messages are indexed: each message is scanned once, since
    stored messages are immutable (a replaced one is deleted, its tokens with it)."""

    session = models.OneToOneField(AgentSession, on_delete=models.CASCADE, related_name="+")
    message_pk = models.PositiveBigIntegerField(default=0)

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
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.get_action_display()} {self.masked} in {self.project_id}"

    @property
    def result_text(self) -> str:
        """What was found or done, in words: "traces.Message 6, sessions_anonymized 1"."""
        rows = self.result.get("rows") or {}
        return ", ".join(f"{name} {count}" for name, count in sorted(rows.items()))


class OutboxTask(models.Model):
    """A task to send to the broker, written in the same transaction as the rows it is about.

    Sent right after the commit and marked ``sent_at``; when the broker is down the row stays
    and the beat task ``outbox_drain`` sends it later, so an outage delays work, never loses it.
    """

    kind = models.CharField(max_length=40)
    args = models.JSONField(default=list)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=300, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["created_at"],
                condition=models.Q(sent_at__isnull=True),
                name="outbox_unsent",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind}{self.args} ({'sent' if self.sent_at else 'unsent'})"
