"""manage.py commands that operators and the demo use."""

from __future__ import annotations

import socket
from io import StringIO

import pytest
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
