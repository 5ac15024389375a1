"""manage.py commands that operators and the demo use."""

from __future__ import annotations

import socket
from io import StringIO

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
    assert queues == [["analysis", "replays", "sawtooth"], ["webhooks"]]
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
    assert consumed == {"worker": {"analysis", "replays", "sawtooth"}, "announcer": {"webhooks"}}
