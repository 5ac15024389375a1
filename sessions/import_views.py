"""Web upload of traces of any format the product reads: the same path as ``manage.py
import_traces`` and ``POST /api/v1/imports`` (each file's format found by its content), behind
a login and the engineer role. Its address stays ``/imports/claude-code/``, where it began."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from sessions import access, selectors
from sessions.errors import ApiError
from sessions.import_api import uploads_import
from sessions.models import AgentSession, Project, Role


def upload_projects(user: AbstractBaseUser | AnonymousUser) -> list[Project]:
    """Projects the user may import into (engineer or higher)."""
    projects: QuerySet[Project] = selectors.projects_for_user(user).order_by("name")
    return [p for p in projects[:200] if access.has_role(user, p, Role.ENGINEER)]


def _error(request: HttpRequest, message: str, status: int = 400) -> HttpResponse:
    return render(request, "sessions/import_result.html", {"error": message}, status=status)


@login_required
@require_POST
def transcript_upload(request: HttpRequest) -> HttpResponse:
    """Import uploaded trace files (``file``, one or more) into ``project``; show the report."""
    raw_project = request.POST.get("project", "")
    project = (
        selectors.projects_for_user(request.user).filter(pk=raw_project).first()
        if raw_project.isdigit()
        else None
    )
    if project is None:
        return _error(request, "project: choose one of your projects", status=400)
    access.require_role(request.user, project, Role.ENGINEER)
    files = request.FILES.getlist("file")
    if not files:
        return _error(request, "file: choose one or more trace files")
    try:
        # A corrupt or oversized gzip file (a gzip bomb too) stops here, before anything is
        # stored, with the same answer the API gives (400 or 413).
        report = uploads_import(project=project, files=[("file", f) for f in files])
    except ApiError as exc:
        return _error(request, exc.message, status=exc.status)
    stored = {
        s.external_id: s
        for s in AgentSession.objects.filter(project=project, external_id__in=report.sessions)
    }
    sessions = [(r, stored.get(r.external_id)) for r in report.sessions.values()]
    refused = [f for f in report.files if f.error]
    status = 400 if refused and not report.sessions else 200
    return render(
        request,
        "sessions/import_result.html",
        {"project": project, "report": report, "sessions": sessions},
        status=status,
    )
