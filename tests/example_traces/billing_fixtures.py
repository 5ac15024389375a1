"""Canned PayProvider responses, v1 and v2, that the fake repository's tests replay."""

from __future__ import annotations

from typing import Any

_V1_CREATED = 1_793_000_000


_V2_CREATED = "2026-10-26T09:33:20+00:00"


_LINE_V1 = {"description": "Plano Pro", "quantity": 1, "unit_amount": 1990, "currency": "brl"}


LINE_V2 = {
    "description": "Plano Pro",
    "quantity": 1,
    "unit_price": {"value": 1990, "currency": "BRL"},
}


PROVIDER_FIXTURES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "charge": (
        {
            "id": "ch_456",
            "object": "charge",
            "customer": "cus_123",
            "amount": 1990,
            "currency": "brl",
            "status": "succeeded",
            "captured": True,
            "failure_code": None,
            "created": _V1_CREATED,
            "metadata": {"order": "A-1001"},
        },
        {
            "id": "ch_456",
            "object": "payment",
            "customer_id": "cus_123",
            "amount": {"value": 1990, "currency": "BRL"},
            "status": "succeeded",
            "capture_state": "captured",
            "failure": None,
            "created_at": _V2_CREATED,
            "metadata": {"order": "A-1001"},
        },
    ),
    "customer": (
        {
            "id": "cus_123",
            "object": "customer",
            "email": "ana@example.com",
            "name": "Ana Lima",
            "invoice_settings": {"default_payment_method": "pm_555"},
            "created": _V1_CREATED,
        },
        {
            "id": "cus_123",
            "object": "customer",
            "email": "ana@example.com",
            "name": "Ana Lima",
            "default_payment_method_id": "pm_555",
            "created_at": _V2_CREATED,
        },
    ),
    "payment_method": (
        {
            "id": "pm_555",
            "object": "payment_method",
            "customer": "cus_123",
            "card": {"brand": "visa", "last4": "4242", "exp_month": 8, "exp_year": 2029},
        },
        {
            "id": "pm_555",
            "object": "payment_method",
            "customer_id": "cus_123",
            "card": {"network": "visa", "last4": "4242", "expiry": {"month": 8, "year": 2029}},
        },
    ),
    "invoice_line": (_LINE_V1, LINE_V2),
    "invoice": (
        {
            "id": "in_789",
            "object": "invoice",
            "customer": "cus_123",
            "status": "open",
            "currency": "brl",
            "lines": {"object": "list", "data": [_LINE_V1], "has_more": False},
            "total": 1990,
            "due_date": "2026-12-01",
            "hosted_invoice_url": "https://pay.payprovider.example/i/in_789",
            "created": _V1_CREATED,
        },
        {
            "id": "in_789",
            "object": "invoice",
            "customer_id": "cus_123",
            "status": "open",
            "lines": [LINE_V2],
            "total": {"value": 1990, "currency": "BRL"},
            "due_on": "2026-12-01",
            "hosted_url": "https://pay.payprovider.example/i/in_789",
            "created_at": _V2_CREATED,
        },
    ),
    "refund": (
        {
            "id": "re_321",
            "object": "refund",
            "charge": "ch_456",
            "amount": 1990,
            "currency": "brl",
            "status": "succeeded",
            "reason": "requested_by_customer",
            "created": _V1_CREATED,
        },
        {
            "id": "re_321",
            "object": "refund",
            "payment_id": "ch_456",
            "amount": {"value": 1990, "currency": "BRL"},
            "status": "succeeded",
            "reason": "requested_by_customer",
            "created_at": _V2_CREATED,
        },
    ),
}


LIST_FIXTURES = {
    "charge_list": "charge",
    "customer_list": "customer",
    "payment_method_list": "payment_method",
    "invoice_list": "invoice",
    "refund_list": "refund",
}
