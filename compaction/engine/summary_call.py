"""The model call that wrote a compaction's summary: what it cost, which compaction it
belongs to, and whether the output count a harness logged for it can be believed.

Claude Code makes that call as a subagent (``agent-acompact-<id>.jsonl``) and writes the
``compact_boundary`` right after it returns. The call's prompt points at the boundary's
``logicalParentUuid``; when those uuids are missing, the call that finished just before the
boundary is the one (time order). Its tokens are billed, never context: they belong in the
billed series only (DESIGN.md "Two token series, never mixed").

Claude Code logs the usage it has when the stream starts, so a 15,000-character summary can
show 6 output tokens; :func:`output_tokens_note` says so instead of passing the number on.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

# Fewer characters per output token than this is not text any tokenizer produces; a logged
# count below summary_chars / this is too low to be the real count.
MAX_CHARS_PER_OUTPUT_TOKEN = 12.0
# What English prose and code usually take, for the estimate the note gives.
TYPICAL_CHARS_PER_TOKEN = 4.0
# Below this length a summary is too short to judge its token count by.
MIN_JUDGED_CHARS = 400
# How long before its boundary the summary call may have finished and still be matched by time.
MATCH_WINDOW_MS = 60_000
# A boundary can be stamped a little before the call's last line is written.
MATCH_SLACK_MS = 2_000


def millis_between(start: str | None, end: str | None) -> int | None:
    """Milliseconds from one ISO timestamp to another, or None when either is missing/bad.

    >>> millis_between("2026-02-12T14:48:36.518Z", "2026-02-12T14:48:36.922Z")
    404
    """
    if not start or not end:
        return None
    try:
        delta = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    except ValueError:
        return None
    return round(delta.total_seconds() * 1000)


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(int(value), 0)


@dataclass(frozen=True)
class SummaryCall:
    """The cost of one summarising call."""

    context_tokens: int
    output_tokens: int
    duration_ms: int | None
    # Already billed inside a call of the curve (a server-side compaction iteration): adding
    # it to a session's billed total again would count it twice.
    in_curve: bool = False

    @property
    def billed_tokens(self) -> int:
        return self.context_tokens + self.output_tokens

    def to_dict(self) -> dict[str, Any]:
        """The API shape (DESIGN.md): context, output and duration, nothing else."""
        return {
            "context_tokens": self.context_tokens,
            "output_tokens": self.output_tokens,
            "duration_ms": self.duration_ms,
        }


def summary_call_from_record(raw: Any) -> SummaryCall | None:
    """Read what an importer recorded of the call (``usage``, and ``duration_ms`` or
    ``started_at``/``finished_at``); None when there is no usage to read.

    >>> summary_call_from_record({"usage": {"input_tokens": 3,
    ...     "cache_read_input_tokens": 17842, "cache_creation_input_tokens": 121689,
    ...     "output_tokens": 8}, "started_at": "2026-02-12T14:47:09.231Z",
    ...     "finished_at": "2026-02-12T14:48:36.518Z"})
    SummaryCall(context_tokens=139534, output_tokens=8, duration_ms=87287, in_curve=False)
    >>> summary_call_from_record({"usage": None}) is None
    True
    """
    if not isinstance(raw, Mapping):
        return None
    usage = raw.get("usage")
    if not isinstance(usage, Mapping):
        return None
    context = sum(
        _count(usage, key)
        for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
    duration = raw.get("duration_ms")
    if isinstance(duration, bool) or not isinstance(duration, int) or duration < 0:
        started, finished = raw.get("started_at"), raw.get("finished_at")
        duration = millis_between(
            started if isinstance(started, str) else None,
            finished if isinstance(finished, str) else None,
        )
        if duration is not None and duration < 0:
            duration = None
    return SummaryCall(
        context, _count(usage, "output_tokens"), duration, raw.get("in_curve") is True
    )


def output_tokens_note(*, output_tokens: int, summary_chars: int) -> str | None:
    """Why a logged output count cannot be the real one, or None when it is plausible.

    >>> output_tokens_note(output_tokens=3500, summary_chars=14915) is None
    True
    >>> output_tokens_note(output_tokens=6, summary_chars=14915)[:40]
    'Logged output tokens are too low: 6 for '
    """
    if summary_chars < MIN_JUDGED_CHARS:
        return None
    least = math.ceil(summary_chars / MAX_CHARS_PER_OUTPUT_TOKEN)
    if output_tokens >= least:
        return None
    typical = math.ceil(summary_chars / TYPICAL_CHARS_PER_TOKEN)
    return (
        f"Logged output tokens are too low: {output_tokens:,} for a summary of "
        f"{summary_chars:,} characters, which takes at least {least:,} tokens (about "
        f"{typical:,} at {TYPICAL_CHARS_PER_TOKEN:g} characters a token). The harness logged "
        "the count from the start of the stream, so billed tokens and cost are understated."
    )


@dataclass(frozen=True)
class CallRef:
    """What matching needs of a candidate call."""

    key: str
    prompt_parent_uuid: str | None
    finished_at: str | None


@dataclass(frozen=True)
class Match:
    key: str
    by: Literal["uuid", "time"]
    gap_ms: int | None  # how long before the boundary the call finished


def match_summary_call(
    *,
    logical_parent_uuid: str | None,
    timestamp: str | None,
    calls: Sequence[CallRef],
    claimed: Collection[str] = (),
) -> Match | None:
    """The call that wrote a boundary's summary: the one whose prompt points at the
    boundary's ``logicalParentUuid``; else the unclaimed call that finished nearest before
    the boundary, within :data:`MATCH_WINDOW_MS`; else None.

    >>> calls = [CallRef("a", None, "2026-02-12T14:48:36.518Z")]
    >>> match_summary_call(logical_parent_uuid="x", timestamp="2026-02-12T14:48:36.922Z",
    ...                    calls=calls)
    Match(key='a', by='time', gap_ms=404)
    """
    linked = [c for c in calls if c.prompt_parent_uuid == logical_parent_uuid]
    if logical_parent_uuid is not None and linked:
        call = next((c for c in linked if c.key not in claimed), None)
        if call is None:
            return None  # its own call was taken: never borrow another by time
        return Match(call.key, "uuid", millis_between(call.finished_at, timestamp))
    best: Match | None = None
    for call in calls:
        if call.key in claimed:
            continue
        gap = millis_between(call.finished_at, timestamp)
        if gap is None or gap < -MATCH_SLACK_MS or gap > MATCH_WINDOW_MS:
            continue
        if best is None or abs(gap) < abs(best.gap_ms or 0):
            best = Match(call.key, "time", gap)
    return best
