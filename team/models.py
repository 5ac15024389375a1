"""Team's tables: comments on a session or one of its spans (with every earlier version
kept), each user's saved filters for the sessions list, and members' right / wrong marks on
the product's verdicts (VerdictMark).

They were born in the compaction app and keep its table names (``db_table``), so a database
migrates in place (team/migrations/0001_initial.py moves them in Django's state only).
Memberships stay in sessions.models (see team/__init__.py). Alerts keep their comments in
their own history (AlertEvent, kind "commented"): one append-only record per alert.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from sessions import limits
from sessions.models import AgentSession


class Comment(models.Model):
    """A note by a member on a session, or on one span of it when ``span`` is set."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="comments")
    span = models.ForeignKey(
        "compaction.CompactionSpan",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="comments",
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    body = models.TextField(max_length=limits.COMMENT_MAX)
    created_at = models.DateTimeField(default=timezone.now)
    edited_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "compaction_comment"
        ordering = ["created_at", "pk"]
        indexes = [models.Index(fields=["session", "span", "created_at"])]

    def __str__(self) -> str:
        return f"comment {self.pk} on session {self.session_id}"


class CommentRevision(models.Model):
    """The text a comment had before an edit, and when it was replaced."""

    comment = models.ForeignKey(Comment, on_delete=models.CASCADE, related_name="revisions")
    body = models.TextField()
    replaced_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "compaction_commentrevision"
        ordering = ["replaced_at", "pk"]

    def __str__(self) -> str:
        return f"revision of comment {self.comment_id}"


class SavedFilter(models.Model):
    """A named query string of the sessions list, private to its user."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_filters"
    )
    name = models.CharField(max_length=limits.FILTER_NAME_MAX)
    query = models.TextField(help_text="The list's query string, without page.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "compaction_savedfilter"
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="saved_filter_unique_name")
        ]

    def __str__(self) -> str:
        return self.name


class VerdictKind(models.TextChoices):
    """What the product said that a mark judges: one of a fact's five verdicts (DESIGN.md,
    "Verdicts"), or an alert raised."""

    LOST = "lost", "Lost"
    KEPT = "kept", "Kept"
    ALERT = "alert", "Alert"
    PARAPHRASED = "paraphrased", "Paraphrased"
    MENTIONED = "mentioned", "Mentioned"
    RELOADED = "reloaded", "Reloaded"


class FactVerdict(models.TextChoices):
    """What a "wrong" mark on a fact may say the verdict should have been."""

    KEPT = "kept", "kept"
    PARAPHRASED = "paraphrased", "paraphrased"
    LOST = "lost", "lost"
    MENTIONED = "mentioned", "mentioned (only pasted or named)"
    RELOADED = "reloaded", "reloaded (the harness puts it back)"


class Mark(models.TextChoices):
    RIGHT = "right", "Right"
    WRONG = "wrong", "Wrong"


class VerdictMark(models.Model):
    """One member's "right / wrong" on one verdict, with an optional note.

    A fact's verdict is named by its session, its compaction's seq and the fact's text (a
    keyed hash of it, ``fact_hash``), never by a span row: spans are written again by each
    analysis, and marks outlive that. ``kind`` and ``fact_kind`` are what the product said when
    the mark was made. An alert's mark points at the alert. One mark per user and verdict: the
    partial unique constraints below, so a second click changes the mark rather than adding
    one. ``session`` is set on both, so deleting or erasing a session follows to its marks.
    """

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=12, choices=VerdictKind.choices)
    seq = models.PositiveIntegerField(null=True, blank=True, help_text="The compaction's seq.")
    fact = models.TextField(blank=True, help_text="The fact's text, as the analysis gave it.")
    fact_kind = models.CharField(max_length=20, blank=True)
    fact_hash = models.CharField(max_length=64, blank=True)
    alert = models.ForeignKey(
        "alerts.Alert", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    mark = models.CharField(max_length=5, choices=Mark.choices)
    should_be = models.CharField(
        max_length=12,
        choices=FactVerdict.choices,
        blank=True,
        help_text="On a wrong mark of a fact: the verdict the member says is right.",
    )
    note = models.TextField(blank=True, max_length=limits.FEEDBACK_NOTE_MAX)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-updated_at", "-pk"]
        indexes = [
            models.Index(fields=["session", "seq"], name="verdict_mark_fact"),
            models.Index(fields=["-updated_at"], name="verdict_mark_recent"),
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["author", "session", "seq", "fact_hash"],
                condition=models.Q(alert__isnull=True),
                name="verdict_mark_one_per_fact",
            ),
            models.UniqueConstraint(
                fields=["author", "alert"],
                condition=models.Q(alert__isnull=False),
                name="verdict_mark_one_per_alert",
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(kind="alert", alert__isnull=False)
                    | models.Q(~models.Q(kind="alert"), alert__isnull=True, seq__isnull=False)
                ),
                name="verdict_mark_fact_or_alert",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.mark} on {self.kind} in session {self.session_id}"

    def get_absolute_url(self) -> str:
        """Where the marked verdict is shown, at its mark: addresses that last."""
        if self.alert_id is not None:
            return reverse("alerts:detail", args=[self.alert_id]) + "#alert-marks"
        url = reverse("compaction:compaction", args=[self.session_id, self.seq])
        return f"{url}#fact-{self.fact_hash[:16]}"
