"""A recorder an agent calls after each model call; uploads happen in a background thread.

    recorder = Recorder(url="http://sawtooth:8000", key="st_...", session_id="run-42",
                        agent="billing-migrator", model="claude-opus-4-6")
    recorder.message("user", "Migrate billing to API v2.")
    recorder.response(api_response)            # an Anthropic Messages API response
    recorder.compaction(trigger="auto", tokens_before=151_000, summary="Goal: ...")
    recorder.close()                           # flush what is left (bounded wait)

Nothing here ever blocks or raises into the agent: the buffer is bounded (events beyond it
are dropped and counted), uploads are gzip batches retried with backoff (Retry-After wins),
and a batch the server refuses for good is dropped and counted too. Seqs are assigned here,
in call order, so a retried batch is an identical resend, which the server ignores.
"""

from __future__ import annotations

import atexit
import logging
import queue
import threading
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from compaction.client.transport import Backoff, GiveUp, Reply, gzip_json, post_with_retries, send

logger = logging.getLogger("sawtooth.client")

_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def _plain(value: Any) -> Any:
    """An SDK object (pydantic) as plain JSON data."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    return value


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _refused_messages(reply: Reply | None, count: int) -> set[int]:
    """The message indexes a 400 answer names in ``bad_messages`` (empty: none named)."""
    if reply is None or reply.status != 400:
        return set()
    try:
        named = reply.json().get("bad_messages")
    except (ValueError, AttributeError):
        return set()
    if not isinstance(named, list):
        return set()
    return {i for i in named if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < count}


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
        quoted = urllib.parse.quote(session_id, safe="")
        self.endpoint = f"{url.rstrip('/')}/api/v1/sessions/{quoted}/events"
        self.key = key
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.backoff = backoff or Backoff()
        self.timeout = timeout
        self.dropped = 0
        self.failed = 0
        self.sent = 0
        self._session: dict[str, Any] = {
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
        """Record one message; returns its seq, or None when the buffer was full."""
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
                event["usage"] = {
                    k: plain[k] for k in (*_USAGE_KEYS, "iterations") if plain.get(k) is not None
                }
            if not self._put("messages", event):
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
    ) -> None:
        """Record a compaction; ``seq`` defaults to the next message's seq."""
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
            self._put("compactions", event)

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
        # A 400 naming bad messages (``bad_messages``) drops just those and resends the rest;
        # each round removes at least one message, so this ends.
        while True:
            try:
                self._post(batch)
            except GiveUp as exc:
                bad = _refused_messages(exc.reply, len(batch["messages"]))
                if not bad:
                    self.failed += len(batch["messages"]) + len(batch["compactions"])
                    logger.warning("sawtooth: dropped a batch of %s: %s", self.endpoint, exc)
                    return
                self.failed += len(bad)
                seqs = [batch["messages"][i].get("seq") for i in sorted(bad)]
                logger.warning(
                    "sawtooth: %s refused %s message(s), seqs %s; resending the others",
                    self.endpoint,
                    len(bad),
                    seqs,
                )
                batch = {
                    "messages": [m for i, m in enumerate(batch["messages"]) if i not in bad],
                    "compactions": batch["compactions"],
                }
                if not batch["messages"] and not batch["compactions"]:
                    return
                continue
            self._session = {}
            self.sent += len(batch["messages"])
            return

    def _post(self, batch: dict[str, list[dict[str, Any]]]) -> None:
        payload: dict[str, Any] = {k: v for k, v in batch.items() if v}
        if self._session:
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
