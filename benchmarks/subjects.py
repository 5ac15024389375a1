"""Data-subject requests on PostgreSQL: the cost of the keyed-hash index, a find, an erasure.

A generated coding session (``--turns`` turns of four messages, 4,000-character tool outputs)
with a customer's CPF and e-mail in every 50th prompt is uploaded in batches of 400 messages;
each batch is analysed, as the worker would. Reported: the index's share of the analysis
passes (the full scan of the first pass and the incremental ones), a find through the index,
and an anonymizing erasure of the CPF followed by the rebuild of the analysis. Prints one
JSON line.

    .venv/bin/python benchmarks/subjects.py [--turns 2500]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from _scratch import fresh_database

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_subjects"
CPF = "530.582.439-79"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=2500)
    args = parser.parse_args()

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
    from privacy import subjects
    from sessions import services
    from sessions.models import AgentSession, Project
    from sessions.schemas import EventBatch
    from tests.factories import coding_session_messages

    call_command("migrate", verbosity=0)
    project = Project.objects.create(name="bench")
    messages = coding_session_messages(turns=args.turns, tool_chars=4000)
    for message in messages[::200]:
        message["content"] = f"Cliente CPF {CPF}, e-mail ana.souza@uol.com.br. " + str(
            message["content"]
        )

    index_seconds = 0.0
    real_index = subjects.subject_index_session

    def timed_index(*, session: AgentSession) -> int:
        nonlocal index_seconds
        started = time.perf_counter()
        written = real_index(session=session)
        index_seconds += time.perf_counter() - started
        return written

    subjects.subject_index_session = timed_index  # type: ignore[assignment]
    analysis_seconds = 0.0
    for start in range(0, len(messages), 400):
        services.events_ingest(
            project=project,
            external_id="big",
            batch=EventBatch.model_validate({"messages": messages[start : start + 400]}),
        )
        session = AgentSession.objects.get(project=project, external_id="big")
        started = time.perf_counter()
        pipeline.session_analyse(session_id=session.pk)
        analysis_seconds += time.perf_counter() - started
    subjects.subject_index_session = real_index  # type: ignore[assignment]

    subject = subjects.subject_parse(identifier=CPF)
    started = time.perf_counter()
    report = subjects.subject_find(project=project, subject=subject)
    find_seconds = time.perf_counter() - started

    started = time.perf_counter()
    subjects.subject_erase(project=project, subject=subject, by=None, reason="benchmark")
    erase_seconds = time.perf_counter() - started
    started = time.perf_counter()
    pipeline.session_analyse(session_id=session.pk)
    rebuild_seconds = time.perf_counter() - started
    assert not subjects.subject_find(project=project, subject=subject)["sessions"]

    content_mb = sum(len(json.dumps(m["content"])) for m in messages) / 1e6
    print(
        json.dumps(
            {
                "messages": len(messages),
                "content_mb": round(content_mb, 2),
                "batches": -(-len(messages) // 400),
                "places_found": sum(len(s["places"]) for s in report["sessions"]),
                "analysis_seconds_all_batches": round(analysis_seconds, 2),
                "index_seconds_all_batches": round(index_seconds, 2),
                "find_ms": round(find_seconds * 1000, 1),
                "erase_seconds": round(erase_seconds, 2),
                "rebuild_analysis_seconds": round(rebuild_seconds, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
