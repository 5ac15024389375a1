"""Pure-Python compaction engine: messages, turns, tokens, strategies, replay, evals.

Importing this package must never import Django: an agent harness can use it on its own.
The names below are its public face; everything else is reachable through the submodules.

>>> from compaction.engine import Message, TextBlock, Usage, analyse
>>> ms = [Message(0, "user", (TextBlock("hi"),)),
...       Message(1, "assistant", (TextBlock("yo"),), usage=Usage(input_tokens=1000))]
>>> analyse(ms, [], context_window=10_000).peak.fill
0.1
"""

from compaction.engine.analysis import DEFAULT_WINDOW, Analysis, ObservedSpan, analyse
from compaction.engine.claude_code import Transcript, parse_transcript
from compaction.engine.evals import (
    Probe,
    RetentionReport,
    pair_validity,
    retention,
    rework_signals,
    splice_effectiveness,
)
from compaction.engine.experiments import (
    ExperimentAggregate,
    RunOutcome,
    experiment_aggregate,
    policy_key,
)
from compaction.engine.messages import (
    Message,
    ObservedCompaction,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Turn,
    Usage,
    WireError,
    is_prompt,
    message_from_wire,
    message_to_wire,
    messages_from_wire,
    turns,
)
from compaction.engine.names import Stage, SummarizerName, Trigger, Unit
from compaction.engine.replay import ReplayResult
from compaction.engine.sections import summary_sections
from compaction.engine.session_replay import (
    ReplayedSpan,
    ReplayEvals,
    SessionReplay,
    replay_session,
)
from compaction.engine.strategies import Policy, PolicyError, compact
from compaction.engine.summarizer_choice import summarizer_from_name
from compaction.engine.summarizers import Summary
from compaction.engine.tokens import (
    CharCounter,
    CurvePoint,
    billed_tokens,
    calibrate,
    context_size,
    observed_curve,
)

__all__ = [
    "DEFAULT_WINDOW",
    "Analysis",
    "CharCounter",
    "CurvePoint",
    "ExperimentAggregate",
    "Message",
    "ObservedCompaction",
    "ObservedSpan",
    "Policy",
    "PolicyError",
    "Probe",
    "ReplayEvals",
    "ReplayResult",
    "ReplayedSpan",
    "RetentionReport",
    "RunOutcome",
    "SessionReplay",
    "Stage",
    "SummarizerName",
    "Summary",
    "TextBlock",
    "ToolResultBlock",
    "ToolUseBlock",
    "Transcript",
    "Trigger",
    "Turn",
    "Unit",
    "Usage",
    "WireError",
    "analyse",
    "billed_tokens",
    "calibrate",
    "compact",
    "context_size",
    "experiment_aggregate",
    "is_prompt",
    "message_from_wire",
    "message_to_wire",
    "messages_from_wire",
    "observed_curve",
    "pair_validity",
    "parse_transcript",
    "policy_key",
    "replay_session",
    "retention",
    "rework_signals",
    "splice_effectiveness",
    "summarizer_from_name",
    "summary_sections",
    "turns",
]
