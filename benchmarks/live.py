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

    .venv/bin/python benchmarks/live.py [--sessions 20] [--lines 150] [--speed 50]

The last line is JSON, units in the keys.
"""

from __future__ import annotations

import argparse
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

import httpx
from _scratch import drop_database, free_port, fresh_database, manage

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


def _lines(path: Path) -> list[bytes]:
    import gzip

    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as fh:
        return [line for line in fh if line.strip()]


def transcripts(folders: list[Path]) -> list[Path]:
    """Main transcripts (not subagent files) with at least a few lines."""
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("*.jsonl*")):
            if "subagents" in path.parts or path.name.startswith("agent-"):
                continue
            if path.name.endswith((".jsonl", ".jsonl.gz")):
                found.append(path)
    return found


def _stamp(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass
class Replay:
    """One session to write: its lines with new session ids, and each line's record time."""

    session_id: str
    path: Path
    lines: list[bytes]
    stamps: list[datetime | None]
    written: dict[datetime, float] = field(default_factory=dict)


def replay_of(source: Path, folder: Path, limit: int) -> Replay | None:
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
    return Replay(session_id, path, new_lines, [_stamp(r.get("timestamp")) for r in records])


def schedule(
    replays: list[Replay], *, speed: float, max_gap: float
) -> Iterator[tuple[float, Replay, int]]:
    """(seconds from start, replay, line index), in time order: the recorded gaps, sped up."""
    events = []
    for replay in replays:
        at, last = 0.0, None
        for i, stamp in enumerate(replay.stamps):
            if stamp is not None and last is not None:
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

    def run(self) -> None:
        while not self.stop.is_set():
            self.poll()
            self.stop.wait(self.interval)

    def poll(self) -> None:
        answer = self.client.get("/api/v1/sessions", params={"limit": 100}).json()
        self.requests += 1
        now = time.monotonic()
        for item in answer["sessions"]:
            times = self.seen.setdefault(item["external_id"], [])
            while len(times) < item["message_count"]:
                times.append(now)

    def counts(self) -> dict[str, int]:
        return {sid: len(times) for sid, times in self.seen.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--lines", type=int, default=150, help="lines replayed per session")
    parser.add_argument("--speed", type=float, default=50.0, help="times the recorded pace")
    parser.add_argument("--max-gap", type=float, default=1.0, help="longest wait, seconds")
    parser.add_argument("--poll", type=float, default=0.2, help="API poll interval, seconds")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--corpus", type=Path, help=f"more transcripts (default {SHARED})")
    args = parser.parse_args()

    folders = [FIXTURES]
    extra = args.corpus or SHARED
    if extra.is_dir():
        folders.append(extra)
    sources = transcripts(folders)

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
    manage(env, "migrate", "--no-input")
    key = next(k for k in manage(env, "shell", "-c", _KEY_SCRIPT).split() if k.startswith("st_"))
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
    with tempfile.TemporaryDirectory(prefix="sawtooth-live-") as tmp:
        folder = Path(tmp) / "projects"
        folder.mkdir()
        replays: list[Replay] = []
        for i in range(args.sessions * 3):
            if len(replays) == args.sessions or not sources:
                break
            made = replay_of(sources[i % len(sources)], folder, args.lines)
            if made is not None:
                replays.append(made)
        try:
            for _ in range(300):
                try:
                    httpx.get(f"{base}/healthz", timeout=1).raise_for_status()
                    break
                except httpx.HTTPError:
                    time.sleep(0.1)
            log = Path(tmp) / "watch.log"
            with log.open("wb") as out:
                watcher = subprocess.Popen(
                    [
                        *(sys.executable, "-m", "compaction.client", "watch", str(folder)),
                        *("--url", base, "--key", key, "--state", str(Path(tmp) / "state.json")),
                    ],
                    cwd=ROOT,
                    stdout=out,
                    stderr=out,
                )
            poller = Poller(base, key, args.poll)
            poller.start()
            started = time.monotonic()
            handles = {}
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
            # Settle: until every session's count stops moving for a few polls.
            stable, last = 0, None
            deadline = time.monotonic() + 120
            while stable < 10 and time.monotonic() < deadline:
                time.sleep(args.poll)
                now_counts = poller.counts()
                stable = stable + 1 if now_counts == last else 0
                last = now_counts
            poller.stop.set()
            poller.join()
            watcher.send_signal(signal.SIGINT)
            _, status, usage = os.wait4(watcher.pid, 0)
            watcher.returncode = os.waitstatus_to_exitcode(status)

            latencies: list[float] = []
            matched = unmatched = 0
            client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"})
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
            server.terminate()
            server.wait(20)
    drop_database(DB_NAME)
    lines_written = sum(len(r.lines) for r in replays)
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
                "watcher_cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                "watcher_peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
                "watcher_uploads": sum(": sent " in line for line in watch_lines),
                "watcher_failed_uploads": sum(": not sent " in line for line in watch_lines),
                "upload_p50_s": round(percentile(upload_seconds, 0.5), 3),
                "upload_p95_s": round(percentile(upload_seconds, 0.95), 3),
                "upload_bytes_total_mb": round(sum(upload_bytes) / 1e6, 1),
                "gunicorn_workers": args.workers,
            }
        )
    )


if __name__ == "__main__":
    main()
