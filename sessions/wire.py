"""Decoding request bodies: gzip, size limits and the JSON that PostgreSQL would refuse.

jsonb rejects NUL characters and lone UTF-16 surrogates, and deep nesting is a cheap way to
exhaust a parser, so all three are caught here, before validation, with the field named.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterable, Iterator
from typing import Any

from sessions.errors import BadRequest, PayloadTooLarge

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


GZIP_MAGIC = b"\x1f\x8b"


def bounded_chunks(
    chunks: Iterable[bytes], *, max_bytes: int, where: str = "body"
) -> Iterator[bytes]:
    """The bytes of an upload, gzip undone when it starts with gzip's magic, never more than
    ``max_bytes`` of them: the same guard against a gzip bomb as ``decode_body``, streamed."""
    total = 0
    inflater: Any = None
    first = True
    try:
        for chunk in chunks:
            if first and chunk:
                first = False
                if chunk.startswith(GZIP_MAGIC):
                    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
            data = chunk
            while data:
                if inflater is None:
                    out, data = data, b""
                else:
                    out = inflater.decompress(data, max_bytes + 1 - total)
                    data = inflater.unconsumed_tail
                    if inflater.eof and inflater.unused_data:  # a further gzip member
                        data = inflater.unused_data + data
                        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
                total += len(out)
                if total > max_bytes:
                    raise PayloadTooLarge(
                        f"{where}: larger than the {max_bytes}-byte limit"
                        + (" after decompression" if inflater is not None else "")
                    )
                if out:
                    yield out
        if inflater is not None and not inflater.eof:
            raise BadRequest(f"{where}: truncated gzip stream")
    except zlib.error as exc:
        raise BadRequest(f"{where}: not valid gzip ({exc})") from None


def parse_json(body: bytes, *, max_depth: int) -> Any:
    if not body.strip():
        raise BadRequest("body: empty; expected a JSON object")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"body: not UTF-8 (byte {exc.start})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRequest(
            f"body: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    except RecursionError:
        raise BadRequest(f"body: nested deeper than {max_depth} levels") from None
    check_json(data, max_depth=max_depth)
    return data


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
    """Reject values PostgreSQL jsonb cannot store, naming the first offending field."""
    stack: list[tuple[Any, str, int]] = [(data, "", 1)]
    while stack:
        value, where, depth = stack.pop()
        if depth > max_depth:
            raise BadRequest(f"{where or 'body'}: nested deeper than {max_depth} levels")
        if isinstance(value, str):
            _check_string(value, where)
        elif isinstance(value, dict):
            for key in value:
                _check_string(key, _path(where, "<key>"))
            # Pushed in reverse so the first offending field is the one reported.
            for key, item in reversed(value.items()):
                stack.append((item, _path(where, key), depth + 1))
        elif isinstance(value, list):
            for index in range(len(value) - 1, -1, -1):
                stack.append((value[index], _path(where, index), depth + 1))
