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
