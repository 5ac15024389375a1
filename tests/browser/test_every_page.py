"""Every page in headless Chromium at a desktop, a tablet and a phone width: nothing wider than
the window, and axe-core (vendored, tests/browser/vendor/) finds no serious or critical fault.

PAGES is the one list of pages: a new page joins both checks by adding one line to it.
Set SAWTOOTH_SCREENSHOTS=docs/screenshots to write <page>-1440.png and <page>-390.png.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import Page

from alerts import webhooks
from alerts.models import Alert
from compaction import pipeline, services
from compaction.models import Experiment, ReplayRun
from privacy.models import Finding
from sessions import example_data
from sessions import services as session_services
from sessions.importers.report import ImportReport
from sessions.models import AgentSession, ImportJob, ImportStatus, Membership, Project, Role
from sessions.schemas import EventBatch
from team import selectors as team_selectors
from team import services as team_services
from tests.browser.test_alerts import troubled_session
from tests.factories import make_session

pytestmark = pytest.mark.browser

WIDTHS = (1440, 800, 390)
SHOT_WIDTHS = (1440, 390)
SHOTS = os.environ.get("SAWTOOTH_SCREENSHOTS")
AXE = Path(__file__).parent / "vendor" / "axe-core-4.10.3.min.js"
POLICY = {"soft_limit": 6000, "hard_limit": 9000, "keep_last": 2}


@dataclass(frozen=True)
class Site:
    """One of everything, so each page has real content to lay out."""

    project: Project
    session: AgentSession
    span_seq: int
    replay: ReplayRun
    experiment: Experiment
    alert: Alert
    newcomer: Any  # a login made by `manage.py adduser`, with no password yet
    finding_pk: int  # a CPF found in a customer's message, for the review pages
    storm: AgentSession  # the demo's compaction storm example: its alert and Re-analyse button


# The pages, by name (used in test ids and screenshot names) and path.
PAGES: dict[str, Callable[[Site], str]] = {
    "login": lambda s: "/login/",
    "set-password": lambda s: team_services.user_password_link(user=s.newcomer),
    "sessions": lambda s: "/",
    "projects": lambda s: "/projects/",
    "session": lambda s: f"/sessions/{s.session.pk}/",
    "session-storm": lambda s: f"/sessions/{s.storm.pk}/",
    "span": lambda s: f"/sessions/{s.session.pk}/compactions/{s.span_seq}/",
    "replay-new": lambda s: f"/sessions/{s.session.pk}/replay/",
    "replay": lambda s: f"/replays/{s.replay.pk}/",
    "experiments": lambda s: "/experiments/",
    "experiment-new": lambda s: "/experiments/new/",
    "experiment": lambda s: f"/experiments/{s.experiment.pk}/",
    "advice": lambda s: "/advice/",
    "alerts": lambda s: "/alerts/",
    "alert": lambda s: f"/alerts/{s.alert.pk}/",
    "project-settings": lambda s: f"/projects/{s.project.pk}/settings/",
    "webhook-edit": lambda s: (
        f"/projects/{s.project.pk}/webhooks/{s.project.webhooks.get().pk}/edit/"
    ),
    # two finished replays, so the page draws its chart and its table
    "replay-compare": lambda s: (
        f"/sessions/{s.session.pk}/replays/compare/"
        f"?a={s.replay.pk}&b={s.experiment.runs.order_by('pk').first().pk}"
    ),
    "search": lambda s: "/search/?q=billing",
    "findings": lambda s: "/privacy/findings/",
    "finding-redact": lambda s: f"/privacy/findings/{s.finding_pk}/redact/",
    "subjects": lambda s: "/privacy/subjects/",
    "members": lambda s: f"/projects/{s.project.pk}/members/",
    "keys": lambda s: f"/projects/{s.project.pk}/keys/",
    "audit": lambda s: f"/projects/{s.project.pk}/audit/",
    "policy": lambda s: f"/projects/{s.project.pk}/policy/",
    "feedback": lambda s: f"/projects/{s.project.pk}/feedback/",
    "import-running": lambda s: f"/imports/{_import_job(s, finished=False).public_id}/",
    "import-done": lambda s: f"/imports/{_import_job(s, finished=True).public_id}/",
    "not-found": lambda s: "/sessions/999999/",
}
ANONYMOUS = {"login", "set-password"}


def _import_job(site: Site, *, finished: bool) -> ImportJob:
    """A background import of the upload form: one on its way, or one done with a report."""
    report = ImportReport()
    report.session(site.session.external_id).messages = 3
    done = report.file("billing-run-7.jsonl", format="claude-code")
    done.sessions.append(site.session.external_id)
    done.records = 3
    report.file("notes.txt", format="").error = "not a format Sawtooth reads"
    return ImportJob.objects.create(
        project=site.project,
        public_id=uuid.uuid4(),
        status=ImportStatus.DONE if finished else ImportStatus.RUNNING,
        files_total=2,
        files_done=2 if finished else 1,
        size_bytes=48_000,
        report=report.to_dict() if finished else {},
    )


@pytest.fixture
def site(project: Project) -> Site:
    session = troubled_session(project, "billing-run-7-with-a-long-external-identifier")
    # record types an importer did not know: the session page names them ("Records not read")
    session.metadata = {**session.metadata, "unknown_types": {"world_state_v2": 3}}
    session.save(update_fields=["metadata"])
    for n in range(3):
        other = make_session(project, external_id=f"run-{n}")
        pipeline.session_analyse(session_id=other.pk)
    customer = make_session(
        project,
        external_id="support-1",
        messages=[{"seq": 0, "role": "user", "content": "Meu CPF é 530.582.439-79."}],
    )
    pipeline.session_analyse(session_id=customer.pk)
    storm_id = "example-compaction-storm"
    for batch in example_data.example_session(storm_id).batches:
        session_services.events_ingest(
            project=project, external_id=storm_id, batch=EventBatch.model_validate(batch)
        )
    storm = AgentSession.objects.get(project=project, external_id=storm_id)
    pipeline.session_analyse(session_id=storm.pk)
    replay = services.replay_run_start(session=session, policy=POLICY)
    pipeline.replay_run_execute(run_id=replay.pk)  # what the worker does
    experiment = services.experiment_start(
        project=project,
        name="soft limits",
        policies=[POLICY, {**POLICY, "soft_limit": 7000}],
        sessions=[session],
    )
    for run in experiment.runs.all():
        pipeline.replay_run_execute(run_id=run.pk)
    # the settings page lists it with its Remove button
    webhooks.webhook_create(
        project=project, url="https://hooks.example.com/on-call", secret="s" * 24
    )
    # verdict feedback: the span page shows marks beside its facts, the feedback page lists them
    span = session.compaction_spans.filter(replay=None).order_by("seq").first()
    marker = get_user_model().objects.create_user(username="marker")
    Membership.objects.create(user=marker, project=project, role=Role.ENGINEER)
    for n, item in enumerate(span.retention[:3]):
        team_services.fact_mark_set(
            span=span,
            fact_key=team_selectors.fact_key(item["text"]),
            author=marker,
            mark="wrong" if n else "right",
            note="the summary says it in other words" if n else "",
        )
    return Site(
        project=project,
        session=session,
        span_seq=span.seq,
        replay=replay,
        experiment=experiment,
        alert=Alert.objects.filter(session=session).first(),
        newcomer=team_services.user_create(username="newcomer"),
        finding_pk=Finding.objects.get(session=customer).pk,
        storm=storm,
    )


@pytest.fixture
def admin_page(page: Page, live_server, project: Project, settings) -> Page:
    """The project's admin, logged in: admins see every page, settings included."""
    from sessions.models import Membership, Role

    settings.DEBUG = False
    user = get_user_model().objects.create_user(username="lead", password="correct-horse-battery")
    Membership.objects.create(user=user, project=project, role=Role.ADMIN)
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill("lead")
    page.get_by_label("Password").fill("correct-horse-battery")
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")
    return page


def open_page(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_load_state("load")
    for chart in page.locator("[data-chart]").all():
        chart.wait_for(state="attached")
    if page.locator("[data-chart]").count():
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-chart]')]"
            ".every(el => el.hasAttribute('data-points'))"
        )


def overflow(page: Page) -> dict[str, object]:
    """How much wider than the window the document is, and the elements sticking out."""
    return page.evaluate(
        """() => {
            const width = document.documentElement.clientWidth;
            const culprits = [...document.querySelectorAll('body *')]
              .filter(el => el.getBoundingClientRect().right > width + 1)
              .filter(el => !el.closest('.table-wrap, .scroll-x'))
              .slice(0, 5)
              .map(el => el.tagName.toLowerCase() + '.' + String(el.getAttribute('class') || '')
                     .trim().replace(/\\s+/g, '.')
                     + ' right=' + Math.round(el.getBoundingClientRect().right));
            return {document: document.documentElement.scrollWidth, window: width, culprits};
        }"""
    )


def shot(page: Page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / name), full_page=True)


def visit(page: Page, live_server, site: Site, name: str) -> str:
    if name in ANONYMOUS:
        page.context.clear_cookies()
    return f"{live_server.url}{PAGES[name](site)}"


@pytest.mark.parametrize("name", list(PAGES))
def test_page_is_never_wider_than_the_window(
    admin_page: Page, live_server, site: Site, name: str
) -> None:
    url = visit(admin_page, live_server, site, name)
    too_wide = {}
    for width in WIDTHS:
        admin_page.set_viewport_size({"width": width, "height": 900})
        open_page(admin_page, url)
        measured = overflow(admin_page)
        if measured["document"] > measured["window"]:
            too_wide[width] = measured
        if width in SHOT_WIDTHS:
            shot(admin_page, f"{name}-{width}.png")
    assert not too_wide, f"{name} is wider than the window: {too_wide}"


# Serious and critical faults, and these of a lower impact that a screen reader user still
# stumbles on: a header cell with no text leaves its column unnamed.
ALWAYS = ["empty-table-header"]
AXE_RUN = """async (always) => {
    const result = await axe.run(document, {resultTypes: ['violations']});
    return result.violations
      .filter(v => v.impact === 'serious' || v.impact === 'critical' || always.includes(v.id))
      .map(v => ({id: v.id, impact: v.impact, help: v.help,
                  nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
}"""


# Light and dark (prefers-color-scheme), each at a desktop and a phone width.
AXE_VIEWS = (("light", 1440), ("light", 390), ("dark", 1440), ("dark", 390))


@pytest.mark.inject_scripts
@pytest.mark.parametrize("name", list(PAGES))
def test_page_has_no_serious_accessibility_fault(
    admin_page: Page, live_server, site: Site, name: str
) -> None:
    url = visit(admin_page, live_server, site, name)
    faults = {}
    for scheme, width in AXE_VIEWS:
        admin_page.emulate_media(color_scheme=scheme)
        admin_page.set_viewport_size({"width": width, "height": 900})
        open_page(admin_page, url)
        admin_page.add_script_tag(path=str(AXE))
        found = admin_page.evaluate(AXE_RUN, ALWAYS)
        if found:
            faults[f"{scheme} {width}"] = found
    assert not faults, f"axe-core on {name}: {faults}"
