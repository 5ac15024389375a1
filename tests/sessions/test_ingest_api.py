"""The ingest API as clients see it: statuses and exact error texts."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from django.test import Client, override_settings

from sessions import services
from sessions.models import AgentSession, ApiKey, CompactionEvent, Message, Probe
from tests.factories import conversation, make_key, make_project, wire_message

pytestmark = pytest.mark.django_db

URL = "/api/v1/sessions/{}/events"


def post(client: Client, key: str, body: Any, external_id: str = "run-1", encoding: str = ""):
    data = body if isinstance(body, bytes) else json.dumps(body)
    headers = {"Authorization": f"Bearer {key}"}
    if encoding:
        headers["Content-Encoding"] = encoding
    return client.post(
        URL.format(external_id), data=data, content_type="application/json", headers=headers
    )


@pytest.fixture
def key() -> str:
    return make_key(make_project(name="acme"))


def test_ingest_stores_a_design_card_batch(client: Client, key: str) -> None:
    batch = {
        "session": {
            "agent": "billing-migrator",
            "model": "claude-opus-4-6",
            "context_window": 200000,
            "started_at": "2026-11-02T10:00:00Z",
            "metadata": {"git_branch": "main"},
        },
        "messages": [
            {
                "seq": 0,
                "role": "user",
                "content": "Migrate billing to API v2. Do not change the public API.",
                "timestamp": "2026-11-02T10:00:00Z",
            },
            {
                "seq": 1,
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading the module."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "read_file",
                        "input": {"path": "billing/api.py"},
                    },
                ],
                "usage": {
                    "input_tokens": 4100,
                    "output_tokens": 95,
                    "cache_read_input_tokens": 0,
                    "cache_creation_input_tokens": 0,
                },
            },
            {
                "seq": 2,
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01",
                        "content": "def charge(...): ...",
                        "is_error": False,
                    }
                ],
            },
        ],
        "compactions": [
            {
                "seq": 41,
                "trigger": "auto",
                "strategy": "summarize",
                "tokens_before": 151000,
                "tokens_after": 38000,
                "summary": "Goal: migrate billing ...",
                "replaced": {"from_seq": 1, "to_seq": 36},
                "duration_ms": 8200,
                "error": None,
            }
        ],
        "probes": [{"seq": 0, "text": "do not change the public API"}],
    }
    response = post(client, key, batch)
    assert response.status_code == 202, response.content
    assert response.json() == {"received": 3, "duplicates": 0}

    session = AgentSession.objects.get(external_id="run-1")
    assert (session.agent, session.model, session.context_window) == (
        "billing-migrator",
        "claude-opus-4-6",
        200000,
    )
    assert session.metadata == {"git_branch": "main"}
    assert (session.message_count, session.compaction_count) == (3, 1)
    first, second, _ = Message.objects.filter(session=session).order_by("seq")
    assert first.content == [
        {"type": "text", "text": "Migrate billing to API v2. Do not change the public API."}
    ]
    assert second.context_tokens == 4100
    assert second.output_tokens == 95
    event = CompactionEvent.objects.get(session=session)
    assert (event.tokens_before, event.tokens_after, event.replaced_to_seq) == (151000, 38000, 36)
    assert Probe.objects.get(session=session).text == "do not change the public API"


def test_ingest_stores_text_that_copy_must_escape_exactly_as_sent(client: Client, key: str) -> None:
    # Messages go in through COPY on PostgreSQL: tabs, newlines, backslashes and quotes in
    # the text are its own delimiters and escapes, so they must come back byte for byte.
    awkward = 'a\tb\nc\\N \\. "q" \r\n\\x00 ção 🙂 \\'
    usage = {
        "input_tokens": 100_000_000,
        "output_tokens": 5,
        "iterations": [{"input_tokens": 7, "output_tokens": 1}],
    }
    batch = {
        "messages": [
            wire_message(0, content=awkward, timestamp="2026-11-02T10:00:00.123456+03:00"),
            wire_message(1, "assistant", content=[{"type": "text", "text": awkward}], usage=usage),
        ]
    }
    assert post(client, key, batch).status_code == 202
    first, second = Message.objects.filter(session__external_id="run-1").order_by("seq")
    assert first.content == [{"type": "text", "text": awkward}]
    assert first.timestamp.isoformat() == "2026-11-02T07:00:00.123456+00:00"
    assert first.input_tokens is None
    assert first.iterations is None
    assert second.content == [{"type": "text", "text": awkward}]
    assert (second.input_tokens, second.output_tokens) == (100_000_000, 5)
    [iteration] = second.iterations
    assert (iteration["input_tokens"], iteration["output_tokens"]) == (7, 1)
    assert first.content_hash == services.message_hash(role="user", blocks=first.content)
    # a resend is a duplicate: the stored hash is the one computed from what was sent
    assert post(client, key, batch).json() == {"received": 0, "duplicates": 2}


@pytest.mark.parametrize(
    "blocks",
    [
        [{"type": "text", "text": "plain"}],
        [{"z": 1, "a": {"y": [1, 2.5, None, True], "b": 'ção \u0001 "q"'}, "type": "x"}],
        [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "🙂"}]}],
    ],
)
def test_a_message_hash_is_the_digest_of_its_role_and_content(blocks: list[Any]) -> None:
    # Stored hashes decide duplicates across versions: the content serialized once for both
    # the hash and the row must give the digest of {"role", "content"} as before.
    assert services.message_hash(role="user", blocks=blocks) == services._digest(
        {"role": "user", "content": blocks}
    )


def test_a_refused_message_insert_raises_djangos_own_error() -> None:
    from django.db import IntegrityError, transaction

    session = AgentSession.objects.create(project=make_project(), external_id="run-1")
    twice = [Message(session=session, seq=0, role="user", content=[], content_hash="x")] * 2
    with pytest.raises(IntegrityError), transaction.atomic():
        services._messages_insert(twice, {})
    assert not Message.objects.filter(session=session).exists()


def test_ingest_rejects_missing_key(client: Client) -> None:
    response = client.post(URL.format("x"), data="{}", content_type="application/json")
    assert response.status_code == 401
    assert response.json() == {"error": "Authorization: missing, unknown or revoked project key"}


def test_ingest_rejects_wrong_and_revoked_keys(client: Client, key: str) -> None:
    assert post(client, key + "x", {"messages": []}).status_code == 401
    assert post(client, "st_nothex_abc", {"messages": []}).status_code == 401
    api_key = ApiKey.objects.get()
    services.api_key_revoke(api_key=api_key)
    assert post(client, key, {"messages": []}).status_code == 401


def test_ingest_records_key_last_use(client: Client, key: str) -> None:
    post(client, key, {"messages": conversation(1)})
    assert ApiKey.objects.get().last_used_at is not None


def test_ingest_ignores_duplicate_seq_with_same_content(client: Client, key: str) -> None:
    assert post(client, key, {"messages": conversation(3)}).json() == {
        "received": 3,
        "duplicates": 0,
    }
    response = post(client, key, {"messages": conversation(5)})
    assert response.status_code == 202
    assert response.json() == {"received": 2, "duplicates": 3}
    assert Message.objects.count() == 5
    assert AgentSession.objects.get().message_count == 5


def test_ingest_treats_string_and_single_text_block_as_the_same_content(
    client: Client, key: str
) -> None:
    post(client, key, {"messages": [wire_message(0, content="hi")]})
    again = post(
        client, key, {"messages": [wire_message(0, content=[{"type": "text", "text": "hi"}])]}
    )
    assert again.json() == {"received": 0, "duplicates": 1}


def test_ingest_rejects_conflicting_resend_and_stores_nothing(client: Client, key: str) -> None:
    post(client, key, {"messages": conversation(2)})
    batch = {"messages": [wire_message(2), wire_message(1, "assistant", "something else")]}
    response = post(client, key, batch)
    assert response.status_code == 409
    assert response.json() == {
        "error": "messages[1].seq: 1 already stored with different content",
        "bad_messages": [1],  # the Recorder drops that one and resends the others
    }
    assert sorted(Message.objects.values_list("seq", flat=True)) == [0, 1]


def test_ingest_rejects_same_seq_twice_in_one_batch_with_other_content(
    client: Client, key: str
) -> None:
    batch = {"messages": [wire_message(0), wire_message(0, content="other")]}
    response = post(client, key, batch)
    assert response.status_code == 400
    assert response.json() == {
        "error": "messages[1].seq: 0 appears twice in this batch with "
        "different content (first at messages[0])",
        "bad_messages": [1],
    }
    assert not AgentSession.objects.exists()


def test_ingest_is_atomic_when_one_item_is_bad(client: Client, key: str) -> None:
    messages = conversation(10)
    messages[7]["content"] = [{"type": "tool_use", "name": "read_file", "input": {}}]
    response = post(client, key, {"messages": messages})
    assert response.status_code == 400
    assert response.json() == {
        "error": "messages[7].content[0].id: required for a tool_use block, a string",
        "bad_messages": [7],
    }
    assert not Message.objects.exists()


def test_ingest_is_atomic_when_a_compaction_conflicts(client: Client, key: str) -> None:
    event = {"seq": 3, "strategy": "summarize", "summary": "first"}
    post(client, key, {"messages": conversation(2), "compactions": [event]})
    response = post(
        client,
        key,
        {"messages": conversation(2, start=2), "compactions": [{**event, "summary": "second"}]},
    )
    assert response.status_code == 409
    assert response.json() == {
        "error": "compactions[0].seq: a summarize event at 3 is "
        "already stored with different content",
        "bad_compactions": [0],
    }
    assert Message.objects.count() == 2


def test_ingest_keeps_orphan_tool_pairs_as_data(client: Client, key: str) -> None:
    batch = {
        "messages": [
            wire_message(0, content="go"),
            wire_message(
                1, "assistant", [{"type": "tool_use", "id": "toolu_a", "name": "ls", "input": {}}]
            ),
            wire_message(
                2,
                content=[{"type": "tool_result", "tool_use_id": "toolu_zzz", "content": "orphan"}],
            ),
        ]
    }
    assert post(client, key, batch).status_code == 202
    assert Message.objects.count() == 3


def test_ingest_accepts_gzip(client: Client, key: str) -> None:
    body = gzip.compress(json.dumps({"messages": conversation(4)}).encode())
    response = post(client, key, body, encoding="gzip")
    assert response.status_code == 202, response.content
    assert response.json() == {"received": 4, "duplicates": 0}


def test_ingest_rejects_broken_gzip(client: Client, key: str) -> None:
    response = post(client, key, b"\x1f\x8bnot gzip at all", encoding="gzip")
    assert response.status_code == 400
    assert response.json()["error"].startswith("body: not valid gzip")


def test_ingest_rejects_unknown_content_encoding(client: Client, key: str) -> None:
    response = post(client, key, b"{}", encoding="br")
    assert response.status_code == 400
    assert response.json() == {"error": "Content-Encoding: 'br' is not supported (use gzip)"}


@override_settings(INGEST_MAX_BODY_BYTES=2000)
def test_ingest_answers_413_over_the_body_limit(client: Client, key: str) -> None:
    body = {"messages": [wire_message(0, content="x" * 5000)]}
    response = post(client, key, body)
    assert response.status_code == 413
    assert response.json() == {"error": "body: larger than the 2000-byte limit"}


@override_settings(INGEST_MAX_BODY_BYTES=2000)
def test_ingest_answers_413_for_a_gzip_bomb(client: Client, key: str) -> None:
    body = gzip.compress(
        json.dumps({"messages": [wire_message(0, content="x" * 100_000)]}).encode()
    )
    assert len(body) < 2000
    response = post(client, key, body, encoding="gzip")
    assert response.status_code == 413
    assert response.json() == {"error": "body: larger than the 2000-byte limit after decompression"}
    assert not Message.objects.exists()


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            b"{not json",
            "body: malformed JSON at line 1 column 2: "
            "Expecting property name enclosed in double quotes",
        ),
        (b"", "body: empty; expected a JSON object"),
        (b"\xff\xfe{}", "body: not UTF-8 (byte 0)"),
        (b"[1, 2]", "body: expected a JSON object, got list"),
        (
            json.dumps({"messages": [{"seq": 0, "role": "user", "content": "a\u0000b"}]}).encode(),
            "messages[0].content: contains a NUL character (\\u0000), not storable",
        ),
        (
            b'{"messages": [{"seq": 0, "role": "user", "content": "bad \\ud800 surrogate"}]}',
            "messages[0].content: contains a lone UTF-16 surrogate",
        ),
        (
            b'{"session": {"metadata": {"k\\u0000": 1}}}',
            "session.metadata.<key>: contains a NUL character (\\u0000), not storable",
        ),
        (b'{"messages": [{"role": "user", "content": "x"}]}', "messages[0].seq: required"),
        (
            b'{"messages": [{"seq": -1, "role": "user", "content": "x"}]}',
            "messages[0].seq: Input should be greater than or equal to 0",
        ),
        (
            b'{"messages": [{"seq": 0, "role": "robot", "content": "x"}]}',
            "messages[0].role: Input should be 'system', 'user' or 'assistant'",
        ),
        (
            b'{"messages": [{"seq": 0, "role": "user", "content": [{"text": "x"}]}]}',
            "messages[0].content[0].type: required, a string such as 'text' or 'tool_use'",
        ),
        (
            b'{"compactions": [{"seq": 1, "replaced": {"from_seq": 5, "to_seq": 2}}]}',
            "compactions[0].replaced: to_seq must not be smaller than from_seq",
        ),
    ],
    ids=[
        "malformed",
        "empty",
        "not-utf8",
        "not-object",
        "nul",
        "surrogate",
        "nul-key",
        "missing-seq",
        "negative-seq",
        "bad-role",
        "block-without-type",
        "replaced-order",
    ],
)
def test_ingest_rejects_malformed_input_naming_the_field(
    client: Client, key: str, body: bytes, error: str
) -> None:
    response = post(client, key, body)
    assert response.status_code == 400, response.content
    # an item's problem also names the item, machine-readably, for the Recorder
    named = next(
        (n for n in ("messages", "compactions", "probes") if error.startswith(n + "[")), ""
    )
    bad = {f"bad_{named}": [0]} if named else {}
    assert response.json() == {"error": error, **bad}
    assert not Message.objects.exists()


def test_ingest_rejects_too_deep_nesting(client: Client, key: str) -> None:
    nested: Any = "x"
    for _ in range(100):
        nested = {"a": nested}
    response = post(client, key, {"session": {"metadata": nested}})
    assert response.status_code == 400
    assert response.json()["error"].startswith("session.metadata.a.a.a")
    assert response.json()["error"].endswith(": nested deeper than 64 levels")


def test_ingest_survives_pathological_nesting(client: Client, key: str) -> None:
    body = b"[" * 200_000 + b"]" * 200_000
    response = post(client, key, body)
    assert response.status_code == 400
    assert response.json() == {"error": "body: nested deeper than 64 levels"}


def test_key_of_one_project_cannot_read_another_projects_session(client: Client) -> None:
    key_a = make_key(make_project(name="a"))
    key_b = make_key(make_project(name="b"))
    post(client, key_a, {"messages": conversation(2)}, external_id="secret-run")
    auth_b = {"Authorization": f"Bearer {key_b}"}
    for path in ("/api/v1/sessions/secret-run", "/api/v1/sessions/secret-run/messages"):
        response = client.get(path, headers=auth_b)
        assert response.status_code == 404
        assert response.json() == {"error": "session 'secret-run' not found in this project"}
    assert client.get("/api/v1/sessions", headers=auth_b).json()["count"] == 0


def test_key_of_one_project_cannot_write_into_another_projects_session(client: Client) -> None:
    key_a = make_key(make_project(name="a"))
    key_b = make_key(make_project(name="b"))
    post(client, key_a, {"messages": conversation(2)}, external_id="shared-name")
    response = post(
        client,
        key_b,
        {"messages": [wire_message(0, content="intruder")]},
        external_id="shared-name",
    )
    # B gets a session of its own under that name; A's session is untouched.
    assert response.status_code == 202
    session_a = AgentSession.objects.get(project__name="a")
    assert session_a.message_count == 2
    assert session_a.messages.get(seq=0).content[0]["text"] == "message 0"


def test_read_endpoints_page_through_messages(client: Client, key: str) -> None:
    post(client, key, {"session": {"agent": "a1"}, "messages": conversation(7)})
    auth = {"Authorization": f"Bearer {key}"}
    listing = client.get("/api/v1/sessions", headers=auth).json()
    assert listing["count"] == 1
    assert listing["sessions"][0]["external_id"] == "run-1"
    detail = client.get("/api/v1/sessions/run-1", headers=auth).json()
    assert (detail["agent"], detail["message_count"], detail["compaction_count"]) == ("a1", 7, 0)
    page = client.get("/api/v1/sessions/run-1/messages?offset=5&limit=5", headers=auth).json()
    assert [m["seq"] for m in page["messages"]] == [5, 6]
    assert page["count"] == 7


def test_read_endpoints_validate_paging(client: Client, key: str) -> None:
    response = client.get("/api/v1/sessions?limit=0", headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 400
    assert response.json() == {"error": "limit: Input should be greater than or equal to 1"}


def test_openapi_schema_describes_the_ingest_endpoint(client: Client) -> None:
    schema = client.get("/api/v1/openapi.json").json()
    operation = schema["paths"]["/api/v1/sessions/{external_id}/events"]["post"]
    assert "202" in operation["responses"]
    assert "EventBatch" in json.dumps(operation["requestBody"])
    assert client.get("/api/v1/docs").status_code == 200


def test_ingest_rejects_truncated_gzip(client: Client, key: str) -> None:
    body = gzip.compress(json.dumps({"messages": conversation(4)}).encode())[:-12]
    response = post(client, key, body, encoding="gzip")
    assert response.status_code == 400
    assert response.json() == {"error": "body: truncated gzip stream"}


@override_settings(INGEST_RATE_LIMIT_PER_MINUTE=3)
def test_ingest_answers_429_with_retry_after_once_the_projects_allowance_is_spent(
    client: Client,
) -> None:
    from django.core.cache import cache

    cache.clear()
    project = make_project(name="busy")
    key = make_key(project)
    for seq in range(3):
        assert post(client, key, {"messages": [wire_message(seq)]}).status_code == 202
    response = post(client, key, {"messages": [wire_message(3)]})
    assert response.status_code == 429
    assert 1 <= int(response["Retry-After"]) <= 60
    assert response.json()["error"].startswith("rate limit: 3 batches per minute for this project")
    assert Message.objects.count() == 3
    # another project is not affected
    assert (
        post(client, make_key(make_project()), {"messages": [wire_message(0)]}).status_code == 202
    )


@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_for_a_new_session_store_each_message_once() -> None:
    # Many writers race to create the same session with overlapping messages: one creates it,
    # the others wait on its row and then see what it stored.
    import threading

    from django.db import connection

    from sessions.schemas import EventBatch

    project = make_project()
    start = threading.Barrier(6)
    errors: list[BaseException] = []

    def writer(first: int) -> None:
        try:
            start.wait()
            services.events_ingest(
                project=project,
                external_id="race",
                batch=EventBatch.model_validate({"messages": conversation(10, start=first)}),
            )
        except BaseException as exc:  # reported below, in the test thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n * 5,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    session = AgentSession.objects.get(external_id="race")
    seqs = list(Message.objects.filter(session=session).values_list("seq", flat=True))
    assert sorted(seqs) == list(range(35))
    assert session.message_count == 35
