"""Claude Code import: MB/s and peak memory for a large transcript, into PostgreSQL.

Builds a transcript of --mb megabytes by repeating a real one from the corpus (each
copy gets fresh uuids and message ids, so nothing is deduplicated away), imports it with
``manage.py import_claude_code`` into a scratch database in a child process, and prints the
figures as one final JSON line, e.g. {"mb": 200, "seconds": 12.3, "mb_per_s": 16.2,
"peak_rss_mb": 180, "messages": 123456}.

    .venv/bin/python benchmarks/import.py [--mb 200] [--source PATH] [--keep]

``--contention`` (issue #42's sixth case): gunicorn (3 sync workers, as docker-compose runs it)
and a Celery worker (2 slots, every queue) on a scratch PostgreSQL database; one project's key
sends ``--parallel`` (4) imports of ``--mb`` (16) MB at once to ``POST /api/v1/imports``, and
meanwhile another project uploads a one-message batch every half second. The figures are that
upload's wait alone and under the imports (the issue measured 7.9 s when imports ran in their
request), how long the imports' answers took, and the peak RSS (VmHWM) of each web and worker
process once the worker has imported the jobs (the quiet uploads go on meanwhile).

    .venv/bin/python benchmarks/import.py --contention [--mb 16] [--parallel 4]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _scratch import drop_database, fresh_database

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_import"
DEFAULT_SOURCE = (
    ROOT / "tests/fixtures/corpus/claude_code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz"
)
_ID_KEYS = ("uuid", "parentUuid", "logicalParentUuid")


def build_transcript(source: Path, target: Path, megabytes: int) -> int:
    """Write copies of `source` until the file reaches the size; return the bytes written."""
    opener = gzip.open if source.name.endswith(".gz") else open
    with opener(source, "rt", encoding="utf-8") as fh:
        base = [json.loads(line) for line in fh if line.strip()]
    limit = megabytes * 1024 * 1024
    written = 0
    copy = 0
    with target.open("w", encoding="utf-8") as out:
        while written < limit:
            for record in base:
                for key in _ID_KEYS:
                    if isinstance(record.get(key), str):
                        record[key] = f"{record[key].split('~')[0]}~{copy}"
                message = record.get("message")
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    message["id"] = f"{message['id'].split('~')[0]}~{copy}"
                line = json.dumps(record, ensure_ascii=False) + "\n"
                out.write(line)
                written += len(line.encode("utf-8"))
                if written >= limit:
                    break
            copy += 1
    return written


def _peak_rss_mb(pid: int) -> float:
    """The peak resident set (VmHWM) of a live process and its children, in MB: the most."""
    peaks = []
    for task in [pid, *_children(pid)]:
        try:
            status = Path(f"/proc/{task}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peaks.append(int(line.split()[1]) / 1024)
    return round(max(peaks, default=0.0), 1)


def _children(pid: int) -> list[int]:
    try:
        found = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(c) for c in found] + [g for c in found for g in _children(int(c))]


def contention(args: argparse.Namespace) -> None:
    import statistics
    import threading
    import uuid

    import httpx
    from _scratch import celery_worker, free_port

    redis_url = os.environ.get("SAWTOOTH_BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")
    prefix = f"imp-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": fresh_database(DB_NAME),
        "SAWTOOTH_PRODUCTION": "0",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "CELERY_BROKER_URL": redis_url,
        "CACHE_URL": redis_url,
        "CELERY_TASK_DEFAULT_QUEUE": prefix,
        "CELERY_ANALYSIS_QUEUE": f"{prefix}.analysis",
        "CELERY_REPLAYS_QUEUE": f"{prefix}.replays",
        "CELERY_WEBHOOKS_QUEUE": f"{prefix}.webhooks",
        "CELERY_IMPORTS_QUEUE": f"{prefix}.imports",
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from sessions import services

    bulk_key = services.api_key_create(project=services.project_create(name="bulk")).raw_key
    quiet_key = services.api_key_create(project=services.project_create(name="quiet")).raw_key
    port = free_port()
    web = subprocess.Popen(
        [
            *(sys.executable, "-m", "gunicorn", "-c", "config/gunicorn.py"),
            *("config.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "3"),
            *("--log-level", "warning", "--access-logfile", "/dev/null", "--timeout", "300"),
        ],
        cwd=ROOT,
        env=env,
    )
    queues = [prefix, *(f"{prefix}.{q}" for q in ("analysis", "replays", "webhooks", "imports"))]
    worker = celery_worker(env, queues, concurrency=2, quiet=True)
    base = f"http://127.0.0.1:{port}"
    tmp = tempfile.TemporaryDirectory(prefix="sawtooth-bench-")
    try:
        for _ in range(600):
            try:
                httpx.get(f"{base}/healthz", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        paths = []
        for n in range(args.parallel):
            path = Path(tmp.name) / f"import-{n}.jsonl"
            build_transcript(args.source, path, args.mb)
            paths.append(path)
        sent = [0]

        def quiet_upload() -> float:
            sent[0] += 1
            body = {"messages": [{"seq": 0, "role": "user", "content": f"hello {sent[0]}"}]}
            started = time.perf_counter()
            response = httpx.post(
                f"{base}/api/v1/sessions/quiet-{sent[0]}/events",
                json=body,
                headers={"Authorization": f"Bearer {quiet_key}"},
                timeout=300,
            )
            assert response.status_code == 202, response.text
            return time.perf_counter() - started

        alone = [quiet_upload() for _ in range(5)]
        answers: list[tuple[int, float]] = []
        during_jobs: list[float] = []

        def bulk_import(path: Path) -> None:
            started = time.perf_counter()
            with path.open("rb") as fh:
                response = httpx.post(
                    f"{base}/api/v1/imports",
                    files={"file": (path.name, fh, "application/octet-stream")},
                    headers={"Authorization": f"Bearer {bulk_key}"},
                    timeout=600,
                )
            answers.append((response.status_code, time.perf_counter() - started))

        threads = [threading.Thread(target=bulk_import, args=(p,)) for p in paths]
        for thread in threads:
            thread.start()
        time.sleep(0.2)  # the imports are on their way
        waits = []
        while any(t.is_alive() for t in threads):
            waits.append(quiet_upload())
            time.sleep(0.5)
        for thread in threads:
            thread.join()
        # the worker imports the jobs meanwhile: the quiet uploads go on until they are done
        from sessions.models import ImportJob, ImportStatus

        unfinished = ImportJob.objects.exclude(status__in=[ImportStatus.DONE, ImportStatus.FAILED])
        jobs_started = time.perf_counter()
        while unfinished.exists() and time.perf_counter() - jobs_started < 900:
            during_jobs.append(quiet_upload())
            time.sleep(0.5)
        jobs_seconds = time.perf_counter() - jobs_started
        jobs = list(ImportJob.objects.values_list("status", flat=True))
        web_peak = _peak_rss_mb(web.pid)
        worker_peak = _peak_rss_mb(worker.pid)
    finally:
        for process in (web, worker):
            process.terminate()
        for process in (web, worker):
            process.wait(timeout=60)
        tmp.cleanup()
        from django.db import connections

        connections.close_all()
        if not args.keep:
            drop_database(DB_NAME)
    print(
        json.dumps(
            {
                "imports": args.parallel,
                "import_mb": args.mb,
                "import_statuses": sorted({s for s, _ in answers}),
                "import_answer_max_seconds": round(max(t for _, t in answers), 2),
                "quiet_alone_median_seconds": round(statistics.median(alone), 3),
                "quiet_under_imports_max_seconds": round(max(waits, default=0.0), 3),
                "quiet_under_imports_median_seconds": round(statistics.median(waits or [0]), 3),
                "quiet_uploads_under_imports": len(waits),
                "jobs": sorted(jobs),
                "jobs_done_after_answers_seconds": round(jobs_seconds, 1),
                "quiet_while_jobs_run_max_seconds": round(max(during_jobs, default=0.0), 3),
                "quiet_while_jobs_run_median_seconds": round(
                    statistics.median(during_jobs or [0]), 3
                ),
                "web_peak_rss_mb": web_peak,
                "worker_peak_rss_mb": worker_peak,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    parser.add_argument("--contention", action="store_true", help="parallel imports vs one")
    parser.add_argument("--parallel", type=int, default=4)
    args = parser.parse_args()
    if args.contention:
        if "--mb" not in sys.argv:
            args.mb = 16
        contention(args)
        return

    url = fresh_database(DB_NAME)
    env = {**os.environ, "DATABASE_URL": url, "CELERY_BROKER_URL": "memory://localhost//"}
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    subprocess.run(
        [*manage, "createproject", "bench"],
        env=env,
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )

    with tempfile.TemporaryDirectory(prefix="sawtooth-bench-") as tmp:
        path = Path(tmp) / "big.jsonl"
        size = build_transcript(args.source, path, args.mb)
        print(f"built {path} ({size / 2**20:.1f} MB)", file=sys.stderr)
        started = time.perf_counter()
        done = subprocess.run(
            [*manage, "import_claude_code", str(path), "--project", "bench", "--json"],
            env=env,
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - started
    # ru_maxrss of waited-for children, in KiB on Linux: the import command's peak.
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    report = json.loads(done.stdout)
    if not args.keep:
        drop_database(DB_NAME)
    mb = size / 2**20
    print(
        json.dumps(
            {
                "mb": round(mb, 1),
                "seconds": round(seconds, 1),
                "mb_per_s": round(mb / seconds, 1),
                "peak_rss_mb": round(peak_kib / 1024, 1),
                "messages": report["messages"],
                "compactions": report["compactions"],
            }
        )
    )


if __name__ == "__main__":
    main()
