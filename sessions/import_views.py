"""Web upload of Claude Code transcripts: the same importer as ``manage.py import_claude_code``
and ``POST /api/v1/imports/claude-code``, behind a login and the engineer role."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST

from sessions import access, selectors
from sessions.errors import ApiError
from sessions.import_api import report_relative, uploads_save
from sessions.importers import claude_code
from sessions.models import AgentSession, Project, Role

ACCEPTED_SUFFIXES = (".jsonl", ".jsonl.gz")
_CHUNK = 1024 * 1024


def upload_projects(user: AbstractBaseUser | AnonymousUser) -> list[Project]:
    """Projects the user may import into (engineer or higher)."""
    projects: QuerySet[Project] = selectors.projects_for_user(user).order_by("name")
    return [p for p in projects[:200] if access.has_role(user, p, Role.ENGINEER)]


def _error(request: HttpRequest, message: str, status: int = 400) -> HttpResponse:
    return render(request, "sessions/import_result.html", {"error": message}, status=status)


@login_required
@require_POST
def transcript_upload(request: HttpRequest) -> HttpResponse:
    """Import uploaded transcripts (``file``, one or more) into ``project`` and show the report."""
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
        return _error(request, "file: choose a Claude Code transcript (.jsonl or .jsonl.gz)")
    wrong = [f.name for f in files if not (f.name or "").lower().endswith(ACCEPTED_SUFFIXES)]
    if wrong:
        return _error(
            request, f"file: {', '.join(map(str, wrong))} is not a .jsonl or .jsonl.gz transcript"
        )
    try:
        with tempfile.TemporaryDirectory(prefix="sawtooth-upload-") as tmp:
            folder = Path(tmp)
            # A corrupt or oversized .jsonl.gz (a gzip bomb too) stops here, before anything
            # is stored, with the same answer the API gives (400 or 413).
            paths = uploads_save(folder, [(f.name or "", f.chunks(_CHUNK)) for f in files])
            report = report_relative(
                claude_code.claude_code_import(project=project, paths=paths), folder
            )
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
