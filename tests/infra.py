"""Servers a test starts and stops itself: Redis, PostgreSQL, gunicorn and Celery workers.

Fault tests stop these mid-run, so they are the test's own (free ports, temporary folders),
never the machine's shared ones. Each class has ``start()``, ``stop()`` and is safe to stop
twice; every process gets its own process group, so stopping takes its children with it.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def hang_guard(what: str, seconds: int = 180) -> Iterator[None]:
    """Raise TimeoutError when the block runs past ``seconds``: a guard against a hang (a
    backtracking pattern on 1 MB takes hours), minutes long, never a measure of speed."""

    def hang(signum: int, frame: object) -> None:
        raise TimeoutError(what)

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_on_cases(
    script: str, cases: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None
) -> str:
    """What ``script`` prints reading ``cases`` (JSON on its stdin) in a child process killed
    past ``timeout`` seconds, so a slow machine cannot fail a linear-time test and a
    backtracking pattern cannot pass it."""
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(list(cases)),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
        env=dict(env) if env is not None else None,
    )
    return done.stdout.strip()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def wait_until(predicate, *, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}")


class Process:
    """A child in its own process group, its output in a log file."""

    def __init__(self, argv: Sequence[str], *, log: Path, env: Mapping[str, str] | None = None):
        self.argv = list(argv)
        self.log = log
        self.env = dict(env or os.environ)
        self.process: subprocess.Popen[bytes] | None = None
        self._out: IO[bytes] | None = None

    def start(self) -> None:
        self._out = self.log.open("ab")
        self.process = subprocess.Popen(
            self.argv,
            cwd=ROOT,
            env=self.env,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> None:
        if self.running():
            assert self.process is not None
            os.killpg(self.process.pid, sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        if self._out is not None:
            self._out.close()
            self._out = None

    def tail(self, chars: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""


class RedisServer:
    """redis-server on a free port with an append-only file, as in docker-compose."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc = Process(
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(folder),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
            ],
            log=folder / "redis.log",
        )

    @staticmethod
    def available() -> bool:
        return shutil.which("redis-server") is not None

    def start(self) -> None:
        self.proc.start()
        wait_until(lambda: port_open(self.port), timeout=20, what="redis-server")

    def stop(self) -> None:
        self.proc.stop()


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


class PostgresServer:
    """A throw-away cluster (initdb + pg_ctl) on a free port, run as ``postgres`` under root."""

    def __init__(self) -> None:
        # Its own folder under /tmp: pytest's tmp_path is private to root, and the server
        # runs as postgres.
        self.folder = Path(tempfile.mkdtemp(prefix="sawtooth-pg-"))
        self.data = self.folder / "pgdata"
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/sawtooth"
        self.bin = _pg_bin()

    @staticmethod
    def available() -> bool:
        return _pg_bin() is not None

    def _run(self, *argv: str, check: bool = True) -> None:
        assert self.bin is not None
        command = [str(self.bin / argv[0]), *argv[1:]]
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if check and done.returncode:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")

    def init(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        self.start()
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "sawtooth")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=on"
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.folder / "pg.log"),
            "-w",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        if self.data.exists() and (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop", check=False)

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.folder, ignore_errors=True)


def app_env(*, database_url: str, broker_url: str, prefix: str, **extra: str) -> dict[str, str]:
    """The environment of a web or worker process of ours, on its own queues."""
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "SAWTOOTH_PRODUCTION": "0",  # a local test server, on this install's own key
        "CELERY_BROKER_URL": broker_url,
        "CELERY_TASK_DEFAULT_QUEUE": prefix,
        "CELERY_ANALYSIS_QUEUE": f"{prefix}.analysis",
        "CELERY_REPLAYS_QUEUE": f"{prefix}.replays",
        "CELERY_WEBHOOKS_QUEUE": f"{prefix}.webhooks",
        "CELERY_IMPORTS_QUEUE": f"{prefix}.imports",
        "SAWTOOTH_VAR_DIR": extra.pop("SAWTOOTH_VAR_DIR", str(ROOT / "var")),
        **extra,
    }


def all_queues(prefix: str) -> list[str]:
    return [
        prefix,
        f"{prefix}.analysis",
        f"{prefix}.replays",
        f"{prefix}.webhooks",
        f"{prefix}.imports",
    ]


def celery_worker(
    env: Mapping[str, str],
    *,
    log: Path,
    queues: Sequence[str],
    concurrency: int = 1,
    beat: bool = False,
    restart: bool = False,
    pool: str | None = None,
) -> Process:
    """A Celery worker. ``restart`` runs it as docker-compose does (``restart: unless-stopped``):
    started again when it exits. kombu 5.7 can exit a worker whose Redis connection drops
    while it holds unacknowledged tasks (AttributeError in restore_unacked); the supervisor
    brings it back and the outbox and the sweeps redo what it held."""
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "-Q",
        ",".join(queues),
        "--concurrency",
        str(concurrency),
        "--loglevel",
        "INFO",
        "--without-gossip",
        "--without-mingle",
        "--hostname",
        f"w{time.monotonic_ns()}@localhost",
    ]
    if pool is not None:  # Celery's default otherwise: prefork
        argv += ["--pool", pool]
    if beat:
        argv += ["--beat", "--schedule", str(log.parent / f"beat-{time.monotonic_ns()}")]
    if restart:  # the loop and the worker share a process group, so stop() ends both
        loop = 'while :; do "$@"; echo "worker exited with $?, restarting"; sleep 1; done'
        argv = ["bash", "-c", loop, "supervisor", *argv]
    return Process(argv, log=log, env=env)


SLOW_ANALYSIS = """
import time
from compaction.engine import analysis as _analysis

_real = _analysis.analyse


def analyse(*args, **kwargs):
    time.sleep({seconds!r})
    return _real(*args, **kwargs)


_analysis.analyse = analyse
"""


def slow_analysis_env(folder: Path, seconds: float) -> dict[str, str]:
    """The environment of a worker whose every analysis pass computes ``seconds`` longer: a
    ``sitecustomize`` module on its PYTHONPATH wraps the engine's ``analyse`` with a sleep.
    The engine is fast on any session a test can store quickly (a long one once re-checked
    every probe at every compaction, which the fault tests leaned on), so a test that needs
    a long pass says so here rather than through the size of its session."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(SLOW_ANALYSIS.format(seconds=seconds))
    root = Path(__file__).resolve().parents[1]
    return {"PYTHONPATH": os.pathsep.join([str(folder), str(root)])}


def celery_beat(env: Mapping[str, str], *, log: Path) -> Process:
    """The one beat process of a deployment, sending the periodic sweeps."""
    argv = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "beat",
        "--loglevel",
        "INFO",
        "--schedule",
        str(log.parent / f"beat-{time.monotonic_ns()}"),
    ]
    return Process(argv, log=log, env=env)


class WebServer:
    """gunicorn serving config.wsgi on a free port of 127.0.0.1."""

    def __init__(self, env: Mapping[str, str], *, log: Path, workers: int = 2) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = Process(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "-c",
                "config/gunicorn.py",
                "config.wsgi:application",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(workers),
                "--timeout",
                "60",
            ],
            log=log,
            env=env,
        )

    def start(self) -> None:
        self.proc.start()
        wait_until(lambda: port_open(self.port), timeout=60, what="gunicorn")

    def stop(self) -> None:
        self.proc.stop()
