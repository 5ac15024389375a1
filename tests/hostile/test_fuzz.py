"""Property-based fuzzing, one test per door: hostile values anywhere in the wire shapes
never get a 5xx, and every error answer is JSON whose message starts with the field at fault.

Examples per door are bounded (FUZZ_EXAMPLES, default 30) so the suite stays quick; raise it
locally with SAWTOOTH_FUZZ_EXAMPLES=500 to hunt.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from tests.factories import make_key, make_project, make_user, wire_message

pytestmark = pytest.mark.django_db

FUZZ_EXAMPLES = int(os.environ.get("SAWTOOTH_FUZZ_EXAMPLES", "30"))
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# An error message starts with the field it is about (a JSON path, or a header, or the body).
FIELD = re.compile(
    r"^(body|messages|compactions|probes|session|external_id|offset|limit|policy|policies|"
    r"name|sessions|Content-Encoding|Content-Type|Authorization|file|resourceSpans|"
    r"conversation|path|\[\d+\]|[\w.-]+\.jsonl(\.gz)?)\b"
)

# --- hostile values ------------------------------------------------------------------------

NASTY_TEXT = st.sampled_from(["", "a\x00b", "\ud800", "x" * 300, "<script>alert(1)</script>"])
TEXT = st.text(max_size=20) | NASTY_TEXT
INTS = st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from(
    [0, -1, 2**31 - 1, 2**31, 2**63, 10**30]
)
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
SCALARS = st.none() | st.booleans() | INTS | FLOATS | TEXT
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


def maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a plausible value, sometimes anything at all."""
    return st.one_of(valid, valid, JSON)


USAGE = st.dictionaries(
    st.sampled_from(
        ["input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]
    ),
    maybe(INTS),
    max_size=4,
)
BLOCK = st.fixed_dictionaries(
    {"type": maybe(st.sampled_from(["text", "tool_use", "tool_result", "thinking"]))},
    optional={
        "text": maybe(TEXT),
        "id": maybe(TEXT),
        "name": maybe(TEXT),
        "input": maybe(st.dictionaries(TEXT, JSON, max_size=3)),
        "tool_use_id": maybe(TEXT),
        "content": maybe(TEXT),
    },
)
MESSAGE = st.fixed_dictionaries(
    {
        "seq": maybe(INTS),
        "role": maybe(st.sampled_from(["user", "assistant", "system"])),
        "content": maybe(TEXT | st.lists(BLOCK, max_size=3)),
    },
    optional={"usage": maybe(USAGE), "timestamp": maybe(TEXT)},
)
COMPACTION = st.fixed_dictionaries(
    {"seq": maybe(INTS)},
    optional={
        "trigger": maybe(st.sampled_from(["auto", "manual", "threshold"])),
        "strategy": maybe(TEXT),
        "tokens_before": maybe(INTS),
        "tokens_after": maybe(INTS),
        "summary": maybe(TEXT),
        "summary_seq": maybe(INTS),
        "replaced": maybe(st.fixed_dictionaries({"from_seq": INTS, "to_seq": INTS})),
        "kept": maybe(st.dictionaries(TEXT, JSON, max_size=3)),
        "duration_ms": maybe(INTS),
        "error": maybe(TEXT),
    },
)
PROBE = st.fixed_dictionaries({"seq": maybe(INTS), "text": maybe(TEXT)})
SESSION = st.fixed_dictionaries(
    {},
    optional={
        "agent": maybe(TEXT),
        "model": maybe(TEXT),
        "context_window": maybe(INTS),
        "started_at": maybe(TEXT),
        "metadata": maybe(st.dictionaries(TEXT, JSON, max_size=3)),
    },
)
BATCH = st.fixed_dictionaries(
    {},
    optional={
        "messages": maybe(st.lists(MESSAGE, max_size=4)),
        "compactions": maybe(st.lists(COMPACTION, max_size=2)),
        "probes": maybe(st.lists(PROBE, max_size=2)),
        "session": maybe(SESSION),
    },
)
EXTERNAL_ID = st.text(min_size=1, max_size=210) | st.sampled_from(["a\x00b", "y" * 201])


def dumps(value: Any) -> bytes:
    return json.dumps(value, allow_nan=True).encode()


def assert_answered(response: Any, *, ok: tuple[int, ...]) -> None:
    assert response.status_code < 500, response.content[:500]
    if response.status_code in ok:
        return
    assert response["Content-Type"].startswith("application/json"), response.content[:200]
    body = response.json()
    message = body.get("error", body.get("message"))
    assert isinstance(message, str), body
    assert FIELD.match(message), message


@pytest.fixture
def key() -> str:
    return make_key(make_project(name="fuzz"))


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@FUZZ
@given(batch=BATCH, external_id=EXTERNAL_ID)
def test_events_door(client: Client, key: str, batch: Any, external_id: str) -> None:
    path = "/api/v1/sessions/{}/events".format(urllib.parse.quote(external_id, safe=""))
    response = client.post(
        path, data=dumps(batch), content_type="application/json", headers=_auth(key)
    )
    assert_answered(response, ok=(202,))
    if response.status_code == 400 and "bad_messages" in response.json():
        assert all(isinstance(i, int) for i in response.json()["bad_messages"])


@FUZZ
@given(external_id=EXTERNAL_ID, offset=INTS, limit=INTS)
def test_read_doors(client: Client, key: str, external_id: str, offset: int, limit: int) -> None:
    quoted = urllib.parse.quote(external_id, safe="")
    query = f"?offset={offset}&limit={limit}"
    for path in (
        f"/api/v1/sessions{query}",
        f"/api/v1/sessions/{quoted}",
        f"/api/v1/sessions/{quoted}/messages{query}",
        f"/api/v1/sessions/{quoted}/curve",
        f"/api/v1/sessions/{quoted}/compactions",
    ):
        assert_answered(client.get(path, headers=_auth(key)), ok=(200, 404))


# --- OTLP ----------------------------------------------------------------------------------

ANY_VALUE = st.one_of(
    st.fixed_dictionaries({"stringValue": maybe(TEXT)}),
    st.fixed_dictionaries({"intValue": maybe(INTS.map(str) | INTS | TEXT)}),
    st.fixed_dictionaries({"doubleValue": maybe(FLOATS)}),
    st.fixed_dictionaries({"boolValue": JSON}),
    st.fixed_dictionaries({"arrayValue": maybe(st.fixed_dictionaries({"values": JSON}))}),
    st.fixed_dictionaries({"kvlistValue": JSON}),
    JSON,
)
GENAI_KEYS = st.sampled_from(
    [
        "gen_ai.operation.name",
        "gen_ai.conversation.id",
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.usage.input_tokens",
        "gen_ai.usage.output_tokens",
        "gen_ai.request.model",
        "gen_ai.system_instructions",
    ]
)
ATTRIBUTES = st.lists(
    st.fixed_dictionaries({"key": maybe(GENAI_KEYS | TEXT), "value": ANY_VALUE}), max_size=5
)
MESSAGES_JSON = st.lists(
    st.fixed_dictionaries(
        {
            "role": maybe(st.sampled_from(["user", "assistant"])),
            "parts": st.lists(
                st.fixed_dictionaries({"type": st.just("text"), "content": maybe(TEXT)}),
                max_size=2,
            ),
        }
    ),
    max_size=2,
).map(lambda m: json.dumps(m, allow_nan=True))
GENAI_ATTRIBUTES = st.fixed_dictionaries(
    {
        "op": st.just({"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}),
        "input": MESSAGES_JSON.map(
            lambda m: {"key": "gen_ai.input.messages", "value": {"stringValue": m}}
        ),
        "tokens": INTS.map(
            lambda n: {"key": "gen_ai.usage.input_tokens", "value": {"intValue": str(n)}}
        ),
    }
).map(lambda parts: list(parts.values()))
SPAN = st.fixed_dictionaries(
    {
        "traceId": maybe(st.sampled_from(["5b8efff798038103d269b633813fc60c", "zz", ""])),
        "spanId": maybe(st.sampled_from(["00f067aa0ba902b7", "00f067aa0ba902b8", "short"])),
    },
    optional={
        "name": maybe(TEXT),
        "startTimeUnixNano": maybe(INTS | INTS.map(str) | FLOATS),
        "endTimeUnixNano": maybe(INTS | INTS.map(str)),
        "attributes": maybe(GENAI_ATTRIBUTES | ATTRIBUTES),
        "events": maybe(
            st.lists(st.fixed_dictionaries({"name": TEXT, "attributes": ATTRIBUTES}), max_size=2)
        ),
    },
)
EXPORT = st.fixed_dictionaries(
    {
        "resourceSpans": maybe(
            st.lists(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "resource": maybe(st.fixed_dictionaries({"attributes": ATTRIBUTES})),
                        "scopeSpans": maybe(
                            st.lists(
                                maybe(
                                    st.fixed_dictionaries(
                                        {"spans": maybe(st.lists(SPAN, max_size=3))}
                                    )
                                ),
                                max_size=2,
                            )
                        ),
                    },
                ),
                max_size=2,
            )
        )
    }
)


def assert_otlp_answered(response: Any) -> None:
    assert response.status_code < 500, response.content[:500]
    body = json.loads(response.content) if response.content else {}
    if response.status_code == 200:
        errors = body.get("partialSuccess", {}).get("errorMessage", "")
        for error in filter(None, errors.split("; ")):
            assert FIELD.match(error), error
    else:
        assert FIELD.match(body["message"]), body


@FUZZ
@given(export=EXPORT)
def test_otlp_json_door(client: Client, key: str, export: Any) -> None:
    response = client.post(
        "/v1/traces", data=dumps(export), content_type="application/json", headers=_auth(key)
    )
    assert_otlp_answered(response)


PB_TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=20) | st.sampled_from(
    ["a\x00b", ""]
)


@FUZZ
@given(
    spans=st.lists(
        st.tuples(
            st.binary(min_size=0, max_size=17),
            st.binary(min_size=0, max_size=9),
            st.integers(min_value=0, max_value=2**64 - 1),
            FLOATS,
            st.integers(min_value=-(2**63), max_value=2**63 - 1),
            PB_TEXT,
            MESSAGES_JSON,
        ),
        max_size=3,
    ),
    garbage=st.binary(max_size=40),
)
def test_otlp_protobuf_door(client: Client, key: str, spans: Any, garbage: bytes) -> None:
    request = trace_service_pb2.ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for trace_id, span_id, start, double, number, text, messages in spans:
        raw = scope.spans.add()
        raw.trace_id, raw.span_id, raw.start_time_unix_nano = trace_id, span_id, start
        raw.name = text
        for name, field, value in (
            ("d", "double_value", double),
            ("i", "int_value", number),
            ("gen_ai.operation.name", "string_value", "chat"),
            ("gen_ai.input.messages", "string_value", messages),
            ("gen_ai.conversation.id", "string_value", text),
        ):
            kv = raw.attributes.add()
            kv.key = name
            setattr(kv.value, field, value)
    for body in (request.SerializeToString(), garbage):
        response = client.post(
            "/v1/traces", data=body, content_type="application/x-protobuf", headers=_auth(key)
        )
        assert response.status_code < 500, response.content[:300]
        if response.status_code == 200:
            answer = trace_service_pb2.ExportTraceServiceResponse()
            answer.ParseFromString(response.content)
            for error in filter(None, answer.partial_success.error_message.split("; ")):
                assert FIELD.match(error), error


# --- Claude Code import --------------------------------------------------------------------

RECORD = st.fixed_dictionaries(
    {
        "type": maybe(st.sampled_from(["user", "assistant", "system", "summary"])),
        "sessionId": maybe(st.sampled_from(["s-1", "a\x00b", "z" * 300])),
    },
    optional={
        "uuid": maybe(TEXT),
        "parentUuid": maybe(TEXT),
        "timestamp": maybe(TEXT),
        "message": maybe(
            st.fixed_dictionaries(
                {
                    "role": maybe(st.sampled_from(["user", "assistant"])),
                    "content": maybe(TEXT | st.lists(BLOCK, max_size=2)),
                },
                optional={"usage": maybe(USAGE), "model": maybe(TEXT)},
            )
        ),
    },
)
LINE = st.one_of(
    RECORD.map(dumps),
    JSON.map(dumps),
    st.binary(max_size=30),
    st.sampled_from([b"NaN", b"[1, 2]", b"42", b'{"type": "user", "x": 1e999}']),
)


@FUZZ
@given(lines=st.lists(LINE, min_size=1, max_size=6))
def test_claude_code_import_door(client: Client, key: str, lines: list[bytes]) -> None:
    body = b"\n".join(line.replace(b"\n", b" ") for line in lines) + b"\n"
    response = client.post(
        "/api/v1/imports/claude-code?name=t.jsonl",
        data=body,
        content_type="application/x-ndjson",
        headers=_auth(key),
    )
    assert_answered(response, ok=(200,))


# --- replays and experiments: API and forms ------------------------------------------------

POLICY = st.fixed_dictionaries(
    {},
    optional={
        name: maybe(INTS)
        for name in (
            "soft_limit",
            "hard_limit",
            "keep_last",
            "older_than",
            "context_window",
            "summary_reserve",
            "max_rounds",
            "clear_step",
        )
    }
    | {
        "unit": maybe(st.sampled_from(["turn", "step"])),
        "stages": maybe(st.lists(st.sampled_from(["clear_tool_results", "summarize"]))),
        "summarizer": maybe(st.sampled_from(["extractive", "anthropic"])),
        "placeholder": maybe(TEXT),
        "pin_head": JSON,
    },
)


@FUZZ
@given(policy=maybe(POLICY), sessions=maybe(st.lists(EXTERNAL_ID, max_size=2)), name=maybe(TEXT))
def test_replay_and_experiment_api(
    client: Client, key: str, policy: Any, sessions: Any, name: Any
) -> None:
    client.post(
        "/api/v1/sessions/run-1/events",
        data=dumps({"messages": [wire_message(0), wire_message(1, "assistant")]}),
        content_type="application/json",
        headers=_auth(key),
    )
    replay = client.post(
        "/api/v1/sessions/run-1/replays",
        data=dumps({"policy": policy}),
        content_type="application/json",
        headers=_auth(key),
    )
    assert_answered(replay, ok=(202,))
    experiment = client.post(
        "/api/v1/experiments",
        data=dumps({"name": name, "policies": [policy], "sessions": sessions}),
        content_type="application/json",
        headers=_auth(key),
    )
    assert_answered(experiment, ok=(202,))


FORM_VALUE = st.one_of(
    PB_TEXT,  # a browser cannot send a lone surrogate in a form: it is not UTF-8
    INTS.map(str),
    FLOATS.map(str),
    st.sampled_from(["1e999", "nan", "inf", "9" * 5000, "1_000_000", "-5", "4, 8, 1e9"]),
)


@FUZZ
@given(
    replay=st.dictionaries(
        st.sampled_from(
            ["soft_limit", "hard_limit", "keep_last", "pin_head", "unit", "stages", "summarizer"]
        ),
        FORM_VALUE,
    ),
    experiment=st.dictionaries(
        st.sampled_from(
            ["project", "name", "hard_limits", "keep_lasts", "unit", "stages", "agent", "sessions"]
        ),
        FORM_VALUE,
    ),
)
def test_replay_and_experiment_forms(client: Client, replay: Any, experiment: Any) -> None:
    from sessions.models import AgentSession

    project = make_project()
    user = make_user(project=project, role="admin")
    key = make_key(project)
    client.post(
        "/api/v1/sessions/form-run/events",
        data=dumps({"messages": [wire_message(0)]}),
        content_type="application/json",
        headers=_auth(key),
    )
    session = AgentSession.objects.get(project=project, external_id="form-run")
    client.force_login(user)
    response = client.post(f"/sessions/{session.pk}/replay/", replay)
    assert response.status_code < 500
    response = client.post("/experiments/new/", experiment)
    assert response.status_code < 500


# --- every page and GET endpoint: hostile query values and ids --------------------------
#
# The URL patterns are enumerated from the resolver, ids filled in from a labelled project
# (tests/privacy/doors.py); each page is asked once with a recorder on its query, which finds
# the parameters it reads, and each of those (plus page/offset/limit) is then sent with hostile
# values. SAWTOOTH_FUZZ_PAGE_VALUES values per parameter are sampled (all with "all").

HOSTILE_QUERY_VALUES = [
    str(2**63),
    str(2**64 + 1),
    "-1",
    str(-(2**63) - 1),
    "0",
    "abc",
    "NaN",
    "inf",
    "1e999",
    "1.5",
    "%ED%A0%80",  # a lone surrogate, as UTF-8 bytes
    "%00",  # NUL
    "a%00b",
    "x" * 5000,
    "%2F..%2F..",
    "",
]
ALWAYS_TRIED = ("page", "offset", "limit", "q")
PAGE_VALUES = os.environ.get("SAWTOOTH_FUZZ_PAGE_VALUES", "4")


def _routes() -> list[str]:
    """Every URL pattern as a route string, includes flattened, the admin left out."""
    from django.urls import URLPattern, URLResolver, get_resolver

    found: list[str] = []

    def walk(patterns: Any, prefix: str) -> None:
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if isinstance(pattern, URLResolver):
                if not route.startswith("admin/"):
                    walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern):
                found.append(route)

    walk(get_resolver().url_patterns, "")
    return found


def _fill(route: str, door: Any) -> str | None:
    """The route with its parameters set to ids of the labelled project; None when a
    parameter has no sample (a one-time password link)."""
    from alerts.models import Alert
    from privacy.models import Finding

    head = route.split("/", 1)[0]
    alert = Alert.objects.filter(session__project=door.project).first()
    finding = Finding.objects.filter(session__project=door.project).first()
    pk = {
        "sessions": door.session.pk,
        "replays": door.replay.pk,
        "experiments": door.experiment.pk,
        "projects": door.project.pk,
        "alerts": alert.pk if alert else 1,
        "privacy": finding.pk if finding else 1,
    }.get(head, 1)
    values = {
        "pk": pk,
        "span_pk": door.span.pk,
        "seq": door.span.seq,
        "index": 0,
        "fmt": "csv",
        "action": "redact",
        "external_id": door.session.external_id,
        "replay_id": door.replay.pk,
        "experiment_id": door.experiment.pk,
        "alert_id": alert.pk if alert else 1,
        "membership_pk": 1,
        "key_pk": 1,
        "hook_pk": 1,
        "comment_pk": 1,
        "filter_pk": 1,
    }
    missing: list[str] = []

    def put(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in values:
            missing.append(name)
            return ""
        return urllib.parse.quote(str(values[name]), safe="")

    path = "/" + re.sub(r"<(?:(\w+):)?(\w+)>", put, route).replace("^", "").replace("$", "")
    return None if missing else path


class _Recorder:
    """Which query parameters a page reads: QueryDict lookups, recorded while it renders."""

    def __init__(self) -> None:
        self.keys: set[str] = set()

    def __enter__(self) -> _Recorder:
        from unittest import mock

        from django.http import QueryDict

        keys = self.keys
        originals = {n: getattr(QueryDict, n) for n in ("get", "getlist", "__getitem__")}

        def wrap(name: str) -> Any:
            def recorded(qd: Any, key: Any, *args: Any, **kwargs: Any) -> Any:
                if isinstance(key, str):
                    keys.add(key)
                return originals[name](qd, key, *args, **kwargs)

            return recorded

        self._patches = [mock.patch.object(QueryDict, n, wrap(n)) for n in originals]
        for patch in self._patches:
            patch.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for patch in self._patches:
            patch.stop()


def _sample(values: list[str], key: str, path: str) -> list[str]:
    if PAGE_VALUES == "all":
        return values
    import random

    # Seeded by the page and the parameter: the same sample each run, a different one per pair.
    return random.Random(f"{path}?{key}").sample(values, min(int(PAGE_VALUES), len(values)))


def test_no_page_or_get_endpoint_answers_a_5xx_to_hostile_query_values(client: Client) -> None:
    from django.db import transaction

    from tests.privacy.doors import labelled_project

    door = labelled_project(name="fuzz-pages")
    client.force_login(door.users["admin"])
    headers = {"Authorization": f"Bearer {make_key(door.project)}"}
    asked, failed = 0, []
    for route in _routes():
        path = _fill(route, door)
        if path is None or path.startswith(("/logout", "/api/v1/docs")):
            continue
        with _Recorder() as recorder:
            first = client.get(path, headers=headers)
        if first.status_code >= 500:
            failed.append(f"{path} answered {first.status_code}")
        for key in sorted(recorder.keys | set(ALWAYS_TRIED)):
            # A page that searches reads its other parameters only with a query (?q=...&page=).
            searched = "q" in recorder.keys and key != "q"
            for raw in _sample(HOSTILE_QUERY_VALUES, key, path):
                for url in [f"{path}?{key}={raw}"] + [f"{path}?q=pedido&{key}={raw}"] * searched:
                    try:
                        with transaction.atomic():  # a failed query spoils only its request
                            response = client.get(url, headers=headers)
                    except Exception as exc:  # the test client re-raises what a 500 hides
                        failed.append(f"{url[:200]} raised {type(exc).__name__}: {exc}"[:400])
                        continue
                    asked += 1
                    if response.status_code >= 500:
                        failed.append(f"{url[:200]} answered {response.status_code}")
    if os.environ.get("SAWTOOTH_FUZZ_REPORT"):  # benchmarks/fuzz.py reads what was sent
        Path(os.environ["SAWTOOTH_FUZZ_REPORT"]).write_text(
            json.dumps({"requests": asked, "server_errors": len(failed)})
        )
    assert not failed, "\n".join(failed)
    assert asked > 200  # the walk reached the pages, not only their login redirects


@pytest.mark.parametrize(
    "external_id",
    ["a%00b", "a%2Fb", "..", "a%2F..%2Fb", "%2E%2E", "a/b", "."],
    ids=["nul", "slash", "dotdot", "slash-dotdot", "encoded-dotdot", "raw-slash", "dot"],
)
def test_hostile_ids_on_api_paths_get_a_json_4xx(
    client: Client, key: str, external_id: str
) -> None:
    for path in (
        f"/api/v1/sessions/{external_id}",
        f"/api/v1/sessions/{external_id}/messages",
        f"/api/v1/sessions/{external_id}/curve",
        f"/api/v1/sessions/{external_id}/compactions",
        f"/api/v1/sessions/{external_id}/findings",
    ):
        response = client.get(path, headers=_auth(key))
        assert 400 <= response.status_code < 500, (path, response.status_code)
        assert response["Content-Type"].startswith("application/json"), (path, response.content)
        assert "error" in response.json(), (path, response.content)
    response = client.post(
        f"/api/v1/sessions/{external_id}/events",
        data=dumps({"messages": [wire_message(0)]}),
        content_type="application/json",
        headers=_auth(key),
    )
    assert 400 <= response.status_code < 500, response.content
    assert response["Content-Type"].startswith("application/json"), response.content
    from sessions.models import AgentSession

    assert not AgentSession.objects.exists()


def test_bytes_that_are_not_utf8_in_a_path_id_stay_percent_escaped(
    client: Client, key: str
) -> None:
    """%ED%A0%80 would decode to a lone surrogate: Django keeps it as the literal text
    "%ED%A0%80", which storage holds and the same path reads back; no surrogate is stored."""
    path = "/api/v1/sessions/a%ED%A0%80b"
    response = client.post(
        f"{path}/events",
        data=dumps({"messages": [wire_message(0)]}),
        content_type="application/json",
        headers=_auth(key),
    )
    assert response.status_code == 202, response.content
    assert client.get(path, headers=_auth(key)).json()["external_id"] == "a%ED%A0%80b"


@pytest.mark.parametrize("bad", ["\ud800", "a\x00b"], ids=["surrogate", "nul"])
def test_ids_inside_bodies_refuse_nul_and_lone_surrogates_on_every_door(
    client: Client, key: str, bad: str
) -> None:
    from sessions.models import AgentSession
    from tests.importers.test_otlp import call, export, text

    span = call("00f067aa0ba902b7", [text("user", "hi")], "hello", start=1, tokens=5)
    for item in span["attributes"]:
        if item["key"] == "gen_ai.conversation.id":
            item["value"] = {"stringValue": bad}
    otlp = client.post(
        "/v1/traces", data=dumps(export(span)), content_type="application/json", headers=_auth(key)
    )
    assert otlp.status_code == 200, otlp.content
    answer = otlp.json()["partialSuccess"]
    assert int(answer["rejectedSpans"]) == 1, answer
    assert "gen_ai.conversation.id" in answer["errorMessage"], answer
    record = {"type": "user", "sessionId": bad, "uuid": "u", "message": {"role": "user"}}
    record["message"]["content"] = "hi"
    imported = client.post(
        "/api/v1/imports/claude-code?name=t.jsonl",
        data=dumps(record) + b"\n",
        content_type="application/x-ndjson",
        headers=_auth(key),
    )
    assert 400 <= imported.status_code < 500, imported.content
    experiment = client.post(
        "/api/v1/experiments",
        data=dumps({"policies": [{}], "sessions": [bad]}),
        content_type="application/json",
        headers=_auth(key),
    )
    assert 400 <= experiment.status_code < 500, experiment.content
    assert not AgentSession.objects.exists()
