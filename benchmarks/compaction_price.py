"""The full price of each compaction on the real Claude Code sessions in
benchmarks/data/realtraces (issue 43 item 5): its summary call, the cache re-write after it and
the rework its lost facts caused, against what the tokens it saved would have cost.

Imports every transcript into a scratch SQLite database, analyses each session as the worker
does (verdicts and ``needed_again`` included), and reads the product's price of each compaction
(``compaction.prices.compaction_prices``: the figures ``GET /compactions`` gives as
``price``). Prints one line per session with compactions, and a final JSON line, e.g.
{"sessions": 9, "compactions": 12, "priced_compactions": 12, "total_usd": ...,
"rewrite_share_of_savings_pct": ..., "rework_share_of_savings_pct": ..., "seconds": ...}.

The share of the savings is each price over ``tokens_saved_usd`` (the tokens saved, read from
the cache on every call until the next compaction: what they would have cost).

    .venv/bin/python benchmarks/compaction_price.py [--verbose]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from _scratch import django_on_scratch_sqlite

ROOT = Path(__file__).resolve().parent.parent
REALTRACES = ROOT / "benchmarks/data/realtraces"


def _pct(part: float, whole: float) -> float | None:
    return round(part / whole * 100, 1) if whole else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verbose", action="store_true", help="one line per compaction too")
    args = parser.parse_args(argv)
    django_on_scratch_sqlite("sawtooth-price-")
    from compaction import pipeline, prices, selectors
    from sessions.importers import claude_code
    from sessions.models import AgentSession, Message, Project

    started = time.perf_counter()
    manifest = json.loads((REALTRACES / "manifest.json").read_text())
    paths = [
        REALTRACES / e["file"]
        for e in manifest
        if "Claude Code" in str(e.get("harness", "")) and (REALTRACES / e["file"]).exists()
    ]
    project = Project.objects.create(name="price")
    claude_code.claude_code_import(project=project, paths=paths)
    sessions = list(AgentSession.objects.filter(project=project).order_by("pk"))
    for session in sessions:
        pipeline.session_analyse(session_id=session.pk)
    sums = {
        "summary_calls_usd": 0.0,
        "summary_calls_logged": 0,
        "cache_rewrite_usd": 0.0,
        "rework_usd": 0.0,
        "rework_calls": 0,
        "total_usd": 0.0,
        "tokens_saved": 0,
        "tokens_saved_usd": 0.0,
    }
    compactions = priced = measured = 0
    for session in sessions:
        events = list(selectors.observed_compactions(session))
        if not events:
            continue
        found = prices.compaction_prices(session, events)
        compactions += len(events)
        total = prices.compaction_prices_total(found)
        if total is None:
            print(f"{session.external_id}: {len(events)} compactions, none priced", file=sys.stderr)
            continue
        measured += 1
        priced += total.priced
        for event in events:
            price = found[event.pk]
            if price is None:
                continue
            sums["summary_calls_logged"] += price.summary_call_usd is not None
            sums["rework_calls"] += price.rework_calls
            if args.verbose:
                # the rework calls by their first tool_use id, for a check by hand in the raw file
                tools = {
                    m.seq: next((b.get("id") for b in m.content if b.get("type") == "tool_use"), "")
                    for m in Message.objects.filter(session=session, seq__in=price.rework_seqs)
                    if isinstance(m.content, list)
                }
                print(
                    f"  #{event.seq}: {json.dumps(price.to_dict())} rework tool_use ids: "
                    f"{[tools.get(seq) for seq in price.rework_seqs]}",
                    file=sys.stderr,
                )
        sums["summary_calls_usd"] += total.summary_calls_usd
        sums["cache_rewrite_usd"] += total.cache_rewrite_usd
        sums["rework_usd"] += total.rework_usd
        sums["total_usd"] += total.total_usd
        sums["tokens_saved"] += total.tokens_saved
        sums["tokens_saved_usd"] += total.tokens_saved_usd
        print(
            f"{session.external_id}: {total.priced}/{total.compactions} compactions priced, "
            f"${total.total_usd:.4f} (summary calls ${total.summary_calls_usd:.4f}, cache "
            f"re-writes ${total.cache_rewrite_usd:.4f}, rework ${total.rework_usd:.4f}); saved "
            f"{total.tokens_saved:,} tokens = ${total.tokens_saved_usd:.4f} from cache; re-write "
            f"{_pct(total.cache_rewrite_usd, total.tokens_saved_usd)} % and rework "
            f"{_pct(total.rework_usd, total.tokens_saved_usd)} % of the saving",
            file=sys.stderr,
        )
    saved = float(sums["tokens_saved_usd"])
    print(
        json.dumps(
            {
                "sessions": measured,
                "compactions": compactions,
                "priced_compactions": priced,
                "summary_calls_logged": sums["summary_calls_logged"],
                "summary_calls_usd": round(float(sums["summary_calls_usd"]), 4),
                "cache_rewrite_usd": round(float(sums["cache_rewrite_usd"]), 4),
                "rework_usd": round(float(sums["rework_usd"]), 4),
                "rework_calls": sums["rework_calls"],
                "total_usd": round(float(sums["total_usd"]), 4),
                "tokens_saved": sums["tokens_saved"],
                "tokens_saved_usd": round(saved, 4),
                "summary_share_of_savings_pct": _pct(float(sums["summary_calls_usd"]), saved),
                "rewrite_share_of_savings_pct": _pct(float(sums["cache_rewrite_usd"]), saved),
                "rework_share_of_savings_pct": _pct(float(sums["rework_usd"]), saved),
                "total_share_of_savings_pct": _pct(float(sums["total_usd"]), saved),
                "seconds": round(time.perf_counter() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
