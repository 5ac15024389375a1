"""Money: the product's cost of the real sessions in benchmarks/data/realtraces against an
independent per-call computation.

The independent side reads each Claude Code transcript itself (one call per ``message.id``, the
harness writing one record per content block; ``<synthetic>`` records are failed requests, no
call) and prices every call with its own copy of Anthropic's list prices, at the call's date,
with cache reads at 0.1x input and cache writes at 1.25x (5-minute) or 2x (1-hour) input as the
usage's ``cache_creation`` split records them. It imports none of the product's pricing code.
The product's side imports each file into a scratch SQLite database and reads the session's
``with_subagents_usd`` (a transcript's inline sidechains are its subagents).

Prints one line per file and a final JSON line, e.g. {"files": 15, "sessions_usd_independent":
..., "sessions_usd_product": ..., "max_abs_error_pct": 0.0, "total_error_pct": 0.0}.

    .venv/bin/python benchmarks/money.py [--transcripts all|manifest|unused]

``unused``: the transcripts added after the money module was built (for the verdicts), which
it was never checked against while being written.
"""

from __future__ import annotations

import json
import sys
from datetime import date
from pathlib import Path
from typing import Any

from _jsonl import json_records
from _scratch import django_on_scratch_sqlite

ROOT = Path(__file__).resolve().parent.parent
REALTRACES = ROOT / "benchmarks/data/realtraces"

# USD per million tokens, (from date, input, output) per model family: Anthropic's list prices.
# Cache reads are 0.1x input, 5-minute writes 1.25x, 1-hour writes 2x.
LIST_PRICES: dict[str, list[tuple[date, float, float]]] = {
    "claude-opus-4-6": [(date(2025, 1, 1), 5.0, 25.0)],
    "claude-opus-4-5": [(date(2025, 1, 1), 5.0, 25.0)],
    "claude-opus-4-1": [(date(2025, 1, 1), 15.0, 75.0)],
    "claude-opus-4": [(date(2025, 1, 1), 15.0, 75.0)],
    "claude-sonnet-4-6": [(date(2025, 1, 1), 3.0, 15.0)],
    "claude-sonnet-4-5": [(date(2025, 1, 1), 3.0, 15.0)],
    "claude-sonnet-4": [(date(2025, 1, 1), 3.0, 15.0)],
    "claude-3-7-sonnet": [(date(2025, 1, 1), 3.0, 15.0)],
    "claude-haiku-4-5": [(date(2025, 1, 1), 1.0, 5.0)],
    "claude-3-5-haiku": [(date(2024, 1, 1), 0.8, 4.0)],
}


def _family(model: str) -> str | None:
    """The price family of a model id: itself, or itself with a date suffix (``-20250929``).
    ``claude-opus-4-8`` is not ``claude-opus-4``: a model the list does not have is unpriced."""
    for key in sorted(LIST_PRICES, key=len, reverse=True):
        suffix = model[len(key) + 1 :]
        if model == key or (model.startswith(key + "-") and len(suffix) == 8 and suffix.isdigit()):
            return key
    return None


def _usd(family: str, stamp: str, usage: dict[str, Any]) -> float:
    day = date.fromisoformat(stamp[:10]) if stamp[:10] else date.today()
    rate_in, rate_out = next(
        ((i, o) for since, i, o in reversed(LIST_PRICES[family]) if since <= day),
        LIST_PRICES[family][0][1:],
    )
    written = int(usage.get("cache_creation_input_tokens") or 0)
    split = usage.get("cache_creation") if isinstance(usage.get("cache_creation"), dict) else {}
    one_hour = min(int((split or {}).get("ephemeral_1h_input_tokens") or 0), written)
    return (
        int(usage.get("input_tokens") or 0) * rate_in
        + int(usage.get("output_tokens") or 0) * rate_out
        + int(usage.get("cache_read_input_tokens") or 0) * rate_in * 0.1
        + (written - one_hour) * rate_in * 1.25
        + one_hour * rate_in * 2.0
    ) / 1e6


def independent_usd(path: Path) -> tuple[float, int, int]:
    """USD of every call in a transcript, the calls priced and the calls without a price.

    A call's top-level usage holds its own sampling steps. Another model's inference inside
    it (an ``advisor_message`` in ``usage.iterations``, naming its model) is billed apart, at
    that model's price: a call of its own here."""
    calls: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for record in json_records(path):
        message = record.get("message")
        if record.get("type") != "assistant" or not isinstance(message, dict):
            continue
        model, usage = message.get("model"), message.get("usage")
        if not isinstance(model, str) or model == "<synthetic>" or not isinstance(usage, dict):
            continue
        key = str(message.get("id") or record.get("uuid"))
        calls[key] = (model, str(record.get("timestamp") or ""), usage)  # the last record wins
    billed: list[tuple[str, str, dict[str, Any]]] = []
    for model, stamp, usage in calls.values():
        billed.append((model, stamp, usage))
        for it in usage.get("iterations") or []:
            if isinstance(it, dict) and it.get("type") not in ("message", "compaction"):
                billed.append((str(it.get("model") or model), stamp, it))
    usd, priced, unpriced = 0.0, 0, 0
    for model, stamp, usage in billed:
        counted = ("input_tokens", "output_tokens", "cache_read_input_tokens")
        if (
            sum(int(usage.get(k) or 0) for k in counted)
            + int(usage.get("cache_creation_input_tokens") or 0)
            == 0
        ):
            continue  # 0/0: no usage, not priced
        family = _family(model)
        if family is None:
            unpriced += 1
            continue
        usd += _usd(family, stamp, usage)
        priced += 1
    return usd, priced, unpriced


def transcripts(which: str = "all") -> list[Path]:
    """The Claude Code transcripts of realtraces: ``manifest`` (those the money module was
    built with), ``unused`` (added later, for the verdicts; the module never saw them) or
    ``all``. A file stored both plain and gzipped counts once."""
    manifest = json.loads((REALTRACES / "manifest.json").read_text())
    listed = [REALTRACES / entry["file"] for entry in manifest]
    listed = [p for p in listed if p.exists() and "Claude Code" in _harness(manifest, p)]
    if which == "manifest":
        return listed
    known = {_stem(p) for p in listed}
    others = sorted(
        p
        for p in REALTRACES.rglob("*.jsonl*")
        if p.suffix in (".jsonl", ".gz")
        and not p.name.startswith("rollout-")
        and _stem(p) not in known
        and not (p.suffix == ".jsonl" and p.with_name(p.name + ".gz").exists())
    )
    return others if which == "unused" else listed + others


def _stem(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(".gz"))


def _harness(manifest: list[dict[str, Any]], path: Path) -> str:
    for entry in manifest:
        if REALTRACES / entry["file"] == path:
            return str(entry.get("harness", ""))
    return ""


def main() -> None:
    which = "all"
    if "--transcripts" in sys.argv:
        which = sys.argv[sys.argv.index("--transcripts") + 1]
    if which not in ("all", "manifest", "unused"):
        sys.exit("--transcripts takes all, manifest or unused")
    django_on_scratch_sqlite("sawtooth-money-")
    from compaction import selectors
    from sessions.importers import claude_code
    from sessions.models import AgentSession, Project

    errors: list[float] = []
    ours_total = theirs_total = 0.0
    files = 0
    for n, path in enumerate(transcripts(which)):
        theirs, priced, unpriced = independent_usd(path)
        if priced == 0:
            continue
        project = Project.objects.create(name=f"money-{n}")
        claude_code.claude_code_import(project=project, paths=[path])
        roots = list(AgentSession.objects.filter(project=project, parent__isnull=True))
        costs = selectors.session_costs(roots)
        ours = sum(c.with_subagents_usd for c in costs.values())
        error = (ours - theirs) / theirs * 100 if theirs else 0.0
        errors.append(abs(error))
        ours_total += ours
        theirs_total += theirs
        files += 1
        print(
            f"{path.relative_to(REALTRACES)}: {priced} calls ({unpriced} unpriced), "
            f"independent ${theirs:.4f}, product ${ours:.4f}, error {error:+.4f} %",
            file=sys.stderr,
        )
    total_error = (ours_total - theirs_total) / theirs_total * 100 if theirs_total else 0.0
    print(
        json.dumps(
            {
                "files": files,
                "sessions_usd_independent": round(theirs_total, 4),
                "sessions_usd_product": round(ours_total, 4),
                "max_abs_error_pct": round(max(errors, default=0.0), 4),
                "total_error_pct": round(total_error, 4),
            }
        )
    )


if __name__ == "__main__":
    main()
