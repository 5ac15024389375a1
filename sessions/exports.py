"""CSV and JSON exports of a session's curve and spans and of the sessions list.

Rows are plain dicts built here from selector data; ``csv_response`` and ``json_response``
write them. Exports are pages too: every text a person or an agent wrote (ids, agents,
models, failure reasons) goes out masked (``privacy/masking.py``). Spreadsheet programs run a
cell that starts with ``= + - @``, a tab or a carriage return as a formula, and trace content
is hostile, so every CSV text cell that starts with one of those is prefixed with a quote
(``csv_cell``). JSON is written as is.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.http import HttpResponse, JsonResponse

from compaction import selectors as compaction_selectors
from compaction.models import CompactionSpan, SessionAnalysis
from privacy import masking
from sessions.models import AgentSession

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CURVE_COLUMNS = ("seq", "context_tokens", "fill", "billed_tokens", "estimated")
SPAN_COLUMNS = (
    "seq",
    "trigger",
    "stage",
    "tokens_before",
    "tokens_after",
    "tokens_dropped",
    "replaced_from_seq",
    "replaced_to_seq",
    "retention_score",
    "failed",
    "failure_reason",
)
LIST_COLUMNS = (
    "id",
    "external_id",
    "project",
    "agent",
    "model",
    "messages",
    "compactions",
    "peak_fill",
    "started_at",
    "updated_at",
)


def csv_cell(value: Any) -> Any:
    """A value safe to open in a spreadsheet: text that would run as a formula gets a quote.

    >>> csv_cell("=HYPERLINK(\\"http://evil\\")")
    '\\'=HYPERLINK("http://evil")'
    >>> csv_cell(-3), csv_cell("billing")
    (-3, 'billing')
    """
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_response(
    rows: Iterable[Mapping[str, Any]], *, columns: Sequence[str], filename: str
) -> HttpResponse:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([csv_cell("" if row.get(c) is None else row.get(c)) for c in columns])
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def json_response(payload: Any, *, filename: str) -> JsonResponse:
    response = JsonResponse(payload, safe=False, json_dumps_params={"ensure_ascii": False})
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def curve_rows(analysis: SessionAnalysis | None) -> list[dict[str, Any]]:
    return [
        {column: values.get(column) for column in CURVE_COLUMNS}
        for values in map(dict, compaction_selectors.analysis_curve(analysis))
    ]


def span_rows(spans: Iterable[CompactionSpan]) -> list[dict[str, Any]]:
    return [
        {
            "seq": span.seq,
            "trigger": span.trigger,
            "stage": span.stage,
            "tokens_before": span.tokens_before,
            "tokens_after": span.tokens_after,
            "tokens_dropped": span.tokens_dropped,
            "replaced_from_seq": span.replaced_from_seq,
            "replaced_to_seq": span.replaced_to_seq,
            "retention_score": span.retention_score,
            "failed": span.failed,
            "failure_reason": masking.text_mask(span.failure_reason),
        }
        for span in spans
    ]


def session_rows(sessions: Iterable[AgentSession]) -> list[dict[str, Any]]:
    rows = []
    for session in sessions:
        analysis = getattr(session, "analysis", None)
        rows.append(
            {
                "id": session.pk,
                "external_id": masking.text_mask(session.external_id),
                "project": session.project.name,
                "agent": masking.text_mask(session.agent),
                "model": masking.text_mask(session.model),
                "messages": session.message_count,
                "compactions": session.compaction_count,
                "peak_fill": analysis.peak_fill if analysis else None,
                "started_at": session.started_at.isoformat() if session.started_at else None,
                "updated_at": session.updated_at.isoformat(),
            }
        )
    return rows
