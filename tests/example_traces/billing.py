"""Session 1: a long coding session with one compaction that keeps the turn-3 constraint.

The story is told turn by turn in billing_turns_early, _middle and _late; each turn is one
real user prompt and everything the agent does before the next one.
"""

from __future__ import annotations

import random

from sessions.example_data import ExampleSession
from tests.example_traces import billing_turns_early, billing_turns_late, billing_turns_middle
from tests.example_traces.billing_repo import billing_repo
from tests.example_traces.billing_story import BillingStory
from tests.example_traces.trace import SEED, Progress, Trace


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
    story = BillingStory(t=t, repo=repo, progress=Progress(), rng=rng)
    t.policy = story.compact_when_full
    billing_turns_early.turn_1_goal(story)
    billing_turns_early.turn_2_baseline(story)
    billing_turns_early.turn_3_constraint(story)
    billing_turns_early.turn_4_client(story)
    billing_turns_early.turn_5_models_and_fixtures(story)
    billing_turns_middle.turn_6_api_module(story)
    billing_turns_middle.turn_7_invoices_and_refunds(story)
    billing_turns_middle.turn_8_webhooks(story)
    billing_turns_middle.turn_9_full_suite_catches_the_slip(story)
    billing_turns_late.turn_10_fix_without_touching_the_signature(story)
    billing_turns_late.turn_11_retry(story)
    billing_turns_late.turn_12_pagination(story)
    billing_turns_late.turn_13_docs(story)
    billing_turns_late.turn_14_sweep_for_leftovers(story)
    billing_turns_late.turn_15_both_signature_schemes(story)
    billing_turns_late.turn_16_last_run_and_the_pr(story)
    return t.example()
