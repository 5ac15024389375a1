"""The rest of the billing package's source: client, retry, settings, errors, currency, webhooks."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from tests.example_traces.billing_models import MODELS
from tests.example_traces.billing_ops import OPS, Op

CLIENT = '''"""HTTP client for the PayProvider REST API.

Everything that talks to the provider goes through :class:`PaymentClient`, so retries,
idempotency keys and error mapping live in one place.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Mapping
from typing import Any

import httpx

from billing import errors, retry, settings

logger = logging.getLogger(__name__)

BASE_URL = "https://api.payprovider.example"
API_VERSION = "2023-10-16"
VERSION_HEADER = "Payprovider-Version"
DEFAULT_TIMEOUT = httpx.Timeout(10.0, connect=3.0)
RETRYABLE_STATUS = frozenset({409, 429, 500, 502, 503, 504})


class PaymentClient:
    """A thin, retrying wrapper around :mod:`httpx` for one API key."""

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str = BASE_URL,
        timeout: httpx.Timeout = DEFAULT_TIMEOUT,
        max_attempts: int = 4,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._max_attempts = max_attempts
        self._http = httpx.Client(
            base_url=base_url,
            timeout=timeout,
            transport=transport,
            headers={
                "Authorization": f"Bearer {api_key}",
                VERSION_HEADER: API_VERSION,
                "User-Agent": f"billing/{settings.VERSION} (+https://intranet.example/billing)",
            },
        )

    def close(self) -> None:
        self._http.close()

    def get(self, path: str, *, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        return self._request("GET", path, params=params)

    def post(
        self,
        path: str,
        *,
        json: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        key = idempotency_key or str(uuid.uuid4())
        return self._request("POST", path, json=json, headers={"Idempotency-Key": key})

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        for attempt in range(1, self._max_attempts + 1):
            started = time.monotonic()
            try:
                response = self._http.request(
                    method, path, params=params, json=json, headers=headers
                )
            except httpx.TransportError as exc:
                if attempt == self._max_attempts:
                    raise errors.ProviderUnavailable(str(exc)) from exc
                retry.sleep_before_retry(attempt)
                continue
            elapsed_ms = (time.monotonic() - started) * 1000
            logger.info(
                "payprovider %s %s -> %s in %.0fms (attempt %d)",
                method,
                path,
                response.status_code,
                elapsed_ms,
                attempt,
            )
            if response.status_code < 400:
                return response.json()
            if response.status_code in RETRYABLE_STATUS and attempt < self._max_attempts:
                retry.sleep_before_retry(attempt, retry_after=response.headers.get("Retry-After"))
                continue
            raise _error_from_response(response)
        raise AssertionError("unreachable: the loop returns or raises")


def _error_from_response(response: httpx.Response) -> errors.BillingError:
    try:
        body = response.json()["error"]
    except (ValueError, KeyError, TypeError):
        body = {"type": "api_error", "message": response.text[:200]}
    error_class = _ERROR_TYPES.get(body.get("type", ""), errors.BillingError)
    return error_class(
        body.get("message", "unknown error"),
        status=response.status_code,
        code=body.get("code"),
        request_id=response.headers.get("Request-Id"),
    )


_ERROR_TYPES: dict[str, type[errors.BillingError]] = {
    "card_error": errors.CardDeclined,
    "invalid_request_error": errors.InvalidRequest,
    "idempotency_error": errors.IdempotencyConflict,
    "rate_limit_error": errors.RateLimited,
    "authentication_error": errors.AuthenticationFailed,
    "api_error": errors.ProviderUnavailable,
}

_default: PaymentClient | None = None


def default_client() -> PaymentClient:
    """The process-wide client, built lazily from settings."""
    global _default
    if _default is None:
        _default = PaymentClient(settings.API_KEY, base_url=settings.BASE_URL or BASE_URL)
    return _default
'''


RETRY = '''"""Backoff for provider calls: exponential, full jitter, capped; honours Retry-After."""

from __future__ import annotations

import random
import time

BASE_DELAY = 0.25
MAX_DELAY = 8.0


def delay_for(attempt: int, *, retry_after: str | None = None) -> float:
    """Seconds to wait before ``attempt`` + 1. The provider's hint wins when it parses."""
    if retry_after is not None:
        try:
            return min(float(retry_after), MAX_DELAY)
        except ValueError:
            pass
    return random.uniform(0, min(MAX_DELAY, BASE_DELAY * 2 ** (attempt - 1)))


def sleep_before_retry(attempt: int, *, retry_after: str | None = None) -> None:
    time.sleep(delay_for(attempt, retry_after=retry_after))
'''


SETTINGS = '''"""Billing settings, read once from the environment."""

import os

VERSION = "3.8.2"
API_KEY = os.environ.get("PAYPROVIDER_API_KEY", "")
BASE_URL = os.environ.get("PAYPROVIDER_BASE_URL", "")
WEBHOOK_SECRET = os.environ.get("PAYPROVIDER_WEBHOOK_SECRET", "")
DEFAULT_CURRENCY = os.environ.get("BILLING_DEFAULT_CURRENCY", "BRL")
'''


_ERRORS = (
    ("CardDeclined", "The card was declined; ``code`` holds the issuer's reason."),
    ("InvalidRequest", "The provider rejected the request as malformed: a bug on our side."),
    ("IdempotencyConflict", "The idempotency key was reused with a different payload."),
    ("RateLimited", "Too many requests, even after the client's own retries."),
    ("AuthenticationFailed", "The API key is missing, revoked or for the wrong mode."),
    ("ProviderUnavailable", "The provider failed or could not be reached after all retries."),
    ("InvalidSignature", "A webhook's signature header does not match its payload."),
)


def errors_module() -> str:
    head = '''"""Exceptions raised by the billing module. Callers catch :class:`BillingError`."""

from __future__ import annotations


class BillingError(Exception):
    """Base class of every failure the billing module raises."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.request_id = request_id

    def __str__(self) -> str:
        text = super().__str__()
        if self.request_id:
            return f"{text} (request {self.request_id})"
        return text
'''
    classes = [f'class {name}(BillingError):\n    """{doc}"""' for name, doc in _ERRORS]
    return head + "\n\n" + "\n\n\n".join(classes) + "\n"


CURRENCIES = (
    ("BRL", 2, "R$"),
    ("USD", 2, "US$"),
    ("EUR", 2, "\u20ac"),
    ("GBP", 2, "\u00a3"),
    ("ARS", 2, "AR$"),
    ("CLP", 0, "CLP$"),
    ("COP", 2, "COL$"),
    ("MXN", 2, "MX$"),
    ("PEN", 2, "S/"),
    ("UYU", 2, "$U"),
    ("PYG", 0, "\u20b2"),
    ("JPY", 0, "\u00a5"),
    ("KRW", 0, "\u20a9"),
    ("CHF", 2, "CHF"),
    ("CAD", 2, "CA$"),
    ("AUD", 2, "A$"),
    ("KWD", 3, "KD"),
    ("BHD", 3, "BD"),
    ("JOD", 3, "JD"),
    ("INR", 2, "\u20b9"),
    ("ZAR", 2, "R"),
    ("SEK", 2, "kr"),
    ("NOK", 2, "kr"),
    ("DKK", 2, "kr."),
    ("PLN", 2, "z\u0142"),
)


def currency_module() -> str:
    rows = "\n".join(f'    "{code}": {units},' for code, units, _ in CURRENCIES)
    symbols = "\n".join(f'    "{code}": "{symbol}",' for code, _, symbol in CURRENCIES)
    return f'''"""Minor units and display of the currencies PayProvider settles in."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

MINOR_UNITS: dict[str, int] = {{
{rows}
}}

SYMBOLS: dict[str, str] = {{
{symbols}
}}


def to_minor(amount: Decimal, currency: str = "BRL") -> int:
    """``Decimal("19.90")`` BRL -> ``1990``. Rounds half to even, like the provider."""
    exponent = MINOR_UNITS[currency.upper()]
    quantum = Decimal(1).scaleb(-exponent)
    return int(amount.quantize(quantum, rounding=ROUND_HALF_EVEN).scaleb(exponent))


def from_minor(value: int, currency: str) -> Decimal:
    """``1990`` BRL -> ``Decimal("19.90")``."""
    return Decimal(value).scaleb(-MINOR_UNITS[currency.upper()])


def format_money(amount: Decimal, currency: str) -> str:
    """``Decimal("1234.5")`` BRL -> ``"R$ 1.234,50"``; other currencies use the dot."""
    code = currency.upper()
    exponent = MINOR_UNITS[code]
    text = f"{{amount:,.{{exponent}}f}}"
    if code == "BRL":
        text = text.replace(",", "_").replace(".", ",").replace("_", ".")
    return f"{{SYMBOLS.get(code, code)}} {{text}}"
'''


EVENTS = (
    (
        "charge.succeeded",
        "payment.succeeded",
        "Charge",
        "ledger.record_payment(obj.id, obj.amount, obj.currency)",
    ),
    (
        "charge.failed",
        "payment.failed",
        "Charge",
        "notifications.payment_failed(obj.customer_id, obj.failure_code)",
    ),
    (
        "charge.refunded",
        "refund.succeeded",
        "Refund",
        "ledger.record_refund(obj.charge_id, obj.amount, obj.currency)",
    ),
    ("invoice.paid", "invoice.paid", "Invoice", "ledger.mark_invoice_paid(obj.id, obj.total)"),
    (
        "invoice.payment_failed",
        "invoice.payment_failed",
        "Invoice",
        "notifications.invoice_overdue(obj.customer_id, obj.id)",
    ),
    ("invoice.voided", "invoice.voided", "Invoice", "ledger.void_invoice(obj.id)"),
    (
        "customer.updated",
        "customer.updated",
        "Customer",
        "notifications.contact_changed(obj.id, obj.email)",
    ),
    (
        "payment_method.attached",
        "payment_method.attached",
        "PaymentMethod",
        "notifications.card_saved(obj.customer_id, obj.last4)",
    ),
)


def handler_name(event: str) -> str:
    return "_on_" + event.replace(".", "_")


def webhooks_module() -> str:
    head = '''"""Inbound PayProvider webhooks: signature check, parsing and dispatch."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from billing import errors, ledger, notifications, settings
from billing.models import Charge, Customer, Invoice, PaymentMethod, Refund

logger = logging.getLogger(__name__)

SIGNATURE_HEADER = "Payprovider-Signature"
TOLERANCE_SECONDS = 300


def verify_signature(payload: bytes, header: str, secret: str, *, now: float) -> None:
    """Raise ``InvalidSignature`` unless ``header`` signs ``payload`` with ``secret``."""
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    timestamp, signature = parts.get("t"), parts.get("v1")
    if not timestamp or not signature:
        raise errors.InvalidSignature("malformed signature header")
    if abs(now - int(timestamp)) > TOLERANCE_SECONDS:
        raise errors.InvalidSignature("timestamp outside the tolerance window")
    signed = f"{timestamp}.".encode() + payload
    expected = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, signature):
        raise errors.InvalidSignature("signature mismatch")


def handle(payload: bytes, header: str, *, now: float) -> None:
    """Verify, parse and dispatch one delivery. Unknown event types are logged and ignored."""
    verify_signature(payload, header, settings.WEBHOOK_SECRET, now=now)
    event = json.loads(payload)
    sent_at = datetime.utcfromtimestamp(event["created"])
    handler = HANDLERS.get(event["type"])
    if handler is None:
        logger.info("ignoring webhook %s (%s)", event["id"], event["type"])
        return
    logger.info("webhook %s (%s) sent at %s", event["id"], event["type"], sent_at.isoformat())
    handler(event["data"]["object"])
'''
    handlers = []
    for event, _, model, action in EVENTS:
        handlers.append(
            f"def {handler_name(event)}(data: Mapping[str, Any]) -> None:\n"
            f"    obj = {model}.from_v1(data)\n"
            f"    {action}"
        )
    table = "\n".join(f'    "{event}": {handler_name(event)},' for event, *_ in EVENTS)
    tail = f"HANDLERS: dict[str, Callable[[Mapping[str, Any]], None]] = {{\n{table}\n}}\n"
    return head + "\n\n" + "\n\n\n".join(handlers) + "\n\n\n" + tail


def support_module(name: str, functions: Sequence[tuple[str, str, str]]) -> str:
    body = "\n\n\n".join(
        f"def {fn}({args}) -> None:\n"
        f'    """{doc}"""\n'
        f'    logger.info("{name}.{fn} %s", {args.split(":")[0]})'
        for fn, args, doc in functions
    )
    return (
        f'"""{name.capitalize()} hooks called from webhooks; the real work is queued."""\n\n'
        "from __future__ import annotations\n\nimport logging\nfrom decimal import Decimal\n\n"
        f"logger = logging.getLogger(__name__)\n\n\n{body}\n"
    )


def billing_exports() -> list[str]:
    return sorted(
        [op.name for op in OPS]
        + list(MODELS)
        + ["BillingError"]
        + [name for name, _ in _ERRORS if name != "InvalidSignature"]
    )


def init_module() -> str:
    imports = []
    for module in ("api", "errors", "invoices", "models", "refunds"):
        if module == "errors":
            names = ["BillingError"] + [n for n, _ in _ERRORS if n != "InvalidSignature"]
        elif module == "models":
            names = list(MODELS)
        else:
            names = [op.name for op in OPS if op.module == module]
        listed = "\n".join(f"    {name}," for name in sorted(names))
        imports.append(f"from billing.{module} import (\n{listed}\n)")
    exports = "\n".join(f'    "{name}",' for name in billing_exports())
    return (
        '"""Billing: the only code that talks to PayProvider.\n\n'
        "Three other services (checkout, subscriptions, back-office) import the names below\n"
        "directly. Their names and signatures are a public contract, pinned by\n"
        'tests/billing/test_public_api.py."""\n\n'
        + "\n".join(imports)
        + f"\n\n__all__ = [\n{exports}\n]\n"
    )


def op_signature(op: Op) -> str:
    parts = []
    for p in op.params:
        text = f"{p.name}: '{p.annotation}'"
        if p.default is not None:
            text += f" = {ast.literal_eval(p.default)!r}"
        parts.append(text)
    if op.kind in ("create", "action"):
        parts += ["*", "idempotency_key: 'str | None' = None"]
    returns = f"list[{op.model}]" if op.kind == "list" else op.model
    return f"({', '.join(parts)}) -> '{returns}'"
