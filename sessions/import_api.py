"""Upload endpoints under /api/v1/imports/: files users already have, imported in place.

The import runs in the request (it streams, chunk by chunk, through ``events_ingest``) and
the answer is the import report. Registered on the API in ``config/api.py``; an upload comes
in through ``auth.ProjectKey(ingest=True)`` (a valid key, then the project's ingest allowance).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from ninja import Router, Schema, Status

from sessions import wire
from sessions.auth import KeyRequest, ProjectKey
from sessions.errors import BadRequest, Unprocessable
from sessions.importers import claude_code, detect
from sessions.importers.report import ImportReport
from sessions.models import Project
from sessions.schemas import Error

router = Router(tags=["imports"])

_CHUNK = 1024 * 1024
LOOSE_CLINE = (
    "a Cline task is a folder; send its files under a form field named by the task id, so the "
    "task keeps its id"
)
UPLOAD_NAME_MAX = 200  # a file's name, or the form field naming a Cline task's folder


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


def uploads_import(
    *, project: Project, files: Sequence[tuple[str, UploadedFile[bytes]]]
) -> ImportReport:
    """Save uploaded files (``(form field, file)``) in a folder of their own, find each one's
    format and import it: the one path of ``POST /api/v1/imports`` and the web upload. A file
    too large (after gzip is undone) stops everything with a 413, and a file that cannot be
    read with a 422 naming it, before anything is stored."""
    with tempfile.TemporaryDirectory(prefix="sawtooth-import-") as tmp:
        folder = Path(tmp)
        taken: set[str] = set()
        paths: list[Path] = []
        shown: dict[str, str] = {}  # saved path -> the name the client sent (``.gz`` kept)
        for index, (field, upload) in enumerate(files, start=1):
            path = _upload_path(folder, field, upload.name or "", index, taken)
            sent = Path((upload.name or "").replace("\\", "/")).name or path.name
            if path.name != sent.removesuffix(".gz"):
                sent = path.name
            relative = str(path.relative_to(folder))
            shown[relative] = str(Path(relative).with_name(sent))
            limited = wire.bounded_chunks(
                upload.chunks(_CHUNK),
                max_bytes=settings.IMPORT_MAX_BYTES,
                max_line=settings.IMPORT_MAX_RECORD_BYTES,
                where=f"file {sent}",
            )
            with path.open("wb") as out:
                for chunk in limited:
                    out.write(chunk)
            paths.append(path)
        tasks = sorted({p.parent for p in paths if p.parent != folder})
        loose_cline = [p for p in paths if p.parent == folder and p.name in detect.CLINE_FILES]
        for path in loose_cline:
            paths.remove(path)
        targets = [*tasks, *(p for p in paths if p.parent == folder)]
        # Every file is read before any is stored: one that cannot be read refuses the upload
        # whole (422 naming it), so a client never has half an upload to find and resend.
        refused = [(str(path), LOOSE_CLINE) for path in loose_cline] + detect.traces_check(targets)
        if refused:
            named = []
            for raw, why in refused:
                relative = str(Path(raw).relative_to(folder))
                named.append(f"{shown.get(relative, relative)}: {why}")
            raise Unprocessable("; ".join(named) + "; nothing of this upload was stored")
        report = detect.traces_import(project=project, paths=targets)
        report = report_relative(report, folder)
    for file in report.files:
        file.path = shown.get(file.path, file.path)
    return report


@router.post(
    "/imports",
    response={200: ImportOut, 400: Error, 401: Error, 413: Error, 422: Error, 429: Error},
    summary="Import traces of any format the product reads (multipart files)",
    auth=ProjectKey(ingest=True),
)
def import_traces(request: KeyRequest) -> Status[Any]:
    """Send one or more files as multipart parts (field ``file``): Claude Code, Codex, Gemini
    CLI, Cline (a task's ``ui_messages.json`` and ``api_conversation_history.json`` sent under
    a field named by the task id), OTLP JSON, Anthropic logs, SWE-agent/OpenHands
    trajectories. Each file's format is found by its content and every file is read before
    any is stored: a file that cannot be read answers 422 naming it, and nothing of the upload
    is stored. The answer reports per file what was imported, and what was skipped and why
    (``unknown_types``: record types the reader does not know, skipped and counted).
    Re-sending is safe."""
    if request.content_type != "multipart/form-data":
        raise BadRequest("body: send the files as multipart/form-data parts")
    files: list[tuple[str, UploadedFile[bytes]]] = [
        (field, f) for field, group in request.FILES.lists() for f in group
    ]
    if not files:
        raise BadRequest("file: required, one or more trace files as multipart parts")
    report = uploads_import(project=request.auth, files=files)
    problems = [f for f in report.files if f.error]
    if problems and not report.sessions:
        # what only the import itself could find (a trajectory's), with nothing stored
        raise Unprocessable("; ".join(f"{f.path}: {f.error}" for f in problems))
    return Status(200, ImportOut(**report.to_dict()))
