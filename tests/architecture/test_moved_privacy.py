"""The privacy models left compaction and traces in state only: a database made before the move
migrates in place, and every row written by the old models is read, keys and all, by the new."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from compaction.models import CompactionSpan
from privacy.models import AuditEvent, Finding, SubjectIndexMark, SubjectRequest, SubjectToken

MOVED_MODELS = ["auditevent", "finding", "subjectindexmark", "subjectrequest", "subjecttoken"]
BEFORE = [("compaction", "0016_limits_one_place"), ("traces", "0011_message_model")]


def _migrate_to_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def _old_rows() -> dict[str, int]:
    """Rows written through the models of the apps the privacy models lived in."""
    old = MigrationExecutor(connection).loader.project_state(BEFORE).apps
    user = old.get_model("auth", "User").objects.create(username="reviewer")
    project = old.get_model("traces", "Project").objects.create(name="legacy")
    session = old.get_model("traces", "AgentSession").objects.create(
        project=project, external_id="s-1"
    )
    message = old.get_model("traces", "Message").objects.create(
        session=session, seq=1, role="user", content=[], content_hash="h"
    )
    event = old.get_model("traces", "CompactionEvent").objects.create(
        session=session, seq=2, trigger="auto", content_hash="h"
    )
    run = old.get_model("compaction", "ReplayRun").objects.create(session=session, policy={})
    span = old.get_model("compaction", "CompactionSpan").objects.create(
        session=session, origin="observed", event=event, index=0, seq=2, stage="observed"
    )
    finding = old.get_model("compaction", "Finding").objects.create(
        session=session,
        kind="cpf",
        where="message",
        seq=1,
        message=message,
        event=event,
        span=span,
        masked="[cpf ***.***.***-25]",
        value_hash="v" * 64,
        status="confirmed",
        reviewed_by=user,
    )
    token = old.get_model("compaction", "SubjectToken").objects.create(
        project=project,
        session=session,
        kind="cpf",
        digest="d" * 64,
        where="replay",
        message=message,
        event=event,
        span=span,
        replay=run,
        count=3,
    )
    mark = old.get_model("compaction", "SubjectIndexMark").objects.create(
        session=session, message_pk=message.pk
    )
    request = old.get_model("compaction", "SubjectRequest").objects.create(
        project=project,
        kind="cpf",
        digest="d" * 64,
        masked="[cpf ***.***.***-25]",
        action="find",
        requested_by=user,
        result={"rows": {"traces.AuditEvent": 1}},
    )
    audit = old.get_model("traces", "AuditEvent").objects.create(
        actor=user, actor_name="reviewer", action="reveal", project=project, target="message:1"
    )
    return {
        "user": user.pk,
        "project": project.pk,
        "session": session.pk,
        "message": message.pk,
        "event": event.pk,
        "run": run.pk,
        "span": span.pk,
        "finding": finding.pk,
        "token": token.pk,
        "mark": mark.pk,
        "request": request.pk,
        "audit": audit.pk,
    }


def _content_type_pks(app_label: str) -> dict[str, int]:
    rows = ContentType.objects.filter(app_label=app_label, model__in=MOVED_MODELS)
    return dict(rows.values_list("model", "pk"))


@pytest.mark.django_db(transaction=True)
def test_rows_written_before_the_move_are_read_through_the_privacy_models() -> None:
    content_types = _content_type_pks("privacy")
    assert sorted(content_types) == sorted(MOVED_MODELS)
    executor = MigrationExecutor(connection)
    executor.migrate([*BEFORE, ("privacy", None)])
    try:
        # Going back, the content types (and the permissions on them) return to the old labels.
        assert _content_type_pks("compaction") | _content_type_pks("traces") == content_types
        pk = _old_rows()
        _migrate_to_latest()
        assert _content_type_pks("privacy") == content_types

        finding = Finding.objects.select_related(
            "session__project", "message", "event", "span", "reviewed_by"
        ).get(pk=pk["finding"])
        assert (finding.session.pk, finding.session.project.pk) == (pk["session"], pk["project"])
        assert (finding.message.pk, finding.event.pk) == (pk["message"], pk["event"])
        assert finding.span_id == pk["span"]
        assert finding.reviewed_by_id == pk["user"]
        assert (finding.status, finding.masked) == ("confirmed", "[cpf ***.***.***-25]")

        token = SubjectToken.objects.get(pk=pk["token"])
        assert (token.project_id, token.session_id, token.replay_id) == (
            pk["project"],
            pk["session"],
            pk["run"],
        )
        assert (token.message_id, token.event_id, token.span_id) == (
            pk["message"],
            pk["event"],
            pk["span"],
        )
        assert token.count == 3
        assert SubjectIndexMark.objects.get(pk=pk["mark"]).message_pk == pk["message"]

        request = SubjectRequest.objects.select_related("project").get(pk=pk["request"])
        assert request.project.name == "legacy"
        assert request.requested_by_id == pk["user"]
        assert request.result_text == "traces.AuditEvent 1"

        audit = AuditEvent.objects.select_related("project", "actor").get(pk=pk["audit"])
        assert (audit.project.pk, audit.actor.pk) == (pk["project"], pk["user"])
        assert list(audit.project.audit_events.all()) == [audit]
        assert list(finding.session.findings.all()) == [finding]
        span = CompactionSpan.objects.get(pk=pk["span"])
        assert list(span.findings.all()) == [finding]
        assert finding.reviewed_by is not None
        assert finding.reviewed_by.username == "reviewer"
    finally:
        _migrate_to_latest()
        ContentType.objects.clear_cache()


def test_the_privacy_models_keep_their_tables() -> None:
    assert {
        m._meta.db_table for m in (Finding, SubjectToken, SubjectIndexMark, SubjectRequest)
    } == {
        "compaction_finding",
        "compaction_subjecttoken",
        "compaction_subjectindexmark",
        "compaction_subjectrequest",
    }
    assert AuditEvent._meta.db_table == "traces_auditevent"
