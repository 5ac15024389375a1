"""The content search page: hits with snippets, each opening the exact message."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from compaction import selectors as compaction_selectors
from sessions import limits, search, selectors
from sessions.forms import SessionFilterForm

HITS_PER_PAGE = 50
OTHER_HITS = 10


def _page_number(raw: str) -> int:
    """The page asked for, 1 when it is not a page number; never so far that the OFFSET sent
    to PostgreSQL (a bigint) overflows: a page past the hits is just empty.

    >>> _page_number("3"), _page_number("-1"), _page_number(str(2**63))
    (3, 1, 20000000)
    """
    last = limits.OFFSET_MAX // HITS_PER_PAGE
    digits = raw.lstrip("0")
    if not raw.isascii() or not raw.isdecimal() or not digits:
        return 1
    return last if len(digits) > 12 else min(int(digits), last)


@login_required
def search_page(request: HttpRequest) -> HttpResponse:
    """``/search/?q=…`` plus any of the list's filters, which narrow the sessions searched."""
    projects = selectors.projects_for_user(request.user)
    form = SessionFilterForm(request.GET)
    filters = dict(form.cleaned_data) if form.is_valid() else {}
    q = (filters.pop("q", "") or "").strip()
    context: dict[str, object] = {
        "form": form,
        "q": q,
        "search_refusal": form.refusal,
        "block_head": search.BLOCK_HEAD_CHARS,
        "block_tail": search.BLOCK_TAIL_CHARS,
    }
    if q:
        # Every session the filters allow, subagents included; the query is matched below.
        sessions = selectors.session_search(
            projects=projects, filters={**filters, "subagents": True}
        )
        page_number = _page_number(request.GET.get("page", "1"))
        messages = search.message_hits(
            sessions=sessions,
            q=q,
            offset=(page_number - 1) * HITS_PER_PAGE,
            limit=HITS_PER_PAGE,
        )
        params = request.GET.copy()
        params.pop("page", None)
        context.update(
            message_hits=messages,
            summary_hits=search.summary_hits(sessions=sessions, q=q, limit=OTHER_HITS),
            session_hits=search.session_hits(sessions=sessions, q=q, limit=OTHER_HITS),
            unsearchable=search.unsearchable_count(sessions),
            lag=compaction_selectors.analysis_lag(projects=projects),
            page=Paginator(range(messages.count), HITS_PER_PAGE).get_page(page_number),
            extra_query=params.urlencode(),
            list_query=request.GET.urlencode(),
        )
    return render(request, "sessions/search.html", context)
