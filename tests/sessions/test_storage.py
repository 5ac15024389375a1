"""How message content is stored on PostgreSQL."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from tests.factories import make_session, wire_message

pytestmark = pytest.mark.django_db

lz4 = importlib.import_module("sessions.migrations.0008_message_content_lz4")


def _compression_of_new_content() -> str | None:
    make_session(messages=[wire_message(0, content="tool output line\n" * 4_000)])
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_compression(content) FROM traces_message")
        (method,) = cursor.fetchone()
    return method


def test_message_content_is_compressed_with_lz4() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite does not compress")
    assert _compression_of_new_content() == "lz4"


def test_the_lz4_migration_reverses_to_the_servers_default() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite does not compress")
    with connection.schema_editor() as editor:
        lz4._run(lz4.BACKWARD)(None, editor)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SHOW default_toast_compression")
            (default,) = cursor.fetchone()
        assert _compression_of_new_content() == default
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # no ALTER with checks pending
        with connection.schema_editor() as editor:
            lz4._run(lz4.FORWARD)(None, editor)
