"""The session header names its cost once: a one-model session does not repeat the total as
that model's share; a session of several models shows each model's share."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from compaction import pipeline
from tests.factories import make_project, make_session, make_user, wire_message

pytestmark = pytest.mark.django_db

USAGE = {"input_tokens": 20_000, "output_tokens": 500}


def _cost_cell(client: Client, model_of_second_call: str) -> str:
    project = make_project()
    session = make_session(
        project,
        session={"model": "claude-opus-4-6"},
        messages=[
            wire_message(0, "user", "Migrate billing."),
            wire_message(1, "assistant", "Reading.", usage=USAGE),
            wire_message(2, "user", "Go on."),
            wire_message(3, "assistant", "Done.", usage=USAGE, model=model_of_second_call),
        ],
    )
    pipeline.session_analyse(session_id=session.pk)
    client.force_login(make_user(project=project))
    page = client.get(f"/sessions/{session.pk}/").content.decode()
    [cell] = re.findall(r'<dd class="cost">(.*?)</dd>', page, re.DOTALL)
    return re.sub(r"<[^>]+>", "", cell)


def test_a_one_model_session_shows_its_cost_once(client: Client):
    cell = _cost_cell(client, "claude-opus-4-6")
    [usd] = re.findall(r"\$\d+\.\d\d", cell)
    assert cell.startswith(usd)
    assert "2 calls of claude-opus-4-6" in cell


def test_a_session_of_two_models_shows_each_share(client: Client):
    cell = _cost_cell(client, "claude-sonnet-4-5")
    total, *shares = re.findall(r"\$(\d+\.\d\d)", cell)
    assert len(shares) == 2
    assert float(total) == pytest.approx(sum(float(s) for s in shares), abs=0.011)
