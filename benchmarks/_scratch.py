"""A scratch PostgreSQL database for a benchmark, dropped and created anew on each run."""

from __future__ import annotations

import psycopg

ADMIN_URL = "postgres://postgres@127.0.0.1:5432/postgres"


def fresh_database(name: str) -> str:
    """Recreate database `name` and return its URL."""
    drop_database(name)
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return f"postgres://postgres@127.0.0.1:5432/{name}"


def drop_database(name: str) -> None:
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
