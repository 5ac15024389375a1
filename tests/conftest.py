"""Shared fixtures. With SAWTOOTH_STRICT=1 (CI) a skipped test is a failed test."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

# Tasks queued by tests that commit (live server, browser) must not land in the demo's
# filesystem queue; the Celery integration tests start their own worker on Redis.
os.environ.setdefault("CELERY_BROKER_URL", "memory://localhost//")

STRICT = os.environ.get("SAWTOOTH_STRICT", "") in ("1", "true", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if STRICT and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under SAWTOOTH_STRICT=1, which forbids skips: {report.longrepr}"
