"""Upload endpoints under /api/v1/imports/: files users already have.

``POST /imports`` (any format) checks the upload in the request and imports it in a worker
(sessions/import_jobs.py): 202 ``{job_id}``, then ``GET /imports/{job_id}``.
``POST /imports/claude-code`` imports in the request (it streams, chunk by chunk, through
``events_ingest``) and answers the import report, as it always has. Registered on the API
in ``config/api.py``; an upload comes in through ``auth.ProjectKey(ingest=True)`` (a valid
key, then the project's ingest allowance).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from ninja import Router, Schema, Status

from sessions import import_jobs, wire
from sessions.auth import KeyRequest, ProjectKey, import_units, ingest_rate_check
from sessions.errors import BadRequest, NotFound, Unprocessable
from sessions.importers import claude_code
from sessions.importers.report import ImportReport
from sessions.schemas import Error

router = Router(tags=["imports"])

_CHUNK = 1024 * 1024


class ImportOut(Schema):
    messages: int
    duplicates: int
    compactions: int
    skipped_lines: int
    unknown_types: dict[str, int]
    sessions: list[dict[str, Any]]
    files: list[dict[str, Any]]


def _safe_name(name: str, index: int, taken: set[str]) -> str:
    base = Path(name.replace("\\", "/")).name.strip() or f"upload-{index}.jsonl"
    if base in (".", ".."):
        base = f"upload-{index}.jsonl"
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{n}-{base}"
    taken.add(candidate)
    return candidate


def uploads_save(folder: Path, uploads: Iterable[tuple[str, Iterable[bytes]]]) -> list[Path]:
    paths: list[Path] = []
    taken: set[str] = set()
    for index, (name, chunks) in enumerate(uploads, start=1):
        path = folder / _safe_name(name, index, taken)
        # Inflated here, in bounded steps, so a gzip bomb stops at the limit (413) instead of
        # filling the disk and a web worker's time; the importer then reads plain lines.
        limited = wire.bounded_chunks(
            chunks,
            max_bytes=settings.IMPORT_MAX_BYTES,
            max_line=settings.IMPORT_MAX_RECORD_BYTES,
            where=f"file {path.name}",
        )
        with path.open("wb") as out:
            for chunk in limited:
                out.write(chunk)
        paths.append(path)
    return paths


def _uploads(request: KeyRequest) -> list[tuple[str, Iterable[bytes]]]:
    if request.content_type == "multipart/form-data":
        files: list[UploadedFile[bytes]] = [f for _, group in request.FILES.lists() for f in group]
        if not files:
            raise BadRequest("file: required, a Claude Code transcript (.jsonl or .jsonl.gz)")
        return [(f.name or "", f.chunks(_CHUNK)) for f in files]
    encoding = request.headers.get("Content-Encoding", "").strip().lower()
    if encoding not in ("", "identity", "gzip", "x-gzip"):
        raise BadRequest(f"Content-Encoding: {encoding!r} is not supported (use gzip)")
    body = request.body
    if not body.strip():
        raise BadRequest("body: empty; expected a Claude Code transcript (JSON lines)")
    # gzip (by header or by its magic bytes) is undone by _save, within IMPORT_MAX_BYTES.
    name = request.GET.get("name") or "upload.jsonl"
    return [(name, [body])]


def report_relative(report: ImportReport, folder: Path) -> ImportReport:
    for file in report.files:
        path = Path(file.path)
        if path.is_relative_to(folder):
            file.path = str(path.relative_to(folder))
    return report


@router.post(
    "/imports/claude-code",
    response={200: ImportOut, 400: Error, 401: Error, 413: Error, 429: Error},
    summary="Import Claude Code transcripts (JSON lines, or multipart files)",
    auth=ProjectKey(ingest=True),
)
def import_claude_code(request: KeyRequest) -> Status[Any]:
    """Send a transcript as the body (``application/x-ndjson``, gzip allowed), or several as
    multipart files (the session and its ``agent-*.jsonl`` subagents). Re-sending is safe."""
    uploads = _uploads(request)
    with tempfile.TemporaryDirectory(prefix="sawtooth-import-") as tmp:
        folder = Path(tmp)
        paths = uploads_save(folder, uploads)
        report = report_relative(
            claude_code.claude_code_import(project=request.auth, paths=paths), folder
        )
    refused = [f for f in report.files if f.error]
    if refused and not report.sessions:
        raise BadRequest("; ".join(f"{f.path}: {f.error}" for f in refused))
    return Status(200, ImportOut(**report.to_dict()))


class JobAccepted(Schema):
    job_id: str


class JobProgress(Schema):
    fraction: float
    files_done: int
    files_total: int
    bytes: int


class JobOut(Schema):
    job_id: str
    status: str
    progress: JobProgress
    report: ImportOut | None
    error: str


@router.post(
    "/imports",
    response={202: JobAccepted, 400: Error, 401: Error, 413: Error, 422: Error, 429: Error},
    summary="Import traces of any format the product reads (multipart files), in the background",
    auth=ProjectKey(ingest=True),
)
def import_traces(request: KeyRequest) -> Status[Any]:
    """Send one or more files as multipart parts (field ``file``): Claude Code, Codex, Gemini
    CLI, Cline (a task's ``ui_messages.json`` and ``api_conversation_history.json`` sent under
    a field named by the task id), OTLP JSON, Anthropic logs, SWE-agent/OpenHands
    trajectories. Each file's format is found by its content and every file is read before
    the answer: a file that cannot be read answers 422 naming it, and nothing of the upload
    is stored. A readable upload is imported by a worker: the answer is 202 ``{job_id}``, and
    ``GET /api/v1/imports/{job_id}`` reports its progress and, once done, what was imported
    per file and what was skipped and why (``unknown_types``: record types the reader does
    not know, skipped and counted). The upload counts against the project's allowance by its
    size: one batch per started MiB after gzip is undone. Re-sending is safe."""
    if request.content_type != "multipart/form-data":
        raise BadRequest("body: send the files as multipart/form-data parts")
    files: list[tuple[str, UploadedFile[bytes]]] = [
        (field, f) for field, group in request.FILES.lists() for f in group
    ]
    if not files:
        raise BadRequest("file: required, one or more trace files as multipart parts")
    with tempfile.TemporaryDirectory(prefix="sawtooth-import-") as tmp:
        checked = import_jobs.uploads_check(folder=Path(tmp), files=files)
        units = import_units(checked.size_bytes)
        if units:
            mib = checked.size_bytes / (1024 * 1024)
            ingest_rate_check(
                project=request.auth,
                request=request,
                units=units,
                what=f" (this import of {mib:.1f} MiB counts as {units + 1} batches, "
                "one per started MiB; nothing of it was stored)",
            )
        job = import_jobs.import_job_create(project=request.auth, checked=checked)
    return Status(202, JobAccepted(job_id=str(job.public_id)))


@router.get(
    "/imports/{job_id}",
    response={200: JobOut, 202: JobOut, 400: Error, 401: Error, 404: Error, 422: Error},
    summary="A background import: its status, progress and, once finished, its report",
    auth=ProjectKey(),
)
def import_job(request: KeyRequest, job_id: str, wait: float = 0) -> Status[Any]:
    """``status`` is ``queued``, ``running``, ``done`` or ``failed`` (every file refused:
    ``error`` names each); ``progress`` counts files (a Cline task folder is one). 200 once
    finished, with ``report``; 202 while it is not. ``?wait=SECONDS`` (at most 30) holds the
    answer until the job finishes or the time is up."""
    if not 0 <= wait <= import_jobs.WAIT_MAX_SECONDS:
        raise Unprocessable(
            f"wait: {wait:g} seconds; it must be from 0 to {import_jobs.WAIT_MAX_SECONDS}"
        )
    job = import_jobs.import_job_find(project=request.auth, job_id=job_id)
    if job is None:
        raise NotFound(f"import job {job_id[:80]!r}: not found in this project")
    if wait:
        job = import_jobs.import_job_wait(job=job, seconds=wait)
    return Status(200 if job.finished else 202, import_jobs.job_answer(job))
