"""The privacy pages, for privacy reviewers: the review queue of personal data findings
(/privacy/findings/) and data-subject requests (/privacy/subjects/: find, export and erase;
every action is a POST carrying the identifier, which never appears in a URL)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from privacy import selectors, services, subjects
from privacy.forms import FindingFilterForm, SubjectForm
from privacy.models import FindingStatus, SubjectRequest
from sessions import access
from sessions import selectors as session_selectors
from sessions.errors import BadRequest, NotFound
from sessions.models import Project, Role

ACTIONS = ("find", "export", "erase")
REASON_MIN_CHARS = 10


def _reviewer_projects(request: HttpRequest) -> QuerySet[Project]:
    mine = session_selectors.projects_for_user(request.user)
    allowed = [p.pk for p in mine if access.has_role(request.user, p, Role.PRIVACY_REVIEWER)]
    if not allowed:
        raise PermissionDenied("This needs the privacy reviewer role in a project.")
    return Project.objects.filter(pk__in=allowed).order_by("name")


@login_required
@require_http_methods(["GET", "POST"])
def subject_requests(request: HttpRequest) -> HttpResponse:
    projects = _reviewer_projects(request)
    form = SubjectForm(request.POST or None, projects=projects)
    context: dict[str, Any] = {"form": form, "report": None}
    action = request.POST.get("action", "find")
    if request.method == "POST" and action in ACTIONS and form.is_valid():
        project: Project = form.cleaned_data["project"]
        access.require_role(request.user, project, Role.PRIVACY_REVIEWER)
        reason = form.cleaned_data["reason"].strip()
        try:
            subject = subjects.subject_parse(identifier=form.cleaned_data["identifier"])
            if action == "find":
                context["report"] = subjects.subject_lookup(
                    project=project, subject=subject, by=request.user
                )
            elif action == "export":
                if not reason:
                    raise BadRequest("reason: required to export")
                report = subjects.subject_export(
                    project=project, subject=subject, by=request.user, reason=reason
                )
                response = HttpResponse(
                    json.dumps(report, indent=2, ensure_ascii=False),
                    content_type="application/json",
                )
                name = f"subject-{subject.kind}-{project.pk}.json"
                response["Content-Disposition"] = f'attachment; filename="{name}"'
                return response
            elif request.POST.get("confirm") != "yes":
                # Said before it is done: what the erasure will change, and a reason to give.
                if len(reason) < REASON_MIN_CHARS:
                    raise BadRequest(
                        f"reason: required to erase, at least {REASON_MIN_CHARS} characters"
                    )
                context["confirm"] = subjects.subject_erase_preview(
                    project=project, subject=subject
                )
                context["subject"] = subject
            else:
                done = subjects.subject_erase(
                    project=project,
                    subject=subject,
                    by=request.user,
                    reason=reason,
                    delete_sessions=form.cleaned_data["delete_sessions"],
                )
                flash.success(
                    request,
                    f"Request {done.pk}: {done.get_action_display().lower()} of {done.masked} "
                    f"in {len(done.result.get('sessions', []))} session(s); derived data is "
                    "being rebuilt.",
                )
                form = SubjectForm(projects=projects, initial={"project": project})
                context["form"] = form
        except BadRequest as exc:
            field, _, message = exc.message.partition(": ")
            form.add_error(field if field in form.fields else None, message or exc.message)
    context["requests"] = SubjectRequest.objects.filter(project__in=projects).select_related(
        "project"
    )[:50]
    return render(request, "privacy/subjects.html", context)


# --- privacy review queue --------------------------------------------------------------------

FINDINGS_PER_PAGE = 50
FINDING_ACTIONS = {
    "confirm": FindingStatus.CONFIRMED,
    "false_positive": FindingStatus.FALSE_POSITIVE,
    "reopen": FindingStatus.OPEN,
}


@login_required
def finding_queue(request: HttpRequest) -> HttpResponse:
    """Findings of the projects where the user is a privacy reviewer (or admin)."""
    form = FindingFilterForm(request.GET or None)
    filters = form.cleaned_data if form.is_valid() else {}
    if project := filters.get("project"):
        access.require_role(request.user, project, Role.PRIVACY_REVIEWER)
    projects = selectors.reviewer_projects(request.user)
    if not projects.exists():
        raise PermissionDenied("The review queue needs the privacy reviewer role in a project.")
    groups = selectors.finding_queue(projects=projects, filters=filters)
    page = Paginator(groups, FINDINGS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "form": form,
        "projects": projects,
        "page": page,
        "rows": selectors.finding_rows(page.object_list),
        "query": request.GET.urlencode(),
        "extra_query": _without_page(request),
    }
    return render(request, "privacy/finding_queue.html", context)


def _without_page(request: HttpRequest) -> str:
    query = request.GET.copy()
    query.pop("page", None)
    return query.urlencode()


@login_required
@require_http_methods(["GET", "POST"])
def finding_action(request: HttpRequest, pk: int, action: str) -> HttpResponse:
    """POST a review decision. A redaction rewrites stored text: its GET says what will
    change and asks a reason, which its POST needs."""
    try:
        finding = selectors.finding_get(
            projects=session_selectors.projects_for_user(request.user), pk=pk
        )
    except NotFound:
        raise Http404("No such finding in your projects") from None
    access.require_role(request.user, finding.session.project_id, Role.PRIVACY_REVIEWER)
    repeats = services.finding_occurrences(finding).count()
    every = f" (all {repeats} times it occurs there)" if repeats > 1 else ""
    if request.method == "GET":
        if action != "redact":
            raise Http404("Only a redaction has a page of its own")
        context = {"finding": finding, "repeats": repeats, "next": request.GET.get("next", "")}
        return render(request, "privacy/finding_redact.html", context)
    try:
        if action == "redact":
            services.finding_redact(
                finding=finding, user=request.user, reason=request.POST.get("reason", "")
            )
            flash.success(request, f"Redacted: the {finding.kind} is now {finding.masked}{every}.")
        elif action in FINDING_ACTIONS:
            services.finding_review(
                finding=finding, status=FINDING_ACTIONS[action], user=request.user
            )
            flash.success(request, f"Marked {finding.get_status_display().lower()}{every}.")
        else:
            raise Http404("No such action")
    except BadRequest as exc:
        flash.error(request, exc.message)
    back = request.POST.get("next", "")
    return redirect(f"{reverse('privacy:findings')}?{back}" if back else "privacy:findings")
