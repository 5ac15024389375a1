"""The billing session, turns 10 to 16: one function per user prompt and what follows it."""

from __future__ import annotations

from tests.example_traces.billing_ops import OPS
from tests.example_traces.billing_source import EVENTS
from tests.example_traces.billing_story import BillingStory
from tests.example_traces.repo import Failure
from tests.example_traces.trace import Call


def turn_10_fix_without_touching_the_signature(s: BillingStory) -> None:
    """Turn 10: fix without touching the signature."""
    t, repo, progress = s.t, s.repo, s.progress
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


def turn_11_retry(s: BillingStory) -> None:
    """Turn 11: retry."""
    t, repo, progress = s.t, s.repo, s.progress
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


def turn_12_pagination(s: BillingStory) -> None:
    """Turn 12: pagination."""
    t, repo, progress = s.t, s.repo, s.progress
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


def turn_13_docs(s: BillingStory) -> None:
    """Turn 13: docs."""
    t, repo, progress = s.t, s.repo, s.progress
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


def turn_14_sweep_for_leftovers(s: BillingStory) -> None:
    """Turn 14: a sweep for leftovers (after the compaction, the agent re-reads files)."""
    t, repo, progress = s.t, s.repo, s.progress
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


def turn_15_both_signature_schemes(s: BillingStory) -> None:
    """Turn 15: both signature schemes during the overlap."""
    t, repo, progress = s.t, s.repo, s.progress
    renamed = [(old, new) for old, new, *_ in EVENTS if old != new]
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


def turn_16_last_run_and_the_pr(s: BillingStory) -> None:
    """Turn 16: last run and the PR."""
    t, repo = s.t, s.repo
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
