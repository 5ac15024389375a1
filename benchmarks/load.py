"""Load: 50 concurrent clients for 60 s against gunicorn and a worker, then the lag's recovery.

Starts gunicorn on 127.0.0.1 against a scratch PostgreSQL database and a Celery worker (2
threads at nice 10 by default, as benchmarks/vs_anchors.py runs it; on queues of this run
only in Redis, deleted afterwards) that analyses what arrives, as a deployment of one host
does. Each client is a project of its own
(so the per-project rate limit, counted in Redis through CACHE_URL, applies as in production)
and uploads batches of one session in seq order until time is up.

While the load runs and after it ends, ``/healthz`` is read every half second: how far the
analysis, and search whose documents the analysis writes, are behind the uploads
(``analysis_lag_seconds``, ``search_lag_seconds``) and how many sessions wait. The run
reports the worst lag under load, the lag when the load ended and how long after the end it
took to be back under ``--lag-target`` seconds (the issue's bound: under 5 s within 30 s).
Then the database is asked whether each accepted message is stored exactly once, and
whether search reaches every one of them.

    .venv/bin/python benchmarks/load.py [--clients 50] [--seconds 60] [--batch 20]
        [--workers 3] [--no-worker] [--worker-pool threads] [--worker-concurrency 2]
        [--worker-nice 10] [--lag-target 5] [--recovery-timeout 300]

The last line is JSON: requests, errors (anything but 202, or no answer), messages accepted
and stored, ``stored_exactly_once``, throughput, latency percentiles and the lag figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psycopg
import redis
from _scratch import drop_database, free_port, fresh_database, manage

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_load"
REDIS_URL = os.environ.get("SAWTOOTH_BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")

_KEYS_SCRIPT = """
from sessions import services
for n in range({clients}):
    project = services.project_create(name=f"load-{{n}}")
    print(services.api_key_create(project=project).raw_key)
"""


def batch_body(session: int, start: int, size: int) -> bytes:
    messages = []
    for seq in range(start, start + size):
        if seq % 2 == 0:
            messages.append(
                {"seq": seq, "role": "user", "content": f"client {session}: step {seq} " * 20}
            )
        else:
            messages.append(
                {
                    "seq": seq,
                    "role": "assistant",
                    "content": [{"type": "text", "text": f"done with step {seq - 1}"}],
                    "usage": {"input_tokens": 1000 + seq * 50, "output_tokens": 40},
                }
            )
    return json.dumps({"messages": messages}).encode()


@dataclass
class ClientResult:
    requests: int = 0
    errors: int = 0
    accepted: int = 0
    error_samples: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)


def client_run(base: str, key: str, index: int, batch: int, deadline: float) -> ClientResult:
    result = ClientResult()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    seq = 0
    with httpx.Client(base_url=base, headers=headers, timeout=30) as http:
        while time.monotonic() < deadline:
            body = batch_body(index, seq, batch)
            started = time.perf_counter()
            try:
                response = http.post(f"/api/v1/sessions/load-{index}/events", content=body)
            except httpx.HTTPError as exc:
                result.requests += 1
                result.errors += 1
                result.error_samples.append(type(exc).__name__)
                continue  # the same batch again: a resend is safe
            result.requests += 1
            result.latencies_ms.append((time.perf_counter() - started) * 1000)
            if response.status_code != 202:
                result.errors += 1
                result.error_samples.append(f"{response.status_code} {response.text[:120]}")
                if response.status_code in (429, 503):
                    time.sleep(float(response.headers.get("Retry-After", "1")))
                continue
            answer = response.json()
            result.accepted += answer["received"]
            seq += batch
    return result


@dataclass
class LagWatch:
    """``/healthz`` read every half second from a thread: (seconds since the load began,
    analysis lag, search lag, sessions waiting)."""

    base: str
    readings: list[tuple[float, float, float, int]] = field(default_factory=list)
    failures: int = 0
    started: float = field(default_factory=time.perf_counter)
    done: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        with httpx.Client(base_url=self.base, timeout=10) as http:
            while not self.done.is_set():
                try:
                    health = http.get("/healthz").json()
                except (httpx.HTTPError, ValueError):
                    self.failures += 1
                else:
                    self.readings.append(
                        (
                            time.perf_counter() - self.started,
                            float(health["analysis_lag_seconds"]),
                            float(health["search_lag_seconds"]),
                            int(health["sessions_waiting"]),
                        )
                    )
                self.done.wait(0.5)

    def recovered_after(self, end: float, target: float) -> float | None:
        """Seconds after ``end`` until both lags are under target and stay there."""
        after = [r for r in self.readings if r[0] >= end]
        for i, (at, _, _, _) in enumerate(after):
            if all(a < target and s < target for _, a, s, _ in after[i:]):
                return round(at - end, 1)
        return None

    def figures(self, end: float, target: float) -> dict[str, float | int | None]:
        during = [r for r in self.readings if r[0] < end]
        at_end = during[-1] if during else None
        # at a third and two thirds of the load: whether the lag levels off or keeps growing
        marks = [min(during, key=lambda r: abs(r[0] - end * k / 3)) for k in (1, 2) if during]
        return {
            "analysis_lag_at_thirds_s": [r[1] for r in marks],
            "analysis_lag_max_s": max((r[1] for r in during), default=None),
            "search_lag_max_s": max((r[2] for r in during), default=None),
            "analysis_lag_at_end_s": at_end[1] if at_end else None,
            "sessions_waiting_at_end": at_end[3] if at_end else None,
            "lag_under_target_after_end_s": self.recovered_after(end, target),
            "healthz_failures": self.failures,
        }


def stored_check(database_url: str) -> dict[str, int | bool]:
    with psycopg.connect(database_url.replace("postgres://", "postgresql://")) as db:
        total, distinct = db.execute(
            "SELECT count(*), count(DISTINCT (session_id, seq)) FROM traces_message"
        ).fetchone() or (0, 0)
        unsearchable = db.execute(
            "SELECT count(*) FROM traces_message WHERE search_text IS NULL"
        ).fetchone()
        mismatched = db.execute(
            "SELECT count(*) FROM traces_agentsession s WHERE s.message_count <>"
            " (SELECT count(*) FROM traces_message m WHERE m.session_id = s.id)"
        ).fetchone()
    return {
        "stored": total,
        "distinct": distinct,
        "unsearchable": unsearchable[0] if unsearchable else 0,
        "count_mismatches": mismatched[0] if mismatched else 0,
    }


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--batch", type=int, default=20)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes")
    parser.add_argument(
        "--no-worker", action="store_true", help="no Celery worker: the door alone, no lag figures"
    )
    # The worker as benchmarks/vs_anchors.py runs it beside the web on one host (see there).
    parser.add_argument("--worker-pool", default="threads", choices=("prefork", "solo", "threads"))
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--worker-nice", type=int, default=10)
    parser.add_argument("--lag-target", type=float, default=5.0, help="seconds of lag allowed")
    parser.add_argument(
        "--recovery-timeout", type=float, default=300, help="seconds to wait for the lag after"
    )
    args = parser.parse_args()

    prefix = f"load-{uuid.uuid4().hex[:8]}"
    database_url = fresh_database(DB_NAME)
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "SAWTOOTH_PRODUCTION": "0",  # a local test server, on this install's own key
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "CELERY_BROKER_URL": REDIS_URL,
        "CACHE_URL": REDIS_URL,
        "CELERY_TASK_DEFAULT_QUEUE": prefix,
        "CELERY_ANALYSIS_QUEUE": f"{prefix}.analysis",
        "CELERY_REPLAYS_QUEUE": f"{prefix}.replays",
        "CELERY_WEBHOOKS_QUEUE": f"{prefix}.webhooks",
    }
    manage(env, "migrate", "--no-input")
    script = _KEYS_SCRIPT.format(clients=args.clients)
    keys = [k for k in manage(env, "shell", "-c", script).split() if k.startswith("st_")]
    port = free_port()
    worker = None
    worker_log = (Path(tempfile.gettempdir()) / f"{prefix}-worker.log").open("wb")
    if not args.no_worker:
        worker = subprocess.Popen(
            [
                *(("nice", "-n", str(args.worker_nice)) if args.worker_nice else ()),
                *(sys.executable, "-m", "celery", "-A", "config", "worker"),
                *("--loglevel", "WARNING"),
                *("-Q", f"{prefix}.analysis,{prefix}", "--hostname", f"{prefix}@localhost"),
                *("--pool", args.worker_pool, "--concurrency", str(args.worker_concurrency)),
                *("--without-gossip", "--without-mingle"),
            ],
            cwd=ROOT,
            env=env,
            stdout=worker_log,
            stderr=subprocess.STDOUT,
        )
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(args.workers),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                httpx.get(f"{base}/healthz", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        if os.environ.get("LOAD_PROBE"):
            subprocess.run([sys.executable, os.environ["LOAD_PROBE"], base, keys[0]], check=False)
        watch = LagWatch(base)
        watcher = threading.Thread(target=watch.run, daemon=True)
        if worker is not None:
            watcher.start()
        deadline = time.monotonic() + args.seconds
        started = time.perf_counter()
        gate = threading.Barrier(args.clients)

        def run(index: int) -> ClientResult:
            gate.wait()
            return client_run(base, keys[index], index, args.batch, deadline)

        with ThreadPoolExecutor(args.clients) as pool:
            results = list(pool.map(run, range(args.clients)))
        seconds = time.perf_counter() - started
        end = time.perf_counter() - watch.started
        lag: dict[str, float | int | None] = {}
        if worker is not None:
            recovery_deadline = time.monotonic() + args.recovery_timeout
            while time.monotonic() < recovery_deadline:
                last = watch.readings[-1] if watch.readings else None
                if last is not None and last[0] > end and last[3] == 0:
                    break  # nothing waits: every upload analysed, so searchable
                time.sleep(0.5)
            watch.done.set()
            watcher.join(10)
            lag = watch.figures(end, args.lag_target)
    finally:
        for process in (server, worker):
            if process is not None:
                process.terminate()
                process.wait(20)
        broker = redis.Redis.from_url(REDIS_URL)
        # the queues and kombu's bindings of them (``_kombu.binding.<queue>``)
        names = list(broker.scan_iter(f"*{prefix}*"))
        if names:
            broker.delete(*names)
    check = stored_check(database_url)
    drop_database(DB_NAME)
    accepted = sum(r.accepted for r in results)
    requests = sum(r.requests for r in results)
    errors = sum(r.errors for r in results)
    latencies = [ms for r in results for ms in r.latencies_ms]
    samples = [s for r in results for s in r.error_samples][:5]
    if samples:
        print("error samples:", samples, file=sys.stderr)
    exactly_once = (
        check["stored"] == check["distinct"] == accepted and check["count_mismatches"] == 0
    )
    recovered = lag.get("lag_under_target_after_end_s")
    pool, threads, nice = args.worker_pool, args.worker_concurrency, args.worker_nice
    worker_layout = f"celery {pool} x{threads} at nice {nice}"
    print(
        json.dumps(
            {
                "clients": args.clients,
                "seconds": round(seconds, 1),
                "gunicorn_workers": args.workers,
                "batch_messages": args.batch,
                "requests": requests,
                "errors": errors,
                "messages_accepted": accepted,
                "messages_stored": check["stored"],
                "stored_exactly_once": exactly_once,
                "requests_per_s": round(requests / seconds, 1),
                "messages_per_s": round(accepted / seconds),
                "latency_p50_ms": round(statistics.median(latencies), 1) if latencies else 0,
                "latency_p95_ms": round(percentile(latencies, 0.95), 1),
                "latency_max_ms": round(max(latencies), 1) if latencies else 0,
                "worker": "none" if args.no_worker else worker_layout,
                "worker_log": worker_log.name,
                **lag,
                "lag_target_s": args.lag_target,
                "lag_recovered_within_30s": recovered is not None and recovered <= 30,
                "messages_unsearchable_at_end": check["unsearchable"],
            }
        )
    )


if __name__ == "__main__":
    main()
