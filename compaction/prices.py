"""The price of each compaction (DESIGN.md "Contracts added in the fourth step"): an observed
one's from the calls around it, a replayed one's cache re-write as modelled, a session's total,
and a policy's money over an experiment's runs. The rule is the engine's
(``compaction.engine.pricing.compaction_prices``); this module loads the rows and calls it once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC

from django.conf import settings

from compaction import selectors, sizes
from compaction.engine import pricing
from compaction.engine.experiments import policy_key
from compaction.engine.messages import NOT_A_MODEL, usage_from_wire
from compaction.engine.summary_call import summary_call_from_record
from compaction.models import CompactionSpan, Experiment, ReplayStatus, SessionAnalysis
from sessions.models import AgentSession, CompactionEvent, Message, MessageRole, message_usage

PRICE_RULE = pricing.PRICE_RULE


def _summary_call(event: CompactionEvent, session: AgentSession) -> pricing.PricedCall | None:
    """The logged call that wrote the event's summary, as the money module prices it."""
    raw = (event.kept or {}).get("compaction_call")
    if summary_call_from_record(raw) is None or not isinstance(raw, dict):
        return None
    model = raw.get("model") if isinstance(raw.get("model"), str) else None
    counts = pricing.counts_from_wire(raw.get("usage"))
    on = selectors.day_of(raw.get("finished_at")) or selectors.day_of(raw.get("started_at"))
    return pricing.PricedCall(model or session.model or None, pricing.TokenCounts(), counts, on=on)


def _responses(session: AgentSession) -> list[pricing.Response]:
    """The session's model calls in seq order, each with what it was charged (None: no usage,
    or 0 in and 0 out), its model and its date."""
    rows = (
        Message.objects.filter(session=session, role=MessageRole.ASSISTANT)
        .exclude(model__in=NOT_A_MODEL)
        .order_by("seq")
        .values_list(
            "seq",
            "model",
            "timestamp",
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
            "iterations",
            "cache_creation_1h_input_tokens",
        )
    )
    started = session.started_at.astimezone(UTC).date() if session.started_at else None
    out = []
    for seq, model, moment, *columns in rows:
        usage = message_usage(*columns)
        counts = pricing.counts_of(usage_from_wire(usage)) if usage is not None else None
        on = moment.astimezone(UTC).date() if moment else started
        out.append(pricing.Response(seq, model or session.model or None, counts, on))
    return out


def compaction_prices(
    session: AgentSession, events: Sequence[CompactionEvent] | None = None
) -> dict[int, pricing.CompactionPrice | None]:
    """The price of each observed compaction (by event pk): its summary call, the cache
    re-write after it and the rework its lost facts caused, beside the tokens it saved
    (``pricing.compaction_prices``, :data:`pricing.PRICE_RULE`)."""
    found = list(events) if events is not None else list(selectors.observed_compactions(session))
    if not found:
        return {}
    boundaries = []
    for event in found:
        span: CompactionSpan | None = getattr(event, "span", None)
        after = span.tokens_after if span is not None else event.tokens_after
        needed = tuple(
            int(item["needed_again"]["seq"])
            for item in (selectors.span_facts(span) if span is not None else [])
            if item["needed_again"] is not None
        )
        boundaries.append(
            pricing.Boundary(
                seq=event.seq,
                tokens_before=sizes.compaction_tokens_before(event, span).tokens,
                tokens_after=after,
                summary_call=_summary_call(event, session),
                needed_again=needed,
                prefix_tokens=event.tokens_after,
            )
        )
    table = pricing.price_table(settings.MODEL_PRICES)
    prices = pricing.compaction_prices(_responses(session), boundaries, table)
    return {event.pk: price for event, price in zip(found, prices, strict=True)}


@dataclass(frozen=True)
class SpanPrice:
    """What the compaction page shows of a span's price: an observed one's from its calls
    (``price``), a replayed one's cache re-write as modelled (its rework is not observable)."""

    price: pricing.CompactionPrice | None
    replayed: bool = False
    replay_rewrite_usd: float | None = None
    rewrite_tokens: int | None = None


def span_price(span: CompactionSpan) -> SpanPrice:
    """The price of the compaction a span shows."""
    session = span.session
    if span.replay_id is not None:
        table = pricing.price_table(settings.MODEL_PRICES)
        price = pricing.price_for(session.model or None, table, selectors.session_day(session))
        usd = selectors.modelled_rewrites([span], price, selectors.writes_one_hour(session))
        return SpanPrice(None, True, usd, span.tokens_after)
    if span.event_id is None:
        return SpanPrice(None)
    return SpanPrice(compaction_prices(session).get(span.event_id))


@dataclass(frozen=True)
class PricesTotal:
    """The price of a session's compactions, summed (the priced ones), for its header."""

    total_usd: float
    summary_calls_usd: float
    cache_rewrite_usd: float
    rework_usd: float
    tokens_saved: int
    tokens_saved_usd: float
    priced: int  # compactions with a price
    compactions: int


def compaction_prices_total(
    prices: Mapping[int, pricing.CompactionPrice | None],
) -> PricesTotal | None:
    """None when no compaction of the session has a price."""
    known = [p for p in prices.values() if p is not None]
    if not known:
        return None
    return PricesTotal(
        total_usd=round(sum(p.total_usd for p in known), 6),
        summary_calls_usd=round(sum(p.summary_call_usd or 0.0 for p in known), 6),
        cache_rewrite_usd=round(sum(p.cache_rewrite_usd for p in known), 6),
        rework_usd=round(sum(p.rework_usd or 0.0 for p in known), 6),
        tokens_saved=sum(p.tokens_saved or 0 for p in known),
        tokens_saved_usd=round(sum(p.saved_usd or 0.0 for p in known), 6),
        priced=len(known),
        compactions=len(prices),
    )


def _add(so_far: float | None, part: float | None) -> float | None:
    return None if so_far is None or part is None else round(so_far + part, 6)


@dataclass(frozen=True)
class PolicyMoney:
    """One policy row's money over its finished runs; None when a run of it has calls of a
    model with no price."""

    saved_usd: float | None  # observed minus replayed, each with its compactions' re-writes
    compactions_usd: float | None  # the policy's summary calls and cache re-writes


def experiment_money(experiment: Experiment) -> dict[str, PolicyMoney]:
    """Money per policy row (its ``label``), summed over its finished runs: the saving the
    advice weighs (the replay rule plus each run's cache re-writes, ``full_usd``) and the
    full price of the policy's compactions (rework is not observable in a replay)."""
    saved: dict[str, float | None] = {}
    spent: dict[str, float | None] = {}
    analyses: dict[int, SessionAnalysis | None] = {}
    runs = experiment.runs.filter(status=ReplayStatus.DONE).select_related("session")
    for run in runs:
        if run.session_id not in analyses:
            analyses[run.session_id] = selectors.analysis_for(run.session)
        money = selectors.replay_money(run, analyses[run.session_id])
        label = policy_key(run.policy)
        part = None
        if money is not None and money.full_usd is not None and money.observed_full_usd is not None:
            part = round(money.observed_full_usd - money.full_usd, 6)
        saved[label] = _add(saved.get(label, 0.0), part)
        spent[label] = _add(spent.get(label, 0.0), money.compactions_usd if money else None)
    return {label: PolicyMoney(saved[label], spent[label]) for label in saved}
