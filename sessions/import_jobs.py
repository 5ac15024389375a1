"""Background imports: ``POST /api/v1/imports`` checks an upload at once, a worker imports it.

The web process does what must answer at once and holds no database work: every file is
inflated within the limits (a bomb stops at 413), its format found and read by its pure reader
(a file that cannot be read answers 422 naming it, nothing stored). What passes is kept in
the database as 1 MiB chunks (``ImportChunk``) with its job and the job's outbox row, in one
transaction, so a job never exists without its upload nor an upload without its job; the
database is the one store every web and worker process shares in both setups (the embedded
one and docker-compose's separate containers), where a file would need a shared volume.
A worker (``sessions.tasks.import_job_run``, on the ``imports`` queue so an import never takes
an analysis slot) writes the chunks back to a temporary folder, imports them with the same
code as ``manage.py import_traces`` while recording its progress, stores the report and drops
the chunks. ``GET /api/v1/imports/{job_id}`` reads the job (``job_answer``).
"""

from __future__ import annotations

import logging
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F, Q
from django.db.models.functions import Now
from django.utils import timezone

from compaction import liveness, outbox
from sessions import wire
from sessions.errors import BadRequest, Unprocessable
from sessions.importers import detect
from sessions.importers.report import ImportReport
from sessions.models import ImportChunk, ImportJob, ImportStatus, Project

logger = logging.getLogger(__name__)

CHUNK_BYTES = 1024 * 1024
WAIT_MAX_SECONDS = 30  # ?wait= of GET /api/v1/imports/{job_id}
WAIT_POLL_SECONDS = 0.25
UPLOAD_NAME_MAX = 200  # a file's name, or the form field naming a Cline task's folder
LOOSE_CLINE = (
    "a Cline task is a folder; send its files under a form field named by the task id, so the "
    "task keeps its id"
)


@dataclass
class Checked:
    """An upload saved in ``folder``, every file readable: what to import (task folders and
    files), the name the client sent for each saved path, and the bytes after gzip."""

    folder: Path
    targets: list[Path]
    shown: dict[str, str]
    size_bytes: int


def _upload_path(folder: Path, field: str, name: str, index: int, taken: set[str]) -> Path:
    """Where an uploaded file is kept: its name, in a folder named by its form field when the
    field is not ``file`` (a Cline task is a folder: both its files are sent under a field
    named by the task id), both reduced to plain names so nothing is written outside
    ``folder``; gzip is undone on the way in, so ``.gz`` leaves the name."""
    base = Path(name.replace("\\", "/")).name.strip().removesuffix(".gz")
    if base in ("", ".", "..") or base.startswith("."):
        base = f"upload-{index}"
    parent = Path(field.replace("\\", "/")).name.strip()
    # Each becomes a name on disk, which the file system caps (255 bytes): refused here with
    # the limit named, never an OSError (a 500) from the file system.
    for what, value in (("file name", base), ("form field", parent)):
        if len(value.encode()) > UPLOAD_NAME_MAX:
            raise BadRequest(
                f"{what} {value[:40]!r}...: {len(value)} characters, "
                f"the limit is {UPLOAD_NAME_MAX} bytes"
            )
    if parent in ("file", "files", ".", "..") or parent.startswith("."):
        parent = ""
    target = f"{parent}/{base}" if parent else base
    candidate, n = target, 1
    while candidate in taken:
        n += 1
        candidate = f"{parent}/{n}-{base}" if parent else f"{n}-{base}"
    taken.add(candidate)
    path = folder / candidate
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _targets(folder: Path) -> list[Path]:
    """What an upload saved in ``folder`` imports: each task folder, then each loose file."""
    tasks = sorted(p for p in folder.iterdir() if p.is_dir())
    return [*tasks, *sorted(p for p in folder.iterdir() if p.is_file())]


def uploads_check(*, folder: Path, files: Sequence[tuple[str, UploadedFile[bytes]]]) -> Checked:
    """Save uploaded files (``(form field, file)``) in ``folder`` and read each through its
    format's pure reader, storing nothing: a file too large (after gzip is undone) stops with a
    413, and a file that cannot be read with a 422 naming it."""
    taken: set[str] = set()
    paths: list[Path] = []
    shown: dict[str, str] = {}  # saved path -> the name the client sent (``.gz`` kept)
    size = 0
    for index, (field, upload) in enumerate(files, start=1):
        path = _upload_path(folder, field, upload.name or "", index, taken)
        sent = Path((upload.name or "").replace("\\", "/")).name or path.name
        if path.name != sent.removesuffix(".gz"):
            sent = path.name
        relative = str(path.relative_to(folder))
        shown[relative] = str(Path(relative).with_name(sent))
        limited = wire.bounded_chunks(
            upload.chunks(CHUNK_BYTES),
            max_bytes=settings.IMPORT_MAX_BYTES,
            max_line=settings.IMPORT_MAX_RECORD_BYTES,
            where=f"file {sent}",
        )
        with path.open("wb") as out:
            for chunk in limited:
                out.write(chunk)
                size += len(chunk)
        paths.append(path)
    loose_cline = [p for p in paths if p.parent == folder and p.name in detect.CLINE_FILES]
    for path in loose_cline:
        path.unlink()
    # Every file is read before any is stored: one that cannot be read refuses the upload
    # whole (422 naming it), so a client never has half an upload to find and resend.
    targets = _targets(folder)
    refused = [(str(path), LOOSE_CLINE) for path in loose_cline] + detect.traces_check(targets)
    if refused:
        named = []
        for raw, why in refused:
            relative = str(Path(raw).relative_to(folder))
            named.append(f"{shown.get(relative, relative)}: {why}")
        raise Unprocessable("; ".join(named) + "; nothing of this upload was stored")
    return Checked(folder=folder, targets=targets, shown=shown, size_bytes=size)


def report_named(report: ImportReport, folder: Path, shown: dict[str, str]) -> ImportReport:
    """The report's paths as the client named its files (relative, ``.gz`` kept)."""
    for file in report.files:
        path = Path(file.path)
        if path.is_relative_to(folder):
            relative = str(path.relative_to(folder))
            file.path = shown.get(relative, relative)
    return report


@transaction.atomic
def import_job_create(*, project: Project, checked: Checked) -> ImportJob:
    """Keep a checked upload as a job, its files in chunks, and send it to a worker."""
    files = [p for p in sorted(checked.folder.rglob("*")) if p.is_file()]
    job = ImportJob.objects.create(
        public_id=uuid.uuid4(),
        project=project,
        files_total=len(checked.targets),
        size_bytes=checked.size_bytes,
    )
    for path in files:
        relative = str(path.relative_to(checked.folder))
        with path.open("rb") as source:
            seq = 0
            while chunk := source.read(CHUNK_BYTES):
                ImportChunk.objects.create(
                    job=job,
                    path=relative,
                    shown=checked.shown.get(relative, relative),
                    seq=seq,
                    data=chunk,
                )
                seq += 1
    outbox.outbox_add(kind=outbox.IMPORT_JOB_RUN, args=[job.pk])
    return job


def _chunks_unpack(job_id: int, folder: Path) -> dict[str, str]:
    """Write a job's files back under ``folder``, one chunk in memory at a time."""
    shown: dict[str, str] = {}
    rows = ImportChunk.objects.filter(job_id=job_id).order_by("path", "seq")
    for pk, relative, name in rows.values_list("pk", "path", "shown"):
        path = folder / relative
        # the relative paths were made by _upload_path: plain names, inside the folder
        if not path.resolve().is_relative_to(folder.resolve()):
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        data = ImportChunk.objects.filter(pk=pk).values_list("data", flat=True).get()
        with path.open("ab") as out:
            out.write(bytes(data))
        shown[relative] = name
    return shown


def import_job_run(*, job_id: int) -> None:
    """Import a queued job's files (a worker's task). Claims the job first, so a duplicate or
    redelivered task does nothing. Its chunks stay until it finishes, and re-importing is
    safe, so a job left running by a dead worker is run again from them
    (:func:`import_jobs_requeue_abandoned`)."""
    claimed = ImportJob.objects.filter(pk=job_id, status=ImportStatus.QUEUED).update(
        status=ImportStatus.RUNNING,
        started_at=timezone.now(),
        heartbeat_at=Now(),
        attempts=F("attempts") + 1,
        files_done=0,
    )
    if not claimed:
        return
    job = ImportJob.objects.select_related("project").get(pk=job_id)
    running = ImportJob.objects.filter(pk=job_id, status=ImportStatus.RUNNING)

    def progress(done: int, total: int) -> None:
        running.update(files_done=done, files_total=total, heartbeat_at=Now())

    try:
        with (
            liveness.heartbeat(running),
            tempfile.TemporaryDirectory(prefix="sawtooth-import-job-") as tmp,
        ):
            folder = Path(tmp)
            shown = _chunks_unpack(job_id, folder)
            report = detect.traces_import(
                project=job.project, paths=_targets(folder), progress=progress
            )
            report = report_named(report, folder, shown)
    except (OperationalError, InterfaceError):
        running.update(status=ImportStatus.QUEUED)  # the task retries it
        raise
    except Exception as exc:  # an importer's bug: recorded, not retried
        logger.exception("import job %s failed", job_id)
        running.update(
            status=ImportStatus.FAILED,
            error=f"{type(exc).__name__}: the import stopped; nothing more was stored",
            finished_at=timezone.now(),
        )
        ImportChunk.objects.filter(job_id=job_id).delete()
        return
    problems = [f for f in report.files if f.error]
    failed = bool(problems) and not report.sessions
    with transaction.atomic():
        running.update(
            status=ImportStatus.FAILED if failed else ImportStatus.DONE,
            report=report.to_dict(),
            error="; ".join(f"{f.path}: {f.error}" for f in problems) if failed else "",
            files_done=F("files_total"),
            finished_at=timezone.now(),
        )
        ImportChunk.objects.filter(job_id=job_id).delete()


def import_jobs_requeue_abandoned() -> int:
    """Queue again the jobs whose worker stopped beating for them (WORKER_DEAD_SECONDS while
    the database was reachable: compaction/liveness.py), from the chunks they keep; a job that
    was run IMPORT_JOB_MAX_ATTEMPTS times fails with the reason, so a file that kills its
    worker cannot loop. Run by beat with the sweep for abandoned analyses. Returns how many
    jobs it queued or failed."""
    abandoned = ImportJob.objects.filter(Q(status=ImportStatus.RUNNING) & liveness.silent())
    handled = 0
    for job_id in list(abandoned.values_list("pk", flat=True)):
        with transaction.atomic():
            job = abandoned.filter(pk=job_id).select_for_update(skip_locked=True).first()
            if job is None:
                continue  # finished meanwhile, or its worker is storing it now
            if job.attempts >= settings.IMPORT_JOB_MAX_ATTEMPTS:
                abandoned.filter(pk=job_id).update(
                    status=ImportStatus.FAILED,
                    error=(
                        f"the worker importing it stopped {job.attempts} times; "
                        "nothing more was tried"
                    ),
                    finished_at=timezone.now(),
                )
                ImportChunk.objects.filter(job_id=job_id).delete()
            else:
                abandoned.filter(pk=job_id).update(status=ImportStatus.QUEUED)
                outbox.outbox_add(kind=outbox.IMPORT_JOB_RUN, args=[job_id])
            handled += 1
    return handled


def import_job_find(*, project: Project, job_id: str) -> ImportJob | None:
    """The project's job of that id; None for another project's, or no such job."""
    try:
        public_id = uuid.UUID(job_id)
    except ValueError:
        return None
    return ImportJob.objects.filter(project=project, public_id=public_id).first()


def import_job_wait(*, job: ImportJob, seconds: float) -> ImportJob:
    """The job once finished, or as it stands after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not job.finished and time.monotonic() < deadline:
        time.sleep(min(WAIT_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        job.refresh_from_db()
    return job


def job_answer(job: ImportJob) -> dict[str, Any]:
    """``{job_id, status, progress, report, error}``: what GET /api/v1/imports/{id} answers."""
    return {
        "job_id": str(job.public_id),
        "status": job.status,
        "progress": {
            "fraction": job.progress,
            "files_done": job.files_total if job.status == ImportStatus.DONE else job.files_done,
            "files_total": job.files_total,
            "bytes": job.size_bytes,
        },
        "report": job.report if job.finished else None,
        "error": job.error,
    }
