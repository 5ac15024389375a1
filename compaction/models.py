"""What the workers derive from raw traces: analyses, compaction spans, replays, experiments.

Nothing here rewrites a raw message; every row points back at the session (and seqs) it was
computed from, so deleting a session removes everything derived from it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from compaction.engine.evals import SpanVerdict, span_verdict
from compaction.engine.experiments import policy_key
from sessions import limits
from sessions.models import AgentSession, CompactionEvent, Project


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
    lost_files_only = models.PositiveIntegerField(
        default=0,
        help_text="Observed compactions that lost only files or identifiers (amber verdict).",
    )
    pii_scanned_message_pk = models.PositiveBigIntegerField(
        default=0, help_text="Messages up to this pk have been scanned for personal data."
    )
    # Which messages the read path may show without scanning them again: those with a pk in
    # (after, through], scanned by the detector of this version, and not flagged (a detection,
    # or content rewritten since). See privacy/known_clean.py.
    pii_clean_detector = models.CharField(max_length=16, blank=True)
    pii_clean_after_pk = models.PositiveBigIntegerField(default=0)
    pii_clean_through_pk = models.PositiveBigIntegerField(default=0)
    pii_flagged_message_pks = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    # Set by the first request a pass has not served yet, cleared when a worker takes it: the
    # analyses waiting their turn, which the fair pick (compaction/fair.py) chooses among.
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    # The ``queued_at`` of the request a running pass serves: how far behind it is (search
    # and the pages wait on it), which ``started_at`` alone would understate by the queue.
    serving_since = models.DateTimeField(null=True, blank=True)
    # While running: refreshed every few seconds by its worker (compaction/liveness.py), so
    # an analysis whose worker died is found within seconds, however long a live one takes.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Passes taken up since the last one that ended with its worker alive: a worker killed
    # under a pass (a hard limit) leaves it counted, and past ANALYSIS_MAX_ATTEMPTS the sweep
    # marks the session failed instead of queueing it again (compaction/recovery.py).
    attempts = models.PositiveSmallIntegerField(default=0)

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

    def get_absolute_url(self) -> str:
        return self.url()

    def url(self, *, middle: bool = False) -> str:
        """Its address that lasts: the session (or replay) and the seq, never the row id."""
        name = "compaction-middle" if middle else "compaction"
        if self.replay_id is not None:
            return reverse(f"compaction:replay-{name}", args=[self.replay_id, self.seq])
        return reverse(f"compaction:{name}", args=[self.session_id, self.seq])

    @property
    def tokens_before_note(self) -> str:
        """Why the size before is the session's own and not the harness's, or ""."""
        details = self.details if isinstance(self.details, dict) else {}
        note = details.get("tokens_before_note")
        return note if isinstance(note, str) else ""

    @property
    def prefix_tokens(self) -> int | None:
        """The new prefix the compaction left as the harness counted it, when it did (its
        size after, which leaves out the system prompt and tools the cache already holds);
        else the size after. What the cache has to be written again."""
        details = self.details if isinstance(self.details, dict) else {}
        reported = details.get("reported")
        after = reported.get("tokens_after") if isinstance(reported, dict) else None
        return after if isinstance(after, int) else self.tokens_after

    @property
    def tokens_after_note(self) -> str:
        """Why the size after is the session's own and not the harness's, or ""."""
        details = self.details if isinstance(self.details, dict) else {}
        note = details.get("tokens_after_note")
        return note if isinstance(note, str) else ""

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
        lost = [item for item in self.retention if not item.get("kept")]
        again = [str(item.get("text")) for item in lost if item.get("needed_again")]
        return span_verdict(
            self.failure_reason if self.failed else "",
            [str(item.get("kind")) for item in lost],
            again,
        )


class RetiredSpan(models.Model):
    """The id of a span a later analysis no longer has (its compaction left the trace): links
    to it (shared, in comments, in webhook payloads) redirect to the seq it had."""

    span_id = models.PositiveBigIntegerField(primary_key=True)
    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="+")
    seq = models.PositiveIntegerField()

    def __str__(self) -> str:
        return f"span {self.span_id}: session {self.session_id} #{self.seq}"


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
