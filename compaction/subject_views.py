"""Pages for data-subject requests (/privacy/subjects/): find, export and erase, for privacy
reviewers. Every action is a POST carrying the identifier, which never appears in a URL."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from compaction import subjects
from compaction.forms import SubjectForm
from compaction.models import SubjectRequest
from sessions import access
from sessions import selectors as session_selectors
from sessions.errors import BadRequest
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
    return render(request, "compaction/subjects.html", context)
