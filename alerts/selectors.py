"""Reads of alerts for the triage page, the API and the navigation, scoped by project."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    IntegerField,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce, TruncDate
from django.urls import reverse
from django.utils import timezone

from alerts.models import (
    ACTIVE_STATES,
    SEVERITY_RANK,
    Alert,
    AlertRule,
    AlertSettings,
    AlertSeverity,
    AlertState,
)
from compaction.engine import alerts as engine
from compaction.engine.messages import Orphan
from compaction.models import CompactionSpan, ReplayRun, SpanOrigin
from privacy import findings
from sessions import limits, wire
from sessions.errors import BadRequest, NotFound
from sessions.models import AgentSession, Project

SORTS = {
    "newest": ("-opened_at", "-pk"),
    "oldest": ("opened_at", "pk"),
    "updated": ("-updated_at", "-pk"),
    "severity": ("-severity_rank", "-opened_at", "-pk"),
}


AGE_DAYS_MAX = 36_500
USERNAME_MAX = 150  # Django's User.username


def _text(name: str, value: str | None, limit: int) -> str | None:
    """A free-text filter as storage can compare it: bounded, no NUL, no lone surrogate."""
    if not value:
        return None
    wire.text_storable_check(limits.text_check(value, limit=limit, field=name), where=name)
    return value


def _choice(name: str, value: str | None, choices: list[str]) -> str | None:
    if value in (None, ""):
        return None
    if value not in choices:
        raise BadRequest(f"{name}: expected one of {', '.join(choices)}, got {value!r}")
    return value


@dataclass(frozen=True)
class AlertFilters:
    state: str | None = None
    rule: str | None = None
    severity: str | None = None
    session: str | None = None  # the API's handle: the session's external id
    session_pk: int | None = None  # the pages' handle: no identifier in a URL we emit
    project: str | None = None
    assignee: str | None = None
    age_days: int | None = None
    sort: str = "newest"

    @classmethod
    def parse(cls, params: Any, *, default_sort: str = "newest") -> AlertFilters:
        """From query parameters; an unknown value is a 400 naming the parameter. The triage
        page sorts by severity unless asked otherwise; the API keeps newest first."""
        age = params.get("age") or None
        if age is not None and (
            not str(age).isdigit() or len(str(age)) > 6 or not 1 <= int(age) <= AGE_DAYS_MAX
        ):
            raise BadRequest(f"age: expected a number of days (1 to {AGE_DAYS_MAX})")
        sid = params.get("sid") or None
        if sid is not None and (not str(sid).isdigit() or len(str(sid)) > 18):
            raise BadRequest(f"sid: expected a session's number, got {sid!r}")
        return cls(
            state=_choice("state", params.get("state"), list(AlertState.values)),
            rule=_choice("rule", params.get("rule"), list(AlertRule.values)),
            severity=_choice("severity", params.get("severity"), list(AlertSeverity.values)),
            session=_text("session", params.get("session"), limits.EXTERNAL_ID_MAX),
            session_pk=int(sid) if sid is not None else None,
            project=_text("project", params.get("project"), limits.PROJECT_NAME_MAX),
            assignee=_text("assignee", params.get("assignee"), USERNAME_MAX),
            age_days=int(age) if age is not None else None,
            sort=_choice("sort", params.get("sort"), list(SORTS)) or default_sort,
        )


def _with_rank(alerts: QuerySet[Alert]) -> QuerySet[Alert]:
    return alerts.annotate(
        severity_rank=Case(
            *(When(severity=s, then=Value(r)) for s, r in SEVERITY_RANK.items()),
            output_field=IntegerField(),
        )
    )


def alerts_filtered(*, projects: QuerySet[Project], filters: AlertFilters) -> QuerySet[Alert]:
    alerts = Alert.objects.filter(project__in=projects).select_related(
        "project", "session", "assignee"
    )
    if filters.state:
        alerts = alerts.filter(state=filters.state)
    if filters.rule:
        alerts = alerts.filter(rule=filters.rule)
    if filters.severity:
        alerts = alerts.filter(severity=filters.severity)
    if filters.session:
        alerts = alerts.filter(session__external_id=filters.session)
    if filters.session_pk is not None:
        alerts = alerts.filter(session_id=filters.session_pk)
    if filters.project:
        alerts = alerts.filter(project__name=filters.project)
    if filters.assignee == "-":
        alerts = alerts.filter(assignee__isnull=True)
    elif filters.assignee:
        alerts = alerts.filter(assignee__username=filters.assignee)
    if filters.age_days:
        alerts = alerts.filter(opened_at__gte=timezone.now() - timedelta(days=filters.age_days))
    return _with_rank(alerts).order_by(*SORTS[filters.sort])


def alert_get(*, projects: QuerySet[Project], pk: int) -> Alert:
    alert = (
        Alert.objects.filter(project__in=projects, pk=pk)
        .select_related("project", "session", "assignee")
        .first()
    )
    if alert is None:
        raise NotFound(f"alert {pk} not found in this project")
    return alert


def open_alert_count(*, projects: QuerySet[Project]) -> int:
    return Alert.objects.filter(project__in=projects, state=AlertState.OPEN).count()


def session_alerts(*, session: AgentSession) -> list[Alert]:
    """A session's alerts for its page, the most severe first, then the newest."""
    return list(_with_rank(session.alerts.all()).order_by(F("severity_rank").desc(), "-opened_at"))


def session_alert_severity(*, sessions: list[AgentSession]) -> dict[int, str]:
    """The worst severity among each session's active alerts (open or acknowledged)."""
    worst: dict[int, str] = {}
    rows = Alert.objects.filter(
        session__in=[s.pk for s in sessions], state__in=ACTIVE_STATES
    ).values_list("session_id", "severity")
    for session_id, severity in rows:
        if SEVERITY_RANK.get(severity, 0) >= SEVERITY_RANK.get(worst.get(session_id, ""), -1):
            worst[session_id] = severity
    return worst


def sessions_with_active_alerts(projects: QuerySet[Project]) -> QuerySet[Alert]:
    return Alert.objects.filter(project__in=projects, state__in=ACTIVE_STATES)


@dataclass(frozen=True)
class DailyCounts:
    days: list[date]
    opened_by_rule: dict[str, list[int]]
    compactions: list[int]
    failed_splices: list[int]


def alerts_per_day(*, projects: QuerySet[Project], days: int) -> DailyCounts:
    today = timezone.localdate()
    first = today - timedelta(days=days - 1)
    axis = [first + timedelta(days=i) for i in range(days)]
    index = {d: i for i, d in enumerate(axis)}
    opened: dict[str, list[int]] = {}
    rows = (
        Alert.objects.filter(project__in=projects, opened_at__date__gte=first)
        .annotate(day=TruncDate("opened_at"))
        .values_list("rule", "day")
        .annotate(n=Count("pk"))
    )
    for rule, day, n in rows:
        if day in index:
            opened.setdefault(rule, [0] * days)[index[day]] += n
    compactions = [0] * days
    failed = [0] * days
    # A compaction is dated by its session's start (events carry no time of their own).
    spans = (
        CompactionSpan.objects.filter(session__project__in=projects, origin=SpanOrigin.OBSERVED)
        .annotate(day=TruncDate(Coalesce("session__started_at", "session__created_at")))
        .filter(day__gte=first)
        .values_list("day")
        .annotate(n=Count("pk"), f=Count("pk", filter=Q(failed=True)))
    )
    for day, n, f in spans:
        if day in index:
            compactions[index[day]] += n
            failed[index[day]] += f
    return DailyCounts(axis, opened, compactions, failed)


def alert_span_urls(alerts: list[Alert]) -> dict[int, str]:
    """For each alert, the address of the observed compaction its evidence points at first
    (one query: only those still in the session's analysis)."""
    wanted = {
        a.pk: (a.session_id, a.evidence["spans"][0]) for a in alerts if a.evidence.get("spans")
    }
    if not wanted:
        return {}
    present = set(
        CompactionSpan.objects.filter(
            session_id__in={s for s, _ in wanted.values()}, origin=SpanOrigin.OBSERVED
        ).values_list("session_id", "seq")
    )
    return {
        a: reverse("compaction:compaction", args=[session_id, seq])
        for a, (session_id, seq) in wanted.items()
        if (session_id, seq) in present
    }


def assignee_names(*, projects: QuerySet[Project]) -> list[str]:
    return sorted(
        set(
            Alert.objects.filter(project__in=projects, assignee__isnull=False).values_list(
                "assignee__username", flat=True
            )
        )
    )


def sessions_with_alerts(
    sessions: QuerySet[AgentSession], *, only_with_open: bool = False
) -> QuerySet[AgentSession]:
    """Annotate ``alert_severity``, the worst severity among each session's open or
    acknowledged alerts, and ``overflowed``, whether the overflow rule ever fired on it
    (subqueries, so the list keeps its fixed number of queries)."""
    active = Alert.objects.filter(session=OuterRef("pk"), state__in=ACTIVE_STATES)
    worst = _with_rank(active).order_by(F("severity_rank").desc()).values("severity")[:1]
    sessions = sessions.annotate(
        alert_severity=Subquery(worst),
        overflowed=Exists(Alert.objects.filter(session=OuterRef("pk"), rule=AlertRule.OVERFLOW)),
    )
    if only_with_open:
        sessions = sessions.filter(
            Exists(Alert.objects.filter(session=OuterRef("pk"), state=AlertState.OPEN))
        )
    return sessions


def alert_thresholds(*, project: Project | int) -> engine.Thresholds:
    """The project's thresholds, or the engine defaults when it has none saved."""
    return alert_thresholds_sourced(project=project)[0]


def alert_thresholds_sourced(*, project: Project | int) -> tuple[engine.Thresholds, str]:
    """The project's thresholds and where they come from: ``project`` (its saved settings)
    or ``default`` (the engine's, when it has none saved)."""
    project_id = project if isinstance(project, int) else project.pk
    found = AlertSettings.objects.filter(project_id=project_id).first()
    if found is None:
        return engine.Thresholds(), THRESHOLDS_DEFAULT
    return found.thresholds(), THRESHOLDS_PROJECT


THRESHOLDS_PROJECT = "project"
THRESHOLDS_DEFAULT = "default"
SOURCE_LABELS = {
    THRESHOLDS_PROJECT: "project setting",
    THRESHOLDS_DEFAULT: "default",
}


@dataclass(frozen=True)
class RuleLine:
    """Which rule fired, what it saw and the threshold it compared against, for the alert
    page: ``source`` says whether that threshold was recorded when the alert fired or is the
    project's current one (alerts stored before thresholds were recorded)."""

    rule: str
    observed: str
    threshold: str
    source: str

    def __str__(self) -> str:
        head = f"{self.rule}: {self.observed}"
        if not self.threshold:
            return head
        return f"{head}, {self.threshold}" + (f" ({self.source})" if self.source else "")


def alert_rule_line(alert: Alert) -> RuleLine:
    evidence = alert.evidence
    label = alert.get_rule_display()
    recorded = evidence.get("thresholds")
    if recorded is not None:
        thresholds = recorded
        source = SOURCE_LABELS.get(evidence.get("thresholds_source", ""), "")
    else:
        current, where = alert_thresholds_sourced(project=alert.project_id)
        thresholds = engine.rule_thresholds(alert.rule, current)
        source = f"current {SOURCE_LABELS[where]}, not recorded when it fired"
    observed, threshold = engine.rule_statement(alert.rule, evidence["numbers"], thresholds)
    if threshold.startswith("fires on"):
        source = ""  # not a setting: the rule itself
    return RuleLine(rule=label, observed=observed, threshold=threshold, source=source)


def lost_facts(span: CompactionSpan) -> tuple[engine.LostFact, ...]:
    return tuple(
        engine.LostFact(
            str(item.get("kind")),
            str(item.get("text")),
            item.get("seq"),
            (item.get("needed_again") or {}).get("seq"),
        )
        for item in span.retention
        if not item.get("kept") and item.get("kind") in engine.LOST_KINDS
    )


def span_orphans(span: CompactionSpan, *keys: str) -> tuple[Orphan, ...]:
    """The half tool pairs stored in ``span.details`` under ``keys``: an observed span's
    ``orphans_after``, a replayed span's ``pairs.orphans``. Spans stored before the pair check
    was kept with them have none."""
    found: Any = span.details
    for key in keys:
        found = found.get(key) if isinstance(found, dict) else None
    return tuple(Orphan(o["kind"], o["tool_use_id"], o["seq"]) for o in found or ())


def span_compaction(span: CompactionSpan, *, orphans_at: tuple[str, ...]) -> engine.Compaction:
    """A stored span as the alert rules read it; its half tool pairs are in ``details`` under
    the keys ``orphans_at``."""
    return engine.Compaction(
        seq=span.seq,
        stage=span.stage,
        trigger=span.trigger,
        tokens_before=span.tokens_before,
        tokens_after=span.tokens_after,
        reported_after=span.prefix_tokens,
        failed=span.failed,
        failure_reason=span.failure_reason,
        lost=lost_facts(span),
        orphans_after=span_orphans(span, *orphans_at),
        summary=span.summary,
    )


def replay_alert_findings(run: ReplayRun) -> list[engine.AlertFinding]:
    """What the rules would have said about a replayed run: computed, never stored or sent."""
    spans = CompactionSpan.objects.filter(replay=run).order_by("index")
    compactions = tuple(span_compaction(span, orphans_at=("pairs", "orphans")) for span in spans)
    inputs = engine.SessionInputs(
        context_window=int(run.policy.get("context_window") or 200_000),
        calls=tuple(
            engine.Call(p["seq"], p["context_tokens"], bool(p.get("estimated"))) for p in run.curve
        ),
        compactions=compactions,
        secrets=findings.session_secret_hits(session_id=run.session_id),
    )
    return engine.evaluate(
        inputs,
        alert_thresholds(project=run.session.project_id),
        personal_data=findings.summary_personal_data_detector(session_id=run.session_id),
        secrets=findings.summary_secret_detector(session_id=run.session_id),
    )


@dataclass(frozen=True)
class RuleComparison:
    rule: str
    label: str
    observed: Alert | None
    replayed: engine.AlertFinding | None


def replay_alert_comparison(run: ReplayRun) -> list[RuleComparison]:
    """Per rule that fired on either side: the session's alert and the replay's finding."""
    observed = {a.rule: a for a in Alert.objects.filter(session_id=run.session_id)}
    replayed = {f.rule: f for f in replay_alert_findings(run)}
    labels = dict(AlertRule.choices)
    return [
        RuleComparison(rule, labels[rule], observed.get(rule), replayed.get(rule))
        for rule in engine.RULES
        if rule in observed or rule in replayed
    ]


def alerts_version(*, projects: QuerySet[Project]) -> str:
    """Changes whenever an alert of ``projects`` is opened, changes state or is deleted: part
    of the session list's poll version (its alert badges)."""
    found = Alert.objects.filter(project__in=projects).aggregate(
        n=Count("pk"), last=Max("updated_at")
    )
    return f"{found['n']}.{found['last'].isoformat() if found['last'] else '-'}"
