"""Live sessions: real Claude Code transcripts replayed line by line into a watched folder,
N sessions at once, and the time from a line written to its message visible through the API.

Starts gunicorn against a scratch PostgreSQL database (no Celery worker: visibility through
the API needs none), then ``python -m compaction.client watch`` on a temporary folder with its
default poll interval, then replays the transcripts: each line is appended at its recorded
pace, sped up ``--speed`` times, no gap longer than ``--max-gap`` seconds, the first
``--lines`` lines of each. Transcripts come from ``tests/fixtures/corpus/claude_code`` (and
from ``/work/shared/corpus/claude_code`` when present, or ``--corpus``); each replay gets a
fresh session id, so one file can feed several sessions.

A poller reads ``GET /api/v1/sessions`` every ``--poll`` seconds and notes when each session's
message count grew. Afterwards every message is read back (``/messages``); its latency is the
first poll that counted it minus the moment the first line with its timestamp was written (so
the poll interval is part of the figure). The watcher's CPU seconds and peak RSS come from
``wait4`` on its process.

With ``--alerts`` it also measures a line written to an alert's webhook received. It starts the
Celery workers as docker-compose.yml does (one on the default, analysis and replays queues with
beat inside it, one on the webhooks queue) and a webhook receiver on 127.0.0.1 (allowed by
``WEBHOOK_ALLOWED_NETWORKS``), and gives the project a webhook and the thresholds
``repeated_compaction_count=1`` (every real compaction opens an alert). Only transcripts that
contain a compaction are replayed, each up to ``--after`` lines past its first compaction: a
session already running when the watcher starts, so the lines before the last ``--lead`` ahead
of the compaction are on disk before the clock starts, and the paced replay begins once their
analyses are done. An alert's cause is the line the rule needed last: for
``repeated_compaction`` the threshold's compaction (its span's first message), otherwise the
latest message its evidence names. The latency is the webhook's arrival minus the moment that
line was written, split into the line visible through the API (ingest), the alert stored
(``opened_at``: the analysis's wait and pass) and the webhook received (outbox, webhooks queue,
POST). Alerts whose cause was written before the clock started are counted, not timed.

    .venv/bin/python benchmarks/live.py [--sessions 20] [--lines 150] [--speed 50] [--alerts]

The last line is JSON, units in the keys.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
from _scratch import celery_worker, drop_database, free_port, fresh_database, manage

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_live"
REDIS_URL = os.environ.get("SAWTOOTH_BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")
FIXTURES = ROOT / "tests" / "fixtures" / "corpus" / "claude_code"
SHARED = Path("/work/shared/corpus/claude_code")

# A watcher status line: "<session>: sent 12,345 bytes in 1 file, ... (0.42s)"
_UPLOAD = re.compile(r": sent ([\d,]+) bytes .*\((\d+\.\d+)s\)$")

_KEY_SCRIPT = """
from sessions import services
project = services.project_create(name="live-bench")
print(services.api_key_create(project=project).raw_key)
"""

# With --alerts: every real compaction opens an alert, and the project's webhook hears of it.
_ALERTS_SCRIPT = """
import os
from alerts import webhooks
from alerts.models import AlertSettings
from sessions.models import Project
project = Project.objects.get(name="live-bench")
AlertSettings.objects.create(project=project, repeated_compaction_count=1)
webhooks.webhook_create(
    project=project, url=os.environ["BENCH_WEBHOOK_URL"], secret="live-bench-secret-0123456789"
)
"""


def _lines(path: Path) -> list[bytes]:
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        return [line for line in fh if line.strip()]


def transcripts(folders: list[Path]) -> list[Path]:
    """Main transcripts (not subagent files), each once (the shared corpus repeats the
    fixtures' files)."""
    found, seen = [], set()
    for folder in folders:
        for path in sorted(folder.rglob("*.jsonl*")):
            if "subagents" in path.parts or path.name.startswith("agent-"):
                continue
            key = (path.name, path.stat().st_size)
            if path.name.endswith((".jsonl", ".jsonl.gz")) and key not in seen:
                seen.add(key)
                found.append(path)
    return found


def _stamp(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _is_compaction(line: bytes) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and (
        record.get("subtype") == "compact_boundary" or record.get("isCompactSummary") is True
    )


def first_compaction(path: Path) -> int | None:
    """The index of the line that opens the transcript's first compaction (its boundary)."""
    return next((i for i, line in enumerate(_lines(path)) if _is_compaction(line)), None)


@dataclass
class Replay:
    """One session to write: its lines with new session ids, and each line's record time.

    ``start``: the lines before it are written before the clock starts (``--alerts``)."""

    session_id: str
    path: Path
    lines: list[bytes]
    stamps: list[datetime | None]
    written: dict[datetime, float] = field(default_factory=dict)
    start: int = 0

    @functools.cached_property
    def preloaded(self) -> set[datetime]:
        return {s for s in self.stamps[: self.start] if s is not None}


def replay_of(source: Path, folder: Path, limit: int, start: int = 0) -> Replay | None:
    lines = _lines(source)[:limit]
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:
            records.append({})
    old_ids = [r["sessionId"] for r in records if isinstance(r.get("sessionId"), str)]
    if not old_ids:
        return None
    renamed = {old: str(uuid.uuid4()) for old in dict.fromkeys(old_ids)}
    new_lines = []
    for line in lines:
        for old, new in renamed.items():
            line = line.replace(old.encode(), new.encode())
        new_lines.append(line if line.endswith(b"\n") else line + b"\n")
    session_id = renamed[old_ids[0]]
    path = folder / f"-bench-{session_id[:8]}" / f"{session_id}.jsonl"
    path.parent.mkdir(parents=True)
    stamps = [_stamp(r.get("timestamp")) for r in records]
    return Replay(session_id, path, new_lines, stamps, start=min(start, len(new_lines)))


def schedule(
    replays: list[Replay], *, speed: float, max_gap: float
) -> Iterator[tuple[float, Replay, int]]:
    """(seconds from start, replay, line index), in time order: the recorded gaps, sped up."""
    events = []
    for replay in replays:
        at, last = 0.0, None
        for i, stamp in enumerate(replay.stamps):
            if i < replay.start:
                last = stamp or last
                continue
            if stamp is not None and last is not None and i > replay.start:
                at += min(max(0.0, (stamp - last).total_seconds()) / speed, max_gap)
            last = stamp or last
            events.append((at, replay, i))
    return iter(sorted(events, key=lambda e: e[0]))


def percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Poller(threading.Thread):
    """Notes, per session, when its message count first reached each value."""

    def __init__(self, base: str, key: str, interval: float) -> None:
        super().__init__(daemon=True)
        self.client = httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30
        )
        self.interval = interval
        self.seen: dict[str, list[float]] = {}  # seen[sid][n] = when count first exceeded n
        self.stop = threading.Event()
        self.requests = 0
        self.errors = 0
        self.took: list[float] = []

    def run(self) -> None:
        while not self.stop.is_set():
            self.poll()
            self.stop.wait(self.interval)

    def poll(self) -> None:
        asked = time.monotonic()
        try:
            answer = self.client.get("/api/v1/sessions", params={"limit": 100}).json()
        except httpx.HTTPError:
            self.errors += 1  # a server too busy to answer in time: the next poll asks again
            return
        self.requests += 1
        now = time.monotonic()
        self.took.append(now - asked)
        for item in answer["sessions"]:
            times = self.seen.setdefault(item["external_id"], [])
            while len(times) < item["message_count"]:
                times.append(now)

    def counts(self) -> dict[str, int]:
        return {sid: len(times) for sid, times in self.seen.items()}


class Receiver(http.server.ThreadingHTTPServer):
    """A webhook receiver on 127.0.0.1: notes when each delivery arrived and its body."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _ReceiverHandler)
        self.arrivals: list[tuple[float, dict[str, Any]]] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/hook"

    def received(self) -> int:
        with self.lock:
            return len(self.arrivals)


class _ReceiverHandler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        arrived = time.monotonic()
        try:
            payload = json.loads(body)
        except ValueError:
            payload = {}
        with self.server.lock:
            self.server.arrivals.append((arrived, payload))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def work_pending(database_url: str) -> int:
    """Analyses asked for and not done, unsent outbox rows and undelivered webhooks."""
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM compaction_sessionanalysis"
            "        WHERE analysed_generation < requested_generation AND status <> 'failed')"
            " + (SELECT count(*) FROM compaction_outboxtask WHERE sent_at IS NULL)"
            " + (SELECT count(*) FROM compaction_webhookdelivery WHERE status = 'pending')"
        ).fetchone()
    return int(row[0]) if row else 0


def all_sent(state: Path, replays: list[Replay]) -> bool:
    """Whether the watcher's state file says every file was sent to its end."""
    try:
        sent = json.loads(state.read_text()).get("files", {})
    except (OSError, ValueError):
        return False
    return all(
        sent.get(str(r.path.resolve())) == r.path.stat().st_size for r in replays if r.path.exists()
    )


def settle(
    poller: Poller,
    interval: float,
    *,
    database_url: str | None,
    limit: float,
    state: Path,
    replays: list[Replay],
) -> None:
    """Until the watcher has sent every file to its end, every session's message count stops
    moving for 10 polls, and (given the database) no work is left for the workers."""
    stable, last = 0, None
    deadline = time.monotonic() + limit
    while stable < 10 and time.monotonic() < deadline:
        time.sleep(interval)
        now_counts = poller.counts()
        idle = all_sent(state, replays) and (
            database_url is None or work_pending(database_url) == 0
        )
        stable = stable + 1 if now_counts == last and idle else 0
        last = now_counts


def alert_cause(alert: dict[str, Any]) -> int | None:
    """The seq of the message the rule needed last (see the module's docstring)."""
    evidence = alert.get("evidence") or {}
    spans = [s for s in evidence.get("spans") or [] if isinstance(s, int)]
    if alert.get("rule") == "repeated_compaction" and spans:
        threshold = int((evidence.get("numbers") or {}).get("threshold") or 1)
        return sorted(spans)[min(len(spans), max(1, threshold)) - 1]
    seqs = [*spans, *(c for c in evidence.get("calls") or [] if isinstance(c, int))]
    if isinstance(evidence.get("seq"), int):
        seqs.append(evidence["seq"])
    return max(seqs, default=None)


def alert_latencies(
    receiver: Receiver,
    replays: list[Replay],
    poller: Poller,
    client: httpx.Client,
    *,
    database_url: str,
    clock_offset: float,
) -> dict[str, Any]:
    """Per alert received: written → visible → stored → received, and the figures."""
    by_session = {r.session_id: r for r in replays}
    with psycopg.connect(database_url) as conn:
        opened = {
            pk: at.timestamp() - clock_offset
            for pk, at in conn.execute("SELECT id, opened_at FROM compaction_alert").fetchall()
        }
    total, ingest, analysis, delivery = [], [], [], []
    rules: dict[str, int] = {}
    before_clock = unmatched = 0
    seen: set[int] = set()
    for arrived, payload in sorted(receiver.arrivals, key=lambda a: a[0]):
        alert = payload.get("alert") or {}
        if payload.get("event") != "alert.opened" or not isinstance(alert.get("id"), int):
            continue
        if alert["id"] in seen:
            continue
        seen.add(alert["id"])
        rules[alert.get("rule", "?")] = rules.get(alert.get("rule", "?"), 0) + 1
        replay = by_session.get(alert.get("session", ""))
        cause = alert_cause(alert)
        if replay is None or cause is None:
            unmatched += 1
            continue
        page = client.get(
            f"/api/v1/sessions/{replay.session_id}/messages",
            params={"offset": cause, "limit": 1},
        ).json()["messages"]
        stamp = _stamp(page[0]["timestamp"]) if page and page[0]["seq"] == cause else None
        written = replay.written.get(stamp) if stamp else None
        if written is None:
            # Its line was on disk before the clock started, or carries no time.
            before_clock += 1
            continue
        total.append(arrived - written)
        seen_at = poller.seen.get(replay.session_id, [])
        if cause < len(seen_at):
            ingest.append(seen_at[cause] - written)
        stored = opened.get(alert["id"])
        if stored is not None:
            if cause < len(seen_at):
                analysis.append(stored - seen_at[cause])
            delivery.append(arrived - stored)

    def figures(name: str, values: list[float]) -> dict[str, float]:
        return {
            f"{name}_p50_s": round(percentile(values, 0.5), 3),
            f"{name}_p95_s": round(percentile(values, 0.95), 3),
            f"{name}_max_s": round(max(values, default=0.0), 3),
        }

    return {
        "alerts_received": len(seen),
        "alerts_timed": len(total),
        "alerts_before_clock": before_clock,
        "alerts_unmatched": unmatched,
        "alert_rules": rules,
        **figures("alert_latency", total),
        **figures("alert_ingest", ingest),
        **figures("alert_analysis", analysis),
        **figures("alert_delivery", delivery),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--lines", type=int, default=150, help="lines replayed per session")
    parser.add_argument("--speed", type=float, default=50.0, help="times the recorded pace")
    parser.add_argument("--max-gap", type=float, default=1.0, help="longest wait, seconds")
    parser.add_argument(
        "--poll", type=float, help="API poll interval, seconds (0.2; 1 with --alerts)"
    )
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--corpus", type=Path, help=f"more transcripts (default {SHARED})")
    parser.add_argument(
        "--alerts", action="store_true", help="also time alerts to a webhook (a Celery worker)"
    )
    parser.add_argument(
        "--lead", type=int, default=60, help="--alerts: lines paced before the compaction"
    )
    parser.add_argument(
        "--after", type=int, default=40, help="--alerts: lines written past the compaction"
    )
    parser.add_argument(
        "--concurrency", type=int, default=2, help="--alerts: analysis worker processes"
    )
    parser.add_argument(
        "--announcers", type=int, default=2, help="--alerts: webhooks worker processes"
    )
    args = parser.parse_args()
    if args.poll is None:
        # A poll of the list costs about 8 ms per session on a busy 2-core machine: every
        # 0.2 s with 20 sessions, it kept one of the two web workers busy, slowing the
        # uploads it measures. An alert's latency is timed by its webhook, not by the poller
        # (which only splits it), so --alerts polls less often.
        args.poll = 1.0 if args.alerts else 0.2

    folders = [FIXTURES]
    extra = args.corpus or SHARED
    if extra.is_dir() and extra.resolve() != FIXTURES.resolve():
        folders.append(extra)
    sources = transcripts(folders)
    compactions: dict[Path, int] = {}
    if args.alerts:
        for source in sources:
            boundary = first_compaction(source)
            if boundary is not None:
                compactions[source] = boundary
        sources = list(compactions)
        if not sources:
            sys.exit("--alerts: no transcript with a compaction")

    database_url = fresh_database(DB_NAME)
    prefix = f"live-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "SAWTOOTH_PRODUCTION": "0",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "CELERY_BROKER_URL": REDIS_URL,
        "CACHE_URL": REDIS_URL,
        "CELERY_TASK_DEFAULT_QUEUE": prefix,
        "CELERY_ANALYSIS_QUEUE": f"{prefix}.analysis",
        "CELERY_REPLAYS_QUEUE": f"{prefix}.replays",
        "CELERY_WEBHOOKS_QUEUE": f"{prefix}.webhooks",
    }
    receiver: Receiver | None = None
    if args.alerts:
        receiver = Receiver()
        receiver.thread.start()
        env["WEBHOOK_ALLOWED_NETWORKS"] = "127.0.0.1/32"
        env["BENCH_WEBHOOK_URL"] = receiver.url
    manage(env, "migrate", "--no-input")
    key = next(k for k in manage(env, "shell", "-c", _KEY_SCRIPT).split() if k.startswith("st_"))
    if args.alerts:
        manage(env, "shell", "-c", _ALERTS_SCRIPT)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "gunicorn", "config.wsgi:application"),
            *("--bind", f"127.0.0.1:{port}", "--workers", str(args.workers)),
            *("--timeout", "300", "--log-level", "warning"),
        ],
        cwd=ROOT,
        env=env,
    )
    watcher: subprocess.Popen[bytes] | None = None
    worker: subprocess.Popen[bytes] | None = None
    announcer: subprocess.Popen[bytes] | None = None
    alert_figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="sawtooth-live-") as tmp:
        folder = Path(tmp) / "projects"
        folder.mkdir()
        replays: list[Replay] = []
        for i in range(args.sessions * 3):
            if len(replays) == args.sessions or not sources:
                break
            source = sources[i % len(sources)]
            if args.alerts:
                boundary = compactions[source]
                limit, start = boundary + 1 + args.after, max(0, boundary - args.lead)
                made = replay_of(source, folder, limit, start)
            else:
                made = replay_of(source, folder, args.lines)
            if made is not None:
                replays.append(made)
        try:
            if args.alerts:
                # As docker-compose.yml runs them: the work and the announcements apart, so a
                # webhook never waits behind analyses; beat beside them (in the first).
                worker = celery_worker(
                    env,
                    [prefix, f"{prefix}.analysis", f"{prefix}.replays"],
                    concurrency=args.concurrency,
                    quiet=True,
                    extra=("-B", "-s", str(Path(tmp) / "beat-schedule")),
                )
                announcer = celery_worker(
                    env, [f"{prefix}.webhooks"], concurrency=args.announcers, quiet=True
                )
            for _ in range(300):
                try:
                    httpx.get(f"{base}/healthz", timeout=1).raise_for_status()
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            log = Path(tmp) / "watch.log"
            state = Path(tmp) / "state.json"
            with log.open("wb") as out:
                watcher = subprocess.Popen(
                    [
                        *(sys.executable, "-m", "compaction.client", "watch", str(folder)),
                        *("--url", base, "--key", key, "--state", str(state)),
                    ],
                    cwd=ROOT,
                    stdout=out,
                    stderr=out,
                )
            poller = Poller(base, key, args.poll)
            poller.start()
            preloaded = 0
            if any(r.start for r in replays):
                # A session already running: its history on disk, uploaded and analysed.
                for replay in replays:
                    with replay.path.open("ab") as history:
                        history.writelines(replay.lines[: replay.start])
                    preloaded += replay.start
                settle(
                    poller,
                    args.poll,
                    database_url=database_url,
                    limit=600,
                    state=state,
                    replays=replays,
                )
            clock_offset = time.time() - time.monotonic()
            started = time.monotonic()
            handles: dict[str, io.BufferedWriter] = {}
            for at, replay, i in schedule(replays, speed=args.speed, max_gap=args.max_gap):
                wait = started + at - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                fh = handles.get(replay.session_id)
                if fh is None:
                    fh = handles[replay.session_id] = replay.path.open("ab")
                fh.write(replay.lines[i])
                fh.flush()
                stamp = replay.stamps[i]
                if stamp is not None and stamp not in replay.written:
                    replay.written[stamp] = time.monotonic()
            for fh in handles.values():
                fh.close()
            replay_seconds = time.monotonic() - started
            # Settle: until every session's count stops moving for a few polls (and with
            # --alerts, the worker has nothing left to do).
            settle(
                poller,
                args.poll,
                database_url=database_url if args.alerts else None,
                limit=300 if args.alerts else 120,
                state=state,
                replays=replays,
            )
            poller.stop.set()
            poller.join()
            watcher.send_signal(signal.SIGINT)
            _, status, usage = os.wait4(watcher.pid, 0)
            watcher.returncode = os.waitstatus_to_exitcode(status)

            latencies: list[float] = []
            matched = unmatched = 0
            client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"})
            if receiver is not None:
                alert_figures = alert_latencies(
                    receiver,
                    replays,
                    poller,
                    client,
                    database_url=database_url,
                    clock_offset=clock_offset,
                )
            for replay in replays:
                times = poller.seen.get(replay.session_id, [])
                offset = 0
                while True:
                    page = client.get(
                        f"/api/v1/sessions/{replay.session_id}/messages",
                        params={"offset": offset, "limit": 1000},
                    )
                    if page.status_code != 200:
                        break
                    messages = page.json()["messages"]
                    for m in messages:
                        stamp = _stamp(m["timestamp"])
                        written = replay.written.get(stamp) if stamp else None
                        if written is None and stamp in replay.preloaded:
                            continue  # on disk before the clock started
                        if written is None or m["seq"] >= len(times):
                            unmatched += 1
                            continue
                        matched += 1
                        latencies.append(times[m["seq"]] - written)
                    if len(messages) < 1000:
                        break
                    offset += 1000
            watch_lines = log.read_text(errors="replace").splitlines()
        finally:
            if watcher is not None and watcher.returncode is None:
                watcher.kill()
                watcher.wait()
            for celery in (worker, announcer):
                if celery is not None:
                    celery.terminate()
                    celery.wait(60)
            if receiver is not None:
                receiver.shutdown()
            server.terminate()
            server.wait(20)
    drop_database(DB_NAME)
    lines_written = sum(len(r.lines) - r.start for r in replays)
    sent = [_UPLOAD.search(line) for line in watch_lines]
    upload_seconds = [float(m.group(2)) for m in sent if m]
    upload_bytes = [int(m.group(1).replace(",", "")) for m in sent if m]
    print(
        json.dumps(
            {
                "sessions": len(replays),
                "lines_written": lines_written,
                "messages_measured": matched,
                "messages_unmatched": unmatched,
                "replay_s": round(replay_seconds, 1),
                "visible_latency_p50_s": round(percentile(latencies, 0.5), 3),
                "visible_latency_p95_s": round(percentile(latencies, 0.95), 3),
                "visible_latency_max_s": round(max(latencies, default=0.0), 3),
                "api_poll_interval_s": args.poll,
                "api_poll_p50_ms": round(percentile(poller.took, 0.5) * 1000, 1),
                "api_poll_errors": poller.errors,
                "watcher_cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                "watcher_peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
                "watcher_uploads": sum(": sent " in line for line in watch_lines),
                "watcher_failed_uploads": sum(": not sent " in line for line in watch_lines),
                "upload_p50_s": round(percentile(upload_seconds, 0.5), 3),
                "upload_p95_s": round(percentile(upload_seconds, 0.95), 3),
                "upload_bytes_total_mb": round(sum(upload_bytes) / 1e6, 1),
                "gunicorn_workers": args.workers,
                **(
                    {
                        "lines_preloaded": preloaded,
                        "analysis_worker_processes": args.concurrency,
                        "webhooks_worker_processes": args.announcers,
                        **alert_figures,
                    }
                    if args.alerts
                    else {}
                ),
            }
        )
    )


if __name__ == "__main__":
    main()
