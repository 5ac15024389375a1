"""A scratch PostgreSQL database for a benchmark, dropped and created anew on each run.

SAWTOOTH_BENCH_DB_SUFFIX, when set, is appended to every name, so that two checkouts on one
server can run benchmarks at the same time without dropping each other's database.
"""

from __future__ import annotations

import os

import psycopg

ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"


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
