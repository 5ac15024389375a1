"""Comments on a session or on one of its compaction spans: author and time shown, escaped,
edits kept in a history only the author can add to, members only."""

from __future__ import annotations

import pytest
from django.test import Client

from compaction.models import CompactionSpan
from sessions.errors import BadRequest
from team import services
from team.models import Comment
from tests.factories import make_project, make_user

pytestmark = pytest.mark.django_db


def test_a_comment_on_a_session_shows_its_author_and_time_and_is_escaped(
    client_in: Client, session, member
):
    response = client_in.post(
        f"/sessions/{session.pk}/comments/", {"body": "<b>look</b> at #30"}, follow=True
    )
    comment = Comment.objects.get()
    assert comment.author == member
    assert comment.span is None
    page = response.content.decode()
    assert f'id="comment-{comment.pk}"' in page
    assert "&lt;b&gt;look&lt;/b&gt; at #30" in page
    assert member.username in page
    assert comment.created_at.strftime("%Y-%m-%d %H:%M") in page


def test_a_comment_on_a_span_is_shown_on_the_span_page_not_the_session_page(
    client_in: Client, session
):
    span = CompactionSpan.objects.get(session=session)
    client_in.post(
        f"/sessions/{session.pk}/comments/", {"body": "summary lost the rule", "span": span.pk}
    )
    assert "summary lost the rule" in client_in.get(span.get_absolute_url()).content.decode()
    assert "summary lost the rule" not in client_in.get(f"/sessions/{session.pk}/").content.decode()


def test_editing_keeps_the_old_text_in_the_history(client_in: Client, session, member):
    comment = services.comment_create(session=session, author=member, body="first take")
    client_in.post(f"/sessions/{session.pk}/comments/{comment.pk}/edit/", {"body": "second take"})
    comment.refresh_from_db()
    assert comment.body == "second take"
    assert comment.edited_at is not None
    assert [r.body for r in comment.revisions.all()] == ["first take"]
    page = client_in.get(f"/sessions/{session.pk}/").content.decode()
    assert "Edit history (1)" in page
    assert "first take" in page


def test_only_the_author_can_edit_and_an_empty_comment_is_refused(session, project, member):
    comment = services.comment_create(session=session, author=member, body="mine")
    other = make_user(project=project)
    with pytest.raises(BadRequest, match="author"):
        services.comment_edit(comment_id=comment.pk, editor=other, body="theirs")
    with pytest.raises(BadRequest, match="body"):
        services.comment_create(session=session, author=member, body="   ")
    comment.refresh_from_db()
    assert comment.body == "mine"
    assert not comment.revisions.exists()


def test_a_non_member_cannot_comment(client: Client, session):
    client.force_login(make_user(project=make_project()))
    response = client.post(f"/sessions/{session.pk}/comments/", {"body": "hi"})
    assert response.status_code == 404
    assert not Comment.objects.exists()
