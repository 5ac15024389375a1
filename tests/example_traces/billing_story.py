"""What the billing session's summarizer knows, and the failures the agent runs into."""

from __future__ import annotations

import ast
import random
import re
from dataclasses import dataclass

from tests.example_traces.billing_fixtures import PROVIDER_FIXTURES
from tests.example_traces.billing_models import MODELS, snake_case
from tests.example_traces.billing_ops import OPS, SAMPLE_ARGS, Op
from tests.example_traces.billing_source import EVENTS, handler_name
from tests.example_traces.repo import Failure, Repo
from tests.example_traces.trace import Progress, Trace, bullets

BILLING_GOAL = "Migrate billing to API v2."
BILLING_CONSTRAINT = "Do not change the public API of the billing module."


def billing_summary(progress: Progress, repo: Repo, constraint_seq: int) -> str:
    return (
        "Goal: Migrate the billing package from PayProvider API v1 to API v2 (user, seq 0).\n\n"
        "Constraints:\n"
        f"- {BILLING_CONSTRAINT.rstrip('.')} (user, seq {constraint_seq}). checkout, "
        "subscriptions and "
        "back-office import billing directly; tests/billing/test_public_api.py pins every "
        "exported name and signature, run it after each module.\n"
        "- Wire-format changes stay inside billing.client and billing.models "
        "(docs/public-api.md).\n\n"
        f"Decisions:\n{bullets(progress.decisions)}\n\n"
        f"Done:\n{bullets(progress.done)}\n\n"
        f"Current state: {progress.current}\n\n"
        f"Next steps:\n{bullets(progress.next_steps)}\n\n"
        f"Files touched: {', '.join(repo.edited) or '(none yet)'}"
    )


def webhook_warnings(repo: Repo) -> tuple[list[str], int]:
    ids = [i for i in repo.collect("tests/billing/test_webhooks.py") if i.endswith("_dispatched")]
    lines = repo.files["billing/webhooks.py"].splitlines()
    number = next(i for i, line in enumerate(lines) if "utcfromtimestamp" in line) + 1
    message = [
        f"  {repo.root}/billing/webhooks.py:{number}: DeprecationWarning: "
        "datetime.datetime.utcfromtimestamp() is deprecated and scheduled for removal in a "
        "future version. Use timezone-aware objects to represent datetimes in UTC: "
        "datetime.datetime.fromtimestamp(timestamp, datetime.UTC).",
        '    sent_at = datetime.utcfromtimestamp(event["created"])',
    ]
    return [*ids, *message], len(ids)


def path_failure(op: Op, module_test: str, old: str, new: str) -> Failure:
    path = op.path
    for name in re.findall(r"{(\w+)}", op.path):
        path = path.replace("{" + name + "}", ast.literal_eval(SAMPLE_ARGS[name]))
    before, after = f"/{old}/{path}", f"/{new}/{path.replace('charges', 'payments')}"
    return Failure(
        f"tests/billing/{module_test}::test_{op.name}_sends_expected_request",
        (f"assert '{after}' == '{before}'", f"  - {before}", f"  + {after}"),
        marker="assert request.path",
    )


def _v1_missing_key(model: str) -> tuple[str, str]:
    """The key ``from_v1`` trips on in a v2 object, and the source line that reads it."""
    v2 = PROVIDER_FIXTURES[snake_case(model)][1]
    for f in MODELS[model][1]:
        if "if data.get" in f.v1:
            continue
        for key in re.findall(r'data\["(\w+)"\]', f.v1):
            if key not in v2:
                return key, f"{f.name}={f.v1},"
    raise RuntimeError(f"{model}.from_v1 reads a v2 object without error")


def v1_parse_failures() -> list[Failure]:
    """What the suite reports once the fixtures are v2 but the code still parses v1."""
    failures = []
    for op in OPS:
        key, line = _v1_missing_key(op.model)
        if op.kind == "list":
            needle = f'items.extend({op.model}.from_v1(row) for row in page["data"])'
        else:
            needle = f"return {op.model}.from_v1(data)"
        frames = (
            (f"billing/{op.module}.py", needle, op.name, f"def {op.name}("),
            ("billing/models.py", line, "from_v1", f"class {op.model}:"),
        )
        plural = "s" if op.kind == "list" else ""
        tests = [
            (f"test_{op.name}_sends_expected_request", f"{op.module}.{op.name}("),
            (f"test_{op.name}_returns_{snake_case(op.model)}{plural}", "result = "),
        ]
        if op.kind in ("create", "action"):
            tests.append((f"test_{op.name}_sends_idempotency_key", f"{op.module}.{op.name}("))
        if op.kind == "list":
            tests.append((f"test_{op.name}_follows_pagination", "result = "))
        failures += [
            Failure(
                f"tests/billing/test_{op.module}.py::{name}",
                (f"'{key}'",),
                marker=marker,
                exception="KeyError",
                frames=frames,
            )
            for name, marker in tests
        ]
    for event, _, model, _ in EVENTS:
        key, line = _v1_missing_key(model)
        handler = handler_name(event)
        failures.append(
            Failure(
                f"tests/billing/test_webhooks.py::test_{event.replace('.', '_')}_is_dispatched",
                (f"'{key}'",),
                marker="webhooks.handle(",
                exception="KeyError",
                frames=(
                    ("billing/webhooks.py", 'handler(event["data"]["object"])', "handle", ""),
                    (
                        "billing/webhooks.py",
                        f"obj = {model}.from_v1(data)",
                        handler,
                        f"def {handler}(",
                    ),
                    ("billing/models.py", line, "from_v1", f"class {model}:"),
                ),
            )
        )
    return failures


@dataclass
class BillingStory:
    """What the billing session's turns share: the trace, the repository, the progress."""

    t: Trace
    repo: Repo
    progress: Progress
    rng: random.Random
    constraint_seq: int = -1

    def compact_when_full(self, trace: Trace) -> None:
        if trace.compactions or trace.context < 150_000:
            return
        summary = billing_summary(self.progress, self.repo, self.constraint_seq)
        keep = trace.keep_from(summary, target_after=35_000, after_seq=self.constraint_seq)
        trace.summarize(
            summary=summary, keep_from=keep, duration_ms=self.rng.randint(7_000, 12_000)
        )
