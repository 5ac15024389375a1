"""Decoding request bodies: gzip, size limits and the JSON that PostgreSQL would refuse.

jsonb rejects NUL characters and lone UTF-16 surrogates, and deep nesting is a cheap way to
exhaust a parser, so all three are caught here, before validation, with the field named.
"""

from __future__ import annotations

import gzip
import json
import math
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from compaction.engine import names, unpack
from sessions.errors import ITEM_LISTS, BadMessages, BadRequest, PayloadTooLarge
from sessions.limits import EXTERNAL_ID_MAX

_CHUNK = 64 * 1024


def decode_body(raw: bytes, *, content_encoding: str, max_bytes: int) -> bytes:
    """Undo Content-Encoding (identity or gzip) and enforce the size limit on the result."""
    encoding = content_encoding.strip().lower()
    if encoding in ("", "identity"):
        if len(raw) > max_bytes:
            raise PayloadTooLarge(f"body: larger than the {max_bytes}-byte limit")
        return raw
    if encoding not in ("gzip", "x-gzip"):
        raise BadRequest(f"Content-Encoding: {content_encoding!r} is not supported (use gzip)")
    # Decompress in bounded steps so a gzip bomb stops at the limit instead of filling memory.
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out = bytearray()
    try:
        data = raw
        while data:
            out += inflater.decompress(data, max_bytes + 1 - len(out))
            if len(out) > max_bytes:
                raise PayloadTooLarge(
                    f"body: larger than the {max_bytes}-byte limit after decompression"
                )
            data = inflater.unconsumed_tail
        if not inflater.eof:
            raise BadRequest("body: truncated gzip stream")
    except (zlib.error, gzip.BadGzipFile) as exc:
        raise BadRequest(f"body: not valid gzip ({exc})") from None
    return bytes(out)


def bounded_chunks(
    chunks: Iterable[bytes],
    *,
    max_bytes: int,
    where: str = "body",
    max_line: int | None = None,
) -> Iterator[bytes]:
    """The bytes of an upload with every gzip layer undone (a gzip inside a gzip too), never
    more than ``max_bytes`` at any layer nor a line past ``max_line``: a bomb stops with a 413
    naming the limit, a broken stream with a 400, before anything is kept."""
    try:
        yield from unpack.unpacked_chunks(
            chunks, max_bytes=max_bytes, max_line=max_line, where=where
        )
    except unpack.TooLarge as exc:
        raise PayloadTooLarge(str(exc)) from None
    except unpack.BadCompression as exc:
        raise BadRequest(str(exc)) from None


def parse_json(body: bytes, *, max_depth: int, check: bool = True) -> Any:
    """Parse a JSON body, refusing NaN and Infinity; ``check=False`` leaves ``check_json``
    (what jsonb cannot store) to the caller."""
    if not body.strip():
        raise BadRequest("body: empty; expected a JSON object")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"body: not UTF-8 (byte {exc.start})") from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except NonFinite as exc:
        raise BadRequest(f"body: {exc.constant} is not a number JSON allows") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(
            f"body: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise BadRequest(f"body: nested deeper than {max_depth} levels") from None
    if check:
        check_json(data, max_depth=max_depth)
    return data


class NonFinite(ValueError):
    """NaN, Infinity or -Infinity in a JSON text: Python accepts them, JSON and jsonb do not."""

    def __init__(self, constant: str) -> None:
        super().__init__(constant)
        self.constant = constant


def _refuse_constant(constant: str) -> Any:
    raise NonFinite(constant)


def loads_strict(text: str | bytes) -> Any:
    """``json.loads`` refusing NaN and Infinity (raises ``NonFinite``, a ValueError)."""
    return json.loads(text, parse_constant=_refuse_constant)


def external_id_check(external_id: str, *, where: str = "external_id") -> str:
    """An external id as storage holds it: 1 to 200 characters, no NUL, valid UTF-8."""
    if not external_id:
        raise BadRequest(f"{where}: required, 1 to {EXTERNAL_ID_MAX} characters")
    if len(external_id) > EXTERNAL_ID_MAX:
        raise BadRequest(f"{where}: {len(external_id)} characters, the limit is {EXTERNAL_ID_MAX}")
    problem = names.path_segment_problem(external_id)
    if problem is not None:
        raise BadRequest(f"{where}: {problem}")
    _check_string(external_id, where)
    return external_id


def text_storable_check(value: str, *, where: str) -> str:
    """``value`` when PostgreSQL can store it (no NUL, no lone surrogate); else a 400."""
    _check_string(value, where)
    return value


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def _check_string(value: str, where: str) -> None:
    if "\x00" in value:
        raise BadRequest(f"{where or 'body'}: contains a NUL character (\\u0000), not storable")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest(f"{where or 'body'}: contains a lone UTF-16 surrogate") from None


def check_json(data: Any, *, max_depth: int) -> None:
    """Reject values PostgreSQL jsonb cannot store (NUL, lone surrogates, NaN, infinities,
    excessive nesting), naming the first offending field."""
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        value, where, depth = stack.pop()
        if depth > max_depth:
            raise BadRequest(f"{where or 'body'}: nested deeper than {max_depth} levels")
        if isinstance(value, str):
            _check_string(value, where)
        elif isinstance(value, float) and not math.isfinite(value):
            # 1e999 parses as inf; jsonb (and JSON itself) has no infinities or NaN.
            raise BadRequest(f"{where or 'body'}: {value} is not a finite number")
        elif isinstance(value, dict):
            for key in value:
                _check_string(key, _path(where, "<key>"))
            # Pushed in reverse so the first offending field is the one reported.
            for key, item in reversed(value.items()):
                stack.append((item, _path(where, key), depth + 1))
        elif isinstance(value, list):
            for index in range(len(value) - 1, -1, -1):
                stack.append((value[index], _path(where, index), depth + 1))


def check_batch_json(data: Any, *, max_depth: int) -> None:
    """``check_json`` for an event batch: when the first problem is inside ``messages``,
    ``compactions`` or ``probes``, the error lists every item of those lists that has one
    (``BadMessages``), so the rest can be resent."""
    try:
        check_json(data, max_depth=max_depth)
    except BadRequest as exc:
        if not isinstance(data, dict) or not exc.message.startswith(
            tuple(f"{name}[" for name in ITEM_LISTS)
        ):
            raise
        bad: dict[str, list[int]] = {}
        for name in ITEM_LISTS:
            items = data.get(name)
            if not isinstance(items, list):
                continue
            for index, item in enumerate(items):
                try:
                    check_json(item, max_depth=max_depth - 2)
                except BadRequest:
                    bad.setdefault(name, []).append(index)
        raise BadMessages(exc.message, indexes=bad.get("messages", []), bad_items=bad) from None
