"""Scale: do ingest, session fetch, search and an analysis pass stay flat as the data grows?

Measures each figure on an empty database, prefills it by the fastest path to `--sessions`
sessions of `--messages` messages each (1,000,000 stored messages by default: a few
analysed template sessions, then SQL that copies their rows, search documents included, in
chunks), measures the same figures again, and times a retention purge of one day of sessions
(the prefill spreads sessions over 30 days). Table and index sizes give the growth per
message, and from it what 10 million messages would take on disk.

Figures (PostgreSQL, in-process through Django's full stack with key auth):
- ingest: messages per second stored by the events door's service, a new session each batch
  (the median of `--rounds` rounds of 2,000 messages);
- fetch p95: ``GET /api/v1/sessions/{id}/messages`` of random sessions;
- search p95: ``GET /api/v1/search`` for a rare word, a common word and a phrase;
- analysis: a pass over a fresh 400-message session (the median of `--rounds`).
Prints progress on stderr and one JSON line; `*_ratio` is full / empty (lower is better for
times), the issue's goal is that none degrades by more than 20 %.

    .venv/bin/python benchmarks/scale.py [--sessions 20000] [--messages 50]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from _scratch import fresh_database
from _text import vocabulary, words

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_scale"
RARE = "QuotaExceededError"
TEMPLATES = 40
INGEST_SESSIONS = 10
INGEST_MESSAGES = 200
ANALYSIS_MESSAGES = 400


def log(text: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def wire_messages(rng: random.Random, vocab: list[str], count: int) -> list[dict[str, Any]]:
    """A coding run in wire format: a prompt, then tool calls, their results and usage."""
    out: list[dict[str, Any]] = [{"seq": 0, "role": "user", "content": words(rng, vocab, 30)}]
    context = 3000
    for seq in range(1, count):
        if seq % 2:
            context += 400
            out.append(
                {
                    "seq": seq,
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": words(rng, vocab, 20)},
                        {
                            "type": "tool_use",
                            "id": f"toolu_{seq}",
                            "name": "read_file",
                            "input": {"path": f"src/{vocab[rng.randrange(300)]}.py"},
                        },
                    ],
                    "usage": {
                        "input_tokens": 20,
                        "output_tokens": 60,
                        "cache_read_input_tokens": context,
                    },
                }
            )
        else:
            text = words(rng, vocab, 150)
            if rng.random() < 0.002:
                text += f" raise {RARE}: monthly quota exhausted"
            out.append(
                {
                    "seq": seq,
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"toolu_{seq - 1}", "content": text}
                    ],
                }
            )
    return out


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--messages", type=int, default=50, help="messages per session")
    parser.add_argument("--requests", type=int, default=60, help="fetches and searches timed")
    parser.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="ingest rounds of 2,000 messages and analysis passes (medians)",
    )
    args = parser.parse_args()

    os.environ.update(
        DATABASE_URL=fresh_database(DB_NAME),
        CELERY_BROKER_URL="memory://localhost//",
        DJANGO_SETTINGS_MODULE="config.settings",
        DJANGO_ALLOWED_HOSTS="testserver",
        SAWTOOTH_RATE_LIMIT_PER_MINUTE="1000000",
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction
    from django.test import Client
    from django.utils import timezone

    from compaction import pipeline
    from sessions import services
    from sessions.models import AgentSession, Project
    from sessions.schemas import EventBatch

    call_command("migrate", verbosity=0)
    project = Project.objects.create(name="bench")
    key = services.api_key_create(project=project).raw_key
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")
    rng = random.Random(29)
    vocab = vocabulary(rng)
    made = 0

    def ingest(prefix: str, count: int) -> AgentSession:
        nonlocal made
        made += 1
        external_id = f"{prefix}-{made:06d}"
        services.events_ingest(
            project=project,
            external_id=external_id,
            batch=EventBatch.model_validate({"messages": wire_messages(rng, vocab, count)}),
        )
        return AgentSession.objects.get(project=project, external_id=external_id)

    def get(url: str) -> float:
        started = time.perf_counter()
        response = client.get(url)
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, (url, response.status_code, response.content[:300])
        return elapsed

    def measure(label: str) -> dict[str, float]:
        rates = []
        for _ in range(args.rounds):
            started = time.perf_counter()
            for _ in range(INGEST_SESSIONS):
                ingest(f"ingest-{label}", INGEST_MESSAGES)
            rates.append(INGEST_SESSIONS * INGEST_MESSAGES / (time.perf_counter() - started))
        passes = []
        for _ in range(args.rounds):
            fresh = ingest(f"analyse-{label}", ANALYSIS_MESSAGES)
            started = time.perf_counter()
            pipeline.session_analyse(session_id=fresh.pk)
            passes.append(time.perf_counter() - started)
        ids = list(
            AgentSession.objects.filter(project=project).values_list("external_id", flat=True)
        )
        sample = random.Random(7).sample(ids, min(args.requests, len(ids)))
        fetch = [get(f"/api/v1/sessions/{e}/messages?limit=100") for e in sample]
        queries = [RARE, vocab[3], f'"{vocab[0]} {vocab[1]}"']
        search = [
            get(f"/api/v1/search?q={queries[i % len(queries)]}&kind=message&limit=20")
            for i in range(args.requests)
        ]
        figures = {
            "ingest_messages_per_s": round(statistics.median(rates)),
            "fetch_p95_ms": round(p95(fetch), 1),
            "fetch_median_ms": round(statistics.median(fetch), 1),
            "search_p95_ms": round(p95(search), 1),
            "search_median_ms": round(statistics.median(search), 1),
            "analysis_seconds": round(statistics.median(passes), 3),
        }
        log(f"{label}: {figures}")
        return figures

    def sizes() -> tuple[int, int]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_total_relation_size('traces_message'), count(*) FROM traces_message"
            )
            total, count = cursor.fetchone()
        return int(total), int(count)

    log(f"templates: {TEMPLATES} sessions of {args.messages} messages, analysed (searchable)")
    templates = [ingest("template", args.messages) for _ in range(TEMPLATES)]
    for session in templates:
        pipeline.session_analyse(session_id=session.pk)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    empty = measure("empty")
    bytes_before, messages_before = sizes()

    # The fastest path to a large database: copy the analysed templates' rows in SQL.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
            "AND is_generated = 'NEVER' AND column_name NOT IN ('id', 'session_id')",
            ["traces_message"],
        )
        message_columns = [row[0] for row in cursor.fetchall()]
        cursor.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = %s AND "
            "column_name NOT IN ('id', 'external_id', 'started_at', 'updated_at', 'parent_id')",
            ["traces_agentsession"],
        )
        session_columns = [row[0] for row in cursor.fetchall()]
    template_ids = [s.pk for s in templates]
    chunk = 2000
    started = time.perf_counter()
    for first in range(0, args.sessions, chunk):
        last = min(args.sessions, first + chunk)
        with transaction.atomic(), connection.cursor() as cursor:
            cols = ", ".join(f'"{c}"' for c in session_columns)
            picked = ", ".join(f't."{c}"' for c in session_columns)
            # the column names come from information_schema, the values are parameters
            cursor.execute(
                f"INSERT INTO traces_agentsession ({cols}, external_id, started_at, updated_at) "  # noqa: S608
                f"SELECT {picked}, 'fill-' || g, now() - (g %% 30) * interval '1 day', "
                f"now() - (g %% 30) * interval '1 day' "
                f"FROM generate_series(%s, %s) g JOIN traces_agentsession t "
                f"ON t.id = (%s::bigint[])[1 + g %% %s] ",
                [first, last - 1, template_ids, len(template_ids)],
            )
            mcols = ", ".join(f'"{c}"' for c in message_columns)
            mpicked = ", ".join(f'm."{c}"' for c in message_columns)
            cursor.execute(
                f"INSERT INTO traces_message ({mcols}, session_id) "  # noqa: S608
                f"SELECT {mpicked}, s.id FROM traces_agentsession s "
                f"JOIN traces_message m ON m.session_id = "
                f"(%s::bigint[])[1 + substr(s.external_id, 6)::int %% %s] "
                f"WHERE s.project_id = %s AND s.external_id LIKE 'fill-%%' "
                f"AND substr(s.external_id, 6)::int BETWEEN %s AND %s",
                [template_ids, len(template_ids), project.pk, first, last - 1],
            )
        took = time.perf_counter() - started
        log(f"prefill: {last:,} of {args.sessions:,} sessions, {took:.0f} s")
    prefill_seconds = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
        # The prefill's dirty pages written out now, not during the timed ingest.
        cursor.execute("CHECKPOINT")
    bytes_after, messages_after = sizes()
    full = measure("full")

    # Retention: a project keeping 29 days deletes the sessions of its 30th day.
    Project.objects.filter(pk=project.pk).update(retention_days=29)
    cutoff = timezone.now() - timedelta(days=29)
    day = AgentSession.objects.filter(project=project, updated_at__lt=cutoff).count()
    started = time.perf_counter()
    purged = 0
    while deleted := services.sessions_purge_expired(limit=500):
        purged += deleted
    purge_seconds = time.perf_counter() - started

    per_message = (bytes_after - bytes_before) / max(1, messages_after - messages_before)
    result: dict[str, float | int] = {
        "sessions": AgentSession.objects.filter(project=project).count() + purged,
        "messages": messages_after,
        "prefill_seconds": round(prefill_seconds, 1),
        **{f"empty_{k}": v for k, v in empty.items()},
        **{f"full_{k}": v for k, v in full.items()},
        "ingest_slowdown_ratio": round(
            empty["ingest_messages_per_s"] / full["ingest_messages_per_s"], 2
        ),
        "fetch_p95_ratio": round(full["fetch_p95_ms"] / empty["fetch_p95_ms"], 2),
        "search_p95_ratio": round(full["search_p95_ms"] / empty["search_p95_ms"], 2),
        "analysis_ratio": round(full["analysis_seconds"] / empty["analysis_seconds"], 2),
        "purge_day_sessions": day,
        "purge_day_seconds": round(purge_seconds, 1),
        "message_table_mb": round(bytes_after / 1e6, 1),
        "bytes_per_message": round(per_message),
        "ten_million_messages_gb": round(per_message * 10_000_000 / 1e9, 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
