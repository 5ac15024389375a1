"""Headless Chromium (Debian's package) driven by Playwright against pytest-django's live server."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Browser, Page, sync_playwright

from sessions.models import Membership, Project, Role

PASSWORD = "correct-horse-battery"
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium_path() -> str | None:
    return os.environ.get("SAWTOOTH_CHROMIUM") or shutil.which("chromium")


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    path = _chromium_path()
    if path is None:
        pytest.skip("Chromium not installed (apt-get install chromium)")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
    # between page actions are still synchronous and safe.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    # Only a test that injects a checker (axe-core) opts out of the pages' Content-Security-
    # Policy; every other browser test runs the pages under it, as users do.
    bypass = request.node.get_closest_marker("inject_scripts") is not None
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=bypass)
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


@pytest.fixture
def project(transactional_db: None) -> Project:
    return Project.objects.create(name="browser")


@pytest.fixture
def logged_in(page: Page, live_server, project: Project) -> Page:
    user = get_user_model().objects.create_user(username="reviewer", password=PASSWORD)
    Membership.objects.create(user=user, project=project, role=Role.ENGINEER)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("reviewer")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    return page
