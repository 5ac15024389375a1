"""Benchmark: how long one project's session waits for its analysis while another project's
flood is being analysed, with a real Celery worker on Redis and PostgreSQL.

The flood project sends ``--flood`` small sessions (each a batch through the same service the
ingest API calls); then the quiet project sends one. The figure is the quiet session's wait,
from its ingest to its analysis stored, beside its wait with nothing else queued and the time
the worker took to get through the whole flood: what the quiet session would have waited on
one first-in first-out queue. The worker runs as docker-compose's (two slots).

    .venv/bin/python benchmarks/fairness.py [--flood 600] [--concurrency 2]

``--hostile`` (issue #42's first target): the flood is instead one session per character
class, each one message of 1 MB of that class (word characters with no ``@``, digits,
whitespace, punctuation, ``@``, CJK, emoji, a path-like run, a mix), sent together; then the
quiet project's three-message session. Its delay is its wait behind them minus its wait alone
(target: under 2 s); each hostile session's outcome (analysed, or stopped by a limit, and how
long its pass took) is listed.

    .venv/bin/python benchmarks/fairness.py --hostile [--concurrency 2]
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


MB = 1_000_000
# 1 MB of one character class each: what a hostile message may hold.
HOSTILE = {
    "word": "x" * MB,
    "digits": "7" * MB,
    "spaces": " " * MB,
    "newlines": "\n" * MB,
    "punctuation": "." * MB,
    "at-signs": "@" * MB,
    "path": ("a/" * (MB // 2)),
    "cjk": "中" * (MB // 3),
    "emoji": "\U0001f600" * (MB // 4),
    "mixed": ("a.b-c_@1 " * (MB // 9 + 1))[:MB],
}


def _quiet_batch() -> dict[str, object]:
    return {
        "messages": [
            {"seq": 0, "role": "user", "content": "Fix the login bug in auth.py"},
            {"seq": 1, "role": "assistant", "content": "Reading auth.py"},
            {"seq": 2, "role": "user", "content": "thanks"},
        ]
    }


def _hostile_batch(text: str) -> dict[str, object]:
    return {"messages": [{"seq": 0, "role": "user", "content": text}]}


def _wait_finished(session_pk: int, timeout: float = 1800) -> tuple[str, float, str]:
    """A hostile session's pass once it ended: its status, how long it ran, its error."""
    from compaction.models import SessionAnalysis

    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        row = SessionAnalysis.objects.filter(session_id=session_pk).first()
        if row is not None and row.status in ("done", "failed") and row.finished_at:
            ran = (row.finished_at - row.started_at).total_seconds() if row.started_at else 0.0
            return row.status, ran, row.error[:120]
        time.sleep(0.1)
    raise TimeoutError(f"session {session_pk} did not finish in {timeout} s")


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
    parser.add_argument("--hostile", action="store_true", help="1 MB messages, one per class")
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

    def send(project: object, name: str, batch: dict[str, object]) -> int:
        valid = EventBatch.model_validate(batch)
        return services.events_ingest(project=project, external_id=name, batch=valid).session.pk

    try:
        # warm up the worker's processes, then the quiet session alone
        _wait_analysed(ingest(quiet, "warm-up", 0), time.perf_counter(), timeout=120)
        if args.hostile:
            started = time.perf_counter()
            alone = _wait_analysed(send(quiet, "alone", _quiet_batch()), started)
            hostile = {
                name: send(flood, f"hostile-{name}", _hostile_batch(text))
                for name, text in HOSTILE.items()
            }
            started = time.perf_counter()
            behind = _wait_analysed(send(quiet, "behind-the-hostile", _quiet_batch()), started)
            outcomes = {name: _wait_finished(pk) for name, pk in hostile.items()}
            return _report_hostile(args, alone, behind, outcomes)
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
    _report_flood(args, flood_ingest, alone, behind, drained)


def _report_hostile(
    args: argparse.Namespace,
    alone: float,
    behind: float,
    outcomes: dict[str, tuple[str, float, str]],
) -> None:
    for name, (status, ran, error) in outcomes.items():
        print(f"{name:12} {status:7} pass {ran:6.2f} s {error}", file=sys.stderr)
    print(
        json.dumps(
            {
                "hostile_sessions": len(outcomes),
                "hostile_message_bytes": MB,
                "worker_slots": args.concurrency,
                "quiet_alone_seconds": round(alone, 3),
                "quiet_behind_hostile_seconds": round(behind, 3),
                "quiet_delay_seconds": round(behind - alone, 3),
                "hostile_pass_max_seconds": round(max(r for _, r, _ in outcomes.values()), 2),
                "hostile_analysed": sum(s == "done" for s, _, _ in outcomes.values()),
                "hostile_stopped": sum(s == "failed" for s, _, _ in outcomes.values()),
            }
        )
    )


def _report_flood(
    args: argparse.Namespace, flood_ingest: float, alone: float, behind: float, drained: float
) -> None:
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
