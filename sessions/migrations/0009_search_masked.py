"""Search reads masked text only.

Messages, compaction events and sessions get ``search_text``: what a reader sees, with personal
data masked, written by the findings step of the analysis pass. On PostgreSQL the search
documents are rebuilt from it instead of from the raw content, so the index holds no personal
data and no search can find, confirm or count a person's identifier.

Rows stored before this have no ``search_text`` yet and are not searchable until their session
is scanned again: every analysis's scan record is reset, so the next pass (or the beat's rescan
sweep, ``FINDINGS_RESCAN_BATCH`` sessions a minute, or ``manage.py scan_personal_data``)
rescans each session whole, keeping review decisions, and writes its search text. The search
page says how many messages are not searchable yet.
"""

from typing import Any

from django.db import migrations, models

from sessions import search_sql as sql

TABLES = ("traces_message", "traces_compactionevent")
INDEXES = {"traces_message": "message_search", "traces_compactionevent": "compaction_summary_search"}


def _documents(raw: bool) -> list[str]:
    statements = []
    for table in TABLES:
        if raw:
            document = (
                sql.RAW_MESSAGE_DOCUMENT if table == "traces_message" else sql.RAW_SUMMARY_DOCUMENT
            )
        else:
            document = sql.MASKED_DOCUMENT
        statements += [
            f"ALTER TABLE {table} DROP COLUMN IF EXISTS {sql.COLUMN}",
            f"ALTER TABLE {table} ADD COLUMN {sql.COLUMN} tsvector "
            f"GENERATED ALWAYS AS ({document}) STORED",
            f"CREATE INDEX {INDEXES[table]} ON {table} USING gin ({sql.COLUMN})",
        ]
    return statements


def _run(raw: bool) -> Any:
    def run(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in _documents(raw):
            schema_editor.execute(statement)

    return run


def _rescan_all(apps: Any, schema_editor: Any) -> None:
    # An analysis whose scan was recorded by no detector is stale (compaction/findings.py
    # scan_stale): its session is rescanned whole, which writes the search text.
    apps.get_model("compaction", "SessionAnalysis").objects.update(pii_clean_detector="")


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0008_message_content_lz4"),
        ("compaction", "0011_known_clean_messages"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentsession",
            name="search_text",
            field=models.TextField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="compactionevent",
            name="search_text",
            field=models.TextField(blank=True, editable=False, null=True),
        ),
        migrations.AddField(
            model_name="message",
            name="search_text",
            field=models.TextField(blank=True, editable=False, null=True),
        ),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(
                condition=models.Q(("search_text__isnull", True)),
                fields=["session"],
                name="message_unsearchable",
            ),
        ),
        migrations.RunPython(_run(raw=False), _run(raw=True)),
        migrations.RunPython(_rescan_all, migrations.RunPython.noop),
    ]
