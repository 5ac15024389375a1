"""The analysis budget: one pass over a session may take so long, scaled with its size.

A pass past its budget is ended, the session's analysis marked failed with the reason, and the
worker's slot freed for the next turn (another project's, compaction/fair.py), so a hostile
session can hold a slot for its budget at most, never stall the queue. Two layers:

- the budget (``ANALYSIS_BUDGET_SECONDS`` + ``ANALYSIS_BUDGET_SECONDS_PER_MB`` per MiB of the
  session's stored content): a pass runs in a child process (compaction/child.py), which the
  worker kills once it is spent, and whose address space is capped too; where a pass runs in
  the worker's own process instead (ANALYSIS_IN_CHILD=0, a transaction, a thread), a timer
  (``SIGALRM``, main thread only) raises ``OverBudget`` at the next Python instruction;
- the hard stop (``ANALYSIS_TIME_LIMIT_SECONDS``, Celery's ``time_limit`` on the task): the
  pool's parent kills the child, even inside C code that never returns to Python.

Where no timer can be set (a thread pool runs tasks off the main thread) only the hard stop
holds. A worker killed under a pass leaves it counted: after ANALYSIS_MAX_ATTEMPTS the sweep
fails it (compaction/recovery.py).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from django.conf import settings
from django.db import connection
from django.db.models import F, Func, IntegerField, Sum, TextField
from django.db.models.functions import Cast, Length

from sessions.models import Message

MIB = 1024 * 1024


class OverBudget(BaseException):
    """Raised inside a pass whose budget is spent."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"over its analysis budget of {seconds:.1f}s")
        self.seconds = seconds


def session_text_bytes(session_id: int) -> int:
    """The size of a session's stored message content, the budget's measure: on PostgreSQL
    the bytes each value takes as stored (``pg_column_size``: compressed, read from the
    value's header without fetching or decompressing it); elsewhere its JSON text's length."""
    rows = Message.objects.filter(session_id=session_id)
    size: Func = (
        Func(F("content"), function="pg_column_size", output_field=IntegerField())
        if connection.vendor == "postgresql"
        else Length(Cast("content", TextField()))
    )
    return int(rows.aggregate(n=Sum(size))["n"] or 0)


def budget_seconds(text_bytes: int) -> float:
    """The budget of a pass over ``text_bytes`` of content (0: none): by default 120 s, and
    30 s more per MiB, so a 10 MiB session has 420 s."""
    base = float(settings.ANALYSIS_BUDGET_SECONDS or 0)
    if base <= 0:
        return 0.0
    return base + float(settings.ANALYSIS_BUDGET_SECONDS_PER_MB or 0) * text_bytes / MIB


@contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Raise ``OverBudget`` in the block once ``seconds`` have passed (0: no budget)."""
    usable = (
        seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def spent(signum: int, frame: FrameType | None) -> None:
        raise OverBudget(seconds)

    previous = signal.signal(signal.SIGALRM, spent)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
