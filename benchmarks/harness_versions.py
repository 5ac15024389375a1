"""Harness versions read exactly: the product's readers against a count by hand, on real files.

Every file under ``benchmarks/data/harness_versions/`` (real logs published on GitHub; each
folder's ``SOURCES.md`` names the repository, commit and licence) is read twice:

* by the product: the pure engine reader of its harness (``compaction.engine.codex`` /
  ``gemini``), then the curve the dashboard draws (``tokens.observed_curve``) and the
  compactions it shows;
* by ``benchmarks/harness_count.py``, which imports none of the readers.

A file is *exact* when the two agree on the calls, the curve's points (one per call, none
estimated), the context of every point, and the compactions with their before and after. The
table groups the files by harness version (Codex: ``originator`` and ``cli_version`` of its
``session_meta``; Gemini CLI, which records no version in a chat: the record's form, its
``kind`` and the month it was written) and lists each version with at least three files as
read exactly when all of its files are and at least three of them were not used while fixing
(``USED_WHILE_FIXING``). The last line is JSON, units in the keys.

    .venv/bin/python benchmarks/harness_versions.py [--data DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness_count  # noqa: E402  (the independent side: no reader inside)

from compaction.engine import codex, gemini  # noqa: E402
from compaction.engine.tokens import observed_curve  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "harness_versions"
MIN_FILES = 3
# Files that disagreed with the count before a reader fix of issue 41 and so were used while
# fixing it (SOURCES.md says what each showed): still checked, never counted as unused.
USED_WHILE_FIXING = frozenset(
    {
        "codex-agentv/92ff332928-019ed836-b1da-78f1-8a0c-e598363d10f4.jsonl.gz",
        "codex-agentv/162d1d8ad4-019eef3d-abd1-72e1-ab99-dcdb259027c5.jsonl.gz",
        "codex-agentv/8ba8f699fb-019eecb9-cc3a-73c2-814a-dd4f8ced7545.jsonl.gz",
        "codex-agentv/220e73bdf9-019f05f8-7f53-7492-a941-83098e16765c.jsonl.gz",
        "codex-agentv/34f597b72d-019f03e0-321f-7eb2-83cc-b54ecd71be23.jsonl.gz",
        "codex-moonmind/rollout-2025-11-12T17-48-11-019a7ae6-1945-7c63-98f2-210adb922af9.jsonl.gz",
        "codex-moonmind/rollout-2025-11-13T16-00-16-019a7fa9-a846-7393-8d7a-9997d08b0096.jsonl.gz",
        "codex-moonmind/rollout-2025-11-13T18-21-11-019a802a-aab1-7c31-9831-d2510c7a74a2.jsonl.gz",
        "codex-testframework/rollout-2026-02-04T20-21-23-019c2a1a-2a36-7a12-8458-72a5255e90a5.jsonl.gz",
        "codex-zoqore/rollout-2026-02-20T15-32-40-019c7cc1-2a42-7011-bc3b-24c4a1934ac6.jsonl.gz",
        "codex-zoqore/rollout-2025-11-16T23-29-58-019a9013-a57c-7252-8f75-f99631732eda.jsonl.gz",
    }
)


def _bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def product(path: Path) -> dict[str, Any]:
    """What the product reads and draws: calls, curve points, compactions, and the version."""
    data = _bytes(path)
    if data.lstrip()[:1] == b"{" and b'"sessionId"' in data[:4096]:
        chat = gemini.parse_chat_bytes(data)
        month = (chat.started_at or "")[:7]
        version = f"gemini-cli {chat.form} chat, kind {chat.meta.get('kind', '-')}, {month}"
        curve = observed_curve(chat.messages, context_window=gemini.GEMINI_WINDOW)
        compactions = [
            {"before": c.tokens_before, "after": c.tokens_after} for c in chat.compactions
        ]
        return {
            "harness": "gemini-cli",
            "version": version,
            "calls": chat.calls,
            "curve": curve,
            "compactions": compactions,
            "unknown": dict(chat.unknown),
        }
    rollout = codex.parse_rollout_bytes(data)
    meta = rollout.meta
    version = f"codex {meta.get('originator', '?')} {meta.get('cli_version', '?')}"
    curve = observed_curve(rollout.messages, context_window=rollout.context_window or 258_400)
    compactions = [
        {
            "before": c.tokens_before,
            "after": c.tokens_after,
            "summarizer_call": c.summarizer is not None,
        }
        for c in rollout.compactions
    ]
    return {
        "harness": "codex",
        "version": version,
        "calls": rollout.calls,
        "curve": curve,
        "compactions": compactions,
        "unknown": dict(rollout.unknown),
    }


def compare(path: Path) -> dict[str, Any]:
    counted = harness_count.count(path)
    name = str(path.relative_to(DATA)) if path.is_relative_to(DATA) else str(path)
    try:
        read = product(path)
    except Exception as exc:  # the reader refused the whole file: that is the finding
        return {
            "file": name,
            "unused": name not in USED_WHILE_FIXING,
            "harness": "?",
            "version": "refused",
            "calls": counted["calls"],
            "points": len(counted["points"]),
            "compactions": len(counted["compactions"]),
            "unknown": {},
            "exact": False,
            "refused": True,
            "differences": [f"refused whole: {exc}"],
        }
    points = [p.context_tokens for p in read["curve"]]
    estimated = sum(p.estimated for p in read["curve"])
    differences = []
    if read["calls"] != counted["calls"]:
        differences.append(f"calls {read['calls']} != {counted['calls']}")
    if points != counted["points"]:
        differences.append(f"points {len(points)} != {len(counted['points'])} (or a context)")
    if estimated:
        differences.append(f"{estimated} estimated points")
    if read["compactions"] != counted["compactions"]:
        differences.append(f"compactions {read['compactions']} != {counted['compactions']}")
    return {
        "file": name,
        "unused": name not in USED_WHILE_FIXING,
        "harness": read["harness"],
        "version": read["version"],
        "calls": counted["calls"],
        "points": len(counted["points"]),
        "compactions": len(counted["compactions"]),
        "unknown": read["unknown"],
        "exact": not differences,
        "refused": False,
        "differences": differences,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    started = time.perf_counter()
    files = sorted(
        p
        for p in args.data.rglob("*")
        if p.is_file() and p.name.endswith((".json.gz", ".jsonl.gz", ".json", ".jsonl"))
    )
    rows = [compare(p) for p in files]
    by_version: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_version[row["version"]].append(row)
        if not row["exact"]:
            print(f"NOT EXACT {row['file']}: {'; '.join(row['differences'])}")
    print(
        "| harness version | files (not used while fixing) | calls | curve points | "
        "compactions | exact |"
    )
    print("|---|---|---|---|---|---|")
    listed = []
    all_exact = 0
    for version, group in sorted(by_version.items()):
        exact = sum(r["exact"] for r in group)
        unused = sum(r["unused"] for r in group)
        print(
            f"| {version} | {len(group)} ({unused}) | {sum(r['calls'] for r in group):,} | "
            f"{sum(r['points'] for r in group):,} | {sum(r['compactions'] for r in group)} | "
            f"{exact}/{len(group)} |"
        )
        all_exact += exact == len(group)
        if unused >= MIN_FILES and exact == len(group):
            listed.append(version)
    print(
        json.dumps(
            {
                "files_count": len(rows),
                "files_exact_count": sum(r["exact"] for r in rows),
                "files_unused_exact_count": sum(r["exact"] and r["unused"] for r in rows),
                "versions_count": len(by_version),
                "versions_all_files_exact_count": all_exact,
                "versions_read_exactly_count": len(listed),  # and 3+ files not used while fixing
                "calls_count": sum(r["calls"] for r in rows),
                "curve_points_count": sum(r["points"] for r in rows),
                "compactions_count": sum(r["compactions"] for r in rows),
                "files_refused_count": sum(r["refused"] for r in rows),
                "seconds": round(time.perf_counter() - started, 2),
            }
        )
    )


if __name__ == "__main__":
    main()
