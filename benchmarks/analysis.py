"""Benchmark: the analysis of long sessions with many compactions, on PostgreSQL.

For each size (calls and observed compactions, spread evenly, each summarizing what came
since the one before), a generated coding session (benchmarks/replay.py's generator) is
ingested, then analysed through the same service the worker runs: load the rows, run the
engine, store the curve and spans, evaluate the alert rules. Then a last batch of 200 messages
arrives and the pass runs again (``next_batch_seconds``: spans it did not touch keep their
verdicts, new messages alone are scanned). Prints one JSON line with the seconds per size and
the growth per 1,000 calls, which should stay flat (linear cost).

    .venv/bin/python benchmarks/analysis.py [--sizes 5000:75,20000:300]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

from _scratch import drop_database, fresh_database
from replay import generate

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_analysis"
BATCH = 200  # messages in the batch that arrives after the first pass
SUMMARY = (
    "Goal: migrate billing to API v2.\nConstraints:\n- Do not change the public API of "
    "billing/api.py.\nFiles touched: billing/mod_1.py, billing/mod_2.py\nNext steps: continue."
)


def compactions_for(messages: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """``count`` summaries spread over the session, each replacing what the one before kept."""
    prompts = [
        m["seq"]
        for m in messages
        if m["role"] == "user"
        and isinstance(m["content"], list)
        and m["content"]
        and m["content"][0].get("type") == "text"
    ]
    step = max(1, len(prompts) // (count + 1))
    out = []
    start = 2
    for k in range(1, count + 1):
        seq = prompts[min(k * step, len(prompts) - 1)]
        if seq - 8 <= start:
            continue
        out.append(
            {
                "seq": seq,
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": 150_000,
                "tokens_after": 40_000,
                "summary": SUMMARY,
                "replaced": {"from_seq": start, "to_seq": seq - 8},
            }
        )
        start = seq - 7
    return out


def ingest(
    project: Any, external_id: str, messages: list[dict[str, Any]], compactions: list[Any]
) -> None:
    """Upload through the ingest service in batches of 2,000 messages, as a client would."""
    from sessions import services
    from sessions.schemas import EventBatch

    for start in range(0, len(messages), 2000):
        batch = {"messages": messages[start : start + 2000], "compactions": []}
        if start == 0:
            batch["compactions"] = compactions
        services.events_ingest(
            project=project, external_id=external_id, batch=EventBatch.model_validate(batch)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="5000:75,20000:300", help="calls:compactions,...")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--profile", action="store_true", help="print the top 30 cProfile rows")
    args = parser.parse_args()
    sizes = [tuple(int(x) for x in part.split(":")) for part in args.sizes.split(",")]

    os.environ.update(
        DATABASE_URL=fresh_database(DB_NAME),
        CELERY_BROKER_URL="memory://localhost//",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()

    from django.core.management import call_command

    from compaction import pipeline
    from compaction.engine.messages import message_to_wire
    from compaction.models import CompactionSpan
    from sessions.models import AgentSession, Project

    call_command("migrate", verbosity=0)
    project = Project.objects.create(name="bench")
    figures: dict[str, Any] = {}
    per_thousand = []
    try:
        for calls, count in sizes:
            messages = [message_to_wire(m) for m in generate(calls, args.seed)]
            # The last batch (BATCH messages) arrives after the first pass, as from a live agent.
            cut = len(messages) - BATCH
            compactions = [c for c in compactions_for(messages, count) if c["seq"] < cut]
            external_id = f"analysis-{calls}"

            ingest(project, external_id, messages[:cut], compactions)
            session = AgentSession.objects.get(project=project, external_id=external_id)
            profiler = cProfile.Profile() if args.profile else None
            started = time.perf_counter()
            if profiler:
                profiler.enable()
            pipeline.session_analyse(session_id=session.pk)
            seconds = time.perf_counter() - started
            if profiler:
                profiler.disable()
                stats = pstats.Stats(profiler, stream=sys.stderr)
                stats.sort_stats(os.environ.get("PROFILE_SORT", "cumulative")).print_stats(30)
                if os.environ.get("PROFILE_CALLERS"):
                    stats.print_callers(os.environ["PROFILE_CALLERS"])
            spans = CompactionSpan.objects.filter(session=session).count()
            assert spans == len(compactions), (spans, len(compactions))
            ingest(project, external_id, messages[cut:], [])
            started = time.perf_counter()
            pipeline.session_analyse(session_id=session.pk)
            next_batch = time.perf_counter() - started
            figures[f"calls_{calls}_compactions"] = len(compactions)
            figures[f"calls_{calls}_seconds"] = round(seconds, 2)
            figures[f"calls_{calls}_next_batch_seconds"] = round(next_batch, 2)
            per_thousand.append(seconds / calls * 1000)
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(DB_NAME)
    figures["seconds_per_1000_calls_max"] = round(max(per_thousand), 3)
    figures["seconds_per_1000_calls_min"] = round(min(per_thousand), 3)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
