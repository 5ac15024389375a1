"""Decompression bombs at every import door: the peak memory of the process that reads them.

Builds hostile files (a gzip inside a gzip of a transcript's first lines then 4 GB with no
newline, in a few KB; a gzip of the same lines then 2 GB with no newline; three layers of gzip
of 4 GB of newlines) and a valid 20 MB transcript, then sends each through each door, one fresh
child process per case, on a scratch SQLite database: ``POST /api/v1/imports`` and the upload
form (Django's test client, the same view code a web worker runs), ``manage.py import_traces``,
and the watcher's first look at a
file; and, since the API and the form import in the background, ``worker`` (the worker process
importing the job an API upload left: the upload in one process, the job in another) and, for
the valid file, ``analysis`` (a worker's analysis passes over what it imported, in its own
process: ANALYSIS_IN_CHILD=0). Each child reports its peak RSS (under a 2 GB address-space
cap, so a door that inflates a bomb ends in MemoryError and counts in ``failed_runs``); the
last line is JSON, e.g.
{"limit_mb": 300, "max_peak_rss_mb": 131.2, "failed_runs": 0, "cases": {"nested/api":
{"peak_rss_mb": 128.1, "answer": "413 file ...: larger than the 104857600-byte limit ..."}, ...}}.

    .venv/bin/python benchmarks/bombs.py [--only nested] [--doors api,form,command,watcher,worker]
    .venv/bin/python benchmarks/bombs.py --only valid_20mb --doors analysis
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHORT = ROOT / "tests/fixtures/corpus/claude_code/spotter/short.jsonl"
DOORS = ("api", "form", "command", "watcher", "worker")
_MB = 1024 * 1024


def _gzip_stream(chunks, out) -> None:  # type: ignore[no-untyped-def]
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    for chunk in chunks:
        out.write(packer.compress(chunk))
    out.write(packer.flush())


def _gzip_bytes(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


def _repeat(block: bytes, total: int):  # type: ignore[no-untyped-def]
    for _ in range(total // len(block)):
        yield block


def build(folder: Path) -> dict[str, Path]:
    first = b"".join(line + b"\n" for line in SHORT.read_bytes().split(b"\n")[:6])
    files: dict[str, Path] = {}
    inner = folder / "inner.gz"
    with inner.open("wb") as out:
        _gzip_stream([first, *_repeat(b"x" * _MB, 4096 * _MB)], out)
    files["nested"] = folder / "nested.jsonl.gz"
    files["nested"].write_bytes(_gzip_bytes(inner.read_bytes()))
    one_line = folder / "one-line.jsonl.gz"
    with one_line.open("wb") as out:
        _gzip_stream([first, *_repeat(b"x" * _MB, 2048 * _MB)], out)
    files["one_line"] = one_line
    newlines = folder / "newlines.gz"
    with newlines.open("wb") as out:
        _gzip_stream(_repeat(b"\n" * _MB, 4096 * _MB), out)
    files["three_layers"] = folder / "three.jsonl.gz"
    files["three_layers"].write_bytes(_gzip_bytes(_gzip_bytes(newlines.read_bytes())))
    valid = folder / "valid-20mb.jsonl"
    lines = [line for line in SHORT.read_bytes().split(b"\n") if line.strip()]
    with valid.open("wb") as out:
        written, copy = 0, 0
        while written < 20 * _MB:
            for line in lines:
                record = json.loads(line)
                for key in ("uuid", "parentUuid"):
                    if isinstance(record.get(key), str):
                        record[key] = f"{record[key]}~{copy}"
                data = json.dumps(record).encode() + b"\n"
                out.write(data)
                written += len(data)
            copy += 1
    files["valid_20mb"] = valid
    return files


def child(door: str, path: Path, cap_mb: int) -> None:
    # A hard cap on the address space, so a door that does inflate a bomb (the code before
    # the fix) ends in MemoryError instead of taking the shared machine's memory.
    cap = cap_mb * _MB
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.core.files.uploadedfile import UploadedFile
    from django.core.management import call_command
    from django.test import Client

    from sessions import services
    from sessions.models import Membership, Role

    answer = ""
    name = f"bombs-{door}-{path.stem}-{os.getpid()}"
    if door == "import-job":
        answer = _import_job_child()
    elif door in ("worker", "analysis"):
        answer = _worker_child(door, path, cap_mb)
    elif door == "watcher":
        from compaction.client import watch

        answer = repr(watch.harness_of(path))
    elif door == "command":
        from django.core.management.base import CommandError

        services.project_create(name=name)
        with tempfile.TemporaryFile("w+") as out:
            try:
                call_command("import_traces", str(path), "--project", name, "--json", stdout=out)
            except CommandError as exc:  # its answer to a refused file: exit 1, naming it
                answer = " ".join(str(exc).split())
            else:
                out.seek(0)
                report = json.loads(out.read())
                answer = str(report["files"][0]["error"] or f"{report['messages']} messages")
    else:
        project = services.project_create(name=name)
        client = Client(HTTP_HOST="localhost")
        if door == "api-job":  # the upload of the worker's case, in a process of its own
            door = "api"
        with path.open("rb") as fh:
            upload = UploadedFile(fh, name=path.name)
            if door == "api":
                key = services.api_key_create(project=project).raw_key
                response = client.post(
                    "/api/v1/imports", {"file": upload}, headers={"Authorization": f"Bearer {key}"}
                )
                body = response.content.decode()[:200]
            else:
                from django.contrib.auth import get_user_model

                user = get_user_model().objects.create_user(username=name, password="x" * 20)
                Membership.objects.create(user=user, project=project, role=Role.ENGINEER)
                client.force_login(user)
                response = client.post(
                    "/imports/claude-code/", {"project": project.pk, "file": upload}
                )
                text = response.content.decode()
                at = text.find("limit")
                body = text[max(0, at - 120) : at + 80] if at >= 0 else ""
            answer = f"{response.status_code} {' '.join(body.split())}"
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_rss_mb": round(peak, 1), "answer": answer[:240]}))


def _worker_child(door: str, path: Path, cap_mb: int) -> str:
    """The upload through the API in another process, then here what a worker does: import
    the job (``worker``), then analyse what it stored (``analysis``, after a third process
    imported it)."""
    from compaction import pipeline
    from sessions import import_jobs
    from sessions.models import ImportJob

    def nested(step: str) -> None:
        argv = [sys.executable, __file__, "--child", step, str(path), "--cap-mb", str(cap_mb)]
        subprocess.run(argv, cwd=ROOT, env=os.environ, check=True, capture_output=True)

    nested("api-job")
    job = ImportJob.objects.order_by("-pk").first()
    if job is None:
        return "no job"
    if door == "analysis":
        nested("import-job")
        analysed = 0
        while pipeline.analysis_next() is not None:
            analysed += 1
        return f"{analysed} session(s) analysed"
    import_jobs.import_job_run(job_id=job.pk)
    job.refresh_from_db()
    return f"{job.status} {job.report.get('messages', 0)} messages {job.error[:120]}"


def _import_job_child() -> str:
    from sessions import import_jobs
    from sessions.models import ImportJob

    job = ImportJob.objects.order_by("-pk").first()
    assert job is not None
    import_jobs.import_job_run(job_id=job.pk)
    return "imported"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--child", nargs=2, metavar=("DOOR", "PATH"))
    parser.add_argument("--only", default="", help="comma-separated case names")
    parser.add_argument("--doors", default=",".join(DOORS))
    parser.add_argument("--cap-mb", type=int, default=2048, help="address-space cap per child")
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), args.cap_mb)
        return
    with tempfile.TemporaryDirectory(prefix="sawtooth-bombs-") as tmp:
        folder = Path(tmp)
        env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
            "PYTHONPATH": str(ROOT),
            "CELERY_BROKER_URL": "memory://localhost//",  # the outbox rows wait; none is sent
            "ANALYSIS_IN_CHILD": "0",  # the analysis door measures the pass in its process
            "INGEST_RATE_LIMIT_PER_MINUTE": "0",
        }
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
            cwd=ROOT,
            env=env,
            check=True,
        )
        files = build(folder)
        wanted = [c for c in args.only.split(",") if c] or list(files)
        cases: dict[str, dict[str, object]] = {}
        for case in wanted:
            for door in args.doors.split(","):
                run = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--child",
                        door,
                        str(files[case]),
                        "--cap-mb",
                        str(args.cap_mb),
                    ],
                    cwd=ROOT,
                    env=env,
                    capture_output=True,
                    text=True,
                )
                lines = run.stdout.strip().splitlines()
                result = (
                    json.loads(lines[-1])
                    if run.returncode == 0 and lines
                    else {
                        "peak_rss_mb": None,
                        "answer": f"exit {run.returncode}: " + run.stderr.strip()[-300:],
                    }
                )
                result["size_bytes"] = files[case].stat().st_size
                cases[f"{case}/{door}"] = result
                print(f"{case}/{door}: {result}", file=sys.stderr, flush=True)
        peaks = [float(c["peak_rss_mb"]) for c in cases.values() if c["peak_rss_mb"] is not None]
        print(
            json.dumps(
                {
                    "limit_mb": 300,
                    "max_peak_rss_mb": max(peaks) if peaks else None,
                    "failed_runs": sum(1 for c in cases.values() if c["peak_rss_mb"] is None),
                    "cases": cases,
                }
            )
        )


if __name__ == "__main__":
    main()
