"""The billing repository the coding agents work on, assembled from the billing_* modules."""

from __future__ import annotations

from tests.example_traces.billing_docs import json_text, list_fixture, migration_doc, reference_doc
from tests.example_traces.billing_fixtures import LIST_FIXTURES, PROVIDER_FIXTURES
from tests.example_traces.billing_models import models_module
from tests.example_traces.billing_ops import OPS, ops_module
from tests.example_traces.billing_source import (
    CLIENT,
    CURRENCIES,
    RETRY,
    SETTINGS,
    currency_module,
    errors_module,
    init_module,
    support_module,
    webhooks_module,
)
from tests.example_traces.billing_tests import (
    CONFTEST,
    CURRENCY_TESTS,
    RETRY_TESTS,
    client_tests,
    model_tests,
    op_tests,
    public_api_tests,
    webhook_tests,
)
from tests.example_traces.repo import Repo


def billing_repo(*, pytest_version: str = "7.4.3") -> Repo:
    files = {
        "README.md": """# billing

The only code that talks to PayProvider. Other services import `billing` directly; see
`billing/__init__.py` for the public names and `tests/billing/test_public_api.py` for the
contract.

## Configuration

| Variable | Meaning |
|----------|---------|
| `PAYPROVIDER_API_KEY` | secret key (`sk_live_...` or `sk_test_...`) |
| `PAYPROVIDER_BASE_URL` | override for the sandbox |
| `PAYPROVIDER_WEBHOOK_SECRET` | signs inbound webhooks |
| `BILLING_DEFAULT_CURRENCY` | defaults to BRL |

## Development

    pip install -e '.[dev]'
    pytest
""",
        "CHANGELOG.md": """# Changelog

## 3.8.2 (2026-10-14)
- Retry 409 responses from the provider (idempotency races).

## 3.8.1 (2026-09-30)
- `list_invoices` walks every page instead of the first 100 invoices.

## 3.8.0 (2026-09-02)
- `send_invoice`.
- Card brand on `PaymentMethod`.
""",
        "pyproject.toml": """[project]
name = "billing"
version = "3.8.2"
requires-python = ">=3.11"
dependencies = ["httpx==0.24.1"]

[project.optional-dependencies]
dev = ["pytest==7.4.3", "pytest-cov==4.1.0", "anyio==3.7.1", "mypy==1.6.1", "ruff==0.1.5"]

[tool.pytest.ini_options]
testpaths = ["tests"]
""",
        "billing/__init__.py": init_module(),
        "billing/api.py": ops_module("api"),
        "billing/client.py": CLIENT,
        "billing/currency.py": currency_module(),
        "billing/errors.py": errors_module(),
        "billing/invoices.py": ops_module("invoices"),
        "billing/ledger.py": support_module(
            "ledger",
            (
                (
                    "record_payment",
                    "charge_id: str, amount: Decimal, currency: str",
                    "Book a captured payment.",
                ),
                (
                    "record_refund",
                    "charge_id: str, amount: Decimal, currency: str",
                    "Book a refund.",
                ),
                ("mark_invoice_paid", "invoice_id: str, total: Decimal", "Close an invoice."),
                ("void_invoice", "invoice_id: str", "Reverse an invoice's entries."),
            ),
        ),
        "billing/models.py": models_module(),
        "billing/notifications.py": support_module(
            "notifications",
            (
                ("payment_failed", "customer_id: str, code: str | None", "Tell the customer."),
                ("invoice_overdue", "customer_id: str, invoice_id: str", "Start dunning."),
                ("contact_changed", "customer_id: str, email: str", "Confirm the new address."),
                ("card_saved", "customer_id: str, last4: str", "Confirm the saved card."),
            ),
        ),
        "billing/refunds.py": ops_module("refunds"),
        "billing/retry.py": RETRY,
        "billing/settings.py": SETTINGS,
        "billing/webhooks.py": webhooks_module(),
        "docs/migration-v2.md": migration_doc(),
        "docs/public-api.md": """# The public API of billing

checkout, subscriptions and back-office import `billing` directly and deploy on their own
schedules. A renamed function, a new required parameter or a changed default breaks them at
import or call time, in production. So:

- names in `billing.__all__` and their signatures do not change without a coordinated release;
- new behaviour goes behind new optional keyword arguments or new functions;
- wire-format changes stay inside `billing.client` and `billing.models`.

`tests/billing/test_public_api.py` pins all of this.
""",
        "tests/__init__.py": "",
        "tests/billing/__init__.py": "",
        "tests/billing/conftest.py": CONFTEST,
        "tests/billing/test_api.py": op_tests("api"),
        "tests/billing/test_client.py": client_tests(),
        "tests/billing/test_currency.py": CURRENCY_TESTS,
        "tests/billing/test_invoices.py": op_tests("invoices"),
        "tests/billing/test_models.py": model_tests(),
        "tests/billing/test_public_api.py": public_api_tests(),
        "tests/billing/test_refunds.py": op_tests("refunds"),
        "tests/billing/test_retry.py": RETRY_TESTS,
        "tests/billing/test_webhooks.py": webhook_tests(),
    }
    for name, (v1, _) in PROVIDER_FIXTURES.items():
        files[f"tests/billing/fixtures/{name}.json"] = json_text(v1)
    for name, (_, v2) in PROVIDER_FIXTURES.items():
        files[f"tests/billing/fixtures/v2/{name}.json"] = json_text(v2)
    for name, model in LIST_FIXTURES.items():
        files[f"tests/billing/fixtures/{name}.json"] = json_text(list_fixture(model, "v1"))
        files[f"tests/billing/fixtures/v2/{name}.json"] = json_text(list_fixture(model, "v2"))
    files["docs/payprovider-v2-reference.md"] = reference_doc()
    repo = Repo(files, root="/home/dev/billing", pytest_version=pytest_version)
    repo.params[("tests/billing/test_public_api.py", "test_public_signatures_are_stable")] = sorted(
        op.name for op in OPS
    )
    codes = sorted(code for code, _, _ in CURRENCIES)
    for test in (
        "test_round_trip_keeps_the_amount",
        "test_to_minor_uses_the_currency_exponent",
        "test_format_money_starts_with_the_symbol",
    ):
        repo.params[("tests/billing/test_currency.py", test)] = codes
    return repo
