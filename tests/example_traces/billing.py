"""Session 1: a long coding session with one compaction that keeps the turn-3 constraint."""

from __future__ import annotations

import random

from sessions.example_data import ExampleSession
from tests.example_traces.billing_models import MODELS, from_method
from tests.example_traces.billing_ops import OPS
from tests.example_traces.billing_repo import billing_repo
from tests.example_traces.billing_source import EVENTS, handler_name, op_signature
from tests.example_traces.billing_story import (
    BILLING_CONSTRAINT,
    BILLING_GOAL,
    billing_summary,
    path_failure,
    v1_parse_failures,
    webhook_warnings,
)
from tests.example_traces.repo import Failure
from tests.example_traces.trace import SEED, Call, Progress, Trace


def billing_migration(tool_ids: set[str]) -> ExampleSession:
    external_id = "example-billing-migration"
    rng = random.Random(f"{SEED}:{external_id}")
    repo = billing_repo()
    t = Trace(
        external_id=external_id,
        rng=rng,
        tool_ids=tool_ids,
        session={
            "agent": "billing-migrator",
            "model": "claude-opus-4-6",
            "context_window": 200_000,
            "started_at": "2026-11-02T10:00:00Z",
            "metadata": {"repository": "acme/billing", "git_branch": "billing-api-v2"},
        },
        system_tokens=4_000,
    )
    progress = Progress()
    constraint_seq = -1

    def compact_when_full(trace: Trace) -> None:
        if trace.compactions or trace.context < 150_000:
            return
        summary = billing_summary(progress, repo, constraint_seq)
        keep = trace.keep_from(summary, target_after=35_000, after_seq=constraint_seq)
        trace.summarize(summary=summary, keep_from=keep, duration_ms=rng.randint(7_000, 12_000))

    t.policy = compact_when_full
    api_ops = [op for op in OPS if op.module == "api"]

    # Turn 1: the goal.
    t.prompt(BILLING_GOAL, wait=0)
    progress.current = "Reading the package and the provider's v2 migration notes."
    progress.next_steps = [
        "Client: v2 version header, PP-Idempotency-Key, v2 error shape.",
        "Models: from_v2 parsers next to from_v1.",
        "api.py, invoices.py, refunds.py: v2 paths and payloads.",
        "Webhooks: payment.* events, PP-Signature (HMAC-SHA512).",
        "Retry on RateLimit-Reset; cursor pagination; upper-case currencies.",
        "README and CHANGELOG; full verbose test run.",
    ]
    t.step(repo.ls("."), text="I'll start with the layout of the repository.")
    t.step(
        repo.read("docs/api-v2.md", fails=True),
        text="There should be migration notes from the provider somewhere in docs/.",
    )
    t.step(repo.ls("docs"))
    t.step(repo.read("docs/migration-v2.md"), text="The notes are in `docs/migration-v2.md`.")
    t.step(
        repo.read("docs/payprovider-v2-reference.md"),
        text="And the vendored v2 reference, for the exact request and response shapes.",
    )
    t.step(
        repo.read("billing/__init__.py"),
        repo.read("billing/api.py"),
        text="Now the public surface and the module most callers use.",
    )
    t.step(
        repo.read("billing/client.py"),
        thinking=(
            "Every public function builds a payload and calls _client().post/get with a /v1/ "
            "path, then parses with Model.from_v1. So the version lives in three places: the "
            "paths in api/invoices/refunds, the headers and error parsing in client.py, and the "
            "JSON shapes in models.py. If the translation stays in client and models, the "
            "public functions keep their signatures. Let me read client.py and models.py."
        ),
        text="All HTTP goes through `billing/client.py`.",
    )
    t.step(repo.read("billing/models.py"))
    t.step(
        repo.read("billing/webhooks.py"),
        repo.read("billing/retry.py"),
        repo.read("billing/errors.py"),
        text="Webhooks, retries and errors also depend on the wire format.",
    )
    t.step(repo.grep("/v1/", "billing"), text="Where are v1 paths hard-coded?")
    t.reply(
        "Here's what v2 changes for us, from `docs/migration-v2.md`:\n\n"
        "- paths move to `/v2/`, and charges become payments;\n"
        "- amounts become `{value, currency}` objects, currency codes go upper case;\n"
        "- new version and idempotency headers, a new error shape, cursor pagination and "
        "`RateLimit-Reset`;\n"
        "- webhooks: `payment.*` events and an HMAC-SHA512 `PP-Signature`.\n\n"
        f"All {len(OPS)} public functions go through `billing/client.py`, and the JSON is "
        "parsed in "
        "`billing/models.py`. My plan:\n\n"
        "1. client: headers, idempotency, error shape;\n"
        "2. models: `from_v2` parsers next to `from_v1`;\n"
        "3. api.py, invoices.py, refunds.py: paths and payloads;\n"
        "4. webhooks;\n5. retry and pagination;\n6. docs and changelog.\n\n"
        "I'll run the relevant tests after each step. Shall I take a baseline first?"
    )
    progress.done.append(
        f"Read docs/migration-v2.md and mapped every v1 call: {len(OPS)} public functions in "
        "api.py, "
        "invoices.py and refunds.py, all through billing/client.py, parsed in billing/models.py."
    )

    # Turn 2: baseline.
    t.prompt("Sounds right. Before you edit anything, run the test suite so we have a baseline.")
    warnings, count = webhook_warnings(repo)
    t.step(
        repo.pytest(
            "tests",
            verbose=True,
            warnings=warnings,
            warning_count=count,
            coverage=True,
            seconds=4.12,
        ),
        text="Running the whole suite, verbose.",
    )
    t.reply(
        f"Baseline: all {len(repo.collect('tests'))} tests pass in 4.1s. The {count} warnings "
        "are one deprecation (`datetime.utcfromtimestamp()` in `billing/webhooks.py`); I'll fix "
        "it when I get to webhooks."
    )
    progress.done.append("Baseline: the whole suite passed before any edit.")

    # Turn 3: the constraint.
    constraint_seq = t.prompt(
        f"Good. One rule for the whole task: {BILLING_CONSTRAINT} checkout, subscriptions and "
        "back-office import it directly, and we can't coordinate a release with three teams "
        "this quarter."
    )
    t.probe(constraint_seq, BILLING_CONSTRAINT.rstrip("."), "no public signature changed")
    t.step(
        repo.read("tests/billing/test_public_api.py"),
        repo.read("docs/public-api.md"),
        thinking=(
            f"The public API is billing.__all__: {len(OPS)} functions, the models and the "
            "errors. The "
            "contract test compares str(inspect.signature(...)) for each function, so even a "
            "new optional parameter or a changed default fails it. v2 differences must be "
            "absorbed below the public functions."
        ),
        text="Let me see exactly what is pinned.",
    )
    t.step(
        repo.read("billing/invoices.py"),
        repo.read("billing/refunds.py"),
        text="And the other two modules that export public functions.",
    )
    t.step(
        repo.grep(r"def test_", "tests"),
        text="Which public functions do the tests exercise, and how?",
    )
    t.step(
        repo.read("tests/billing/test_api.py"),
        repo.read("tests/billing/conftest.py"),
        text="The module tests drive a fake provider; here is how.",
    )
    t.reply(
        "Understood: no changes to the names in `billing.__all__`, their signatures or their "
        "defaults. `tests/billing/test_public_api.py` pins the export list and all "
        f"{len(OPS)} "
        "signatures, so I'll run it after every module. Everything v2-specific stays inside "
        "`billing.client` and `billing.models`; the public functions translate at the edge."
    )
    progress.decisions.append(
        "Keep every public name and signature; translate v2 shapes inside the public functions, "
        "billing.client and billing.models."
    )

    # Turn 4: the client.
    t.prompt("Go ahead, start with the HTTP client.")
    progress.current = "Moving billing/client.py to v2 headers and errors."
    currency_line = 'DEFAULT_CURRENCY = os.environ.get("BILLING_DEFAULT_CURRENCY", "BRL")\n'
    api_flag = 'PAYPROVIDER_API = os.environ.get("PAYPROVIDER_API", "v2")\n'
    t.step(
        repo.edit("billing/settings.py", currency_line, currency_line + api_flag, fails=True),
        text="First a setting for the API version, so an environment can flip back.",
    )
    t.step(repo.read("billing/settings.py"), text="I have to read it first.")
    t.step(repo.edit("billing/settings.py", currency_line, currency_line + api_flag))
    t.step(
        repo.edit(
            "billing/client.py",
            'API_VERSION = "2023-10-16"\nVERSION_HEADER = "Payprovider-Version"',
            'API_VERSION = "2026-09-01"\nVERSION_HEADER = "PP-Api-Version"',
        ),
        text="Version header next.",
    )
    t.step(
        repo.edit(
            "billing/client.py",
            'headers={"Idempotency-Key": key}',
            'headers={"PP-Idempotency-Key": key}',
        )
    )
    t.step(
        repo.edit(
            "billing/client.py",
            '    try:\n        body = response.json()["error"]\n'
            "    except (ValueError, KeyError, TypeError):\n"
            '        body = {"type": "api_error", "message": response.text[:200]}\n',
            "    try:\n        payload = response.json()\n"
            "        # v2 sends a list of errors; v1 bodies still arrive while both APIs are "
            "live.\n"
            '        body = payload["errors"][0] if "errors" in payload else payload["error"]\n'
            "    except (ValueError, KeyError, IndexError, TypeError):\n"
            '        body = {"type": "api_error", "detail": response.text[:200]}\n',
        ),
        thinking=(
            'The v2 error body is {"errors": [{"type", "detail", "code"}]}; '
            '_error_from_response reads response.json()["error"] and .get("message"). '
            "PAYPROVIDER_API can flip an environment back to v1, and the provider answers some "
            "endpoints in the v1 shape until the account switches, so the parser should accept "
            "both. Take the first entry of the list: the reference says it is the primary "
            "cause. The type names did not change in v2 (card_error, invalid_request_error, "
            "idempotency_error, rate_limit_error, authentication_error, api_error), so "
            "_ERROR_TYPES can stay as it is, and callers keep catching the same exceptions."
        ),
        text="v2 returns a list of errors. Both shapes can arrive during the rollout, so the "
        "parser accepts both.",
    )
    t.step(
        repo.edit(
            "billing/client.py",
            '        body.get("message", "unknown error"),',
            '        body.get("detail") or body.get("message") or "unknown error",',
        )
    )
    key_errors = [
        ("test_request_sends_api_version_header", "payprovider-version"),
        ("test_post_sends_idempotency_key", "idempotency-key"),
        ("test_post_reuses_given_idempotency_key", "idempotency-key"),
    ]
    t.step(
        repo.pytest(
            "tests/billing/test_client.py",
            failures=[
                Failure(
                    f"tests/billing/test_client.py::{name}",
                    (f"'{header}'",),
                    marker=f'headers["{header}"]',
                    exception="KeyError",
                )
                for name, header in key_errors
            ],
            seconds=0.61,
        ),
        text="Running the client tests.",
    )
    t.step(
        repo.read("tests/billing/test_client.py"),
        text="Three failures, all tests that assert the old header names.",
    )
    t.step(
        repo.edit(
            "tests/billing/test_client.py",
            '["payprovider-version"] == "2023-10-16"',
            '["pp-api-version"] == "2026-09-01"',
        )
    )
    t.step(
        repo.edit(
            "tests/billing/test_client.py",
            '"idempotency-key"',
            '"pp-idempotency-key"',
            replace_all=True,
        )
    )
    t.step(repo.pytest("tests/billing/test_client.py", seconds=0.58))
    keyed = [op for op in OPS if op.kind in ("create", "action")]
    t.step(
        repo.pytest(
            "tests",
            failures=[
                Failure(
                    f"tests/billing/test_{op.module}.py::test_{op.name}_sends_idempotency_key",
                    ("'idempotency-key'",),
                    marker='headers["idempotency-key"]',
                    exception="KeyError",
                )
                for op in keyed
            ],
            verbose=True,
            seconds=4.48,
        ),
        text="Client tests pass. Now the whole suite, including the contract test.",
    )
    t.step(
        repo.read("tests/billing/test_api.py"),
        repo.read("tests/billing/test_invoices.py"),
        repo.read("tests/billing/test_refunds.py"),
        thinking=(
            f"{len(keyed)} failures, all KeyError: 'idempotency-key', one per POST function in "
            "test_api, test_invoices and test_refunds. They assert the header the client sends, "
            "which is wire format. The public functions still take idempotency_key with the "
            "same name and default, so the contract is untouched: test_public_api passed in "
            "this run. The fix is in the three test files, not in the functions. A replace_all "
            "on '[\"idempotency-key\"]' is safe if it only appears in those assertions; "
            "reading the files to be sure."
        ),
        text=f"{len(keyed)} tests in the module suites assert the old idempotency header too.",
    )
    for module in ("api", "invoices", "refunds"):
        t.step(
            repo.edit(
                f"tests/billing/test_{module}.py",
                '["idempotency-key"]',
                '["pp-idempotency-key"]',
                replace_all=True,
            )
        )
    t.step(
        repo.pytest("tests", verbose=True, coverage=True, seconds=4.37),
        text="And again, verbose.",
    )
    t.step(repo.read("billing/client.py"), text="Reviewing the whole client after the edits.")
    t.reply(
        "The client speaks v2: `PP-Api-Version: 2026-09-01`, `PP-Idempotency-Key`, and an error "
        "parser that accepts both the v2 list and the v1 object. I added `PAYPROVIDER_API` to "
        "settings (default `v2`). Client tests and the public-API contract test pass."
    )
    progress.done.append(
        "billing/client.py on v2: PP-Api-Version 2026-09-01, PP-Idempotency-Key, error parser "
        "accepting both shapes. test_client and test_public_api pass."
    )
    progress.decisions.append("The error parser accepts v1 and v2 bodies while both APIs are live.")
    progress.next_steps.pop(0)

    # Turn 5: models and fixtures.
    t.prompt("Continue with the models.")
    progress.current = "Adding from_v2 parsers to billing/models.py and moving fixtures to v2."
    t.step(
        repo.read("billing/models.py"),
        text="Re-reading models.py against the v2 reference before adding parsers.",
    )
    for model in MODELS:
        header = f"    @classmethod\n    def from_v1(cls, data: Mapping[str, Any]) -> {model}:"
        added = from_method(model, "v2") + "\n\n"
        if model == "InvoiceLine":
            added += (
                "    def to_v2(self, currency: str) -> dict[str, Any]:\n"
                "        return {\n"
                '            "description": self.description,\n'
                '            "quantity": self.quantity,\n'
                '            "unit_price": {"value": to_minor(self.unit_amount, currency), '
                '"currency": currency},\n'
                "        }\n\n"
            )
        t.step(
            repo.edit("billing/models.py", header, added + header),
            text=f"`{model}.from_v2` next to `from_v1`."
            if rng.random() < 0.5
            else f"Adding the v2 parser for `{model}`.",
        )
    t.step(
        repo.read("tests/billing/test_models.py"),
        text="The model tests load JSON fixtures; let me see how.",
    )
    t.step(repo.ls("tests/billing/fixtures"))
    t.step(
        repo.read("tests/billing/conftest.py"),
        repo.read("tests/billing/fixtures/v2/charge.json"),
        text="There is already a `v2/` set of fixtures, in the provider's v2 shapes.",
    )
    t.step(
        repo.edit(
            "tests/billing/conftest.py",
            'FIXTURES = Path(__file__).parent / "fixtures"',
            'FIXTURES = Path(__file__).parent / "fixtures" / "v2"',
        ),
        text="Pointing the fixture loader at them.",
    )
    t.step(
        repo.edit("tests/billing/test_models.py", "from_v1(", "from_v2(", replace_all=True),
        text="The fixtures are v2 now, so the model tests exercise `from_v2`.",
    )
    t.step(repo.edit("tests/billing/test_models.py", "_from_v1_", "_from_v2_", replace_all=True))
    t.step(repo.pytest("tests/billing/test_models.py", verbose=True, seconds=0.44))
    t.step(
        repo.pytest("tests", verbose=True, failures=v1_parse_failures(), seconds=5.81),
        text="Model tests pass. The whole suite, to see what the fixture switch breaks:",
    )
    t.reply(
        "Every model has a `from_v2` classmethod next to `from_v1`, plus `InvoiceLine.to_v2`, "
        "and the tests load the v2 fixtures. test_models passes. As expected, every test that "
        "parses a response in api, invoices, refunds and webhooks fails with a `KeyError` "
        "until those modules switch to `from_v2`: that's next.",
        thinking=(
            "Every failure is a KeyError raised inside a from_v1 classmethod: the fixtures are "
            "v2 objects now and api, invoices, refunds and webhooks still parse v1. That is the "
            "expected state between two steps, not a regression: test_models and "
            "test_public_api pass, and nothing outside the tests changed behaviour yet. Keeping "
            "both fixture sets loaded would double every test for an API we are leaving. The "
            "failures disappear module by module as each switches to from_v2, which is the "
            "next step anyway. Report it plainly so the user is not surprised by the red run."
        ),
    )
    progress.done.append(
        "billing/models.py: from_v2 on every model (v1 parsers kept), InvoiceLine.to_v2; "
        "tests load tests/billing/fixtures/v2 (conftest.FIXTURES); test_models passes."
    )
    progress.next_steps.pop(0)

    # Turn 6: api.py.
    t.prompt("Now api.py.")
    progress.current = "Switching billing/api.py to v2 paths and payloads."
    t.step(
        repo.edit("billing/api.py", '"/v1/charges', '"/v2/payments', replace_all=True),
        text="Charges are payments on v2.",
    )
    t.step(repo.edit("billing/api.py", '"/v1/customers', '"/v2/customers', replace_all=True))
    t.step(repo.edit("billing/api.py", ".from_v1(", ".from_v2(", fails=True))
    t.step(
        repo.edit("billing/api.py", ".from_v1(", ".from_v2(", replace_all=True),
        text="Every match is a response parse; replacing them all.",
    )
    t.step(
        repo.edit(
            "billing/api.py",
            '        "customer": customer_id,\n'
            '        "amount": _to_minor(amount, currency),\n'
            '        "currency": currency.lower(),\n',
            '        "customer_id": customer_id,\n'
            '        "amount": {"value": _to_minor(amount, currency), '
            '"currency": currency.upper()},\n',
        ),
        thinking=(
            "v2 charge body per the reference: customer_id, amount {value, currency}, "
            "description, metadata. The currency moves inside the amount object and must be "
            "upper case; callers sometimes pass 'brl', and to_minor already upper-cases for "
            "its lookup, so upper() in the payload is enough. The function keeps customer_id, "
            "amount, currency='BRL', description, metadata and the keyword-only "
            "idempotency_key: only the body it builds changes."
        ),
        text="The charge payload: `customer_id`, and the amount as an object. The function's "
        "signature stays as it is.",
    )
    t.step(
        repo.pytest(
            "tests/billing/test_api.py",
            failures=[path_failure(op, "test_api.py", "v1", "v2") for op in api_ops],
            verbose=True,
            seconds=1.27,
        ),
    )
    t.step(
        repo.read("tests/billing/test_api.py"),
        thinking=(
            "All the failures are assertions on the request path, which is wire format, not "
            "the public API: the tests still call the same functions with the same arguments. "
            "Updating the expected paths is right; the contract test is the one that must not "
            "change."
        ),
    )
    t.step(
        repo.edit("tests/billing/test_api.py", '"/v1/charges', '"/v2/payments', replace_all=True)
    )
    t.step(
        repo.edit("tests/billing/test_api.py", '"/v1/customers', '"/v2/customers', replace_all=True)
    )
    t.step(
        repo.pytest(
            "tests/billing/test_api.py",
            failures=[
                Failure(
                    "tests/billing/test_api.py::test_charge_sends_expected_request",
                    ("assert {'currency': 'BRL', 'value': 1990} == 1990",),
                    marker='request.json["amount"]',
                )
            ],
            seconds=1.19,
        )
    )
    t.step(
        repo.edit(
            "tests/billing/test_api.py",
            'assert request.json["amount"] == 1990',
            'assert request.json["amount"] == {"value": 1990, "currency": "BRL"}',
        )
    )
    t.step(repo.pytest("tests/billing/test_api.py", seconds=1.22))
    t.step(repo.pytest("tests/billing/test_public_api.py", seconds=0.3))
    t.reply(
        "api.py is on v2: `/v2/payments` and `/v2/customers`, `from_v2` parsing, and the charge "
        "payload uses `customer_id` and an amount object. Test expectations for paths and the "
        "amount are updated; test_api and the contract test pass."
    )
    progress.done.append(
        "billing/api.py on v2 paths (/v2/payments, /v2/customers), from_v2, charge payload with "
        "customer_id and an amount object; test_api and test_public_api pass."
    )
    progress.decisions.append(
        "Tests that assert paths or payloads are wire format and get updated; "
        "test_public_api.py is never edited."
    )

    # Turn 7: invoices and refunds. The agent slips: refund() gains a parameter.
    t.prompt("Good. Same treatment for invoices.py and refunds.py.")
    progress.current = "Switching billing/invoices.py and billing/refunds.py to v2."
    t.step(
        repo.edit("billing/invoices.py", '"/v1/invoices', '"/v2/invoices', replace_all=True),
        text="Invoices first.",
    )
    t.step(repo.edit("billing/invoices.py", ".from_v1(", ".from_v2(", replace_all=True))
    t.step(
        repo.edit(
            "billing/invoices.py",
            '        "customer": customer_id,\n'
            '        "lines": [line.to_v1() for line in lines],\n',
            '        "customer_id": customer_id,\n'
            '        "lines": [line.to_v2(currency.upper()) for line in lines],\n',
        ),
        thinking=(
            "InvoiceLine.to_v2 needs the currency, because v2 line prices are amount objects. "
            "create_invoice already has currency='BRL', so pass currency.upper(). The top-level "
            "currency field stays in v2 invoices but must be upper case too; that's the next "
            "edit."
        ),
    )
    t.step(
        repo.edit(
            "billing/invoices.py",
            '"currency": currency.lower(),',
            '"currency": currency.upper(),',
        )
    )
    t.step(repo.edit("billing/refunds.py", '"/v1/refunds', '"/v2/refunds', replace_all=True))
    t.step(repo.edit("billing/refunds.py", ".from_v1(", ".from_v2(", replace_all=True))
    t.step(
        repo.edit(
            "billing/refunds.py",
            "    amount: Decimal | None = None,\n    reason: str | None = None,\n",
            '    amount: Decimal | None = None,\n    currency: str = "BRL",\n'
            "    reason: str | None = None,\n",
        ),
        thinking=(
            "v2 wants the currency next to every amount, including partial refunds. refund() "
            "only takes charge_id and amount. Simplest: add a currency parameter with a BRL "
            "default, so existing callers keep working, and send it in the amount object."
        ),
        text="v2 needs a currency with partial refunds; adding a `currency` parameter.",
    )
    t.step(
        repo.edit(
            "billing/refunds.py",
            '        payload["amount"] = _to_minor(amount)',
            '        payload["amount"] = {"value": _to_minor(amount, currency), '
            '"currency": currency.upper()}',
        )
    )
    t.step(
        repo.read("tests/billing/test_invoices.py"),
        repo.read("tests/billing/test_refunds.py"),
        text="Updating the path expectations in their tests.",
    )
    t.step(
        repo.edit(
            "tests/billing/test_invoices.py", '"/v1/invoices', '"/v2/invoices', replace_all=True
        )
    )
    t.step(
        repo.edit("tests/billing/test_refunds.py", '"/v1/refunds', '"/v2/refunds', replace_all=True)
    )
    t.step(repo.pytest("tests/billing/test_invoices.py", verbose=True, seconds=0.91))
    t.step(repo.pytest("tests/billing/test_refunds.py", verbose=True, seconds=0.67))
    t.step(repo.read("billing/refunds.py"), text="A last look at refunds.py.")
    t.reply(
        "invoices.py and refunds.py are on v2. Invoice lines are sent with `to_v2`, currencies "
        "are upper case, and `refund()` takes a `currency` (default BRL) so partial refunds can "
        "send the amount object v2 requires. test_invoices and test_refunds pass."
    )
    progress.done.append(
        "billing/invoices.py and billing/refunds.py on v2 paths and from_v2; invoice lines via "
        "InvoiceLine.to_v2; test_invoices and test_refunds pass."
    )
    progress.next_steps.pop(0)

    # Turn 8: webhooks.
    t.prompt("Webhooks next; v2 renamed the events.")
    progress.current = "Moving billing/webhooks.py to PP-Signature and payment.* events."
    t.step(repo.read("billing/webhooks.py"), repo.read("tests/billing/test_webhooks.py"))
    t.step(repo.grep(r'"charge\.', "."), text="Where else do the old event names appear?")
    t.step(
        repo.edit(
            "billing/webhooks.py",
            'SIGNATURE_HEADER = "Payprovider-Signature"',
            'SIGNATURE_HEADER = "PP-Signature"',
        ),
        text="Signature scheme first: `PP-Signature`, `v2=`, HMAC-SHA512.",
    )
    t.step(
        repo.edit(
            "billing/webhooks.py",
            'parts.get("t"), parts.get("v1")',
            'parts.get("t"), parts.get("v2")',
        )
    )
    t.step(
        repo.edit(
            "billing/webhooks.py",
            "hmac.new(secret.encode(), signed, hashlib.sha256)",
            "hmac.new(secret.encode(), signed, hashlib.sha512)",
        )
    )
    t.step(repo.edit("billing/webhooks.py", ".from_v1(data)", ".from_v2(data)", replace_all=True))
    old_table = "\n".join(f'    "{old}": {handler_name(old)},' for old, *_ in EVENTS)
    new_table = "\n".join(f'    "{new}": {handler_name(old)},' for old, new, *_ in EVENTS)
    t.step(
        repo.edit("billing/webhooks.py", old_table, new_table),
        text="And the event names in the dispatch table.",
    )
    dispatch = [
        f"tests/billing/test_webhooks.py::test_{old.replace('.', '_')}_is_dispatched"
        for old, *_ in EVENTS
    ]
    bad_header = Failure(
        "",
        ("malformed signature header",),
        exception="billing.errors.InvalidSignature",
        frames=(
            (
                "billing/webhooks.py",
                "verify_signature(payload, header, settings.WEBHOOK_SECRET, now=now)",
                "handle",
                "",
            ),
            (
                "billing/webhooks.py",
                'raise errors.InvalidSignature("malformed signature header")',
                "verify_signature",
                "",
            ),
        ),
    )
    first_failures = [
        Failure(
            "tests/billing/test_webhooks.py::test_verify_signature_accepts_a_valid_header",
            bad_header.error,
            marker="webhooks.verify_signature(",
            exception=bad_header.exception,
            frames=bad_header.frames[1:],
        ),
        *[
            Failure(
                test_id,
                bad_header.error,
                marker="webhooks.handle(",
                exception=bad_header.exception,
                frames=bad_header.frames,
            )
            for test_id in dispatch
        ],
    ]
    t.step(
        repo.pytest(
            "tests/billing/test_webhooks.py", verbose=True, failures=first_failures, seconds=0.52
        ),
    )
    t.step(
        repo.edit(
            "tests/billing/test_webhooks.py",
            "    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()\n"
            '    return f"t={timestamp},v1={digest}"',
            "    digest = hmac.new(secret.encode(), signed, hashlib.sha512).hexdigest()\n"
            '    return f"t={timestamp},v2={digest}"',
        ),
        thinking=(
            "Every dispatch test fails inside verify_signature with 'malformed signature "
            "header'. The tests build their header with sign(), which produces t=...,v1=... "
            "over HMAC-SHA256; the code now looks for v2= and SHA-512. The accept-valid test "
            "fails for the same reason. Tampered, old-timestamp and malformed still pass "
            "because they expect a raise. So the helper has to sign the v2 way; the code is "
            "right."
        ),
        text="The test helper still signs the v1 way.",
    )
    renamed = [(old, new) for old, new, *_ in EVENTS if old != new]
    t.step(
        repo.pytest(
            "tests/billing/test_webhooks.py",
            failures=[
                Failure(
                    f"tests/billing/test_webhooks.py::test_{old.replace('.', '_')}_is_dispatched",
                    ("assert 0 == 1", " +  where 0 = len([])"),
                    marker="assert len(calls) == 1",
                )
                for old, _ in renamed
            ],
            seconds=0.49,
        )
    )
    for old, new in renamed:
        t.step(
            repo.edit("tests/billing/test_webhooks.py", f'event("{old}"', f'event("{new}"'),
            text="The tests still send v1 event names." if old == renamed[0][0] else None,
        )
    t.step(
        repo.edit(
            "billing/webhooks.py",
            'sent_at = datetime.utcfromtimestamp(event["created"])',
            'sent_at = datetime.fromisoformat(event["created_at"])',
        ),
        text="While here: v2 sends RFC 3339 timestamps, which also removes the deprecation.",
    )
    t.step(
        repo.edit(
            "tests/billing/test_webhooks.py",
            '"created": NOW,',
            '"created_at": "2026-10-26T09:33:20+00:00",',
        )
    )
    t.step(repo.pytest("tests/billing/test_webhooks.py", verbose=True, seconds=0.47))
    t.step(repo.read("billing/webhooks.py"), text="Reviewing the module after the edits.")
    t.reply(
        "Webhooks are on v2: `PP-Signature` with `v2=` and HMAC-SHA512, `payment.*` and "
        "`refund.succeeded` in the dispatch table, `from_v2` parsing and RFC 3339 timestamps "
        "(the deprecation warning is gone). test_webhooks passes."
    )
    progress.done.append(
        "billing/webhooks.py on v2: PP-Signature v2= HMAC-SHA512, payment.* and "
        "refund.succeeded events, created_at timestamps; test_webhooks passes."
    )
    progress.next_steps.pop(0)

    # Turn 9: the full suite catches the slip.
    t.prompt("Run the whole suite.")
    progress.current = "Running the whole suite now that every module is on v2."
    refund_op = next(op for op in OPS if op.name == "refund")
    expected = op_signature(refund_op)
    actual = expected.replace(
        "amount: 'Decimal | None' = None, ",
        "amount: 'Decimal | None' = None, currency: 'str' = 'BRL', ",
    )
    t.step(
        repo.pytest(
            "tests",
            verbose=True,
            failures=[
                Failure(
                    "tests/billing/test_public_api.py::test_public_signatures_are_stable[refund]",
                    (
                        f'assert "{actual}" == "{expected}"',
                        f"  - {expected}",
                        f"  + {actual}",
                    ),
                    arguments=("name = 'refund'", f'expected = "{expected}"'),
                )
            ],
            seconds=4.31,
        )
    )
    t.reply(
        thinking=(
            "test_public_signatures_are_stable[refund]: the currency parameter I added to "
            "refund() while moving refunds.py. The user's rule from the start of the task is "
            "not to change the public API of the billing module, and a new optional parameter "
            "is still a signature change: checkout passes reason positionally in at least one "
            "place, which would now bind to currency. I said I would run the contract test "
            "after every module and skipped it for refunds. Fix: remove the parameter and "
            "derive the currency from the charge, which is what the partial-refunds section "
            "of docs/migration-v2.md recommends."
        ),
        text="One failure, and it's mine: `test_public_signatures_are_stable[refund]`. I added a "
        "`currency` parameter to `refund()` in the previous step. That changes the public "
        "signature, which you asked me not to do. I'll take it out and look the currency up "
        "from the charge instead, as `docs/migration-v2.md` suggests.",
    )

    # Turn 10: fix without touching the signature.
    t.prompt("Yes, fix it without touching the public signatures.")
    progress.current = "Reverting the currency parameter on refund(); deriving it from the charge."
    t.step(repo.read("billing/refunds.py"))
    t.step(
        repo.edit(
            "billing/refunds.py",
            '    amount: Decimal | None = None,\n    currency: str = "BRL",\n',
            "    amount: Decimal | None = None,\n",
        ),
        text="Removing the parameter.",
    )
    t.step(
        repo.edit(
            "billing/refunds.py",
            "    if amount is not None:\n"
            '        payload["amount"] = {"value": _to_minor(amount, currency), ',
            "    if amount is not None:\n"
            "        currency = _charge_currency(charge_id)\n"
            '        payload["amount"] = {"value": _to_minor(amount, currency), ',
        )
    )
    t.step(
        repo.edit(
            "billing/refunds.py",
            "def _client() -> PaymentClient:\n    return default_client()\n",
            "def _client() -> PaymentClient:\n    return default_client()\n\n\n"
            "def _charge_currency(charge_id: str) -> str:\n"
            '    """v2 wants the currency with partial refunds; callers only give an amount."""\n'
            '    return Charge.from_v2(_client().get(f"/v2/payments/{charge_id}")).currency\n',
        ),
        text="And the lookup, with the model import it needs.",
    )
    t.step(
        repo.edit(
            "billing/refunds.py",
            "from billing.models import Refund",
            "from billing.models import Charge, Refund",
        )
    )
    t.step(repo.pytest("tests/billing/test_public_api.py", verbose=True, seconds=0.33))
    t.reply(
        "Fixed. `refund()` has its original signature again; for partial refunds it fetches the "
        "charge to get its currency (`_charge_currency`). The contract test passes. Sorry about "
        "that: I'll run the contract test after every module, as agreed."
    )
    progress.done.append(
        "refund() briefly gained a currency parameter (caught by test_public_api); reverted. "
        "Partial refunds now look the currency up from the charge (_charge_currency)."
    )
    progress.decisions.append(
        "Partial refunds derive the currency from the charge (one GET) rather than asking "
        "callers for it."
    )

    # Turn 11: retry.
    t.prompt("Check retry.py; v2 uses a different rate-limit header.")
    progress.current = "Honouring RateLimit-Reset in the client's retry."
    t.step(repo.read("billing/retry.py"))
    t.step(repo.grep("Retry-After", "."))
    t.step(
        repo.edit(
            "billing/client.py",
            'retry_after=response.headers.get("Retry-After"))',
            "retry_after=_retry_hint(response))",
        ),
        text="v2 sends `RateLimit-Reset`, and `Retry-After` only on 503.",
    )
    t.step(
        repo.edit(
            "billing/client.py",
            "def _error_from_response(response: httpx.Response) -> errors.BillingError:",
            "def _retry_hint(response: httpx.Response) -> str | None:\n"
            '    return response.headers.get("RateLimit-Reset") or response.headers.get('
            '"Retry-After")\n\n\n'
            "def _error_from_response(response: httpx.Response) -> errors.BillingError:",
        )
    )
    t.step(
        repo.edit(
            "tests/billing/test_client.py",
            'headers={"Retry-After": "2"}',
            'headers={"RateLimit-Reset": "2"}',
        )
    )
    t.step(
        Call(
            "run_tests",
            {"path": "tests/billing/test_client.py"},
            "Command timed out after 2m 0.0s",
            is_error=True,
            seconds=120,
        ),
    )
    t.step(
        repo.read("tests/billing/conftest.py"),
        thinking=(
            "A timeout on an 11-test file that took 0.6s before. The fake patches "
            "billing.retry.sleep_before_retry, and the client calls retry.sleep_before_retry "
            "through the module, so the patch applies. Nothing in my edit sleeps. Possibly the "
            "runner itself; rerun once before digging."
        ),
        text="That file ran in 0.6s before; checking that sleeps are patched.",
    )
    t.step(repo.pytest("tests/billing/test_client.py", verbose=True, seconds=0.63))
    t.reply(
        "The client now honours `RateLimit-Reset` and falls back to `Retry-After`. The first test "
        "run hit the tool's 2-minute timeout; the sleeps are patched in conftest and the rerun "
        "took 0.6s, so that was the runner, not the code. test_client passes."
    )
    progress.done.append(
        "Retry honours RateLimit-Reset, then Retry-After (_retry_hint in client.py)."
    )

    # Turn 12: pagination.
    t.prompt("Pagination changed too, right? Handle the cursors.")
    progress.current = "Cursor pagination in the list functions."
    t.step(repo.grep("starting_after|has_more", "."))
    for module in ("api", "invoices", "refunds"):
        t.step(
            repo.edit(
                f"billing/{module}.py",
                '        if not page.get("has_more"):',
                '        if not page.get("next_cursor"):',
                replace_all=module == "api",
            ),
            text=f"`{module}.py`." if module != "api" else "Same loop in three modules.",
        )
        t.step(
            repo.edit(
                f"billing/{module}.py",
                '        params["starting_after"] = page["data"][-1]["id"]',
                '        params["cursor"] = page["next_cursor"]',
                replace_all=module == "api",
            )
        )
    listed = [op for op in OPS if op.kind == "list"]
    t.step(
        repo.pytest(
            "tests",
            failures=[
                Failure(
                    f"tests/billing/test_{op.module}.py::test_{op.name}_follows_pagination",
                    ("assert 2 == 4", " +  where 2 = len([...])"),
                    marker="assert len(result) == 4",
                )
                for op in listed
            ],
            seconds=4.02,
        )
    )
    for module in ("api", "invoices", "refunds"):
        t.step(
            repo.edit(
                f"tests/billing/test_{module}.py",
                '{**first, "has_more": True}',
                '{**first, "next_cursor": "cur_2"}',
                replace_all=module == "api",
            ),
            text="The pagination tests fake a second page the v1 way." if module == "api" else None,
        )
    t.step(repo.pytest("tests", verbose=True, coverage=True, seconds=4.11))
    t.reply(
        "Done: the list functions follow `next_cursor` instead of `starting_after`/`has_more`, "
        "and the pagination tests fake a second page with `next_cursor`. Whole suite green."
    )
    progress.done.append("Cursor pagination (cursor/next_cursor) in api, invoices and refunds.")

    # Turn 13: docs.
    t.prompt("Update the CHANGELOG and the configuration section of the README.")
    progress.current = "Documenting the migration."
    t.step(repo.read("CHANGELOG.md"), repo.read("README.md"))
    t.step(
        repo.edit(
            "CHANGELOG.md",
            "# Changelog\n",
            "# Changelog\n\n## 3.9.0 (unreleased)\n"
            "- Talk to PayProvider API v2 (`PAYPROVIDER_API=v2`, the default). No change to the "
            "public API of `billing`.\n"
            "- Webhooks: `PP-Signature` (HMAC-SHA512) and `payment.*` events.\n"
            "- Partial refunds look up the charge's currency.\n",
        )
    )
    t.step(
        repo.edit(
            "README.md",
            "| `BILLING_DEFAULT_CURRENCY` | defaults to BRL |\n",
            "| `BILLING_DEFAULT_CURRENCY` | defaults to BRL |\n"
            "| `PAYPROVIDER_API` | `v2` (default) or `v1` until 2027-09-30 |\n",
        )
    )
    t.reply("CHANGELOG has a 3.9.0 entry and the README documents `PAYPROVIDER_API`.")
    progress.done.append("CHANGELOG 3.9.0 entry; README documents PAYPROVIDER_API.")
    progress.next_steps = [
        "Check nothing still calls v1 (tests included).",
        "Accept both webhook signature schemes during the 30-day overlap.",
        "Full verbose test run; PR description.",
    ]

    # Turn 14: a sweep for leftovers (after the compaction, the agent re-reads files).
    t.prompt("Double-check that nothing still talks to v1, tests included.")
    progress.current = "Sweeping for v1 leftovers."
    t.step(repo.grep(r"/v1/|from_v1|Payprovider-|v1=", "."))
    t.step(
        repo.read("billing/client.py"),
        thinking=(
            "The summary says the client was moved to v2, but I no longer have its contents "
            "and grep only shows lines. Re-reading client.py to check the base URL and the "
            "headers before touching the tests."
        ),
        text="Re-reading the client to be sure about the headers.",
    )
    t.step(
        repo.edit(
            "tests/billing/test_client.py", '"/v1/charges', '"/v2/payments', replace_all=True
        ),
        text="The client tests still use v1 paths; cosmetic, but worth aligning.",
    )
    t.step(
        repo.read("billing/api.py"),
        text="The docstrings still name v1 endpoints. Re-reading api.py before editing it.",
    )
    t.step(repo.edit("billing/api.py", " /v1/charges", " /v2/payments", replace_all=True))
    t.step(repo.edit("billing/api.py", " /v1/customers", " /v2/customers", replace_all=True))
    t.step(repo.read("billing/invoices.py"), repo.read("billing/refunds.py"))
    t.step(repo.edit("billing/invoices.py", " /v1/invoices", " /v2/invoices", replace_all=True))
    t.step(repo.edit("billing/refunds.py", " /v1/refunds", " /v2/refunds", replace_all=True))
    t.step(repo.pytest("tests", seconds=4.2))
    t.reply(
        "Nothing calls v1 any more. I aligned the client tests' paths and the `Provider call` "
        "lines in the docstrings with v2. What's left is intentional: the `from_v1` parsers in "
        "`billing/models.py`, kept until the switch-off. Whole suite green."
    )
    progress.done.append("Swept for v1 leftovers; only the from_v1 parsers remain, on purpose.")

    # Turn 15: both signature schemes during the overlap.
    t.prompt(
        "The notes say the provider sends both v1 and v2 webhooks for 30 days. Do we handle that?"
    )
    progress.current = "Accepting both webhook signature schemes during the overlap."
    t.step(repo.read("docs/migration-v2.md"), text="Checking the rollout section again.")
    t.step(repo.read("billing/webhooks.py"), text="We don't; re-reading webhooks.py.")
    t.step(
        repo.edit(
            "billing/webhooks.py",
            '    timestamp, signature = parts.get("t"), parts.get("v2")\n',
            '    timestamp = parts.get("t")\n'
            "    # The provider signs with both schemes for 30 days after the switch.\n"
            '    scheme, signature = ("v2", parts["v2"]) if "v2" in parts else ("v1", '
            'parts.get("v1"))\n',
        )
    )
    t.step(
        repo.edit(
            "billing/webhooks.py",
            "    expected = hmac.new(secret.encode(), signed, hashlib.sha512).hexdigest()\n",
            '    digest = hashlib.sha512 if scheme == "v2" else hashlib.sha256\n'
            "    expected = hmac.new(secret.encode(), signed, digest).hexdigest()\n",
        )
    )
    t.step(
        repo.edit(
            "billing/webhooks.py",
            '    handler = HANDLERS.get(event["type"])',
            '    handler = HANDLERS.get(_V1_EVENTS.get(event["type"], event["type"]))',
        ),
        text="v1 event names need mapping too.",
    )
    t.step(
        repo.edit(
            "billing/webhooks.py",
            "HANDLERS: dict[",
            "_V1_EVENTS = {\n"
            + "\n".join(f'    "{old}": "{new}",' for old, new in renamed)
            + "\n}\n\nHANDLERS: dict[",
        )
    )
    t.step(repo.pytest("tests/billing/test_webhooks.py", seconds=0.5))
    t.reply(
        "Now we do: `verify_signature` accepts `v2=` (HMAC-SHA512) or `v1=` (HMAC-SHA256), and "
        "v1 event names map to their v2 handlers. Webhook tests pass. After 2027-09-30 both "
        "fallbacks can go with the `from_v1` parsers."
    )
    progress.done.append("Webhooks accept v1 and v2 signatures and event names during the overlap.")

    # Turn 16: last run and the PR.
    t.prompt("Run everything once more, verbose, and check the contract test is green.")
    t.step(repo.pytest("tests", verbose=True, seconds=4.4))
    t.reply(
        f"All {len(repo.collect('tests'))} tests pass, including all "
        f"{len(OPS) + 1} cases of "
        "`tests/billing/test_public_api.py`: no public name or signature changed."
    )
    t.prompt("Write the PR description.")
    t.reply(
        "**Move billing to PayProvider API v2**\n\n"
        "No change to the public API of `billing`: every name and signature in `__all__` is "
        "as before (`tests/billing/test_public_api.py` untouched and green).\n\n"
        "What changed inside:\n"
        "- `client.py`: `PP-Api-Version: 2026-09-01`, `PP-Idempotency-Key`, v2 error bodies "
        "(v1 still parsed), `RateLimit-Reset`.\n"
        "- `models.py`: `from_v2` on every model; `from_v1` kept until the v1 switch-off.\n"
        "- `api.py`, `invoices.py`, `refunds.py`: `/v2/` paths, amount objects, upper-case "
        "currencies, cursor pagination. Partial refunds look the currency up from the charge.\n"
        "- `webhooks.py`: `PP-Signature` (HMAC-SHA512) and `payment.*` events; v1 signatures and "
        "event names accepted during the 30-day overlap.\n"
        "- `PAYPROVIDER_API` setting, README and CHANGELOG (3.9.0).\n\n"
        f"Tests: {len(repo.collect('tests'))} passed. Path and payload expectations were "
        "updated; fixtures are v2 objects."
    )
    return t.example()
