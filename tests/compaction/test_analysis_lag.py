"""How far the analysis pass (and search, which reads what it writes) is behind the uploads:
the oldest request not served yet, waiting or being served, per project or for all."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from compaction import fair, pipeline
from compaction.models import AnalysisStatus, SessionAnalysis
from compaction.selectors import analysis_lag
from sessions.models import Project
from tests.factories import make_project, make_session, wire_message

pytestmark = pytest.mark.django_db


def waiting_session(project: Project, name: str, age_seconds: float) -> int:
    session = make_session(project, external_id=name, messages=[wire_message(0, "user", "hi")])
    SessionAnalysis.objects.filter(session=session).update(
        queued_at=timezone.now() - timedelta(seconds=age_seconds)
    )
    return session.pk


def test_nothing_waiting_is_no_lag() -> None:
    session = make_session(messages=[wire_message(0, "user", "hi")])
    pipeline.session_analyse(session_id=session.pk)
    lag = analysis_lag()
    assert (lag.seconds, lag.sessions) == (0.0, 0)


def test_the_oldest_waiting_request_is_the_lag_and_projects_are_kept_apart() -> None:
    mine, theirs = make_project(), make_project()
    now = timezone.now()
    waiting_session(mine, "a", 5)
    waiting_session(mine, "b", 12)
    waiting_session(theirs, "c", 600)
    assert analysis_lag(now=now).seconds == pytest.approx(600, abs=1)
    assert analysis_lag(now=now).sessions == 3
    only_mine = analysis_lag(projects=Project.objects.filter(pk=mine.pk), now=now)
    assert only_mine.seconds == pytest.approx(12, abs=1)
    assert only_mine.sessions == 2


def test_a_claimed_request_keeps_its_age_while_it_is_served() -> None:
    project = make_project()
    pk = waiting_session(project, "a", 40)
    claimed = fair.analysis_claim_next()
    assert claimed is not None
    assert claimed.session_id == pk
    row = SessionAnalysis.objects.get(session_id=pk)
    assert row.status == AnalysisStatus.RUNNING
    assert row.queued_at is None
    lag = analysis_lag()
    assert lag.seconds == pytest.approx(40, abs=2)
    assert lag.sessions == 1
    # A batch landing while it runs asks again: one session, still as far behind.
    SessionAnalysis.objects.filter(pk=row.pk).update(queued_at=timezone.now())
    assert analysis_lag().sessions == 1
    assert analysis_lag().seconds == pytest.approx(40, abs=2)


def test_served_requests_are_no_lag() -> None:
    project = make_project()
    pk = waiting_session(project, "a", 40)
    pipeline.session_analyse(session_id=pk)
    row = SessionAnalysis.objects.get(session_id=pk)
    assert row.status == AnalysisStatus.DONE
    assert analysis_lag().seconds == 0.0
