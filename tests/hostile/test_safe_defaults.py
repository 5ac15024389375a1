"""Safe by default: no public secret key, HTTPS headers and cookies, a script-only-from-self
CSP, login throttling on both login pages, and no trace content in any log line."""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.db import DataError
from django.test import Client, override_settings

from compaction import pipeline
from compaction.engine import analysis
from sessions import services
from sessions.models import AgentSession
from tests.factories import make_key, make_project, make_user, wire_message

ROOT = Path(__file__).resolve().parents[2]
CPF = "123.456.789-09"
EMAIL = "maria.silva@example.com.br"
PRIVATE = f"Customer {EMAIL}, CPF {CPF}, asked for a refund."


def _env() -> dict[str, str]:
    # (the browser tests set DJANGO_ALLOW_ASYNC_UNSAFE in this process: no deployment would)
    drop = (
        "SECRET_KEY",
        "DJANGO_SECRET_KEY",
        "SAWTOOTH_PRODUCTION",
        "DATABASE_URL",
        "DJANGO_ALLOW_ASYNC_UNSAFE",
    )
    clean = {k: v for k, v in os.environ.items() if k not in drop}
    return {**clean, "DJANGO_SETTINGS_MODULE": "config.settings"}


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        env={**_env(), **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    code = (
        "from django.core.management import execute_from_command_line; "
        f"execute_from_command_line(['manage.py', *{list(args)!r}])"
    )
    return _run(code, **env)


def test_without_a_key_each_install_generates_its_own_under_var(tmp_path: Path) -> None:
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    first = _run(code, SAWTOOTH_VAR_DIR=str(tmp_path / "a"), SAWTOOTH_PRODUCTION="0")
    again = _run(code, SAWTOOTH_VAR_DIR=str(tmp_path / "a"), SAWTOOTH_PRODUCTION="0")
    other = _run(code, SAWTOOTH_VAR_DIR=str(tmp_path / "b"), SAWTOOTH_PRODUCTION="0")
    assert first.returncode == 0, first.stderr
    key = first.stdout.strip()
    assert len(key) >= 50
    assert again.stdout.strip() == key
    assert other.stdout.strip() not in ("", key)
    assert "insecure" not in key
    stored = tmp_path / "a" / "secret_key"
    assert stored.read_text() == key
    assert stored.stat().st_mode & 0o777 == 0o600


def test_a_dead_time_shorter_than_two_heartbeats_is_refused(tmp_path: Path) -> None:
    # Otherwise one late heartbeat would make live work look abandoned, and it would run twice.
    code = "from django.conf import settings; print(settings.WORKER_DEAD_SECONDS)"
    env = {"SAWTOOTH_VAR_DIR": str(tmp_path), "SAWTOOTH_PRODUCTION": "0"}
    refused = _run(code, WORKER_HEARTBEAT_SECONDS="5", WORKER_DEAD_SECONDS="9", **env)
    assert refused.returncode != 0
    assert (
        "WORKER_DEAD_SECONDS=9 must be at least twice WORKER_HEARTBEAT_SECONDS=5" in refused.stderr
    )
    accepted = _run(code, WORKER_HEARTBEAT_SECONDS="5", WORKER_DEAD_SECONDS="10", **env)
    assert accepted.stdout.strip() == "10", accepted.stderr


@pytest.mark.parametrize(
    "env",
    [
        {"SAWTOOTH_PRODUCTION": "1"},
        {"DATABASE_URL": "postgres://x@127.0.0.1:5432/x", "DJANGO_DEBUG": "0"},
        {"SAWTOOTH_PRODUCTION": "1", "DJANGO_SECRET_KEY": "insecure-development-key-change-me"},
        {"SAWTOOTH_PRODUCTION": "1", "SECRET_KEY": "change-me-in-production"},
    ],
    ids=["explicit", "debug-off-with-database", "old-public-default", "compose-public-default"],
)
def test_production_refuses_to_start_without_a_key_of_its_own(
    tmp_path: Path, env: dict[str, str]
) -> None:
    for module in ("config.wsgi", "config.asgi"):
        started = _run(f"import {module}", SAWTOOTH_VAR_DIR=str(tmp_path), **env)
        assert started.returncode != 0, module
        assert "SECRET_KEY: required in production" in started.stderr
    worker = subprocess.run(
        [str(Path(sys.executable).parent / "celery"), "-A", "config", "worker", "--pool=solo"],
        env={**_env(), "SAWTOOTH_VAR_DIR": str(tmp_path), "CELERY_BROKER_URL": "memory://", **env},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert worker.returncode != 0
    assert "SECRET_KEY: required in production" in worker.stderr
    checked = _manage("check", "--deploy", SAWTOOTH_VAR_DIR=str(tmp_path), **env)
    assert checked.returncode != 0
    assert "sawtooth.E001" in checked.stderr


def test_check_deploy_is_clean_under_the_production_settings(tmp_path: Path) -> None:
    env = {
        "SAWTOOTH_PRODUCTION": "1",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "sawtooth.example.com",
        "SAWTOOTH_VAR_DIR": str(tmp_path),
    }
    checked = _manage("check", "--deploy", "--fail-level", "WARNING", **env)
    assert checked.returncode == 0, checked.stderr + checked.stdout
    assert "System check identified no issues" in checked.stdout
    started = _run("import config.wsgi; print('serving')", **env)
    assert started.stdout.strip() == "serving", started.stderr


def test_templates_hold_no_inline_script() -> None:
    inline = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
    handler = re.compile(r"\son[a-z]+\s*=", re.IGNORECASE)
    offenders = []
    for path in (ROOT / "templates").rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        if inline.search(text) or handler.search(text) or "javascript:" in text:
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


@pytest.mark.django_db
def test_every_page_gets_a_csp_forbidding_inline_scripts(client: Client) -> None:
    for path in ("/login/", "/admin/login/", "/healthz"):
        policy = client.get(path)["Content-Security-Policy"]
        scripts = re.search(r"script-src ([^;]*)", policy)
        assert scripts is not None
        assert scripts.group(1).split() == ["'self'"], policy
        assert "object-src 'none'" in policy
        assert "frame-ancestors 'none'" in policy


@pytest.mark.django_db
def test_over_https_cookies_are_secure_and_hsts_is_sent(client: Client) -> None:
    user = make_user(project=make_project())
    page = client.get("/login/", secure=True)
    assert page["Strict-Transport-Security"].startswith("max-age=31536000")
    assert page.cookies["csrftoken"]["secure"] is True
    response = client.post(
        "/login/",
        {"username": user.username, "password": "correct-horse-battery"},
        secure=True,
    )
    assert response.status_code == 302
    assert response.cookies["sessionid"]["secure"] is True
    assert response.cookies["sessionid"]["httponly"] is True
    plain = Client().get("/login/")
    assert "Strict-Transport-Security" not in plain


@pytest.fixture
def fresh_cache() -> Any:
    cache.clear()
    yield
    cache.clear()


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_cache")
@pytest.mark.parametrize("page", ["/login/", "/admin/login/"])
def test_an_account_is_locked_after_repeated_failures_even_with_the_right_password(
    page: str,
) -> None:
    user = make_user(project=make_project(), is_staff=True)
    attacker = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(5):
        wrong = attacker.post(page, {"username": user.username, "password": "guess"})
        assert wrong.status_code == 200
    right = {"username": user.username, "password": "correct-horse-battery"}
    assert attacker.post(page, right).status_code == 200  # still the form: locked out
    # from another address too: the lock is on the account
    assert Client(REMOTE_ADDR="198.51.100.2").post(page, right).status_code == 200
    assert "_auth_user_id" not in attacker.session


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_cache")
@override_settings(LOGIN_MAX_FAILURES_PER_ADDRESS=8)
def test_an_address_is_locked_after_failures_across_accounts() -> None:
    victim = make_user(project=make_project())
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for n in range(8):
        attacker.post("/login/", {"username": f"nobody-{n}", "password": "guess"})
    right = {"username": victim.username, "password": "correct-horse-battery"}
    assert attacker.post("/login/", right).status_code == 200
    assert Client(REMOTE_ADDR="198.51.100.3").post("/login/", right).status_code == 302


@pytest.mark.django_db
@pytest.mark.usefixtures("fresh_cache")
def test_a_successful_login_clears_the_account_count() -> None:
    user = make_user(project=make_project())
    person = Client(REMOTE_ADDR="192.0.2.10")
    for _ in range(4):
        person.post("/login/", {"username": user.username, "password": "typo"})
    right = {"username": user.username, "password": "correct-horse-battery"}
    assert person.post("/login/", right).status_code == 302
    person.logout()
    for _ in range(4):
        person.post("/login/", {"username": user.username, "password": "typo"})
    assert person.post("/login/", right).status_code == 302


@pytest.mark.django_db
def test_no_trace_content_reaches_the_log_when_a_write_fails(
    client: Client, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = make_key(make_project())
    batch = {"messages": [wire_message(0, content=PRIVATE)]}

    def failing_insert(messages: Any, content_json: Any) -> Any:
        # what psycopg says when PostgreSQL refuses a value: it quotes the payload
        raise DataError(f'invalid input syntax for type json\nDETAIL: ... "{PRIVATE}"')

    monkeypatch.setattr(services, "_messages_insert", failing_insert)
    caplog.set_level("DEBUG")
    response = client.post(
        "/api/v1/sessions/s-1/events",
        data=json.dumps(batch),
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert response.status_code == 400
    assert response.json() == {"error": "body: a value is outside what storage holds"}
    monkeypatch.undo()

    # an analysis whose engine error quotes a message
    assert (
        client.post(
            "/api/v1/sessions/s-2/events",
            data=json.dumps(batch),
            content_type="application/json",
            headers={"Authorization": f"Bearer {key}"},
        ).status_code
        == 202
    )

    def failing_analysis(*args: Any, **kwargs: Any) -> Any:
        raise ValueError(f"cannot split message {PRIVATE!r}")

    monkeypatch.setattr(analysis, "analyse", failing_analysis)
    pipeline.session_analyse(session_id=AgentSession.objects.get().pk)

    # an unexpected error in a request: Django logs it with its traceback
    client.raise_request_exception = False
    monkeypatch.setattr(
        "sessions.services.events_ingest",
        lambda **kw: (_ for _ in ()).throw(RuntimeError(PRIVATE)),
    )
    crashed = client.post(
        "/api/v1/sessions/s-3/events",
        data=json.dumps(batch),
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert crashed.status_code == 500

    text = caplog.text
    assert "analysis of session" in text  # the failures were logged...
    assert "Internal Server Error" in text
    assert "ValueError" in text
    assert "RuntimeError" in text
    assert CPF not in text  # ...without their content
    assert EMAIL not in text
    for record in caplog.records:
        assert CPF not in record.getMessage()
        assert record.exc_info is None or record.exc_info[1] is None
