"""Team's reads: a session's or a span's comments, a user's saved filters and the link each
one opens, a project's members. Selectors never write.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode

from django.db.models import QuerySet

from compaction.models import CompactionSpan
from privacy import masking
from sessions.models import AgentSession, Membership, Project
from team.models import Comment, SavedFilter

# The list's own parameters; anything else in a saved query string is dropped.
FILTER_KEYS = (
    "q",
    "project",
    "agent",
    "model",
    "started_after",
    "started_before",
    "period",
    "compacted",
    "min_fill",
    "problems",
    "sort",
)


def comments_for(*, session: AgentSession, span: CompactionSpan | None = None) -> QuerySet[Comment]:
    """A session's own comments (span=None) or one span's, oldest first, history joined."""
    return (
        Comment.objects.filter(session=session, span=span)
        .select_related("author")
        .prefetch_related("revisions")
    )


def filter_query_clean(query: str) -> str:
    """The list parameters of a query string, in a stable order; page and unknowns dropped,
    and a search for a person's identifier too (refused by search, never put in a link).

    >>> filter_query_clean("page=3&agent=billing&evil=1&period=7d")
    'agent=billing&period=7d'
    """
    pairs = [
        (k, v)
        for k, v in parse_qsl(query.lstrip("?"))
        if k in FILTER_KEYS and v and not (k == "q" and masking.query_refusal(v))
    ]
    return urlencode(sorted(pairs, key=lambda kv: FILTER_KEYS.index(kv[0])))


def saved_filters_for(*, user: Any) -> QuerySet[SavedFilter]:
    return SavedFilter.objects.filter(user=user)


def memberships_for(*, project: Project) -> QuerySet[Membership]:
    """The project's members by username, each with its user."""
    return project.memberships.select_related("user").order_by("user__username")
