"""A scratch PostgreSQL database for a benchmark, dropped and created anew on each run, and
the helpers benchmarks that start their own servers share (a free port, manage.py).

SAWTOOTH_BENCH_DB_SUFFIX, when set, is appended to every name, so that two checkouts on one
server can run benchmarks at the same time without dropping each other's database.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import psycopg

ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"
ROOT = Path(__file__).resolve().parent.parent


def _named(name: str) -> str:
    return name + os.environ.get("SAWTOOTH_BENCH_DB_SUFFIX", "")


def _drop(full_name: str) -> None:
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {full_name} WITH (FORCE)")


def fresh_database(name: str) -> str:
    """Recreate database `name` and return its URL."""
    full_name = _named(name)
    _drop(full_name)
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {full_name}")
    return f"postgres://postgres@127.0.0.1:5432/{full_name}"


def drop_database(name: str) -> None:
    _drop(_named(name))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def manage(env: dict[str, str], *args: str) -> str:
    """Run ``manage.py`` with ``env`` and return what it printed."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def celery_worker(
    env: dict[str, str],
    queues: list[str],
    *,
    concurrency: int,
    quiet: bool = False,
    extra: tuple[str, ...] = (),
) -> subprocess.Popen[bytes]:
    """A ``celery worker`` of ours on ``queues`` with ``env``; ``quiet`` drops its output."""
    output = subprocess.DEVNULL if quiet else None
    return subprocess.Popen(
        [
            sys.executable,
            *("-m", "celery", "-A", "config", "worker"),
            *("-Q", ",".join(queues)),
            *("--concurrency", str(concurrency), "--loglevel", "WARNING"),
            *extra,
        ],
        cwd=ROOT,
        env=env,
        stdout=output,
        stderr=output,
    )


def django_on_scratch_sqlite(prefix: str) -> Path:
    """Set Django up in this process on a new SQLite database in a temporary folder, with an
    in-memory broker, and migrate it; the folder is returned (a benchmark that reads its
    figures through the product's own models, with no server)."""
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    os.environ.update(
        DATABASE_URL=f"sqlite:///{scratch / 'db.sqlite3'}",
        CELERY_BROKER_URL="memory://localhost//",
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return scratch
