"""Every door masks. A project labelled with one person's CPF, phone, e-mail and name in every
place a value can live (tests/privacy/doors.py) is walked as each role: every page reachable
from the front page and the project's pages (links and htmx loads followed), every export,
every API read with the project's key, the webhook bodies, the alert e-mail and the log lines.
A value in clear anywhere fails, naming the door.

New pages join by being linked from a page (the crawl finds them) or by a line in SEEDS.
"""

from __future__ import annotations

import html
import json
import logging
import re
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator
from urllib.parse import parse_qsl, urljoin, urlsplit

import pytest
from django.core import mail
from django.test import Client

from alerts import webhooks
from alerts.models import Alert, WebhookDelivery
from config.api import api
from privacy.log_masking import MaskPersonalData
from privacy.models import AuditAction, AuditEvent
from sessions import services
from sessions.importers.report import ImportReport
from sessions.models import ImportJob, ImportStatus, Role
from tests.privacy.doors import CPF, EMAIL, EXTERNAL_ID, PHONE, Door, labelled_project, leaks

pytestmark = pytest.mark.django_db

ROLES = [r.value for r in Role] + ["superuser"]
CRAWL_LIMIT = 1500
PER_SHAPE = 4

# Where the crawl starts; it follows every same-site link and htmx load from there.
SEEDS: list[Callable[[Door], str]] = [
    lambda d: "/",
    lambda d: f"/imports/{_import_job(d).public_id}/",  # the upload form's background import
    lambda d: f"/sessions/{d.session.pk}/",
    lambda d: "/alerts/",
    lambda d: "/experiments/",
    lambda d: f"/advice/?project={d.project.pk}",
    lambda d: "/privacy/findings/",
    lambda d: "/privacy/subjects/",
    lambda d: f"/projects/{d.project.pk}/settings/",
    lambda d: f"/projects/{d.project.pk}/members/",
    lambda d: f"/projects/{d.project.pk}/keys/",
    lambda d: f"/projects/{d.project.pk}/audit/",
    lambda d: f"/projects/{d.project.pk}/audit.csv",
    lambda d: f"/projects/{d.project.pk}/policy/",
    lambda d: f"/projects/{d.project.pk}/feedback/",
    lambda d: f"/projects/{d.project.pk}/feedback.jsonl",
    lambda d: f"/sessions/{d.session.pk}/curve.csv",
    lambda d: f"/sessions/{d.session.pk}/curve.json",
    lambda d: f"/sessions/{d.session.pk}/spans.csv",
    lambda d: f"/sessions/{d.session.pk}/spans.json",
    lambda d: "/sessions/export.csv",
    lambda d: "/sessions/export.json",
    lambda d: f"/sessions/{d.session.pk}/delete/",
    # searches a member may type: words of the conversation, parts of the identifiers
    lambda d: "/search/?q=pedido",
    lambda d: "/search/?q=Camila",
    lambda d: "/search/?q=530",
    lambda d: "/search/?q=98765",
    lambda d: "/search/?q=cliente",
    lambda d: "/search/?q=gmail",
]
# Never followed: they sign out, or are outside what a member walks (the admin is walked by
# the superuser only, and the API docs hold no trace content).
SKIP = re.compile(r"^/(logout/|static/|api/v1/docs|api/v1/openapi)")
LINK = re.compile(r'(?:href|hx-get|action|data-src)="([^"#]+)')


@pytest.fixture
def door() -> Door:
    return labelled_project()


def shape(path: str) -> str:
    """What a URL is a page of: its path with numbers generalized, and its query's keys.

    >>> shape("/sessions/12/?seq=4&page=2")
    '/sessions/N/?page&seq'
    """
    parts = urlsplit(path)
    keys = sorted({pair.split("=")[0] for pair in parts.query.split("&") if pair})
    return re.sub(r"\d+", "N", parts.path) + ("?" + "&".join(keys) if keys else "")


def crawl(client: Client, seeds: list[str], *, admin: bool) -> Iterator[tuple[str, str]]:
    """(url, body) of every GET page reachable from ``seeds``, each once, and at most
    PER_SHAPE pages of one shape (the messages of a session, its ``?seq=`` links...)."""
    queue = deque(seeds)
    seen = set(seeds)
    shapes: Counter[str] = Counter(shape(seed) for seed in seeds)
    while queue:
        url = queue.popleft()
        response = client.get(url)
        assert response.status_code < 500, f"{url} answered {response.status_code}"
        if response.status_code in (301, 302):
            location = response["Location"]
            if location.startswith("/login/"):
                continue
            targets = [location]
            body = ""
        else:
            body = response.content.decode(errors="replace")
            targets = [html.unescape(m) for m in LINK.findall(body)]
        yield url, body
        for target in targets:
            parts = urlsplit(urljoin(url, target))
            if parts.netloc and parts.netloc != "testserver":
                continue
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            if SKIP.match(path) or (path.startswith("/admin/") and not admin):
                continue
            if "/admin/" in path and any(w in path for w in ("/delete/", "logout", "password")):
                continue
            if path in seen or shapes[shape(path)] >= PER_SHAPE or len(seen) >= CRAWL_LIMIT:
                continue
            seen.add(path)
            shapes[shape(path)] += 1
            queue.append(path)


def without_query(url: str, body: str) -> str:
    """The page without what the reader typed into its search: their own words, echoed."""
    for key, value in parse_qsl(urlsplit(url).query):
        if key == "q" and value:
            body = body.replace(value, "<query>").replace(html.escape(value), "<query>")
    return body


@pytest.mark.parametrize("role", ROLES)
def test_no_page_shows_a_value_in_clear_to_any_role(client: Client, door: Door, role: str) -> None:
    client.force_login(door.users[role])
    seeds = [seed(door) for seed in SEEDS]
    if role == "superuser":
        seeds += ["/admin/"]
    found: dict[str, list[str]] = {}
    pages = 0
    for url, body in crawl(client, seeds, admin=role == "superuser"):
        pages += 1
        leaked = leaks(without_query(url, body))
        if leaked:
            found[url] = leaked
    assert pages > 40, f"the crawl reached only {pages} pages"
    assert not found, f"{len(found)} of {pages} pages show values in clear to a {role}: {found}"


def _import_job(door: Door) -> ImportJob:
    """A finished background import of the labelled session's transcript."""
    report = ImportReport()
    report.session(door.session.external_id).messages = 3
    report.file("transcript.jsonl", format="claude-code").sessions.append(EXTERNAL_ID)
    return ImportJob.objects.create(
        project=door.project,
        public_id=uuid.uuid4(),
        status=ImportStatus.DONE,
        files_total=1,
        files_done=1,
        report=report.to_dict(),
    )


def api_reads(door: Door) -> list[str]:
    """Every GET operation of the API, its path filled in for the labelled session."""
    ext = door.session.external_id
    fills = {
        "{job_id}": str(_import_job(door).public_id),
        "{external_id}": ext,
        "{replay_id}": str(door.replay.pk),
        "{experiment_id}": str(door.experiment.pk),
        "{alert_id}": str(Alert.objects.filter(session=door.session).first().pk),
    }
    urls = []
    for _, router in api._routers:
        for path, view in router.path_operations.items():
            if not any("GET" in op.methods for op in view.operations):
                continue
            for key, value in fills.items():
                path = path.replace(key, value)
            assert "{" not in path, f"fill in the parameters of {path}"
            if path == "/search":  # q is required: the searches below
                continue
            urls.append(f"/api/v1{path}")
    searches = [f"/api/v1/search?q={q}" for q in ("pedido", "530", "98765", "Camila", "gmail")]
    return [*urls, *searches, f"/api/v1/alerts?session={ext}"]


def test_no_api_read_shows_a_value_in_clear_to_a_key(client: Client, door: Door) -> None:
    key = services.api_key_create(project=door.project).raw_key
    found = {}
    for url in api_reads(door):
        response = client.get(url, HTTP_AUTHORIZATION=f"Bearer {key}")
        assert response.status_code == 200, (url, response.content[:300])
        body = response.content.decode()
        # The session's id is the client's own handle: the API answers it to the key that
        # sent it, and nothing else of the person.
        for value in (EXTERNAL_ID, json.dumps(EXTERNAL_ID)[1:-1]):
            body = body.replace(value, "<external id>")
        leaked = leaks(without_query(url, body))
        if leaked:
            found[url] = leaked
    assert not found, f"API reads show values in clear: {found}"


def test_webhook_bodies_and_alert_emails_hold_no_value_in_clear(door: Door) -> None:
    for hook in door.project.webhooks.all():  # the settings page's "Send test"
        webhooks.webhook_test_send(project=door.project, webhook_id=hook.pk)
    assert WebhookDelivery.objects.filter(event="test").count() == 2
    bodies = list(WebhookDelivery.objects.values_list("body", flat=True))
    assert len(bodies) >= 4, "each alert went to the JSON and the Slack webhook"
    found = {f"delivery {n}": leaks(body) for n, body in enumerate(bodies) if leaks(body)}
    for alert in Alert.objects.filter(session=door.session):
        webhooks.alert_email_send(alert_id=alert.pk)
    assert mail.outbox, "the alert e-mail was sent"
    for message in mail.outbox:
        text = f"{message.subject}\n{message.body}"
        if leaks(text):
            found[f"e-mail {message.subject!r}"] = leaks(text)
    assert not found, found


def test_log_lines_hold_no_value_in_clear(
    client: Client, door: Door, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client.force_login(door.users[Role.ADMIN.value])
    for url in ("/", f"/sessions/{door.session.pk}/", "/alerts/", f"/search/?q={CPF}"):
        client.get(url)
    key = services.api_key_create(project=door.project).raw_key
    client.get(f"/api/v1/sessions/{EXTERNAL_ID}/nope", HTTP_AUTHORIZATION=f"Bearer {key}")
    for alert in Alert.objects.filter(session=door.session):
        webhooks.alert_email_send(alert_id=alert.pk)
    net = MaskPersonalData()
    found = []
    for record in caplog.records:
        net.filter(record)
        line = record.getMessage() + (record.exc_text or "")
        if leaks(line):
            found.append((record.name, leaks(line)))
    assert not found, found


@pytest.mark.parametrize("identifier", [CPF, PHONE, EMAIL])
def test_a_subject_find_shows_excerpts_masked_and_is_audited(
    client: Client, door: Door, identifier: str
) -> None:
    reviewer = door.users[Role.PRIVACY_REVIEWER.value]
    client.force_login(reviewer)
    response = client.post(
        "/privacy/subjects/",
        {"project": door.project.pk, "identifier": identifier, "action": "find"},
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert body.count('<div class="mono">') >= 3, "the find lists excerpts"
    # What the reviewer typed is echoed in their own form, and nothing else of the person.
    assert leaks(body.replace(html.escape(identifier), "<typed>")) == []
    found = AuditEvent.objects.filter(action=AuditAction.SUBJECT_FIND, actor=reviewer)
    assert found.count() == 1
    assert leaks(f"{found.get().target} {found.get().reason} {found.get().detail}") == []


@pytest.mark.parametrize("role", ROLES)
def test_the_reanalyse_doors_answer_without_a_value_in_clear(
    client: Client, door: Door, role: str
) -> None:
    """The action doors of issue 43: the session page's Re-analyse button (engineers and
    above) and ``POST /api/v1/sessions/{id}/reanalyze`` (the project's key)."""
    client.force_login(door.users[role])
    response = client.post(f"/sessions/{door.session.pk}/reanalyze/", follow=True)
    if role == Role.VIEWER.value:
        assert response.status_code == 403
    else:
        assert response.redirect_chain == [(f"/sessions/{door.session.pk}/", 302)]
    assert leaks(response.content.decode()) == []
    key = services.api_key_create(project=door.project).raw_key
    answer = client.post(
        f"/api/v1/sessions/{EXTERNAL_ID}/reanalyze", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert (answer.status_code, answer.json()) == (202, {"queued": True})
