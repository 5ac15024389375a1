"""Verdict feedback over the API: the project's precision per verdict kind, and every mark as
JSON Lines (the shapes DESIGN.md fixes). Both read the key's project only.

Mounted on the main NinjaAPI (config/api.py) with ``api.add_router("/", team_api.router)``.
"""

from __future__ import annotations

from django.http import HttpResponse
from ninja import Router, Schema
from pydantic import Field

from sessions.auth import KeyRequest
from sessions.schemas import Error
from team import selectors

router = Router(tags=["feedback"])


class FeedbackKindOut(Schema):
    kind: str = Field(
        ...,
        description="lost, kept or alert (members' marks), then personal_data (the privacy "
        "review's confirm / false positive, one per place), then paraphrased, mentioned and "
        "reloaded (members' marks on those verdicts)",
    )
    marked: int
    right: int
    wrong: int
    precision: float | None = Field(..., description="right / marked; null when none marked")


class FeedbackSummary(Schema):
    items: list[FeedbackKindOut]


@router.get("/feedback/summary", response={200: FeedbackSummary, 401: Error})
def feedback_summary(request: KeyRequest) -> FeedbackSummary:
    rows = selectors.feedback_summary(project=request.auth)
    return FeedbackSummary(
        items=[
            FeedbackKindOut(
                kind=r.kind, marked=r.marked, right=r.right, wrong=r.wrong, precision=r.precision
            )
            for r in rows
        ]
    )


EXPORT_LINE = (
    'One JSON object a line: {"kind": "lost"|"kept"|"paraphrased"|"mentioned"|"reloaded"|"alert", '
    '"session": external id, "seq": the compaction\'s seq (an alert\'s first compaction or '
    'call, or null), "fact": the fact\'s text or the alert\'s title (masked), "verdict": what '
    'the product said ("lost constraint", or the alert\'s rule), "mark": "right"|"wrong", '
    '"note": text, "should_be": on a wrong mark of a fact, the verdict the member says is '
    "right, else null}."
)


@router.get(
    "/feedback/export",
    response={200: None, 401: Error},
    openapi_extra={
        # keyed by the int, as ninja keys ``response=``: a "200" string would be a second 200
        "responses": {
            200: {
                "description": EXPORT_LINE,
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
            }
        }
    },
)
def feedback_export(request: KeyRequest) -> HttpResponse:
    # one mark a line; marks are clicks by people, so a project's export fits in memory
    return HttpResponse(
        "".join(selectors.feedback_lines(project=request.auth)),
        content_type="application/x-ndjson",
    )
