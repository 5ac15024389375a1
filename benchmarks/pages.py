"""Server time and page weight of the heaviest pages, on PostgreSQL.

- the session page of a generated 5,000-call session (10,000 messages, large tool outputs,
  three observed compactions) and its largest span page;
- the session list with 10,000 sessions.

Requests go through Django's full stack in-process (middleware, auth, templates); page weight
is the HTML plus every static file the page loads. Prints one JSON line.

    .venv/bin/python benchmarks/pages.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

from _scratch import fresh_database

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_pages"


def timed(client, url: str, repeat: int) -> tuple[float, int, str]:
    times = []
    body = b""
    for _ in range(repeat):
        started = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - started)
        assert response.status_code == 200, (url, response.status_code)
        body = response.content
    return statistics.median(times) * 1000, len(body), body.decode()


def static_weight(html: str) -> int:
    total = 0
    for path in re.findall(r'(?:src|href)="/static/([^"]+)"', html):
        total += (ROOT / "static" / path).stat().st_size
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--sessions", type=int, default=10_000)
    args = parser.parse_args()

    os.environ.update(
        DATABASE_URL=fresh_database(DB_NAME),
        CELERY_BROKER_URL="memory://localhost//",
        DJANGO_SETTINGS_MODULE="config.settings",
        DJANGO_ALLOWED_HOSTS="testserver",
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()

    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from django.utils import timezone

    from compaction import pipeline
    from compaction.models import CompactionSpan, SessionAnalysis
    from sessions import services
    from sessions.models import AgentSession, Membership, Project
    from sessions.schemas import EventBatch
    from tests.factories import coding_session_messages

    call_command("migrate", verbosity=0)
    project = Project.objects.create(name="bench")
    user = get_user_model().objects.create_user("bench", password="bench-password-1")
    Membership.objects.create(user=user, project=project, role="engineer")

    turns = args.calls // 2
    messages = coding_session_messages(turns=turns, tool_chars=4000)
    third = len(messages) // 4
    compactions = [
        {
            "seq": k * third,
            "trigger": "auto",
            "strategy": "summarize",
            "tokens_before": 150_000,
            "tokens_after": 40_000,
            "summary": "Goal: migrate billing.\nConstraints:\n- keep the API",
            "replaced": {"from_seq": (k - 1) * third + 1 if k > 1 else 1, "to_seq": k * third - 8},
        }
        for k in (1, 2, 3)
    ]
    for start in range(0, len(messages), 2000):
        services.events_ingest(
            project=project,
            external_id="big-session",
            batch=EventBatch.model_validate(
                {
                    "messages": messages[start : start + 2000],
                    "compactions": compactions if start == 0 else [],
                }
            ),
        )
    big = AgentSession.objects.get(external_id="big-session")
    started = time.perf_counter()
    pipeline.session_analyse(session_id=big.pk)
    analysis_seconds = time.perf_counter() - started
    largest = max(
        CompactionSpan.objects.filter(session=big),
        key=lambda s: (s.replaced_to_seq or 0) - (s.replaced_from_seq or 0),
    )

    # The list: many sessions, each with an analysis (sparkline and flags).
    spark = [round(i / 48, 3) for i in range(48)]
    now = timezone.now()
    rows = AgentSession.objects.bulk_create(
        [
            AgentSession(
                project=project,
                external_id=f"run-{i:05d}",
                agent=f"agent-{i % 7}",
                model="claude-opus-4-6",
                message_count=200,
                compaction_count=i % 3,
                started_at=now,
                updated_at=now,
            )
            for i in range(args.sessions)
        ],
        batch_size=2000,
    )
    SessionAnalysis.objects.bulk_create(
        [
            SessionAnalysis(
                session=s,
                status="done",
                sparkline=spark,
                peak_fill=0.5,
                call_count=100,
                requested_generation=1,
                analysed_generation=1,
            )
            for s in rows
        ],
        batch_size=2000,
    )

    client = Client()
    client.force_login(user)
    session_ms, session_html_bytes, session_html = timed(
        client, f"/sessions/{big.pk}/", args.repeat
    )
    span_ms, span_html_bytes, span_html = timed(client, largest.get_absolute_url(), args.repeat)
    list_ms, list_bytes, _ = timed(client, "/", args.repeat)
    filtered_ms, _, _ = timed(client, "/?agent=agent-3&compacted=yes&sort=-peak", args.repeat)

    def mb(n: int) -> float:
        return round(n / 1e6, 3)

    print(
        json.dumps(
            {
                "session_calls": big.analysis.call_count,
                "session_messages": big.message_count,
                "analysis_seconds": round(analysis_seconds, 2),
                "session_page_ms_median": round(session_ms, 1),
                "session_page_mb": mb(session_html_bytes + static_weight(session_html)),
                "session_html_mb": mb(session_html_bytes),
                "span_replaced_messages": largest.replaced_to_seq - largest.replaced_from_seq + 1,
                "span_page_ms_median": round(span_ms, 1),
                "span_page_mb": mb(span_html_bytes + static_weight(span_html)),
                "list_sessions": args.sessions + 1,
                "list_page_ms_median": round(list_ms, 1),
                "list_filtered_ms_median": round(filtered_ms, 1),
                "list_html_mb": mb(list_bytes),
            }
        )
    )


if __name__ == "__main__":
    main()
