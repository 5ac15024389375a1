"""Wire shapes for derived data: curves, observed compactions, replays, experiments."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema
from pydantic import Field


class CurvePointOut(Schema):
    seq: int
    context_tokens: int
    billed_tokens: int
    fill: float
    estimated: bool


class Curve(Schema):
    status: str = Field(..., description="Analysis status: pending, running, done or failed.")
    current: bool = Field(..., description="False while newer batches await analysis.")
    context_window: int
    points: list[CurvePointOut]
    billed_tokens_total: int = Field(
        0,
        description="Everything charged: the points' billed tokens plus the calls that wrote "
        "compaction summaries (in no point: they are not context).",
    )
    compaction_calls_billed_tokens: int = Field(
        0, description="The part of billed_tokens_total spent writing compaction summaries."
    )


class Replaced(Schema):
    from_seq: int
    to_seq: int


class CompactionCallOut(Schema):
    """The model call that wrote the summary (Claude Code's ``agent-acompact-*``)."""

    context_tokens: int
    output_tokens: int
    duration_ms: int | None


class CompactionOut(Schema):
    seq: int
    trigger: str
    strategy: str
    tokens_before: int | None
    tokens_after: int | None
    summary: str
    replaced: Replaced | None
    error: str | None
    duration_ms: int | None
    failed: bool | None = Field(None, description="Set once analysed: a failed splice.")
    failure_reason: str | None = None
    retention_score: float | None = None
    lost: list[str] = Field(default_factory=list)
    compaction_call: CompactionCallOut | None = Field(
        None, description="The call that wrote the summary, or null when the trace has none."
    )
    compaction_call_note: str | None = Field(
        None, description="Set when the call's logged figures cannot be trusted, and why."
    )


class ReplayIn(Schema):
    policy: dict[str, Any] = Field(
        default_factory=dict,
        description="soft_limit, hard_limit, keep_last, summarizer, ... (all optional)",
    )


class ReplayQueued(Schema):
    id: int
    status: str


class ReplayOut(Schema):
    id: int
    session: str
    status: str
    progress: float
    policy: dict[str, Any]
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    error: str | None
    curve: list[dict[str, Any]] | None = None
    spans: list[dict[str, Any]] | None = None
    totals: dict[str, Any] | None = None
    evals: dict[str, Any] | None = None


class ExperimentIn(Schema):
    name: str = Field("experiment", max_length=200)
    policies: list[dict[str, Any]] = Field(..., min_length=1, max_length=50)
    sessions: list[str] | None = Field(
        None, description="External ids; default: the project's 50 most recent sessions."
    )


class ExperimentOut(Schema):
    id: int
    name: str
    status: str
    runs: int
    runs_done: int
    aggregate: dict[str, Any]
