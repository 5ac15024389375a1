"""Team's pages: a project's members (admins only), the actions that post and edit
comments and save and delete list filters, the right / wrong marks on a compaction's fact
verdicts and on an alert, and a project's feedback page with its JSON Lines export.

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

from alerts import selectors as alert_selectors
from compaction import selectors as compaction_selectors
from compaction.models import CompactionSpan
from sessions import access, selectors
from sessions.errors import ApiError, BadRequest, NotFound
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


# ---- verdict feedback ------------------------------------------------------------------
# Who may comment on an alert may mark a verdict: an engineer or above. A click is a plain
# form POST that redirects back to the mark's anchor; with htmx it answers the mark's box.


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _marked(
    request: HttpRequest, vm: team_selectors.VerdictMarks | None, back: str, saved: bool
) -> HttpResponse:
    if _is_htmx(request):
        return render(request, "team/_verdict_marks.html", {"vm": vm})
    flash.success(request, "Mark saved." if saved else "Mark cleared.")
    return redirect(back)


def _refused(request: HttpRequest, exc: ApiError, back: str) -> HttpResponse:
    if _is_htmx(request):
        return HttpResponse(exc.message, status=exc.status, content_type="text/plain")
    flash.error(request, f"Mark not saved: {exc.message}")
    return redirect(back)


@login_required
@require_POST
def fact_mark(request: HttpRequest, pk: int, seq: int) -> HttpResponse:
    """Right / wrong on one fact's verdict (``fact``: its key) of the compaction at ``seq``."""
    session = session_or_404(request, pk)
    access.require_role(request.user, session.project_id, Role.ENGINEER)
    key = request.POST.get("fact", "")
    spans = list(compaction_selectors.observed_spans(session).filter(seq=seq))
    # where two compactions share the seq, the one holding the fact (they share its marks)
    span = next(
        (
            s
            for s in spans
            if any(team_selectors.fact_key(str(i.get("text"))) == key for i in s.retention)
        ),
        None,
    )
    if span is None:
        raise Http404("No such fact in this compaction")
    back = f"{span.url()}#fact-{key[:16]}"
    try:
        mark = services.fact_mark_set(
            span=span,
            fact_key=key,
            author=request.user,
            mark=request.POST.get("mark", ""),
            note=request.POST.get("note"),
            should_be=request.POST.get("should_be"),
        )
    except NotFound:
        raise Http404("No such fact in this compaction") from None
    except BadRequest as exc:
        return _refused(request, exc, back)
    vm = team_selectors.fact_marks_one(span=span, key=key, user=request.user, can_mark=True)
    return _marked(request, vm, back, mark is not None)


@login_required
@require_POST
def alert_mark(request: HttpRequest, pk: int) -> HttpResponse:
    """Right / wrong on an alert."""
    try:
        alert = alert_selectors.alert_get(projects=selectors.projects_for_user(request.user), pk=pk)
    except NotFound:
        raise Http404("No such alert in your projects") from None
    access.require_role(request.user, alert.project_id, Role.ENGINEER)
    back = f"{reverse('alerts:detail', args=[alert.pk])}#alert-marks"
    try:
        mark = services.alert_mark_set(
            alert=alert,
            author=request.user,
            mark=request.POST.get("mark", ""),
            note=request.POST.get("note"),
        )
    except BadRequest as exc:
        return _refused(request, exc, back)
    vm = team_selectors.alert_marks_for(alert=alert, user=request.user, can_mark=True)
    return _marked(request, vm, back, mark is not None)


def _member_project(request: HttpRequest, pk: int) -> Project:
    project = selectors.projects_for_user(request.user).filter(pk=pk).first()
    if project is None:
        raise Http404("No such project among yours")
    return project


@login_required
def feedback(request: HttpRequest, pk: int) -> HttpResponse:
    """The project's precision per verdict kind from its members' marks, and the latest
    marks with links to what they judged. Any member reads it; fact texts are masked."""
    project = _member_project(request, pk)
    context = {
        "project": project,
        "rows": team_selectors.feedback_summary(project=project),
        "marks": team_selectors.marks_recent(project=project),
        "can_mark": access.has_role(request.user, project, Role.ENGINEER),
    }
    return render(request, "team/feedback.html", context)


@login_required
def feedback_export(request: HttpRequest, pk: int) -> HttpResponse:
    """Every mark of the project as JSON Lines (DESIGN.md), masked like the pages."""
    project = _member_project(request, pk)
    response = HttpResponse(
        "".join(team_selectors.feedback_lines(project=project)),
        content_type="application/x-ndjson",
    )
    response["Content-Disposition"] = f'attachment; filename="feedback-{project.pk}.jsonl"'
    return response


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
