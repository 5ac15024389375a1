"""Benchmark: the alert rules over a generated 10,000-call session with many compactions.

Run: ``.venv/bin/python benchmarks/alerts.py [--calls 10000] [--every 150] [--seed 7]``. The
last line printed is JSON: ``{"calls": ..., "compactions": ..., "inputs_seconds": ...,
"evaluate_seconds": ..., "findings": [...]}``. ``inputs_seconds`` times what the service
computes from the messages (the session's analysis, which checks the tool pairs after each
compaction, and the context-length error scan); ``evaluate_seconds`` times the rules alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.replay import generate
from compaction.engine import alerts
from compaction.engine.analysis import analyse
from compaction.engine.messages import ObservedCompaction
from compaction.engine.tokens import observed_curve


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--every", type=int, default=150, help="calls between compactions")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    messages = generate(args.calls, args.seed)
    curve = observed_curve(messages)
    # A compaction right before every Nth call, replacing everything since the previous one.
    starts = [p.seq for p in curve[args.every :: args.every]]

    began = time.perf_counter()
    observed = [
        ObservedCompaction(seq=seq, trigger="auto", summary="Goal: continue.") for seq in starts
    ]
    spans = analyse(messages, observed).spans
    compactions = [
        alerts.Compaction(
            seq=span.seq,
            tokens_before=150_000,
            tokens_after=30_000,
            orphans_after=span.orphans_after,
        )
        for span in spans
    ]
    errors = alerts.context_length_errors(messages)
    inputs = alerts.SessionInputs(
        200_000,
        tuple(alerts.Call(p.seq, p.context_tokens, p.estimated) for p in curve),
        tuple(compactions),
        tuple(errors),
    )
    inputs_seconds = time.perf_counter() - began

    began = time.perf_counter()
    findings = alerts.evaluate(inputs)
    evaluate_seconds = time.perf_counter() - began
    print(
        json.dumps(
            {
                "calls": len(curve),
                "messages": len(messages),
                "compactions": len(compactions),
                "inputs_seconds": round(inputs_seconds, 3),
                "evaluate_seconds": round(evaluate_seconds, 4),
                "findings": [f.rule for f in findings],
            }
        )
    )


if __name__ == "__main__":
    main()
