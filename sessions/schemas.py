"""The ingest wire format, v1: the contract agents code against (see DESIGN.md).

Fields may be added; the documented shape must keep being accepted.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Schema
from pydantic import BaseModel, Field, PrivateAttr, field_validator, model_validator

from compaction.engine.names import Trigger
from sessions import limits
from sessions.limits import DURATION_MS_MAX, MESSAGE_MODEL_MAX, SEQ_MAX, TOKENS_MAX

Role = Literal["system", "user", "assistant"]

# Every limit below is read from sessions/limits.py, as the models' columns are.

# Required fields per known block type; unknown block types are kept as sent.
_BLOCK_FIELDS: dict[str, dict[str, tuple[type, ...]]] = {
    "text": {"text": (str,)},
    "tool_use": {"id": (str,), "name": (str,), "input": (dict,)},
    "tool_result": {"tool_use_id": (str,)},
    "thinking": {"thinking": (str,)},
    "redacted_thinking": {"data": (str,)},
    "compaction": {"content": (str,)},
    "image": {"source": (dict,)},
}
_TYPE_NAMES = {str: "a string", dict: "an object", list: "a list", bool: "a boolean"}


def _check_block(index: int, block: Any) -> None:
    where = f"[{index}]"
    if not isinstance(block, dict):
        raise ValueError(f"{where}: a content block must be an object with a 'type'")
    kind = block.get("type")
    if not isinstance(kind, str) or not kind:
        raise ValueError(f"{where}.type: required, a string such as 'text' or 'tool_use'")
    for field, types in _BLOCK_FIELDS.get(kind, {}).items():
        if not isinstance(block.get(field), types):
            raise ValueError(
                f"{where}.{field}: required for a {kind} block, {_TYPE_NAMES[types[0]]}"
            )
    if kind == "tool_result":
        body = block.get("content", "")
        if not isinstance(body, str | list):
            raise ValueError(f"{where}.content: a string or a list of blocks")
        if not isinstance(block.get("is_error", False), bool):
            raise ValueError(f"{where}.is_error: a boolean")


class Iteration(Schema):
    model_config = {"extra": "allow"}
    type: str | None = None
    input_tokens: int = Field(0, ge=0, le=TOKENS_MAX)
    output_tokens: int = Field(0, ge=0, le=TOKENS_MAX)
    cache_read_input_tokens: int = Field(0, ge=0, le=TOKENS_MAX)
    cache_creation_input_tokens: int = Field(0, ge=0, le=TOKENS_MAX)
    model: str | None = Field(
        None,
        max_length=MESSAGE_MODEL_MAX,
        description="Another model's inference inside the call (an advisor_message): the "
        "model it ran on, whose price it is billed at.",
    )

    def stored(self) -> dict[str, Any]:
        """The iteration as the message row keeps it (no ``model`` key when none is named)."""
        out = self.model_dump(mode="json")
        if out.get("model") is None:
            out.pop("model", None)
        return out


class CacheCreation(Schema):
    """Anthropic's split of a call's cache writes: 5-minute and 1-hour (priced higher)."""

    model_config = {"extra": "allow"}
    ephemeral_5m_input_tokens: int = Field(0, ge=0, le=TOKENS_MAX)
    ephemeral_1h_input_tokens: int = Field(0, ge=0, le=TOKENS_MAX)


class Usage(Schema):
    model_config = {"extra": "allow"}
    input_tokens: int = Field(0, ge=0, le=TOKENS_MAX)
    output_tokens: int = Field(0, ge=0, le=TOKENS_MAX)
    cache_read_input_tokens: int | None = Field(0, ge=0, le=TOKENS_MAX)
    cache_creation_input_tokens: int | None = Field(0, ge=0, le=TOKENS_MAX)
    cache_creation: CacheCreation | None = Field(
        None,
        description="Anthropic's split of cache_creation_input_tokens between the 5-minute "
        "and the 1-hour cache; 1-hour writes are priced at the 1-hour rate.",
    )
    iterations: list[Iteration] | None = None

    @model_validator(mode="after")
    def _split_within_total(self) -> Usage:
        split = self.cache_creation
        if split is None:
            return self
        parts = split.ephemeral_5m_input_tokens + split.ephemeral_1h_input_tokens
        if not self.cache_creation_input_tokens:
            self.cache_creation_input_tokens = parts
        elif split.ephemeral_1h_input_tokens > self.cache_creation_input_tokens:
            raise ValueError(
                "cache_creation.ephemeral_1h_input_tokens: more than cache_creation_input_tokens"
            )
        return self

    @property
    def one_hour_writes(self) -> int:
        """The cache writes to the 1-hour cache (0 when the usage gives no split)."""
        return self.cache_creation.ephemeral_1h_input_tokens if self.cache_creation else 0


def _reports_nothing(usage: Usage) -> bool:
    counted = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_input_tokens,
        usage.cache_creation_input_tokens,
        *(
            n
            for it in usage.iterations or []
            for n in (
                it.input_tokens,
                it.output_tokens,
                it.cache_read_input_tokens,
                it.cache_creation_input_tokens,
            )
        ),
    )
    return not any(counted)


class SessionIn(Schema):
    agent: str | None = Field(None, max_length=limits.AGENT_MAX)
    model: str | None = Field(None, max_length=limits.SESSION_MODEL_MAX)
    context_window: int | None = Field(None, gt=0, le=TOKENS_MAX)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    metadata: dict[str, Any] | None = None


class MessageIn(Schema):
    seq: int = Field(..., ge=0, le=SEQ_MAX)
    role: Role
    content: str | list[Any] = Field(
        ..., description="A string, or Anthropic-shaped content blocks."
    )
    timestamp: datetime | None = None
    usage: Usage | None = None
    model: str | None = Field(
        None,
        max_length=MESSAGE_MODEL_MAX,
        description="The model that wrote this response, when it is not the session's (a "
        "harness that falls back from one model to another). Each call is priced at its own "
        'model; "<synthetic>" marks a message the harness wrote for a failed request.',
    )

    @field_validator("content")
    @classmethod
    def _blocks_are_well_formed(cls, content: str | list[Any]) -> str | list[Any]:
        if isinstance(content, list):
            for index, block in enumerate(content):
                _check_block(index, block)
        return content

    @model_validator(mode="after")
    def _zero_usage_is_no_usage(self) -> MessageIn:
        # A proxy that passes no counts reports 0 in and 0 out: that is no usage (the call is
        # estimated), never an empty context drawn at 0 (DESIGN.md "Money and sizes").
        if self.usage is not None and _reports_nothing(self.usage):
            self.usage = None
        return self

    def blocks(self) -> list[dict[str, Any]]:
        """The content as a list of blocks: a plain string is one text block."""
        if isinstance(self.content, str):
            return [{"type": "text", "text": self.content}]
        return self.content

    # The blocks' canonical JSON and the content hash, when a reader made both from this very
    # content already (the prompt hashed to follow a conversation's context): ingest takes
    # them instead of serializing and hashing the message a second time.
    _canonical: tuple[str, str] | None = PrivateAttr(default=None)

    def canonical_known(self) -> tuple[str, str] | None:
        return self._canonical

    def canonical_keep(self, canonical: tuple[str, str]) -> None:
        self._canonical = canonical


class Replaced(Schema):
    from_seq: int = Field(..., ge=0, le=SEQ_MAX)
    to_seq: int = Field(..., ge=0, le=SEQ_MAX)

    @model_validator(mode="after")
    def _ordered(self) -> Replaced:
        if self.to_seq < self.from_seq:
            raise ValueError("to_seq must not be smaller than from_seq")
        return self


class CompactionIn(Schema):
    seq: int = Field(
        ..., ge=0, le=SEQ_MAX, description="First message the agent sent after compacting."
    )
    trigger: Trigger = Trigger.UNKNOWN
    strategy: str = Field("", max_length=limits.STRATEGY_MAX)
    tokens_before: int | None = Field(None, ge=0, le=TOKENS_MAX)
    tokens_after: int | None = Field(None, ge=0, le=TOKENS_MAX)
    summary: str = ""
    summary_seq: int | None = Field(
        None,
        ge=0,
        le=SEQ_MAX,
        description="Seq of the message that carries the summary, if the trace has one.",
    )
    replaced: Replaced | None = None
    kept: dict[str, Any] | None = None
    duration_ms: int | None = Field(None, ge=0, le=DURATION_MS_MAX)
    error: str | None = None


class ProbeIn(Schema):
    seq: int = Field(..., ge=0, le=SEQ_MAX)
    text: str = Field(..., min_length=1, max_length=limits.PROBE_TEXT_MAX)
    check: str = Field("", max_length=limits.PROBE_CHECK_MAX)


class EventBatch(Schema):
    session: SessionIn | None = None
    messages: list[MessageIn] = Field(default_factory=list)
    compactions: list[CompactionIn] = Field(default_factory=list)
    probes: list[ProbeIn] = Field(default_factory=list)


class Accepted(Schema):
    received: int = Field(..., description="Messages stored by this request.")
    duplicates: int = Field(..., description="Identical resends, ignored.")


class Error(Schema):
    error: str = Field(..., description="What was wrong, naming the field.")
    bad_messages: list[int] | None = Field(
        None,
        description="On a refused event batch: the indexes in messages[] that were bad; "
        "drop those and resend the others.",
    )
    bad_compactions: list[int] | None = Field(
        None, description="On a refused event batch: the indexes in compactions[] that were bad."
    )
    bad_probes: list[int] | None = Field(
        None, description="On a refused event batch: the indexes in probes[] that were bad."
    )


class Deleted(Schema):
    external_id: str
    rows: int = Field(..., description="Rows deleted: the session and everything derived.")


class ModelCostOut(Schema):
    model: str
    calls: int
    usd: float | None = Field(description="null: MODEL_PRICES has no price for the model")


class CostOut(Schema):
    usd: float | None = Field(
        description="The session's own calls, each priced at its own model, compaction calls "
        "included; null when no call reported usage or no model has a price"
    )
    by_model: list[ModelCostOut]
    compaction_calls_usd: float = Field(description="The part of usd spent compacting")
    unpriced_calls: int = Field(description="Calls of a model with no price: not guessed")
    with_subagents_usd: float | None
    reported_usd: float | None = Field(
        None, description="What the harness itself reported, when it did"
    )


class SessionOut(Schema):
    external_id: str
    title: str
    agent: str
    model: str
    context_window: int = Field(
        description="The window the session is measured against (never null: see "
        "context_window_source)"
    )
    context_window_source: Literal["sent", "reported", "model", "computed"] = Field(
        "sent",
        description="sent: the client or the trace said; model: the product's window "
        "for the session's model",
    )
    cost: CostOut | None = None
    started_at: datetime | None
    ended_at: datetime | None
    metadata: dict[str, Any]
    message_count: int
    compaction_count: int
    created_at: datetime
    updated_at: datetime


class SessionList(Schema):
    count: int
    offset: int
    limit: int
    sessions: list[SessionOut]


class MessageOut(BaseModel):
    # A plain pydantic model, not a ninja Schema: a page holds up to 1,000 of them, and a
    # Schema's per-instance wrapper costs some 50 µs each (built from values, never from rows).
    seq: int
    role: str
    content: list[Any]
    timestamp: datetime | None
    usage: dict[str, Any] | None
    model: str | None = None


class MessagePage(Schema):
    count: int
    offset: int
    limit: int
    messages: list[MessageOut]


class SearchHitOut(Schema):
    kind: str = Field(description="message, summary or session")
    session: str = Field(description="external id of the session")
    session_title: str
    seq: int | None = Field(description="the message (or the compaction's first seq after it)")
    role: str
    snippet: str = Field(description="plain text around the hits")
    highlights: list[tuple[int, int]] = Field(description="[start, end) of each hit in snippet")


class SearchResults(Schema):
    q: str
    kind: str
    count: int
    count_capped: bool = Field(description="true when there are more than count matches")
    offset: int
    limit: int
    items: list[SearchHitOut]
    refused: str | None = Field(
        None,
        description="Why the query was not run: it is itself a person's identifier, and "
        "search never looks inside personal data (then count is 0)",
    )
