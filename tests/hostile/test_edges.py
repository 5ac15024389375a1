"""The exact inputs that gave an HTML 500 (issue 14): each now gets a JSON 4xx naming the
field, and nothing is stored half-way."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from sessions.models import AgentSession, CompactionEvent, Message
from tests.factories import make_key, make_project, wire_message

pytestmark = pytest.mark.django_db

EVENTS = "/api/v1/sessions/{}/events"
BIG = 2**31  # one past PostgreSQL's integer


@pytest.fixture
def key() -> str:
    return make_key(make_project(name="edges"))


def post(client: Client, key: str, body: Any, external_id: str = "run-1") -> Any:
    data = body if isinstance(body, bytes) else json.dumps(body)
    return client.post(
        EVENTS.format(external_id),
        data=data,
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )


def get(client: Client, key: str, path: str) -> Any:
    return client.get(path, headers={"Authorization": f"Bearer {key}"})


def refused(response: Any, field: str, status: int = 400) -> dict[str, Any]:
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["error"].startswith(field), body
    return body


@pytest.mark.parametrize(
    ("batch", "field"),
    [
        ({"messages": [wire_message(0, usage={"input_tokens": BIG})]}, "messages[0].usage."),
        (
            {"messages": [wire_message(0, usage={"output_tokens": 10**30})]},
            "messages[0].usage.output_tokens",
        ),
        (
            {
                "messages": [
                    wire_message(
                        0, usage={"iterations": [{"input_tokens": BIG, "type": "message"}]}
                    )
                ]
            },
            "messages[0].usage.iterations[0].input_tokens",
        ),
        ({"compactions": [{"seq": 1, "tokens_before": BIG}]}, "compactions[0].tokens_before"),
        ({"compactions": [{"seq": 1, "tokens_after": BIG}]}, "compactions[0].tokens_after"),
        ({"compactions": [{"seq": 1, "duration_ms": BIG}]}, "compactions[0].duration_ms"),
        ({"compactions": [{"seq": BIG}]}, "compactions[0].seq"),
        ({"compactions": [{"seq": 1, "summary_seq": BIG}]}, "compactions[0].summary_seq"),
        (
            {"compactions": [{"seq": 1, "replaced": {"from_seq": 0, "to_seq": BIG}}]},
            "compactions[0].replaced.to_seq",
        ),
        ({"probes": [{"seq": BIG, "text": "x"}]}, "probes[0].seq"),
        ({"messages": [wire_message(BIG)]}, "messages[0].seq"),
    ],
    ids=[
        "input-tokens",
        "output-tokens-huge",
        "iteration",
        "tokens-before",
        "tokens-after",
        "duration",
        "compaction-seq",
        "summary-seq",
        "replaced",
        "probe-seq",
        "message-seq",
    ],
)
def test_integers_beyond_the_columns_are_a_400_naming_the_field(
    client: Client, key: str, batch: dict[str, Any], field: str
) -> None:
    refused(post(client, key, batch), field)
    assert not Message.objects.exists()
    assert not CompactionEvent.objects.exists()


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (
            b'{"messages": [{"seq": 0, "role": "assistant", "content": [{"type": "tool_use", '
            b'"id": "t", "name": "n", "input": {"x": NaN}}]}]}',
            "body: NaN",
        ),
        (b'{"session": {"metadata": {"x": Infinity}}}', "body: Infinity"),
        (b'{"session": {"metadata": {"x": -Infinity}}}', "body: -Infinity"),
        (b'{"compactions": [{"seq": 1, "kept": {"ratio": 1e999}}]}', "compactions[0].kept.ratio"),
        (
            b'{"messages": [{"seq": 0, "role": "assistant", "content": [{"type": "tool_use", '
            b'"id": "t", "name": "n", "input": {"x": [1, -1e999]}}]}]}',
            "messages[0].content[0].input.x[1]",
        ),
    ],
    ids=["nan-tool-input", "infinity-metadata", "minus-infinity", "1e999-kept", "1e999-nested"],
)
def test_non_finite_numbers_are_refused_at_the_edge(
    client: Client, key: str, raw: bytes, field: str
) -> None:
    refused(post(client, key, raw), field)
    assert not AgentSession.objects.exists()


@pytest.mark.parametrize(
    ("external_id", "expected"),
    [
        ("x" * 201, "external_id: 201 characters, the limit is 200"),
        ("run%00one", "external_id: contains a NUL character"),
    ],
    ids=["too-long", "nul"],
)
def test_external_ids_are_bounded_and_nul_free_on_every_path(
    client: Client, key: str, external_id: str, expected: str
) -> None:
    paths = [
        f"/api/v1/sessions/{external_id}",
        f"/api/v1/sessions/{external_id}/messages",
        f"/api/v1/sessions/{external_id}/curve",
        f"/api/v1/sessions/{external_id}/compactions",
    ]
    refused(post(client, key, {"messages": [wire_message(0)]}, external_id), expected)
    for path in paths:
        refused(get(client, key, path), expected)
    replay = client.post(
        f"/api/v1/sessions/{external_id}/replays",
        data="{}",
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    refused(replay, expected)
    assert not AgentSession.objects.exists()


def test_an_external_id_of_exactly_200_characters_is_stored(client: Client, key: str) -> None:
    response = post(client, key, {"messages": [wire_message(0)]}, "y" * 200)
    assert response.status_code == 202, response.content
    assert get(client, key, f"/api/v1/sessions/{'y' * 200}").status_code == 200


def test_a_huge_offset_is_a_400_naming_it(client: Client, key: str) -> None:
    post(client, key, {"messages": [wire_message(0)]})
    for path in ("/api/v1/sessions", "/api/v1/sessions/run-1/messages"):
        refused(get(client, key, f"{path}?offset={10**30}"), "offset")
        refused(get(client, key, f"{path}?offset={2**63}"), "offset")
        ok = get(client, key, f"{path}?offset=1000000")
        assert ok.status_code == 200, ok.content


def test_experiment_session_ids_are_bounded(client: Client, key: str) -> None:
    response = client.post(
        "/api/v1/experiments",
        data=json.dumps({"policies": [{}], "sessions": ["z" * 201]}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    refused(response, "sessions[0]")


def test_replay_policy_numbers_are_bounded(client: Client, key: str) -> None:
    post(client, key, {"messages": [wire_message(0)]})
    response = client.post(
        "/api/v1/sessions/run-1/replays",
        data=json.dumps({"policy": {"hard_limit": 10**30}}),
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    refused(response, "policy.hard_limit")


def test_the_400_names_every_bad_message_for_the_recorder(client: Client, key: str) -> None:
    messages = [wire_message(i) for i in range(26)]
    messages[3]["usage"] = {"input_tokens": BIG}
    messages[17]["role"] = "robot"
    body = refused(post(client, key, {"messages": messages}), "messages[3].usage.input_tokens")
    assert body["bad_messages"] == [3, 17]
    raw = json.dumps({"messages": [wire_message(i) for i in range(5)]}).replace(
        '"content": "message 4"', '"content": "a\\u0000b"'
    )
    body = refused(post(client, key, raw.encode()), "messages[")
    assert body["bad_messages"] == [4], body
    assert not Message.objects.exists()


def test_the_session_page_ignores_a_seq_it_cannot_read(client: Client, key: str) -> None:
    from tests.factories import make_user

    post(client, key, {"messages": [wire_message(0)]})
    session = AgentSession.objects.get()
    client.force_login(make_user(project=session.project))
    for seq in ("²", "9" * 40, "0", "-1"):
        page = client.get(f"/sessions/{session.pk}/?seq={seq}")
        assert page.status_code == 200, seq


def test_the_400_names_every_bad_compaction_too(client: Client, key: str) -> None:
    events = [{"seq": n, "strategy": f"s{n}", "tokens_before": 10} for n in range(4)]
    events[1]["tokens_before"] = BIG
    events[3]["duration_ms"] = -1
    body = refused(
        post(client, key, {"messages": [wire_message(0)], "compactions": events}),
        "compactions[1].tokens_before",
    )
    assert (body["bad_compactions"], body.get("bad_messages")) == ([1, 3], None)
    raw = json.dumps({"messages": [wire_message(0)], "compactions": events[:1] * 3}).replace(
        '"strategy": "s0"', '"strategy": "a\\u0000b"', 1
    )
    body = refused(post(client, key, raw.encode()), "compactions[0].strategy")
    assert body["bad_compactions"] == [0], body
    assert not Message.objects.exists()
