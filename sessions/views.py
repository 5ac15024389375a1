"""Session pages. Views fetch through selectors and render; trace content is escaped."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from sessions import selectors
from sessions.errors import NotFound

SESSIONS_PER_PAGE = 50
MESSAGES_PER_PAGE = 100


@login_required
def session_list(request: HttpRequest) -> HttpResponse:
    projects = selectors.projects_for_user(request.user)
    sessions = selectors.session_list(projects=projects).order_by("-updated_at", "pk")
    page = Paginator(sessions, SESSIONS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "sessions/session_list.html", {"page": page})


@login_required
def session_detail(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        session = selectors.session_get(projects=selectors.projects_for_user(request.user), pk=pk)
    except NotFound:
        raise Http404("No such session in your projects") from None
    messages = session.messages.order_by("seq")
    page_number = request.GET.get("page")
    if request.GET.get("seq", "").isdigit():
        # Jump to the page holding a given seq (links from compactions and permalinks).
        before = messages.filter(seq__lt=int(request.GET["seq"])).count()
        page_number = str(before // MESSAGES_PER_PAGE + 1)
    page = Paginator(messages, MESSAGES_PER_PAGE).get_page(page_number)
    compactions = session.compaction_events.order_by("seq")
    return render(
        request,
        "sessions/session_detail.html",
        {"session": session, "page": page, "compactions": compactions},
    )


def healthz(request: HttpRequest) -> JsonResponse:
    """Liveness for load balancers and compose: the process is up and the database answers."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return JsonResponse({"status": "ok"})
