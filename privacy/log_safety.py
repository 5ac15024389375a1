"""No trace content in any log line: exception messages are withheld from log records.

The exception behind a failed write can quote the payload (PostgreSQL's JSON errors print the
offending text; pydantic's the input; an engine error the message it choked on), and a trace
holds customers' personal data. Every log record is built by ``record_factory`` (installed at
start-up by ``TracesConfig.ready``): its traceback keeps the frames and the exception's type,
never the exception's message, unless the exception is one of ours that names a field only.
"""

from __future__ import annotations

import logging
import traceback
from types import TracebackType
from typing import Any

from sessions.errors import ApiError

WITHHELD = "(message withheld: it may quote trace content)"

_ExcInfo = tuple[type[BaseException], BaseException, TracebackType | None]
_installed = False


def exception_text(exc_info: _ExcInfo) -> str:
    """A traceback with frames and exception types, without any exception message."""
    kind, value, tb = exc_info
    parts: list[str] = []
    seen: set[int] = set()
    chain: list[tuple[type[BaseException], TracebackType | None]] = []
    current: BaseException | None = value
    chain.append((kind, tb))
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current = current.__cause__ or current.__context__
        if current is not None and id(current) not in seen:
            chain.append((type(current), current.__traceback__))
    for kind_, tb_ in reversed(chain):
        if parts:
            parts.append("\nDuring handling of the above exception, another was raised:\n\n")
        parts.append("Traceback (most recent call last):\n")
        parts.extend(traceback.format_list(traceback.extract_tb(tb_)))
        parts.append(f"{kind_.__module__}.{kind_.__qualname__}: {WITHHELD}")
    return "".join(parts)


def _safe(value: BaseException) -> bool:
    return isinstance(value, ApiError)


def install() -> None:
    """Wrap the log record factory once per process."""
    global _installed
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def record_factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        exc_info = record.exc_info
        if exc_info and exc_info[1] is not None and not _safe(exc_info[1]):
            record.exc_text = exception_text(exc_info)
            record.exc_info = None
        return record

    logging.setLogRecordFactory(record_factory)
    _installed = True
