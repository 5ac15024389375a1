"""Heartbeats of running work: while a worker runs an analysis or a replay, a thread of its
own sets the row's ``heartbeat_at`` every WORKER_HEARTBEAT_SECONDS.

A worker that dies (SIGKILL, the OOM killer, a lost host) stops beating, and once a running
row has been silent for WORKER_DEAD_SECONDS the sweep (``recovery.abandoned_work_requeue``,
run by beat every few seconds) queues it again. A slow task in a live worker is never taken
away: the thread beats while the task computes, whether or not the task reports progress.
A task that ends without finishing its row (an error that Celery retries) stops beating
for it, so that row is taken up again too.

The broker alone cannot tell a dead worker from a slow one: with Redis an unacknowledged task
returns after the visibility timeout (an hour), and a shorter timeout would hand long tasks
to a second worker while the first still runs them.

While the database is down no worker can beat, so once it is back every running row looks
silent, its live worker about to beat again. Silence therefore counts only while the database
was reachable: the sweep records each of its runs (``sweep_record``, one ``SweepMark`` row),
and after a gap between two runs longer than twice its period (an outage, beat or the workers
stopped or all busy) it counts from the end of the gap. Work is abandoned once silent for
WORKER_DEAD_SECONDS measured from the later of its last beat and that moment: after an outage
a dead worker's work waits up to WORKER_DEAD_SECONDS more, and a live one's is not run twice.
(An outage short enough to go unnoticed, at most twice the sweep's period, is harmless while
that stays below WORKER_DEAD_SECONDS minus two heartbeats: 4 s and 6 s by default.)

Times are the database's (``Now()``), never a worker's, so hosts whose clocks disagree cannot
make each other's work look dead. Only Celery worker processes beat (``enable``, called by
config/celery.py): elsewhere (a shell, a test) ``heartbeat`` does nothing.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Case, Exists, F, Q, QuerySet, When
from django.db.models.functions import Now

from compaction.models import SweepMark

logger = logging.getLogger(__name__)

_enabled = False
_lock = threading.Lock()
_beating: dict[object, QuerySet[Any]] = {}  # one entry per block of `heartbeat` running here
_thread_pid: int | None = None  # the process whose heartbeat thread runs
SWEEP_MARK = 1  # the pk of the one SweepMark row


def enable() -> None:
    """Make this process (and the pool children it forks) beat for the work it runs."""
    global _enabled
    _enabled = True


@contextmanager
def heartbeat(rows: QuerySet[Any]) -> Iterator[None]:
    """While the block runs, set ``heartbeat_at`` of ``rows`` every WORKER_HEARTBEAT_SECONDS.

    ``rows`` should match only while the work is the caller's (e.g. filtered on its status
    and attempt), so a late beat never revives a row someone else has finished or taken.
    """
    if not _enabled:
        yield
        return
    key = object()
    with _lock:
        _thread_ensure()
        _beating[key] = rows.all()  # a copy: the caller may use its queryset meanwhile
    try:
        yield
    finally:
        with _lock:
            del _beating[key]


def _thread_ensure() -> None:
    """Start this process's heartbeat thread once; a forked pool child starts its own, since
    threads do not survive fork. Called with ``_lock`` held."""
    global _thread_pid
    if _thread_pid == os.getpid():
        return
    _beating.clear()  # a forked child inherits the parent's entries, not its work
    threading.Thread(target=_beat_forever, name="sawtooth-heartbeat", daemon=True).start()
    _thread_pid = os.getpid()


def _beat_forever() -> None:
    while True:
        time.sleep(settings.WORKER_HEARTBEAT_SECONDS)
        with _lock:
            beating = list(_beating.values())
        try:
            if not beating:
                connection.close()  # an idle worker holds no connection for its heartbeat
                continue
            # This thread has its own connection: drop it when broken or past its age, as
            # Django does between requests.
            connection.close_if_unusable_or_obsolete()
            for rows in beating:
                rows.update(heartbeat_at=Now())
        except Exception:  # any error: a heartbeat thread that ends makes live work look dead
            # A few missed beats are harmless, and so is the database being down; past
            # WORKER_DEAD_SECONDS with it up the work is run again elsewhere, and whichever
            # copy finishes second finds its row taken.
            logger.warning("heartbeat failed", exc_info=True)


def silent() -> Q:
    """Rows not beaten for WORKER_DEAD_SECONDS while the database was reachable, by the
    database's clock: their worker died. With no run of the sweep recorded, since the last
    beat alone."""
    dead = Now() - timedelta(seconds=settings.WORKER_DEAD_SECONDS)
    reachable_briefly = SweepMark.objects.filter(pk=SWEEP_MARK, reachable_since__gte=dead)
    return Q(heartbeat_at__lt=dead) & ~Q(Exists(reachable_briefly))


def sweep_record() -> None:
    """Record a run of the sweep for abandoned work (one UPDATE). After a gap longer than twice
    its period since the previous run, the database counts as reachable only from now."""
    gap = timedelta(seconds=2 * settings.ABANDONED_WORK_REQUEUE_EVERY_SECONDS)
    mark = SweepMark.objects.filter(pk=SWEEP_MARK)
    # In one statement, so runs on several workers at once serialize on the row: each reads
    # the swept_at the previous one wrote.
    after_gap = Case(When(swept_at__lt=Now() - gap, then=Now()), default=F("reachable_since"))
    if not mark.update(reachable_since=after_gap, swept_at=Now()):
        # The first run ever: nothing says how long the database has been up.
        SweepMark.objects.bulk_create(
            [SweepMark(pk=SWEEP_MARK, swept_at=Now(), reachable_since=Now())],
            ignore_conflicts=True,
        )
