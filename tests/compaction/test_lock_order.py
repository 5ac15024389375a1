"""A batch for a session arriving while that session's analysis is being stored: both go
through, one after the other, and neither is chosen as a deadlock victim.

The ingest holds the session row and asks for the analysis row; the analysis holds the
analysis row and inserts rows that reference the session, which takes a key-share lock on the
session row. The ingest's lock must not conflict with that one."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import InterfaceError, OperationalError, connection

from compaction import pipeline
from compaction.models import AnalysisStatus, SessionAnalysis
from sessions import services as session_services
from sessions.models import Message
from sessions.schemas import EventBatch
from tests.factories import conversation, make_project, make_session

pytestmark = pytest.mark.django_db(transaction=True)

ASKING_FOR_THE_ANALYSIS_ROW = """
    SELECT count(*) FROM pg_stat_activity
    WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE "compaction_sessionanalysis"%%'
"""


def _ingest_waits_on_the_analysis_row() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(ASKING_FOR_THE_ANALYSIS_ROW)
        (waiting,) = cursor.fetchone()
    return bool(waiting)


def _store_paused(
    monkeypatch: pytest.MonkeyPatch, release: threading.Event, *, timeout: float
) -> threading.Event:
    """Pause every analysis pass in the middle of its store, holding its rows, until
    ``release`` is set (at most ``timeout`` seconds); the event returned is set once a pass
    is there."""
    storing = threading.Event()
    span_row = pipeline._observed_span_row

    def paused_span_row(*args: Any) -> Any:
        storing.set()
        release.wait(timeout=timeout)
        return span_row(*args)

    monkeypatch.setattr(pipeline, "_observed_span_row", paused_span_row)
    return storing


def _in_thread(work: Any, errors: list[BaseException]) -> threading.Thread:
    """Run ``work`` in a thread of its own (a connection of its own); what it raises goes to
    ``errors``, for the test thread to check."""

    def run() -> None:
        try:
            work()
        except BaseException as exc:  # reported in the test thread
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_a_batch_written_while_its_sessions_analysis_is_stored_does_not_deadlock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite locks the whole database")
    project = make_project()
    session = make_session(
        project,
        external_id="busy",
        messages=conversation(10),
        compactions=[
            {
                "seq": 10,
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": 9000,
                "tokens_after": 900,
                "summary": "the user asked for tests",
                "replaced": {"from_seq": 0, "to_seq": 7},
            }
        ],
    )
    go_on = threading.Event()
    # the analysis holds its row and is about to insert spans
    storing = _store_paused(monkeypatch, go_on, timeout=30)
    errors: list[BaseException] = []
    analyser = _in_thread(lambda: pipeline.session_analyse(session_id=session.pk), errors)
    assert storing.wait(timeout=30)
    writer = _in_thread(
        lambda: session_services.events_ingest(
            project=project,
            external_id="busy",
            batch=EventBatch.model_validate({"messages": conversation(4, start=11)}),
        ),
        errors,
    )
    try:
        deadline = time.monotonic() + 30
        while not _ingest_waits_on_the_analysis_row():
            assert time.monotonic() < deadline, "the batch never reached the analysis row"
            assert writer.is_alive(), errors
            time.sleep(0.05)
    finally:
        go_on.set()
        analyser.join(timeout=60)
        writer.join(timeout=60)
    assert errors == []
    assert Message.objects.filter(session=session).count() == 14
    row = SessionAnalysis.objects.get(session=session)
    assert row.status == AnalysisStatus.DONE
    assert row.requested_generation > row.analysed_generation  # the batch asked for another


def test_deleting_a_session_stops_the_pass_storing_its_analysis_instead_of_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: SQLite has one writer at a time")
    project = make_project()
    session = make_session(
        project,
        external_id="doomed",
        messages=conversation(10),
        compactions=[{"seq": 10, "strategy": "summarize", "summary": "the user asked for tests"}],
    )
    never = threading.Event()  # the storing pass would hold its rows until the end of the test
    storing = _store_paused(monkeypatch, never, timeout=60)
    failures: list[BaseException] = []
    analyser = _in_thread(lambda: pipeline.session_analyse(session_id=session.pk), failures)
    assert storing.wait(timeout=30)
    deleted = threading.Event()

    def delete() -> None:
        session_services.session_delete(session=session, by=None, reason="erasure request")
        deleted.set()

    deleter = _in_thread(delete, [])
    try:
        # Done while the storing pass is still paused: it did not wait for that pass to end.
        assert deleted.wait(timeout=30), "the delete waited on the storing pass"
    finally:
        never.set()
        analyser.join(timeout=60)
        deleter.join(timeout=60)
    assert not SessionAnalysis.objects.filter(session_id=session.pk).exists()
    assert not Message.objects.filter(session_id=session.pk).exists()
    # the stopped pass ended with the database's error: its task retries and finds nothing
    [failure] = failures
    assert isinstance(failure, OperationalError | InterfaceError)
