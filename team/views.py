"""Team's pages: a project's members (admins only), and the actions that post and edit
comments and save and delete list filters.

Every comment or filter action is a POST from a form on the session, span or list page and
redirects back to where it came from (the comment's anchor), with a flash message on a bad
input. The members page finds the project among the user's own (404 otherwise), then asks
``access.require_role`` for the admin role (403 below it).
"""

from __future__ import annotations

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from compaction.models import CompactionSpan
from sessions import access, selectors
from sessions.errors import ApiError, BadRequest
from sessions.models import AgentSession, Membership, Project, Role
from sessions.pages import session_or_404
from team import selectors as team_selectors
from team import services
from team.models import Comment

# ---- comments ---------------------------------------------------------------------------


def _back(comment: Comment | None, session: AgentSession, span: CompactionSpan | None) -> str:
    if span is not None:
        url = span.get_absolute_url()
    else:
        url = reverse("sessions:detail", args=[session.pk])
    return f"{url}#comment-{comment.pk}" if comment else f"{url}#comments"


@login_required
@require_POST
def comment_create(request: HttpRequest, pk: int) -> HttpResponse:
    session = session_or_404(request, pk)
    span = None
    span_pk = request.POST.get("span")
    if span_pk:
        span = session.compaction_spans.filter(pk=span_pk if span_pk.isdigit() else 0).first()
        if span is None:
            raise Http404("No such span in this session")
    try:
        comment = services.comment_create(
            session=session, span=span, author=request.user, body=request.POST.get("body", "")
        )
    except BadRequest as exc:
        flash.error(request, f"Comment not saved: {exc.message}")
        return redirect(_back(None, session, span))
    flash.success(request, "Comment posted.")
    return redirect(_back(comment, session, span))


@login_required
@require_POST
def comment_edit(request: HttpRequest, pk: int, comment_pk: int) -> HttpResponse:
    session = session_or_404(request, pk)
    comment = Comment.objects.filter(session=session, pk=comment_pk).first()
    if comment is None:
        raise Http404("No such comment")
    try:
        services.comment_edit(
            comment_id=comment.pk, editor=request.user, body=request.POST.get("body", "")
        )
    except BadRequest as exc:
        flash.error(request, f"Comment not changed: {exc.message}")
    else:
        flash.success(request, "Comment edited.")
    return redirect(_back(comment, session, comment.span))


# ---- saved filters ----------------------------------------------------------------------


@login_required
@require_POST
def saved_filter_save(request: HttpRequest) -> HttpResponse:
    query = request.POST.get("query", "")
    try:
        saved = services.saved_filter_save(
            user=request.user, name=request.POST.get("name", ""), query=query
        )
    except BadRequest as exc:
        flash.error(request, f"Filter not saved: {exc.message}")
        return redirect(f"{reverse('sessions:list')}?{team_selectors.filter_query_clean(query)}")
    flash.success(request, f"Saved the filter “{saved.name}”.")
    return redirect(f"{reverse('sessions:list')}?{saved.query}")


@login_required
@require_POST
def saved_filter_delete(request: HttpRequest, filter_pk: int) -> HttpResponse:
    if services.saved_filter_delete(user=request.user, filter_id=filter_pk):
        flash.success(request, "Saved filter deleted.")
    return redirect("sessions:list")


# ---- members ----------------------------------------------------------------------------


def _project(request: HttpRequest, pk: int) -> Project:
    project = selectors.projects_for_user(request.user).filter(pk=pk).first()
    if project is None:
        raise Http404("No such project among yours")
    access.require_role(request.user, project, Role.ADMIN)
    return project


@login_required
@require_http_methods(["GET", "POST"])
def member_list(request: HttpRequest, pk: int) -> HttpResponse:
    project = _project(request, pk)
    status = 200
    if request.method == "POST":
        try:
            services.membership_set(
                actor=request.user,
                project=project,
                username=request.POST.get("username", ""),
                role=request.POST.get("role", ""),
            )
        except ApiError as exc:
            flash.error(request, exc.message)
            status = 400
        else:
            flash.success(request, f"{request.POST['username'].strip()} is now a member.")
            return redirect("team:members", project.pk)
    context = {
        "project": project,
        "memberships": team_selectors.memberships_for(project=project),
        "roles": Role.choices,
    }
    return render(request, "team/members.html", context, status=status)


@login_required
@require_POST
def member_remove(request: HttpRequest, pk: int, membership_pk: int) -> HttpResponse:
    project = _project(request, pk)
    membership = (
        Membership.objects.filter(project=project, pk=membership_pk).select_related("user").first()
    )
    if membership is None:
        raise Http404("No such member")
    services.membership_remove(actor=request.user, membership=membership)
    flash.success(request, f"{membership.user.get_username()} was removed from {project.name}.")
    return redirect("team:members", project.pk)
