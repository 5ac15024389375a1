"""Reads for policy advice: the outcomes of finished replays, fed once to the engine's rule
(compaction/engine/advice.py), for an experiment or for a project's recent sessions.

Per session the baseline is the observed run: its money by the same rule as a replay's
(``selectors.replay_money``'s ``full_usd``: the replay rule, summary calls included, plus each
compaction's cache re-write, so the advice weighs the full price of a policy's compactions),
its retention the worst observed span's, overflow from the observed curve. A session whose
calls have a model without a price is left out (its money is unknown), and said so in
``unpriced_sessions``.

Nothing is replayed here: the project advice reuses the replays already finished and, when
none covers the sessions asked for, raises :class:`~sessions.errors.Conflict` saying what to
run (an experiment), rather than replaying for minutes inside a request.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any, TypedDict

from django.conf import settings
from django.db.models import F, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from compaction import selectors
from compaction.engine import advice as engine
from compaction.engine import replay as replay_engine
from compaction.engine.experiments import policy_key
from compaction.engine.strategies import Policy, PolicyError
from compaction.models import (
    CompactionSpan,
    Experiment,
    ReplayRun,
    ReplayStatus,
    SessionAnalysis,
)
from sessions.errors import BadRequest, Conflict
from sessions.models import AgentSession, Project

DAYS_MAX = 365


class AdviceOut(engine.AdviceDict):
    """What the pages and the API read: the engine's advice plus what was left out."""

    missing_baselines: list[str]
    unpriced_sessions: int


def _normal(policy: dict[str, Any]) -> dict[str, Any]:
    try:
        return Policy.from_dict(policy).to_dict()
    except PolicyError:
        return policy


def _label(policy: dict[str, Any]) -> str:
    return policy_key(_normal(policy))


def _kinds(spans: Iterable[CompactionSpan]) -> tuple[dict[str, int], dict[str, int]]:
    return engine.lost_and_checked(item for span in spans for item in (span.retention or []))


def _observed(
    session: AgentSession, analysis: SessionAnalysis | None, money: selectors.ReplayMoney | None
) -> engine.Outcome | None:
    if money is None or money.observed_full_usd is None:
        return None
    spans = list(selectors.observed_spans(session))
    window = selectors.session_window(session)[0]
    curve = [int(p["context_tokens"]) for p in (analysis.curve if analysis else [])]
    scores = [s.retention_score for s in spans if s.retention_score is not None]
    lost, checked = _kinds(spans)
    return engine.Outcome(
        policy=engine.OBSERVED,
        session=session.external_id,
        usd=money.observed_full_usd,
        retention=min(scores, default=None),
        overflowed=replay_engine.overflow_calls(curve, window) > 0,
        failed_splice=any(s.failed for s in spans),
        agent=session.agent,
        lost_by_kind=lost,
        checked_by_kind=checked,
    )


def _replayed(
    run: ReplayRun, label: str, money: selectors.ReplayMoney | None
) -> engine.Outcome | None:
    if money is None or money.full_usd is None:
        return None
    evals = run.evals or {}
    score = evals.get("retention_score")
    lost, checked = _kinds(selectors.replay_spans(run))
    return engine.Outcome(
        policy=label,
        session=run.session.external_id,
        usd=money.full_usd,
        retention=float(score) if score is not None else None,
        overflowed=int((run.totals or {}).get("overflow_calls") or 0) > 0,
        failed_splice=int(evals.get("failed_splices") or 0) > 0,
        agent=run.session.agent,
        lost_by_kind=lost,
        checked_by_kind=checked,
    )


def _advice(runs: Sequence[ReplayRun], *, baselines: Sequence[dict[str, Any]]) -> AdviceOut:
    """Advice over finished runs: the newest run of each (session, policy) counts."""
    newest: dict[tuple[int, str], ReplayRun] = {}
    policies: dict[str, dict[str, Any]] = {engine.OBSERVED: {}}
    for run in sorted(runs, key=lambda r: (r.created_at, r.pk)):
        label = _label(run.policy)
        newest[(run.session_id, label)] = run
        policies.setdefault(label, dict(run.policy))
    by_session: dict[int, list[tuple[str, ReplayRun]]] = {}
    for (session_id, label), run in sorted(newest.items()):
        by_session.setdefault(session_id, []).append((label, run))
    outcomes: list[engine.Outcome] = []
    unpriced = 0
    for items in by_session.values():
        session = items[0][1].session
        analysis = selectors.analysis_for(session)  # once per session: its curve is long
        monies = [selectors.replay_money(run, analysis) for _, run in items]
        found = [
            _observed(session, analysis, monies[0]),
            *(_replayed(run, lb, m) for (lb, run), m in zip(items, monies, strict=True)),
        ]
        mine = [o for o in found if o is not None]
        if len(mine) < len(found):
            unpriced += 1  # a model without a price: the session's money is unknown
            continue
        outcomes += mine
    result = engine.advise(outcomes, policies=policies, min_sessions=settings.ADVICE_MIN_SESSIONS)
    return {
        **result,
        "missing_baselines": [
            label for label in (_label(p) for p in baselines) if label not in policies
        ],
        "unpriced_sessions": unpriced,
    }


def replay_drift(spans: Sequence[CompactionSpan]) -> list[dict[str, Any]]:
    """What each successive summary of a replay lost of the one before (its summaries only,
    not the clears; the spans as the replay page already holds them, in order), with the
    kinds lost in words."""
    summaries = [s for s in spans if s.stage != "clear_tool_results" and s.retention]
    rows = engine.summary_drift([(s.seq, s.retention) for s in summaries])
    return [
        {
            **row,
            "lost_words": ", ".join(
                f"{KIND_WORDS[kind]} {n}" for kind, n in row["lost_by_kind"].items() if n
            ),
        }
        for row in rows
    ]


def experiment_baselines(experiment: Experiment) -> list[dict[str, Any]]:
    """The baselines the experiment's advice compares against, at its first policy's limits."""
    policies = experiment.policies if isinstance(experiment.policies, list) else []
    return engine.baseline_policies(policies[0] if policies else {})


def experiment_advice(experiment: Experiment) -> AdviceOut:
    """The advice of a finished experiment; 409 while its replays run."""
    if experiment.is_active:
        statuses = list(experiment.runs.values_list("status", flat=True))
        finished = sum(s in (ReplayStatus.DONE, ReplayStatus.FAILED) for s in statuses)
        raise Conflict(
            f"experiment {experiment.pk}: {finished} of {len(statuses)} replays finished; "
            "the advice is ready when all are"
        )
    runs = experiment.runs.filter(status=ReplayStatus.DONE).select_related("session")
    return _advice(list(runs), baselines=experiment_baselines(experiment))


def _recent_sessions(*, project: Project, days: int, agent: str | None) -> QuerySet[AgentSession]:
    since = timezone.now() - timedelta(days=days)
    sessions = AgentSession.objects.filter(project=project).annotate(
        began=Coalesce(F("started_at"), F("created_at"))
    )
    if agent is not None:
        sessions = sessions.filter(agent=agent)
    return sessions.filter(began__gte=since)


def project_advice(*, project: Project, days: int, agent: str | None) -> AdviceOut:
    """Advice over the project's sessions begun in the last ``days`` (of ``agent``), from the
    replays already finished: the policies replayed on every measured session compete.

    400 on a bad ``days`` or an agent the project has no session of; 409, naming what to run,
    when no finished replay covers the sessions.
    """
    if not 1 <= days <= DAYS_MAX:
        raise BadRequest(f"days: between 1 and {DAYS_MAX}")
    if agent is not None and not AgentSession.objects.filter(project=project, agent=agent).exists():
        raise BadRequest("agent: this project has no session of that agent")
    sessions = list(_recent_sessions(project=project, days=days, agent=agent))
    whose = f" of agent {agent!r}" if agent is not None else ""
    if not sessions:
        raise Conflict(f"advice: no session{whose} began in the last {days} days")
    runs = list(
        ReplayRun.objects.filter(session__in=sessions, status=ReplayStatus.DONE).select_related(
            "session"
        )
    )
    what_to_run = (
        'start an experiment over them (POST /api/v1/experiments with "policies" and '
        '"baselines": true, or the experiment page), then ask again'
    )
    if not runs:
        raise Conflict(
            f"advice: none of the {len(sessions)} sessions{whose} of the last {days} days has a "
            f"finished replay; {what_to_run}"
        )
    measured = {run.session_id for run in runs}
    by_label: dict[str, set[int]] = {}
    for run in runs:
        by_label.setdefault(_label(run.policy), set()).add(run.session_id)
    complete = {label for label, ids in by_label.items() if ids >= measured}
    if not complete:
        raise Conflict(
            f"advice: no policy was replayed on all {len(measured)} measured sessions{whose} of "
            f"the last {days} days; {what_to_run}"
        )
    kept = [run for run in runs if _label(run.policy) in complete]
    reference = min(kept, key=lambda r: r.pk).policy
    return _advice(kept, baselines=engine.baseline_policies(reference))


def advice_experiments(*, project: Project, days: int, agent: str | None) -> list[Experiment]:
    """The experiments whose finished replays ``project_advice`` reads (newest first), so the
    advice page can link to what backs it."""
    sessions = _recent_sessions(project=project, days=days, agent=agent)
    return list(
        Experiment.objects.filter(
            project=project, runs__session__in=sessions, runs__status=ReplayStatus.DONE
        )
        .distinct()
        .order_by("-pk")[:20]
    )


class RecommendationView(TypedDict):
    """The sentence the experiment page leads with, its parts ready to escape."""

    agent: str | None
    observed: bool
    label: str
    usd_saved: float
    low: float
    high: float
    sessions: int
    retention: float | None
    loses_mostly: str | None
    worst_session: AgentSession | None
    blocked: int


def blocked_count(found: AdviceOut) -> int:
    """Policies kept off the front by a hard constraint (an overflow or a failed splice)."""
    return sum(
        1 for row in found["policies"] if row["overflowed_sessions"] or row["failed_splices"]
    )


KIND_WORDS = {
    "task": "the task",
    "constraint": "rules",
    "file": "files",
    "identifier": "identifiers",
    "decision": "decisions",
    "next_step": "next steps",
}


def recommendation_view(
    rec: engine.RecommendedDict, *, project: Project, agent: str | None = None, blocked: int = 0
) -> RecommendationView:
    """One recommendation as the page says it; the worst session is looked up in the
    experiment's own project only."""
    lost = {k: v for k, v in rec["lost_by_kind"].items() if v}
    mostly = max(lost, key=lambda k: (lost[k], k)) if lost else None
    worst = (
        AgentSession.objects.filter(project=project, external_id=rec["worst_session"]).first()
        if rec["worst_session"]
        else None
    )
    low, high = rec["usd_saved_ci"]
    return {
        "agent": agent,
        "observed": rec["label"] == engine.OBSERVED_LABEL,
        "label": rec["label"],
        "usd_saved": rec["usd_saved"],
        "low": low,
        "high": high,
        "sessions": rec["sessions"],
        "retention": rec["retention"],
        "loses_mostly": KIND_WORDS[mostly] if mostly else None,
        "worst_session": worst,
        "blocked": blocked,
    }


def agent_views(found: AdviceOut, *, project: Project) -> list[RecommendationView]:
    """The recommendation per agent, when the sessions are of more than one agent (an agent
    whose evidence supports none is left out)."""
    by_agent = found["recommended_by_agent"]
    if len(by_agent) < 2:
        return []
    return [
        recommendation_view(rec, project=project, agent=agent or "(no agent name)")
        for agent, rec in sorted(by_agent.items())
        if rec is not None
    ]


__all__ = [
    "AdviceOut",
    "advice_experiments",
    "agent_views",
    "blocked_count",
    "experiment_advice",
    "experiment_baselines",
    "project_advice",
    "recommendation_view",
    "replay_drift",
]
