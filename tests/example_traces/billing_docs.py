"""The billing repository's docs: the v2 migration notes and the vendored provider reference."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.example_traces.billing_fixtures import LINE_V2, PROVIDER_FIXTURES
from tests.example_traces.billing_models import snake_case
from tests.example_traces.billing_ops import OPS, PARAM_DOCS
from tests.example_traces.billing_source import EVENTS


def migration_doc() -> str:
    rows = []
    for op in OPS:
        v2 = op.path.replace("charges", "payments")
        verb = "POST" if op.kind in ("create", "action") else "GET"
        rows.append(f"| `{op.name}` | `{verb} /v1/{op.path}` | `{verb} /v2/{v2}` |")
    endpoint_map = "\n".join(rows)
    return f"""# PayProvider API v2: migration notes

API v1 is closed to new accounts on 2027-03-31 and switched off for everyone on 2027-09-30.
This page lists what our `billing` package has to change. The provider's own guide is at
https://docs.payprovider.example/v2/migrate; where the two disagree, the provider wins.

## What changes

| Area | v1 | v2 |
|------|----|----|
| Version | `Payprovider-Version: 2023-10-16` header | `/v2/` path prefix and `PP-Api-Version: 2026-09-01` |
| Charges | `/v1/charges` | `/v2/payments` (same verbs; `capture` unchanged) |
| Amounts | integer minor units plus a `currency` field | `{{"value": <minor units>, "currency": "BRL"}}` |
| Currency codes | lower case (`brl`) | upper case ISO 4217 (`BRL`) |
| Customer reference | `customer` | `customer_id` |
| Idempotency | `Idempotency-Key`, kept 7 days | `PP-Idempotency-Key`, kept 24 hours |
| Errors | `{{"error": {{"type", "message", "code"}}}}` | `{{"errors": [{{"type", "detail", "code"}}]}}` |
| Pagination | `starting_after` + `has_more` | `cursor` + `next_cursor` (absent on the last page) |
| Rate limits | `Retry-After` (seconds) | `RateLimit-Reset` (seconds); `Retry-After` only on 503 |
| Webhook events | `charge.*` | `payment.*`, and `refund.succeeded` replaces `charge.refunded` |
| Webhook signature | `Payprovider-Signature: t=...,v1=...` (HMAC-SHA256) | `PP-Signature: t=...,v2=...` (HMAC-SHA512) |
| Timestamps | Unix seconds (`created`) | RFC 3339 strings (`created_at`) |

## Endpoint map

| Function | v1 | v2 |
|----------|----|----|
{endpoint_map}

## What stays the same

- Object ids. Payments created on v2 get `py_` ids; `ch_` ids stay valid on every v2 endpoint.
- API keys, test mode and the dashboard.
- Refund reasons, invoice statuses and card brands (v2 calls the brand `network`).

## Partial refunds

v2 needs the currency next to every amount, including partial refunds. Our callers pass only
an amount; look the currency up from the charge (one extra GET, cached per request) rather
than asking callers for it.

## Rollout

1. Ship the client with `PAYPROVIDER_API=v1` as the default; flip per environment.
2. Webhooks: the provider sends both v1 and v2 events for 30 days after the switch.
   Accept both signature schemes during that window.
3. Remove the v1 code after 2027-09-30.
"""  # noqa: E501


def json_text(data: Any) -> str:
    return json.dumps(data, indent=2) + "\n"


def list_fixture(model: str, version: str) -> dict[str, Any]:
    item = PROVIDER_FIXTURES[model][0 if version == "v1" else 1]
    second = {**item, "id": item["id"][:-1] + "7"}
    if version == "v1":
        return {"object": "list", "data": [item, second], "has_more": False}
    return {"data": [item, second], "next_cursor": None}


_V2_BODY_KEYS = {
    "customer_id": "customer_id",
    "charge_id": "payment_id",
    "payment_method_id": "payment_method_id",
    "make_default": "make_default",
    "due_date": "due_on",
}


_V2_SAMPLES: dict[str, Any] = {
    "customer_id": "cus_123",
    "amount": {"value": 1990, "currency": "BRL"},
    "currency": "BRL",
    "description": "Pedido A-1001",
    "metadata": {"order": "A-1001"},
    "charge_id": "ch_456",
    "email": "ana@example.com",
    "name": "Ana Lima",
    "payment_method_id": "pm_555",
    "make_default": True,
    "lines": [LINE_V2],
    "due_date": "2026-12-01",
    "reason": "requested_by_customer",
    "status": "open",
    "limit": 100,
    "query": "status:'failed'",
}


_V2_ERRORS = (
    ("400", "invalid_request_error", "A parameter is missing, unknown or malformed."),
    ("401", "authentication_error", "The key is missing, revoked, or for the other mode."),
    (
        "402",
        "card_error",
        "The issuer declined; `code` has the reason (`insufficient_funds`, ...).",
    ),
    ("404", "invalid_request_error", "No object with that id in this account."),
    ("409", "idempotency_error", "The key was used in the last 24 h with a different body."),
    ("429", "rate_limit_error", "Too many requests; wait `RateLimit-Reset` seconds."),
    ("500", "api_error", "Our fault. Safe to retry with the same idempotency key."),
)


def reference_doc() -> str:
    parts = [
        "# PayProvider API v2 reference\n\n"
        "Vendored from https://docs.payprovider.example/v2 on 2026-10-20. Do not edit; "
        "re-vendor instead.\n\n"
        "## Conventions\n\n"
        "- Base URL `https://api.payprovider.example`, every path starts with `/v2/`.\n"
        "- Send `Authorization: Bearer <secret key>` and `PP-Api-Version: 2026-09-01`.\n"
        '- Bodies are JSON. Amounts are objects: `{"value": <integer minor units>, '
        '"currency": "<ISO 4217, upper case>"}`.\n'
        "- Timestamps are RFC 3339 strings in UTC.\n"
        "- `POST` requests accept `PP-Idempotency-Key` (up to 255 characters). A key is "
        "remembered for 24 hours; replaying it with the same body returns the first response, "
        "with a different body returns `409 idempotency_error`.\n\n"
        "## Errors\n\n"
        "Every error response has the shape:\n\n"
        "```json\n"
        + json.dumps(
            {
                "errors": [
                    {
                        "type": "card_error",
                        "code": "insufficient_funds",
                        "detail": "Your card has insufficient funds.",
                        "param": None,
                    }
                ],
                "request_id": "req_8Yk2",
            },
            indent=2,
        )
        + "\n```\n\n| Status | type | Meaning |\n|---|---|---|\n"
        + "\n".join(f"| {code} | `{kind}` | {text} |" for code, kind, text in _V2_ERRORS)
        + "\n\n## Pagination\n\n"
        'List endpoints return `{"data": [...], "next_cursor": "..."}`. Pass '
        "`cursor=<next_cursor>` to get the next page; `next_cursor` is absent or null on the "
        "last page. `limit` is 1 to 100 (default 20).\n\n"
        "## Rate limits\n\n"
        "100 requests per second per key in live mode, 25 in test mode. A `429` carries "
        "`RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds until the "
        "window resets). `Retry-After` is only sent with `503`.\n"
    ]
    for op in OPS:
        verb = "POST" if op.kind in ("create", "action") else "GET"
        path = op.path.replace("charges", "payments")
        section = [f"## {verb} /v2/{path}", "", op.summary.replace("charge", "payment"), ""]
        path_params = set(re.findall(r"{(\w+)}", op.path))
        fields = [p for p in op.params if p.name not in path_params]
        if verb == "POST" and fields:
            body = {
                _V2_BODY_KEYS.get(p.name, p.name): _V2_SAMPLES[p.name]
                for p in fields
                if p.name != "currency"
            }
            section += ["Request body:", "", "```json", json.dumps(body, indent=2), "```", ""]
            section += ["| Field | Required | Notes |", "|---|---|---|"]
            for p in fields:
                required = "yes" if p.default is None else "no"
                key = _V2_BODY_KEYS.get(p.name, p.name)
                section.append(f"| `{key}` | {required} | {PARAM_DOCS[p.name]} |")
            section.append("")
        elif fields:
            section += ["Query parameters:", ""]
            for p in fields:
                key = _V2_BODY_KEYS.get(p.name, p.name)
                section.append(f"- `{key}`: {PARAM_DOCS[p.name]}")
            section += ["- `cursor`: from the previous page's `next_cursor`.", ""]
        model = snake_case(op.model)
        sample = list_fixture(model, "v2") if op.kind == "list" else PROVIDER_FIXTURES[model][1]
        section += ["Response `200`:", "", "```json", json.dumps(sample, indent=2), "```", ""]
        codes = ("400", "401", "402", "409", "429") if verb == "POST" else ("401", "404", "429")
        section.append("Errors: " + ", ".join(f"`{code}`" for code in codes) + ".")
        parts.append("\n".join(section))
    events = "\n".join(f"| `{new}` | `{old}` | {model} |" for old, new, model, _ in EVENTS)
    parts.append(
        "## Webhooks\n\n"
        "Deliveries are `POST`s with a JSON body "
        '`{"id", "type", "created_at", "data": {"object": {...}}}` and the '
        "header `PP-Signature: t=<unix seconds>,v2=<hex>`, where the signature is "
        "HMAC-SHA512 over `<t>.<raw body>` with the endpoint's secret. Reject deliveries whose "
        "`t` is more than 5 minutes away from your clock. During the 30 days after an account "
        "switches to v2, deliveries also carry `v1=<hex>` (HMAC-SHA256) and v1 event names are "
        "sent as well.\n\n| v2 event | v1 event | Object |\n|---|---|---|\n" + events
    )
    return "\n\n".join(parts) + "\n"
