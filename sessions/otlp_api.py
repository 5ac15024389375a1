"""OTLP/HTTP trace receiver at /v1/traces: OpenTelemetry GenAI spans in.

Follows the OTLP/HTTP spec: protobuf (``application/x-protobuf``) or JSON
(``application/json``) bodies, gzip allowed; 200 with an ExportTraceServiceResponse whose
``partial_success`` counts the spans refused (and says why); 400 for a body that cannot be
read at all, 401 without a valid project key (``Authorization: Bearer``, checked by
``sessions/auth.py`` like every other door), 413 when too large, 415 for another content
type, and 429/503 with Retry-After when the project's ingest allowance is spent or the
receiver is overloaded, which OTLP exporters retry. Errors carry a google.rpc.Status in the
request's encoding.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from sessions import auth, wire
from sessions.errors import ApiError, BadRequest, TooManyRequests
from sessions.importers import otlp

JSON = "application/json"
PROTOBUF = "application/x-protobuf"
# google.rpc.Code values used in Status bodies
_CODES = {400: 3, 401: 16, 413: 8, 415: 3, 429: 8, 503: 14}
_slots_lock = threading.Lock()
_slots: threading.Semaphore | None = None


def _export_slots() -> threading.Semaphore:
    global _slots
    with _slots_lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(settings.OTLP_MAX_CONCURRENT_EXPORTS)
        return _slots


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _printable(message: str) -> str:
    """An error message as valid UTF-8: a lone surrogate quoted from the input is escaped."""
    return message.encode("utf-8", "backslashreplace").decode("utf-8")


def _status_protobuf(code: int, message: str) -> bytes:
    text = _printable(message).encode("utf-8")
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _error(
    status: int, message: str, *, protobuf: bool, retry_after: int | None = None
) -> HttpResponse:
    code = _CODES.get(status, 2)
    if protobuf:
        response = HttpResponse(
            _status_protobuf(code, message), status=status, content_type=PROTOBUF
        )
    else:
        response = HttpResponse(
            json.dumps({"code": code, "message": _printable(message)}),
            status=status,
            content_type=JSON,
        )
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    if status == 401:
        response["WWW-Authenticate"] = "Bearer"
    return response


def _success(result: otlp.TraceResult, *, protobuf: bool) -> HttpResponse:
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    answer = trace_service_pb2.ExportTraceServiceResponse()
    if result.rejected:
        answer.partial_success.rejected_spans = result.rejected
        shown = "; ".join(result.errors[:5])
        more = len(result.errors) - 5
        answer.partial_success.error_message = _printable(
            shown + (f" (and {more} more)" if more > 0 else "")
        )
    if protobuf:
        return HttpResponse(answer.SerializeToString(), content_type=PROTOBUF)
    return HttpResponse(json_format.MessageToJson(answer, indent=None), content_type=JSON)


def _checked(spans: Iterable[otlp.Span | otlp.SpanError]) -> Iterator[otlp.Span | otlp.SpanError]:
    """Refuse, span by span, content PostgreSQL cannot store (NUL, lone surrogates)."""
    depth = settings.INGEST_MAX_JSON_DEPTH
    for span in spans:
        if isinstance(span, otlp.Span):
            try:
                wire.check_json(span.attributes, max_depth=depth)
                for event in span.events:
                    wire.check_json(event.attributes, max_depth=depth)
            except BadRequest as exc:
                yield otlp.SpanError(f"{span.where}: {exc.message}")
                continue
        yield span


def _spans(body: bytes, *, protobuf: bool) -> list[otlp.Span | otlp.SpanError]:
    if protobuf:
        return list(_checked(otlp.spans_from_protobuf(body)))
    if not body.strip():
        raise BadRequest("body: empty; expected an ExportTraceServiceRequest")
    try:
        data = json.loads(body)
    except UnicodeDecodeError as exc:
        raise BadRequest(f"body: not UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(
            f"body: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise BadRequest("body: nested too deeply") from None
    return list(_checked(otlp.spans_from_json(data)))


@csrf_exempt
@require_POST
def traces(request: HttpRequest) -> HttpResponse:
    protobuf = request.content_type == PROTOBUF
    if request.content_type not in (JSON, PROTOBUF):
        return _error(
            415,
            f"Content-Type: {request.content_type!r} is not supported (use {PROTOBUF} or {JSON})",
            protobuf=False,
        )
    try:
        project = auth.ingest_authorize(request)
    except TooManyRequests as exc:
        return _error(429, exc.message, protobuf=protobuf, retry_after=exc.retry_after)
    except ApiError as exc:
        return _error(exc.status, exc.message, protobuf=protobuf)
    slots = _export_slots()
    if not slots.acquire(blocking=False):
        return _error(
            429, "too many exports in progress; retry later", protobuf=protobuf, retry_after=1
        )
    try:
        body = wire.decode_body(
            request.body,
            content_encoding=request.headers.get("Content-Encoding", ""),
            max_bytes=settings.INGEST_MAX_BODY_BYTES,
        )
        result = otlp.spans_ingest(project=project, spans=_spans(body, protobuf=protobuf))
    except RequestDataTooBig:
        limit = settings.INGEST_MAX_BODY_BYTES
        return _error(413, f"body: larger than the {limit}-byte limit", protobuf=protobuf)
    except ApiError as exc:
        return _error(exc.status, exc.message, protobuf=protobuf)
    except (OperationalError, InterfaceError):
        # the database is down or saturated: exporters retry after Retry-After
        return _error(503, "storage unavailable; retry later", protobuf=protobuf, retry_after=5)
    finally:
        slots.release()
    return _success(result, protobuf=protobuf)
