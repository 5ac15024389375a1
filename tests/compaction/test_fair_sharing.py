"""Fair sharing: one project cannot take every worker, every row or every byte."""

from __future__ import annotations

import gzip
import io

import pytest
from django.test import Client
from django.test.utils import override_settings

from compaction.models import Experiment, ReplayRun, ReplayStatus
from sessions.models import AgentSession, Message, Probe
from tests.factories import conversation, make_key, make_project, make_session, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return make_project(name="acme")


@pytest.fixture
def auth(project) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_key(project)}"}


def _post(client: Client, url: str, body: object, auth: dict[str, str]):
    return client.post(url, data=body, content_type="application/json", headers=auth)


@override_settings(REPLAY_QUOTA_PER_PROJECT=2)
def test_replays_beyond_the_project_quota_get_429_naming_it(client: Client, project, auth):
    make_session(project, external_id="run-1", messages=6)
    url = "/api/v1/sessions/run-1/replays"
    assert _post(client, url, {}, auth).status_code == 202
    assert _post(client, url, {}, auth).status_code == 202
    refused = _post(client, url, {}, auth)
    assert refused.status_code == 429
    assert refused.json()["error"].startswith(
        "replays: this project has 2 replay runs queued or running and asks for 1 more; "
        "the quota is 2 (REPLAY_QUOTA_PER_PROJECT)"
    )
    assert refused["Retry-After"] == "30"
    assert ReplayRun.objects.count() == 2


@override_settings(REPLAY_QUOTA_PER_PROJECT=2)
def test_finished_runs_free_the_quota_and_other_projects_keep_their_own(
    client: Client, project, auth
):
    make_session(project, external_id="run-1", messages=6)
    other = make_project(name="other")
    make_session(other, external_id="run-1", messages=6)
    other_auth = {"Authorization": f"Bearer {make_key(other)}"}
    url = "/api/v1/sessions/run-1/replays"
    for _ in range(2):
        assert _post(client, url, {}, auth).status_code == 202
    assert _post(client, url, {}, other_auth).status_code == 202
    ReplayRun.objects.filter(session__project=project).update(status=ReplayStatus.DONE)
    assert _post(client, url, {}, auth).status_code == 202


@override_settings(REPLAY_QUOTA_PER_PROJECT=5)
def test_an_experiment_that_would_pass_the_quota_is_refused_whole(client: Client, project, auth):
    for n in range(3):
        make_session(project, external_id=f"run-{n}", messages=6)
    body = {"name": "grid", "policies": [{"keep_last": 2}, {"keep_last": 4}]}  # 2 x 3 = 6 runs
    refused = _post(client, "/api/v1/experiments", body, auth)
    assert refused.status_code == 429
    assert "asks for 6 more; the quota is 5" in refused.json()["error"]
    assert not Experiment.objects.exists()
    assert not ReplayRun.objects.exists()


@override_settings(REPLAY_QUOTA_PER_PROJECT=1)
def test_the_replay_form_shows_the_quota_as_a_form_error(client: Client, project):
    session = make_session(project, external_id="run-1", messages=6)
    client.force_login(make_user(project=project))
    url = f"/sessions/{session.pk}/replay/"
    form = {
        "soft_limit": 6000,
        "hard_limit": 9000,
        "keep_last": 2,
        "unit": "step",
        "stages": "summarize",
        "summarizer": "extractive",
    }
    accepted = client.post(url, form)
    assert accepted.status_code == 302, accepted.context["form"].errors
    refused = client.post(url, form)
    assert refused.status_code == 200
    [error] = refused.context["form"].non_field_errors()
    assert "the quota is 1 (REPLAY_QUOTA_PER_PROJECT)" in error
    assert ReplayRun.objects.count() == 1


@pytest.mark.parametrize(
    ("field", "setting", "item"),
    [
        ("compactions", "INGEST_MAX_COMPACTIONS_PER_BATCH", lambda n: {"seq": n}),
        ("probes", "INGEST_MAX_PROBES_PER_BATCH", lambda n: {"seq": 0, "text": f"fact {n}"}),
        ("messages", "INGEST_MAX_MESSAGES_PER_BATCH", None),
    ],
)
def test_a_batch_over_a_per_batch_cap_is_413_naming_the_limit(
    client: Client, auth, field, setting, item
):
    body: dict[str, object] = {"messages": conversation(4)}
    if item is not None:
        body[field] = [item(n) for n in range(4)]
    with override_settings(**{setting: 3}):
        response = _post(client, "/api/v1/sessions/s/events", body, auth)
    assert response.status_code == 413
    assert response.json() == {
        "error": f"{field}: 4 in one batch, the limit is 3 ({setting}); "
        "send them in several batches"
    }


def test_compactions_are_paginated_and_stay_a_list(client: Client, project, auth):
    make_session(
        project,
        external_id="run-1",
        messages=conversation(12),
        compactions=[{"seq": seq, "strategy": "summarize"} for seq in (2, 4, 6, 8, 10)],
    )
    url = "/api/v1/sessions/run-1/compactions"
    everything = client.get(url, headers=auth).json()
    assert [c["seq"] for c in everything] == [2, 4, 6, 8, 10]
    page = client.get(url + "?offset=1&limit=2", headers=auth).json()
    assert [c["seq"] for c in page] == [4, 6]
    assert client.get(url + "?offset=99999999999", headers=auth).status_code == 400
    assert client.get(url + "?limit=1001", headers=auth).status_code == 400


def _bomb(inflated: int) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as gz:
        chunk = b"\n" * (1024 * 1024)
        for _ in range(inflated // len(chunk)):
            gz.write(chunk)
    return out.getvalue()


@override_settings(IMPORT_MAX_BYTES=1024 * 1024)
def test_the_import_door_refuses_a_gzip_bomb_at_the_limit(client: Client, auth):
    bomb = _bomb(64 * 1024 * 1024)
    assert len(bomb) < 100_000
    for headers in ({}, {"Content-Encoding": "gzip"}):
        response = client.post(
            "/api/v1/imports/claude-code?name=bomb.jsonl.gz",
            data=bomb,
            content_type="application/x-ndjson",
            headers={**auth, **headers},
        )
        assert response.status_code == 413
        assert response.json() == {
            "error": "file bomb.jsonl.gz: larger than the 1048576-byte limit after decompression "
            "(gzip layer 1)"
        }


@override_settings(IMPORT_MAX_BYTES=1024 * 1024)
def test_a_multipart_gzip_bomb_is_refused_too(client: Client, auth):
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("bomb.jsonl.gz", _bomb(8 * 1024 * 1024))
    response = client.post("/api/v1/imports/claude-code", {"file": upload}, headers=auth)
    assert response.status_code == 413
    assert "1048576-byte limit after decompression" in response.json()["error"]


@pytest.mark.parametrize(
    ("field", "setting", "first", "second"),
    [
        (
            "compactions",
            "SESSION_MAX_COMPACTIONS",
            {"compactions": [{"seq": 1}, {"seq": 2}]},
            {"compactions": [{"seq": 3}, {"seq": 4}]},
        ),
        (
            "probes",
            "SESSION_MAX_PROBES",
            {"probes": [{"seq": 0, "text": "a"}, {"seq": 0, "text": "b"}]},
            {"probes": [{"seq": 1, "text": "c"}, {"seq": 1, "text": "d"}]},
        ),
        ("messages", "SESSION_MAX_MESSAGES", {}, {"messages": conversation(3, start=4)}),
    ],
)
def test_a_batch_taking_a_session_past_its_limit_is_413_and_stores_nothing(
    client: Client, project, auth, field, setting, first, second
):
    url = "/api/v1/sessions/s/events"
    with override_settings(**{setting: 5 if field == "messages" else 3}):
        assert _post(client, url, {"messages": conversation(4), **first}, auth).status_code == 202
        before = AgentSession.objects.get(project=project, external_id="s")
        body = {"messages": conversation(7), **second}
        refused = _post(client, url, body, auth)
        # the same batch with nothing new for the full field is accepted: resends stay duplicates
        resent = _post(client, url, {"messages": conversation(4), **first}, auth)
    assert refused.status_code == 413
    limit = 5 if field == "messages" else 3
    adding = 3 if field == "messages" else 2
    held = 4 if field == "messages" else 2
    assert refused.json() == {
        "error": f"{field}: the session holds {held} and the batch adds {adding}, the limit is "
        f"{limit} per session ({setting}); start a new session"
    }
    after = AgentSession.objects.get(pk=before.pk)
    assert (after.message_count, after.compaction_count) == (4, before.compaction_count)
    assert Message.objects.filter(session=after).count() == 4
    assert Probe.objects.filter(session=after).count() == (2 if field == "probes" else 0)
    assert resent.status_code == 202
