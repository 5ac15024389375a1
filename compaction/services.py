"""Writes for derived data asked for by a request: an analysis asked for, replay runs and
experiments started, a pass storing a session stopped; and the session's rows as the engine
reads them, for the passes.

The passes themselves (an analysis, a replay run) are compaction/pipeline.py's, which the
worker's tasks call. The rules live in the engine (compaction/engine/analysis.py): a pass loads
rows, converts them once, calls the engine once and stores what it returns.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from compaction import outbox, selectors
from compaction.engine import advice, analysis, evals
from compaction.engine.experiments import policy_key
from compaction.engine.messages import ObservedCompaction, usage_from_wire
from compaction.engine.names import EXTERNAL_SUMMARIZERS, SUMMARIZERS
from compaction.engine.strategies import Policy, PolicyError
from compaction.models import (
    CompactionSpan,
    Experiment,
    ReplayRun,
    ReplayStatus,
    SessionAnalysis,
    SpanOrigin,
)
from privacy import message_scan
from sessions.errors import BadRequest, TooManyRequests
from sessions.models import AgentSession, CompactionEvent, Probe, Project

logger = logging.getLogger(__name__)

DEFAULT_WINDOW = analysis.DEFAULT_WINDOW


# --- loading a session into the engine -------------------------------------------------


engine_messages = message_scan.engine_messages


def session_probes(session: AgentSession) -> list[Probe]:
    return list(Probe.objects.filter(session=session).order_by("seq", "pk"))


def engine_probes(rows: Iterable[Probe]) -> list[evals.Probe]:
    """Probe rows as the engine reads them."""
    return [evals.Probe(text=p.text, seq=p.seq) for p in rows]


def observed_compaction(event: CompactionEvent) -> ObservedCompaction:
    """A reported compaction as the engine reads it."""
    return ObservedCompaction(
        seq=event.seq,
        trigger=event.trigger,
        strategy=event.strategy,
        tokens_before=event.tokens_before,
        tokens_after=event.tokens_after,
        summary=event.summary,
        replaced_from=event.replaced_from_seq,
        replaced_to=event.replaced_to_seq,
        duration_ms=event.duration_ms,
        error=event.error or None,
        summary_seq=event.summary_seq,
        kept=event.kept,
    )


def earlier_retention(session: AgentSession) -> dict[str, analysis.EarlierRetention]:
    """The retention of the session's observed spans from the last pass, by inputs key."""
    earlier = {}
    spans = CompactionSpan.objects.filter(session=session, origin=SpanOrigin.OBSERVED)
    for details, retention in spans.values_list("details", "retention"):
        key = (details or {}).get("inputs_key")
        if not key:
            continue  # stored before spans carried their inputs key
        cost = details.get("judge_cost")
        earlier[key] = analysis.EarlierRetention(
            evals.RetentionReport(tuple(evals.RetentionItem.from_dict(i) for i in retention)),
            usage_from_wire(cost) if cost else None,
        )
    return earlier


def session_events(session: AgentSession) -> list[CompactionEvent]:
    return list(CompactionEvent.objects.filter(session=session).order_by("seq", "pk"))


def session_window(session: AgentSession) -> int:
    return selectors.session_window(session)[0]


# --- analysis ----------------------------------------------------------------------------


def analysis_request(*, session_id: int) -> None:
    """Note that the session changed and queue its analysis: one statement, and a turn sent
    once the transaction commits only when this request put the session in the queue.

    A session already waiting has its turn on the way (sent when it began waiting, or by the
    pass that ran while a batch landed, compaction/pipeline.py), and that turn's pass reads
    this batch too: a turn per request would be a spare turn for the worker to spend, per
    batch of a session that uploads faster than it is analysed."""
    began = _analysis_queue(session_id)
    if began is None:  # no row yet: created waiting, unless a pass created it meanwhile
        _, created = SessionAnalysis.objects.get_or_create(
            session_id=session_id,
            defaults={"requested_generation": 1, "queued_at": timezone.now()},
        )
        began = True if created else _analysis_queue(session_id)
    if began:
        # A turn for whichever project's analysis is next (compaction/fair.py).
        outbox.outbox_add(kind=outbox.SESSION_ANALYSE, args=[session_id])


def analysis_rerun(*, session_id: int) -> None:
    """Run a session's analysis again though nothing new arrived (a person asked, from its
    page, the API or ``manage.py reanalyze``): a request like an upload's, so the page shows
    the pass waiting and running as it does after a batch, and the alert rules run after it."""
    with transaction.atomic():
        analysis_request(session_id=session_id)


def _analysis_queue(session_id: int) -> bool | None:
    """Ask the session's analysis for the next generation, queued since now unless it waits
    already: True when it began waiting with this call, None when it has no row."""
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    table = connection.ops.quote_name(SessionAnalysis._meta.db_table)
    with connection.cursor() as cursor:
        # The row as this UPDATE leaves it (its own lock: a claim clearing queued_at in
        # between is seen), so "began waiting" cannot be lost to a worker taking it up.
        cursor.execute(
            f"UPDATE {table} SET requested_generation = requested_generation + 1,"  # noqa: S608 (a model's table)
            " queued_at = COALESCE(queued_at, %s) WHERE session_id = %s"
            " RETURNING CASE WHEN queued_at = %s THEN 1 ELSE 0 END",
            [now, session_id, now],
        )
        row = cursor.fetchone()
    return None if row is None else bool(row[0])


# The key space of the advisory lock a pass holds while it stores a session's results
# (PostgreSQL), the second key being the session's: how a delete finds the pass it would
# otherwise wait on, to stop it.
_STORING = 0x5A57


def analysis_storing_mark(session_id: int) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_STORING, session_id % 2**31])


def analysis_storing_stop(*, session_ids: Collection[int]) -> int:
    """End the database connection of a pass storing these sessions' results, so that deleting
    them does not wait on it: its transaction rolls back, and its task, retried, finds the
    session gone. Returns how many were stopped. (SQLite has one writer at a time, and the
    lock it holds is the database's: nothing to stop.)"""
    if connection.vendor != "postgresql" or not session_ids:
        return 0
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' "
            "AND classid = %s::oid AND objid = ANY(%s::oid[]) AND objsubid = 2 AND granted "
            "AND pid <> pg_backend_pid()",
            [_STORING, sorted({pk % 2**31 for pk in session_ids})],
        )
        return sum(1 for (stopped,) in cursor.fetchall() if stopped)


# --- replays -------------------------------------------------------------------------------


def policy_validate(*, session: AgentSession, raw: dict[str, Any]) -> Policy:
    """A Policy from user input; the session's window is the default context window."""
    data = {"context_window": session_window(session), **raw}
    try:
        return _policy_parse(data)
    except PolicyError as exc:
        raise BadRequest(str(exc)) from None


def _policy_parse(data: dict[str, Any]) -> Policy:
    """A Policy whose summarizer is one the engine knows (the Policy checks everything else)."""
    policy = Policy.from_dict(data)
    if policy.summarizer not in SUMMARIZERS:
        raise PolicyError(f"policy.summarizer: unknown summarizer {policy.summarizer!r}")
    return policy


def external_summarizer_check(*, project: Project, summarizer: str) -> None:
    if summarizer not in EXTERNAL_SUMMARIZERS:
        return
    if not project.allow_external_models:
        raise BadRequest(
            f"policy.summarizer: {summarizer!r} sends trace content to an external model, "
            f"which project {project.name!r} does not allow"
        )
    if not settings.ANTHROPIC_API_KEY:
        raise BadRequest(
            f"policy.summarizer: {summarizer!r} needs ANTHROPIC_API_KEY, which is not set"
        )


def _new_run(
    *, session: AgentSession, policy: Policy, user: Any, experiment: Experiment | None = None
) -> ReplayRun:
    return ReplayRun(
        session=session,
        experiment=experiment,
        policy=policy.to_dict(),
        summarizer=policy.summarizer,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


@transaction.atomic(durable=True)
def replay_run_start(
    *, session: AgentSession, policy: dict[str, Any], user: Any = None
) -> ReplayRun:
    parsed = policy_validate(session=session, raw=policy)
    external_summarizer_check(project=session.project, summarizer=parsed.summarizer)
    replay_quota_check(project=session.project, adding=1)
    run = _new_run(session=session, policy=parsed, user=user)
    run.save()
    outbox.outbox_add(kind=outbox.REPLAY_RUN_EXECUTE, args=[run.pk])
    return run


def replay_quota_check(*, project: Project, adding: int) -> None:
    """429 when ``adding`` runs would take the project over its queued-or-running quota.

    Called inside the starting transaction with the project row locked, so two concurrent
    starts cannot both squeeze under the quota.
    """
    quota = settings.REPLAY_QUOTA_PER_PROJECT
    if quota <= 0:
        return
    Project.objects.select_for_update().filter(pk=project.pk).first()
    active = ReplayRun.objects.filter(
        session__project=project, status__in=(ReplayStatus.QUEUED, ReplayStatus.RUNNING)
    ).count()
    if active + adding > quota:
        raise TooManyRequests(
            f"replays: this project has {active} replay runs queued or running and asks for "
            f"{adding} more; the quota is {quota} (REPLAY_QUOTA_PER_PROJECT), retry when "
            "some finish",
            retry_after=30,
        )


def retention_judge(*, project: Project) -> evals.Judge | None:
    """The LLM judge of retention for the project's observed and replayed spans, or None (the
    default: offline checks only). It sends trace content out, so it needs the project's
    switches for external models and for the judge, and ANTHROPIC_API_KEY."""
    if not (project.judge_retention and project.allow_external_models):
        return None
    if not settings.ANTHROPIC_API_KEY:
        return None
    from compaction.engine import anthropic

    return anthropic.AnthropicJudge(
        api_key=settings.ANTHROPIC_API_KEY,
        model=settings.ANTHROPIC_MODEL,
        base_url=settings.ANTHROPIC_BASE_URL or None,
    )


# --- experiments ---------------------------------------------------------------------------


@transaction.atomic(durable=True)
def experiment_start(
    *,
    project: Project,
    name: str,
    policies: list[dict[str, Any]],
    sessions: Sequence[AgentSession],
    user: Any = None,
    baselines: bool = False,
) -> Experiment:
    """Queue a replay of every policy over every session of the project; with ``baselines``,
    also the advice's two simplest policies at the first policy's limits (clear old tool
    results only; keep the last N without a summary), unless given already."""
    if not policies:
        raise BadRequest("policies: give at least one policy")
    if not sessions:
        raise BadRequest("sessions: no session matches")
    for index, raw in enumerate(policies):
        try:
            parsed = _policy_parse(raw)
        except PolicyError as exc:
            raise BadRequest(f"policies[{index}]: {exc}") from None
        external_summarizer_check(project=project, summarizer=parsed.summarizer)
    if baselines:
        policies = _with_baselines(policies)
    own = [session for session in sessions if session.project_id == project.pk]
    replay_quota_check(project=project, adding=len(policies) * len(own))
    experiment = Experiment.objects.create(
        project=project,
        name=name,
        policies=policies,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    runs = ReplayRun.objects.bulk_create(
        [
            _new_run(
                session=session,
                policy=policy_validate(session=session, raw=raw),
                user=user,
                experiment=experiment,
            )
            for raw in policies
            for session in own
        ]
    )
    outbox.outbox_add(kind=outbox.REPLAY_RUNS_EXECUTE, args=[run.pk for run in runs])
    return experiment


def _with_baselines(policies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    given = {policy_key(_policy_parse(p).to_dict()) for p in policies}
    extra = [
        b
        for b in advice.baseline_policies(policies[0])
        if policy_key(_policy_parse(b).to_dict()) not in given
    ]
    return [*policies, *extra]
