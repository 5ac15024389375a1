"""Benchmark: how soon the work of a killed worker runs again, on the default liveness settings.

Starts beat and two `celery worker` processes (Redis broker, PostgreSQL) as a deployment
would, ingests a generated session (benchmarks/replay.py's generator, with compactions as in
benchmarks/analysis.py), runs the work once uninterrupted, then, --kills times: asks for it
(--work analysis: the session's analysis; --work replay: a new replay run of the session),
waits until a worker runs it, SIGKILLs that worker with its pool, and times until the other
worker has taken the work up (``recovered``) and until it is done (``done``); the killed
worker is restarted before the next round. Prints one JSON line.

    .venv/bin/python benchmarks/recovery.py [--work analysis|replay] [--kills 5] [--calls 20000]

At 20,000 calls either work lasts seconds (a replay about 6 s on two cores), so the kill,
made as soon as the work is seen running, lands mid-run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import IO, Any

from _scratch import drop_database, fresh_database
from analysis import compactions_for
from replay import generate

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_recovery"
REDIS_URL = os.environ.get("SAWTOOTH_BENCH_REDIS_URL", "redis://127.0.0.1:6379/14")
# The policy of benchmarks/replay.py: a 10,000-call session compacts dozens of times under it.
REPLAY_POLICY = {"soft_limit": 90_000, "hard_limit": 120_000, "keep_last": 6}


class Work:
    """One kind of work to kill mid-run: how to ask for it and how to see it taken up."""

    task = ""  # the Celery task's name, as the worker logs it

    def request(self) -> None:
        raise NotImplementedError

    def status(self) -> str:
        raise NotImplementedError

    def attempt(self) -> Any:
        """What changes when a worker (re)starts the work."""
        raise NotImplementedError

    def taken_up(self, attempt: Any) -> bool:
        """Another worker runs it since ``attempt`` (or has even finished it)."""
        return self.status() == "done" or (self.status() == "running" and self.attempt() != attempt)


class Analysis(Work):
    task = "session_analyse"

    def __init__(self, session_id: int) -> None:
        from compaction.models import SessionAnalysis

        self.session_id = session_id
        self.row = SessionAnalysis.objects.filter(session_id=session_id)

    def request(self) -> None:
        from compaction import services

        services.analysis_request(session_id=self.session_id)

    def status(self) -> str:
        return str(self.row.values_list("status", flat=True).get())

    def attempt(self) -> Any:
        return self.row.values_list("started_at", flat=True).get()


class Replay(Work):
    task = "replay_run_execute"

    def __init__(self, session: Any) -> None:
        from compaction.models import ReplayRun

        self.session = session
        self.runs = ReplayRun.objects.none()

    def request(self) -> None:
        from compaction import services
        from compaction.models import ReplayRun

        run = services.replay_run_start(session=self.session, policy=REPLAY_POLICY)
        self.runs = ReplayRun.objects.filter(pk=run.pk)

    def status(self) -> str:
        return str(self.runs.values_list("status", flat=True).get())

    def attempt(self) -> Any:
        return self.runs.values_list("attempts", flat=True).get()


def task_lines(task: str, event: str) -> re.Pattern[str]:
    return re.compile(rf"Task compaction\.tasks\.{task}\[[^\]]+\] {event}")


class Celery:
    """A `celery` process of ours in its own process group, its output in a log file."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self.argv = [sys.executable, "-m", "celery", "-A", "config", *argv]
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self.out: IO[bytes] | None = None

    def start(self) -> None:
        self.out = self.log.open("ab")
        self.process = subprocess.Popen(
            self.argv,
            cwd=ROOT,
            env=os.environ.copy(),
            stdout=self.out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, earlier_starts: int) -> None:
        """Until the log says "ready." once more than ``earlier_starts`` times."""
        wait_for(lambda: self.text().count(" ready.") > earlier_starts, timeout=60, what="a worker")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            self.process.wait(30)
        if self.out is not None:
            self.out.close()
            self.out = None


def wait_for(predicate: Callable[[], bool], *, timeout: float, what: str) -> float:
    """Poll until ``predicate`` holds; returns the monotonic time it was first seen."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic()
        time.sleep(0.05)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", choices=("analysis", "replay"), default="analysis")
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    queue = f"bench-{uuid.uuid4().hex[:8]}"
    os.environ.update(
        DATABASE_URL=fresh_database(DB_NAME),
        CELERY_BROKER_URL=REDIS_URL,
        CELERY_TASK_DEFAULT_QUEUE=queue,
        CELERY_ANALYSIS_QUEUE=f"{queue}.analysis",
        CELERY_REPLAYS_QUEUE=f"{queue}.replays",
        CELERY_WEBHOOKS_QUEUE=f"{queue}.webhooks",
        DJANGO_SETTINGS_MODULE="config.settings",
        SAWTOOTH_PRODUCTION="0",  # local benchmark processes, on this install's own key
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections

    from compaction.engine.messages import message_to_wire
    from sessions import services
    from sessions.models import Project
    from sessions.schemas import EventBatch

    call_command("migrate", verbosity=0)
    project = Project.objects.create(name="bench")
    messages = [message_to_wire(m) for m in generate(args.calls, args.seed)]
    compactions = compactions_for(messages, max(1, args.calls // 70))
    for start in range(0, len(messages), 2000):
        result = services.events_ingest(
            project=project,
            external_id="recovery",
            batch=EventBatch.model_validate(
                {
                    "messages": messages[start : start + 2000],
                    "compactions": compactions if start == 0 else [],
                }
            ),
        )
    session = result.session
    from config.celery import app

    app.control.purge()  # ingest asked for an analysis per batch: the runs below are counted
    work: Work = Analysis(session.pk) if args.work == "analysis" else Replay(session)
    received_line = task_lines(work.task, "received")
    succeeded_line = task_lines(work.task, "succeeded")

    queues = ",".join([queue, f"{queue}.analysis", f"{queue}.replays", f"{queue}.webhooks"])
    figures: dict[str, Any] = {}
    with TemporaryDirectory() as folder:
        beat = Celery(
            ["beat", "--loglevel", "INFO", "--schedule", f"{folder}/beat-schedule"],
            Path(folder) / "beat.log",
        )
        workers = [
            Celery(
                [
                    *("worker", "-Q", queues, "--concurrency", "1", "--loglevel", "INFO"),
                    *("--without-gossip", "--without-mingle", "--hostname", f"w{n}-{queue}@bench"),
                ],
                Path(folder) / f"worker-{n}.log",
            )
            for n in range(2)
        ]
        recovered: list[float] = []
        done: list[float] = []
        killed_mid_task = dict.fromkeys(workers, 0)

        def received() -> list[int]:
            return [len(received_line.findall(w.text())) for w in workers]

        def idle() -> bool:
            """Every task of the work a worker received has ended."""
            return all(
                len(received_line.findall(w.text()))
                == len(succeeded_line.findall(w.text())) + killed_mid_task[w]
                for w in workers
            )

        try:
            for proc in (beat, *workers):
                proc.start()
            for worker in workers:
                worker.wait_ready(0)
            if args.work == "replay":
                # The session's own analysis first, so it never runs in the middle of a round.
                analysis = Analysis(session.pk)
                analysis.request()
                wait_for(lambda: analysis.status() == "done", timeout=300, what="the analysis")
            # One uninterrupted run first: what the work costs on its own, and proof that
            # the sweeps running meanwhile leave a live worker's work alone.
            before = sum(received())
            work.request()
            started = wait_for(lambda: work.status() == "running", timeout=60, what="a start")
            figures[f"{args.work}_seconds"] = round(
                wait_for(lambda: work.status() == "done", timeout=600, what="the work") - started,
                2,
            )
            wait_for(idle, timeout=300, what="idle workers")
            figures[f"{args.work}_runs_without_a_kill"] = sum(received()) - before
            for _ in range(args.kills):
                wait_for(idle, timeout=300, what="idle workers")
                before_round = received()
                work.request()
                wait_for(lambda: work.status() == "running", timeout=60, what="a start")
                (victim,) = [
                    w for w, n, m in zip(workers, before_round, received(), strict=True) if m > n
                ]
                first_attempt = work.attempt()
                victim.stop(signal.SIGKILL)
                killed = time.monotonic()
                killed_mid_task[victim] += 1
                if work.status() != "running":
                    raise RuntimeError("the work finished before the kill: use more --calls")

                def taken_up(first_attempt: Any = first_attempt) -> bool:
                    return work.taken_up(first_attempt)

                recovered.append(wait_for(taken_up, timeout=120, what="recovery") - killed)
                done.append(
                    wait_for(lambda: work.status() == "done", timeout=600, what="done") - killed
                )
                starts = victim.text().count(" ready.")
                victim.start()
                victim.wait_ready(starts)
        finally:
            for proc in (*workers, beat):
                proc.stop()
            connections.close_all()
            drop_database(DB_NAME)
    figures.update(
        {
            "work": args.work,
            "kills": len(recovered),
            "calls": args.calls,
            "worker_dead_seconds": settings.WORKER_DEAD_SECONDS,
            "abandoned_work_requeue_every_seconds": settings.ABANDONED_WORK_REQUEUE_EVERY_SECONDS,
            "recovered_seconds_median": round(statistics.median(recovered), 2),
            "recovered_seconds_max": round(max(recovered), 2),
            "done_seconds_median": round(statistics.median(done), 2),
            "done_seconds_max": round(max(done), 2),
        }
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
