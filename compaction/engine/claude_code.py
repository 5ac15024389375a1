"""Claude Code transcripts (``~/.claude/projects/*.jsonl``): the one engine module of the harness.
Over 800 lines because the harness has one home (DESIGN.md, "Imports"): its files and lines and
what its records mean are read here together, as Codex's, Gemini CLI's and Cline's are.

Two layers, so an importer can build on either:

* files and lines: :func:`transcript_groups` finds the transcripts under a folder, each main
  file followed by the ``<stem>/subagents/`` files beside it; :func:`open_transcript` opens one,
  gzip or plain by magic bytes; :func:`iter_records` streams one :class:`Record` per line (a
  line that is not a JSON object becomes an ``invalid`` record saying why, so a bad line
  spoils itself, not the file);
* records to messages and observed compactions: :class:`Assembler` takes records one by
  one and settles messages and compactions as it goes, so a transcript of any size streams;
  :func:`assemble` runs it to the end;
  :func:`parse_transcript` reads a file (or lines) into a :class:`Transcript`: engine
  :class:`Message` objects plus the compactions Claude Code reported (``compact_boundary``
  with ``compactMetadata`` followed by an ``isCompactSummary`` user record).

Claude Code writes one API response over several ``assistant`` lines (one per content block)
sharing ``message.id``, and each tool result as its own ``user`` line, sometimes between those
assistant lines. :func:`assemble` merges them back into what the API saw: one assistant message
per response, with the last line's usage (earlier lines carry partial output counts), and one
user message carrying all the results of that response. Progress, attachment, snapshot and
hook records are skipped and counted.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, cast

from compaction.engine import unpack
from compaction.engine.messages import (
    Block,
    Message,
    ObservedCompaction,
    OpaqueBlock,
    Role,
    TextBlock,
    Usage,
    WireError,
    block_from_wire,
    carries_tool_results,
    usage_from_wire,
)
from compaction.engine.tokens import context_size


@dataclass(frozen=True)
class Record:
    """One line of a transcript. ``type`` is ``invalid`` for a line that is not a JSON object."""

    line: int
    type: str
    data: Mapping[str, Any]
    repaired: int = 0

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


def open_transcript(
    path: str | os.PathLike[str],
    *,
    max_bytes: int = unpack.DEFAULT_MAX_BYTES,
    max_line: int = unpack.DEFAULT_MAX_LINE,
) -> BinaryIO:
    """Open a transcript for reading bytes as a stream, undoing gzip (every layer) when the
    file starts with its magic; past either limit reading raises ``unpack.TooLarge``."""
    return unpack.open_unpacked(path, max_bytes=max_bytes, max_line=max_line)


TRANSCRIPT_SUFFIXES = (".jsonl.gz", ".jsonl")


def transcript_stem(path: str | os.PathLike[str]) -> str:
    """A transcript's name without its suffixes: its session id, by Claude Code's naming.

    >>> transcript_stem("projects/x/0b1c.jsonl.gz"), transcript_stem("agent-7.jsonl")
    ('0b1c', 'agent-7')
    """
    path = Path(path)
    for suffix in (*TRANSCRIPT_SUFFIXES, ".gz"):
        if path.name.endswith(suffix):
            return path.name[: -len(suffix)]
    return path.stem


def transcript_groups(paths: Iterable[str | os.PathLike[str]]) -> list[list[Path]]:
    """One group per main transcript: the file, then the ``<stem>/subagents/`` files beside it.

    A folder is searched for transcripts (``.jsonl``, ``.jsonl.gz``); a file is never listed
    twice, so a subagent found on its own joins the group of its main file when that comes
    first.
    """
    candidates: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = [
                p for p in path.rglob("*") if p.is_file() and p.name.endswith(TRANSCRIPT_SUFFIXES)
            ]
            # Main files first: "s1/subagents/a.jsonl" sorts before "s1.jsonl" as a path.
            candidates += sorted(found, key=lambda p: ("subagents" in p.parent.parts, p))
        else:
            candidates.append(path)
    out: list[list[Path]] = []
    seen: set[Path] = set()
    for path in candidates:
        if path in seen:
            continue
        group = [path]
        seen.add(path)
        subagents = path.parent / transcript_stem(path) / "subagents"
        if subagents.is_dir():
            for child in sorted(subagents.iterdir()):
                if child.name.endswith(TRANSCRIPT_SUFFIXES) and child not in seen:
                    group.append(child)
                    seen.add(child)
        out.append(group)
    return out


def _is_blank(line: str | bytes) -> bool:
    return not line.strip()


_SUSPECT_ESCAPES = re.compile(rb"\\u0000|\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


_ID_KEYS = ("sessionId", "agentId")


def _repair(value: Any) -> tuple[Any, int]:
    """Replace NUL characters and lone UTF-16 surrogates with U+FFFD; return (value, count)."""
    if isinstance(value, str):
        count = value.count("\x00")
        text = value.replace("\x00", "\ufffd") if count else value
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            fixed = []
            for ch in text:
                if "\ud800" <= ch <= "\udfff":
                    fixed.append("\ufffd")
                    count += 1
                else:
                    fixed.append(ch)
            text = "".join(fixed)
        return text, count
    if isinstance(value, list):
        total = 0
        out_list = []
        for item in value:
            fixed_item, n = _repair(item)
            out_list.append(fixed_item)
            total += n
        return out_list, total
    if isinstance(value, dict):
        total = 0
        out_dict = {}
        for key, item in value.items():
            fixed_key, n_key = _repair(key)
            fixed_item, n_item = _repair(item)
            out_dict[fixed_key] = fixed_item
            total += n_key + n_item
        return out_dict, total
    return value, 0


class _NonFinite(ValueError):
    pass


def _refuse_constant(constant: str) -> Any:
    raise _NonFinite(constant)


def _non_finite(value: Any) -> bool:
    """True when a parsed JSON value holds NaN or an infinity (1e999 parses as inf).

    >>> _non_finite({"a": [1.5, 1e999]}), _non_finite({"a": "NaN"})
    (True, False)
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _parse_line(n: int, line: str | bytes, *, last: bool, repair: bool) -> Record | None:
    if _is_blank(line):
        return None
    ends_with_newline = line.endswith(b"\n") if isinstance(line, bytes) else line.endswith("\n")
    try:
        data = json.loads(line, parse_constant=_refuse_constant)
    except _NonFinite as exc:
        return Record(
            n,
            "invalid",
            {"error": f"line {n}: {exc} is not a number JSON allows", "reason": "json"},
        )
    except UnicodeDecodeError as exc:
        return Record(
            n,
            "invalid",
            {"error": f"line {n}: not UTF-8 text (byte {exc.start})", "reason": "utf8"},
        )
    except json.JSONDecodeError as exc:
        if last and not ends_with_newline:
            return Record(
                n,
                "invalid",
                {"error": f"line {n}: truncated last line ({exc.msg})", "reason": "truncated"},
            )
        return Record(n, "invalid", {"error": f"line {n}: not JSON ({exc.msg})", "reason": "json"})
    except RecursionError:
        return Record(n, "invalid", {"error": f"line {n}: nested too deeply", "reason": "json"})
    if not isinstance(data, dict):
        return Record(n, "invalid", {"error": f"line {n}: not a JSON object", "reason": "json"})
    if _non_finite(data):
        return Record(
            n, "invalid", {"error": f"line {n}: a number beyond what JSON allows", "reason": "json"}
        )
    repaired = 0
    if repair:
        raw = line if isinstance(line, bytes) else line.encode("utf-8", "surrogatepass")
        if _SUSPECT_ESCAPES.search(raw):
            # Ids are never repaired: two sessions would merge into one; the importer refuses
            # an id storage cannot hold, naming it.
            ids = {k: data[k] for k in _ID_KEYS if k in data}
            fixed, repaired = _repair({k: v for k, v in data.items() if k not in _ID_KEYS})
            data = {**fixed, **ids}
    kind = data.get("type")
    return Record(n, kind if isinstance(kind, str) else "unknown", data, repaired)


def iter_records(
    source: str | os.PathLike[str] | Iterable[str] | Iterable[bytes], *, repair: bool = False
) -> Iterator[Record]:
    """Stream the records of a transcript file (plain or gzipped) or of an iterable of lines.

    Blank lines are skipped; a line that is not a JSON object yields ``type="invalid"`` with
    ``data["error"]`` saying why and ``data["reason"]`` one of ``json``, ``truncated`` (the
    last line, cut off before its newline) or ``utf8``. Files are read as bytes, one line at a
    time, so a bad byte spoils one line, not the file. With ``repair=True``, NUL characters
    and lone surrogates (which PostgreSQL cannot store) become U+FFFD and ``Record.repaired``
    counts them.

    >>> [r.type for r in iter_records(['{"type": "user"}', "", "not json"])]
    ['user', 'invalid']
    """
    if isinstance(source, str | os.PathLike):
        with open_transcript(source) as fh:
            yield from iter_records(fh, repair=repair)
        return
    previous: tuple[int, str | bytes] | None = None
    for n, line in enumerate(source, start=1):
        if previous is not None:
            record = _parse_line(*previous, last=False, repair=repair)
            if record is not None:
                yield record
        previous = (n, cast(str | bytes, line))
    if previous is not None:
        record = _parse_line(*previous, last=True, repair=repair)
        if record is not None:
            yield record


# --- records to messages and compactions --------------------------------------------------


CONTINUATION_PREFIX = "This session is being continued from a previous conversation"
_BOUNDARY_SUBTYPES = ("compact_boundary", "microcompact_boundary")


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
    model: str | None = None

    @property
    def is_carrier(self) -> bool:
        return carries_tool_results(self.role, self.content)

    def freeze(self) -> Message:
        role: Role = "assistant" if self.role == "assistant" else "user"
        return Message(self.seq, role, tuple(self.content), self.timestamp, self.usage, self.model)


# Record types Claude Code writes that never become messages; any other type is "unknown".
NOISE_RECORD_TYPES = frozenset(
    {
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "summary",
        "permission-mode",
        "last-prompt",
        "attachment",
    }
)
MESSAGE_RECORD_TYPES = frozenset({"user", "assistant", "system"})
COMPACT_ERROR_MARKERS = ("Error during compaction", "Error compacting conversation")
# A run of records without a new API response is settled at this length, bounding memory.
_MAX_OPEN_DRAFTS = 512
_MAX_PROBLEMS = 1000


@dataclass(frozen=True)
class Problem:
    """A line that was skipped (or repaired), and why."""

    line: int
    reason: str


@dataclass(frozen=True)
class CompactionRecord:
    """An observed compaction plus where the file reported it.

    ``details`` keeps what the boundary said beyond the common fields (``compactedToolIds``,
    ``preservedMessages``, ``tokensSaved``...). ``logical_parent_uuid`` is the last record
    before the cut, which the ``agent-acompact-*`` file's prompt also points at.
    """

    observed: ObservedCompaction
    line: int
    summary_seq: int | None
    logical_parent_uuid: str | None = None
    timestamp: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


def _metadata(rec: Record) -> Mapping[str, Any]:
    for key in ("compactMetadata", "microcompactMetadata"):
        value = rec.data.get(key)
        if isinstance(value, Mapping):
            return value
    return {}


def _int_or_none(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value)


def _record_text(rec: Record) -> str:
    content = rec.data.get("content")
    if isinstance(content, str):
        return content
    msg = rec.message
    if msg is not None:
        body = msg.get("content")
        if isinstance(body, str):
            return body
        if isinstance(body, list):
            return "\n".join(
                str(b.get("text", "")) for b in body if isinstance(b, Mapping) and "text" in b
            )
    return ""


def _is_compact_error(rec: Record) -> bool:
    if rec.subtype == "compact_error":
        return True
    if rec.type != "system":
        return False
    text = _record_text(rec)
    return any(marker in text for marker in COMPACT_ERROR_MARKERS)


@dataclass
class _Pending:
    """A compaction waiting for the first call after it (its observed ``tokens_after``)."""

    seq: int
    line: int
    trigger: str
    strategy: str
    tokens_before: int | None
    tokens_after: int | None
    summary: str | None
    summary_seq: int | None
    replaced: tuple[int, int] | None
    duration_ms: int | None
    error: str | None
    logical_parent_uuid: str | None
    timestamp: str | None
    details: dict[str, Any]

    def freeze(self) -> CompactionRecord:
        observed = ObservedCompaction(
            seq=self.seq,
            trigger=self.trigger,
            strategy=self.strategy,
            tokens_before=self.tokens_before,
            tokens_after=self.tokens_after,
            summary=self.summary,
            replaced_from=self.replaced[0] if self.replaced else None,
            replaced_to=self.replaced[1] if self.replaced else None,
            duration_ms=self.duration_ms,
            error=self.error,
        )
        return CompactionRecord(
            observed,
            self.line,
            self.summary_seq,
            self.logical_parent_uuid,
            self.timestamp,
            self.details,
        )


class Assembler:
    """Turn records into messages and observed compactions incrementally, in file order.

    Feed records one by one and :meth:`drain` what has settled: a message settles once the
    next API response starts (until then more lines of the same response, or more tool
    results, may still join it), a compaction once the first call after it has settled (that
    call's context is its observed ``tokens_after``). :meth:`close` settles the rest. Memory
    stays bounded by one response and its tool results, so a transcript of any size streams.

    >>> a = Assembler()
    >>> for r in iter_records(['{"type":"user","message":{"role":"user","content":"hi"}}']):
    ...     a.feed(r)
    >>> a.close()
    >>> [m.text for m in a.drain()[0]]
    ['hi']
    """

    def __init__(self, *, include_sidechain: bool = False, include_meta: bool = False) -> None:
        self.include_sidechain = include_sidechain
        self.include_meta = include_meta
        self.session_id: str | None = None
        self.agent_id: str | None = None
        self.version: str | None = None
        self.cwd: str | None = None
        self.git_branch: str | None = None
        self.started_at: str | None = None
        self.ended_at: str | None = None
        self.title: str | None = None
        self.models: dict[str, None] = {}
        self.skipped: Counter[str] = Counter()
        self.unknown: Counter[str] = Counter()
        self.invalid_lines = 0
        self.problems: list[Problem] = []
        self.problem_count = 0
        self.summary_seqs: list[int] = []
        self.records = 0
        self._seen_uuids: set[str] = set()
        self._drafts: list[_Draft] = []
        self._next_seq = 0
        self._open_seq: int | None = None
        self._boundary: Record | None = None
        self._errors: list[Record] = []
        self._prev_start = 0
        self._waiting: list[_Pending] = []
        self._out_messages: list[Message] = []
        self._out_compactions: list[CompactionRecord] = []
        self._closed = False

    # --- reporting ---------------------------------------------------------------------

    def _problem(self, line: int, reason: str) -> None:
        self.problem_count += 1
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(Problem(line, reason))

    # --- output ------------------------------------------------------------------------

    def drain(self) -> tuple[list[Message], list[CompactionRecord]]:
        """Settled messages and compactions since the last call, in seq order."""
        messages, compactions = self._out_messages, self._out_compactions
        self._out_messages, self._out_compactions = [], []
        return messages, compactions

    @property
    def pending_messages(self) -> int:
        return len(self._drafts)

    def _settle(self, upto_seq: int | None = None) -> None:
        keep: list[_Draft] = []
        for draft in self._drafts:
            if upto_seq is not None and draft.seq >= upto_seq:
                keep.append(draft)
                continue
            message = draft.freeze()
            self._out_messages.append(message)
            if message.role == "assistant" and message.usage is not None:
                self._resolve_waiting(message.seq, context_size(message.usage))
        self._drafts = keep

    def _resolve_waiting(self, seq: int, after: int | None) -> None:
        still: list[_Pending] = []
        for pending in self._waiting:
            if pending.seq <= seq:
                if pending.tokens_after is None:
                    pending.tokens_after = after
                self._out_compactions.append(pending.freeze())
            else:
                still.append(pending)
        self._waiting = still

    def _flush_errors(self) -> None:
        if not self._errors:
            return
        first = self._errors[0]
        meta = _metadata(first)
        texts = [_record_text(r) or "compaction failed" for r in self._errors]
        self._out_compactions.append(
            _Pending(
                seq=self._next_seq,
                line=first.line,
                trigger=_str(meta.get("trigger")) or "unknown",
                strategy="compact_error",
                tokens_before=_int_or_none(meta.get("preTokens")),
                tokens_after=None,
                summary=None,
                summary_seq=None,
                replaced=None,
                duration_ms=_int_or_none(meta.get("durationMs")),
                error="\n".join(texts),
                logical_parent_uuid=_str(first.data.get("logicalParentUuid")),
                timestamp=first.timestamp,
                details={"attempts": len(self._errors)} if len(self._errors) > 1 else {},
            ).freeze()
        )
        self._errors = []

    def close(self) -> None:
        """End of input: everything settles; a boundary still waiting for its summary is
        reported as a problem rather than guessed at."""
        if self._closed:
            return
        self._closed = True
        self._flush_errors()
        if self._boundary is not None:
            self._problem(
                self._boundary.line,
                f"{self._boundary.subtype} without the summary that should follow it",
            )
            self._boundary = None
        self._settle()
        for pending in self._waiting:
            self._out_compactions.append(pending.freeze())
        self._waiting = []

    # --- input -------------------------------------------------------------------------

    def _append(self, draft: _Draft) -> None:
        self._flush_errors()
        self._drafts.append(draft)
        self._next_seq += 1
        if len(self._drafts) > _MAX_OPEN_DRAFTS:
            self._settle()
            self._open_seq = None

    def _note_envelope(self, rec: Record) -> None:
        self.session_id = self.session_id or rec.session_id
        self.agent_id = self.agent_id or _str(rec.data.get("agentId"))
        self.version = self.version or _str(rec.data.get("version"))
        self.cwd = self.cwd or _str(rec.data.get("cwd"))
        self.git_branch = self.git_branch or _str(rec.data.get("gitBranch"))
        if rec.timestamp:
            self.started_at = self.started_at or rec.timestamp
            self.ended_at = rec.timestamp

    def feed(self, rec: Record) -> None:
        """Take one record; see the class docstring for when its message settles."""
        self.records += 1
        if rec.repaired:
            self._problem(
                rec.line,
                f"replaced {rec.repaired} character(s) that cannot be stored "
                "(NUL or lone surrogate) with U+FFFD",
            )
        if rec.type == "invalid":
            self.invalid_lines += 1
            self._problem(rec.line, str(rec.data.get("error", "unreadable line")))
            return
        if rec.type not in MESSAGE_RECORD_TYPES:
            self.skipped[rec.type] += 1
            if rec.type == "summary" and isinstance(rec.data.get("summary"), str):
                self.title = str(rec.data["summary"])
            elif rec.type not in NOISE_RECORD_TYPES:
                self.unknown[rec.type] += 1
            return
        if rec.is_sidechain and not self.include_sidechain:
            self.skipped["sidechain"] += 1
            return
        if rec.uuid is not None:
            if rec.uuid in self._seen_uuids:
                self.skipped["duplicate"] += 1
                return
            self._seen_uuids.add(rec.uuid)
        self._note_envelope(rec)
        if rec.type == "system":
            self._feed_system(rec)
            return
        msg = rec.message
        if msg is None:
            self.skipped[f"{rec.type}:no-message"] += 1
            self._problem(rec.line, f"{rec.type} record without a 'message' object")
            return
        if rec.type == "assistant":
            self._feed_assistant(rec, msg)
        else:
            self._feed_user(rec, msg)

    def _feed_system(self, rec: Record) -> None:
        if rec.subtype == "compact_boundary":
            self._boundary = rec
        elif rec.subtype == "microcompact_boundary":
            self._microcompact(rec)
        elif _is_compact_error(rec):
            self._errors.append(rec)
        else:
            self.skipped[f"system:{rec.subtype or 'plain'}"] += 1

    def _microcompact(self, rec: Record) -> None:
        # Microcompaction clears old tool results in place: no summary message follows.
        meta = _metadata(rec)
        before = _int_or_none(meta.get("preTokens"))
        saved = _int_or_none(meta.get("tokensSaved"))
        after = _int_or_none(meta.get("postTokens"))
        if after is None and before is not None and saved is not None:
            after = max(before - saved, 0)
        details = {k: v for k, v in meta.items() if k not in ("trigger", "preTokens")}
        self._waiting.append(
            _Pending(
                seq=self._next_seq,
                line=rec.line,
                trigger=_str(meta.get("trigger")) or "unknown",
                strategy="microcompact",
                tokens_before=before,
                tokens_after=after,
                summary=None,
                summary_seq=None,
                replaced=None,
                duration_ms=_int_or_none(meta.get("durationMs")),
                error=None,
                logical_parent_uuid=_str(rec.data.get("logicalParentUuid")),
                timestamp=rec.timestamp,
                details=details,
            )
        )

    def _feed_assistant(self, rec: Record, msg: Mapping[str, Any]) -> None:
        mid = _str(msg.get("id"))
        model = _str(msg.get("model"))
        raw_usage = msg.get("usage")
        usage = None
        if isinstance(raw_usage, Mapping) and model != "<synthetic>":
            try:
                usage = usage_from_wire(raw_usage)
            except WireError as exc:
                self._problem(rec.line, f"usage ignored: {exc}")
        if model and model != "<synthetic>":
            self.models.setdefault(model, None)
        blocks = _blocks(msg.get("content"))
        if self._open_seq is not None and mid is not None:
            index = self._open_seq - self._drafts[0].seq if self._drafts else -1
            if 0 <= index < len(self._drafts) and self._drafts[index].message_id == mid:
                target = self._drafts[index]
                target.content.extend(blocks)
                target.usage = usage or target.usage
                return
        # A new response: everything before it can no longer change.
        self._settle(upto_seq=None)
        self._append(_Draft(self._next_seq, "assistant", blocks, rec.timestamp, usage, mid, model))
        self._open_seq = self._next_seq - 1

    def _feed_user(self, rec: Record, msg: Mapping[str, Any]) -> None:
        if rec.is_meta and not self.include_meta:
            self.skipped["user:meta"] += 1
            return
        blocks = _blocks(msg.get("content"))
        draft = _Draft(self._next_seq, "user", blocks, rec.timestamp)
        if (
            draft.is_carrier
            and self._open_seq is not None
            and self._next_seq == self._open_seq + 2
            and self._drafts
            and self._drafts[-1].is_carrier
        ):
            self._drafts[-1].content.extend(blocks)
            return
        self._append(draft)
        text = blocks[0].text if blocks and isinstance(blocks[0], TextBlock) else ""
        continued = text.startswith(CONTINUATION_PREFIX)
        legacy = continued and (draft.seq == 0 or rec.data.get("parentUuid") is None)
        if rec.is_compact_summary or (continued and self._boundary is not None) or legacy:
            self._summary(rec, draft, text)

    def _summary(self, rec: Record, draft: _Draft, text: str) -> None:
        boundary = self._boundary
        self._boundary = None
        self.summary_seqs.append(draft.seq)
        meta = _metadata(boundary) if boundary is not None else {}
        details = {
            k: v
            for k, v in meta.items()
            if k not in ("trigger", "preTokens", "postTokens", "durationMs")
        }
        if boundary is None:
            details["source"] = "continuation message without a compact_boundary"
        replaced = (self._prev_start, draft.seq - 1) if draft.seq > self._prev_start else None
        self._prev_start = draft.seq
        self._waiting.append(
            _Pending(
                seq=draft.seq,
                line=boundary.line if boundary is not None else rec.line,
                trigger=_str(meta.get("trigger")) or "unknown",
                strategy="summarize",
                tokens_before=_int_or_none(meta.get("preTokens")),
                tokens_after=_int_or_none(meta.get("postTokens")),
                summary=text,
                summary_seq=draft.seq,
                replaced=replaced,
                duration_ms=_int_or_none(meta.get("durationMs")),
                error=None,
                logical_parent_uuid=(
                    _str(boundary.data.get("logicalParentUuid")) if boundary is not None else None
                ),
                timestamp=boundary.timestamp if boundary is not None else rec.timestamp,
                details=details,
            )
        )


def assemble(
    records: Iterable[Record],
    *,
    include_sidechain: bool = False,
    include_meta: bool = False,
) -> Transcript:
    """Build messages and observed compactions from records, in file order.

    Sidechain records (subagents) and ``isMeta`` user records (command caveats) are left out
    unless asked for. A ``compact_boundary`` becomes an :class:`ObservedCompaction` at the seq
    of the summary that follows it, with the trigger and ``preTokens`` it reported. This is
    :class:`Assembler` run to the end, holding everything; importers stream with it instead.
    """
    assembler = Assembler(include_sidechain=include_sidechain, include_meta=include_meta)
    messages: list[Message] = []
    compactions: list[CompactionRecord] = []
    for rec in records:
        assembler.feed(rec)
        settled, observed = assembler.drain()
        messages.extend(settled)
        compactions.extend(observed)
    assembler.close()
    settled, observed = assembler.drain()
    messages.extend(settled)
    compactions.extend(observed)
    compactions.sort(key=lambda c: (c.observed.seq, c.line))
    return Transcript(
        session_id=assembler.session_id,
        messages=tuple(messages),
        compactions=tuple(c.observed for c in compactions),
        summary_seqs=tuple(assembler.summary_seqs),
        models=tuple(assembler.models),
        version=assembler.version,
        cwd=assembler.cwd,
        git_branch=assembler.git_branch,
        started_at=assembler.started_at,
        ended_at=assembler.ended_at,
        skipped=dict(assembler.skipped),
        invalid_lines=assembler.invalid_lines,
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
