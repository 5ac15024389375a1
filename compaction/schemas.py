"""Wire shapes for derived data: curves, observed compactions, replays, experiments."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Schema
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    StringConstraints,
)

from compaction.engine.names import Stage, SummarizerName, Unit
from sessions import limits

# Policy numbers are bounded so no client-chosen value can overflow a column or a loop.
_INT_MAX = 1_000_000_000


class CurvePointOut(BaseModel):
    # A plain pydantic model, not a ninja Schema, as sessions.schemas.MessageOut: a curve has
    # a point per call, thousands in a long session.
    seq: int
    context_tokens: int
    billed_tokens: int
    fill: float
    estimated: bool


class ForecastOut(Schema):
    """The next compaction at the recent growth rate (DESIGN.md, curve ``forecast``)."""

    calls_to_compaction: int = Field(
        ..., description="Model calls until the context reaches threshold_tokens (0: there)."
    )
    minutes_to_compaction: float | None = Field(
        None, description="The same in minutes at the recent pace; null without timestamps."
    )
    threshold_tokens: int
    basis: Literal["declared_policy", "observed", "harness_default", "window"] = Field(
        description="Where the threshold comes from, in this precedence: the session's declared "
        "policy; observed (where this session, else this agent in the project, compacted "
        "before); the harness's default; the context window"
    )


class ForecastCheckOut(Schema):
    """Before the compaction at ``seq``: the calls the forecast predicted, and the real ones."""

    seq: int
    predicted_calls: int | None
    actual_calls: int


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
    forecast: ForecastOut | None = Field(
        None,
        description="Calls and minutes until the next compaction at the recent growth rate; "
        "null with too few calls since the last compaction, or when the context is not growing.",
    )
    forecast_accuracy: list[ForecastCheckOut] = Field(
        default_factory=list,
        description="For each observed compaction, what the forecast said 10 calls (or as many "
        "as the climb had) before it, and how many calls really followed.",
    )
    forecast_median_error_calls: float | None = Field(
        None,
        description="The median |predicted - actual| calls over the project's past forecasts "
        "(its newest sessions with compactions); null before any.",
    )


class Replaced(Schema):
    from_seq: int
    to_seq: int


class CompactionCallOut(Schema):
    """The model call that wrote the summary (Claude Code's ``agent-acompact-*``)."""

    context_tokens: int
    output_tokens: int
    duration_ms: int | None


class VerdictOut(Schema):
    status: Literal["ok", "warn", "bad"] = Field(
        description="bad: a failed splice or a lost rule; warn: only files or ids lost"
    )
    label: str = Field(description='As the page says it: "Failed splice · lost 2 rules"')


class NeededAgainOut(Schema):
    seq: int = Field(description="The message after the boundary that needed the fact again")
    how: Literal["reread", "reedit", "rerun", "repeated_by_user", "error_again"]


class FactOut(Schema):
    kind: Literal["probe", "task", "constraint", "decision", "file", "identifier", "next_step"]
    text: str = Field(description="As the history said it, personal data masked")
    verdict: Literal["kept", "paraphrased", "lost", "mentioned", "reloaded"] = Field(
        description="mentioned: only pasted or named, never acted on (not a loss); reloaded: "
        "the harness puts it back itself. Retention counts kept, paraphrased and lost."
    )
    needed_again: NeededAgainOut | None = Field(
        None,
        description="For a lost fact: the first sign, before the next compaction, that "
        "the session needed it again",
    )
    evidence: str = Field(description="The line that keeps it, or why none does")


class CompactionPriceOut(Schema):
    """The price of one compaction by the billed rule (``compaction/engine/pricing.py``,
    ``PRICE_RULE``), beside the tokens it saved."""

    summary_call_usd: float | None = Field(
        description="The call that wrote the summary, as logged; null when the trace holds no "
        "summary call (then total_usd counts the re-write and the rework only)."
    )
    cache_rewrite_usd: float = Field(
        description="The cache-creation tokens of the first call after the boundary, up to the "
        "new prefix's size, at their write rate less what reading them from cache would cost."
    )
    rework_usd: float | None = Field(
        description="The full price of the calls the lost facts' needed_again name, each once; "
        "null in a replay (not observable in a replay)."
    )
    total_usd: float = Field(description="summary_call_usd + cache_rewrite_usd + rework_usd.")
    tokens_saved: int | None = Field(
        description="(tokens_before - tokens_after) x the model calls until the next compaction "
        "or the session's end; null when either size is unknown."
    )
    rework_calls: int = Field(description="How many distinct calls the rework is.")
    rework_seqs: list[int] = Field(description="The seqs of those calls.")
    rewrite_tokens: int = Field(description="The cache-creation tokens counted as re-written.")
    tokens_saved_usd: float | None = Field(
        description="What the tokens saved would have cost, read from the cache on each of "
        "those calls (the saving the price is set against)."
    )
    calls_after: int = Field(description="Model calls from the boundary to the next one.")


class CompactionOut(Schema):
    seq: int
    trigger: str
    strategy: str
    tokens_before: int | None = Field(
        description="The context before the compaction: as sent or reported, else as the "
        "analysis measured it (the figure the span page shows); see tokens_before_source"
    )
    tokens_before_source: Literal["sent", "reported", "computed"] | None = None
    tokens_before_note: str | None = Field(
        None,
        description="Set when the harness's figure disagreed with the session's own calls "
        "(the same as the boundary before, or more than 20 % above the last call's context) "
        "and the computed size replaced it: the figure reported and why.",
    )
    tokens_after: int | None = Field(
        description="The context after the compaction: as sent or reported, else as the "
        "analysis measured it (the figure the span page shows); see tokens_after_source"
    )
    tokens_after_source: Literal["sent", "reported", "computed"] | None = None
    tokens_after_note: str | None = Field(
        None,
        description="Set when the harness's figure was more than 20 % below the context of "
        "the first call after the compaction (it left out the system prompt and tools) and "
        "that call's context replaced it: the figure reported and why.",
    )
    summary: str
    replaced: Replaced | None
    error: str | None
    duration_ms: int | None
    failed: bool | None = Field(None, description="Set once analysed: a failed splice.")
    failure_reason: str | None = None
    retention_score: float | None = None
    lost: list[str] = Field(default_factory=list, description="The texts of the lost facts")
    facts: list[FactOut] = Field(
        default_factory=list, description="Set once analysed: every fact and its verdict"
    )
    verdict: VerdictOut | None = Field(
        None, description="Set once analysed: the span page's one health verdict."
    )
    compaction_call: CompactionCallOut | None = Field(
        None, description="The call that wrote the summary, or null when the trace has none."
    )
    compaction_call_note: str | None = Field(
        None, description="Set when the call's logged figures cannot be trusted, and why."
    )
    price: CompactionPriceOut | None = Field(
        None,
        description="What the compaction cost (summary call, cache re-write, rework) beside "
        "the tokens it saved; null when the calls around it carry no usage.",
    )


class PolicyIn(Schema):
    """A compaction policy; every field is optional and defaults to the engine's ``Policy``.

    The names (stages, summarizers, unit) are the engine's enums, so an unknown one is a 400
    naming the field; the limits' rules (soft below hard, ...) are checked by the engine.
    """

    model_config = ConfigDict(extra="forbid")

    soft_limit: StrictInt | None = Field(
        default=None, le=_INT_MAX, description="Tokens; above it, clear old tool results."
    )
    hard_limit: StrictInt | None = Field(
        default=None, le=_INT_MAX, description="Tokens; above it, drop or summarize."
    )
    keep_last: StrictInt | None = Field(
        default=None, le=_INT_MAX, description="Newest units kept verbatim."
    )
    pin_head: StrictBool | None = Field(default=None, description="Keep system and first prompt.")
    older_than: StrictInt | None = Field(
        default=None, le=_INT_MAX, description="Newest units whose tool results stay."
    )
    unit: Unit | None = Field(
        default=None, description="Cut only at prompts (turn) or also mid-turn (step)."
    )
    step_fallback: StrictBool | None = Field(
        default=None,
        description="With unit=turn, cut at step boundaries when a turn is too big to cut around.",
    )
    summarizer: SummarizerName | None = None
    stages: list[Stage] | None = Field(
        default=None, description="Applied in order once hard_limit is crossed."
    )
    context_window: StrictInt | None = Field(
        default=None, le=_INT_MAX, description="Default: the session's window."
    )
    summary_reserve: StrictInt | None = Field(default=None, le=_INT_MAX)
    max_rounds: StrictInt | None = Field(default=None, le=_INT_MAX)
    clear_step: StrictInt | None = Field(default=None, le=_INT_MAX)
    placeholder: StrictStr | None = Field(default=None, max_length=10_000)

    def to_policy_dict(self) -> dict[str, Any]:
        """The fields the client set, as plain JSON for ``Policy.from_dict``."""
        return self.model_dump(mode="json", exclude_unset=True)


class ReplayIn(Schema):
    policy: PolicyIn = Field(default_factory=lambda: PolicyIn())


class AnalysisQueued(Schema):
    queued: bool


class ReplayQueued(Schema):
    id: int
    status: str


class ReplayCostOut(Schema):
    usd: float | None = Field(
        description="The replay, its summarizer's calls included, by the rule in `rule`; null "
        "when a call's model has no price"
    )
    observed_usd: float | None = Field(description="The observed run by the same rule")
    saved_usd: float | None = Field(description="observed_usd - usd")
    summarizer_usd: float
    unpriced_calls: int
    unpriced_models: list[str]
    rule: str
    rewrite_usd: float | None = Field(
        None,
        description="The replay's compactions' cache re-writes (each new prefix written "
        "again, at its write rate less the read rate)",
    )
    observed_rewrite_usd: float | None = Field(None, description="The same for the observed run")
    compactions_usd: float | None = Field(
        None,
        description="The full price of the replay's compactions: summarizer_usd + "
        "rewrite_usd; rework is not observable in a replay",
    )
    observed_compactions_usd: float | None = Field(
        None, description="The observed run's summary calls (by the replay rule) + its re-writes"
    )
    full_usd: float | None = Field(None, description="usd + rewrite_usd: what the advice weighs")
    observed_full_usd: float | None = Field(None, description="observed_usd + observed_rewrite_usd")
    full_rule: str = ""


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
    cost: ReplayCostOut | None = None
    evals: dict[str, Any] | None = None


class ExperimentIn(Schema):
    name: str = Field("experiment", max_length=limits.EXPERIMENT_NAME_MAX)
    policies: list[PolicyIn] = Field(..., min_length=1, max_length=50)
    sessions: (
        list[Annotated[str, StringConstraints(min_length=1, max_length=limits.EXTERNAL_ID_MAX)]]
        | None
    ) = Field(
        None,
        max_length=1000,
        description="External ids; default: the project's 50 most recent sessions.",
    )
    baselines: bool = Field(
        False,
        description="Also replay the advice's baselines at the first policy's limits: clear "
        "old tool results only, and keep the last N without a summary (GET "
        "/api/v1/experiments/{id}/advice compares every policy with them)",
    )


class ExperimentOut(Schema):
    id: int
    name: str
    status: str
    runs: int
    runs_done: int
    aggregate: dict[str, Any]
    billed_usd: float | None = Field(
        None,
        description="Billed: the sum of the experiment's sessions' cost.usd (as logged, cache "
        "discounts included), never the replay rule's observed_usd",
    )


# --- policy advice -----------------------------------------------------------------------

_POLICY_DOC = "A PolicyIn object (as the replay and experiment endpoints take); {} is observed"


class LostByKindOut(Schema):
    task: int
    constraint: int
    file: int
    identifier: int
    decision: int
    next_step: int


class RetentionByKindOut(Schema):
    task: float | None
    constraint: float | None
    file: float | None
    identifier: float | None
    decision: float | None
    next_step: float | None


class AdviceRowOut(Schema):
    policy: dict[str, Any] = Field(description=_POLICY_DOC)
    label: str
    usd: float = Field(description="The total over the sessions measured")
    retention: float | None = Field(
        description="Fraction of facts kept, mean over the sessions where the policy wrote a "
        "summary; null where it wrote none (never read as 100 %)"
    )
    overflowed_sessions: int
    failed_splices: int = Field(description="Sessions with a failed splice")
    on_front: bool
    retention_by_kind: RetentionByKindOut = Field(
        description="Per kind, the fraction of checked facts kept (null: none checked)"
    )


class RecommendedOut(Schema):
    policy: dict[str, Any] = Field(description=_POLICY_DOC)
    label: str
    usd_saved: float = Field(description="Sum over sessions of the observed usd minus this one")
    usd_saved_ci: list[float] = Field(
        min_length=2, max_length=2, description="[low, high]: 90 %, bootstrap over sessions"
    )
    retention: float | None
    sessions: int
    lost_by_kind: LostByKindOut
    worst_session: str | None = Field(
        description="External id of the session with the lowest retention under it"
    )


class BaselineOut(Schema):
    policy: dict[str, Any] = Field(description=_POLICY_DOC)
    label: str
    usd: float
    retention: float | None


class NoRecommendationOut(Schema):
    reason: str = Field(
        description="Why no policy is recommended: too few sessions back it, or the saving's "
        "90 % interval includes a loss"
    )
    sessions_needed: int | None = Field(
        description="About how many sessions in all the evidence would need (null: more "
        "sessions would not make this saving certain)"
    )


class AdviceOut(Schema):
    front: list[AdviceRowOut] = Field(
        description="Pareto front of usd (lower) vs retention (higher); a policy that "
        "overflowed or failed a splice on any session is never on it"
    )
    recommended: RecommendedOut | None = Field(
        description="The front policy saving the most money whose retention is within "
        "`tolerance` of the baseline's; the baseline itself when none saves money; null when "
        "the evidence does not support one (see no_recommendation)"
    )
    no_recommendation: NoRecommendationOut | None = Field(
        None, description="Set when recommended is null: why, and the sessions it would take"
    )
    recommended_by_agent: dict[str, RecommendedOut | None]
    baseline: BaselineOut = Field(description="The observed policy")
    policies: list[AdviceRowOut] = Field(description="Every policy measured, front or not")
    sessions: int
    tolerance: float
    missing_baselines: list[str] = Field(
        description="Labels of baselines (clear old tool results only; keep the last N "
        "without a summary) not replayed, so not compared"
    )
    unpriced_sessions: int = Field(
        description="Sessions left out: a call's model has no price, so their money is unknown"
    )


class AdviceParams(Schema):
    days: int = Field(30, ge=1, le=365)
    agent: str | None = Field(None, min_length=1, max_length=limits.AGENT_MAX)
