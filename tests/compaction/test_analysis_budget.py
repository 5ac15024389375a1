"""The analysis budget (compaction/budget.py): one hostile session cannot hold the workers.

Issue #42's repro is one message of ``"x" * 1_000_000`` through the events API. A pass past
its budget is ended with the session marked failed and the reason named; the next pass, of
another project's session, runs. Through a real worker, two such sessions of one project and
a three-message session of another are all analysed (the patterns are linear)."""

from __future__ import annotations

from typing import Any

import pytest
from celery import Celery
from django.db import connection
from django.test import override_settings

from compaction import budget, pipeline
from compaction.models import AnalysisStatus, SessionAnalysis
from tests.compaction.test_worker_integration import (  # noqa: F401 (fixtures)
    Worker,
    broker,
    send,
    wait_for,
    worker,
)
from tests.factories import make_project, make_session

HOSTILE = "x" * 1_000_000


def _hostile_messages() -> list[dict[str, Any]]:
    return [
        {"seq": 0, "role": "user", "content": HOSTILE},
        {"seq": 1, "role": "assistant", "content": "ok " + "a.b-c_" * 100_000},
    ]


def _small_messages() -> list[dict[str, Any]]:
    return [
        {"seq": 0, "role": "user", "content": "Fix the login bug in auth.py"},
        {"seq": 1, "role": "assistant", "content": "Reading auth.py"},
        {"seq": 2, "role": "user", "content": "thanks"},
    ]


@pytest.mark.django_db
def test_the_budget_measures_the_content_as_stored() -> None:
    """The budget's size is read without fetching the content: on PostgreSQL the compressed
    bytes each value takes, so 1 MB of one repeated letter weighs little; elsewhere the
    text's length."""
    session = make_session(make_project(), messages=_hostile_messages())
    size = budget.session_text_bytes(session.pk)
    assert size > 0
    if connection.vendor == "postgresql":
        assert size < 1_000_000
    else:
        assert size > 1_000_000


def test_the_budget_grows_with_the_session() -> None:
    with override_settings(ANALYSIS_BUDGET_SECONDS=120.0, ANALYSIS_BUDGET_SECONDS_PER_MB=30.0):
        assert budget.budget_seconds(0) == 120.0
        assert budget.budget_seconds(10 * budget.MIB) == 420.0
    with override_settings(ANALYSIS_BUDGET_SECONDS=0.0):
        assert budget.budget_seconds(10 * budget.MIB) == 0.0  # no budget


@pytest.mark.django_db
def test_a_pass_past_its_budget_is_marked_with_the_reason_and_the_next_one_runs() -> None:
    hostile = make_session(make_project(name="hostile"), messages=_hostile_messages())
    other = make_session(make_project(name="other"), messages=_small_messages())
    # a budget spent before the pass can finish, whatever the machine's speed
    with override_settings(ANALYSIS_BUDGET_SECONDS=1e-6, ANALYSIS_BUDGET_SECONDS_PER_MB=0.0):
        assert pipeline.session_analyse(session_id=hostile.pk) is None
    row = SessionAnalysis.objects.get(session=hostile)
    assert row.status == AnalysisStatus.FAILED
    assert row.error.startswith("analysis stopped: over its analysis budget of 0.0s for ")
    assert "MiB of messages as stored" in row.error
    # the process is free and its timer gone: the next pass, another project's, runs whole
    done = pipeline.session_analyse(session_id=other.pk)
    assert done is not None
    assert SessionAnalysis.objects.get(session=other).status == AnalysisStatus.DONE


@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_hostile_megabyte_messages_do_not_stall_another_projects_session(
    broker: tuple[Celery, str],  # noqa: F811
    worker: Worker,  # noqa: F811
) -> None:
    hostile = make_project(name="hostile")
    stalls = [make_session(hostile, messages=_hostile_messages()) for _ in range(2)]
    other = make_session(make_project(name="other"), messages=_small_messages())
    for session in [*stalls, other]:
        send(broker, "session_analyse", session.pk)

    def analysed() -> bool:
        rows = SessionAnalysis.objects.filter(session__in=[*stalls, other])
        return rows.filter(status=AnalysisStatus.DONE).count() == 3

    wait_for(analysed, timeout=180, what="the three analyses", log=worker.log)
