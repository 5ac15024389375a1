"""Pages for compaction spans, replays and experiments."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.contrib import messages as flash
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from compaction import alert_selectors, charts, selectors, services
from compaction.forms import ExperimentForm, PolicyForm
from compaction.models import CompactionSpan, ReplayRun
from sessions import selectors as session_selectors
from sessions.errors import BadRequest, NotFound
from sessions.models import AgentSession, Message

# How many replaced messages the span page shows at each end of the summarized middle.
MIDDLE_EDGE = 40
SECTION_NAMES = (
    "goal",
    "constraints",
    "decisions",
    "done",
    "current state",
    "next steps",
    "files touched",
    "errors",
)
# "Goal: text", "## Constraints", "**Next steps**:" (a known name, text may follow the colon),
# or a short title alone on its line: "1. Primary Request and Intent:", "## Key files".
_KNOWN_HEADING = re.compile(
    r"^\s*(?:#+\s*|\d+\.\s+)?(?:\*\*)?(" + "|".join(SECTION_NAMES) + r")(?:\*\*)?"
    r"\s*(?::(?:\*\*)?\s*(.*))?$",
    re.IGNORECASE,
)
_TITLE_LINE = re.compile(
    r"^\s*(?:#+\s*|\d+\.\s+)(?:\*\*)?([A-Z][\w'/&(), -]{2,60}?)(?:\*\*)?\s*:?(?:\*\*)?\s*$"
    r"|^\s*(?:\*\*)?([A-Z][\w'/&(), -]{2,60}?)(?:\*\*)?\s*:(?:\*\*)?\s*$"
)


# Rules first: a lost constraint matters more than a file the summary did not name.
KIND_ORDER = {"probe": 0, "constraint": 1, "identifier": 2, "path": 3}


def _projects(request: HttpRequest) -> Any:
    return session_selectors.projects_for_user(request.user)


def _session(request: HttpRequest, pk: int) -> AgentSession:
    try:
        return session_selectors.session_get(projects=_projects(request), pk=pk)
    except NotFound:
        raise Http404("No such session in your projects") from None


def summary_sections(text: str) -> list[tuple[str, str]]:
    """Split a summary into its titled sections; [] when it has fewer than two.

    Text before the first title is kept as an "Overview" section, so nothing is hidden.

    >>> summary_sections("Goal: ship it\nConstraints:\n- no API change")
    [('Goal', 'ship it'), ('Constraints', '- no API change')]
    """
    sections: list[tuple[str, list[str]]] = []
    preface: list[str] = []
    for line in text.splitlines():
        known = _KNOWN_HEADING.match(line)
        title = None if known else _TITLE_LINE.match(line)
        if known:
            sections.append(
                (known.group(1).capitalize(), [known.group(2)] if known.group(2) else [])
            )
        elif title and (title.group(1) or len(title.group(2).split()) <= 5):
            sections.append(((title.group(1) or title.group(2)).strip(), []))
        elif sections:
            sections[-1][1].append(line)
        else:
            preface.append(line)
    if len(sections) < 2:
        return []
    out = [(name, body) for name, lines in sections if (body := "\n".join(lines).strip())]
    if "\n".join(preface).strip():
        out.insert(0, ("Overview", "\n".join(preface).strip()))
    return out


@dataclass(frozen=True)
class Section:
    name: str
    items: list[str]
    text: str


def _structured(span: CompactionSpan) -> list[Section]:
    """The summary's sections: the replay's own structure, or parsed from observed text."""
    if span.summary_sections:
        out = []
        for key, value in span.summary_sections.items():
            if value in (None, "", []):
                continue
            name = key.replace("_", " ").capitalize()
            if isinstance(value, list):
                out.append(Section(name, [str(v) for v in value], ""))
            else:
                out.append(Section(name, [], str(value)))
        return out
    return [Section(name, [], text) for name, text in summary_sections(span.summary)]


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


@login_required
def span_detail(request: HttpRequest, pk: int, span_pk: int) -> HttpResponse:
    session = _session(request, pk)
    span = (
        CompactionSpan.objects.filter(session=session, pk=span_pk)
        .select_related("event", "replay")
        .first()
    )
    if span is None:
        raise Http404("No such compaction in this session")
    retention = sorted(
        span.retention,
        key=lambda item: (item["kept"], KIND_ORDER.get(item["kind"], 9), item.get("seq") or 0),
    )
    context = {
        "session": session,
        "span": span,
        "history": _history(span),
        "sections": _structured(span),
        "retention": retention,
        "lost": [item for item in retention if not item["kept"]],
        "next_messages": Message.objects.filter(session=session, seq__gte=span.seq).order_by("seq")[
            :3
        ],
    }
    return render(request, "compaction/span_detail.html", context)


@login_required
def span_middle(request: HttpRequest, pk: int, span_pk: int) -> HttpResponse:
    """The hidden part of a long summarized middle, loaded on demand."""
    session = _session(request, pk)
    span = CompactionSpan.objects.filter(session=session, pk=span_pk).first()
    if span is None:
        raise Http404("No such compaction in this session")
    history = _history(span)
    shown = {m.seq for m in history.middle_start + history.middle_end}
    start = span.replaced_from_seq or 0
    end = span.replaced_to_seq if span.replaced_to_seq is not None else span.seq - 1
    hidden = (
        Message.objects.filter(session=session, seq__gte=start, seq__lte=end)
        .exclude(seq__in=shown)
        .order_by("seq")
    )
    return render(request, "compaction/_messages.html", {"messages": hidden})


@login_required
@require_http_methods(["GET", "POST"])
def replay_new(request: HttpRequest, pk: int) -> HttpResponse:
    session = _session(request, pk)
    form = PolicyForm(request.POST or None, session=session)
    if request.method == "POST" and form.is_valid():
        try:
            run = services.replay_run_start(
                session=session, policy=form.policy(), user=request.user
            )
        except BadRequest as exc:
            form.add_error(None, exc.message)
        else:
            return redirect("compaction:replay", run.pk)
    return render(request, "compaction/replay_new.html", {"session": session, "form": form})


def _replay(request: HttpRequest, pk: int) -> ReplayRun:
    try:
        return selectors.replay_get(projects=_projects(request), pk=pk)
    except NotFound:
        raise Http404("No such replay in your projects") from None


def _replay_context(run: ReplayRun) -> dict[str, Any]:
    context: dict[str, Any] = {"run": run, "session": run.session}
    if run.status != "done":
        return context
    analysis = selectors.analysis_for(run.session)
    observed = list(selectors.observed_spans(run.session))
    replayed = list(selectors.replay_spans(run))
    policy = run.policy
    context.update(
        observed_spans=observed,
        replayed_spans=replayed,
        replayed_summaries=[s for s in replayed if s.stage != "clear_tool_results"],
        figure=charts.token_curve(
            analysis.curve if analysis else [],
            spans=[selectors.span_marker(s) for s in observed],
            window=policy.get("context_window"),
            soft_limit=policy.get("soft_limit"),
            hard_limit=policy.get("hard_limit"),
            replayed=run.curve,
            replayed_spans=[
                selectors.span_marker(s) for s in replayed if s.stage != "clear_tool_results"
            ],
        ),
        comparison=_comparison(run),
        alert_comparison=alert_selectors.replay_alert_comparison(run),
    )
    return context


def _comparison(run: ReplayRun) -> list[dict[str, Any]]:
    observed = run.evals.get("observed", {})
    totals = run.totals
    rows = [
        ("Model calls", observed.get("calls"), totals.get("calls")),
        ("Input tokens over the run", observed.get("input_tokens"), totals.get("input_tokens")),
        ("Billed tokens", observed.get("billed_tokens"), totals.get("billed_tokens")),
        ("Compactions (summaries)", observed.get("compactions"), totals.get("compactions")),
        ("Peak context", observed.get("peak_context"), totals.get("peak_context")),
        (
            "Summarizer cost (input tokens)",
            0,
            totals.get("summarizer_cost", {}).get("input_tokens"),
        ),
    ]
    out = []
    for label, before, after in rows:
        delta = after - before if isinstance(before, int) and isinstance(after, int) else None
        out.append({"label": label, "observed": before, "replayed": after, "delta": delta})
    return out


@login_required
def replay_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "compaction/replay_detail.html", _replay_context(_replay(request, pk)))


@login_required
def replay_status(request: HttpRequest, pk: int) -> HttpResponse:
    """Polled while the run is active; once done it renders the results in place."""
    run = _replay(request, pk)
    return render(request, "compaction/replay_detail.html#replay-body", _replay_context(run))


@login_required
def experiment_list(request: HttpRequest) -> HttpResponse:
    experiments = selectors.experiments_for(projects=_projects(request))
    return render(request, "compaction/experiment_list.html", {"experiments": experiments})


@login_required
@require_http_methods(["GET", "POST"])
def experiment_new(request: HttpRequest) -> HttpResponse:
    projects = _projects(request)
    form = ExperimentForm(request.POST or None, projects=projects)
    if request.method == "POST" and form.is_valid():
        project = form.cleaned_data["project"]
        try:
            experiment = services.experiment_start(
                project=project,
                name=form.cleaned_data["name"],
                policies=form.policies(),
                sessions=list(form.chosen_sessions()),
                user=request.user,
            )
        except BadRequest as exc:
            form.add_error(None, exc.message)
        else:
            flash.success(request, f"Experiment started: {experiment.runs.count()} replays queued.")
            return redirect("compaction:experiment", experiment.pk)
    return render(request, "compaction/experiment_new.html", {"form": form})


def _experiment_context(request: HttpRequest, pk: int) -> dict[str, Any]:
    try:
        experiment = selectors.experiment_get(projects=_projects(request), pk=pk)
    except NotFound:
        raise Http404("No such experiment in your projects") from None
    runs = list(experiment.runs.select_related("session").order_by("session__external_id", "pk"))
    done = sum(not run.is_active for run in runs)
    rows = experiment.aggregate.get("policies", [])
    return {
        "experiment": experiment,
        "runs": runs,
        "done": done,
        "rows": rows,
        "figure": charts.savings_vs_retention(rows) if rows else None,
    }


@login_required
def experiment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    return render(request, "compaction/experiment_detail.html", _experiment_context(request, pk))


@login_required
def experiment_status(request: HttpRequest, pk: int) -> HttpResponse:
    context = _experiment_context(request, pk)
    return render(request, "compaction/experiment_detail.html#experiment-body", context)
