"""The billing package's public functions (api.py, invoices.py, refunds.py) and their source."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tests.example_traces.billing_fixtures import PROVIDER_FIXTURES
from tests.example_traces.billing_models import MODELS, snake_case


@dataclass(frozen=True)
class _Param:
    name: str
    annotation: str
    default: str | None = None


@dataclass(frozen=True)
class Op:
    module: str
    name: str
    kind: str  # create, action, get or list
    path: str
    model: str
    params: tuple[_Param, ...]
    summary: str


_CUSTOMER = _Param("customer_id", "str")


_LIMIT = _Param("limit", "int", "100")


_METADATA = _Param("metadata", "Mapping[str, str] | None", "None")


_DESCRIPTION = _Param("description", "str | None", "None")


_CURRENCY = _Param("currency", "str", '"BRL"')


_CHARGE = _Param("charge_id", "str")


_INVOICE = _Param("invoice_id", "str")


_REFUND = _Param("refund_id", "str")


OPS = (
    Op(
        "api",
        "charge",
        "create",
        "charges",
        "Charge",
        (_CUSTOMER, _Param("amount", "Decimal"), _CURRENCY, _DESCRIPTION, _METADATA),
        "Charge a customer's default payment method.",
    ),
    Op(
        "api",
        "capture_charge",
        "action",
        "charges/{charge_id}/capture",
        "Charge",
        (_CHARGE, _Param("amount", "Decimal | None", "None")),
        "Capture an authorised charge, in full or in part.",
    ),
    Op(
        "api",
        "cancel_charge",
        "action",
        "charges/{charge_id}/cancel",
        "Charge",
        (_CHARGE, _Param("reason", "str | None", "None")),
        "Cancel an authorised charge that was never captured.",
    ),
    Op("api", "get_charge", "get", "charges/{charge_id}", "Charge", (_CHARGE,), "Fetch a charge."),
    Op(
        "api",
        "list_charges",
        "list",
        "charges",
        "Charge",
        (_CUSTOMER, _Param("status", "str | None", "None"), _LIMIT),
        "List a customer's charges, newest first.",
    ),
    Op(
        "api",
        "search_charges",
        "list",
        "charges/search",
        "Charge",
        (_Param("query", "str"), _LIMIT),
        "Search charges with the provider's query language, e.g. ``status:'failed'``.",
    ),
    Op(
        "api",
        "create_customer",
        "create",
        "customers",
        "Customer",
        (_Param("email", "str"), _Param("name", "str"), _METADATA),
        "Create a customer at the provider.",
    ),
    Op(
        "api",
        "update_customer",
        "action",
        "customers/{customer_id}",
        "Customer",
        (_CUSTOMER, _Param("email", "str | None", "None"), _Param("name", "str | None", "None")),
        "Update a customer's contact details.",
    ),
    Op(
        "api",
        "get_customer",
        "get",
        "customers/{customer_id}",
        "Customer",
        (_CUSTOMER,),
        "Fetch a customer.",
    ),
    Op(
        "api",
        "list_customers",
        "list",
        "customers",
        "Customer",
        (_Param("email", "str | None", "None"), _LIMIT),
        "List customers, optionally only those with an e-mail address.",
    ),
    Op(
        "api",
        "archive_customer",
        "action",
        "customers/{customer_id}/archive",
        "Customer",
        (_CUSTOMER,),
        "Archive a customer: no new charges, history kept.",
    ),
    Op(
        "api",
        "attach_payment_method",
        "action",
        "customers/{customer_id}/payment_methods",
        "PaymentMethod",
        (_CUSTOMER, _Param("payment_method_id", "str"), _Param("make_default", "bool", "True")),
        "Attach a tokenised payment method to a customer.",
    ),
    Op(
        "api",
        "detach_payment_method",
        "action",
        "customers/{customer_id}/payment_methods/{payment_method_id}/detach",
        "PaymentMethod",
        (_CUSTOMER, _Param("payment_method_id", "str")),
        "Detach a saved payment method from a customer.",
    ),
    Op(
        "api",
        "list_payment_methods",
        "list",
        "customers/{customer_id}/payment_methods",
        "PaymentMethod",
        (_CUSTOMER, _LIMIT),
        "List a customer's saved payment methods.",
    ),
    Op(
        "invoices",
        "create_invoice",
        "create",
        "invoices",
        "Invoice",
        (
            _CUSTOMER,
            _Param("lines", "Sequence[InvoiceLine]"),
            _Param("due_date", "date"),
            _CURRENCY,
            _DESCRIPTION,
        ),
        "Create a draft invoice.",
    ),
    Op(
        "invoices",
        "get_invoice",
        "get",
        "invoices/{invoice_id}",
        "Invoice",
        (_INVOICE,),
        "Fetch an invoice.",
    ),
    Op(
        "invoices",
        "list_invoices",
        "list",
        "invoices",
        "Invoice",
        (_CUSTOMER, _Param("status", "str | None", "None"), _LIMIT),
        "List a customer's invoices, newest first.",
    ),
    Op(
        "invoices",
        "finalize_invoice",
        "action",
        "invoices/{invoice_id}/finalize",
        "Invoice",
        (_INVOICE,),
        "Finalize a draft invoice so it can be paid.",
    ),
    Op(
        "invoices",
        "void_invoice",
        "action",
        "invoices/{invoice_id}/void",
        "Invoice",
        (_INVOICE, _Param("reason", "str | None", "None")),
        "Void an open invoice.",
    ),
    Op(
        "invoices",
        "pay_invoice",
        "action",
        "invoices/{invoice_id}/pay",
        "Invoice",
        (_INVOICE, _Param("payment_method_id", "str | None", "None")),
        "Pay an open invoice now instead of waiting for the automatic attempt.",
    ),
    Op(
        "invoices",
        "mark_invoice_uncollectible",
        "action",
        "invoices/{invoice_id}/mark_uncollectible",
        "Invoice",
        (_INVOICE,),
        "Give up on an invoice; it stays on record for accounting.",
    ),
    Op(
        "invoices",
        "send_invoice",
        "action",
        "invoices/{invoice_id}/send",
        "Invoice",
        (_INVOICE,),
        "E-mail the hosted invoice page to the customer.",
    ),
    Op(
        "refunds",
        "refund",
        "create",
        "refunds",
        "Refund",
        (
            _CHARGE,
            _Param("amount", "Decimal | None", "None"),
            _Param("reason", "str | None", "None"),
        ),
        "Refund a charge, in full or in part.",
    ),
    Op(
        "refunds",
        "get_refund",
        "get",
        "refunds/{refund_id}",
        "Refund",
        (_REFUND,),
        "Fetch a refund.",
    ),
    Op(
        "refunds",
        "list_refunds",
        "list",
        "refunds",
        "Refund",
        (_CHARGE, _LIMIT),
        "List the refunds of a charge.",
    ),
    Op(
        "refunds",
        "cancel_refund",
        "action",
        "refunds/{refund_id}/cancel",
        "Refund",
        (_REFUND,),
        "Cancel a refund that is still pending.",
    ),
)


PARAM_DOCS = {
    "customer_id": "Provider id of the customer (``cus_...``).",
    "amount": 'Amount in major units, e.g. ``Decimal("19.90")``.',
    "currency": "ISO 4217 code of ``amount``.",
    "description": "Shown on the customer's statement and in the provider dashboard.",
    "metadata": "Up to 20 string pairs stored with the object; never put personal data here.",
    "charge_id": "Provider id of the charge (``ch_...``).",
    "invoice_id": "Provider id of the invoice (``in_...``).",
    "refund_id": "Provider id of the refund (``re_...``).",
    "status": "Only objects in this status; all statuses when ``None``.",
    "limit": "Page size used while walking the list (the provider caps it at 100).",
    "email": "Where the provider sends receipts.",
    "name": "Full name as printed on invoices.",
    "payment_method_id": "A tokenised method from the checkout widget (``pm_...``).",
    "make_default": "Also make it the default for future charges and invoices.",
    "lines": "Invoice lines; at least one.",
    "due_date": "Last day to pay before the invoice becomes overdue.",
    "reason": "Free text kept for the audit trail.",
    "query": "A provider search query, e.g. ``customer:'cus_123' AND status:'failed'``.",
    "idempotency_key": "Reuse it on retries so the provider applies the request once.",
}


_V1_KEYS = {
    "customer_id": "customer",
    "charge_id": "charge",
    "payment_method_id": "payment_method",
    "make_default": "default",
}


SAMPLE_ARGS = {
    "customer_id": '"cus_123"',
    "amount": 'Decimal("19.90")',
    "charge_id": '"ch_456"',
    "invoice_id": '"in_789"',
    "refund_id": '"re_321"',
    "email": '"ana@example.com"',
    "name": '"Ana Lima"',
    "payment_method_id": '"pm_555"',
    "lines": '[InvoiceLine("Plano Pro", 1, Decimal("99.00"))]',
    "due_date": "date(2026, 12, 1)",
    "query": "\"status:'failed'\"",
}


_MODULE_DOCS = {
    "api": "Charges, customers and payment methods: the calls checkout and back-office use.",
    "invoices": "Invoices: draft, finalize, send, void.",
    "refunds": "Refunds of captured charges.",
}


_EXAMPLE_VALUES = {
    "customer_id": "'cus_123'",
    "charge_id": "'ch_456'",
    "amount": "Decimal('19.90')",
    "email": "'ana@example.com'",
    "name": "'Ana Lima'",
    "brand": "'visa'",
    "status": "'open'",
}


def _payload_value(param: _Param, op: Op) -> str:
    names = {p.name for p in op.params}
    if param.name == "amount":
        return "_to_minor(amount, currency)" if "currency" in names else "_to_minor(amount)"
    return {
        "currency": "currency.lower()",
        "lines": "[line.to_v1() for line in lines]",
        "due_date": "due_date.isoformat()",
        "metadata": "dict(metadata)",
    }.get(param.name, param.name)


def _render_op(op: Op) -> str:
    path_params = set(re.findall(r"{(\w+)}", op.path))
    posts = op.kind in ("create", "action")
    url = f'f"/v1/{op.path}"' if path_params else f'"/v1/{op.path}"'
    lines = [f"def {op.name}("]
    for p in op.params:
        lines.append(
            f"    {p.name}: {p.annotation}" + (f" = {p.default}" if p.default else "") + ","
        )
    if posts:
        lines += ["    *,", "    idempotency_key: str | None = None,"]
    returns = f"list[{op.model}]" if op.kind == "list" else op.model
    lines += [f") -> {returns}:", f'    """{op.summary}', "", "    Args:"]
    for p in op.params:
        full = " ``None`` means the full amount." if p.name == "amount" and p.default else ""
        lines.append(f"        {p.name}: {PARAM_DOCS[p.name]}{full}")
    if posts:
        lines.append(f"        idempotency_key: {PARAM_DOCS['idempotency_key']}")
    verb = "POST" if posts else "GET"
    example_args = ", ".join(SAMPLE_ARGS[p.name] for p in op.params if p.default is None)
    object_id = PROVIDER_FIXTURES[snake_case(op.model)][0]["id"]
    shown = ", ".join(
        f"{f.name}={_EXAMPLE_VALUES.get(f.name, repr(object_id))}" for f in MODELS[op.model][1][:3]
    )
    result = (
        f"[{op.model}({shown}, ...), ...]" if op.kind == "list" else f"{op.model}({shown}, ...)"
    )
    lines += [
        "",
        "    Raises:",
        "        BillingError: when the provider rejects the request.",
        "",
        f"    Provider call: ``{verb} /v1/{op.path}``.",
        "",
        "    Example:",
        f"        >>> {op.name}({example_args})",
        f"        {result}",
        '    """',
    ]
    body = [p for p in op.params if p.name not in path_params]
    if posts:
        required = [p for p in body if p.default != "None"]
        optional = [p for p in body if p.default == "None"]
        if required:
            lines.append("    payload: dict[str, Any] = {")
            for p in required:
                lines.append(f'        "{_V1_KEYS.get(p.name, p.name)}": {_payload_value(p, op)},')
            lines.append("    }")
        else:
            lines.append("    payload: dict[str, Any] = {}")
        for p in optional:
            lines += [
                f"    if {p.name} is not None:",
                f'        payload["{_V1_KEYS.get(p.name, p.name)}"] = {_payload_value(p, op)}',
            ]
        lines += [
            "    data = _client().post(",
            f"        {url},",
            "        json=payload,",
            "        idempotency_key=idempotency_key,",
            "    )",
            f"    return {op.model}.from_v1(data)",
        ]
    elif op.kind == "get":
        lines += [f"    data = _client().get({url})", f"    return {op.model}.from_v1(data)"]
    else:
        lines.append('    params: dict[str, Any] = {"limit": min(limit, 100)}')
        for p in body:
            if p.name == "limit":
                continue
            key = _V1_KEYS.get(p.name, p.name)
            if p.default == "None":
                lines += [f"    if {p.name} is not None:", f'        params["{key}"] = {p.name}']
            else:
                lines.append(f'    params["{key}"] = {p.name}')
        lines += [
            f"    items: list[{op.model}] = []",
            "    while True:",
            f"        page = _client().get({url}, params=params)",
            f'        items.extend({op.model}.from_v1(row) for row in page["data"])',
            '        if not page.get("has_more"):',
            "            return items",
            '        params["starting_after"] = page["data"][-1]["id"]',
        ]
    return "\n".join(lines)


def ops_module(module: str) -> str:
    ops = [op for op in OPS if op.module == module]
    models = sorted({op.model for op in ops} | ({"InvoiceLine"} if module == "invoices" else set()))
    exports = "\n".join(f'    "{op.name}",' for op in ops)
    head = f'''"""{_MODULE_DOCS[module]}"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

from billing.client import PaymentClient, default_client
from billing.currency import to_minor as _to_minor
from billing.models import {", ".join(models)}

__all__ = [
{exports}
]


def _client() -> PaymentClient:
    return default_client()
'''
    return head + "\n\n" + "\n\n\n".join(_render_op(op) for op in ops) + "\n"
