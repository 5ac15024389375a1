"""The price of a real session's compactions computed by hand from its raw Claude Code
transcript, importing none of the product: the independent side of the check in
docs/how-it-works.md ("The price of a compaction").

It reads the JSONL itself: one call per ``message.id`` (Claude Code writes one record per
content block; the last record's usage wins), no ``<synthetic>`` records (failed requests),
no sidechain records (subagents are sessions of their own); each ``compact_boundary`` record
is a compaction with its ``preTokens``. For each compaction, with its own copy of Anthropic's
list prices (cache read 0.1x input, 5-minute write 1.25x, 1-hour write 2x):

* tokens after = the context of the first call after it (input + cache read + cache write);
* tokens before = ``preTokens``, unless it repeats the boundary before's or is more than 20 %
  above the last call's context before it (then that context, as DESIGN.md says);
* cache re-write = the first call's cache writes (up to the tokens after) at their write rate
  less the read rate;
* rework = the full price of the calls holding the tool_use ids given with ``--rework``
  (which calls needed a lost fact again is the verdicts' finding, checked against labels by
  benchmarks/verdicts.py; here only their price is computed);
* tokens saved = (before - after) x the calls until the next boundary or the end, and what
  they would have cost read from the cache.

    .venv/bin/python benchmarks/compaction_price_by_hand.py FILE [--rework N:TOOLU_ID ...]

``N`` is the compaction's index in the file (0 first). Prints one JSON line per compaction and
a final JSON line with the session's totals.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _jsonl import json_records  # a reader of JSON lines, nothing of the product

# USD per million tokens (input, output), Anthropic's list prices, as benchmarks/money.py has them.
LIST_PRICES = {
    "claude-opus-4-6": (5.0, 25.0),
    "claude-opus-4-5": (5.0, 25.0),
    "claude-opus-4-1": (15.0, 75.0),
    "claude-opus-4": (15.0, 75.0),
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-sonnet-4-5": (3.0, 15.0),
    "claude-sonnet-4": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
}


def rates(model: str) -> tuple[float, float]:
    for key in sorted(LIST_PRICES, key=len, reverse=True):
        if model == key or (model.startswith(key + "-") and model[len(key) + 1 :].isdigit()):
            return LIST_PRICES[key]
    raise SystemExit(f"no list price for {model}")


def records(path: Path) -> Iterator[dict[str, Any]]:
    """The main thread's records (a subagent's sidechain is its own session)."""
    return (r for r in json_records(path) if not r.get("isSidechain"))


def n(usage: dict[str, Any], key: str) -> int:
    return int(usage.get(key) or 0)


def one_hour(usage: dict[str, Any]) -> int:
    split = usage.get("cache_creation") or {}
    return min(
        int(split.get("ephemeral_1h_input_tokens") or 0), n(usage, "cache_creation_input_tokens")
    )


def full_price(call: dict[str, Any]) -> float:
    usage = call["usage"]
    rate_in, rate_out = rates(call["model"])
    written, hour = n(usage, "cache_creation_input_tokens"), one_hour(usage)
    return (
        n(usage, "input_tokens") * rate_in
        + n(usage, "output_tokens") * rate_out
        + n(usage, "cache_read_input_tokens") * rate_in * 0.1
        + (written - hour) * rate_in * 1.25
        + hour * rate_in * 2.0
    ) / 1e6


def context(call: dict[str, Any]) -> int:
    u = call["usage"]
    return (
        n(u, "input_tokens") + n(u, "cache_read_input_tokens") + n(u, "cache_creation_input_tokens")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="the price of a session's compactions, by hand")
    parser.add_argument("file", type=Path)
    parser.add_argument("--rework", nargs="*", default=[], help="N:TOOLU_ID, one per call")
    args = parser.parse_args()
    rework: dict[int, set[str]] = {}
    for item in args.rework:
        index, tool = item.split(":", 1)
        rework.setdefault(int(index), set()).add(tool)

    # the timeline: calls (by message.id, in order of first appearance) and boundaries
    timeline: list[tuple[str, Any]] = []
    calls: dict[str, dict[str, Any]] = {}
    for rec in records(args.file):
        if rec.get("type") == "system" and rec.get("subtype") == "compact_boundary":
            meta = rec.get("compactMetadata") or {}
            timeline.append(("boundary", meta.get("preTokens")))
            continue
        message = rec.get("message")
        if rec.get("type") != "assistant" or not isinstance(message, dict):
            continue
        model, usage = message.get("model"), message.get("usage")
        if model == "<synthetic>" or not isinstance(usage, dict):
            continue
        key = str(message.get("id") or rec.get("uuid"))
        tools = {b.get("id") for b in message.get("content") or [] if isinstance(b, dict)}
        if key not in calls:
            calls[key] = {"model": model, "usage": usage, "tools": set()}
            timeline.append(("call", key))
        calls[key]["usage"] = usage  # the last record of the response wins
        calls[key]["tools"] |= tools - {None}

    totals = {
        "cache_rewrite_usd": 0.0,
        "rework_usd": 0.0,
        "total_usd": 0.0,
        "tokens_saved": 0,
        "tokens_saved_usd": 0.0,
    }
    previous_pre = None
    index = -1
    for at, (kind, value) in enumerate(timeline):
        if kind != "boundary":
            continue
        index += 1
        before_calls = [calls[k] for kd, k in timeline[:at] if kd == "call"]
        window: list[dict[str, Any]] = []
        for kd, k in timeline[at + 1 :]:
            if kd == "boundary":
                break
            window.append(calls[k])
        first = window[0]
        after = context(first)
        pre = value
        last = context(before_calls[-1]) if before_calls else None
        before = pre
        if last is not None and (
            pre is None or (pre == previous_pre and pre != last) or pre > last * 1.2
        ):
            before = last
        previous_pre = pre
        rate_in, _ = rates(first["model"])
        written = min(n(first["usage"], "cache_creation_input_tokens"), after)
        hour = min(one_hour(first["usage"]), written)
        rewrite = ((written - hour) * (1.25 - 0.1) + hour * (2.0 - 0.1)) * rate_in / 1e6
        named = [c for c in window if c["tools"] & rework.get(index, set())]
        rework_usd = sum(full_price(c) for c in named)
        saved_tokens = (before - after) * len(window)
        saved_usd = sum((before - after) * rates(c["model"])[0] * 0.1 / 1e6 for c in window)
        row = {
            "compaction": index,
            "tokens_before": before,
            "pre_tokens": pre,
            "tokens_after": after,
            "calls_after": len(window),
            "rewrite_tokens": written,
            "cache_rewrite_usd": round(rewrite, 6),
            "rework_calls": len(named),
            "rework_usd": round(rework_usd, 6),
            "total_usd": round(rewrite + rework_usd, 6),
            "tokens_saved": saved_tokens,
            "tokens_saved_usd": round(saved_usd, 6),
        }
        print(json.dumps(row))
        for key in totals:
            totals[key] += row[key]
    print(json.dumps({"compactions": index + 1, **{k: round(v, 6) for k, v in totals.items()}}))


if __name__ == "__main__":
    main()
