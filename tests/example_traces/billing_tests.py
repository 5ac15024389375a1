"""The billing repository's own test suite, as source text."""

from __future__ import annotations

import ast
import re

from tests.example_traces.billing_models import MODELS, snake_case
from tests.example_traces.billing_ops import OPS, SAMPLE_ARGS
from tests.example_traces.billing_source import EVENTS, billing_exports, op_signature

CONFTEST = '''"""A fake PayProvider: records requests and replays canned responses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from billing import client

FIXTURES = Path(__file__).parent / "fixtures"


def load_fixture(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{name}.json").read_text())


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    json: dict[str, Any] | None


@dataclass
class FakeProvider:
    requests: list[RecordedRequest] = field(default_factory=list)
    responses: list[httpx.Response] = field(default_factory=list)

    def respond(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self.responses.append(httpx.Response(status, json=body, headers=headers))

    @property
    def last_request(self) -> RecordedRequest:
        return self.requests[-1]

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        self.requests.append(
            RecordedRequest(request.method, request.url.path, dict(request.headers), body)
        )
        return self.responses.pop(0)


@pytest.fixture
def fake_provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeProvider]:
    fake = FakeProvider()
    transport = httpx.MockTransport(fake.handler)
    test_client = client.PaymentClient("sk_test_123", transport=transport, max_attempts=2)
    monkeypatch.setattr(client, "_default", test_client)
    monkeypatch.setattr("billing.retry.sleep_before_retry", lambda *args, **kwargs: None)
    yield fake
    test_client.close()
'''


_CARD_ERROR = '{"error": {"type": "card_error", "message": "Your card was declined."}}'


_NOT_FOUND = '{"error": {"type": "invalid_request_error", "message": "No such object."}}'


_CLIENT_TESTS = (
    (
        "test_request_sends_api_version_header",
        'fake_provider.respond(200, {"id": "ch_456"})',
        'client.default_client().get("/v1/charges/ch_456")',
        ['assert fake_provider.last_request.headers["payprovider-version"] == "2023-10-16"'],
    ),
    (
        "test_request_sends_bearer_token",
        'fake_provider.respond(200, {"id": "ch_456"})',
        'client.default_client().get("/v1/charges/ch_456")',
        ['assert fake_provider.last_request.headers["authorization"] == "Bearer sk_test_123"'],
    ),
    (
        "test_post_sends_idempotency_key",
        'fake_provider.respond(200, {"id": "ch_456"})',
        'client.default_client().post("/v1/charges", json={"amount": 100})',
        ['assert len(fake_provider.last_request.headers["idempotency-key"]) == 36'],
    ),
    (
        "test_post_reuses_given_idempotency_key",
        'fake_provider.respond(200, {"id": "ch_456"})',
        'client.default_client().post("/v1/charges", json={}, idempotency_key="order-42")',
        ['assert fake_provider.last_request.headers["idempotency-key"] == "order-42"'],
    ),
    (
        "test_request_retries_on_429",
        'fake_provider.respond(429, {"error": {"type": "rate_limit_error", '
        '"message": "Slow down."}})\n'
        '    fake_provider.respond(200, {"id": "ch_456"})',
        'result = client.default_client().get("/v1/charges/ch_456")',
        ["assert len(fake_provider.requests) == 2", 'assert result == {"id": "ch_456"}'],
    ),
    (
        "test_request_honours_retry_after",
        "waits: list[float] = []\n"
        '    monkeypatch.setattr("billing.retry.sleep_before_retry", '
        "lambda attempt, retry_after=None: waits.append(retry.delay_for(attempt, "
        "retry_after=retry_after)))\n"
        '    fake_provider.respond(429, {"error": {"type": "rate_limit_error"}}, '
        'headers={"Retry-After": "2"})\n'
        '    fake_provider.respond(200, {"id": "ch_456"})',
        'client.default_client().get("/v1/charges/ch_456")',
        ["assert waits == [2.0]"],
    ),
    (
        "test_request_gives_up_after_max_attempts",
        'fake_provider.respond(503, {"error": {"type": "api_error", "message": "Try later."}})\n'
        '    fake_provider.respond(503, {"error": {"type": "api_error", "message": "Try later."}})',
        "with pytest.raises(errors.ProviderUnavailable):\n"
        '        client.default_client().get("/v1/charges/ch_456")',
        ["assert len(fake_provider.requests) == 2"],
    ),
    (
        "test_card_error_maps_to_card_declined",
        f"fake_provider.respond(402, {_CARD_ERROR})",
        "with pytest.raises(errors.CardDeclined) as caught:\n"
        '        client.default_client().post("/v1/charges", json={"amount": 100})',
        [
            'assert str(caught.value) == "Your card was declined."',
            "assert caught.value.status == 402",
        ],
    ),
    (
        "test_unknown_error_type_maps_to_billing_error",
        'fake_provider.respond(400, {"error": {"type": "brand_new_error", "message": "?"}})',
        "with pytest.raises(errors.BillingError) as caught:\n"
        '        client.default_client().get("/v1/charges/ch_456")',
        ["assert type(caught.value) is errors.BillingError"],
    ),
    (
        "test_error_keeps_request_id",
        f'fake_provider.respond(404, {_NOT_FOUND}, headers={{"Request-Id": "req_77"}})',
        "with pytest.raises(errors.InvalidRequest) as caught:\n"
        '        client.default_client().get("/v1/charges/ch_missing")',
        [
            'assert caught.value.request_id == "req_77"',
            'assert "(request req_77)" in str(caught.value)',
        ],
    ),
    (
        "test_transport_error_raises_provider_unavailable",
        "def refuse(request: httpx.Request) -> httpx.Response:\n"
        '        raise httpx.ConnectError("connection refused", request=request)\n\n'
        '    monkeypatch.setattr(fake_provider, "handler", refuse)',
        "with pytest.raises(errors.ProviderUnavailable):\n"
        '        client.PaymentClient("sk_test_123", transport=httpx.MockTransport(refuse))'
        '.get("/")',
        ["assert fake_provider.requests == []"],
    ),
)


def client_tests() -> str:
    tests = []
    for name, arrange, act, asserts in _CLIENT_TESTS:
        params = "fake_provider: FakeProvider"
        if "monkeypatch" in arrange:
            params += ", monkeypatch: pytest.MonkeyPatch"
        body = "\n".join(f"    {line}" for line in asserts)
        tests.append(f"def {name}({params}) -> None:\n    {arrange}\n\n    {act}\n\n{body}")
    return (
        '"""PaymentClient: headers, retries, error mapping."""\n\n'
        "from __future__ import annotations\n\nimport httpx\nimport pytest\n\n"
        "from billing import client, errors, retry\n"
        "from tests.billing.conftest import FakeProvider\n"
        "\n\n" + "\n\n\n".join(tests) + "\n"
    )


def op_tests(module: str) -> str:
    ops = [op for op in OPS if op.module == module]
    models = sorted({op.model for op in ops} | ({"InvoiceLine"} if module == "invoices" else set()))
    tests = []
    for op in ops:
        required = [p for p in op.params if p.default is None]
        call = f"{module}.{op.name}({', '.join(SAMPLE_ARGS[p.name] for p in required)})"
        path = "/v1/" + op.path
        for name in re.findall(r"{(\w+)}", op.path):
            path = path.replace("{" + name + "}", ast.literal_eval(SAMPLE_ARGS[name]))
        fixture = snake_case(op.model) + ("_list" if op.kind == "list" else "")
        method = "POST" if op.kind in ("create", "action") else "GET"
        sends = [
            f"def test_{op.name}_sends_expected_request(fake_provider: FakeProvider) -> None:",
            f'    fake_provider.respond(200, load_fixture("{fixture}"))',
            "",
            f"    {call}",
            "",
            "    request = fake_provider.last_request",
            f'    assert request.method == "{method}"',
            f'    assert request.path == "{path}"',
        ]
        if op.name == "charge":
            sends.append('    assert request.json["amount"] == 1990')
        tests.append("\n".join(sends))
        if op.kind == "list":
            check = f"    assert all(isinstance(item, {op.model}) for item in result)"
        else:
            check = f"    assert isinstance(result, {op.model})"
        tests.append(
            f"def test_{op.name}_returns_{snake_case(op.model)}{'s' if op.kind == 'list' else ''}"
            "(fake_provider: FakeProvider) -> None:\n"
            f'    fake_provider.respond(200, load_fixture("{fixture}"))\n\n'
            f"    result = {call}\n\n{check}"
        )
        if op.kind in ("create", "action"):
            keyed = call[:-1] + (", " if required else "") + 'idempotency_key="key-1")'
            tests.append(
                f"def test_{op.name}_sends_idempotency_key(fake_provider: FakeProvider) -> None:\n"
                f'    fake_provider.respond(200, load_fixture("{fixture}"))\n\n'
                f"    {keyed}\n\n"
                '    assert fake_provider.last_request.headers["idempotency-key"] == "key-1"'
            )
        if op.kind == "list":
            tests.append(
                f"def test_{op.name}_follows_pagination(fake_provider: FakeProvider) -> None:\n"
                f'    first = load_fixture("{fixture}")\n'
                '    fake_provider.respond(200, {**first, "has_more": True})\n'
                "    fake_provider.respond(200, first)\n\n"
                f"    result = {call}\n\n"
                "    assert len(result) == 4"
            )
        status, body, error = (
            ("402", _CARD_ERROR, "CardDeclined")
            if op.kind == "create"
            else ("404", _NOT_FOUND, "InvalidRequest")
        )
        tests.append(
            f"def test_{op.name}_raises_on_provider_error(fake_provider: FakeProvider) -> None:\n"
            f"    fake_provider.respond({status}, {body})\n\n"
            f"    with pytest.raises(errors.{error}):\n"
            f"        {call}"
        )
    return (
        f'"""billing.{module} against a fake provider."""\n\n'
        "from __future__ import annotations\n\n"
        "from datetime import date\nfrom decimal import Decimal\n\n"
        "import pytest\n\n"
        f"from billing import errors, {module}\n"
        f"from billing.models import {', '.join(models)}\n"
        "from tests.billing.conftest import FakeProvider, load_fixture\n\n\n"
        + "\n\n\n".join(tests)
        + "\n"
    )


def model_tests() -> str:
    tests = []
    for model, (_, fields) in MODELS.items():
        snake = snake_case(model)
        tests.append(
            f"def test_{snake}_from_v1_reads_every_field() -> None:\n"
            f'    parsed = {model}.from_v1(load_fixture("{snake}"))\n\n'
            "    assert {f.name for f in fields(parsed)} == "
            f"{{{', '.join(repr(f.name) for f in fields)}}}"
        )
        if any(f.annotation == "Decimal" for f in fields):
            amount = next(f.name for f in fields if f.annotation == "Decimal")
            tests.append(
                f"def test_{snake}_from_v1_converts_amounts_to_major_units() -> None:\n"
                f'    parsed = {model}.from_v1(load_fixture("{snake}"))\n\n'
                f'    assert parsed.{amount} == Decimal("19.90")'
            )
        tests.append(
            f"def test_{snake}_is_frozen() -> None:\n"
            f'    parsed = {model}.from_v1(load_fixture("{snake}"))\n\n'
            "    with pytest.raises(FrozenInstanceError):\n"
            f"        parsed.{fields[0].name} = {fields[0].name!r}  # type: ignore[misc]"
        )
    return (
        '"""Parsing provider objects into our models."""\n\n'
        "from __future__ import annotations\n\n"
        "from dataclasses import FrozenInstanceError, fields\n"
        "from decimal import Decimal\n\nimport pytest\n\n"
        f"from billing.models import {', '.join(MODELS)}\n"
        "from tests.billing.conftest import load_fixture\n\n\n" + "\n\n\n".join(tests) + "\n"
    )


def webhook_tests() -> str:
    tests = [
        '''def sign(payload: bytes, secret: str = SECRET, timestamp: int = NOW) -> str:
    signed = f"{timestamp}.".encode() + payload
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"''',
        """def test_verify_signature_accepts_a_valid_header() -> None:
    payload = b'{"id": "evt_1"}'

    webhooks.verify_signature(payload, sign(payload), SECRET, now=NOW)""",
        """def test_verify_signature_rejects_a_tampered_payload() -> None:
    header = sign(b'{"id": "evt_1"}')

    with pytest.raises(errors.InvalidSignature):
        webhooks.verify_signature(b'{"id": "evt_2"}', header, SECRET, now=NOW)""",
        """def test_verify_signature_rejects_an_old_timestamp() -> None:
    payload = b'{"id": "evt_1"}'

    with pytest.raises(errors.InvalidSignature):
        webhooks.verify_signature(payload, sign(payload, timestamp=NOW - 301), SECRET, now=NOW)""",
        """def test_verify_signature_rejects_a_malformed_header() -> None:
    with pytest.raises(errors.InvalidSignature):
        webhooks.verify_signature(b"{}", "garbage", SECRET, now=NOW)""",
    ]
    for event, _, model, action in EVENTS:
        target, method = action.split("(")[0].split(".")
        tests.append(
            f"def test_{event.replace('.', '_')}_is_dispatched("
            "monkeypatch: pytest.MonkeyPatch) -> None:\n"
            "    calls: list[tuple[object, ...]] = []\n"
            f'    monkeypatch.setattr({target}, "{method}", lambda *args: calls.append(args))\n'
            f'    payload = event("{event}", load_fixture("{snake_case(model)}"))\n\n'
            "    webhooks.handle(payload, sign(payload), now=NOW)\n\n"
            "    assert len(calls) == 1"
        )
    return (
        '"""Webhook signatures and dispatch."""\n\n'
        "from __future__ import annotations\n\nimport hashlib\nimport hmac\nimport json\n"
        "from typing import Any\n\nimport pytest\n\n"
        "from billing import errors, ledger, notifications, webhooks\n"
        "from tests.billing.conftest import load_fixture\n\n"
        'SECRET = "whsec_test"\nNOW = 1_793_000_000\n\n\n'
        "def event(kind: str, obj: dict[str, Any]) -> bytes:\n"
        '    body = {"id": "evt_1", "type": kind, "created": NOW, "data": {"object": obj}}\n'
        "    return json.dumps(body).encode()\n\n\n" + "\n\n\n".join(tests) + "\n"
    )


def public_api_tests() -> str:
    expected = "\n".join(
        f'    "{op.name}": "{op_signature(op)}",' for op in sorted(OPS, key=lambda o: o.name)
    )
    exports = "\n".join(f'    "{name}",' for name in billing_exports())
    return f'''"""The public API of ``billing`` is a contract: three other services import it directly.

Changing a name or a signature here needs a coordinated release with checkout,
subscriptions and back-office. See docs/public-api.md before touching this file.
"""

from __future__ import annotations

import inspect

import pytest

import billing

EXPECTED_EXPORTS = [
{exports}
]

EXPECTED_SIGNATURES = {{
{expected}
}}


def test_module_exports_are_stable() -> None:
    assert sorted(billing.__all__) == EXPECTED_EXPORTS


@pytest.mark.parametrize(
    ("name", "expected"), sorted(EXPECTED_SIGNATURES.items()), ids=sorted(EXPECTED_SIGNATURES)
)
def test_public_signatures_are_stable(name: str, expected: str) -> None:
    assert str(inspect.signature(getattr(billing, name))) == expected
'''  # noqa: E501


RETRY_TESTS = '''"""Backoff delays."""

from __future__ import annotations

import random

import pytest

from billing import retry


class TestDelayFor:
    def setup(self) -> None:
        random.seed(7)

    def test_first_attempt_waits_at_most_the_base_delay(self) -> None:
        assert 0 <= retry.delay_for(1) <= retry.BASE_DELAY

    def test_delay_is_capped(self) -> None:
        assert retry.delay_for(30) <= retry.MAX_DELAY

    def test_retry_after_wins(self) -> None:
        assert retry.delay_for(1, retry_after="3") == 3.0

    def test_retry_after_is_capped(self) -> None:
        assert retry.delay_for(1, retry_after="120") == retry.MAX_DELAY

    def test_delays_are_reproducible_with_a_seed(self) -> None:
        assert round(retry.delay_for(3), 6) == 0.323833

    def test_bad_retry_after_is_ignored_without_a_warning(self) -> None:
        with pytest.warns(None) as record:
            delay = retry.delay_for(2, retry_after="soon")
        assert not record
        assert delay <= retry.BASE_DELAY * 2
'''


CURRENCY_TESTS = '''"""Minor units and display."""

from __future__ import annotations

from decimal import Decimal

import pytest

from billing import currency


@pytest.mark.parametrize("code", sorted(currency.MINOR_UNITS))
def test_round_trip_keeps_the_amount(code: str) -> None:
    amount = Decimal("1234.5").quantize(Decimal(1).scaleb(-currency.MINOR_UNITS[code]))

    assert currency.from_minor(currency.to_minor(amount, code), code) == amount


@pytest.mark.parametrize("code", sorted(currency.MINOR_UNITS))
def test_to_minor_uses_the_currency_exponent(code: str) -> None:
    assert currency.to_minor(Decimal(1), code) == 10 ** currency.MINOR_UNITS[code]


@pytest.mark.parametrize("code", sorted(currency.MINOR_UNITS))
def test_format_money_starts_with_the_symbol(code: str) -> None:
    assert currency.format_money(Decimal(1), code).startswith(currency.SYMBOLS[code])


def test_brl_uses_comma_decimals_and_dot_thousands() -> None:
    assert currency.format_money(Decimal("1234.5"), "BRL") == "R$ 1.234,50"


def test_codes_are_case_insensitive() -> None:
    assert currency.to_minor(Decimal("19.90"), "brl") == 1990


def test_unknown_currency_raises_key_error() -> None:
    with pytest.raises(KeyError):
        currency.to_minor(Decimal(1), "XXX")
'''
