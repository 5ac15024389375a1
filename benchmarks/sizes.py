"""Sizes: each real compaction's drop as the product shows it, against the session's own curve.

The independent side reads each Claude Code transcript of benchmarks/data/realtraces itself:
the main chain's calls (one per ``message.id``, sidechain records left out), each call's
context (input + cache reads + cache writes), and each ``compact_boundary``. A compaction's drop
on the curve is the context of the last call before the boundary minus that of the first call
after it. The product's side imports the file into a scratch SQLite database, analyses the
session and reads each compaction's before (``compaction_tokens_before``: the harness's
``preTokens`` unless it disagrees with the calls) and after (``compaction_tokens_after``: its
``postTokens`` unless the first call after saw far more), as the compaction page shows them.

A drop is overstated when the product's exceeds the curve's; the issue's bound is 20 %. The
harness's own ``preTokens`` is measured beside it, to show what the check replaces.

    .venv/bin/python benchmarks/sizes.py

Prints one line per compaction and a final JSON line, e.g. {"compactions": 14,
"max_overstated_pct": 3.1, "over_20_pct": 0, "harness_max_overstated_pct": 510.2, ...}.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from _jsonl import json_records
from _scratch import django_on_scratch_sqlite
from money import REALTRACES, transcripts


def _context(usage: dict[str, Any]) -> int:
    return sum(
        int(usage.get(k) or 0)
        for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )


def curve_drops(path: Path) -> list[tuple[int | None, int | None, int | None]]:
    """For each boundary of the main chain: (last context before, first context after,
    preTokens). A call whose usage is all zeros reports nothing and is skipped."""
    order: list[str] = []
    context: dict[str, int] = {}
    boundaries: list[tuple[int, int | None]] = []  # (calls seen so far, preTokens)
    for record in json_records(path):
        if record.get("isSidechain"):
            continue
        if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
            meta = record.get("compactMetadata") or {}
            pre = meta.get("preTokens") if isinstance(meta, dict) else None
            boundaries.append((len(order), pre if isinstance(pre, int) else None))
            continue
        message = record.get("message")
        if record.get("type") != "assistant" or not isinstance(message, dict):
            continue
        usage = message.get("usage")
        if message.get("model") == "<synthetic>" or not isinstance(usage, dict):
            continue
        size = _context(usage)
        if size == 0:
            continue
        key = str(message.get("id") or record.get("uuid"))
        if key not in context:
            order.append(key)
        context[key] = size
    out = []
    for seen, pre in boundaries:
        before = context[order[seen - 1]] if seen else None
        after = context[order[seen]] if seen < len(order) else None
        out.append((before, after, pre))
    return out


def _overstated(drop: int | None, truth: int) -> float | None:
    if drop is None or truth <= 0:
        return None
    return (drop - truth) / truth * 100


def main() -> None:
    django_on_scratch_sqlite("sawtooth-sizes-")
    from compaction import pipeline, sizes
    from compaction.models import CompactionSpan
    from sessions.importers import claude_code
    from sessions.models import AgentSession, CompactionEvent, Project

    ours: list[float] = []
    harness: list[float] = []
    for n, path in enumerate(transcripts()):
        drops = curve_drops(path)
        if not drops:
            continue
        project = Project.objects.create(name=f"sizes-{n}")
        claude_code.claude_code_import(project=project, paths=[path])
        root = AgentSession.objects.get(project=project, parent__isnull=True)
        pipeline.session_analyse(session_id=root.pk)
        events = list(CompactionEvent.objects.filter(session=root).order_by("seq", "pk"))
        if len(events) != len(drops):
            print(f"{path.name}: {len(events)} compactions, the file has {len(drops)}")
            continue
        for i, (event, (before, after, pre)) in enumerate(zip(events, drops, strict=True)):
            if before is None or after is None:
                continue
            span = CompactionSpan.objects.filter(event=event).first()
            shown = sizes.compaction_tokens_before(event, span)
            shown_after = sizes.compaction_tokens_after(event, span).tokens
            truth = before - after
            drop = None
            if shown.tokens is not None and shown_after is not None:
                drop = shown.tokens - shown_after
            ours_pct = _overstated(drop, truth)
            harness_pct = _overstated(None if pre is None else pre - after, truth)
            if ours_pct is not None:
                ours.append(ours_pct)
            if harness_pct is not None:
                harness.append(harness_pct)
            print(
                f"{path.relative_to(REALTRACES)} #{i}: curve {before:,} -> {after:,}; shown "
                f"{shown.tokens} ({shown.source}) -> {shown_after}; preTokens {pre}; "
                f"drop overstated {ours_pct:+.1f} % (harness {harness_pct:+.1f} %)"
                if ours_pct is not None and harness_pct is not None
                else f"{path.relative_to(REALTRACES)} #{i}: shown {shown.tokens} -> {shown_after}",
                file=sys.stderr,
            )
    print(
        json.dumps(
            {
                "compactions": len(ours),
                "max_overstated_pct": round(max(ours, default=0.0), 1),
                "over_20_pct": sum(1 for p in ours if p > 20),
                "harness_max_overstated_pct": round(max(harness, default=0.0), 1),
                "harness_over_20_pct": sum(1 for p in harness if p > 20),
            }
        )
    )


if __name__ == "__main__":
    main()
