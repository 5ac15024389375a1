"""Content search and session titles.

On PostgreSQL: GIN expression indexes that ``sessions/search.py`` queries with the very same
expressions (the planner matches an expression index only on an identical expression):
full-text ('simple' config, so code identifiers and Portuguese both tokenise as written) over
every string in a message's content blocks, over compaction summaries, and over a session's
title, ids and metadata; plus a trigram index on the content text for identifiers and paths
that full-text splits differently (``api.py`` inside ``billing/api.py``). On SQLite nothing is
indexed: search falls back to ``icontains``.
"""

from django.db import migrations, models

from sessions import search_sql as sql

FORWARD = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    "CREATE INDEX IF NOT EXISTS message_search_fts ON traces_message "
    f"USING gin (({sql.MESSAGE_DOCUMENT.format(content='content')}))",
    "CREATE INDEX IF NOT EXISTS message_search_trgm ON traces_message "
    f"USING gin ({sql.MESSAGE_TEXT.format(content='content')} gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS compaction_summary_fts ON traces_compactionevent "
    f"USING gin (({sql.SUMMARY_DOCUMENT.format(summary='summary')}))",
    "CREATE INDEX IF NOT EXISTS session_search_fts ON traces_agentsession USING gin (("
    + sql.SESSION_DOCUMENT.format(
        title="title", external_id="external_id", agent="agent", metadata="metadata"
    )
    + "))",
]
BACKWARD = [
    "DROP INDEX IF EXISTS message_search_fts",
    "DROP INDEX IF EXISTS message_search_trgm",
    "DROP INDEX IF EXISTS compaction_summary_fts",
    "DROP INDEX IF EXISTS session_search_fts",
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
        ("traces", "0001_initial"),
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
