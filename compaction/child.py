"""One analysis pass in a child process with hard limits (compaction/pipeline.py runs it).

The worker forks; the child runs the pass (reads the session, runs the engine, stores the
results, as in the worker's own process) under limits the kernel enforces, and the worker
waits for it while it beats for the row (compaction/liveness.py):

- time: the worker kills the child (SIGKILL) once the pass's budget is spent
  (compaction/budget.py), wherever it is, C code included; ``RLIMIT_CPU`` a little past the
  budget, and the parent-death signal, end it too should the worker itself die first;
- memory: the child's address space may grow by ``memory_limit_mb`` past what it had at the
  fork (``RLIMIT_AS``); an allocation past it fails, the child's ``MemoryError`` ends the pass.

Either way the session is marked failed with the limit named (never retried: the same pass
would meet it again) and the worker's slot is free for the next turn. The limits are the
child's, so they hold alike under the prefork pool (the pool's child forks) and the solo pool.

Connections across the fork: the worker closes its database connections before it forks, so
the child opens its own and none is ever shared; the child runs billiard's after-fork hooks,
which drop (without closing) Celery's broker connections, so what it sends goes on its own.
The child ends with ``os._exit``: no exit handler of the worker runs twice.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import logging
import math
import os
import resource
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, connections

from compaction.budget import MIB

logger = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
_POLL_SECONDS = 0.02
# The kernel's CPU limit, a backstop behind the worker's kill: this much past the budget.
_CPU_GRACE_SECONDS = 10
_MESSAGE_CHARS = 2000  # a report well under a pipe's buffer, so writing it never blocks


def memory_limit_mb(text_bytes: int) -> int:
    """How far a pass over ``text_bytes`` of content may grow its address space (0: no
    limit): by default 4096 MB, and 256 MB more per MiB. Generous, for runaways: a pass over
    a 1.7 MiB session of 2,000 compactions (tests/compaction/test_faults_integration.py's
    long session) peaks at about 2 GB resident."""
    base = int(settings.ANALYSIS_MEMORY_LIMIT_MB or 0)
    if base <= 0:
        return 0
    return base + math.ceil(int(settings.ANALYSIS_MEMORY_LIMIT_MB_PER_MB or 0) * text_bytes / MIB)


def wanted() -> bool:
    """Whether a pass runs in a child here: on unless ANALYSIS_IN_CHILD=0, where the system
    can fork, from the main thread (where the prefork and solo pools run tasks; a fork from one
    of several threads, a thread pool's, could inherit a lock another thread held), and outside
    a transaction (one cannot be handed to another process: a test's, or a caller's that holds
    rows the pass must see)."""
    return (
        bool(settings.ANALYSIS_IN_CHILD)
        and hasattr(os, "fork")
        and threading.current_thread() is threading.main_thread()
        and not any(c.in_atomic_block for c in connections.all(initialized_only=True))
    )


@dataclass(frozen=True)
class Limits:
    seconds: float  # the wall-clock budget (0: none)
    memory_mb: int  # the address space the child may add (0: none)


@dataclass
class Outcome:
    """How the child ended: ``done`` (``value`` is what the work returned), ``memory`` (over
    its memory limit), ``time`` (killed at its budget), ``raised`` (an exception the worker
    should see: ``value`` has its type and text) or ``died`` (anything else: ``how``)."""

    kind: str
    value: dict[str, Any] = field(default_factory=dict)
    how: str = ""


def _address_space_bytes() -> int:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * resource.getpagesize()
    except OSError:
        return 0


def _child_start(limits: Limits, parent: int) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    # Linux: die with the worker (a Celery time limit, a SIGKILL) instead of lingering.
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)  # the worker died before the signal was armed
    try:
        from billiard import util as billiard_util
    except ImportError:
        pass
    else:  # Celery's and kombu's hooks: drop (not close) the worker's broker connections
        billiard_util._run_after_forkers()  # type: ignore[attr-defined]
    if limits.seconds > 0:
        cpu = math.ceil(limits.seconds) + _CPU_GRACE_SECONDS
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    if limits.memory_mb > 0:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        wanted_bytes = _address_space_bytes() + limits.memory_mb * 1024 * 1024
        if hard != resource.RLIM_INFINITY:
            wanted_bytes = min(wanted_bytes, hard)
        resource.setrlimit(resource.RLIMIT_AS, (wanted_bytes, hard))


def _out_of_memory(exc: BaseException) -> bool:
    """A MemoryError, or a driver's report of one (libpq's allocations fail under the limit
    too, and surface as a database error saying so)."""
    if isinstance(exc, MemoryError):
        return True
    if not _database_error_kind(exc):
        return False  # only the driver's own text is read, never a message quoting a trace
    text = str(exc).lower()
    return "out of memory" in text or "cannot allocate memory" in text


def _child(work: Callable[[], dict[str, Any]], limits: Limits, parent: int, out: int) -> None:
    code = 0
    try:
        _child_start(limits, parent)
        report: dict[str, Any] = {"kind": "done", "value": work()}
    except BaseException as exc:  # every ending is reported to the worker
        if _out_of_memory(exc):
            report = {"kind": "memory"}
        else:
            report = {
                "kind": "raised",
                "value": {
                    "type": type(exc).__name__,
                    "database": _database_error_kind(exc),
                    "message": str(exc)[:_MESSAGE_CHARS],
                },
            }
    with contextlib.suppress(BaseException):
        connections.close_all()
    try:
        os.write(out, json.dumps(report).encode())
    except BaseException:  # the worker then reads the exit status alone
        code = 70
    os._exit(code)


def _database_error_kind(exc: BaseException) -> str:
    from django.db import DatabaseError, InterfaceError, OperationalError

    if isinstance(exc, OperationalError | InterfaceError):
        return "transient"
    if isinstance(exc, DatabaseError):
        return "database"
    return ""


def run(work: Callable[[], dict[str, Any]], limits: Limits) -> Outcome:
    """Run ``work`` (which returns a small JSON-able dict) in a child under ``limits``, and
    wait for it: killed once ``limits.seconds`` have passed."""
    connections.close_all()  # none is shared with the child (see the module's notes)
    assert not connection.in_atomic_block
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_end)
        _child(work, limits, parent, write_end)
    os.close(write_end)
    try:
        status, killed = _wait(pid, limits.seconds)
        raw = b""
        while chunk := os.read(read_end, 65536):
            raw += chunk
    finally:
        os.close(read_end)
    report = json.loads(raw) if raw else {}
    if report.get("kind") in ("done", "memory", "raised"):
        return Outcome(report["kind"], report.get("value") or {})
    if killed:
        return Outcome("time")
    if status is not None and os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        if number == signal.SIGXCPU:
            return Outcome("time")
        return Outcome("died", how=f"killed by {signal.Signals(number).name}")
    code = os.WEXITSTATUS(status) if status is not None else "unknown"
    return Outcome("died", how=f"exit status {code}")


def _wait(pid: int, seconds: float) -> tuple[int | None, bool]:
    """The child's wait status (None when someone else reaped it) and whether it was killed
    at the budget."""
    deadline = time.monotonic() + seconds if seconds > 0 else None
    try:
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status, False
            if deadline is not None and time.monotonic() >= deadline:
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                return status, True
            time.sleep(_POLL_SECONDS)
    except ChildProcessError:
        return None, False
    except BaseException:
        # The worker is being stopped (Celery's soft limit, a shutdown): the child goes too.
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        raise
