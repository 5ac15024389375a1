"""Benchmark: policy advice over real sessions, on PostgreSQL, through the worker's own passes.

Real Claude Code transcripts are imported (``benchmarks/data/realtraces``, held-out sessions
with real compactions, and the corpus: ``/work/shared/corpus/claude_code`` when present, else
its copy in ``tests/fixtures/corpus/claude_code``), analysed, and an experiment of six policies
plus the advice's two baselines (clear old tool results only; keep the last N without a
summary) is replayed over the sessions with priced model calls, run by run as a worker would.
Then the advice is computed (``compaction.advice.experiment_advice``, what
``GET /api/v1/experiments/{id}/advice`` answers).

    .venv/bin/python benchmarks/advice.py [--sessions 24]

Prints the front and the recommendation, then one JSON line: the sources, the counts, the
recommendation and the seconds (import and analysis, replays, advice).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from _scratch import drop_database, fresh_database

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_advice"
REALTRACES = ROOT / "benchmarks" / "data" / "realtraces"
SHARED_CORPUS = Path("/work/shared/corpus/claude_code")
FIXTURE_CORPUS = ROOT / "tests" / "fixtures" / "corpus" / "claude_code"
MIN_CALLS = 5

# Six policies: three hard limits, each keeping the last 2 or 6 steps verbatim; the soft limit
# three quarters of the hard one (as the experiment form does). Cut at steps, since a real
# session often runs one prompt for hundreds of calls.
POLICIES = [
    {
        "hard_limit": hard,
        "soft_limit": int(hard * 0.75),
        "keep_last": keep,
        "unit": "step",
        "stages": ["clear_tool_results", "summarize"],
        "summarizer": "extractive",
    }
    for hard in (40_000, 80_000, 120_000)
    for keep in (2, 6)
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=24, help="at most this many sessions")
    args = parser.parse_args()
    corpus = SHARED_CORPUS if SHARED_CORPUS.is_dir() else FIXTURE_CORPUS
    os.environ.update(
        DATABASE_URL=fresh_database(DB_NAME),
        CELERY_BROKER_URL="memory://localhost//",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()

    from django.core.management import call_command

    from compaction import advice, outbox, pipeline, services
    from compaction.models import ReplayStatus
    from sessions.importers import claude_code
    from sessions.models import AgentSession, Message, Project

    call_command("migrate", verbosity=0)
    figures: dict[str, Any] = {}
    try:
        started = time.perf_counter()
        project = Project.objects.create(name="bench-advice")
        claude_code.claude_code_import(project=project, paths=[REALTRACES, corpus])
        for session in AgentSession.objects.filter(project=project):
            pipeline.session_analyse(session_id=session.pk)
        prepared = time.perf_counter() - started

        candidates = []
        for session in AgentSession.objects.filter(project=project, parent__isnull=True):
            calls = Message.objects.filter(
                session=session, role="assistant", input_tokens__isnull=False
            ).count()
            if calls >= MIN_CALLS:
                candidates.append((calls, session.external_id, session))
        chosen = [s for _, _, s in sorted(candidates, key=lambda c: (-c[0], c[1]))][: args.sessions]
        from unittest import mock

        with mock.patch.object(outbox, "experiment_fan_out"):
            experiment = services.experiment_start(
                project=project,
                name="advice benchmark",
                policies=POLICIES,
                sessions=chosen,
                baselines=True,
            )
        started = time.perf_counter()
        runs = list(experiment.runs.order_by("pk").values_list("pk", flat=True))
        for run_id in runs:
            pipeline.replay_run_execute(run_id=run_id)
        replayed = time.perf_counter() - started
        experiment.refresh_from_db()
        failed = experiment.runs.filter(status=ReplayStatus.FAILED).count()
        calls_replayed = sum(
            r.calls_total for r in experiment.runs.filter(status=ReplayStatus.DONE)
        )

        started = time.perf_counter()
        found = advice.experiment_advice(experiment)
        advised = time.perf_counter() - started
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(DB_NAME)

    print(f"sources: {REALTRACES.relative_to(ROOT)}, {corpus}")
    print(f"{found['sessions']} sessions priced ({found['unpriced_sessions']} unpriced left out)")
    print(
        f"baseline (observed): ${found['baseline']['usd']:.2f}, retention "
        f"{found['baseline']['retention']:.1%}"
    )
    print("policies (usd total, mean retention, overflowed sessions, failed splices, front):")
    for row in found["policies"]:
        mark = "*" if row["on_front"] else " "
        kept = f"{row['retention']:.1%}" if row["retention"] is not None else "  n/a"
        print(
            f" {mark} ${row['usd']:>8.2f}  {kept}  "
            f"{row['overflowed_sessions']:>2}  {row['failed_splices']:>2}  {row['label']}"
        )
    rec = found["recommended"]
    if rec is None:
        print(f"no recommendation: {found['no_recommendation']}")
    else:
        low, high = rec["usd_saved_ci"]
        print(
            f"recommended: {rec['label']}: saves ${rec['usd_saved']:.2f} (90 % CI ${low:.2f} "
            f"to ${high:.2f}) over {rec['sessions']} sessions, keeps {rec['retention']}; lost "
            f"by kind {rec['lost_by_kind']}; worst session {rec['worst_session']}"
        )
    for agent, by in found["recommended_by_agent"].items():
        saying = f"{by['label']} saves ${by['usd_saved']:.2f}" if by else "no recommendation"
        print(f"  for agent {agent or '(none)'}: {saying}")
    figures.update(
        {
            "sources": [str(REALTRACES.relative_to(ROOT)), str(corpus)],
            "sessions": found["sessions"],
            "sessions_unpriced": found["unpriced_sessions"],
            "policies_including_baselines": len(found["policies"]),
            "replays": len(runs),
            "replays_failed": failed,
            "calls_replayed": calls_replayed,
            "front": [row["label"] for row in found["front"]],
            "recommended": rec["label"] if rec else None,
            "no_recommendation": found["no_recommendation"],
            "recommended_usd_saved": rec["usd_saved"] if rec else None,
            "recommended_usd_saved_ci_90": rec["usd_saved_ci"] if rec else None,
            "recommended_retention_fraction": rec["retention"] if rec else None,
            "recommended_lost_facts_by_kind": rec["lost_by_kind"] if rec else None,
            "baseline_usd": found["baseline"]["usd"],
            "baseline_retention_fraction": found["baseline"]["retention"],
            "import_and_analysis_seconds": round(prepared, 2),
            "replays_seconds": round(replayed, 2),
            "advice_seconds": round(advised, 3),
        }
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
