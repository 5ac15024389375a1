"""Replays per second through real Celery workers (Redis broker, PostgreSQL), 1 and 2 processes.

Loads the demo's long billing session under several ids into a scratch database, queues one
offline replay per session, starts `celery worker --concurrency N`, and times until every run
is done. Prints one JSON line.

    .venv/bin/python benchmarks/replay_throughput.py [--sessions 40]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path

from _scratch import celery_worker, fresh_database

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_replay"
REDIS_URL = os.environ.get("SAWTOOTH_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=40)
    args = parser.parse_args()

    queue = f"bench-{uuid.uuid4().hex[:8]}"
    os.environ.update(
        DATABASE_URL=fresh_database(DB_NAME),
        CELERY_BROKER_URL=REDIS_URL,
        CELERY_TASK_DEFAULT_QUEUE=queue,
        # replays are routed to their own queue (CELERY_TASK_ROUTES): this run's, too
        CELERY_REPLAYS_QUEUE=queue,
        CELERY_ANALYSIS_QUEUE=queue,
        DJANGO_SETTINGS_MODULE="config.settings",
        SAWTOOTH_PRODUCTION="0",  # a local benchmark worker, on this install's own key
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from compaction import tasks
    from compaction.models import ReplayRun, ReplayStatus
    from sessions import example_data, services
    from sessions.models import Project
    from sessions.schemas import EventBatch

    call_command("migrate", verbosity=0)
    project = Project.objects.create(name="bench")
    billing = example_data.example_session("example-billing-migration")
    sessions = []
    for i in range(args.sessions):
        for batch in billing.batches:
            result = services.events_ingest(
                project=project,
                external_id=f"bench-{i}",
                batch=EventBatch.model_validate(batch),
            )
        sessions.append(result.session)
    messages = sum(s.message_count for s in sessions)

    figures: dict[str, object] = {
        "sessions": len(sessions),
        "messages_per_session": messages // len(sessions),
    }
    for concurrency in (1, 2):
        runs = [
            ReplayRun.objects.create(session=s, policy={"soft_limit": 60000, "hard_limit": 90000})
            for s in sessions
        ]
        worker = celery_worker(
            os.environ.copy(),
            [queue],
            concurrency=concurrency,
            extra=(
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                f"{queue}-{concurrency}@localhost",
            ),
        )
        try:
            time.sleep(3)  # let the worker connect before the clock starts
            started = time.perf_counter()
            for run in runs:
                tasks.replay_run_execute.delay(run.pk)
            pending = ReplayRun.objects.filter(pk__in=[r.pk for r in runs]).exclude(
                status__in=[ReplayStatus.DONE, ReplayStatus.FAILED]
            )
            while pending.exists():
                time.sleep(0.05)
            seconds = time.perf_counter() - started
        finally:
            worker.terminate()
            worker.wait(30)
        failed = ReplayRun.objects.filter(pk__in=[r.pk for r in runs], status="failed").count()
        figures[f"workers_{concurrency}_seconds"] = round(seconds, 2)
        figures[f"workers_{concurrency}_replays_per_s"] = round(len(runs) / seconds, 2)
        figures[f"workers_{concurrency}_failed"] = failed
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
