"""The session endpoints under /api/v1/: ingest for agents, read-back for scripts.

Endpoints stay thin: parse, call one service or selector, shape the answer. The API itself
(parser, error answers, the routers of both apps) is built in ``config/api.py``; keys and the
rate limit are checked in ``sessions/auth.py``.
"""

from __future__ import annotations

from typing import Any, Literal

from ninja import Query, Router, Schema, Status
from pydantic import Field

from compaction import selectors as compaction_selectors
from privacy import known_clean, masking
from sessions import auth, limits, search, selectors, services
from sessions.auth import KeyRequest, ProjectKey
from sessions.limits import OFFSET_MAX
from sessions.models import AgentSession, Message
from sessions.schemas import (
    Accepted,
    CostOut,
    Deleted,
    Error,
    EventBatch,
    MessageOut,
    MessagePage,
    SearchHitOut,
    SearchResults,
    SessionList,
    SessionOut,
)

router = Router()


def _masked_cost(cost: dict[str, Any]) -> dict[str, Any]:
    """``cost.by_model[].model`` masked like the session's ``model``."""
    by_model = [{**m, "model": masking.text_mask(m["model"])} for m in cost["by_model"]]
    return {**cost, "by_model": by_model}


def _session_out(session: AgentSession, cost: compaction_selectors.SessionCost) -> SessionOut:
    """A session as its key reads it: the external id it sent (the client's own handle, never
    merged with another by masking), everything else masked; the window and the cost the
    pages show, from the same code."""
    window, source = compaction_selectors.session_window(session)
    return SessionOut(
        external_id=session.external_id,
        title=masking.session_names_mask(masking.text_mask(session.title), session_id=session.pk),
        agent=masking.text_mask(session.agent),
        model=masking.text_mask(session.model),
        context_window=window,
        context_window_source=source,
        started_at=session.started_at,
        ended_at=session.ended_at,
        metadata=masking.json_mask(session.metadata),
        message_count=session.message_count,
        compaction_count=session.compaction_count,
        created_at=session.created_at,
        updated_at=session.updated_at,
        cost=CostOut(**_masked_cost(cost.to_api())),
    )


def _message_out(message: Message, clean: known_clean.CleanRange) -> MessageOut:
    return MessageOut(
        seq=message.seq,
        role=message.role,
        content=masking.json_mask(message.content, values_clean=clean.holds(message.pk)),
        timestamp=message.timestamp,
        usage=message.usage,
        model=masking.text_mask(message.model) or None,
    )


class DeleteParams(Schema):
    reason: str = Field(
        "deleted through the API", min_length=1, max_length=limits.DELETE_REASON_MAX
    )


class PageParams(Schema):
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
    shown = list(sessions[page.offset : page.offset + page.limit])
    costs = compaction_selectors.session_costs(shown)
    return SessionList(
        count=sessions.count(),
        offset=page.offset,
        limit=page.limit,
        sessions=[_session_out(s, costs[s.pk]) for s in shown],
    )


@router.get(
    "/sessions/{external_id}", response={200: SessionOut, 400: Error, 401: Error, 404: Error}
)
def get_session(request: KeyRequest, external_id: str) -> SessionOut:
    session = auth.key_session(request, external_id)
    return _session_out(session, compaction_selectors.session_cost(session))


@router.get(
    "/sessions/{external_id}/messages",
    response={200: MessagePage, 400: Error, 401: Error, 404: Error},
)
def list_messages(request: KeyRequest, external_id: str, page: Query[PageParams]) -> MessagePage:
    session = auth.key_session(request, external_id)
    messages = selectors.message_page(session=session, offset=page.offset, limit=page.limit)
    clean = known_clean.clean_range(session)
    return MessagePage(
        count=session.message_count,
        offset=page.offset,
        limit=page.limit,
        messages=[_message_out(m, clean) for m in messages],
    )


@router.delete(
    "/sessions/{external_id}",
    response={200: Deleted, 400: Error, 401: Error, 404: Error},
    summary="Delete a session and everything derived from it",
)
def delete_session(request: KeyRequest, external_id: str, params: Query[DeleteParams]) -> Deleted:
    session = selectors.session_by_external_id(project=request.auth, external_id=external_id)
    deleted = services.session_delete(
        session=session, by=None, reason=params.reason, actor_name=auth.key_name(request)
    )
    return Deleted(external_id=deleted.external_id, rows=sum(deleted.rows.values()))


class SearchParams(Schema):
    q: str = Field(min_length=1, max_length=limits.SEARCH_QUERY_MAX)
    kind: Literal["message", "summary", "session"] = "message"
    offset: int = Field(0, ge=0, le=OFFSET_MAX)
    limit: int = Field(20, ge=1, le=100)


def _search_hit_out(hit: search.SearchHit) -> SearchHitOut:
    """A hit as the API shows it: personal data masked. Masking changes the text's length, so
    a snippet that held any keeps no highlight offsets rather than wrong ones."""
    snippet = masking.text_mask(hit.text)
    return SearchHitOut(
        kind=hit.kind,
        session=hit.session.external_id,
        session_title=masking.session_names_mask(
            masking.text_mask(hit.session.title), session_id=hit.session.pk
        ),
        seq=hit.seq,
        role=hit.role,
        snippet=snippet,
        highlights=hit.highlights if snippet == hit.text else [],
    )


@router.get(
    "/search",
    response={200: SearchResults, 400: Error, 401: Error},
    summary="Search message text, tool calls, summaries and session metadata",
)
def search_content(request: KeyRequest, params: Query[SearchParams]) -> SearchResults:
    sessions = AgentSession.objects.filter(project=request.auth)
    q = params.q.strip()
    refusal = masking.query_refusal(q)
    if refusal:
        return SearchResults(
            q="",
            kind=params.kind,
            count=0,
            count_capped=False,
            offset=params.offset,
            limit=params.limit,
            items=[],
            refused=f"not searched: {refusal}",
        )
    if params.kind == "message":
        page = search.message_hits(sessions=sessions, q=q, offset=params.offset, limit=params.limit)
    elif params.kind == "summary":
        page = search.summary_hits(sessions=sessions, q=q, limit=params.limit)
    else:
        page = search.session_hits(sessions=sessions, q=q, limit=params.limit)
    return SearchResults(
        q=q,
        kind=params.kind,
        count=page.count,
        count_capped=page.count_capped,
        offset=params.offset,
        limit=params.limit,
        items=[_search_hit_out(hit) for hit in page.hits],
        refused=None,
    )
