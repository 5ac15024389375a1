"""Benchmark: the default policy on the real one-prompt Claude Code session of the corpus.

Run: ``.venv/bin/python benchmarks/one_prompt.py [--hard 80000 --soft 60000 --window 100000]``.
The spotter session before its /compact is one prompt over 138 calls peaking at 141,787
tokens; the limits are scaled to it in the ratios of "hard 160k in a 200k window". It replays
that session with turn cuts only (the policy before the step fallback) and with the default
policy, and prints one line per policy, then a JSON line: calls over the window, peak context,
compactions, orphan pairs and replay seconds of each.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compaction.engine.claude_code import parse_transcript
from compaction.engine.messages import check_pairs
from compaction.engine.replay import replay
from compaction.engine.strategies import Policy
from compaction.engine.tokens import attribute_usage, calibrate

# The copy of the real-trace corpus the tests read (its SOURCES.md names each file's origin).
CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "corpus"
SESSION = CORPUS / "claude_code" / "spotter" / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--soft", type=int, default=60_000)
    parser.add_argument("--hard", type=int, default=80_000)
    parser.add_argument("--window", type=int, default=100_000)
    args = parser.parse_args()
    transcript = parse_transcript(SESSION)
    (observed,) = transcript.compactions
    messages = [m for m in transcript.messages if m.seq < observed.seq]
    counter = calibrate(messages)
    measured = attribute_usage(messages, counter)
    default = Policy(soft_limit=args.soft, hard_limit=args.hard, context_window=args.window)
    out: dict[str, Any] = {"calls": sum(m.role == "assistant" for m in messages)}
    for label, policy in (
        ("turns_only", replace(default, step_fallback=False)),
        ("default", default),
    ):
        started = time.perf_counter()
        result = replay(messages, policy, counter=counter, measured=measured)
        seconds = time.perf_counter() - started
        t = result.totals
        orphans = t.orphan_pairs + len(check_pairs(list(result.final_context)))
        print(
            f"{label:<11} over window {t.overflow_calls:>3} calls · peak {t.peak_context:,} · "
            f"{t.compactions} compactions · {t.clears} clears · {orphans} orphans · "
            f"verdict {t.verdict.status}"
        )
        out[f"{label}_overflow_calls"] = t.overflow_calls
        out[f"{label}_peak_context_tokens"] = t.peak_context
        out[f"{label}_compactions"] = t.compactions
        out[f"{label}_orphan_pairs"] = orphans
        out[f"{label}_seconds"] = round(seconds, 3)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
