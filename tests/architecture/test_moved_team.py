"""Comments, their revisions and saved filters moved from the compaction app to the team app
keeping their tables, so a database made before the move migrates in place: rows written
through the old app's historical models are read, foreign keys and all, through the new ones.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.recorder import MigrationRecorder

from team.models import Comment, CommentRevision, SavedFilter

# The state just before the move: compaction at its last migration with the models, and no
# team app yet (compaction's 0017_move_team_out depends on team's 0001, so it goes too).
BEFORE = [("compaction", "0016_limits_one_place"), ("team", None)]
MOVE = [("team", "0001_initial"), ("compaction", "0017_move_team_out")]
TABLES = {"compaction_comment", "compaction_commentrevision", "compaction_savedfilter"}


def _latest() -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_rows_made_before_the_move_are_read_through_the_team_models() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        old = executor.loader.project_state(BEFORE[0]).apps
        assert not old.all_models["team"]
        applied = MigrationRecorder(connection).applied_migrations()
        assert not {*MOVE} & set(applied)
        user = old.get_model("auth", "User").objects.create(username="rita")
        project = old.get_model("traces", "Project").objects.create(name="legacy")
        session = old.get_model("traces", "AgentSession").objects.create(
            project=project, external_id="run-1"
        )
        span = old.get_model("compaction", "CompactionSpan").objects.create(
            session=session, origin="observed", index=0, seq=5, stage="summarize"
        )
        comments = old.get_model("compaction", "Comment").objects
        on_session = comments.create(session=session, author=user, body="second take")
        on_span = comments.create(session=session, span=span, author=user, body="lost a rule")
        old.get_model("compaction", "CommentRevision").objects.create(
            comment=on_session, body="first take"
        )
        saved = old.get_model("compaction", "SavedFilter").objects.create(
            user=user, name="hot", query="period=7d"
        )

        _latest()

        moved = Comment.objects.get(pk=on_session.pk)
        assert (moved.body, moved.author.username, moved.span) == ("second take", "rita", None)
        assert moved.session.external_id == "run-1"
        assert moved.session.project.name == "legacy"
        assert [r.body for r in moved.revisions.all()] == ["first take"]
        assert CommentRevision.objects.get().comment == moved
        on_the_span = Comment.objects.get(pk=on_span.pk)
        assert (on_the_span.span.pk, on_the_span.span.seq) == (span.pk, 5)
        assert [c.pk for c in on_the_span.span.comments.all()] == [on_span.pk]
        kept = SavedFilter.objects.get(pk=saved.pk)
        assert (kept.user.username, kept.name, kept.query) == ("rita", "hot", "period=7d")
        assert {Comment._meta.db_table, CommentRevision._meta.db_table} | {
            SavedFilter._meta.db_table
        } == TABLES
        assert set(connection.introspection.table_names()) >= TABLES
        new_state = MigrationExecutor(connection).loader.project_state()
        assert not {"comment", "commentrevision", "savedfilter"} & set(
            new_state.apps.all_models["compaction"]
        )
    finally:
        _latest()


# transaction=True: SQLite's schema editor needs foreign key checks off, which SQLite cannot do
# inside the transaction a plain django_db test runs in.
@pytest.mark.django_db(transaction=True)
def test_the_move_runs_no_sql() -> None:
    executor = MigrationExecutor(connection)
    graph = executor.loader.graph
    for app, name in MOVE:
        migration = graph.nodes[(app, name)]
        for backwards in (False, True):
            state = executor.loader.project_state((app, name), at_end=False)
            with connection.schema_editor(collect_sql=True, atomic=False) as editor:
                if backwards:
                    migration.unapply(state, editor, collect_sql=True)
                else:
                    migration.apply(state, editor, collect_sql=True)
            statements = [s for s in editor.collected_sql if not s.lstrip().startswith("--")]
            assert statements == [], (app, name, backwards, statements)
