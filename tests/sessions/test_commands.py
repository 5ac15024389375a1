"""manage.py commands that operators and the demo use."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from sessions import example_data, services
from sessions.models import AgentSession, ApiKey, Membership, Project, Role

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_createproject_prints_the_project() -> None:
    output = run("createproject", "billing")
    project = Project.objects.get(name="billing")
    assert output == f"Created project 'billing' (id {project.pk})\n"
    assert project.allow_external_models is False


def test_createproject_refuses_a_duplicate_name() -> None:
    run("createproject", "billing")
    with pytest.raises(CommandError, match="project 'billing' already exists"):
        run("createproject", "billing")


def test_createapikey_prints_a_working_key_alone_on_the_last_line() -> None:
    run("createproject", "billing")
    output = run("createapikey", "billing", "--name", "ci")
    raw_key = output.splitlines()[-1]
    assert raw_key.startswith("st_")
    assert " " not in raw_key
    assert services.api_key_authenticate(raw_key=raw_key) == Project.objects.get(name="billing")
    stored = ApiKey.objects.get()
    assert raw_key not in (stored.hashed_key, stored.prefix)
    assert stored.name == "ci"


def test_createapikey_needs_an_existing_project() -> None:
    with pytest.raises(CommandError, match="project 'nope' not found"):
        run("createapikey", "nope")


@pytest.fixture
def demo_configuration(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """What demo_setup checks, as `make demo` has it: not production, no SECRET_KEY given
    (the suite itself may run on PostgreSQL with DEBUG off, which counts as production)."""
    settings.SAWTOOTH_PRODUCTION = False
    monkeypatch.delenv("SECRET_KEY", raising=False)
    monkeypatch.delenv("DJANGO_SECRET_KEY", raising=False)


@pytest.mark.usefixtures("demo_configuration")
def test_demo_setup_loads_every_example_session_once() -> None:
    examples = example_data.example_sessions()
    total = sum(len(batch["messages"]) for e in examples for batch in e.batches)

    first = run("demo_setup")
    again = run("demo_setup")

    stored = AgentSession.objects.filter(project__name="demo").order_by("pk")
    assert [(s.external_id, s.message_count, s.compaction_count) for s in stored] == [
        (
            e.external_id,
            sum(len(batch["messages"]) for batch in e.batches),
            sum(len(batch.get("compactions", [])) for batch in e.batches),
        )
        for e in examples
    ]
    assert f"{total} messages stored, 0 already there" in first
    assert f"0 messages stored, {total} already there" in again
    assert Membership.objects.get(user__username="demo").role == Role.ADMIN


@pytest.mark.usefixtures("demo_configuration")
def test_demo_setup_prints_the_url_it_is_served_on() -> None:
    assert "Log in at http://127.0.0.1:8000/ as demo" in run("demo_setup")
    output = run("demo_setup", "--url", "http://0.0.0.0:8123/")
    assert "Log in at http://0.0.0.0:8123/ as demo / demo-sawtooth" in output
    assert "8000" not in output


def test_rundemo_on_a_busy_port_suggests_the_next_one() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(CommandError, match=rf"make demo PORT={port + 1}\)"):
            run("rundemo", f"127.0.0.1:{port}")


def test_adduser_prints_a_link_that_sets_a_password_once_and_logs_in(client) -> None:
    output = run(
        "adduser", "rita", "--email", "rita@casa-aurora.com.br", "--url", "http://sawtooth.test/"
    )
    said, how, link = output.splitlines()
    assert said == "Created user 'rita'."
    assert how.startswith("Send them this link to choose a password; it works once")
    assert link.startswith("http://sawtooth.test/login/set-password/")
    user = get_user_model().objects.get(username="rita")
    assert user.email == "rita@casa-aurora.com.br"
    assert not user.has_usable_password()

    path = link.removeprefix("http://sawtooth.test")
    form = client.get(path, follow=True)
    assert form.status_code == 200
    assert b"Choose a password" in form.content
    done = client.post(
        form.redirect_chain[-1][0],
        {"new_password1": "casa-aurora-2026!", "new_password2": "casa-aurora-2026!"},
    )
    assert done.status_code == 302
    assert done["Location"] == "/"
    assert client.get("/").wsgi_request.user.get_username() == "rita"

    client.logout()
    spent = client.get(path, follow=True)
    assert b"This link has been used or has expired." in spent.content
    assert get_user_model().objects.get(username="rita").check_password("casa-aurora-2026!")


def test_adduser_refuses_an_existing_name_and_reset_issues_a_new_link() -> None:
    run("adduser", "rita")
    with pytest.raises(CommandError, match="a user named 'rita' already exists"):
        run("adduser", "rita")
    user = get_user_model().objects.get(username="rita")
    user.set_password("an-old-password-1")
    user.save()

    output = run("adduser", "rita", "--reset")
    assert output.splitlines()[0] == "rita must choose a new password."
    assert "/login/set-password/" in output.splitlines()[-1]
    assert not get_user_model().objects.get(username="rita").has_usable_password()
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        run("adduser", "nobody", "--reset")


@pytest.mark.usefixtures("demo_configuration")
def test_addmember_example_of_the_readme_works_on_the_demo_project() -> None:
    run("demo_setup")
    run("adduser", "rita")
    assert run("addmember", "demo", "rita", "viewer") == "rita is viewer in project 'demo'.\n"


def test_rundemo_gives_webhooks_a_worker_of_their_own(monkeypatch) -> None:
    """A webhook receiver that hangs holds the announcing worker's slot, never the one
    analyses and replays use."""
    from sessions.management.commands import rundemo

    started: list[list[str]] = []

    class Started:
        pid = 0

        def wait(self, timeout: float | None = None) -> int:
            return 0

    def popen(argv: list[str], **kwargs: object) -> Started:
        started.append(argv)
        return Started()

    def serve(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # Ctrl-C at once

    monkeypatch.setattr(rundemo.subprocess, "Popen", popen)
    monkeypatch.setattr(rundemo, "call_command", serve)
    monkeypatch.setattr(rundemo.os, "killpg", lambda pid, sig: None)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    run("rundemo", f"127.0.0.1:{port}")
    queues = [argv[argv.index("--queues") + 1].split(",") for argv in started]
    # background imports ride with the webhooks: neither may wait behind an analysis
    assert queues == [["analysis", "replays", "sawtooth"], ["webhooks", "imports"]]
    assert ["--beat" in argv for argv in started] == [True, False]  # one beat only


def test_docker_compose_gives_webhooks_a_worker_of_their_own() -> None:
    import yaml
    from django.conf import settings

    compose = yaml.safe_load((settings.BASE_DIR / "docker-compose.yml").read_text())
    consumed = {}
    for name, service in compose["services"].items():
        argv = service.get("command") or []
        if "worker" in argv:
            consumed[name] = set(argv[argv.index("-Q") + 1].split(","))
    assert consumed == {
        "worker": {"analysis", "replays", "sawtooth"},
        "announcer": {"webhooks", "imports"},
    }


@pytest.mark.parametrize(
    ("production", "key", "why"),
    [
        (True, "", "this is a production configuration (DEBUG off with DATABASE_URL set"),
        (False, "k" * 50, "a SECRET_KEY of its own is set in the environment"),
    ],
    ids=["production", "own-secret-key"],
)
def test_demo_setup_refuses_outside_the_demo_and_says_why(
    production: bool, key: str, why: str, demo_configuration: None, settings: Any, monkeypatch
) -> None:
    settings.SAWTOOTH_PRODUCTION = production
    if key:
        monkeypatch.setenv("SECRET_KEY", key)
    with pytest.raises(CommandError) as refused:
        run("demo_setup")
    assert str(refused.value).startswith("demo_setup refused: this is not the demo configuration: ")
    assert why in str(refused.value)
    assert "--i-know-this-is-not-a-demo" in str(refused.value)
    assert not get_user_model().objects.exists()
    assert not Project.objects.exists()
    # The flag alone does not set the published password on a real install.
    with pytest.raises(CommandError, match="pass a --password of your own"):
        run("demo_setup", "--i-know-this-is-not-a-demo")
    assert not get_user_model().objects.exists()
    output = run("demo_setup", "--i-know-this-is-not-a-demo", "--password", "a-long-own-password")
    assert "Log in at http://127.0.0.1:8000/ as demo / a-long-own-password" in output
    assert get_user_model().objects.get(username="demo").check_password("a-long-own-password")


def test_demo_setup_refuses_a_production_environment_before_touching_the_database(
    tmp_path: Path,
) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SECRET_KEY", "DJANGO_SECRET_KEY", "SAWTOOTH_PRODUCTION", "DJANGO_DEBUG")
    }
    # A database nobody listens to: the refusal must come before any connection.
    env.update(
        DATABASE_URL="postgres://sawtooth@127.0.0.1:9/production",
        SAWTOOTH_VAR_DIR=str(tmp_path),
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    refused = subprocess.run(
        [sys.executable, "manage.py", "demo_setup"],
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 1
    assert "demo_setup refused: this is not the demo configuration: this is a production" in (
        refused.stderr
    )
    assert "connection" not in refused.stderr


def test_demo_setup_runs_on_the_embedded_defaults_as_make_demo_does(tmp_path: Path) -> None:
    drop = (
        "DATABASE_URL",
        "SECRET_KEY",
        "DJANGO_SECRET_KEY",
        "SAWTOOTH_PRODUCTION",
        "DJANGO_DEBUG",
    )
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(SAWTOOTH_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings")
    root = Path(__file__).resolve().parents[2]
    for args in (["migrate", "--no-input"], ["demo_setup", "--url", "http://127.0.0.1:8001/"]):
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            env=env,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
    assert "Log in at http://127.0.0.1:8001/ as demo / demo-sawtooth" in done.stdout
