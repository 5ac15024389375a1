"""Benchmark: a threshold change re-judges the stored analyses of 1,000 recent sessions.

Run: ``.venv/bin/python benchmarks/threshold_change.py [--sessions 1000]``. On a scratch
PostgreSQL database (benchmarks/_scratch.py) it uploads the example sessions round-robin
(billing's long one left out, so the set uploads in minutes; the mix has 0 to 7 compactions
per session), analyses each once (not timed), then changes the project's thresholds (storm
at 2 compactions in 60 minutes, repeated at 1) and times what the background task
``alerts_reevaluate_project`` does, in this process: the rules over every stored analysis,
without an analysis pass. The last line printed is JSON, for example
``{"sessions": 1000, "reevaluate_seconds": 41.2, "sessions_per_second": 24.3,
"alerts_before": ..., "alerts_after": ...}``; the target is under 60 s for 1,000 sessions.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _scratch import drop_database, fresh_database

DB_NAME = "sawtooth_bench_threshold_change"
MIX = [
    "example-support-triage",
    "example-short-question",
    "example-failed-compaction",
    "example-hostile-content",
    "example-compaction-storm",
    "example-compaction-loop",
]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = parser.parse_args()
    os.environ.update(
        DATABASE_URL=fresh_database(DB_NAME),
        CELERY_BROKER_URL="memory://localhost//",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from alerts import services as alert_services
    from alerts.models import Alert, AlertSettings
    from compaction import pipeline
    from sessions import example_data, services
    from sessions.models import AgentSession, Project
    from sessions.schemas import EventBatch

    project = Project.objects.create(name="bench")
    examples = {e: example_data.example_session(e) for e in MIX}
    began = time.perf_counter()
    for n in range(args.sessions):
        example = examples[MIX[n % len(MIX)]]
        external_id = f"{example.external_id}-{n}"
        for batch in example.batches:
            services.events_ingest(
                project=project, external_id=external_id, batch=EventBatch.model_validate(batch)
            )
        session = AgentSession.objects.get(project=project, external_id=external_id)
        pipeline.session_analyse(session_id=session.pk)
        if (n + 1) % 100 == 0:
            print(f"set up {n + 1}/{args.sessions} ({time.perf_counter() - began:.0f} s)")
    alerts_before = Alert.objects.filter(project=project).count()

    AlertSettings.objects.create(project=project, storm_compactions=2, repeated_compaction_count=1)
    began = time.perf_counter()
    # what the task queued by the settings page runs (alerts/webhooks.alert_settings_save)
    judged = alert_services.alerts_reevaluate_project(
        project_id=project.pk, rules=alert_services.THRESHOLD_RULES
    )
    seconds = time.perf_counter() - began
    alerts_after = Alert.objects.filter(project=project).count()
    if not args.keep:
        from django.db import connections

        connections.close_all()
        drop_database(DB_NAME)
    print(
        json.dumps(
            {
                "sessions": judged,
                "reevaluate_seconds": round(seconds, 2),
                "sessions_per_second": round(judged / seconds, 1),
                "alerts_before": alerts_before,
                "alerts_after": alerts_after,
            }
        )
    )


if __name__ == "__main__":
    main()
