"""Traces that log whole prompts per model call (OTLP GenAI spans, Anthropic request logs,
OpenAI-style trajectories) turned into the canonical trace.

Each call carries the prompt it sent and the answer it got. The raw trace keeps what was new
at each call: while a prompt extends the previous context, only the new messages are stored;
when it does not (the harness compacted, truncated or edited the history), its new messages
are stored too and an observed compaction is recorded at the first of them, with the
replaced range and the context before (last call) and after (this call). A prompt that
shares nothing with the context while the token counts say the context grew is read as an
instrumentation that logs only each call's new messages: it continues the context.

A conversation's running context (message hashes and seqs) is kept in the session's
``import_state`` under ``calls`` (not in its metadata, which is the client's), so calls arriving
in a later request continue it, and a call that is already reflected (a resend) changes
nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db import connection

from compaction.engine import tokens
from compaction.engine.messages import usage_from_wire
from compaction.engine.otlp import Call
from sessions import services
from sessions.importers.report import FileReport, ImportReport
from sessions.importers.writer import SessionWriter
from sessions.models import AgentSession, Project

_HASH_CHARS = 16
STATE_KEY = "calls"


def iso(nanos: int) -> str | None:
    if not nanos:
        return None
    return datetime.fromtimestamp(nanos / 1e9, tz=UTC).isoformat()


def _canonical(message: Mapping[str, Any]) -> tuple[str, str]:
    """The message's canonical JSON and content hash, as ingest makes them (and takes them
    from here, for the messages this call stores)."""
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    return services.message_canonical(role=message["role"], blocks=blocks)


def _find_summary(messages: Sequence[Mapping[str, Any]]) -> tuple[int | None, str]:
    for index, message in enumerate(messages):
        content = message["content"]
        for block in content if isinstance(content, list) else []:
            if isinstance(block, Mapping) and block.get("type") == "compaction":
                return index, str(block.get("content") or "")
    return None, ""


def _first_text(messages: Sequence[Mapping[str, Any]]) -> tuple[int | None, str]:
    """The first new message's text, where an emitter puts its summary there."""
    if not messages:
        return None, ""
    content = messages[0]["content"]
    if isinstance(content, str):
        return 0, content
    texts = [str(b.get("text") or "") for b in content if isinstance(b, Mapping)]
    return 0, "\n".join(t for t in texts if t)


def context_tokens(usage: Mapping[str, Any] | None) -> int | None:
    """The context size of a call (or of one usage iteration), by the engine's one rule."""
    return None if usage is None else tokens.context_size(usage_from_wire(usage))


@dataclass
class _State:
    hashes: list[str]
    seqs: list[int]
    next_seq: int
    last_context: int | None
    compacted_view: bool = False  # the last call's context was reported a compacted view
    # The keys (span ids) of the calls applied: one sent again is known at once, even after a
    # compaction made its prompt no longer a prefix of the context.
    applied: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, import_state: Mapping[str, Any]) -> _State:
        found = import_state.get(STATE_KEY)
        raw: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        return cls(
            list(raw.get("context", [])),
            list(raw.get("seqs", [])),
            int(raw.get("next_seq", 0)),
            raw.get("last_context"),
            raw.get("compacted_view") is True,
            [str(k) for k in raw.get("applied", []) if isinstance(k, str)],
        )

    def dump(self) -> dict[str, Any]:
        return {
            "context": self.hashes,
            "seqs": self.seqs,
            "next_seq": self.next_seq,
            "last_context": self.last_context,
            "compacted_view": self.compacted_view,
            "applied": self.applied,
        }


def _apply_call(call: Call, state: _State, writer: SessionWriter, applied: set[str] | None) -> None:
    if applied is not None:
        if call.key in applied:
            return  # sent again
        applied.add(call.key)
        state.applied.append(call.key)
    full = call.inputs + call.outputs
    canonical = [_canonical(m) for m in full]
    hashes = [digest[:_HASH_CHARS] for _, digest in canonical]
    known = state.hashes
    if hashes and hashes == known[: len(hashes)]:
        return  # already reflected: a resend, or an older call arriving late
    common = 0
    for old, new in zip(known, hashes, strict=False):
        if old != new:
            break
        common += 1
    this_context = context_tokens(call.usage)
    # Instrumentation that logs only what is new at each call: a prompt sharing nothing with
    # the known context while the context grew continues it rather than replacing it.
    continues = common == 0 and bool(known) and _logs_only_new_messages(state, this_context)
    if continues and known[-len(hashes) :] == hashes:
        return  # a resend of the last such call
    kept = len(known) if continues else common  # known messages still in the context
    first_new = state.next_seq
    rewritten = kept < len(known)
    seqs = state.seqs[:kept]
    stamp = iso(call.end_ns)
    answer_seq: int | None = None
    for index in range(0 if continues else common, len(full)):
        message = dict(full[index])
        message["seq"] = state.next_seq
        if index >= len(call.inputs):
            if stamp and "timestamp" not in message:
                message["timestamp"] = stamp
            if index == len(call.inputs):
                answer_seq = state.next_seq
                if call.usage is not None:
                    message["usage"] = call.usage
        writer.add_message(message, canonical=canonical[index])
        seqs.append(state.next_seq)
        state.next_seq += 1
    # The same compacted view still in use (the previous call was one too and this prompt
    # extends it) reports no new compaction.
    same_view = call.compacted_view and state.compacted_view and call.reported_by is None
    if rewritten or (call.compacted is not None and not same_view):
        summary_index, summary = _find_summary(full[common:])
        explicit = call.compacted or {}
        if summary_index is None and (explicit.get("kept") or {}).get("summary_at") == "first":
            summary_index, summary = _first_text(full[common:])  # Google ADK's summary event
        replaced = {"from_seq": state.seqs[common], "to_seq": state.seqs[-1]} if rewritten else None
        summarized = summary_index is not None or bool(explicit.get("summary"))
        writer.add_compaction(
            {
                "seq": first_new,
                "trigger": explicit.get("trigger") or "unknown",
                "strategy": explicit.get("strategy") or ("summarize" if summarized else "rewrite"),
                "tokens_before": explicit.get("tokens_before") or state.last_context,
                "tokens_after": explicit.get("tokens_after") or this_context,
                "summary": explicit.get("summary") or summary,
                "summary_seq": first_new + summary_index if summary_index is not None else None,
                "replaced": replaced,
                "duration_ms": explicit.get("duration_ms"),
                "error": explicit.get("error"),
                "kept": {"call": call.key, **(explicit.get("kept") or {})},
            }
        )
    if answer_seq is not None:
        for event in call.compactions:
            placed = {**event, "seq": answer_seq}
            if placed.get("summary_seq") == "answer":
                placed["summary_seq"] = answer_seq
            writer.add_compaction(placed)
    state.hashes = known + hashes if continues else hashes
    state.seqs = seqs
    state.compacted_view = call.compacted_view
    if this_context is not None:
        state.last_context = this_context


def _logs_only_new_messages(state: _State, this_context: int | None) -> bool:
    """A prompt that shares nothing with the known context, yet a context that did not
    shrink: the call logged only its new messages (a compaction makes the context smaller).
    Without token counts either side, a prompt sharing nothing reads as a rewrite."""
    return (
        this_context is not None
        and state.last_context is not None
        and this_context >= state.last_context
    )


class _ConversationLock:
    """Serialise the read-modify-write of one conversation's running context (a PostgreSQL
    advisory lock; SQLite serialises writers anyway)."""

    def __init__(self, project: Project, external_id: str) -> None:
        digest = hashlib.sha256(f"{project.pk}:{external_id}".encode()).digest()
        self.key = int.from_bytes(digest[:8], "big", signed=True)

    def __enter__(self) -> None:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_lock(%s)", [self.key])

    def __exit__(self, *exc: object) -> None:
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [self.key])


def conversation_ingest(
    *,
    project: Project,
    external_id: str,
    calls: Sequence[Call],
    file: FileReport,
    report: ImportReport,
    source: str,
    session: Mapping[str, Any] | None = None,
    ordered: bool = False,
    stable_keys: bool = False,
) -> None:
    """Append the calls of one conversation. Unless ``ordered``, they are sorted by start
    time first (spans arrive in any order). With ``stable_keys`` (span ids), a call whose key
    was applied before is a resend and adds nothing."""
    if not calls:
        return
    calls = list(calls) if ordered else sorted(calls, key=lambda c: (c.start_ns, c.key))
    with _ConversationLock(project, external_id):
        existing = AgentSession.objects.filter(project=project, external_id=external_id).first()
        metadata = dict(existing.metadata) if existing is not None else {}
        state = _State.load(existing.import_state if existing is not None else {})
        writer = SessionWriter(
            project=project,
            external_id=external_id,
            session=report.session(external_id),
            file=file,
        )
        applied = set(state.applied) if stable_keys else None
        for call in calls:
            _apply_call(call, state, writer, applied)
        extra = dict(session or {})
        metadata.update(extra.pop("metadata", None) or {})
        metadata["source"] = metadata.get("source") or source
        fields: dict[str, Any] = {"metadata": metadata}
        if extra.get("agent") and (existing is None or not existing.agent):
            fields["agent"] = str(extra["agent"])
        window = extra.get("context_window")
        if isinstance(window, int) and window > 0:
            # reported by the emitter (Sentry's gen_ai.context.window_size), not sent by a client
            fields["context_window"] = window
            metadata["context_window_source"] = "reported"
        model = next((c.model for c in reversed(calls) if c.model), None)
        if model:
            fields["model"] = model
        if (existing is None or existing.started_at is None) and calls[0].start_ns:
            fields["started_at"] = iso(calls[0].start_ns)
        end = max(c.end_ns for c in calls)
        if end:
            fields["ended_at"] = iso(end)
        writer.flush(session=fields, import_state={STATE_KEY: state.dump()})
