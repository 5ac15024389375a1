"""Benchmark: offline replay of a generated 10,000-call session with large tool outputs.

Run: ``.venv/bin/python benchmarks/replay.py [--calls 10000] [--seed 7]``. The last line printed
is JSON: ``{"calls": ..., "seconds": ..., "peak_rss_mb": ...}``; ``seconds`` times the replay
only, not the generation of the session.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compaction.engine.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from compaction.engine.replay import replay
from compaction.engine.strategies import Policy

WORDS = [
    "def",
    "class",
    "return",
    "import",
    "self",
    "value",
    "error",
    "billing",
    "invoice",
    "charge",
    "client",
    "request",
    "response",
    "assert",
    "test",
    "fixture",
    "module",
    "path",
    "config",
    "token",
    "context",
    "summary",
    "status",
    "retry",
    "timeout",
]


def generate(calls: int, seed: int) -> list[Message]:
    """A coding session: prompts every ~10 calls, each call reads or runs something."""
    rng = random.Random(seed)
    # one large pool of text; each tool output is a distinct slice of it
    pool = " ".join(rng.choice(WORDS) for _ in range(400_000))
    out: list[Message] = [
        Message(0, "system", (TextBlock("You are a careful coding agent."),)),
        Message(
            1,
            "user",
            (
                TextBlock(
                    "Migrate billing to API v2. Do not change the public API of billing/api.py."
                ),
            ),
        ),
    ]
    seq = 2
    made = 0
    while made < calls:
        steps = rng.randint(4, 16)
        for _ in range(steps):
            if made >= calls:
                break
            tool_id = f"toolu_{seq:06d}"
            path = f"billing/mod_{rng.randint(0, 400)}.py"
            name = rng.choice(("read_file", "read_file", "bash", "grep", "edit_file"))
            size = rng.choice((800, 2_000, 4_000, 8_000)) if rng.random() < 0.9 else 40_000
            start = rng.randint(0, len(pool) - size - 1)
            out.append(
                Message(
                    seq,
                    "assistant",
                    (
                        TextBlock(f"Next I will check {path}."),
                        ToolUseBlock(tool_id, name, {"path": path}),
                    ),
                    usage=Usage(output_tokens=rng.randint(20, 200)),
                )
            )
            out.append(
                Message(
                    seq + 1,
                    "user",
                    (ToolResultBlock(tool_id, pool[start : start + size], rng.random() < 0.03),),
                )
            )
            seq += 2
            made += 1
        if made < calls:
            out.append(Message(seq, "assistant", (TextBlock("Done with this part; tests pass."),)))
            out.append(
                Message(seq + 1, "user", (TextBlock(f"Good. Now continue with step {seq}."),))
            )
            seq += 2
            made += 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    messages = generate(args.calls, args.seed)
    policy = Policy(soft_limit=90_000, hard_limit=120_000, keep_last=6)
    started = time.perf_counter()
    result = replay(messages, policy)
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    totals = result.totals
    print(
        f"replayed {totals.calls} calls: {totals.compactions} compactions, {totals.clears} clears, "
        f"peak context {totals.peak_context} tokens, {totals.overflow_calls} overflows, "
        f"{totals.orphan_pairs} orphan pairs",
        file=sys.stderr,
    )
    print(
        json.dumps(
            {
                "calls": totals.calls,
                "seconds": round(seconds, 3),
                "peak_rss_mb": round(peak_kb / 1024),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
