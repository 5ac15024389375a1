"""The one place that builds the HTTP API under /api/v1/: parser, error answers, routers.

Each app keeps its endpoints in a ``Router`` (``sessions/api.py``, ``sessions/import_api.py``,
``compaction/api.py``); a new router is registered at the bottom of this file. Keys and the
ingest rate limit are checked in ``sessions/auth.py``; every error, whatever raised it, is
answered as ``{"error": "..."}`` naming the field.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from compaction import alerts_api
from compaction import api as compaction_api
from config.middleware import database_unavailable_response
from sessions import api as sessions_api
from sessions import auth, import_api, wire
from sessions.errors import ApiError, BadRequest, TooManyRequests, Unauthorized


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


api = NinjaAPI(
    title="Sawtooth API",
    version="1",
    description="Upload agent traces and read back sessions and their compaction analysis.",
    parser=IngestParser(),
    auth=auth.ProjectKey(),
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
    if isinstance(exc, Unauthorized):
        response["WWW-Authenticate"] = "Bearer"
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


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def _database_down(request: HttpRequest, exc: Exception) -> HttpResponse:
    return database_unavailable_response(request)


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    return _api_error(request, Unauthorized(auth.UNAUTHORIZED))


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


api.add_router("/", sessions_api.router)
api.add_router("/", compaction_api.router)
api.add_router("/", import_api.router)
api.add_router("/", alerts_api.router)
