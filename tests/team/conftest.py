"""Fixtures of the team tests: a project and one analysed session with a compaction at seq 30
(``member`` and ``client_in``, a member signed in, are tests/conftest.py's)."""

from __future__ import annotations

import pytest

from tests.factories import make_billing_session, make_project


@pytest.fixture
def project():
    return make_project()


@pytest.fixture
def session(project):
    return make_billing_session(project)
