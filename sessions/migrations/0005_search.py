"""Content search and session titles.

On PostgreSQL (``sessions/search_sql.py`` holds the SQL and says why): a stored, generated
tsvector column with a GIN index on messages and on compaction events, in the 'simple'
configuration, so code identifiers and Portuguese both match as written. A session's own
fields (title, ids, metadata) are few and short: matched as substrings, unindexed. On SQLite
nothing is added: search falls back to ``icontains``.
"""

from django.db import migrations, models

from sessions import search_sql as sql

FORWARD = [
    sql.WORDS_FUNCTION,
    f"ALTER TABLE traces_message ADD COLUMN {sql.COLUMN} tsvector "
    f"GENERATED ALWAYS AS ({sql.RAW_MESSAGE_DOCUMENT}) STORED",
    f"CREATE INDEX message_search ON traces_message USING gin ({sql.COLUMN})",
    f"ALTER TABLE traces_compactionevent ADD COLUMN {sql.COLUMN} tsvector "
    f"GENERATED ALWAYS AS ({sql.RAW_SUMMARY_DOCUMENT}) STORED",
    f"CREATE INDEX compaction_summary_search ON traces_compactionevent USING gin ({sql.COLUMN})",
]
BACKWARD = [
    f"ALTER TABLE traces_compactionevent DROP COLUMN IF EXISTS {sql.COLUMN}",
    f"ALTER TABLE traces_message DROP COLUMN IF EXISTS {sql.COLUMN}",
    "DROP FUNCTION IF EXISTS sawtooth_search_words(tsvector)",
]


def _run(statements: list[str]):  # type: ignore[no-untyped-def]
    def run(apps, schema_editor):  # type: ignore[no-untyped-def]
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("traces", "0004_retention"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentsession",
            name="title",
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddIndex(
            model_name="agentsession",
            index=models.Index(fields=["project", "parent"], name="session_parent"),
        ),
        migrations.RunPython(_run(FORWARD), _run(BACKWARD)),
    ]
