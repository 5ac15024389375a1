"""The HTTP API under /api/v1/: ingest for agents, read-back for scripts.

Endpoints stay thin: parse, call one service or selector, shape the answer.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI, Query, Schema, Status
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.security import HttpBearer
from pydantic import Field

from sessions import selectors, services, wire
from sessions.errors import ApiError, BadRequest, TooManyRequests
from sessions.models import AgentSession, Message, Project
from sessions.schemas import (
    Accepted,
    Error,
    EventBatch,
    MessageOut,
    MessagePage,
    SessionList,
    SessionOut,
)


class IngestParser(Parser):
    """JSON bodies, optionally gzip-compressed, checked for what jsonb cannot store."""

    def parse_body(self, request: HttpRequest) -> Any:
        body = wire.decode_body(
            request.body,
            content_encoding=request.headers.get("Content-Encoding", ""),
            max_bytes=settings.INGEST_MAX_BODY_BYTES,
        )
        data = wire.parse_json(body, max_depth=settings.INGEST_MAX_JSON_DEPTH)
        if not isinstance(data, dict):
            raise BadRequest(f"body: expected a JSON object, got {type(data).__name__}")
        return data


class KeyRequest(HttpRequest):
    """A request that passed ProjectKey: `auth` is the key's project."""

    auth: Project


class ProjectKey(HttpBearer):
    """`Authorization: Bearer <key>`; sets request.auth to the key's Project."""

    def authenticate(self, request: HttpRequest, token: str) -> Project | None:
        return services.api_key_authenticate(raw_key=token)


api = NinjaAPI(
    title="Sawtooth API",
    version="1",
    description="Upload agent traces and read back sessions and their compaction analysis.",
    parser=IngestParser(),
    auth=ProjectKey(),
    urls_namespace="api",
)


def _error(request: HttpRequest, status: int, message: str) -> HttpResponse:
    return api.create_response(request, {"error": message}, status=status)


def _field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    response = _error(request, exc.status, exc.message)
    if isinstance(exc, TooManyRequests):
        response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # ninja wraps any body-parser exception in a generic 400; ours carry the real answer.
    if isinstance(exc.__cause__, ApiError):
        return _api_error(request, exc.__cause__)
    if isinstance(exc.__cause__, RequestDataTooBig):
        return _too_big(request, exc.__cause__)
    return _error(request, exc.status_code, exc.message)


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return _error(
        request, 413, f"body: larger than the {settings.INGEST_MAX_BODY_BYTES}-byte limit"
    )


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = _error(request, 401, "Authorization: missing, unknown or revoked project key")
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    first = exc.errors[0]
    loc = [part for part in first.get("loc", ()) if part not in ("body", "query", "path")]
    if loc and loc[0] == "batch":
        loc = loc[1:]
    message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
    path = _field_path(loc) or "body"
    if first.get("type") == "missing":
        # ninja never calls the parser for an empty body; the whole batch is then "missing".
        message = "empty; expected a JSON object" if path == "body" else "required"
    text = f"{path}{message}" if message.startswith("[") else f"{path}: {message}"
    if len(exc.errors) > 1:
        text += f" (and {len(exc.errors) - 1} more problem{'s' if len(exc.errors) > 2 else ''})"
    return _error(request, 400, text)


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
    offset: int = Field(0, ge=0)
    limit: int = Field(100, ge=1, le=1000)


@api.post(
    "/sessions/{external_id}/events",
    response={202: Accepted, 400: Error, 401: Error, 409: Error, 413: Error, 429: Error},
    summary="Upload a batch of messages, compactions and probes",
)
def ingest_events(request: KeyRequest, external_id: str, batch: EventBatch) -> Status[Accepted]:
    services.ingest_rate_check(project=request.auth)
    result = services.events_ingest(project=request.auth, external_id=external_id, batch=batch)
    return Status(202, Accepted(received=result.received, duplicates=result.duplicates))


@api.get(
    "/sessions", response={200: SessionList, 401: Error}, summary="Sessions of the key's project"
)
def list_sessions(request: KeyRequest, page: Query[PageParams]) -> SessionList:
    sessions = AgentSession.objects.filter(project=request.auth).order_by("-updated_at", "pk")
    return SessionList(
        count=sessions.count(),
        offset=page.offset,
        limit=page.limit,
        sessions=[_session_out(s) for s in sessions[page.offset : page.offset + page.limit]],
    )


@api.get("/sessions/{external_id}", response={200: SessionOut, 401: Error, 404: Error})
def get_session(request: KeyRequest, external_id: str) -> SessionOut:
    session = selectors.session_by_external_id(project=request.auth, external_id=external_id)
    return _session_out(session)


@api.get("/sessions/{external_id}/messages", response={200: MessagePage, 401: Error, 404: Error})
def list_messages(request: KeyRequest, external_id: str, page: Query[PageParams]) -> MessagePage:
    session = selectors.session_by_external_id(project=request.auth, external_id=external_id)
    messages = selectors.message_page(session=session, offset=page.offset, limit=page.limit)
    return MessagePage(
        count=session.message_count,
        offset=page.offset,
        limit=page.limit,
        messages=[_message_out(m) for m in messages],
    )
