"""Benchmark: a storm or a loop in a session being written, to its alert.

Starts gunicorn and one Celery worker (default, analysis and replays queues, as
docker-compose.yml's worker) against a scratch PostgreSQL database and Redis, then sends the
storm and the loop example sessions (sessions/fixtures/examples/) batch by batch through the
events API, ``--runs`` times each under fresh external ids. The batches before the one that
shows the alert are sent and analysed first; then the clock starts, the batch that shows it
is POSTed, and ``GET /api/v1/alerts?rule=R&session=ID`` is polled every ``--poll`` seconds
until it lists the alert. The latency is that moment minus the POST's start: the ingest, the
outbox turn, the worker's pass and the rules (the poll interval is part of the figure). The
issue's target is 10 s.

    .venv/bin/python benchmarks/live_alerts.py [--runs 5] [--poll 0.1]

SAWTOOTH_BENCH_REDIS_URL picks the Redis database (default redis://127.0.0.1:6379/13).
The last line is JSON, units in the keys.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _scratch import ROOT, celery_worker, drop_database, free_port, fresh_database, manage

from sessions import example_data

DB_NAME = "sawtooth_bench_live_alerts"
REDIS_URL = os.environ.get("SAWTOOTH_BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
# (example, rule, index of the batch that shows it)
CASES = (
    ("example-compaction-storm", "compaction_storm", 3),
    ("example-compaction-loop", "compaction_loop", 0),
)
_KEY_SCRIPT = """
from sessions import services
project = services.project_create(name="live-alerts-bench")
print(services.api_key_create(project=project).raw_key)
"""


def _analysed(http: httpx.Client, external_id: str) -> bool:
    reply = http.get(f"/api/v1/sessions/{external_id}/curve")
    if reply.status_code != 200:
        return False
    body = reply.json()
    return bool(body["status"] == "done" and body["current"])


def _wait(predicate, timeout: float = 120) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            sys.exit("timed out: see the worker's output above")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--poll", type=float, default=0.1)
    args = parser.parse_args()
    database_url = fresh_database(DB_NAME)
    prefix = f"live-alerts-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "SAWTOOTH_PRODUCTION": "0",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "CELERY_BROKER_URL": REDIS_URL,
        "CELERY_TASK_DEFAULT_QUEUE": prefix,
        "CELERY_ANALYSIS_QUEUE": f"{prefix}.analysis",
        "CELERY_REPLAYS_QUEUE": f"{prefix}.replays",
        "CELERY_WEBHOOKS_QUEUE": f"{prefix}.webhooks",
        "INGEST_RATE_LIMIT_PER_MINUTE": "0",
    }
    manage(env, "migrate", "--no-input")
    key = next(k for k in manage(env, "shell", "-c", _KEY_SCRIPT).split() if k.startswith("st_"))
    port = free_port()
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "gunicorn", "config.wsgi:application"),
            *("--bind", f"127.0.0.1:{port}", "--workers", "2"),
            *("--timeout", "300", "--log-level", "warning"),
        ],
        cwd=ROOT,
        env=env,
    )
    latencies: dict[str, list[float]] = {rule: [] for _, rule, _ in CASES}
    with tempfile.TemporaryDirectory(prefix="sawtooth-live-alerts-") as tmp:
        worker = celery_worker(
            env,
            [prefix, f"{prefix}.analysis", f"{prefix}.replays"],
            concurrency=2,
            quiet=True,
            extra=("-B", "-s", str(Path(tmp) / "beat-schedule")),
        )
        headers = {"Authorization": f"Bearer {key}"}
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers=headers) as http:
                _wait(lambda: _ok(http))
                for run in range(args.runs):
                    for example_id, rule, showing in CASES:
                        batches = example_data.example_session(example_id).batches
                        external_id = f"{example_id}-{run}"
                        for batch in batches[:showing]:
                            http.post(f"/api/v1/sessions/{external_id}/events", json=batch)
                            _wait(lambda e=external_id: _analysed(http, e))
                        began = time.monotonic()
                        reply = http.post(
                            f"/api/v1/sessions/{external_id}/events", json=batches[showing]
                        )
                        reply.raise_for_status()
                        query = {"rule": rule, "session": external_id}

                        def listed(q: dict[str, str] = query) -> bool:
                            found = http.get("/api/v1/alerts", params=q).json()["count"] > 0
                            if not found:
                                time.sleep(args.poll)
                            return bool(found)

                        _wait(listed)
                        latencies[rule].append(time.monotonic() - began)
                        print(f"{rule} run {run + 1}: {latencies[rule][-1]:.2f} s", flush=True)
        finally:
            worker.terminate()
            server.terminate()
            worker.wait(30)
            server.wait(30)
    drop_database(DB_NAME)
    figures: dict[str, float | int] = {"runs": args.runs, "poll_seconds": args.poll}
    for rule, values in latencies.items():
        figures[f"{rule}_median_seconds"] = round(statistics.median(values), 2)
        figures[f"{rule}_max_seconds"] = round(max(values), 2)
    print(json.dumps(figures))


def _ok(http: httpx.Client) -> bool:
    try:
        return http.get("/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


if __name__ == "__main__":
    main()
