"""API for personal data: the findings of a session, masked, by the project's ingest key."""

from __future__ import annotations

from ninja import Router

from privacy import selectors
from privacy.schemas import FindingList, FindingOut
from sessions import auth
from sessions.auth import KeyRequest
from sessions.schemas import Error

router = Router(tags=["analysis"])


@router.get(
    "/sessions/{external_id}/findings",
    response={200: FindingList, 401: Error, 404: Error},
    # the id it had in compaction/api.py, so clients generated from the schema keep working
    operation_id="compaction_api_session_findings",
)
def session_findings(request: KeyRequest, external_id: str) -> FindingList:
    session = auth.key_session(request, external_id)
    return FindingList(
        items=[
            FindingOut(
                kind=f.kind,
                where=f.where,
                seq=f.seq,
                masked=f.masked,
                copied_from_raw=f.copied_from_raw,
                summary_delta=f.summary_delta,
                status=f.status,
                level=f.level,
            )
            for f in selectors.session_findings(session)
        ]
    )
