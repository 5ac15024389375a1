"""Sessions 6 and 7: a compaction storm, and a compaction loop (issue 43).

- ``example-compaction-storm``: a log-triage agent (60k window) reads a large shard of logs
  on every turn; its harness compacts at 45k tokens, so it compacts again and again: seven
  times within the hour, each one freeing the window (no loop), each a few calls after the
  last (the thrash and repeated rules fire on the same compactions and are folded into the
  storm's alert).
- ``example-compaction-loop``: a CLI agent whose fixed overhead (system prompt and tool
  schemas, 28.4k tokens) sits above its harness's 28k threshold in a 32k window: every
  compaction leaves the context where it was, so the next call compacts again. The user
  gives up after three, spread over more than an hour (no storm).
"""

from __future__ import annotations

import random

from sessions.example_data import ExampleSession
from tests.example_traces.trace import SEED, Call, Trace

_SERVICES = ("api-gateway", "billing", "checkout", "ledger", "notifier", "search")
_LEVELS = ("INFO", "INFO", "INFO", "WARN", "ERROR")
_EVENTS = (
    "request served status=200",
    "upstream timeout after 30000ms",
    "retrying payment capture attempt=2",
    "connection pool exhausted size=20",
    "cache miss key=price:sku",
    "queue lag 1200ms partition=3",
)


def _log_shard(rng: random.Random, shard: int, lines: int) -> str:
    out = []
    for n in range(lines):
        minute, second = divmod(n, 60)
        service = rng.choice(_SERVICES)
        out.append(
            f"2026-11-06T03:{minute % 60:02d}:{second:02d}Z {rng.choice(_LEVELS):<5} "
            f"{service} shard={shard} req={rng.randrange(16**8):08x} {rng.choice(_EVENTS)}"
        )
    return "\n".join(out)


def _storm_summary(shard: int) -> str:
    return (
        "Goal: find why checkout failed between 03:00 and 04:00 on 2026-11-06.\n\n"
        f"Done: log shards 1 to {shard} read; timeouts cluster on billing and ledger.\n\n"
        f"Next steps:\n- Read shard {shard + 1}.\n- Compare with the deploy at 03:12."
    )


def compaction_storm(tool_ids: set[str]) -> ExampleSession:
    external_id = "example-compaction-storm"
    rng = random.Random(f"{SEED}:{external_id}")
    t = Trace(
        external_id=external_id,
        rng=rng,
        tool_ids=tool_ids,
        session={
            "agent": "log-triage",
            "model": "claude-sonnet-4-5",
            "context_window": 60_000,
            "started_at": "2026-11-06T09:00:00Z",
            "metadata": {"repository": "acme/checkout", "incident": "INC-2291"},
        },
        system_tokens=3_000,
    )
    shard = 0

    def compact_at_45k(trace: Trace) -> None:
        if trace.context > 45_000:
            latest = trace.prompt_seqs[-1]
            trace.summarize(summary=_storm_summary(shard), keep_from=latest, duration_ms=7_000)

    t.policy = compact_at_45k
    t.prompt(
        "Checkout failed for many customers between 03:00 and 04:00 UTC today. Go through "
        "the log shards one by one and tell me what broke.",
        wait=0,
    )
    t.reply("I will read the shards in order and keep a running list of what breaks.")
    for shard in range(1, 31):
        t.prompt(f"Next: shard {shard}.", wait=rng.uniform(20, 40))
        t.step(
            Call(
                "read_logs",
                {"shard": shard, "from": "03:00", "to": "04:00"},
                _log_shard(rng, shard, 500 + 7 * shard),
                seconds=4,
            ),
            text=f"Reading shard {shard}.",
        )
        t.step(
            Call("grep_logs", {"shard": shard, "pattern": "ERROR|timeout"},
                 _log_shard(rng, shard, 60), seconds=2),
        )  # fmt: skip
        t.reply(
            f"Shard {shard}: upstream timeouts on billing and ledger again; the connection "
            "pool runs out a few seconds before each burst."
        )
    return t.example()


_LOOP_SYSTEM_TOKENS = 28_400  # system prompt and tool schemas: above the 28k threshold


def _loop_summary(n: int) -> str:
    return f"Goal: rename the config key. Compacted {n} time{'s' if n > 1 else ''} so far."


def compaction_loop(tool_ids: set[str]) -> ExampleSession:
    external_id = "example-compaction-loop"
    rng = random.Random(f"{SEED}:{external_id}")
    t = Trace(
        external_id=external_id,
        rng=rng,
        tool_ids=tool_ids,
        session={
            "agent": "kimi-cli",
            "model": "claude-haiku-4-5",
            "context_window": 32_000,
            "started_at": "2026-11-07T14:00:00Z",
            "metadata": {"repository": "acme/tooling", "tools_loaded": 61},
        },
        system_tokens=_LOOP_SYSTEM_TOKENS,
    )

    def compact_at_28k(trace: Trace) -> None:
        if trace.context > 28_000 and len(trace.prompt_seqs) > 1:
            latest = trace.prompt_seqs[-1]
            n = len(trace.compactions) + 1
            trace.summarize(summary=_loop_summary(n), keep_from=latest, duration_ms=5_000)

    t.prompt("Rename the config key `retry_max` to `max_retries` across the repo.", wait=0)
    t.reply("Loading the project's tools first.")
    t.policy = compact_at_28k
    for attempt in range(3):
        t.prompt(
            "Still nothing? Please just run the rename."
            if attempt
            else "Go ahead with the rename.",
            wait=rng.uniform(2_500, 3_000),
        )
        t.step(
            Call("grep", {"pattern": "retry_max", "path": "."},
                 "config/defaults.toml:12:retry_max = 5\nsrc/client.py:40:cfg['retry_max']",
                 seconds=1),
            text="Searching for the key.",
        )  # fmt: skip
        t.reply("The context is full again; compacting before I continue.")
    return t.example()
