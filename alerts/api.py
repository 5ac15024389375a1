"""Alerts over the API: the project's queue, and acknowledge / resolve / mute.

Mounted on the main NinjaAPI (config/api.py) with ``api.add_router("/", alerts_api.router)``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Router, Schema
from pydantic import Field

from alerts import selectors, services
from alerts.models import Alert
from privacy import masking
from sessions import limits
from sessions import selectors as session_selectors
from sessions.auth import KeyRequest
from sessions.models import Project
from sessions.schemas import Error

router = Router(tags=["alerts"])

# The operation ids the published schema has carried since these endpoints lived in
# compaction/alerts_api.py: a client generated from it names its methods after them.
OPERATION_ID_PREFIX = "compaction_alerts_api_"


class AlertOut(Schema):
    id: int
    rule: str
    severity: str
    state: str
    session: str
    title: str
    evidence: dict[str, Any]
    opened_at: datetime
    updated_at: datetime
    assignee: str | None = None
    muted_until: datetime | None = None
    resolution: str | None = None


class AlertList(Schema):
    items: list[AlertOut]
    count: int


class ResolveIn(Schema):
    reason: str = Field(max_length=limits.RESOLVE_REASON_MAX)


class MuteIn(Schema):
    until: datetime


def alert_out(alert: Alert) -> AlertOut:
    return AlertOut(
        id=alert.pk,
        rule=alert.rule,
        severity=alert.severity,
        state=alert.state,
        session=alert.session.external_id,  # the key's own handle for its session
        title=masking.text_mask(alert.title),
        evidence=masking.json_mask(dict(alert.evidence)),
        opened_at=alert.opened_at,
        updated_at=alert.updated_at,
        assignee=alert.assignee.get_username() if alert.assignee else None,
        muted_until=alert.muted_until,
        resolution=masking.text_mask(alert.resolution) or None,
    )


def _projects(request: KeyRequest) -> Any:
    return Project.objects.filter(pk=request.auth.pk)


@router.get(
    "/alerts",
    response={200: AlertList, 400: Error, 401: Error, 404: Error},
    operation_id=OPERATION_ID_PREFIX + "alert_list",
)
def alert_list(
    request: KeyRequest, state: str = "", rule: str = "", session: str = ""
) -> AlertList:
    if session:
        session_selectors.session_by_external_id(project=request.auth, external_id=session)
    filters = selectors.AlertFilters.parse({"state": state, "rule": rule, "session": session})
    found = list(selectors.alerts_filtered(projects=_projects(request), filters=filters))
    return AlertList(items=[alert_out(a) for a in found], count=len(found))


def _alert(request: KeyRequest, alert_id: int) -> Alert:
    return selectors.alert_get(projects=_projects(request), pk=alert_id)


@router.post(
    "/alerts/{alert_id}/acknowledge",
    response={200: AlertOut, 400: Error, 401: Error, 404: Error, 409: Error},
    operation_id=OPERATION_ID_PREFIX + "alert_acknowledge",
)
def alert_acknowledge(request: KeyRequest, alert_id: int) -> AlertOut:
    alert = services.alert_acknowledge(alert_id=_alert(request, alert_id).pk)
    return alert_out(selectors.alert_get(projects=_projects(request), pk=alert.pk))


@router.post(
    "/alerts/{alert_id}/resolve",
    response={200: AlertOut, 400: Error, 401: Error, 404: Error, 409: Error},
    operation_id=OPERATION_ID_PREFIX + "alert_resolve",
)
def alert_resolve(request: KeyRequest, alert_id: int, body: ResolveIn) -> AlertOut:
    alert = services.alert_resolve(alert_id=_alert(request, alert_id).pk, reason=body.reason)
    return alert_out(selectors.alert_get(projects=_projects(request), pk=alert.pk))


@router.post(
    "/alerts/{alert_id}/mute",
    response={200: AlertOut, 400: Error, 401: Error, 404: Error, 409: Error},
    operation_id=OPERATION_ID_PREFIX + "alert_mute",
)
def alert_mute(request: KeyRequest, alert_id: int, body: MuteIn) -> AlertOut:
    alert = services.alert_mute(alert_id=_alert(request, alert_id).pk, until=body.until)
    return alert_out(selectors.alert_get(projects=_projects(request), pk=alert.pk))
