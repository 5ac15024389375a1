"""Count a harness's log by hand: plain ``json``, none of the product's readers.

The independent side of ``benchmarks/harness_versions.py``: what a person reading the raw
file would count, written from the harnesses' own format notes, never from the product's code.
For each file: the model calls, the context each call saw (the curve's points), and the
compactions with the context before and after each.

Codex rollout (JSON lines of ``{timestamp, type, payload}``):

* a call is an ``event_msg`` ``token_count`` whose ``info.total_token_usage.total_tokens``
  differs from the count before it (Codex repeats counts, and writes a synthetic one around a
  compaction with the total unchanged; a resumed session's new process starts the total
  again, lower); its context is ``info.last_token_usage.input_tokens`` (cached tokens are
  inside it);
* a compaction is a ``compacted`` line; a call with no ``response_item`` of its own between the
  count before it and that line is the summarizer's (not a point of the curve); in a rollout
  that writes a call's count before its items (CLI 0.5x: the first growing count is followed
  by assistant items before any other growing count), a call's items are those after its
  count, so the summarizer's is the count with no item after it before that line;
* before = the last curve point's context before the line, after = the first one after it.

Gemini CLI single-JSON chat (``{sessionId, projectHash, messages}``):

* a call is a ``gemini`` message whose ``tokens`` are not all zero; its context is
  ``tokens.input + tokens.tool``;
* a compaction is an ``info`` message saying "compressed from[:] X to Y tokens" and/or a user
  message holding ``<state_snapshot>`` (one where both stand together, no call between).

    .venv/bin/python benchmarks/harness_count.py FILE...
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

COMPRESSED = re.compile(r"compressed from:? ([\d,]+) to ([\d,]+) tokens")


def _bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


_ASSISTANT = {"reasoning", "function_call", "custom_tool_call", "local_shell_call"}


def _counts_first(lines: list[dict[str, Any]]) -> bool:
    """Whether the first growing count comes before its items (they follow it at once)."""
    seen_count = False
    for line in lines:
        payload = line.get("payload") if isinstance(line.get("payload"), dict) else {}
        kind = payload.get("type")
        if line.get("type") == "response_item" and (
            kind in _ASSISTANT or (kind == "message" and payload.get("role") == "assistant")
        ):
            return seen_count
        if kind == "token_count" and isinstance(payload.get("info"), dict):
            if seen_count:
                return False  # two counts with no item between: a copied history
            seen_count = True
    return False


def count_codex(data: bytes) -> dict[str, Any]:
    points: list[int] = []
    calls = 0
    compactions: list[dict[str, Any]] = []
    best = -1
    item_since_count = False
    pending: int | None = None  # a call with no item of its own: a point unless a compaction
    waiting: list[dict[str, Any]] = []  # compactions still missing the context after them

    def point(context: int) -> None:
        points.append(context)
        for c in waiting:
            c["after"] = context
        waiting.clear()

    lines = [json.loads(raw) for raw in data.split(b"\n") if raw.strip()]
    counts_first = _counts_first(lines)
    for line in lines:
        kind = line.get("type")
        payload = line.get("payload") if isinstance(line.get("payload"), dict) else {}
        if kind == "response_item":
            if pending is not None:
                point(pending)
                pending = None
            item_since_count = True
        elif kind == "event_msg" and payload.get("type") == "token_count":
            info = payload.get("info")
            if not isinstance(info, dict):
                continue
            total = (info.get("total_token_usage") or {}).get("total_tokens") or 0
            if total == best:
                continue
            best = total
            calls += 1
            context = (info.get("last_token_usage") or {}).get("input_tokens") or 0
            if pending is not None:
                point(pending)
                pending = None
            if item_since_count and not counts_first:
                point(context)
            else:
                pending = context
            item_since_count = False
        elif kind == "compacted":
            compactions.append(
                {
                    "before": points[-1] if points else None,
                    "after": None,
                    "summarizer_call": pending is not None,
                }
            )
            waiting.append(compactions[-1])
            pending = None
            item_since_count = False
    if pending is not None:
        point(pending)
    return {"calls": calls, "points": points, "compactions": compactions}


def count_gemini(data: bytes) -> dict[str, Any]:
    record = json.loads(data)
    points: list[int] = []
    compactions: list[dict[str, Any]] = []
    open_one: dict[str, Any] | None = None
    for m in record["messages"]:
        text = m.get("content")
        if isinstance(text, list):
            text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
        text = text if isinstance(text, str) else ""
        said = COMPRESSED.search(text) if m["type"] == "info" else None
        snapshot = m["type"] == "user" and "<state_snapshot>" in text
        if said or snapshot:
            if open_one is None or open_one["calls_after"]:
                open_one = {"before": points[-1] if points else None, "after": None}
                open_one["calls_after"] = 0
                compactions.append(open_one)
            if said:
                open_one["before"] = int(said.group(1).replace(",", ""))
                open_one["after"] = int(said.group(2).replace(",", ""))
        tokens = m.get("tokens") if m["type"] == "gemini" else None
        if isinstance(tokens, dict) and any(tokens.values()):
            context = tokens["input"] + tokens.get("tool", 0)
            points.append(context)
            if open_one is not None and not open_one["calls_after"]:
                open_one["after"] = open_one["after"] or context
                open_one["calls_after"] = 1
    for c in compactions:
        c.pop("calls_after", None)
    return {"calls": len(points), "points": points, "compactions": compactions}


def count(path: Path) -> dict[str, Any]:
    data = _bytes(path)
    head = data.lstrip()[:1]
    if head == b"{" and b'"messages"' in data[:4096] and b'"sessionId"' in data[:4096]:
        return {"harness": "gemini-cli", **count_gemini(data)}
    return {"harness": "codex", **count_codex(data)}


if __name__ == "__main__":
    for name in sys.argv[1:]:
        counted = count(Path(name))
        points = counted["points"]
        print(
            json.dumps(
                {
                    "file": name,
                    "calls": counted["calls"],
                    "points": len(points),
                    "context_sum_tokens": sum(points),
                    "compactions": counted["compactions"],
                }
            )
        )
