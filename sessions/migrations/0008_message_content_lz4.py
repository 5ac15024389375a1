"""Message content is compressed with lz4 instead of PostgreSQL's default pglz.

Content is most of what is stored (tool outputs of tens of KB), and pglz compression was a
large share of PostgreSQL's CPU on ingest: lz4 took the benchmark of 10,000 OTLP spans from
about 630 to 710 spans/s queryable, for about 25% more disk (95 MB per 10,000 spans instead of
76). Rows stored earlier keep pglz until rewritten; both are read alike. A server built
without lz4 keeps pglz (a notice, not an error). SQLite has no such setting.
"""

from typing import Any

from django.db import migrations

FORWARD = """
DO $$
BEGIN
    ALTER TABLE traces_message ALTER COLUMN content SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this PostgreSQL has no lz4: message content stays compressed with pglz';
END $$
"""
BACKWARD = "ALTER TABLE traces_message ALTER COLUMN content SET COMPRESSION default"


def _run(statement: str) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0007_session_import_state"),
    ]

    operations = [
        migrations.RunPython(_run(FORWARD), _run(BACKWARD)),
    ]
