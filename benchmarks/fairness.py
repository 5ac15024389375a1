"""Benchmark: how long one project's session waits for its analysis while another project's
flood is being analysed, with a real Celery worker on Redis and PostgreSQL.

The flood project sends ``--flood`` small sessions (each a batch through the same service the
ingest API calls); then the quiet project sends one. The figure is the quiet session's wait,
from its ingest to its analysis stored, beside its wait with nothing else queued and the time
the worker took to get through the whole flood: what the quiet session would have waited on
one first-in first-out queue. The worker runs as docker-compose's (two slots).

    .venv/bin/python benchmarks/fairness.py [--flood 600] [--concurrency 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

from _scratch import celery_worker, drop_database, fresh_database, manage

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_fairness"
BROKER = os.environ.get("SAWTOOTH_BENCH_REDIS_URL", "redis://127.0.0.1:6379/9")


def _batch(n: int) -> dict[str, object]:
    return {
        "messages": [
            {"seq": 0, "role": "user", "content": f"Fix the billing bug number {n}."},
            {"seq": 1, "role": "assistant", "content": "Looking at billing/api.py now."},
            {"seq": 2, "role": "user", "content": "Keep the public API unchanged."},
            {"seq": 3, "role": "assistant", "content": "Done; the tests pass."},
        ]
    }


def _wait_analysed(session_pk: int, started: float, timeout: float = 1800) -> float:
    from compaction.models import SessionAnalysis

    while time.perf_counter() - started < timeout:
        row = SessionAnalysis.objects.filter(session_id=session_pk).first()
        if row is not None and row.status == "done" and row.is_current:
            return time.perf_counter() - started
        time.sleep(0.05)
    raise TimeoutError(f"session {session_pk} was not analysed in {timeout} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=600)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()

    prefix = f"fair-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": fresh_database(DB_NAME),
        "SAWTOOTH_PRODUCTION": "0",
        "CELERY_BROKER_URL": BROKER,
        "CELERY_TASK_DEFAULT_QUEUE": prefix,
        "CELERY_ANALYSIS_QUEUE": f"{prefix}.analysis",
        "CELERY_REPLAYS_QUEUE": f"{prefix}.replays",
        "CELERY_WEBHOOKS_QUEUE": f"{prefix}.webhooks",
        "INGEST_RATE_LIMIT_PER_MINUTE": "0",
    }
    os.environ.update(env)
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    manage(env, "migrate", "--no-input")
    import django

    django.setup()
    from sessions import services
    from sessions.schemas import EventBatch

    flood = services.project_create(name="flood")
    quiet = services.project_create(name="quiet")

    def ingest(project: object, name: str, n: int) -> int:
        batch = EventBatch.model_validate(_batch(n))
        return services.events_ingest(project=project, external_id=name, batch=batch).session.pk

    worker = celery_worker(
        env,
        [prefix, f"{prefix}.analysis", f"{prefix}.replays"],
        concurrency=args.concurrency,
        quiet=True,
    )
    try:
        # warm up the worker's processes, then the quiet session alone
        _wait_analysed(ingest(quiet, "warm-up", 0), time.perf_counter(), timeout=120)
        started = time.perf_counter()
        alone = _wait_analysed(ingest(quiet, "alone", 1), started)

        flood_started = time.perf_counter()
        flooded = [ingest(flood, f"flood-{n}", n) for n in range(args.flood)]
        flood_ingest = time.perf_counter() - flood_started
        started = time.perf_counter()
        behind = _wait_analysed(ingest(quiet, "behind-the-flood", 2), started)
        for pk in flooded:
            _wait_analysed(pk, flood_started)
        drained = time.perf_counter() - flood_started
    finally:
        worker.terminate()
        worker.wait(timeout=60)
        from django.db import connections

        connections.close_all()
        drop_database(DB_NAME)
    print(
        json.dumps(
            {
                "flood_sessions": args.flood,
                "worker_slots": args.concurrency,
                "flood_ingest_seconds": round(flood_ingest, 2),
                "quiet_alone_seconds": round(alone, 3),
                "quiet_behind_flood_seconds": round(behind, 3),
                "flood_drained_seconds": round(drained, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
