"""Team's tables: comments on a session or one of its spans (with every earlier version
kept), and each user's saved filters for the sessions list.

They were born in the compaction app and keep its table names (``db_table``), so a database
migrates in place (team/migrations/0001_initial.py moves them in Django's state only).
Memberships stay in sessions.models (see team/__init__.py). Alerts keep their comments in
their own history (AlertEvent, kind "commented"): one append-only record per alert.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
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
