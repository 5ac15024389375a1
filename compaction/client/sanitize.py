"""Turn what an agent hands the Recorder into JSON the server stores, without changing meaning.

Applied once, when an event is recorded, to a copy (so the agent may go on mutating its own
objects). What JSON or the server cannot hold is rewritten to the nearest value that keeps
the meaning, and each rewrite is named:

    value                           becomes
    datetime, date, time            its ISO 8601 string
    str with a lone surrogate       the surrogate replaced by U+FFFD (the replacement character)
    str with NUL (U+0000)           NUL replaced by U+FFFD (PostgreSQL cannot store it)
    NaN, Infinity, -Infinity        the strings "NaN", "Infinity", "-Infinity"
    bytes                           the text when it is UTF-8, else "base64:<base64>"
    Decimal                         a number when finite, else its string
    tuple, list, set, frozenset     a list (a set sorted when its items allow it)
    int beyond 4,000 digits         "0x<hex>" (Python's JSON refuses to write it in decimal)
    mapping keys that are not str   str(key)
    SDK (pydantic) objects          model_dump(mode="json")
    dataclasses                     their fields, as a mapping
    anything else (UUID, Path, ...) str(value)

A cycle (a list that contains itself) cannot be written at all: ``Unsendable``, and the
Recorder drops that one item.

>>> import math
>>> sanitize({"x": math.nan, "when": datetime(2026, 1, 2, 3, 4, 5)})
({'x': 'NaN', 'when': '2026-01-02T03:04:05'}, ['x: NaN', 'when: datetime'])
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import math
import re
from collections.abc import Mapping
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_MAX_INT_BITS = 13_000  # about 3,900 decimal digits; Python's JSON writes at most 4,300


class Unsendable(ValueError):
    """A value no rewrite can turn into JSON (a reference cycle)."""


def _path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else key


def _text(value: str, where: str, changes: list[str]) -> str:
    if _UNSTORABLE.search(value) is None:
        return value
    changes.append(f"{where or 'value'}: unstorable character")
    return _UNSTORABLE.sub("\ufffd", value)


def sanitize(value: Any, where: str = "") -> tuple[Any, list[str]]:
    """``value`` as plain JSON data (a fresh copy) and the list of rewrites made, each naming
    where (``content[1].input.when: datetime``)."""
    changes: list[str] = []
    return _clean(value, where, changes, set()), changes


def _clean(value: Any, where: str, changes: list[str], seen: set[int]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _text(value, where, changes)
    if isinstance(value, int):
        if value.bit_length() <= _MAX_INT_BITS:
            return int(value)  # an int subclass (IntEnum) as the plain number
        changes.append(f"{where or 'value'}: int too long for JSON")
        return ("-" if value < 0 else "") + "0x" + format(abs(value), "x")
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        text = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        changes.append(f"{where or 'value'}: {text}")
        return text
    if isinstance(value, (datetime, date, time)):
        changes.append(f"{where or 'value'}: {type(value).__name__}")
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        changes.append(f"{where or 'value'}: bytes")
        try:
            return _text(raw.decode("utf-8"), where, changes)
        except UnicodeDecodeError:
            return "base64:" + base64.b64encode(raw).decode("ascii")
    if isinstance(value, Decimal):
        changes.append(f"{where or 'value'}: Decimal")
        return float(value) if value.is_finite() else str(value)
    if id(value) in seen:
        raise Unsendable(f"{where or 'value'}: contains itself")
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return _clean(dump(mode="json", exclude_none=True), where, changes, seen)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return _clean(fields, where, changes, seen)
    if isinstance(value, Mapping):
        seen.add(id(value))
        out: dict[str, Any] = {}
        for key, item in value.items():
            if isinstance(key, str):
                name = _text(key, _path(where, "<key>"), changes)
            else:
                changes.append(f"{_path(where, '<key>')}: {type(key).__name__} key")
                name = _text(str(key), _path(where, "<key>"), changes)
            out[name] = _clean(item, _path(where, name), changes, seen)
        seen.discard(id(value))
        return out
    if isinstance(value, (list, tuple, set, frozenset)):
        seen.add(id(value))
        items = list(value)
        if isinstance(value, (set, frozenset)):
            changes.append(f"{where or 'value'}: {type(value).__name__}")
            with contextlib.suppress(TypeError):  # mixed kinds keep the set's order
                items = sorted(items)
        out_list = [_clean(item, _path(where, n), changes, seen) for n, item in enumerate(items)]
        seen.discard(id(value))
        return out_list
    changes.append(f"{where or 'value'}: {type(value).__name__}")
    return _text(str(value), where, changes)
