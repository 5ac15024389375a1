"""Team pages' actions: post and edit comments, save and delete list filters.

Every action is a POST from a form on the session, span or list page and redirects back
to where it came from (the comment's anchor), with a flash message on a bad input.
"""

from __future__ import annotations

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from compaction import team
from compaction.team_models import Comment
from sessions import selectors
from sessions.errors import BadRequest, NotFound
from sessions.models import AgentSession


def _session(request: HttpRequest, pk: int) -> AgentSession:
    try:
        return selectors.session_get(projects=selectors.projects_for_user(request.user), pk=pk)
    except NotFound:
        raise Http404("No such session in your projects") from None


def _back(comment: Comment | None, session: AgentSession, span_pk: int | None) -> str:
    if span_pk is not None:
        url = reverse("compaction:span", args=[session.pk, span_pk])
    else:
        url = reverse("sessions:detail", args=[session.pk])
    return f"{url}#comment-{comment.pk}" if comment else f"{url}#comments"


@login_required
@require_POST
def comment_create(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(request, pk)
    span = None
    span_pk = request.POST.get("span")
    if span_pk:
        span = session.compaction_spans.filter(pk=span_pk if span_pk.isdigit() else 0).first()
        if span is None:
            raise Http404("No such span in this session")
    try:
        comment = team.comment_create(
            session=session, span=span, author=request.user, body=request.POST.get("body", "")
        )
    except BadRequest as exc:
        flash.error(request, f"Comment not saved: {exc.message}")
        return redirect(_back(None, session, span.pk if span else None))
    flash.success(request, "Comment posted.")
    return redirect(_back(comment, session, span.pk if span else None))


@login_required
@require_POST
def comment_edit(request: HttpRequest, pk: int, comment_pk: int) -> HttpResponse:
    session = _session(request, pk)
    comment = Comment.objects.filter(session=session, pk=comment_pk).first()
    if comment is None:
        raise Http404("No such comment")
    try:
        team.comment_edit(
            comment_id=comment.pk, editor=request.user, body=request.POST.get("body", "")
        )
    except BadRequest as exc:
        flash.error(request, f"Comment not changed: {exc.message}")
    else:
        flash.success(request, "Comment edited.")
    return redirect(_back(comment, session, comment.span_id))


@login_required
@require_POST
def saved_filter_save(request: HttpRequest) -> HttpResponse:
    query = request.POST.get("query", "")
    try:
        saved = team.saved_filter_save(
            user=request.user, name=request.POST.get("name", ""), query=query
        )
    except BadRequest as exc:
        flash.error(request, f"Filter not saved: {exc.message}")
        return redirect(f"{reverse('sessions:list')}?{team.filter_query_clean(query)}")
    flash.success(request, f"Saved the filter “{saved.name}”.")
    return redirect(f"{reverse('sessions:list')}?{saved.query}")


@login_required
@require_POST
def saved_filter_delete(request: HttpRequest, filter_pk: int) -> HttpResponse:
    if team.saved_filter_delete(user=request.user, filter_id=filter_pk):
        flash.success(request, "Saved filter deleted.")
    return redirect("sessions:list")
