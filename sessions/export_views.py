"""Downloads: a session's curve and spans, and the (filtered) sessions list, as CSV or JSON.

Members only (the same project scoping as the pages); formats are ``csv`` and ``json``.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse

from alerts import selectors as alert_selectors
from compaction import selectors as compaction_selectors
from privacy import audit, masking
from privacy.models import AuditAction
from sessions import exports, selectors
from sessions.forms import SessionFilterForm
from sessions.models import Project
from sessions.pages import session_or_404

FORMATS = ("csv", "json")
LIST_EXPORT_LIMIT = 10_000


def _format(fmt: str) -> str:
    if fmt not in FORMATS:
        raise Http404("Export formats: csv, json")
    return fmt


def _recorded(request: HttpRequest, project: Project, target: str, rows: int) -> None:
    """Every export is in the audit log: what left, for whom, how many rows."""
    audit.audit_record(
        actor=request.user,
        action=AuditAction.EXPORT,
        project=project,
        target=target,
        detail={"rows": rows},
    )


@login_required
def session_curve_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    session = session_or_404(request, pk)
    rows = exports.curve_rows(compaction_selectors.analysis_for(session))
    name = f"session-{session.pk}-curve.{_format(fmt)}"
    _recorded(request, session.project, f"session:{session.pk} curve.{fmt}", len(rows))
    if fmt == "csv":
        return exports.csv_response(rows, columns=exports.CURVE_COLUMNS, filename=name)
    return exports.json_response(
        {"session": masking.text_mask(session.external_id), "curve": rows}, filename=name
    )


@login_required
def session_spans_export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    session = session_or_404(request, pk)
    rows = exports.span_rows(compaction_selectors.observed_spans(session))
    name = f"session-{session.pk}-spans.{_format(fmt)}"
    _recorded(request, session.project, f"session:{session.pk} spans.{fmt}", len(rows))
    if fmt == "csv":
        return exports.csv_response(rows, columns=exports.SPAN_COLUMNS, filename=name)
    return exports.json_response(
        {"session": masking.text_mask(session.external_id), "spans": rows}, filename=name
    )


@login_required
def session_list_export(request: HttpRequest, fmt: str) -> HttpResponse:
    """The list as filtered by the same query string as the page (first 10,000 rows)."""
    _format(fmt)
    form = SessionFilterForm(request.GET)
    filters = form.cleaned_data if form.is_valid() else {}
    sessions = selectors.session_search(
        projects=selectors.projects_for_user(request.user), filters=filters
    )
    sessions = alert_selectors.sessions_with_alerts(
        sessions, only_with_open=filters.get("problems") == "alerts"
    )
    listed = list(sessions.select_related("project")[:LIST_EXPORT_LIMIT])
    rows = exports.session_rows(listed)
    name = f"sessions.{fmt}"
    per_project: dict[int, tuple[Project, int]] = {}
    for session in listed:
        project, count = per_project.get(session.project_id, (session.project, 0))
        per_project[session.project_id] = (project, count + 1)
    for project, count in per_project.values():
        _recorded(request, project, f"sessions list.{fmt}", count)
    if fmt == "csv":
        return exports.csv_response(rows, columns=exports.LIST_COLUMNS, filename=name)
    return exports.json_response({"sessions": rows}, filename=name)
