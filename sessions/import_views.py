"""Web upload of traces of any format the product reads: the same path as ``manage.py
import_traces`` and ``POST /api/v1/imports`` (each file's format found by its content), behind
a login and the engineer role. Its address stays ``/imports/claude-code/``, where it began.
Like the API it imports in the background (sessions/import_jobs.py): the form leads to the
job's page, ``/imports/<job_id>/``, which polls for its progress and shows the report."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from sessions import access, import_jobs, selectors
from sessions.auth import import_units, ingest_rate_check
from sessions.errors import ApiError
from sessions.models import AgentSession, ImportJob, Project, Role


def upload_projects(user: AbstractBaseUser | AnonymousUser) -> list[Project]:
    """Projects the user may import into (engineer or higher)."""
    projects: QuerySet[Project] = selectors.projects_for_user(user).order_by("name")
    return [p for p in projects[:200] if access.has_role(user, p, Role.ENGINEER)]


def _error(request: HttpRequest, message: str, status: int = 400) -> HttpResponse:
    return render(request, "sessions/import_result.html", {"error": message}, status=status)


@login_required
@require_POST
def transcript_upload(request: HttpRequest) -> HttpResponse:
    """Check uploaded trace files (``file``, one or more) for ``project`` and import them in
    the background, as ``POST /api/v1/imports`` does: the request only reads them (a file that
    cannot be read, or a bomb, answers here with nothing stored) and keeps them as a job; a
    worker imports it, and the job's page shows its progress and then its report."""
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
        # A corrupt or oversized gzip file (a gzip bomb too), or a file no reader takes, stops
        # here before anything is stored, with the answer the API gives (400, 413 or 422).
        with tempfile.TemporaryDirectory(prefix="sawtooth-import-") as tmp:
            checked = import_jobs.uploads_check(
                folder=Path(tmp), files=[("file", f) for f in files]
            )
            # Counted against the project's allowance by its size, as through the API.
            units = import_units(checked.size_bytes) + 1
            mib = checked.size_bytes / (1024 * 1024)
            ingest_rate_check(
                project=project,
                request=request,
                units=units,
                what=f" (this import of {mib:.1f} MiB counts as {units} batches, one per "
                "started MiB; nothing of it was stored)",
            )
            job = import_jobs.import_job_create(project=project, checked=checked)
    except ApiError as exc:
        return _error(request, exc.message, status=exc.status)
    return HttpResponseRedirect(reverse("sessions:import-job", args=[job.public_id]), status=303)


def _job(request: HttpRequest, job_id: uuid.UUID) -> ImportJob:
    """A job of one of the user's projects; another project's reads as not found."""
    job = (
        ImportJob.objects.select_related("project")
        .filter(public_id=job_id, project__in=selectors.projects_for_user(request.user))
        .first()
    )
    if job is None:
        raise Http404("No such import.")
    return job


def _job_context(job: ImportJob) -> dict[str, Any]:
    report = job.report if job.finished else {}
    rows = report.get("sessions") or []
    stored = {
        s.external_id: s
        for s in AgentSession.objects.filter(
            project=job.project, external_id__in=[r.get("external_id") for r in rows][:1000]
        )
    }
    return {
        "job": job,
        "project": job.project,
        "report": report,
        "sessions": [(r, stored.get(r.get("external_id"))) for r in rows],
        "answer": import_jobs.job_answer(job),
    }


@login_required
def import_job_page(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    """A background import of the upload form: its progress while a worker imports it, then
    what was imported per file and what was skipped and why."""
    return render(request, "sessions/import_job.html", _job_context(_job(request, job_id)))


@login_required
def import_job_status(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    """Polled while the job runs; once it is finished it renders the report in place."""
    job = _job(request, job_id)
    return render(request, "sessions/import_job.html#import-body", _job_context(job))
