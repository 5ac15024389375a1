"""The session endpoints under /api/v1/: ingest for agents, read-back for scripts.

Endpoints stay thin: parse, call one service or selector, shape the answer. The API itself
(parser, error answers, the routers of both apps) is built in ``config/api.py``; keys and the
rate limit are checked in ``sessions/auth.py``.
"""

from __future__ import annotations

from ninja import Query, Router, Schema, Status
from pydantic import Field

from sessions import selectors, services
from sessions.auth import KeyRequest, ProjectKey
from sessions.models import AgentSession, Message
from sessions.schemas import (
    Accepted,
    Error,
    EventBatch,
    MessageOut,
    MessagePage,
    SessionList,
    SessionOut,
)

router = Router()
OFFSET_MAX = 1_000_000_000


def _session_out(session: AgentSession) -> SessionOut:
    return SessionOut.model_validate(session, from_attributes=True)


def _message_out(message: Message) -> MessageOut:
    return MessageOut(
        seq=message.seq,
        role=message.role,
        content=message.content,
        timestamp=message.timestamp,
        usage=message.usage,
    )


class PageParams(Schema):
    # bounded so the OFFSET sent to PostgreSQL (a bigint) never overflows
    offset: int = Field(0, ge=0, le=OFFSET_MAX)
    limit: int = Field(100, ge=1, le=1000)


@router.post(
    "/sessions/{external_id}/events",
    response={202: Accepted, 400: Error, 401: Error, 409: Error, 413: Error, 429: Error},
    summary="Upload a batch of messages, compactions and probes",
    auth=ProjectKey(ingest=True),
)
def ingest_events(request: KeyRequest, external_id: str, batch: EventBatch) -> Status[Accepted]:
    result = services.events_ingest(project=request.auth, external_id=external_id, batch=batch)
    return Status(202, Accepted(received=result.received, duplicates=result.duplicates))


@router.get(
    "/sessions",
    response={200: SessionList, 400: Error, 401: Error},
    summary="Sessions of the key's project",
)
def list_sessions(request: KeyRequest, page: Query[PageParams]) -> SessionList:
    sessions = AgentSession.objects.filter(project=request.auth).order_by("-updated_at", "pk")
    return SessionList(
        count=sessions.count(),
        offset=page.offset,
        limit=page.limit,
        sessions=[_session_out(s) for s in sessions[page.offset : page.offset + page.limit]],
    )


@router.get(
    "/sessions/{external_id}", response={200: SessionOut, 400: Error, 401: Error, 404: Error}
)
def get_session(request: KeyRequest, external_id: str) -> SessionOut:
    session = selectors.session_by_external_id(project=request.auth, external_id=external_id)
    return _session_out(session)


@router.get(
    "/sessions/{external_id}/messages",
    response={200: MessagePage, 400: Error, 401: Error, 404: Error},
)
def list_messages(request: KeyRequest, external_id: str, page: Query[PageParams]) -> MessagePage:
    session = selectors.session_by_external_id(project=request.auth, external_id=external_id)
    messages = selectors.message_page(session=session, offset=page.offset, limit=page.limit)
    return MessagePage(
        count=session.message_count,
        offset=page.offset,
        limit=page.limit,
        messages=[_message_out(m) for m in messages],
    )
