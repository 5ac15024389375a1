"""A small streaming parser of Claude Code JSONL transcripts (``~/.claude/projects/*.jsonl``).

Two layers, so an importer can build on either:

* :func:`iter_records` streams one :class:`Record` per line (gzip or plain, by magic bytes).
* :func:`assemble` turns records into engine :class:`Message` objects plus the compactions
  Claude Code reported (``compact_boundary`` with ``compactMetadata`` followed by an
  ``isCompactSummary`` user record).

Claude Code writes one API response over several ``assistant`` lines (one per content block)
sharing ``message.id``, and each tool result as its own ``user`` line, sometimes between those
assistant lines. :func:`assemble` merges them back into what the API saw: one assistant message
per response, with the last line's usage (earlier lines carry partial output counts), and one
user message carrying all the results of that response. Progress, attachment, snapshot and
hook records are skipped and counted.
"""

from __future__ import annotations

import gzip
import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from compaction.engine.messages import (
    Block,
    Message,
    ObservedCompaction,
    OpaqueBlock,
    Role,
    TextBlock,
    ToolResultBlock,
    Usage,
    WireError,
    block_from_wire,
    usage_from_wire,
)
from compaction.engine.tokens import context_size

CONTINUATION_PREFIX = "This session is being continued from a previous conversation"
_BOUNDARY_SUBTYPES = ("compact_boundary", "microcompact_boundary")


@dataclass(frozen=True)
class Record:
    """One line of a transcript. ``type`` is ``invalid`` for a line that is not a JSON object."""

    line: int
    type: str
    data: Mapping[str, Any]

    @property
    def subtype(self) -> str | None:
        value = self.data.get("subtype")
        return value if isinstance(value, str) else None

    @property
    def uuid(self) -> str | None:
        value = self.data.get("uuid")
        return value if isinstance(value, str) else None

    @property
    def session_id(self) -> str | None:
        value = self.data.get("sessionId")
        return value if isinstance(value, str) else None

    @property
    def timestamp(self) -> str | None:
        value = self.data.get("timestamp")
        return value if isinstance(value, str) else None

    @property
    def is_sidechain(self) -> bool:
        return self.data.get("isSidechain") is True

    @property
    def is_meta(self) -> bool:
        return self.data.get("isMeta") is True

    @property
    def is_compact_summary(self) -> bool:
        return self.data.get("isCompactSummary") is True

    @property
    def message(self) -> Mapping[str, Any] | None:
        value = self.data.get("message")
        return value if isinstance(value, Mapping) else None


def _open_text(path: str | os.PathLike[str]) -> IO[str]:
    with open(path, "rb") as probe:
        magic = probe.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def iter_records(source: str | os.PathLike[str] | Iterable[str]) -> Iterator[Record]:
    """Stream the records of a transcript file (plain or gzipped) or of an iterable of lines.

    Blank lines are skipped; a line that is not a JSON object yields ``type="invalid"``.

    >>> [r.type for r in iter_records(['{"type": "user"}', "", "not json"])]
    ['user', 'invalid']
    """
    if isinstance(source, str | os.PathLike):
        with _open_text(source) as fh:
            yield from iter_records(fh)
        return
    for n, line in enumerate(source, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            yield Record(n, "invalid", {"error": f"line {n}: {exc.msg}"})
            continue
        if not isinstance(data, dict):
            yield Record(n, "invalid", {"error": f"line {n}: not a JSON object"})
            continue
        kind = data.get("type")
        yield Record(n, kind if isinstance(kind, str) else "unknown", data)


@dataclass(frozen=True)
class Transcript:
    """A parsed transcript: engine messages plus what Claude Code reported about compaction.

    ``summary_seqs`` are the seqs of the summaries Claude Code spliced in: pass them as
    ``skip_seqs`` to a replay under another policy, and as ``context_starts`` to calibrate.
    """

    session_id: str | None
    messages: tuple[Message, ...]
    compactions: tuple[ObservedCompaction, ...]
    summary_seqs: tuple[int, ...]
    models: tuple[str, ...]
    version: str | None
    cwd: str | None
    git_branch: str | None
    started_at: str | None
    ended_at: str | None
    skipped: Mapping[str, int] = field(default_factory=dict)
    invalid_lines: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "session_id": self.session_id,
            "message_count": len(self.messages),
            "compactions": [c.to_dict() for c in self.compactions],
            "summary_seqs": list(self.summary_seqs),
            "models": list(self.models),
            "version": self.version,
            "cwd": self.cwd,
            "git_branch": self.git_branch,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "skipped": dict(self.skipped),
            "invalid_lines": self.invalid_lines,
        }


def _blocks(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [TextBlock(content)]
    if not isinstance(content, list):
        return []
    out: list[Block] = []
    for raw in content:
        try:
            out.append(block_from_wire(raw))
        except WireError:
            # a malformed block is kept opaque rather than losing the whole record
            data = raw if isinstance(raw, dict) else {"value": raw}
            out.append(OpaqueBlock(str(data.get("type", "unknown")), data))
    return out


@dataclass
class _Draft:
    seq: int
    role: str
    content: list[Block]
    timestamp: str | None
    usage: Usage | None = None
    message_id: str | None = None

    @property
    def is_carrier(self) -> bool:
        return self.role == "user" and any(isinstance(b, ToolResultBlock) for b in self.content)

    def freeze(self) -> Message:
        role: Role = "assistant" if self.role == "assistant" else "user"
        return Message(self.seq, role, tuple(self.content), self.timestamp, self.usage)


def assemble(
    records: Iterable[Record],
    *,
    include_sidechain: bool = False,
    include_meta: bool = False,
) -> Transcript:
    """Build messages and observed compactions from records, in file order.

    Sidechain records (subagents) and ``isMeta`` user records (command caveats) are left out
    unless asked for. A ``compact_boundary`` becomes an :class:`ObservedCompaction` at the seq
    of the summary that follows it, with the trigger and ``preTokens`` it reported.
    """
    drafts: list[_Draft] = []
    skipped: Counter[str] = Counter()
    invalid = 0
    seen_uuids: set[str] = set()
    models: dict[str, None] = {}
    pending: Record | None = None
    compactions: list[dict[str, Any]] = []
    summary_seqs: list[int] = []
    session_id = version = cwd = branch = first_ts = last_ts = None
    open_assistant: int | None = None

    for rec in records:
        if rec.type == "invalid":
            invalid += 1
            continue
        if rec.type not in ("user", "assistant", "system"):
            skipped[rec.type] += 1
            continue
        if rec.is_sidechain and not include_sidechain:
            skipped["sidechain"] += 1
            continue
        if rec.uuid is not None:
            if rec.uuid in seen_uuids:
                skipped["duplicate"] += 1
                continue
            seen_uuids.add(rec.uuid)
        session_id = session_id or rec.session_id
        version = version or _str(rec.data.get("version"))
        cwd = cwd or _str(rec.data.get("cwd"))
        branch = branch or _str(rec.data.get("gitBranch"))
        if rec.timestamp:
            first_ts = first_ts or rec.timestamp
            last_ts = rec.timestamp
        if rec.type == "system":
            if rec.subtype in _BOUNDARY_SUBTYPES:
                pending = rec
            else:
                skipped[f"system:{rec.subtype or 'plain'}"] += 1
            continue
        msg = rec.message
        if msg is None:
            skipped[f"{rec.type}:no-message"] += 1
            continue
        if rec.type == "assistant":
            mid = _str(msg.get("id"))
            model = _str(msg.get("model"))
            raw_usage = msg.get("usage")
            usage = (
                usage_from_wire(raw_usage)
                if isinstance(raw_usage, Mapping) and model != "<synthetic>"
                else None
            )
            if model and model != "<synthetic>":
                models.setdefault(model, None)
            blocks = _blocks(msg.get("content"))
            if open_assistant is not None and mid is not None:
                target = drafts[open_assistant]
                if target.message_id == mid:
                    target.content.extend(blocks)
                    target.usage = usage or target.usage
                    continue
            drafts.append(_Draft(len(drafts), "assistant", blocks, rec.timestamp, usage, mid))
            open_assistant = len(drafts) - 1
            continue
        # a user record
        if rec.is_meta and not include_meta:
            skipped["user:meta"] += 1
            continue
        blocks = _blocks(msg.get("content"))
        draft = _Draft(len(drafts), "user", blocks, rec.timestamp)
        if (
            draft.is_carrier
            and open_assistant is not None
            and len(drafts) == open_assistant + 2
            and drafts[-1].is_carrier
        ):
            drafts[-1].content.extend(blocks)
            continue
        drafts.append(draft)
        text = blocks[0].text if blocks and isinstance(blocks[0], TextBlock) else ""
        if rec.is_compact_summary or (pending is not None and text.startswith(CONTINUATION_PREFIX)):
            summary_seqs.append(draft.seq)
            meta = pending.data.get("compactMetadata") if pending is not None else None
            meta = meta if isinstance(meta, Mapping) else {}
            pre = meta.get("preTokens")
            post = meta.get("postTokens")
            duration = meta.get("durationMs")
            compactions.append(
                {
                    "seq": draft.seq,
                    "trigger": _str(meta.get("trigger")) or "unknown",
                    "strategy": (
                        "microcompact"
                        if pending is not None and pending.subtype == "microcompact_boundary"
                        else "summarize"
                    ),
                    "tokens_before": int(pre) if isinstance(pre, int | float) else None,
                    "tokens_after": int(post) if isinstance(post, int | float) else None,
                    "summary": text,
                    "duration_ms": int(duration) if isinstance(duration, int | float) else None,
                }
            )
            pending = None

    messages = tuple(d.freeze() for d in drafts)
    observed = []
    prev_start = 0
    for c in compactions:
        after = c["tokens_after"]
        if after is None:
            after = next(
                (
                    context_size(m.usage)
                    for m in messages[c["seq"] :]
                    if m.role == "assistant" and m.usage is not None
                ),
                None,
            )
        observed.append(
            ObservedCompaction(
                seq=c["seq"],
                trigger=c["trigger"],
                strategy=c["strategy"],
                tokens_before=c["tokens_before"],
                tokens_after=after,
                summary=c["summary"],
                replaced_from=prev_start if c["seq"] > prev_start else None,
                replaced_to=c["seq"] - 1 if c["seq"] > prev_start else None,
                duration_ms=c["duration_ms"],
            )
        )
        prev_start = c["seq"]
    return Transcript(
        session_id=session_id,
        messages=messages,
        compactions=tuple(observed),
        summary_seqs=tuple(summary_seqs),
        models=tuple(models),
        version=version,
        cwd=cwd,
        git_branch=branch,
        started_at=first_ts,
        ended_at=last_ts,
        skipped=dict(skipped),
        invalid_lines=invalid,
    )


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def parse_transcript(
    source: str | os.PathLike[str] | Iterable[str],
    *,
    include_sidechain: bool = False,
    include_meta: bool = False,
) -> Transcript:
    """Parse a Claude Code transcript file (or lines) into a :class:`Transcript`.

    >>> lines = [
    ...   '{"type":"user","uuid":"u1","message":{"role":"user","content":"Fix it"}}',
    ...   '{"type":"assistant","uuid":"a1","message":{"id":"m1","role":"assistant",'
    ...   '"content":[{"type":"text","text":"On it"}],"usage":{"input_tokens":5}}}',
    ...   '{"type":"progress","data":{}}']
    >>> t = parse_transcript(lines)
    >>> [(m.seq, m.role) for m in t.messages], t.skipped
    ([(0, 'user'), (1, 'assistant')], {'progress': 1})
    """
    return assemble(
        iter_records(source), include_sidechain=include_sidechain, include_meta=include_meta
    )
