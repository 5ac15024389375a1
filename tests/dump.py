"""A dump of the whole test database, read the same way on PostgreSQL and SQLite.

Erasure promises that no copy of an identifier is left anywhere, so its tests look in every
cell of every table (Django's, ours, search columns and index tables included), not only in
the columns a model declares as text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db import connection


def _text(value: Any) -> str:
    if isinstance(value, memoryview | bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, dict | list):
        # psycopg hands jsonb back parsed; SQLite hands back its stored text.
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def database_cells() -> Iterator[tuple[str, str, str]]:
    """Each non-null cell of each table as ``(table, column, text)``."""
    with connection.cursor() as cursor:
        tables = connection.introspection.table_names(cursor)
    for table in sorted(tables):
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT * FROM {connection.ops.quote_name(table)}")  # noqa: S608
            columns = [column[0] for column in cursor.description]
            for row in cursor.fetchall():
                for column, value in zip(columns, row, strict=True):
                    if value is not None:
                        yield table, column, _text(value)


def cells_holding(needles: list[str]) -> list[str]:
    """Every ``table.column`` whose text holds one of ``needles`` (case-insensitive)."""
    lowered = [needle.lower() for needle in needles]
    hits: set[str] = set()
    for table, column, text in database_cells():
        folded = text.lower()
        for needle, low in zip(needles, lowered, strict=True):
            if low in folded:
                hits.add(f"{table}.{column} holds {needle!r}")
    return sorted(hits)
