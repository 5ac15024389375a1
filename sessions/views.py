"""Session pages. Views fetch through selectors and render; trace content is escaped."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotModified,
    JsonResponse,
)
from django.shortcuts import redirect, render
from django.utils.cache import patch_vary_headers
from django.utils.http import parse_etags, quote_etag
from django.views.decorators.http import require_http_methods

from alerts import selectors as alert_selectors
from compaction import charts
from compaction import forecasts as compaction_forecasts
from compaction import prices as compaction_prices
from compaction import selectors as compaction_selectors
from compaction.engine.messages import is_prompt, message_from_wire
from compaction.models import CompactionSpan, SessionAnalysis
from privacy import selectors as privacy_selectors
from sessions import access, import_views, pages, selectors, services
from sessions.forms import SessionDeleteForm, SessionFilterForm
from sessions.models import AgentSession, Message, Project, Role
from team import selectors as team_selectors

SESSIONS_PER_PAGE = 50
MESSAGES_PER_PAGE = 100


@dataclass(frozen=True)
class TimelineEntry:
    message: Message
    span: CompactionSpan | None
    is_prompt: bool
    is_summary: bool


def _declared_limit(session: AgentSession, name: str) -> int | None:
    """A limit of the agent's own policy, if its metadata declares one
    (``{"compaction_policy": {"soft_limit": ..., "hard_limit": ...}}``)."""
    policy = (
        session.metadata.get("compaction_policy") if isinstance(session.metadata, dict) else None
    )
    value = policy.get(name) if isinstance(policy, dict) else None
    return value if isinstance(value, int) and value > 0 else None


def _is_prompt(message: Message) -> bool:
    """A real user prompt starts a turn (the engine's rule: ``messages.is_prompt``)."""
    wire = {"seq": message.seq, "role": message.role, "content": message.content}
    return is_prompt(message_from_wire(wire, where=f"messages[{message.seq}]"))


@dataclass(frozen=True)
class SessionRow:
    session: AgentSession
    analysis: SessionAnalysis | None
    sparkline: str
    cost: compaction_selectors.SessionCost
    subagents: int = 0


def _query_without(request: HttpRequest, *names: str, form: SessionFilterForm | None = None) -> str:
    """The page's query string for its own links, without ``names`` (and without a refused
    search: the product never puts a person's identifier in a URL it emits)."""
    params = request.GET.copy()
    for name in (*names, *(("q",) if form is not None and form.refusal else ())):
        params.pop(name, None)
    return params.urlencode()


def list_filtered(filters: dict[str, object]) -> bool:
    """Whether the list is narrowed (sorting and the subagent toggle only arrange it)."""
    return any(v not in (None, "") for k, v in filters.items() if k not in ("sort", "subagents"))


# The list's rows poll themselves (hx-target "session-rows"); the answer is 304 while nothing
# the list shows has changed, so many open lists cost one small query each per poll.
ROWS_POLL_TARGET = "session-rows"


def _rows_etag(request: HttpRequest, projects: QuerySet[Project]) -> str:
    version = selectors.session_list_version(projects=projects)
    alerts = alert_selectors.alerts_version(projects=projects)
    seed = f"{request.user.pk}|{request.get_full_path()}|{version}|{alerts}"
    return quote_etag(hashlib.sha256(seed.encode()).hexdigest()[:32])


def _poll_headers(response: HttpResponse, etag: str) -> HttpResponse:
    response["ETag"] = etag
    # Kept by the browser but checked every time: a poll revalidates and gets 304.
    response["Cache-Control"] = "private, no-cache"
    patch_vary_headers(response, ["HX-Target", "Cookie"])
    return response


@login_required
def session_list(request: HttpRequest) -> HttpResponse:
    projects = selectors.projects_for_user(request.user)
    poll = request.headers.get("HX-Target") == ROWS_POLL_TARGET
    etag = _rows_etag(request, projects) if poll else ""
    if poll and etag in parse_etags(request.headers.get("If-None-Match", "")):
        return _poll_headers(HttpResponseNotModified(), etag)
    form = SessionFilterForm(request.GET)
    filters = form.cleaned_data if form.is_valid() else {}
    sessions = selectors.with_subagent_counts(
        selectors.session_search(projects=projects, filters=filters)
    )
    sessions = alert_selectors.sessions_with_alerts(
        sessions, only_with_open=filters.get("problems") == "alerts"
    )
    sessions = privacy_selectors.with_open_finding_counts(sessions)
    page = Paginator(sessions, SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    project_choices = list(projects.order_by("name")[:200])
    filtered = list_filtered(filters)
    rows = []
    costs = compaction_selectors.session_costs(list(page.object_list))
    for session in page.object_list:
        analysis = getattr(session, "analysis", None)
        spark = charts.sparkline_path(analysis.sparkline) if analysis else ""
        rows.append(
            SessionRow(
                session=session,
                analysis=analysis,
                sparkline=spark,
                cost=costs[session.pk],
                subagents=getattr(session, "subagent_count", 0),
            )
        )
    response = render(
        request,
        "sessions/session_list.html#session-rows" if poll else "sessions/session_list.html",
        {
            "page": page,
            "rows": rows,
            "form": form,
            "sort": filters.get("sort", "-updated"),
            "projects": project_choices if len(project_choices) > 1 else [],
            "agents": selectors.facet_values(projects=projects, field="agent"),
            "models": selectors.facet_values(projects=projects, field="model"),
            "extra_query": _query_without(request, "page", form=form),
            "sort_query": _query_without(request, "page", "sort", form=form),
            "search_refusal": form.refusal,
            "filtered": filtered,
            # Only the empty state offers an upload: no query for it on a full list.
            "upload_projects": (
                import_views.upload_projects(request.user) if not rows and not filtered else []
            ),
            "site_url": request.build_absolute_uri("/").rstrip("/"),
            "saved_filters": [
                (saved, team_selectors.filter_query_clean(saved.query))
                for saved in team_selectors.saved_filters_for(user=request.user)
            ],
            "filter_query": team_selectors.filter_query_clean(_query_without(request, form=form)),
        },
    )
    if poll:
        return _poll_headers(response, etag)
    patch_vary_headers(response, ["HX-Target"])
    return response


# Personal data findings listed on a session page (masked); the review queue has them all.
FINDINGS_SHOWN = 100


# The top of a session page (header, curve, compactions) polls itself while the page is open;
# the answer is 304 while nothing it shows has changed (sessions.selectors.session_page_version).
LIVE_POLL_TARGET = "session-live"


def _live_context(request: HttpRequest, session: AgentSession) -> dict[str, Any]:
    """What the top of the session page shows: the part that is drawn again as it grows."""
    analysis = compaction_selectors.analysis_for(session)
    spans = list(compaction_selectors.observed_spans(session).select_related("event"))
    prices = compaction_prices.compaction_prices(session)
    figure = charts.token_curve(
        compaction_selectors.analysis_curve(analysis),
        spans=[compaction_selectors.span_marker(span) for span in spans],
        window=compaction_selectors.session_window(session)[0],
        soft_limit=_declared_limit(session, "soft_limit"),
        hard_limit=_declared_limit(session, "hard_limit"),
    )
    return {
        "session": session,
        "analysis": analysis,
        "billed": compaction_selectors.session_billed(session, analysis),
        "cost": compaction_selectors.session_cost(session),
        "billed_rule": compaction_selectors.BILLED_RULE,
        "spans": spans,
        "span_rows": [(span, prices.get(span.event_id or 0)) for span in spans],
        "prices_total": compaction_prices.compaction_prices_total(prices),
        "price_rule": compaction_prices.PRICE_RULE,
        "figure": figure,
        "point_count": len(analysis.curve) if analysis else 0,
        "can_delete": access.has_role(request.user, session.project_id, Role.ADMIN),
        "can_replay": access.has_role(request.user, session.project_id, Role.ENGINEER),
        "forecast": compaction_forecasts.session_forecast(session, analysis),
        "live": selectors.session_is_live(session),
        "shown_messages": _shown_messages(request, session),
    }


def _shown_messages(request: HttpRequest, session: AgentSession) -> int:
    """How many messages the page's timeline was drawn with (its polls say, as ``shown``);
    more now means new ones arrived."""
    shown = request.GET.get("shown", "")
    return int(shown) if shown.isdecimal() and len(shown) <= 10 else session.message_count


def _live_etag(request: HttpRequest, session: AgentSession) -> str:
    """The same for the page and for its polls while nothing it shows has changed."""
    version = selectors.session_page_version(session)
    seed = f"{request.user.pk}|{session.pk}|{_shown_messages(request, session)}|{version}"
    return quote_etag(hashlib.sha256(seed.encode()).hexdigest()[:32])


@login_required
def session_detail(request: HttpRequest, pk: int) -> HttpResponse:
    session = pages.session_or_404(request, pk)
    etag = _live_etag(request, session)
    if request.headers.get("HX-Target") == LIVE_POLL_TARGET:
        if etag in parse_etags(request.headers.get("If-None-Match", "")):
            return _poll_headers(HttpResponseNotModified(), etag)
        context = _live_context(request, session) | {"live_etag": etag}
        response = render(request, "sessions/session_detail.html#session-live", context)
        return _poll_headers(response, etag)
    context = _live_context(request, session) | {"live_etag": etag}
    spans = context["spans"]
    messages = session.messages.order_by("seq")
    page_number = request.GET.get("page")
    seq = request.GET.get("seq", "")
    # isdecimal, not isdigit: int() refuses "²"; ten digits cover every storable seq
    if seq.isdecimal() and len(seq) <= 10:
        # Jump to the page holding a given seq (links from compactions and permalinks).
        before = messages.filter(seq__lt=int(seq)).count()
        page_number = str(before // MESSAGES_PER_PAGE + 1)
    paginator = Paginator(messages, MESSAGES_PER_PAGE)
    if page_number == "last":  # the live notice's "show the newest"
        page_number = str(paginator.num_pages)
    page = paginator.get_page(page_number)
    spans_by_seq = {span.seq: span for span in spans}
    # Harnesses such as Claude Code write the summary into the trace as a user message.
    summary_seqs = {span.event.summary_seq for span in spans if span.event is not None}
    entries = [
        TimelineEntry(
            message=m,
            span=spans_by_seq.get(m.seq),
            is_prompt=_is_prompt(m) and m.seq not in summary_seqs,
            is_summary=m.seq in summary_seqs,
        )
        for m in page.object_list
    ]
    context |= {
        "page": page,
        "entries": entries,
        "replays": session.replays.order_by("-created_at")[:10],
        "can_reveal": access.has_role(request.user, session.project_id, Role.PRIVACY_REVIEWER),
        "findings": privacy_selectors.session_finding_rows(session, limit=FINDINGS_SHOWN),
        "tool_names": selectors.tool_names(session_id=session.pk, messages=list(page.object_list)),
        "jump_seq": int(seq) if seq.isdecimal() and len(seq) <= 10 else None,
        "subagents": selectors.subagent_tree(session=session),
        "comments": team_selectors.comments_for(session=session),
        "alerts": alert_selectors.session_alerts(session=session),
    }
    response = render(request, "sessions/session_detail.html", context)
    patch_vary_headers(response, ["HX-Target"])
    return response


@login_required
@require_http_methods(["GET", "POST"])
def session_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """Confirm, then delete a session and everything derived from it (admins only)."""
    session = pages.session_or_404(request, pk)
    access.require_role(request.user, session.project_id, Role.ADMIN)
    form = SessionDeleteForm(request.POST or None, external_id=session.external_id)
    if request.method == "POST" and form.is_valid():
        services.session_delete(
            session=session, by=request.user, reason=form.cleaned_data["reason"]
        )
        return redirect("sessions:list")
    return render(request, "sessions/session_delete.html", {"session": session, "form": form})


@login_required
def analysis_status(request: HttpRequest, pk: int) -> HttpResponse:
    """The polled banner on a session page while its analysis is pending."""
    session = pages.session_or_404(request, pk)
    context = {"session": session, "analysis": compaction_selectors.analysis_for(session)}
    return render(request, "sessions/session_detail.html#analysis-status", context)


@login_required
def message_block(request: HttpRequest, pk: int, seq: int, index: int) -> HttpResponse:
    """The full text of one content block, loaded on demand when a long one was clipped."""
    session = pages.session_or_404(request, pk)
    message = session.messages.filter(seq=seq).first()
    if message is None or not 0 <= index < len(message.content):
        raise Http404("No such block")
    block = message.content[index]
    context = {
        "block": block,
        "m": message,
        "i": index,
        "can_reveal": access.has_role(request.user, session.project_id, Role.PRIVACY_REVIEWER),
    }
    return render(request, "sessions/_block_full.html", context)


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers and compose: the process is up and the database answers.
    A signed-in caller also sees how far the analysis pass is behind the uploads of the
    projects they read (search reads what it writes, so search is as far behind): a figure to
    watch, never a reason to answer anything but 200. An anonymous caller sees the status
    alone: the backlog says how busy the projects are."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    if not request.user.is_authenticated:
        return JsonResponse({"status": "ok"})
    lag = compaction_selectors.analysis_lag(projects=selectors.projects_for_user(request.user))
    return JsonResponse(
        {
            "status": "ok",
            "analysis_lag_seconds": lag.seconds,
            "search_lag_seconds": lag.seconds,
            "sessions_waiting": lag.sessions,
        }
    )
