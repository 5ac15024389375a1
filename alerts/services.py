"""Writes for alerts: evaluate a session's rules and keep one alert per rule, then the
triage lifecycle (acknowledge, resolve, mute, assign, comment), each change recorded.

The rules themselves live in compaction/engine/alerts.py; this module only loads the stored
analysis into the engine's inputs and saves what it finds. Announcing a new or reopened alert
(webhooks, e-mail) is alerts/webhooks.py.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db import DatabaseError, transaction
from django.utils import timezone

from alerts import selectors, webhooks
from alerts.models import (
    ACTIVE_STATES,
    Alert,
    AlertEvent,
    AlertEventKind,
    AlertState,
)
from compaction import prices
from compaction import selectors as compaction_selectors
from compaction.engine import alerts as engine
from compaction.engine.alert_money import CompactionsPrice
from compaction.engine.messages import Message as EngineMessage
from compaction.models import AnalysisStatus, CompactionSpan, SessionAnalysis, SpanOrigin
from privacy import findings as personal_data
from privacy import masking, message_scan
from sessions import limits
from sessions.errors import BadRequest, Conflict
from sessions.models import AgentSession, Message

logger = logging.getLogger(__name__)


def alert_inputs(
    *,
    session: AgentSession,
    analysis: SessionAnalysis,
    messages: Sequence[EngineMessage] | None = None,
    spans: Sequence[CompactionSpan] | None = None,
    costs: Mapping[int, compaction_selectors.SessionCost] | None = None,
    with_messages: bool = True,
) -> engine.SessionInputs:
    """The engine's view of a session: its calls, observed compactions and error notices.

    ``messages``, observed ``spans`` and ``costs`` (by session id) are the session's when the
    caller has them loaded already (the analysis pass, a re-judging of many); otherwise they
    are read again. ``with_messages`` False leaves out what only the messages tell (error
    notices, secrets), for rules that do not read them (THRESHOLD_RULES)."""
    if spans is None:
        spans = list(CompactionSpan.objects.filter(session=session, origin=SpanOrigin.OBSERVED))
    compactions = tuple(
        selectors.span_compaction(span, orphans_at=("orphans_after",))
        for span in sorted(spans, key=lambda span: span.index)
    )
    if messages is None and with_messages:
        messages = message_scan.engine_messages(session)
    compactions = _timed(compactions, session)
    return engine.SessionInputs(
        context_window=compaction_selectors.session_window(session)[0],
        calls=tuple(
            engine.Call(p["seq"], p["context_tokens"], bool(p.get("estimated")))
            for p in analysis.curve
        ),
        compactions=compactions,
        context_length_errors=tuple(engine.context_length_errors(messages or ())),
        secrets=personal_data.session_secret_hits(session_id=session.pk) if with_messages else (),
    )


def _with_money(
    inputs: engine.SessionInputs,
    session: AgentSession,
    costs: Mapping[int, compaction_selectors.SessionCost] | None,
) -> engine.SessionInputs:
    """``inputs`` with what the session and its compactions cost so far: read only for a pass
    where a compaction rule fired (storm, loop, thrash, repeated), whose alert says it."""
    cost = (costs or {}).get(session.pk) or compaction_selectors.session_cost(session)
    return dataclasses.replace(
        inputs,
        compaction_calls_usd=cost.breakdown.compaction_usd if cost.usd is not None else None,
        session_usd=cost.usd,
        compactions_price=_compactions_price(session),
    )


def _compactions_price(session: AgentSession) -> CompactionsPrice | None:
    """The full price of the session's compactions so far (compaction/prices.py); None when
    none of them is priced."""
    total = prices.compaction_prices_total(prices.compaction_prices(session))
    if total is None:
        return None
    return CompactionsPrice(
        total_usd=total.total_usd,
        summary_calls_usd=total.summary_calls_usd,
        cache_rewrite_usd=total.cache_rewrite_usd,
        rework_usd=total.rework_usd,
        priced=total.priced,
    )


def _timed(
    compactions: tuple[engine.Compaction, ...], session: AgentSession
) -> tuple[engine.Compaction, ...]:
    """Each compaction with the trace time of the message at its seq (else of the last earlier
    message that has one); none when the trace has no timestamps up to there. One query: the
    times of the messages up to the last compaction."""
    heavy = [c.seq for c in compactions if not c.light]
    if not heavy:
        return compactions
    rows = (
        Message.objects.filter(session=session, seq__lte=max(heavy), timestamp__isnull=False)
        .order_by("seq")
        .values_list("seq", "timestamp")
    )
    seqs: list[int] = []
    times: list[datetime] = []
    for seq, at in rows:
        if at is not None:
            seqs.append(seq)
            times.append(at)
    out = []
    for c in compactions:
        at_or_before = bisect.bisect_right(seqs, c.seq) - 1
        if c.light or at_or_before < 0:
            out.append(c)
        else:
            out.append(dataclasses.replace(c, at=times[at_or_before]))
    return tuple(out)


def _event(
    alert: Alert, kind: str, *, actor: Any = None, before: str = "", comment: str = ""
) -> AlertEvent:
    return AlertEvent.objects.create(
        alert=alert,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        kind=kind,
        from_state=before,
        to_state=alert.state,
        comment=comment,
        created_at=alert.updated_at,
    )


def _finding_save(
    *, session: AgentSession, finding: engine.AlertFinding, thresholds_source: str
) -> Alert:
    # An alert quotes what it found (a lost probe, an error text): stored masked, so no
    # page, webhook, e-mail or export of it ever holds a value in clear.
    evidence: engine.AlertEvidence = masking.json_mask(finding.evidence)
    # The thresholds the rule compared against are kept with it: a later change of the
    # project's settings must not rewrite why an alert fired.
    evidence["thresholds_source"] = thresholds_source
    finding = dataclasses.replace(
        finding, title=masking.text_mask(finding.title)[:300], evidence=evidence
    )
    now = timezone.now()
    alert, created = Alert.objects.get_or_create(
        session=session,
        rule=finding.rule,
        defaults={
            "project_id": session.project_id,
            "severity": finding.severity,
            "title": finding.title,
            "evidence": finding.evidence,
            "opened_at": now,
            "updated_at": now,
        },
    )
    if created:
        _event(alert, AlertEventKind.OPENED, comment=finding.title)
        webhooks.alert_announce(alert=alert, event="opened")
        return alert
    alert = Alert.objects.select_for_update().get(pk=alert.pk)
    if alert.evidence == finding.evidence and alert.severity == finding.severity:
        return alert  # the same evidence again: re-analysis changes nothing
    before = alert.state
    mute_over = alert.state == AlertState.MUTED and (
        alert.muted_until is None or alert.muted_until <= now
    )
    reopen = alert.state == AlertState.RESOLVED or mute_over
    alert.severity = finding.severity
    alert.title = finding.title
    alert.evidence = finding.evidence
    alert.updated_at = now
    if reopen:
        alert.state = AlertState.OPEN
        alert.resolution = ""
        alert.muted_until = None
    alert.save()
    kind = AlertEventKind.REOPENED if reopen else AlertEventKind.UPDATED
    _event(alert, kind, before=before, comment=finding.title)
    if reopen:
        webhooks.alert_announce(alert=alert, event="reopened")
    return alert


def alerts_evaluate_session(
    *,
    session_id: int,
    messages: Sequence[EngineMessage] | None = None,
    analysis: SessionAnalysis | None = None,
    spans: Sequence[CompactionSpan] | None = None,
    rules: frozenset[str] | None = None,
    costs: Mapping[int, compaction_selectors.SessionCost] | None = None,
    thresholds: tuple[engine.Thresholds, str] | None = None,
) -> list[Alert]:
    """Run the rules (``rules``: these only, when given) on the session's current analysis
    and upsert one alert per finding; the alerts of the rules not run are left as they are.

    Does nothing until the analysis is done. Safe to repeat: the same evidence changes
    nothing, new evidence updates the open alert, and a resolved one is reopened. The
    analysis pass passes what it holds: its engine ``messages``, the ``analysis`` row it just
    stored (with its session) and the observed ``spans`` it wrote.
    """
    if analysis is None:
        analysis = (
            SessionAnalysis.objects.filter(session_id=session_id, status=AnalysisStatus.DONE)
            .select_related("session")
            .first()
        )
    if analysis is None or analysis.status != AnalysisStatus.DONE:
        return []
    session = analysis.session
    try:
        light = rules is not None and rules <= THRESHOLD_RULES
        inputs = alert_inputs(
            session=session,
            analysis=analysis,
            messages=messages,
            spans=spans,
            costs=costs,
            with_messages=not light,
        )
        limits, source = thresholds or selectors.alert_thresholds_sourced(
            project=session.project_id
        )
        if rules is not None:
            skipped = frozenset(engine.RULES) - rules
            limits = dataclasses.replace(limits, disabled=limits.disabled | skipped)
        detectors = {
            "personal_data": None
            if light
            else personal_data.summary_personal_data_detector(session_id=session.pk),
            "secrets": None
            if light
            else personal_data.summary_secret_detector(session_id=session.pk),
        }
        findings = engine.evaluate(inputs, limits, **detectors)
        if any(f.rule in engine.COMPACTION_PRECEDENCE for f in findings):
            # the compaction rules' alerts say what the compactions cost so far: those rules
            # again, with the money (the others, the scans of summaries among them, ran once)
            others = frozenset(engine.RULES) - frozenset(engine.COMPACTION_PRECEDENCE)
            priced = engine.evaluate(
                _with_money(inputs, session, costs),
                dataclasses.replace(limits, disabled=limits.disabled | others),
            )
            order = {rule: n for n, rule in enumerate(engine.RULES)}
            findings = sorted(
                [f for f in findings if f.rule not in engine.COMPACTION_PRECEDENCE] + priced,
                key=lambda f: order[f.rule],
            )
    except DatabaseError:
        raise  # infrastructure: the analysis task retries
    except Exception:
        # A rule bug must not undo or fail the analysis it follows; the log says which.
        logger.exception("alert rules failed on session %s", session_id)
        return []
    if not findings:
        return []
    with transaction.atomic():
        saved = [
            _finding_save(session=session, finding=f, thresholds_source=source) for f in findings
        ]
        for alert in saved:
            _folded_resolve(winner=alert)
        return saved


def _folded_resolve(*, winner: Alert) -> None:
    """One alert per group of compactions: an active alert of a rule now folded into
    ``winner`` (an earlier pass opened it, before the storm or the loop showed) is resolved,
    saying where its evidence went."""
    folded = winner.evidence.get("also") or []
    if not folded:
        return
    reason = f"Folded into the {winner.rule} alert #{winner.pk}: the same compactions."
    for alert_id in Alert.objects.filter(
        session_id=winner.session_id, rule__in=folded, state__in=ACTIVE_STATES
    ).values_list("pk", flat=True):
        _change(
            alert_id=alert_id,
            actor=None,
            kind=AlertEventKind.RESOLVED,
            allowed=ACTIVE_STATES,
            comment=reason,
            state=AlertState.RESOLVED,
            resolution=reason,
        )


REEVALUATE_DAYS = 30
REEVALUATE_CHUNK = 200
# The rules whose verdict the thresholds change, with the loop, judged in one group with them
# (storm > loop > thrash > repeated); they read the stored curve and spans, never a message.
THRESHOLD_RULES = webhooks.THRESHOLD_RULES


def alerts_reevaluate_project(
    *, project_id: int, rules: Iterable[str] | None = None, days: int = REEVALUATE_DAYS
) -> int:
    """Run the alert rules again over the stored analyses of the project's sessions active in
    the last ``days`` (a threshold changed): no analysis pass. ``rules`` None runs every rule
    (a rule was switched back on); a threshold change runs THRESHOLD_RULES, which read no
    message. Spans and costs are read for many sessions at once. Returns how many sessions
    were judged."""
    only = frozenset(rules) if rules is not None else None
    since = timezone.now() - timedelta(days=days)
    analyses = (
        SessionAnalysis.objects.filter(
            session__project_id=project_id,
            session__updated_at__gte=since,
            status=AnalysisStatus.DONE,
        )
        .select_related("session__project")
        .order_by("session_id")
    )
    done = 0
    chunk: list[SessionAnalysis] = []
    for analysis in analyses.iterator(chunk_size=REEVALUATE_CHUNK):
        chunk.append(analysis)
        if len(chunk) == REEVALUATE_CHUNK:
            done += _reevaluate_chunk(chunk, only)
            chunk = []
    return done + (_reevaluate_chunk(chunk, only) if chunk else 0)


def _reevaluate_chunk(chunk: Sequence[SessionAnalysis], rules: frozenset[str] | None) -> int:
    spans: dict[int, list[CompactionSpan]] = {a.session_id: [] for a in chunk}
    for span in CompactionSpan.objects.filter(
        session_id__in=list(spans), origin=SpanOrigin.OBSERVED
    ):
        spans[span.session_id].append(span)
    compacted = [a.session for a in chunk if spans[a.session_id]]
    costs = compaction_selectors.session_costs(compacted) if compacted else {}
    thresholds = selectors.alert_thresholds_sourced(project=chunk[0].session.project_id)
    for analysis in chunk:
        alerts_evaluate_session(
            session_id=analysis.session_id,
            analysis=analysis,
            spans=spans[analysis.session_id],
            rules=rules,
            costs=costs,
            thresholds=thresholds,
        )
    return len(chunk)


# --- lifecycle ---------------------------------------------------------------------------


def _change(
    *,
    alert_id: int,
    actor: Any,
    kind: str,
    allowed: Iterable[str],
    comment: str = "",
    **fields: Any,
) -> Alert:
    with transaction.atomic():
        alert = Alert.objects.select_for_update().get(pk=alert_id)
        if alert.state not in allowed:
            raise Conflict(f"alert {alert.pk}: cannot be {kind} while {alert.state}")
        before = alert.state
        for name, value in fields.items():
            setattr(alert, name, value)
        alert.updated_at = timezone.now()
        alert.save()
        _event(alert, kind, actor=actor, before=before, comment=comment)
    return alert


def alert_acknowledge(*, alert_id: int, actor: Any = None) -> Alert:
    return _change(
        alert_id=alert_id,
        actor=actor,
        kind=AlertEventKind.ACKNOWLEDGED,
        allowed=(AlertState.OPEN,),
        state=AlertState.ACKNOWLEDGED,
    )


def alert_resolve(*, alert_id: int, reason: str, actor: Any = None) -> Alert:
    reason = reason.strip()
    if not reason:
        raise BadRequest("reason: required; say why the alert is resolved")
    limits.text_check(reason, limit=limits.RESOLVE_REASON_MAX, field="reason")
    return _change(
        alert_id=alert_id,
        actor=actor,
        kind=AlertEventKind.RESOLVED,
        allowed=(AlertState.OPEN, AlertState.ACKNOWLEDGED, AlertState.MUTED),
        comment=reason,
        state=AlertState.RESOLVED,
        resolution=reason,
        muted_until=None,
    )


def alert_mute(*, alert_id: int, until: datetime, actor: Any = None) -> Alert:
    if timezone.is_naive(until):
        raise BadRequest("until: give a time zone, like 2026-12-01T18:00:00Z")
    if until <= timezone.now():
        raise BadRequest("until: must be in the future")
    return _change(
        alert_id=alert_id,
        actor=actor,
        kind=AlertEventKind.MUTED,
        allowed=(AlertState.OPEN, AlertState.ACKNOWLEDGED, AlertState.MUTED),
        comment=f"until {until.isoformat()}",
        state=AlertState.MUTED,
        muted_until=until,
    )


def alert_assign(*, alert_id: int, assignee: Any, actor: Any = None) -> Alert:
    name = assignee.get_username() if assignee is not None else "nobody"
    return _change(
        alert_id=alert_id,
        actor=actor,
        kind=AlertEventKind.ASSIGNED,
        allowed=tuple(AlertState.values),
        comment=f"assigned to {name}",
        assignee=assignee,
    )


def alert_comment(*, alert_id: int, text: str, actor: Any = None) -> AlertEvent:
    text = text.strip()
    if not text:
        raise BadRequest("comment: empty")
    limits.text_check(text, limit=limits.ALERT_COMMENT_MAX, field="comment")
    with transaction.atomic():
        alert = Alert.objects.select_for_update().get(pk=alert_id)
        alert.updated_at = timezone.now()
        alert.save(update_fields=["updated_at"])
        return _event(alert, AlertEventKind.COMMENTED, actor=actor, comment=text)


def alerts_acknowledge(*, alert_ids: Sequence[int], actor: Any = None) -> int:
    """Acknowledge every open alert among ``alert_ids``; the others are left as they are."""
    done = 0
    for alert_id in sorted(set(alert_ids)):
        try:
            alert_acknowledge(alert_id=alert_id, actor=actor)
        except (Conflict, Alert.DoesNotExist):
            continue
        done += 1
    return done


def alerts_unmute_expired() -> int:
    """Put alerts whose mute has run out back in the queue (open). Returns how many."""
    now = timezone.now()
    done = 0
    expired = Alert.objects.filter(state=AlertState.MUTED, muted_until__lte=now)
    for alert_id in expired.values_list("pk", flat=True):
        with transaction.atomic():
            alert = Alert.objects.select_for_update().get(pk=alert_id)
            if alert.state != AlertState.MUTED or (alert.muted_until or now) > now:
                continue  # changed since the query
            alert.state = AlertState.OPEN
            alert.muted_until = None
            alert.updated_at = now
            alert.save()
            _event(alert, AlertEventKind.UNMUTED, before=AlertState.MUTED)
            done += 1
    return done
