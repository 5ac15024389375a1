"""The billing session, turns 1 to 5: one function per user prompt and what follows it."""

from __future__ import annotations

from tests.example_traces.billing_models import MODELS, from_method
from tests.example_traces.billing_ops import OPS
from tests.example_traces.billing_story import (
    BILLING_CONSTRAINT,
    BILLING_GOAL,
    BillingStory,
    v1_parse_failures,
    webhook_warnings,
)
from tests.example_traces.repo import Failure


def turn_1_goal(s: BillingStory) -> None:
    """Turn 1: the goal."""
    t, repo, progress = s.t, s.repo, s.progress
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


def turn_2_baseline(s: BillingStory) -> None:
    """Turn 2: baseline."""
    t, repo, progress = s.t, s.repo, s.progress
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


def turn_3_constraint(s: BillingStory) -> None:
    """Turn 3: the constraint."""
    t, repo, progress = s.t, s.repo, s.progress
    s.constraint_seq = constraint_seq = t.prompt(
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


def turn_4_client(s: BillingStory) -> None:
    """Turn 4: the client."""
    t, repo, progress = s.t, s.repo, s.progress
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


def turn_5_models_and_fixtures(s: BillingStory) -> None:
    """Turn 5: models and fixtures."""
    t, repo, progress = s.t, s.repo, s.progress
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
            if s.rng.random() < 0.5
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
