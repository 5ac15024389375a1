"""The billing models (dataclasses parsing PayProvider JSON, v1 and v2) and their source."""

from __future__ import annotations

import re
from dataclasses import dataclass


def snake_case(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


@dataclass(frozen=True)
class _Field:
    name: str
    annotation: str
    v1: str
    v2: str


_CREATED = _Field(
    "created_at",
    "datetime",
    'datetime.fromtimestamp(data["created"], tz=UTC)',
    'datetime.fromisoformat(data["created_at"])',
)


MODELS: dict[str, tuple[str, tuple[_Field, ...]]] = {
    "Charge": (
        'A card charge, with amounts in major units (``Decimal("19.90")``).',
        (
            _Field("id", "str", 'data["id"]', 'data["id"]'),
            _Field("customer_id", "str", 'data["customer"]', 'data["customer_id"]'),
            _Field(
                "amount",
                "Decimal",
                '_from_minor(data["amount"], data["currency"])',
                '_from_minor(data["amount"]["value"], data["amount"]["currency"])',
            ),
            _Field("currency", "str", 'data["currency"].upper()', 'data["amount"]["currency"]'),
            _Field("status", "str", 'data["status"]', 'data["status"]'),
            _Field("captured", "bool", 'data["captured"]', 'data["capture_state"] == "captured"'),
            _Field(
                "failure_code",
                "str | None",
                'data.get("failure_code")',
                '(data.get("failure") or {}).get("code")',
            ),
            _CREATED,
            _Field(
                "metadata",
                "Mapping[str, str]",
                'dict(data.get("metadata") or {})',
                'dict(data.get("metadata") or {})',
            ),
        ),
    ),
    "Customer": (
        "A customer at the provider; ``id`` is what every other call takes.",
        (
            _Field("id", "str", 'data["id"]', 'data["id"]'),
            _Field("email", "str", 'data["email"]', 'data["email"]'),
            _Field("name", "str", 'data["name"]', 'data["name"]'),
            _Field(
                "default_payment_method",
                "str | None",
                '(data.get("invoice_settings") or {}).get("default_payment_method")',
                'data.get("default_payment_method_id")',
            ),
            _CREATED,
        ),
    ),
    "PaymentMethod": (
        "A saved card. Only the brand, the last four digits and the expiry ever reach us.",
        (
            _Field("id", "str", 'data["id"]', 'data["id"]'),
            _Field("customer_id", "str", 'data["customer"]', 'data["customer_id"]'),
            _Field("brand", "str", 'data["card"]["brand"]', 'data["card"]["network"]'),
            _Field("last4", "str", 'data["card"]["last4"]', 'data["card"]["last4"]'),
            _Field(
                "exp_month", "int", 'data["card"]["exp_month"]', 'data["card"]["expiry"]["month"]'
            ),
            _Field("exp_year", "int", 'data["card"]["exp_year"]', 'data["card"]["expiry"]["year"]'),
        ),
    ),
    "InvoiceLine": (
        "One line of an invoice.",
        (
            _Field("description", "str", 'data["description"]', 'data["description"]'),
            _Field("quantity", "int", 'data["quantity"]', 'data["quantity"]'),
            _Field(
                "unit_amount",
                "Decimal",
                '_from_minor(data["unit_amount"], data["currency"])',
                '_from_minor(data["unit_price"]["value"], data["unit_price"]["currency"])',
            ),
        ),
    ),
    "Invoice": (
        "An invoice and its lines; ``total`` is what the customer owes.",
        (
            _Field("id", "str", 'data["id"]', 'data["id"]'),
            _Field("customer_id", "str", 'data["customer"]', 'data["customer_id"]'),
            _Field("status", "str", 'data["status"]', 'data["status"]'),
            _Field("currency", "str", 'data["currency"].upper()', 'data["total"]["currency"]'),
            _Field(
                "lines",
                "tuple[InvoiceLine, ...]",
                'tuple(InvoiceLine.from_v1(row) for row in data["lines"]["data"])',
                'tuple(InvoiceLine.from_v2(row) for row in data["lines"])',
            ),
            _Field(
                "total",
                "Decimal",
                '_from_minor(data["total"], data["currency"])',
                '_from_minor(data["total"]["value"], data["total"]["currency"])',
            ),
            _Field(
                "due_date",
                "date | None",
                'date.fromisoformat(data["due_date"]) if data.get("due_date") else None',
                'date.fromisoformat(data["due_on"]) if data.get("due_on") else None',
            ),
            _Field(
                "hosted_url",
                "str | None",
                'data.get("hosted_invoice_url")',
                'data.get("hosted_url")',
            ),
            _CREATED,
        ),
    ),
    "Refund": (
        "A refund of a charge; ``status`` moves pending -> succeeded or failed.",
        (
            _Field("id", "str", 'data["id"]', 'data["id"]'),
            _Field("charge_id", "str", 'data["charge"]', 'data["payment_id"]'),
            _Field(
                "amount",
                "Decimal",
                '_from_minor(data["amount"], data["currency"])',
                '_from_minor(data["amount"]["value"], data["amount"]["currency"])',
            ),
            _Field("currency", "str", 'data["currency"].upper()', 'data["amount"]["currency"]'),
            _Field("status", "str", 'data["status"]', 'data["status"]'),
            _Field("reason", "str | None", 'data.get("reason")', 'data.get("reason")'),
            _CREATED,
        ),
    ),
}


_FIELD_DOCS = {
    "id": "Provider id; stable across API versions.",
    "customer_id": "Provider id of the customer it belongs to.",
    "amount": 'Major units, e.g. ``Decimal("19.90")``.',
    "currency": "ISO 4217 code, upper case.",
    "status": "Provider status, passed through unchanged.",
    "captured": "False while only authorised.",
    "failure_code": "Issuer or provider reason when the charge failed.",
    "created_at": "When the provider created it, timezone-aware (UTC).",
    "metadata": "String pairs we attached; never personal data.",
    "email": "Where receipts go.",
    "name": "As printed on invoices.",
    "default_payment_method": "Used when a charge names no method.",
    "brand": "Card network: visa, mastercard, elo, amex, hipercard.",
    "last4": "Last four digits, for display only.",
    "exp_month": "1 to 12.",
    "exp_year": "Four digits.",
    "description": "Free text shown to the customer.",
    "quantity": "Units of ``unit_amount``.",
    "unit_amount": "Price of one unit, major units.",
    "lines": "In the order the provider returned them.",
    "total": "Sum of the lines after discounts and taxes.",
    "due_date": "None for invoices charged automatically.",
    "hosted_url": "Public payment page; None until finalized.",
    "charge_id": "The charge this refund returns money from.",
    "reason": "requested_by_customer, duplicate, fraudulent or free text.",
}


def from_method(model: str, version: str) -> str:
    fields = MODELS[model][1]
    lines = [
        "    @classmethod",
        f"    def from_{version}(cls, data: Mapping[str, Any]) -> {model}:",
        f'        """Build from an API {version} ``{snake_case(model)}`` object."""',
        "        return cls(",
    ]
    for f in fields:
        lines.append(f"            {f.name}={f.v1 if version == 'v1' else f.v2},")
    lines.append("        )")
    return "\n".join(lines)


def models_module() -> str:
    parts = [
        '''"""What the rest of the codebase sees of PayProvider objects.

Amounts are ``Decimal`` in major units everywhere outside this module; the provider speaks
integer minor units. Every class parses the provider's JSON in one classmethod per API version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from billing.currency import from_minor as _from_minor
from billing.currency import to_minor
'''
    ]
    for model, (doc, fields) in MODELS.items():
        attributes = [f"        {f.name}: {_FIELD_DOCS.get(f.name, f.name)}" for f in fields]
        lines = [
            "@dataclass(frozen=True)",
            f"class {model}:",
            f'    """{doc}',
            "",
            "    Attributes:",
            *attributes,
            '    """',
            "",
        ]
        lines += [f"    {f.name}: {f.annotation}" for f in fields]
        lines += ["", from_method(model, "v1")]
        if model == "InvoiceLine":
            lines += [
                "",
                "    def to_v1(self) -> dict[str, Any]:",
                "        return {",
                '            "description": self.description,',
                '            "quantity": self.quantity,',
                '            "unit_amount": to_minor(self.unit_amount),',
                "        }",
            ]
        parts.append("\n".join(lines))
    return "\n\n".join(parts[:1]) + "\n\n" + "\n\n\n".join(parts[1:]) + "\n"
