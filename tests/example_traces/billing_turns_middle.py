"""The billing session, turns 6 to 9: one function per user prompt and what follows it."""

from __future__ import annotations

from tests.example_traces.billing_ops import OPS
from tests.example_traces.billing_source import EVENTS, handler_name, op_signature
from tests.example_traces.billing_story import BillingStory, path_failure
from tests.example_traces.repo import Failure


def turn_6_api_module(s: BillingStory) -> None:
    """Turn 6: api.py."""
    t, repo, progress = s.t, s.repo, s.progress
    api_ops = [op for op in OPS if op.module == "api"]
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


def turn_7_invoices_and_refunds(s: BillingStory) -> None:
    """Turn 7: invoices and refunds. The agent slips: refund() gains a parameter."""
    t, repo, progress = s.t, s.repo, s.progress
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


def turn_8_webhooks(s: BillingStory) -> None:
    """Turn 8: webhooks."""
    t, repo, progress = s.t, s.repo, s.progress
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


def turn_9_full_suite_catches_the_slip(s: BillingStory) -> None:
    """Turn 9: the full suite catches the slip."""
    t, repo, progress = s.t, s.repo, s.progress
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
