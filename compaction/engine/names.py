"""The closed lists of names the engine, the API, the forms and the database share.

Each list lives here once; the policy schema, the forms' choices, the model's choices and the
importers read it from here.

>>> Trigger("auto") is Trigger.AUTO
True
>>> sorted(EXTERNAL_SUMMARIZERS)
['anthropic', 'server_compaction']
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "EXTERNAL_SUMMARIZERS",
    "STAGES",
    "SUMMARIZERS",
    "TRIGGERS",
    "UNITS",
    "Stage",
    "SummarizerName",
    "Trigger",
    "Unit",
    "path_segment_problem",
    "trigger_name",
]


class Stage(StrEnum):
    """One step a policy may take when a limit is crossed, in the order given."""

    CLEAR_TOOL_RESULTS = "clear_tool_results"
    DROP_TURNS = "drop_turns"
    SUMMARIZE = "summarize"
    SLIDING_WINDOW = "sliding_window"


class SummarizerName(StrEnum):
    """Who writes a replay's summaries: offline, or an Anthropic model (content leaves)."""

    EXTRACTIVE = "extractive"
    ANTHROPIC = "anthropic"
    SERVER_COMPACTION = "server_compaction"


class Unit(StrEnum):
    """Where a policy may cut: only before a prompt, or also before any model call."""

    TURN = "turn"
    STEP = "step"


class Trigger(StrEnum):
    """Why a harness compacted."""

    AUTO = "auto"
    MANUAL = "manual"
    THRESHOLD = "threshold"
    UNKNOWN = "unknown"


STAGES: tuple[str, ...] = tuple(s.value for s in Stage)
SUMMARIZERS: tuple[str, ...] = tuple(s.value for s in SummarizerName)
UNITS: tuple[str, ...] = tuple(u.value for u in Unit)
TRIGGERS: tuple[str, ...] = tuple(t.value for t in Trigger)
# Summarizers that send trace content to an external model: a project must allow it.
EXTERNAL_SUMMARIZERS: frozenset[str] = frozenset(
    {SummarizerName.ANTHROPIC.value, SummarizerName.SERVER_COMPACTION.value}
)


def trigger_name(value: str | None) -> str:
    """A known trigger name, or ``unknown`` for anything a source calls otherwise.

    >>> trigger_name("threshold"), trigger_name("compact_boundary"), trigger_name(None)
    ('threshold', 'unknown', 'unknown')
    """
    return value if value in TRIGGERS else Trigger.UNKNOWN.value


def path_segment_problem(external_id: str) -> str | None:
    """Why a session id cannot be one segment of an API path, or None: the one rule the API,
    the importers and the Recorder apply, so an id is refused alike at every door instead of
    stored and then unreadable (a slash ends the segment, a dot segment is resolved away).

    >>> path_segment_problem("../../etc/passwd")
    "'../../etc/passwd' holds '/' or '..'; an id is one path segment"
    >>> path_segment_problem("run-42") is None
    True
    """
    if external_id in (".", ".."):
        return f"{external_id!r} is not an id (a path cannot carry it)"
    if "/" in external_id or ".." in external_id:
        return f"{external_id[:80]!r} holds '/' or '..'; an id is one path segment"
    return None
