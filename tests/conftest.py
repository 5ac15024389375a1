"""Shared fixtures. With SAWTOOTH_STRICT=1 (CI) a skipped test is a failed test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

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


# What names resolve to in tests: no test asks real DNS, and none reaches a private or metadata
# address except the 127.0.0.1 receivers tests start themselves (IP literals, never resolved).
# The documentation domains resolve to one public address, which no test delivers to.
TEST_DNS = {"example.com": ["93.184.215.14"], "example.net": ["93.184.215.14"]}


def resolve_in_tests(host: str, port: int) -> list[str]:
    for domain, addresses in TEST_DNS.items():
        if host == domain or host.endswith("." + domain):
            return list(addresses)
    raise OSError(f"[test resolver] no such name: {host}")


@pytest.fixture(autouse=True)
def _test_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    from alerts import webhook_destinations

    monkeypatch.setattr(webhook_destinations, "resolve", resolve_in_tests)


@pytest.fixture
def member(project: Any) -> Any:
    """A viewer of the test module's ``project``."""
    from tests.factories import make_user

    return make_user(project=project)


@pytest.fixture
def client_in(client: Any, member: Any) -> Any:
    """The test client, signed in as ``member``."""
    client.force_login(member)
    return client
