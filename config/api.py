"""The one place that builds the HTTP API under /api/v1/: parser, error answers, routers.

Each app keeps its endpoints in a ``Router`` (``sessions/api.py``, ``sessions/import_api.py``,
``compaction/api.py``, ``alerts/api.py``, ``privacy/api.py``, ``team/api.py``); a new router is
registered at the bottom of this file. Keys and the ingest rate limit are checked in
``sessions/auth.py``; every error, whatever raised it, is answered as
``{"error": "..."}`` naming the field.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from django.conf import settings
from django.core.exceptions import (
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.db import DataError, InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.views import defaults
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder

from alerts import api as alerts_api
from compaction import api as compaction_api
from config.middleware import database_unavailable_response
from privacy import api as privacy_api
from sessions import api as sessions_api
from sessions import auth, import_api, wire
from sessions.errors import ITEM_LISTS, ApiError, BadRequest, TooManyRequests, Unauthorized
from team import api as team_api


class IngestParser(Parser):
    """JSON bodies, optionally gzip-compressed, checked for what jsonb cannot store."""

    def parse_body(self, request: HttpRequest) -> Any:
        body = wire.decode_body(
            request.body,
            content_encoding=request.headers.get("Content-Encoding", ""),
            max_bytes=settings.INGEST_MAX_BODY_BYTES,
        )
        data = wire.parse_json(body, max_depth=settings.INGEST_MAX_JSON_DEPTH, check=False)
        if not isinstance(data, dict):
            raise BadRequest(f"body: expected a JSON object, got {type(data).__name__}")
        wire.check_batch_json(data, max_depth=settings.INGEST_MAX_JSON_DEPTH)
        return data


class FastJSONRenderer(JSONRenderer):
    """JSON answers written by orjson: a page of 100 messages (~450 KB) in well under a
    millisecond, where the standard library took some 3 ms. Values the encoder does not know
    (dates, decimals, models) go through ninja's encoder as before, so dates keep Django's
    form; anything orjson refuses (an integer past 64 bits) is written by the standard library.
    The bytes differ only in whitespace and in non-ASCII text sent as UTF-8, not escaped."""

    _fallback = NinjaJSONEncoder()

    def render(self, request: HttpRequest, data: Any, *, response_status: int) -> Any:
        try:
            return orjson.dumps(
                data,
                default=self._fallback.default,
                option=orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS,
            )
        except orjson.JSONEncodeError:
            return super().render(request, data, response_status=response_status)


logger = logging.getLogger("sawtooth.api")

api = NinjaAPI(
    title="Sawtooth API",
    version="1",
    description="Upload agent traces and read back sessions and their compaction analysis.",
    parser=IngestParser(),
    renderer=FastJSONRenderer(),
    auth=auth.ProjectKey(),
    urls_namespace="api",
)


def _error(
    request: HttpRequest,
    status: int,
    message: str,
    *,
    bad_items: dict[str, list[int]] | None = None,
) -> HttpResponse:
    body: dict[str, Any] = {"error": message}
    for name, indexes in (bad_items or {}).items():
        if indexes:
            # Machine-readable, additive: which messages[] (compactions[], probes[]) of the
            # batch were refused, so a client (the Recorder) drops those, resends the others.
            body[f"bad_{name}"] = indexes
    return api.create_response(request, body, status=status)


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
    response = _error(request, exc.status, exc.message, bad_items=exc.bad_items)
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


@api.exception_handler(SuspiciousOperation)
def _suspicious(request: HttpRequest, exc: SuspiciousOperation) -> HttpResponse:
    # Django's own refusals of a request body (too many files or fields) answer its HTML page
    # unless caught here; the API answers JSON naming the limit.
    if isinstance(exc, RequestDataTooBig):
        return _too_big(request, exc)
    if isinstance(exc, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return _error(request, 413, f"files: more than the {limit} files one request may carry")
    if isinstance(exc, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        return _error(request, 413, f"fields: more than the {limit} fields one request may carry")
    return _error(request, 400, f"request: refused ({type(exc).__name__})")


@api.exception_handler(MultiPartParserError)
def _bad_multipart(request: HttpRequest, exc: MultiPartParserError) -> HttpResponse:
    return _error(request, 400, f"body: not valid multipart/form-data ({str(exc)[:200]})")


@api.exception_handler(OperationalError)
@api.exception_handler(InterfaceError)
def _database_down(request: HttpRequest, exc: Exception) -> HttpResponse:
    return database_unavailable_response(request)


@api.exception_handler(DataError)
def _not_storable(request: HttpRequest, exc: DataError) -> HttpResponse:
    # Validation keeps every field within what the columns hold; should a value still get
    # past it, the client gets a 400, and the log (see privacy/log_safety.py) no content.
    logger.warning("a value could not be stored: %s", type(exc).__name__)
    return _error(request, 400, "body: a value is outside what storage holds")


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
    return _error(request, 400, text, bad_items=_bad_items(exc.errors))


def _bad_items(errors: list[dict[str, Any]]) -> dict[str, list[int]]:
    """The indexes in ``messages``, ``compactions`` and ``probes`` that the errors point at
    (loc body.batch.messages.N...)."""
    bad: dict[str, set[int]] = {}
    for error in errors:
        loc = [part for part in error.get("loc", ()) if part not in ("body", "batch")]
        if len(loc) >= 2 and loc[0] in ITEM_LISTS and isinstance(loc[1], int):
            bad.setdefault(loc[0], set()).add(loc[1])
    return {name: sorted(indexes) for name, indexes in bad.items()}


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's 404 for a path no route matches (``handler404``): JSON under the API's paths,
    as every other API answer, and the HTML page elsewhere. An id holding "/" (even sent as
    %2F, which is decoded before routing) or a dot segment lands here."""
    if request.path_info.startswith(("/api/", "/v1/")):
        return JsonResponse(
            {"error": "path: no such endpoint (an id holding '/' cannot be part of a path)"},
            status=404,
        )
    return defaults.page_not_found(request, exception)


api.add_router("/", sessions_api.router)
api.add_router("/", compaction_api.router)
api.add_router("/", import_api.router)
api.add_router("/", alerts_api.router)
api.add_router("/", privacy_api.router)
api.add_router("/", team_api.router)
