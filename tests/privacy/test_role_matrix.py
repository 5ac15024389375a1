"""Who may do what: every page and endpoint by every kind of caller, with exactly the answer
each gets. A URL added to config/urls.py or to the NinjaAPI without a row here fails
``test_every_route_is_in_the_matrix``.

Pages: anonymous → the login page; a user outside the project → 404 (its objects do not
exist for them); a member below the role the action needs → 403; at or above it → the page.
API: the project's key → the answer; no key or a revoked key → 401; another project's key →
404 for the project's objects.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from alerts import webhook_secrets
from alerts.models import Alert, Webhook
from compaction import pipeline
from compaction import services as compaction_services
from compaction.models import CompactionSpan, Experiment, ReplayRun, SpanOrigin
from config.api import api
from privacy.models import Finding
from sessions import access, services
from sessions.models import AgentSession, ApiKey, ImportJob, Membership, Project, Role
from team import selectors as team_selectors
from team import services as team_services
from tests.factories import make_project, make_session, wire_message

pytestmark = pytest.mark.django_db


@dataclass
class World:
    project: Project
    session: AgentSession
    span: CompactionSpan
    replay: ReplayRun
    experiment: Experiment
    key: str


@pytest.fixture
def world() -> World:
    project = make_project(name="matrix")
    messages = [
        wire_message(seq, "user" if seq % 2 == 0 else "assistant", f"turn {seq}")
        for seq in range(12)
    ]
    messages[2] = wire_message(2, "user", "Meu CPF é 530.582.439-79.")
    session = make_session(
        project,
        external_id="run-1",
        messages=messages,
        compactions=[
            {
                "seq": 10,
                "strategy": "summarize",
                "summary": "Cliente CPF 530.582.439-79",
                "replaced": {"from_seq": 1, "to_seq": 8},
            }
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    run = compaction_services.replay_run_start(session=session, policy={})
    # a compaction the replay produced, as a finished run stores it
    CompactionSpan.objects.create(
        session=session, origin=SpanOrigin.REPLAYED, replay=run, index=0, seq=10, stage="clear"
    )
    experiment = compaction_services.experiment_start(
        project=project, name="grid", policies=[{}], sessions=[session]
    )
    return World(
        project=project,
        session=session,
        span=CompactionSpan.objects.get(session=session, replay__isnull=True),
        replay=run,
        experiment=experiment,
        key=services.api_key_create(project=project).raw_key,
    )


_users = itertools.count(1)


def make_user(*, project: Project | None = None, role: str = Role.VIEWER, **fields: Any) -> Any:
    """A user without a password: hashing one per caller would make this matrix crawl."""
    user = get_user_model().objects.create(username=f"matrix-{next(_users)}", **fields)
    if project is not None:
        Membership.objects.create(user=user, project=project, role=role)
    return user


# --- pages -----------------------------------------------------------------------------

ANY = None  # any signed-in user: the page lists only what their projects hold


@dataclass(frozen=True)
class PageRule:
    method: str
    path: Callable[[World], str]
    role: str | None  # None: any signed-in user
    ok: int = 200
    data: Callable[[World], dict[str, Any]] = field(default=lambda w: {})
    outsider: int = 404  # what a signed-in user outside the project gets


def _new_member(w: World) -> str:
    m = Membership.objects.create(project=w.project, user=make_user(), role=Role.VIEWER)
    return f"/projects/{w.project.pk}/members/{m.pk}/remove/"


def _finding(w: World) -> int:
    finding = Finding.objects.filter(session=w.session).order_by("pk").first()
    assert finding is not None, "the analysis found the CPF"
    return finding.pk


def _new_key(w: World) -> str:
    key = services.api_key_create(project=w.project, name="spare").api_key
    return f"/projects/{w.project.pk}/keys/{key.pk}/revoke/"


def _comment(w: World) -> str:
    comment = team_services.comment_create(
        session=w.session, span=None, author=make_user(), body="first"
    )
    return f"/sessions/{w.session.pk}/comments/{comment.pk}/edit/"


def _webhook(w: World) -> int:
    hook = Webhook.objects.create(
        project=w.project,
        url="https://hooks.example.com/matrix",
        secret_encrypted=webhook_secrets.secret_seal("s" * 24),
    )
    return hook.pk


def _alert(w: World) -> int:
    alert = Alert.objects.filter(session=w.session).order_by("pk").first()
    assert alert is not None, "the summary's CPF raises a personal_data alert"
    return alert.pk


def _import_job(w: World) -> str:
    """A queued background import of the world's project (nothing for a worker to do)."""
    job, _ = ImportJob.objects.get_or_create(
        project=w.project, defaults={"public_id": uuid.UUID(int=42)}
    )
    return str(job.public_id)


def _markable_alert(w: World) -> int:
    """An alert a member marks (a personal-data one is marked by the privacy review)."""
    alert, _ = Alert.objects.get_or_create(
        project=w.project,
        session=w.session,
        rule="failed_splice",
        defaults={
            "severity": "warning",
            "title": "Failed splice at #10",
            "evidence": {"seq": 10, "spans": [10], "calls": [], "items": [], "numbers": {}},
        },
    )
    return alert.pk


def _fact(w: World) -> str:
    assert w.span.retention, "the compaction's retention checks a fact"
    return team_selectors.fact_key(str(w.span.retention[0]["text"]))


EXPERIMENT_FORM = {
    "name": "grid",
    "hard_limits": "9000",
    "keep_lasts": "2",
    "unit": "turn",
    "stages": "summarize",
    "summarizer": "extractive",
    "sessions": 5,
}

PAGES: dict[str, list[PageRule]] = {
    "sessions:list": [PageRule("get", lambda w: "/", ANY)],
    "sessions:projects": [PageRule("get", lambda w: "/projects/", ANY)],
    "sessions:detail": [PageRule("get", lambda w: f"/sessions/{w.session.pk}/", Role.VIEWER)],
    "sessions:analysis-status": [
        PageRule("get", lambda w: f"/sessions/{w.session.pk}/analysis-status/", Role.VIEWER)
    ],
    "sessions:block": [
        PageRule("get", lambda w: f"/sessions/{w.session.pk}/messages/2/blocks/0/", Role.VIEWER)
    ],
    "sessions:reveal": [
        PageRule(
            "post",
            lambda w: "/reveal/",
            Role.PRIVACY_REVIEWER,
            data=lambda w: {
                "target": f"message:{w.session.pk}:2:0",
                "index": 0,
                "reason": "matrix test reveal",
            },
        )
    ],
    "team:members": [
        PageRule("get", lambda w: f"/projects/{w.project.pk}/members/", Role.ADMIN),
        PageRule(
            "post",
            lambda w: f"/projects/{w.project.pk}/members/",
            Role.ADMIN,
            ok=302,
            data=lambda w: {"username": make_user().get_username(), "role": Role.VIEWER},
        ),
    ],
    "team:member-remove": [PageRule("post", _new_member, Role.ADMIN, ok=302)],
    "sessions:keys": [
        PageRule("get", lambda w: f"/projects/{w.project.pk}/keys/", Role.ADMIN),
        PageRule(
            "post",
            lambda w: f"/projects/{w.project.pk}/keys/",
            Role.ADMIN,
            data=lambda w: {"name": "k"},
        ),
    ],
    "sessions:key-revoke": [PageRule("post", _new_key, Role.ADMIN, ok=302)],
    "sessions:audit": [
        PageRule("get", lambda w: f"/projects/{w.project.pk}/audit/", Role.PRIVACY_REVIEWER)
    ],
    "sessions:audit-export": [
        PageRule("get", lambda w: f"/projects/{w.project.pk}/audit.csv", Role.PRIVACY_REVIEWER)
    ],
    "compaction:compaction": [
        PageRule(
            "get", lambda w: f"/sessions/{w.session.pk}/compactions/{w.span.seq}/", Role.VIEWER
        )
    ],
    "compaction:compaction-middle": [
        PageRule(
            "get",
            lambda w: f"/sessions/{w.session.pk}/compactions/{w.span.seq}/middle/",
            Role.VIEWER,
        )
    ],
    "compaction:replay-compaction": [
        PageRule("get", lambda w: f"/replays/{w.replay.pk}/compactions/10/", Role.VIEWER)
    ],
    "compaction:replay-compaction-middle": [
        PageRule("get", lambda w: f"/replays/{w.replay.pk}/compactions/10/middle/", Role.VIEWER)
    ],
    # the old addresses redirect (for a member; an outsider learns nothing)
    "compaction:span": [
        PageRule(
            "get", lambda w: f"/sessions/{w.session.pk}/spans/{w.span.pk}/", Role.VIEWER, ok=301
        )
    ],
    "compaction:span-middle": [
        PageRule(
            "get",
            lambda w: f"/sessions/{w.session.pk}/spans/{w.span.pk}/middle/",
            Role.VIEWER,
            ok=301,
        )
    ],
    "compaction:replay-new": [
        # the form is the engineer's: a viewer is refused before filling it in
        PageRule("get", lambda w: f"/sessions/{w.session.pk}/replay/", Role.ENGINEER),
        PageRule(
            "post",
            lambda w: f"/sessions/{w.session.pk}/replay/",
            Role.ENGINEER,
            ok=302,
            data=lambda w: {
                "soft_limit": 6000,
                "hard_limit": 9000,
                "keep_last": 2,
                "pin_head": "on",
                "unit": "step",
                "stages": "summarize",
                "summarizer": "extractive",
            },
        ),
    ],
    "compaction:reanalyze": [
        # the session page's Re-analyse button: engineers and admins
        PageRule("post", lambda w: f"/sessions/{w.session.pk}/reanalyze/", Role.ENGINEER, ok=302)
    ],
    "compaction:replay": [PageRule("get", lambda w: f"/replays/{w.replay.pk}/", Role.VIEWER)],
    "compaction:replay-status": [
        PageRule("get", lambda w: f"/replays/{w.replay.pk}/status/", Role.VIEWER)
    ],
    "compaction:experiments": [PageRule("get", lambda w: "/experiments/", ANY)],
    # any member reads the advice of their own projects; an outsider sees only theirs
    "compaction:advice": [PageRule("get", lambda w: f"/advice/?project={w.project.pk}", ANY)],
    "compaction:experiment-new": [
        PageRule("get", lambda w: "/experiments/new/", ANY),
        PageRule(
            "post",
            lambda w: "/experiments/new/",
            Role.ENGINEER,
            ok=302,
            data=lambda w: {"project": w.project.pk, **EXPERIMENT_FORM},
            # an outsider's form offers no such project: the form says so, nothing starts
            outsider=200,
        ),
    ],
    "privacy:findings": [
        # An admin of another project sees that project's (empty) queue, nothing of this one.
        PageRule("get", lambda w: "/privacy/findings/", Role.PRIVACY_REVIEWER, outsider=200)
    ],
    "privacy:finding-action": [
        PageRule(
            "post",
            lambda w: f"/privacy/findings/{_finding(w)}/confirm/",
            Role.PRIVACY_REVIEWER,
            ok=302,
        ),
        PageRule(
            "get", lambda w: f"/privacy/findings/{_finding(w)}/redact/", Role.PRIVACY_REVIEWER
        ),
    ],
    "compaction:experiment": [
        PageRule("get", lambda w: f"/experiments/{w.experiment.pk}/", Role.VIEWER)
    ],
    "compaction:experiment-status": [
        PageRule("get", lambda w: f"/experiments/{w.experiment.pk}/status/", Role.VIEWER)
    ],
    "compaction:replay-compare": [
        PageRule(
            "get",
            lambda w: f"/sessions/{w.session.pk}/replays/compare/?a={w.replay.pk}",
            Role.VIEWER,
        )
    ],
    "privacy:subjects": [
        # the outsider is an admin of another project: the page offers only that project
        PageRule("get", lambda w: "/privacy/subjects/", Role.PRIVACY_REVIEWER, outsider=200)
    ],
    "alerts:list": [PageRule("get", lambda w: "/alerts/", ANY)],
    "alerts:count": [PageRule("get", lambda w: "/alerts/count/", ANY)],
    "alerts:acknowledge": [
        # bulk: acknowledges only what the caller may triage, and says so; always back to the list
        PageRule(
            "post",
            lambda w: "/alerts/acknowledge/",
            ANY,
            ok=302,
            data=lambda w: {"alert": _alert(w)},
        )
    ],
    "alerts:detail": [PageRule("get", lambda w: f"/alerts/{_alert(w)}/", Role.VIEWER)],
    "alerts:action": [
        PageRule(
            "post",
            lambda w: f"/alerts/{_alert(w)}/comment/",
            Role.ENGINEER,
            ok=302,
            data=lambda w: {"text": "looking"},
        )
    ],
    "alerts:project-settings": [
        # thresholds for engineers and admins; its webhook form for admins
        PageRule("get", lambda w: f"/projects/{w.project.pk}/settings/", Role.ENGINEER),
        PageRule(
            "post",
            lambda w: f"/projects/{w.project.pk}/settings/",
            Role.ADMIN,
            data=lambda w: {"form": "webhook", "url": "not a url", "secret": "short"},
        ),
    ],
    "alerts:webhook-delete": [
        PageRule(
            "post",
            lambda w: f"/projects/{w.project.pk}/webhooks/999999/delete/",
            Role.ADMIN,
            ok=302,
        )
    ],
    "alerts:webhook-edit": [
        PageRule(
            "get",
            lambda w: f"/projects/{w.project.pk}/webhooks/{_webhook(w)}/edit/",
            Role.ADMIN,
        )
    ],
    "alerts:webhook-test": [
        PageRule(
            "post",
            lambda w: f"/projects/{w.project.pk}/webhooks/{_webhook(w)}/test/",
            Role.ADMIN,
            ok=302,
        )
    ],
    "sessions:delete": [PageRule("get", lambda w: f"/sessions/{w.session.pk}/delete/", Role.ADMIN)],
    "sessions:policy": [PageRule("get", lambda w: f"/projects/{w.project.pk}/policy/", Role.ADMIN)],
    "team:comment-create": [
        PageRule(
            "post",
            lambda w: f"/sessions/{w.session.pk}/comments/",
            Role.VIEWER,
            ok=302,
            data=lambda w: {"body": "looked at this"},
        )
    ],
    # every member is sent back to the page; only the author's edit is kept (tests/team/
    # test_comments.py::test_only_the_author_can_edit_and_an_empty_comment_is_refused)
    "team:comment-edit": [
        PageRule("post", _comment, Role.VIEWER, ok=302, data=lambda w: {"body": "changed"})
    ],
    "team:feedback": [
        PageRule("get", lambda w: f"/projects/{w.project.pk}/feedback/", Role.VIEWER)
    ],
    "team:feedback-export": [
        PageRule("get", lambda w: f"/projects/{w.project.pk}/feedback.jsonl", Role.VIEWER)
    ],
    # a mark takes the engineer role, as an alert's triage does; viewers read the counts
    "team:fact-mark": [
        PageRule(
            "post",
            lambda w: f"/feedback/sessions/{w.session.pk}/compactions/{w.span.seq}/",
            Role.ENGINEER,
            ok=302,
            data=lambda w: {"fact": _fact(w), "mark": "right"},
        )
    ],
    "team:alert-mark": [
        PageRule(
            "post",
            lambda w: f"/feedback/alerts/{_markable_alert(w)}/",
            Role.ENGINEER,
            ok=302,
            data=lambda w: {"mark": "wrong"},
        )
    ],
    "team:filter-save": [
        PageRule(
            "post", lambda w: "/filters/", ANY, ok=302, data=lambda w: {"name": "n", "query": "q=x"}
        )
    ],
    "team:filter-delete": [PageRule("post", lambda w: "/filters/999999/delete/", ANY, ok=302)],
    "sessions:curve-export": [
        PageRule("get", lambda w: f"/sessions/{w.session.pk}/curve.csv", Role.VIEWER)
    ],
    "sessions:spans-export": [
        PageRule("get", lambda w: f"/sessions/{w.session.pk}/spans.json", Role.VIEWER)
    ],
    "sessions:list-export": [PageRule("get", lambda w: "/sessions/export.csv", ANY)],
    "sessions:search": [PageRule("get", lambda w: "/search/?q=turn", ANY)],
    # the upload form's background import: any member of its project reads it
    "sessions:import-job": [PageRule("get", lambda w: f"/imports/{_import_job(w)}/", Role.VIEWER)],
    "sessions:import-job-status": [
        PageRule("get", lambda w: f"/imports/{_import_job(w)}/status/", Role.VIEWER)
    ],
    "sessions:import-upload": [
        # the engineer gets as far as "choose a file"; an outsider's project is not among theirs
        PageRule(
            "post",
            lambda w: "/imports/claude-code/",
            Role.ENGINEER,
            ok=400,
            data=lambda w: {"project": w.project.pk},
            outsider=400,
        )
    ],
}

# Routes outside the role matrix, each with the door that guards it.
EXEMPT = {
    "healthz": "liveness probe: its status; the backlog only of the signed-in caller's projects",
    "login": "the sign-in page itself",
    "password-set": "the one-time link of manage.py adduser: its token is the door",
    "logout": "signs the current user out",
    "otlp-traces": "bearer-key door (sessions/auth.py), in API_ROUTES below",
    "admin": "Django admin: staff and superusers only, audit model read-only",
    "admin-audit-moved": "a redirect to the admin's audit log, which checks the caller",
    "api": "the NinjaAPI: every operation is in API_ROUTES below",
}

ROLES = [Role.VIEWER, Role.ENGINEER, Role.PRIVACY_REVIEWER, Role.ADMIN]


def _route_names(patterns: list[Any], namespace: str = "") -> set[str]:
    names: set[str] = set()
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            ns = pattern.namespace
            if ns in ("admin", "api"):
                names.add(ns)
                continue
            names |= _route_names(pattern.url_patterns, f"{ns}:" if ns else namespace)
        elif isinstance(pattern, URLPattern):
            names.add(f"{namespace}{pattern.name}" if pattern.name else str(pattern.pattern))
    return names


def _api_operations() -> set[tuple[str, str]]:
    found = set()
    for _, router in api._routers:
        for path, view in router.path_operations.items():
            for operation in view.operations:
                for method in operation.methods:
                    found.add((method, path))
    return found


def test_every_route_is_in_the_matrix() -> None:
    assert _route_names(get_resolver().url_patterns) == set(PAGES) | set(EXEMPT)
    assert _api_operations() == {(m, p) for m, p, *_ in API_ROUTES if p.startswith("/")}


def _call(client: Client, rule: PageRule, w: World) -> Any:
    path = rule.path(w)
    if rule.method == "get":
        return client.get(path)
    return client.post(path, rule.data(w))


@pytest.mark.parametrize("name", sorted(PAGES))
def test_each_page_answers_each_caller_exactly(client: Client, world: World, name: str) -> None:
    for rule in PAGES[name]:
        client.logout()
        anonymous = _call(client, rule, world)
        assert anonymous.status_code == 302, name
        assert anonymous["Location"].startswith("/login/"), name

        client.force_login(make_user(project=make_project(), role=Role.ADMIN))
        expected = rule.ok if rule.role is ANY else rule.outsider
        assert _call(client, rule, world).status_code == expected, f"{name} outsider"

        for role in ROLES:
            client.force_login(make_user(project=world.project, role=role))
            allowed = rule.role is ANY or access.RANK[role] >= access.RANK[rule.role]
            status = _call(client, rule, world).status_code
            assert status == (rule.ok if allowed else 403), f"{rule.method} {name} as {role}"

        superuser = make_user(is_superuser=True)
        client.force_login(superuser)
        assert _call(client, rule, world).status_code == rule.ok, f"{name} superuser"


# --- API -------------------------------------------------------------------------------

# (method, path as routed, concrete path, body, status with the project's key, with another
# project's key). No key or a revoked key always gets 401.
API_ROUTES: list[tuple[str, str, Callable[[World], str], Any, int, int]] = [
    (
        "POST",
        "/sessions/{external_id}/events",
        lambda w: "/api/v1/sessions/run-2/events",
        {"messages": [{"seq": 0, "role": "user", "content": "hi"}]},
        202,
        202,
    ),
    ("GET", "/sessions", lambda w: "/api/v1/sessions", None, 200, 200),
    ("GET", "/sessions/{external_id}", lambda w: "/api/v1/sessions/run-1", None, 200, 404),
    (
        "GET",
        "/sessions/{external_id}/messages",
        lambda w: "/api/v1/sessions/run-1/messages",
        None,
        200,
        404,
    ),
    (
        "GET",
        "/sessions/{external_id}/curve",
        lambda w: "/api/v1/sessions/run-1/curve",
        None,
        200,
        404,
    ),
    (
        "GET",
        "/sessions/{external_id}/compactions",
        lambda w: "/api/v1/sessions/run-1/compactions",
        None,
        200,
        404,
    ),
    (
        "GET",
        "/sessions/{external_id}/findings",
        lambda w: "/api/v1/sessions/run-1/findings",
        None,
        200,
        404,
    ),
    (
        "POST",
        "/sessions/{external_id}/reanalyze",
        lambda w: "/api/v1/sessions/run-1/reanalyze",
        None,
        202,
        404,
    ),
    (
        "POST",
        "/sessions/{external_id}/replays",
        lambda w: "/api/v1/sessions/run-1/replays",
        {},
        202,
        404,
    ),
    ("GET", "/replays/{replay_id}", lambda w: f"/api/v1/replays/{w.replay.pk}", None, 200, 404),
    (
        "POST",
        "/experiments",
        lambda w: "/api/v1/experiments",
        {"name": "g", "policies": [{}], "sessions": ["run-1"]},
        202,
        400,
    ),
    (
        "GET",
        "/experiments/{experiment_id}",
        lambda w: f"/api/v1/experiments/{w.experiment.pk}",
        None,
        200,
        404,
    ),
    # The world's experiment is still queued: its advice is a 409 to its own key.
    (
        "GET",
        "/experiments/{experiment_id}/advice",
        lambda w: f"/api/v1/experiments/{w.experiment.pk}/advice",
        None,
        409,
        404,
    ),
    # Nothing of the world is replayed yet; another project has no session at all: both 409.
    ("GET", "/advice", lambda w: "/api/v1/advice?days=30", None, 409, 409),
    # An empty body passes the key check and is then refused for what it is.
    ("POST", "/imports/claude-code", lambda w: "/api/v1/imports/claude-code", "", 400, 400),
    # Not multipart: past the key check, refused for what it is.
    ("POST", "/imports", lambda w: "/api/v1/imports", "", 400, 400),
    # Still queued: 202 to its own project's key, not found for another's.
    ("GET", "/imports/{job_id}", lambda w: f"/api/v1/imports/{_import_job(w)}", None, 202, 404),
    ("POST", "otlp", lambda w: "/v1/traces", {"resourceSpans": []}, 200, 200),
    ("GET", "/alerts", lambda w: "/api/v1/alerts", None, 200, 200),
    ("GET", "/search", lambda w: "/api/v1/search?q=turn", None, 200, 200),
    (
        "POST",
        "/alerts/{alert_id}/acknowledge",
        lambda w: f"/api/v1/alerts/{_alert(w)}/acknowledge",
        {},
        200,
        404,
    ),
    (
        "POST",
        "/alerts/{alert_id}/resolve",
        lambda w: f"/api/v1/alerts/{_alert(w)}/resolve",
        {"reason": "handled"},
        200,
        404,
    ),
    (
        "POST",
        "/alerts/{alert_id}/mute",
        lambda w: f"/api/v1/alerts/{_alert(w)}/mute",
        {"until": "2030-01-01T00:00:00Z"},
        200,
        404,
    ),
    ("GET", "/feedback/summary", lambda w: "/api/v1/feedback/summary", None, 200, 200),
    ("GET", "/feedback/export", lambda w: "/api/v1/feedback/export", None, 200, 200),
    (
        "DELETE",
        "/sessions/{external_id}",
        lambda w: "/api/v1/sessions/run-1?reason=matrix",
        None,
        200,
        404,
    ),
]


def _api_call(client: Client, method: str, path: str, body: Any, key: str | None) -> Any:
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    if method == "GET":
        return client.get(path, **headers)
    if method == "DELETE":
        return client.delete(path, **headers)
    if isinstance(body, str):
        return client.post(path, body, content_type="application/x-ndjson", **headers)
    return client.post(path, body, content_type="application/json", **headers)


@pytest.mark.parametrize(
    ("method", "route", "path", "body", "own", "other"), API_ROUTES, ids=[r[1] for r in API_ROUTES]
)
def test_each_endpoint_answers_each_key_exactly(
    client: Client,
    world: World,
    method: str,
    route: str,
    path: Any,
    body: Any,
    own: int,
    other: int,
) -> None:
    url = path(world)
    other_key = services.api_key_create(project=make_project()).raw_key
    revoked = services.api_key_create(project=world.project, name="old")
    ApiKey.objects.filter(pk=revoked.api_key.pk).update(revoked_at="2026-01-01T00:00:00Z")
    # A signed-in superuser without a key is no API caller either.
    client.force_login(make_user(is_superuser=True))
    assert _api_call(client, method, url, body, None).status_code == 401
    client.logout()
    assert _api_call(client, method, url, body, revoked.raw_key).status_code == 401
    assert _api_call(client, method, url, body, other_key).status_code == other
    assert _api_call(client, method, url, body, world.key).status_code == own
