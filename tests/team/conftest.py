"""Fixtures of the team tests: a project, one analysed session with a compaction at seq 30,
and a member of the project signed in."""

from __future__ import annotations

import pytest
from django.test import Client

from compaction import pipeline
from tests.factories import coding_session_messages, make_project, make_session, make_user


@pytest.fixture
def project():
    return make_project()


@pytest.fixture
def session(project):
    session = make_session(
        project,
        external_id="billing-run",
        messages=coding_session_messages(turns=20),
        compactions=[
            {
                "seq": 30,
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": 150000,
                "tokens_after": 30000,
                "summary": "Goal: migrate billing.",
                "replaced": {"from_seq": 2, "to_seq": 25},
            }
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    return session


@pytest.fixture
def member(project):
    return make_user(project=project)


@pytest.fixture
def client_in(client: Client, member) -> Client:
    client.force_login(member)
    return client
