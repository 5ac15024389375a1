"""Ingest throughput: messages/s and MB/s stored through the HTTP API into PostgreSQL.

Starts gunicorn on loopback against a scratch PostgreSQL database, uploads batches of
realistic messages from a few client threads, and prints one JSON line of figures.

    .venv/bin/python benchmarks/ingest.py [--messages 40000] [--batch 200] [--clients 4]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import redis
from _scratch import free_port, fresh_database, manage

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_ingest"
REDIS_URL = os.environ.get("SAWTOOTH_BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")


def make_batches(total: int, batch: int, sessions: int) -> list[tuple[str, bytes]]:
    rng = random.Random(7)
    words = [
        "the",
        "billing",
        "client",
        "adapter",
        "returns",
        "a",
        "charge",
        "object",
        "with",
        "amount",
        "currency",
    ]
    out: list[tuple[str, bytes]] = []
    per_session = total // sessions
    for s in range(sessions):
        for start in range(0, per_session, batch):
            messages = []
            for seq in range(start, min(start + batch, per_session)):
                if seq % 2 == 0:
                    body = " ".join(rng.choice(words) for _ in range(rng.randint(80, 400)))
                    content = (
                        [
                            {
                                "type": "tool_result",
                                "tool_use_id": f"toolu_{s}_{seq - 1}",
                                "content": body,
                            }
                        ]
                        if seq
                        else body
                    )
                    messages.append({"seq": seq, "role": "user", "content": content})
                else:
                    messages.append(
                        {
                            "seq": seq,
                            "role": "assistant",
                            "content": [
                                {"type": "text", "text": "Reading the next file."},
                                {
                                    "type": "tool_use",
                                    "id": f"toolu_{s}_{seq}",
                                    "name": "read_file",
                                    "input": {"path": f"src/m{seq}.py"},
                                },
                            ],
                            "usage": {"input_tokens": 1000 + seq * 300, "output_tokens": 60},
                        }
                    )
            out.append((f"bench-{s}", json.dumps({"messages": messages}).encode()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--messages", type=int, default=40_000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    # Each stored batch queues its analysis on a real broker, as in production; no worker runs,
    # so the benchmark measures ingest alone. The Redis database is emptied afterwards.
    env = {
        **os.environ,
        "DATABASE_URL": fresh_database(DB_NAME),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "CELERY_BROKER_URL": REDIS_URL,
        "SAWTOOTH_PRODUCTION": "0",  # a local benchmark server, on this install's own key
    }
    manage(env, "migrate", "--no-input")
    manage(env, "createproject", "bench")
    key = manage(env, "createapikey", "bench").splitlines()[-1]

    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(args.workers),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                httpx.get(f"{base}/healthz", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        # One session per client so that batches of one session arrive in order.
        batches = make_batches(args.messages, args.batch, sessions=args.clients)
        by_session: dict[str, list[bytes]] = {}
        for external_id, body in batches:
            by_session.setdefault(external_id, []).append(body)
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

        def upload(external_id: str) -> int:
            stored = 0
            with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
                for body in by_session[external_id]:
                    response = client.post(f"/api/v1/sessions/{external_id}/events", content=body)
                    response.raise_for_status()
                    stored += response.json()["received"]
            return stored

        started = time.perf_counter()
        with ThreadPoolExecutor(args.clients) as pool:
            stored = sum(pool.map(upload, by_session))
        seconds = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(10)
        redis.Redis.from_url(REDIS_URL).flushdb()
    payload_mb = sum(len(body) for _, body in batches) / 1e6
    print(
        json.dumps(
            {
                "messages": stored,
                "batch_size": args.batch,
                "clients": args.clients,
                "gunicorn_workers": args.workers,
                "payload_mb": round(payload_mb, 2),
                "seconds": round(seconds, 2),
                "messages_per_s": round(stored / seconds),
                "mb_per_s": round(payload_mb / seconds, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
