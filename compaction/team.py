"""Team features' writes and reads: comments (with edit history) and saved list filters.

Services take keyword arguments and raise BadRequest with the field's name; selectors only
read. Comment bodies are trace-adjacent text written by people: templates escape them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, urlencode

from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.utils import timezone

from compaction.models import CompactionSpan
from compaction.team_models import Comment, CommentRevision, SavedFilter
from privacy import masking
from sessions import limits
from sessions.errors import BadRequest
from sessions.models import AgentSession

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


def _body(text: str) -> str:
    body = text.strip()
    if not body:
        raise BadRequest("body: write something")
    return limits.text_check(body, limit=limits.COMMENT_MAX, field="body")


def comment_create(
    *, session: AgentSession, author: Any, body: str, span: CompactionSpan | None = None
) -> Comment:
    if span is not None and span.session_id != session.pk:
        raise BadRequest("span: not a span of this session")
    return Comment.objects.create(session=session, span=span, author=author, body=_body(body))


@transaction.atomic
def comment_edit(*, comment_id: int, editor: Any, body: str) -> Comment:
    """Replace a comment's text, keeping the old text as a revision. Only its author edits."""
    comment = Comment.objects.select_for_update().get(pk=comment_id)
    if comment.author_id != getattr(editor, "pk", None):
        raise BadRequest("author: only the author can edit a comment")
    new_body = _body(body)
    if new_body == comment.body:
        return comment
    now = timezone.now()
    CommentRevision.objects.create(comment=comment, body=comment.body, replaced_at=now)
    comment.body = new_body
    comment.edited_at = now
    comment.save(update_fields=["body", "edited_at"])
    return comment


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


def saved_filter_save(*, user: Any, name: str, query: str) -> SavedFilter:
    """Save (or overwrite) the user's filter of this name."""
    name = name.strip()
    if not name:
        raise BadRequest("name: give the filter a name")
    limits.text_check(name, limit=limits.FILTER_NAME_MAX, field="name")
    if masking.holds_personal_data(name):
        raise BadRequest("name: holds personal data; a filter's name is kept as typed")
    cleaned = filter_query_clean(query)
    if not cleaned:
        raise BadRequest("query: choose at least one filter before saving")
    try:
        saved, _ = SavedFilter.objects.update_or_create(
            user=user, name=name, defaults={"query": cleaned}
        )
    except IntegrityError:  # two saves of the same name at once: the other one won
        saved = SavedFilter.objects.get(user=user, name=name)
    return saved


def saved_filter_delete(*, user: Any, filter_id: int) -> bool:
    deleted, _ = SavedFilter.objects.filter(user=user, pk=filter_id).delete()
    return bool(deleted)


def saved_filters_for(*, user: Any) -> QuerySet[SavedFilter]:
    return SavedFilter.objects.filter(user=user)
