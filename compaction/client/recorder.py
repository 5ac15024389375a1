"""A recorder an agent calls after each model call; uploads happen in a background thread.

    recorder = Recorder(url="http://sawtooth:8000", key="st_...", session_id="run-42",
                        agent="billing-migrator", model="claude-opus-4-6")
    recorder.message("user", "Migrate billing to API v2.")
    recorder.response(api_response)            # an Anthropic Messages API response
    recorder.compaction(trigger="auto", tokens_before=151_000, summary="Goal: ...")
    recorder.close()                           # flush what is left (bounded wait)

Nothing here ever blocks or raises into the agent: the buffer is bounded (events beyond it
are dropped and counted), uploads are gzip batches retried with backoff (Retry-After wins).
Seqs are assigned here, in call order, so a retried batch is an identical resend, which the
server ignores.

One bad item never costs the others. Each event is made valid JSON when it is recorded
(``compaction.client.sanitize``: a datetime becomes its ISO string, a lone surrogate U+FFFD,
NaN the string "NaN", ...); an item that cannot be written at all is dropped alone. When the
server refuses a batch naming items (``bad_messages``, ``bad_compactions``), those are dropped
and the rest resent; when it refuses the session block, the batch is resent without it.
Everything dropped is counted (``failed``), listed (``rejected``: kind, seq, reason) and
logged as a warning; ``sanitized`` counts the events that were rewritten.
"""

from __future__ import annotations

import atexit
import collections
import logging
import queue
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from compaction.client.sanitize import Unsendable, sanitize
from compaction.client.transport import Backoff, GiveUp, Reply, gzip_json, post_with_retries, send
from compaction.engine import names

logger = logging.getLogger("sawtooth.client")

_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


_KINDS = ("messages", "compactions")
_KIND_NAME = {"messages": "message", "compactions": "compaction"}
_INT_FIELDS = ("tokens_before", "tokens_after", "summary_seq", "duration_ms")
REJECTED_KEPT = 1000  # the most recent drops listed in ``rejected``


@dataclass(frozen=True)
class Rejected:
    """One item the Recorder dropped: ``kind`` is "message", "compaction" or "session"."""

    kind: str
    seq: int | None
    reason: str


def _plain(value: Any) -> Any:
    """An SDK object (pydantic) as plain JSON data."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    return value


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _as_count(value: Any) -> int | None:
    """A token count or a seq as an int: 120.0 is 120; NaN, 1.5, "12" or True are not counts."""
    if _is_int(value):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _refused_items(reply: Reply | None, batch: Mapping[str, list[Any]]) -> dict[str, set[int]]:
    """The indexes a 4xx answer names in ``bad_messages`` / ``bad_compactions`` (empty: none
    named)."""
    if reply is None or not 400 <= reply.status < 500:
        return {}
    try:
        answer = reply.json()
    except ValueError:
        return {}
    if not isinstance(answer, dict):
        return {}
    named: dict[str, set[int]] = {}
    for kind in _KINDS:
        listed = answer.get(f"bad_{kind}")
        if isinstance(listed, list):
            count = len(batch.get(kind, ()))
            indexes = {i for i in listed if _is_int(i) and 0 <= i < count}
            if indexes:
                named[kind] = indexes
    return named


def _error_text(reply: Reply | None, fallback: str) -> str:
    try:
        error = reply.json().get("error") if reply is not None else None
    except (ValueError, AttributeError):
        error = None
    return str(error)[:500] if error else fallback


class Recorder:
    """Record messages and compactions of one session and upload them in the background."""

    def __init__(
        self,
        *,
        url: str,
        key: str,
        session_id: str,
        agent: str | None = None,
        model: str | None = None,
        context_window: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        max_buffer: int = 10_000,
        batch_size: int = 200,
        flush_interval: float = 2.0,
        backoff: Backoff | None = None,
        start_seq: int = 0,
        timeout: float = 30.0,
    ) -> None:
        problem = names.path_segment_problem(session_id)
        if problem is not None:
            # Refused here, not after every message was recorded and then dropped.
            raise ValueError(f"session_id: {problem}")
        quoted = urllib.parse.quote(session_id, safe="")
        self.endpoint = f"{url.rstrip('/')}/api/v1/sessions/{quoted}/events"
        self.key = key
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.backoff = backoff or Backoff()
        self.timeout = timeout
        self.dropped = 0  # not recorded: the buffer was full
        self.failed = 0  # recorded, then dropped: unsendable, refused, or retries ran out
        self.sent = 0
        self.sanitized = 0  # events rewritten to be valid (see compaction.client.sanitize)
        # What was dropped, most recent last: each a Rejected(kind, seq, reason).
        self.rejected: collections.deque[Rejected] = collections.deque(maxlen=REJECTED_KEPT)
        session = {
            k: v
            for k, v in {
                "agent": agent,
                "model": model,
                "context_window": context_window,
                "metadata": dict(metadata) if metadata else None,
                "started_at": _now(),
            }.items()
            if v is not None
        }
        self._session: dict[str, Any] = self._clean("session", None, session) or {}
        self._seq = start_seq
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue(maxsize=max_buffer)
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._thread = threading.Thread(target=self._run, name="sawtooth-recorder", daemon=True)
        self._thread.start()
        atexit.register(self.close, 5.0)

    # --- what the agent calls ----------------------------------------------------------

    def message(
        self,
        role: str,
        content: str | Sequence[Any],
        *,
        usage: Mapping[str, Any] | None = None,
        timestamp: str | None = None,
    ) -> int | None:
        """Record one message; returns its seq, or None when it was not recorded (the buffer
        was full, or the message cannot be written as JSON: see ``rejected``)."""
        with self._lock:
            seq = self._seq
            event: dict[str, Any] = {
                "seq": seq,
                "role": role,
                "content": content if isinstance(content, str) else [_plain(b) for b in content],
                "timestamp": timestamp or _now(),
            }
            if usage is not None:
                plain = _plain(usage)
                if isinstance(plain, Mapping):
                    event["usage"] = {
                        k: plain[k]
                        for k in (*_USAGE_KEYS, "iterations")
                        if plain.get(k) is not None
                    }
            clean = self._clean("messages", seq, event)
            if clean is None:
                return None
            if not self._put("messages", clean):
                return None
            self._seq += 1
            return seq

    def response(self, response: Any) -> int | None:
        """Record an Anthropic Messages API response (SDK object or dict) with its usage; a
        ``compaction`` block in it is recorded as an observed compaction too."""
        data = _plain(response)
        if not isinstance(data, Mapping):
            return None
        content = list(data.get("content") or [])
        seq = self.message("assistant", content, usage=data.get("usage"))
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "compaction" and seq is not None:
                self.compaction(
                    seq=seq,
                    trigger="threshold",
                    strategy="server_compaction",
                    summary=str(block.get("content") or ""),
                    summary_seq=seq,
                    error=None if block.get("content") is not None else "compaction failed",
                )
        return seq

    def compaction(
        self,
        *,
        seq: int | None = None,
        trigger: str = "unknown",
        strategy: str = "summarize",
        tokens_before: int | None = None,
        tokens_after: int | None = None,
        summary: str = "",
        summary_seq: int | None = None,
        replaced: tuple[int, int] | None = None,
        duration_ms: int | None = None,
        error: str | None = None,
    ) -> bool:
        """Record a compaction; ``seq`` defaults to the next message's seq. False when it was
        not recorded (buffer full, or not writable as JSON: see ``rejected``)."""
        with self._lock:
            event: dict[str, Any] = {
                "seq": self._seq if seq is None else seq,
                "trigger": trigger,
                "strategy": strategy,
                "tokens_before": tokens_before,
                "tokens_after": tokens_after,
                "summary": summary,
                "summary_seq": summary_seq,
                "duration_ms": duration_ms,
                "error": error,
            }
            if replaced is not None:
                event["replaced"] = {"from_seq": replaced[0], "to_seq": replaced[1]}
            clean = self._clean("compactions", event["seq"], event)
            return clean is not None and self._put("compactions", clean)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait (at most ``timeout`` seconds) until everything recorded so far was sent."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._queue.empty() and self._idle.is_set():
                return True
            time.sleep(0.01)
        return False

    def close(self, timeout: float = 10.0) -> None:
        """Flush what is left, then stop the background thread. Safe to call twice."""
        if self._stop.is_set():
            return
        self.flush(timeout)
        self._stop.set()
        self._thread.join(timeout=1.0)

    # --- one bad item never costs the others ---------------------------------------------

    def _clean(self, kind: str, seq: int | None, event: dict[str, Any]) -> dict[str, Any] | None:
        """A JSON-safe copy of ``event``, or None (rejected) when it cannot be written."""
        try:
            clean, changes = sanitize(event)
        except Unsendable as exc:
            self._reject(kind, seq, f"not writable as JSON: {exc}")
            return None
        # A count that is not a number (NaN tokens) is left out, not sent as text.
        for name in _INT_FIELDS:
            if clean.get(name) is not None and _as_count(clean[name]) is None:
                changes.append(f"{name}: not an integer, left out")
            if clean.get(name) is not None:
                clean[name] = _as_count(clean[name])
        usage = clean.get("usage")
        if isinstance(usage, dict):
            for name in _USAGE_KEYS:
                if name in usage and _as_count(usage[name]) is None:
                    changes.append(f"usage.{name}: not an integer, left out")
                    del usage[name]
                elif name in usage:
                    usage[name] = _as_count(usage[name])
        if changes:
            self.sanitized += 1
            logger.info(
                "sawtooth: %s%s rewritten to be sent: %s",
                _KIND_NAME.get(kind, kind),
                "" if seq is None else f" {seq}",
                "; ".join(changes[:5])
                + (f" (+{len(changes) - 5} more)" if len(changes) > 5 else ""),
            )
        return dict(clean)

    def _reject(self, kind: str, seq: int | None, reason: str, *, log: bool = True) -> None:
        name = _KIND_NAME.get(kind, kind)
        if name != "session":
            self.failed += 1
        self.rejected.append(Rejected(name, seq, reason))
        if log:
            where = name if seq is None else f"{name} {seq}"
            logger.warning("sawtooth: dropped %s for %s: %s", where, self.endpoint, reason)

    # --- the background thread -----------------------------------------------------------

    def _put(self, kind: str, event: dict[str, Any]) -> bool:
        try:
            self._queue.put_nowait((kind, event))
            return True
        except queue.Full:
            self.dropped += 1
            return False

    def _take_batch(self) -> dict[str, list[dict[str, Any]]] | None:
        try:
            first = self._queue.get(timeout=self.flush_interval)
        except queue.Empty:
            return None
        self._idle.clear()
        batch: dict[str, list[dict[str, Any]]] = {"messages": [], "compactions": []}
        batch[first[0]].append(first[1])
        while len(batch["messages"]) < self.batch_size:
            try:
                kind, event = self._queue.get_nowait()
            except queue.Empty:
                break
            batch[kind].append(event)
        return batch

    def _send(self, batch: dict[str, list[dict[str, Any]]]) -> None:
        # A 4xx naming bad items (``bad_messages``, ``bad_compactions``) drops just those and
        # resends the rest; each round removes at least one item, so this ends. A 4xx naming
        # none, with a session block in the batch, is tried once more without the block.
        with_session = True
        while True:
            try:
                self._post(batch, with_session=with_session)
            except GiveUp as exc:
                bad = _refused_items(exc.reply, batch)
                reason = _error_text(exc.reply, str(exc))
                if bad:
                    for kind, indexes in bad.items():
                        for i in sorted(indexes):
                            self._reject(
                                kind, batch[kind][i].get("seq"), f"refused by the server: {reason}"
                            )
                    batch = {
                        kind: [e for i, e in enumerate(batch[kind]) if i not in bad.get(kind, ())]
                        for kind in _KINDS
                    }
                    if not any(batch.values()):
                        return
                    continue
                refused = exc.reply is not None and 400 <= exc.reply.status < 500
                events = [(kind, e) for kind in _KINDS for e in batch[kind]]
                if exc.reply is not None and exc.reply.status == 413 and len(events) > 1:
                    # Too large as a whole (one oversized message, say): each half is sent on
                    # its own, so only what is too large alone is dropped, never its neighbours.
                    for half in (events[: len(events) // 2], events[len(events) // 2 :]):
                        self._send({k: [e for kind, e in half if kind == k] for k in _KINDS})
                    return
                if refused and with_session and self._session:
                    with_session = False
                    continue
                logger.warning(
                    "sawtooth: dropped a batch of %s (%s messages, %s compactions): %s",
                    self.endpoint,
                    len(batch["messages"]),
                    len(batch["compactions"]),
                    reason,
                )
                for kind in _KINDS:
                    for event in batch[kind]:
                        self._reject(kind, event.get("seq"), f"batch dropped: {reason}", log=False)
                return
            if not with_session and self._session:
                self._reject("session", None, "the session fields were refused; sent without")
            self._session = {}
            self.sent += len(batch["messages"])
            return

    def _post(self, batch: dict[str, list[dict[str, Any]]], *, with_session: bool = True) -> None:
        payload: dict[str, Any] = {k: v for k, v in batch.items() if v}
        if self._session and with_session:
            payload["session"] = self._session
        body = gzip_json(payload)

        def once() -> Reply:
            return send(
                self.endpoint,
                body,
                key=self.key,
                content_type="application/json",
                gzipped=True,
                timeout=self.timeout,
            )

        post_with_retries(once, backoff=self.backoff)

    def _run(self) -> None:
        while not (self._stop.is_set() and self._queue.empty()):
            try:
                batch = self._take_batch()
                if batch is not None:
                    self._send(batch)
            except Exception:  # never let the recorder thread die, whatever happens
                logger.exception("sawtooth: recorder error")
            finally:
                if self._queue.empty():
                    self._idle.set()
