"""Pages for compaction spans, replays and experiments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from alerts import selectors as alert_selectors
from compaction import advice, charts, marked_summary, prices, selectors, services
from compaction.engine.advice import RETENTION_TOLERANCE
from compaction.engine.names import Stage, Unit
from compaction.engine.verdicts import FACT_VERDICTS
from compaction.forms import ExperimentForm, PolicyForm
from compaction.models import CompactionSpan, ReplayRun
from privacy import masking
from privacy import selectors as privacy_selectors
from sessions import access
from sessions import selectors as session_selectors
from sessions.errors import BadRequest, Conflict, NotFound, TooManyRequests
from sessions.models import AgentSession, Message, Role
from sessions.pages import session_or_404
from team import selectors as team_selectors

# How many replaced messages the span page shows at each end of the summarized middle.
MIDDLE_EDGE = 40
# Rules first: a lost constraint matters more than a file the summary did not name.
KIND_ORDER = {"probe": 0, "task": 1, "constraint": 2, "decision": 3, "identifier": 4, "path": 5}
# Lost first (needed again before the rest), then what survived, then what was never a fact.
VERDICT_ORDER = {"lost": 1, "paraphrased": 2, "kept": 3, "reloaded": 4, "mentioned": 5}


def _projects(request: HttpRequest) -> Any:
    return session_selectors.projects_for_user(request.user)


@dataclass(frozen=True)
class SpanHistory:
    head: list[Message]
    middle_start: list[Message]
    middle_hidden: int
    middle_end: list[Message]
    tail: list[Message]


def _history(span: CompactionSpan) -> SpanHistory:
    """The raw messages before the span, grouped as the compaction treated them."""
    before = Message.objects.filter(session_id=span.session_id, seq__lt=span.seq).order_by("seq")
    start, end = span.replaced_from_seq, span.replaced_to_seq
    if start is None or end is None:
        start, end = 0, span.seq - 1
    head = list(before.filter(seq__lt=start))
    tail = list(before.filter(seq__gt=end))
    middle = before.filter(seq__gte=start, seq__lte=end)
    total = middle.count()
    if total <= 2 * MIDDLE_EDGE:
        return SpanHistory(head, list(middle), 0, [], tail)
    first = list(middle[:MIDDLE_EDGE])
    last = list(middle.order_by("-seq")[:MIDDLE_EDGE])[::-1]
    return SpanHistory(head, first, total - 2 * MIDDLE_EDGE, last, tail)


def _same_seq(spans: Any, seq: int, request: HttpRequest) -> tuple[CompactionSpan, list[Any]]:
    """The compaction at `seq` (the n-th, ``?n=``, where several share it) and all of them."""
    siblings = list(spans.filter(seq=seq).select_related("event", "replay").order_by("index"))
    if not siblings:
        raise Http404("No compaction at this seq")
    n = request.GET.get("n", "1")
    # ascii digits only, and few: "²" is a digit to str.isdigit, and int() refuses 5,000 digits
    chosen = int(n) if n.isascii() and n.isdecimal() and len(n) <= 4 else 1
    if not 1 <= chosen <= len(siblings):
        chosen = 1
    return siblings[chosen - 1], siblings


@login_required
def compaction_detail(request: HttpRequest, pk: int, seq: int) -> HttpResponse:
    """An observed compaction, addressed by its session and seq: a link that lasts."""
    session = session_or_404(request, pk)
    span, siblings = _same_seq(selectors.observed_spans(session), seq, request)
    return _span_page(request, session, span, siblings)


@login_required
def replay_compaction_detail(request: HttpRequest, pk: int, seq: int) -> HttpResponse:
    """A compaction a replay produced, addressed by the replay and its seq."""
    run = _replay(request, pk)
    span, siblings = _same_seq(selectors.replay_spans(run), seq, request)
    return _span_page(request, run.session, span, siblings)


@login_required
def span_moved(request: HttpRequest, pk: int, span_pk: int) -> HttpResponse:
    """The old address of a compaction, its row id: to the address that lasts."""
    return _moved(request, pk, span_pk, middle=False)


@login_required
def span_middle_moved(request: HttpRequest, pk: int, span_pk: int) -> HttpResponse:
    return _moved(request, pk, span_pk, middle=True)


def _moved(request: HttpRequest, pk: int, span_pk: int, *, middle: bool) -> HttpResponse:
    """Also the id of a span a later analysis retired goes to the seq it had."""
    session = session_or_404(request, pk)
    span = CompactionSpan.objects.filter(session=session, pk=span_pk).first()
    if span is not None:
        return redirect(span.url(middle=middle), permanent=True)
    retired = selectors.retired_span(session=session, span_id=span_pk)
    if retired is None:
        raise Http404("No such compaction in this session")
    name = "compaction:compaction-middle" if middle else "compaction:compaction"
    return redirect(reverse(name, args=[session.pk, retired.seq]), permanent=True)


def _span_page(
    request: HttpRequest, session: AgentSession, span: CompactionSpan, siblings: list[Any]
) -> HttpResponse:
    every = _numbered_facts(span)
    marked = marked_summary.marked_summary(
        structured=span.summary_sections, text=span.summary, facts=every
    )
    for item in every:
        item["in_summary"] = marked.places.get(item["n"], "")
    retention = [item for item in every if item["verdict"] in FACT_VERDICTS]
    retention_marked = list(
        zip(
            retention,
            team_selectors.fact_marks_for(
                span=span,
                retention=retention,
                user=request.user,
                can_mark=access.has_role(request.user, session.project_id, Role.ENGINEER),
            ),
            strict=True,
        )
    )
    cost = selectors.compaction_cost(span.event) if span.event is not None else None
    history = _history(span)
    next_messages = list(
        Message.objects.filter(session=session, seq__gte=span.seq).order_by("seq")[:3]
    )
    shown = history.head + history.middle_start + history.middle_end + history.tail
    context = {
        "session": session,
        "span": span,
        "siblings": siblings if len(siblings) > 1 else [],
        "middle_url": span.url(middle=True)
        + (f"?n={siblings.index(span) + 1}" if len(siblings) > 1 else ""),
        "summary_call": cost.call if cost else None,
        "summary_call_seconds": (
            cost.call.duration_ms / 1000 if cost and cost.call and cost.call.duration_ms else None
        ),
        "summary_call_note": cost.note if cost else None,
        "summary_call_cost": selectors.summary_call_cost(span.event) if span.event else None,
        "price": prices.span_price(span),
        "price_rule": prices.PRICE_RULE,
        "history": history,
        "tool_names": session_selectors.tool_names(
            session_id=session.pk, messages=shown + next_messages
        ),
        "replay_query": urlencode(selectors.span_replay_prefill(span, tail=history.tail)),
        "marked_summary": marked.sections,
        "retention": retention,
        "kept_facts": [item for item in retention if item["verdict"] != "lost"],
        "lost_marked": [pair for pair in retention_marked if pair[0]["verdict"] == "lost"],
        "kept_marked": [pair for pair in retention_marked if pair[0]["verdict"] != "lost"],
        "lost": [item for item in retention if item["verdict"] == "lost"],
        "needed_again": [item for item in retention if item["needed_again"] is not None],
        "lost_not_needed": sum(
            item["verdict"] == "lost" and item["needed_again"] is None for item in retention
        ),
        "not_facts": [item for item in every if item["verdict"] not in FACT_VERDICTS],
        "summary_delta": privacy_selectors.summary_delta_rows(
            event_id=span.event_id if span.replay_id is None else None
        ),
        "can_reveal": access.has_role(request.user, session.project_id, Role.PRIVACY_REVIEWER),
        "can_replay": access.has_role(request.user, session.project_id, Role.ENGINEER),
        "next_messages": next_messages,
        "comments": team_selectors.comments_for(session=session, span=span),
        "said_here": _said_here(every),
        **_neighbours(span, session),
    }
    return render(request, "compaction/span_detail.html", context)


def _numbered_facts(span: CompactionSpan) -> list[dict[str, Any]]:
    """The span's facts in page order, each numbered (``n``: its ``#fact-N`` on the page)."""
    ordered = sorted(
        selectors.span_facts(span),
        key=lambda item: (
            VERDICT_ORDER[item["verdict"]] - (item["needed_again"] is not None),
            KIND_ORDER.get(item["kind"], 9),
            item.get("seq") or 0,
        ),
    )
    return [{**item, "n": n} for n, item in enumerate(ordered, 1)]


def _said_here(facts: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """The facts each raw message said, by its seq: the raw column marks them too."""
    out: dict[int, list[dict[str, Any]]] = {}
    for item in facts:
        if item.get("seq") is not None:
            out.setdefault(int(item["seq"]), []).append(item)
    return out


def _neighbours(span: CompactionSpan, session: AgentSession) -> dict[str, Any]:
    """The compactions before and after this one in the same run (observed, or the same
    replay), and where this one stands: the page's previous / next links."""
    spans = (
        selectors.replay_spans(span.replay)
        if span.replay is not None
        else selectors.observed_spans(session)
    ).order_by()
    seqs = sorted(set(spans.values_list("seq", flat=True)))
    at = seqs.index(span.seq)
    previous = seqs[at - 1] if at > 0 else None
    following = seqs[at + 1] if at + 1 < len(seqs) else None
    return {
        "span_position": at + 1,
        "span_total": len(seqs),
        "previous_span": _span_url(span, previous),
        "next_span": _span_url(span, following),
        "previous_seq": previous,
        "next_seq": following,
    }


def _span_url(span: CompactionSpan, seq: int | None) -> str:
    if seq is None:
        return ""
    if span.replay_id is not None:
        return reverse("compaction:replay-compaction", args=[span.replay_id, seq])
    return reverse("compaction:compaction", args=[span.session_id, seq])


@login_required
def compaction_middle(request: HttpRequest, pk: int, seq: int) -> HttpResponse:
    session = session_or_404(request, pk)
    span, _ = _same_seq(selectors.observed_spans(session), seq, request)
    return _middle(request, session, span)


@login_required
def replay_compaction_middle(request: HttpRequest, pk: int, seq: int) -> HttpResponse:
    run = _replay(request, pk)
    span, _ = _same_seq(selectors.replay_spans(run), seq, request)
    return _middle(request, run.session, span)


def _middle(request: HttpRequest, session: AgentSession, span: CompactionSpan) -> HttpResponse:
    """The hidden part of a long summarized middle, loaded on demand."""
    history = _history(span)
    shown = {m.seq for m in history.middle_start + history.middle_end}
    start = span.replaced_from_seq or 0
    end = span.replaced_to_seq if span.replaced_to_seq is not None else span.seq - 1
    hidden = list(
        Message.objects.filter(session=session, seq__gte=start, seq__lte=end)
        .exclude(seq__in=shown)
        .order_by("seq")
    )
    context = {
        "messages": hidden,
        "said_here": _said_here(_numbered_facts(span)),
        "tool_names": session_selectors.tool_names(session_id=session.pk, messages=hidden),
        "can_reveal": access.has_role(request.user, session.project_id, Role.PRIVACY_REVIEWER),
    }
    return render(request, "compaction/_messages.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def replay_new(request: HttpRequest, pk: int) -> HttpResponse:
    session = session_or_404(request, pk)
    # the form too: a viewer is told before filling it, and is shown no link to it
    access.require_role(request.user, session.project_id, Role.ENGINEER)
    form = PolicyForm(request.POST or None, session=session, initial=_policy_prefill(request))
    if request.method == "POST" and form.is_valid():
        try:
            run = services.replay_run_start(
                session=session, policy=form.policy(), user=request.user
            )
        except (BadRequest, TooManyRequests) as exc:
            form.add_error(None, exc.message)
        else:
            return redirect("compaction:replay", run.pk)
    return render(request, "compaction/replay_new.html", {"session": session, "form": form})


def _policy_prefill(request: HttpRequest) -> dict[str, Any]:
    """Initial form values from the query (a span page's "Replay this"); junk is ignored."""
    prefill: dict[str, Any] = {}
    for name in ("soft_limit", "hard_limit", "keep_last"):
        value = request.GET.get(name, "")
        if value.isdigit() and int(value) > 0:
            prefill[name] = int(value)
    if request.GET.get("unit") in {unit.value for unit in Unit}:
        prefill["unit"] = request.GET["unit"]
    return prefill


def _replay(request: HttpRequest, pk: int) -> ReplayRun:
    try:
        run = selectors.replay_get(projects=_projects(request), pk=pk)
    except NotFound:
        raise Http404("No such replay in your projects") from None
    session = run.session
    masking.names_scope_enter(project_id=session.project_id, session_id=session.pk)
    return run


def _replay_context(run: ReplayRun) -> dict[str, Any]:
    context: dict[str, Any] = {
        "run": run,
        "session": run.session,
    }
    if run.status != "done":
        return context
    analysis = selectors.analysis_for(run.session)
    observed = list(selectors.observed_spans(run.session))
    replayed = list(selectors.replay_spans(run))
    policy = run.policy
    health = selectors.replay_health(run, observed_spans=observed, analysis=analysis)
    money = selectors.replay_money(run, analysis)
    context.update(
        observed_spans=observed,
        replayed_spans=replayed,
        replayed_summaries=[s for s in replayed if s.stage != Stage.CLEAR_TOOL_RESULTS],
        figure=charts.token_curve(
            selectors.analysis_curve(analysis),
            spans=[selectors.span_marker(s) for s in observed],
            window=policy.get("context_window"),
            soft_limit=policy.get("soft_limit"),
            hard_limit=policy.get("hard_limit"),
            replayed=selectors.replay_curve(run),
            replayed_spans=[
                selectors.span_marker(s) for s in replayed if s.stage != Stage.CLEAR_TOOL_RESULTS
            ],
            replayed_clears=[
                selectors.span_marker(s) for s in replayed if s.stage == Stage.CLEAR_TOOL_RESULTS
            ],
        ),
        replayed_clears=selectors.replay_clears(replayed),
        health=health,
        comparison=_with_money(
            _comparison(run, health),
            observed=money.observed_usd if money else None,
            replayed=money.usd if money else None,
        ),
        money=money,
        money_delta=-money.saved_usd if money and money.saved_usd is not None else None,
        money_rule=selectors.MONEY_RULE,
        full_rule=selectors.FULL_RULE,
        compactions_delta=_difference(
            money.observed_compactions_usd if money else None,
            money.compactions_usd if money else None,
        ),
        full_delta=_difference(
            money.observed_full_usd if money else None, money.full_usd if money else None
        ),
        alert_comparison=alert_selectors.replay_alert_comparison(run),
        summary_pairs=selectors.summary_pairs(
            observed, [s for s in replayed if s.stage != Stage.CLEAR_TOOL_RESULTS]
        ),
        other_replays=selectors.session_replays_done(run.session).exclude(pk=run.pk)[:20],
        drift=advice.replay_drift(replayed),
    )
    return context


BILLED_ROW = "Billed tokens"


def _with_money(rows: list[dict[str, Any]], **usd: float | None) -> list[dict[str, Any]]:
    """The billed-tokens row with each side's cost beside it (``<side>_usd``), by the one
    money rule the Cost row states (compaction/engine/pricing.py through replay_money)."""
    for row in rows:
        if row["label"] == BILLED_ROW:
            row.update({f"{side}_usd": value for side, value in usd.items()})
    return rows


def _difference(observed: float | None, replayed: float | None) -> float | None:
    """Replayed minus observed, or None when either is unknown."""
    if observed is None or replayed is None:
        return None
    return round(replayed - observed, 6)


def _money_delta(a: selectors.ReplayMoney | None, b: selectors.ReplayMoney | None) -> float | None:
    if a is None or b is None or a.usd is None or b.usd is None:
        return None
    return round(b.usd - a.usd, 6)


def _comparison(run: ReplayRun, health: selectors.ReplayHealth) -> list[dict[str, Any]]:
    evals = selectors.replay_evals(run)
    totals = selectors.replay_totals(run)
    observed = evals["observed"] if evals else None
    # The agent's own summary calls are in no call of the observed curve; the replay counts
    # its summarizer in its billed total, so the observed side must count them too.
    summaries = selectors.summary_calls(run.session)
    observed_billed = observed["billed_tokens"] if observed else None
    if observed_billed is not None:
        observed_billed += sum(c.billed_tokens for c in summaries if not c.in_curve)
    rows = [
        ("Model calls", observed and observed["calls"], totals and totals["calls"]),
        (
            "Input tokens over the run",
            observed and observed["input_tokens"],
            totals and totals["input_tokens"],
        ),
        (BILLED_ROW, observed_billed, totals and totals["billed_tokens"]),
        (
            "Compactions (summaries)",
            observed and observed["compactions"],
            totals and totals["compactions"],
        ),
        ("Peak context", observed and observed["peak_context"], totals and totals["peak_context"]),
        ("Calls over the window", health.observed_overflow_calls, health.overflow_calls),
        (
            "Summarizer cost (input tokens)",
            sum(call.context_tokens for call in summaries),
            totals and totals["summarizer_cost"]["input_tokens"],
        ),
    ]
    out = []
    for label, before, after in rows:
        delta = after - before if isinstance(before, int) and isinstance(after, int) else None
        out.append({"label": label, "observed": before, "replayed": after, "delta": delta})
    return out


@login_required
def replay_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = _replay(request, pk)
    context = _replay_context(run)
    context["can_replay"] = access.has_role(request.user, run.session.project_id, Role.ENGINEER)
    return render(request, "compaction/replay_detail.html", context)


@login_required
def replay_status(request: HttpRequest, pk: int) -> HttpResponse:
    """Polled while the run is active; once done it renders the results in place."""
    run = _replay(request, pk)
    return render(request, "compaction/replay_detail.html#replay-body", _replay_context(run))


@login_required
def replay_compare(request: HttpRequest, pk: int) -> HttpResponse:
    """Two finished replays of one session: curves overlaid, totals and verdicts side by side."""
    session = session_or_404(request, pk)
    done = selectors.session_replays_done(session)
    choices = done[:50]
    pair = [done.filter(pk=value).first() for value in _ids(request, "a", "b")]
    first, second = pair if len(pair) == 2 else (None, None)
    context: dict[str, Any] = {"session": session, "choices": choices, "first": first}
    context["second"] = second
    context["can_replay"] = access.has_role(request.user, session.project_id, Role.ENGINEER)
    if first is not None and second is not None:
        analysis = selectors.analysis_for(session)
        labels = [f"Replay {first.pk}", f"Replay {second.pk}"]
        money = [selectors.replay_money(run, analysis) for run in (first, second)]
        context.update(
            rows=_with_money(
                selectors.replay_pair_rows(first, second),
                first=money[0].usd if money[0] else None,
                second=money[1].usd if money[1] else None,
            ),
            money=money,
            money_delta=_money_delta(*money),
            money_rule=selectors.MONEY_RULE,
            figure=charts.replay_pair_curve(
                selectors.analysis_curve(analysis),
                replays=[
                    (labels[0], selectors.replay_curve(first)),
                    (labels[1], selectors.replay_curve(second)),
                ],
                window=session.context_window or first.policy.get("context_window"),
            ),
        )
    return render(request, "compaction/replay_compare.html", context)


def _ids(request: HttpRequest, *names: str) -> list[int]:
    """The replay ids picked in the query, in order; an absent or junk value ends the list."""
    ids = []
    for name in names:
        value = request.GET.get(name, "")
        if not value.isdigit():
            break
        ids.append(int(value))
    return ids


@login_required
def experiment_list(request: HttpRequest) -> HttpResponse:
    experiments = selectors.experiments_for(projects=_projects(request))
    context = {"experiments": experiments, "can_start": _startable(request).exists()}
    return render(request, "compaction/experiment_list.html", context)


def _startable(request: HttpRequest) -> Any:
    """The projects where the user may start an experiment (the engineer role or above)."""
    return access.projects_with_role(request.user, Role.ENGINEER)


@login_required
@require_http_methods(["GET", "POST"])
def experiment_new(request: HttpRequest) -> HttpResponse:
    startable = _startable(request)
    if request.method == "POST":
        # a project of theirs where they may not start one: refused as such (403), not as a
        # choice the form does not offer
        posted = request.POST.get("project", "")
        if posted.isdecimal() and len(posted) <= 10:
            mine = _projects(request).filter(pk=int(posted)).exists()
            if mine:
                access.require_role(request.user, int(posted), Role.ENGINEER)
    form = ExperimentForm(request.POST or None, projects=startable)
    if request.method == "POST" and form.is_valid():
        project = form.cleaned_data["project"]
        try:
            experiment = services.experiment_start(
                project=project,
                name=form.cleaned_data["name"],
                policies=form.policies(),
                sessions=list(form.chosen_sessions()),
                user=request.user,
                baselines=form.cleaned_data["baselines"],
            )
        except (BadRequest, TooManyRequests) as exc:
            form.add_error(None, exc.message)
        else:
            flash.success(request, f"Experiment started: {experiment.runs.count()} replays queued.")
            return redirect("compaction:experiment", experiment.pk)
    context = {"form": form, "can_start": startable.exists()}
    return render(request, "compaction/experiment_new.html", context)


ADVICE_DAYS = 30


@login_required
def advice_page(request: HttpRequest) -> HttpResponse:
    """The advice of GET /api/v1/advice for one of the user's projects (the same code: the
    replays already finished over its sessions of the last N days), per agent, with the
    experiments behind it; when there is nothing to advise, why, and a way to start one."""
    projects = _projects(request).order_by("name")
    wanted = request.GET.get("project", "")
    project = (projects.filter(pk=int(wanted)).first() if wanted.isdecimal() else None) or (
        projects.first()
    )
    days_asked = request.GET.get("days", "")
    days = int(days_asked) if days_asked.isdecimal() and len(days_asked) <= 4 else ADVICE_DAYS
    context: dict[str, Any] = {"projects": projects, "project": project, "days": days}
    if project is None:
        return render(request, "compaction/advice.html", context)
    one = projects.filter(pk=project.pk)
    handle = request.GET.get("agent", "")
    agent = session_selectors.facet_resolve(projects=one, field="agent", value=handle) or None
    context |= {
        "agents": session_selectors.facet_values(projects=one, field="agent"),
        "agent_handle": handle if agent else "",
        "can_start": access.has_role(request.user, project, Role.ENGINEER),
    }
    try:
        found = advice.project_advice(project=project, days=days, agent=agent)
    except (BadRequest, Conflict) as exc:
        context["why"] = exc.message.removeprefix("advice: ")
        return render(request, "compaction/advice.html", context)
    context |= {
        "advice": found,
        "advice_agents": advice.agent_views(found, project=project),
        "recommendation": (
            advice.recommendation_view(
                found["recommended"], project=project, blocked=advice.blocked_count(found)
            )
            if found["recommended"] is not None
            else None  # the page says why: found["no_recommendation"]
        ),
        "tolerance_points": round(RETENTION_TOLERANCE * 100),
        "experiments": advice.advice_experiments(project=project, days=days, agent=agent),
    }
    return render(request, "compaction/advice.html", context)


def _experiment_context(request: HttpRequest, pk: int) -> dict[str, Any]:
    try:
        experiment = selectors.experiment_get(projects=_projects(request), pk=pk)
    except NotFound:
        raise Http404("No such experiment in your projects") from None
    runs = list(experiment.runs.select_related("session").order_by("session__external_id", "pk"))
    done = sum(not run.is_active for run in runs)
    saved = prices.experiment_money(experiment) if not experiment.is_active else {}
    billed = selectors.experiment_billed(experiment)
    found = advice.experiment_advice(experiment) if not experiment.is_active else None
    front = {row["label"] for row in found["front"]} if found else set()
    rows: list[dict[str, Any]] = [
        {
            **row,
            "usd_saved": saved[row["label"]].saved_usd if row["label"] in saved else None,
            "compactions_usd": (
                saved[row["label"]].compactions_usd if row["label"] in saved else None
            ),
            "on_front": row["label"] in front,
        }
        for row in selectors.experiment_rows(experiment)
    ]
    return {
        "experiment": experiment,
        "runs": runs,
        "done": done,
        "rows": rows,
        "advice": found,
        "billed": billed,
        "billed_rule": selectors.BILLED_RULE,
        "advice_agents": advice.agent_views(found, project=experiment.project) if found else [],
        "recommendation": (
            advice.recommendation_view(
                found["recommended"],
                project=experiment.project,
                agent=next(iter(found["recommended_by_agent"]), None)
                if len(found["recommended_by_agent"]) == 1
                else None,
                blocked=advice.blocked_count(found),
            )
            if found and found["recommended"] is not None
            else None
        ),
        "tolerance_points": round(RETENTION_TOLERANCE * 100),
        "figure": charts.savings_vs_retention(rows, front=front) if rows else None,
        "money_rule": selectors.MONEY_RULE,
        "full_rule": selectors.FULL_RULE,
        "unscored": [f"#{n}" for n, r in enumerate(rows, 1) if r.get("retention_score") is None],
    }


@login_required
def experiment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "compaction/experiment_detail.html", _experiment_context(request, pk))


@login_required
def experiment_status(request: HttpRequest, pk: int) -> HttpResponse:
    context = _experiment_context(request, pk)
    return render(request, "compaction/experiment_detail.html#experiment-body", context)


@login_required
@require_http_methods(["POST"])
def session_reanalyze(request: HttpRequest, pk: int) -> HttpResponse:
    """The session page's "Re-analyse" button (engineers and admins)."""
    session = session_or_404(request, pk)
    access.require_role(request.user, session.project_id, Role.ENGINEER)
    services.analysis_rerun(session_id=session.pk)
    flash.success(request, "Analysis queued: the page shows it running, then the new results.")
    return redirect("sessions:detail", session.pk)
