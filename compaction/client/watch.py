"""``python -m compaction.client watch [PATH ...] --url URL --key KEY``: follow agent sessions
as they grow and upload what is new. No Django.

What it follows (with no PATH, the default roots of the three that exist; a PATH may be any
folder below them or a single file; each file's format is recognised by its first line):

==============  ==========================  =================================================
Claude Code     ``~/.claude/projects``      ``<project>/<session>.jsonl`` and the session's
                                            ``<session>/subagents/`` files, JSON Lines
Codex           ``~/.codex/sessions``       ``YYYY/MM/DD/rollout-*.jsonl``, JSON Lines
Gemini CLI      ``~/.gemini/tmp``           ``<project>/chats/session-*.json`` (one JSON
                                            document, rewritten whole) or ``.jsonl``
==============  ==========================  =================================================

How it stays equal to an import: the server's imports of these formats are idempotent, and
importing a grown file adds exactly what a one-shot import of the whole file would have (a
response still being written is completed in place: Claude Code's over several lines, Codex's
waiting for its ``token_count``, Gemini's rewritten as its tokens and tool results arrive). So
when a session's files have grown by whole lines, the watcher sends the session again cut at
its last complete line (lines split on ``\n`` only): Claude Code's main file and its
``subagents/`` files through ``/api/v1/imports/claude-code``, a Codex rollout or a Gemini chat
through ``/api/v1/imports`` (which recognises the format too). The server stores only what is
new. A line written in two parts is held back until its newline arrives. A Gemini chat in one
JSON document is sent when it parses whole and differs from the last one accepted: a file
caught in the middle of a rewrite waits for the next poll, and exactly the bytes checked are
sent.

What is kept between runs: a state file with, per JSON Lines file, the byte offset up to which
it has been sent, and per JSON document the SHA-256 of the version sent. A restart reads only
past those offsets to find new lines, and sends nothing for a session with nothing new.
Offsets move only after the server has answered 200, so a server that is down loses nothing:
the session is retried with growing waits (jittered, capped, Retry-After honoured) while the
other sessions carry on.

Polling (``os.stat`` size and mtime every ``--interval`` seconds; the tree is searched for new
session files every ``--rescan`` seconds): no inotify dependency, and it works on every OS. Up to
``--parallel`` sessions upload at once, one upload in flight per session; a slot that frees up
takes the next session that has grown meanwhile, so a busy session's new lines wait for one
slot, not for the slowest upload of the pass.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from compaction.client.transport import Backoff, GiveUp
from compaction.engine import codex, gemini, unpack
from compaction.engine.claude_code import transcript_groups

CLAUDE_CODE, CODEX, GEMINI = "Claude Code", "Codex", "Gemini CLI"
DEFAULT_ROOTS = {
    CLAUDE_CODE: "~/.claude/projects",
    CODEX: "~/.codex/sessions",
    GEMINI: "~/.gemini/tmp",
}
DEFAULT_ROOT = DEFAULT_ROOTS[CLAUDE_CODE]
DEFAULT_STATE = "~/.cache/sawtooth/watch-state.json"
_READ = 1024 * 1024


def default_roots() -> list[str]:
    """The default roots that exist (all three when none does yet)."""
    found = [root for root in DEFAULT_ROOTS.values() if Path(root).expanduser().is_dir()]
    return found or list(DEFAULT_ROOTS.values())


def is_json_document(path: Path) -> bool:
    """A Gemini CLI chat in one JSON document (``session-*.json``), rewritten whole."""
    return path.name.endswith(".json")


def first_line(path: Path) -> bytes | None:
    """The first complete line of a JSON Lines file, None until its newline is written.
    Read through ``unpack`` (every gzip layer undone, the line bounded), so a bomb in a
    watched folder raises ``unpack.TooLarge`` instead of filling memory."""
    with unpack.open_unpacked(
        path, max_bytes=unpack.DEFAULT_MAX_BYTES, max_line=unpack.DEFAULT_MAX_LINE
    ) as fh:
        line: bytes = fh.readline()
        return line if line.endswith(b"\n") else None


def harness_of(path: Path) -> str | None:
    """Which harness wrote ``path``, from its first line (as the server's detection reads it):
    Codex's ``{timestamp, type, payload}`` lines (or the old bare form, whose first line has
    ``id`` and ``instructions``), Gemini CLI's JSON Lines (a first record with ``sessionId``
    and ``projectHash``) or document, else Claude Code. None: not known yet (no complete
    line), or not JSON Lines at all (never sent)."""
    if is_json_document(path):
        return GEMINI
    try:
        line = first_line(path)
    except (unpack.TooLarge, unpack.BadCompression):
        return ""  # never a session: not read again at every scan
    except (OSError, EOFError):
        return None
    if line is None:
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return ""
    if not isinstance(record, dict):
        return ""
    if gemini.is_chat_start(record):
        return GEMINI
    if codex.is_rollout_line(record) or codex.is_bare_rollout_start(record):
        return CODEX
    return CLAUDE_CODE


def complete_length(path: Path, start: int) -> int:
    """Bytes of ``path`` up to and including its last newline, reading only past ``start``
    (an offset known to end a line). A gzipped transcript is finished: all of it counts."""
    if path.name.endswith(".gz"):
        return path.stat().st_size
    end = start
    with path.open("rb") as fh:
        fh.seek(start)
        offset = start
        while chunk := fh.read(_READ):
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                end = offset + newline + 1
            offset += len(chunk)
    return end


@dataclass
class Watched:
    """One session: its files, the harness that writes them, and when it may next be tried
    after a failure."""

    files: list[Path]
    harness: str = CLAUDE_CODE
    failures: int = 0
    next_try: float = 0.0


@dataclass
class State:
    """Offsets sent, per JSON Lines path, and the SHA-256 of the version sent, per JSON
    document; saved atomically after every accepted upload."""

    path: Path
    url: str
    sent: dict[str, int] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, url: str) -> State:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return cls(path, url)
        # Offsets belong to the server they were sent to.
        if not isinstance(data, dict) or data.get("url") != url:
            return cls(path, url)
        files = data.get("files")
        sent = (
            {str(k): v for k, v in files.items() if isinstance(v, int) and v >= 0}
            if isinstance(files, dict)
            else {}
        )
        raw = data.get("documents")
        digests = (
            {str(k): v for k, v in raw.items() if isinstance(v, str) and v}
            if isinstance(raw, dict)
            else {}
        )
        return cls(path, url, sent, digests)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename: a crash mid-write leaves the old state, never half a file.
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".watch-state-")
        with os.fdopen(fd, "w") as out:
            data: dict[str, Any] = {"url": self.url, "files": self.sent}
            if self.digests:
                data["documents"] = self.digests
            json.dump(data, out, indent=1, sort_keys=True)
        os.replace(tmp, self.path)


# (files with the length to send of each, harness): the server's report
Uploader = Callable[[Sequence[tuple[Path, int]], str], Any]
# What is ready to send of a file: a JSON Lines file's complete length, a JSON document's
# SHA-256 ("" until it has parsed whole once).
Ready = int | str
Due = tuple[Path, Watched, list[tuple[Path, Ready]]]


class Watcher:
    """Polls session files and uploads each session whose files grew by whole lines (or, for
    a JSON document, changed and parse whole)."""

    def __init__(
        self,
        roots: Sequence[str],
        *,
        upload: Uploader,
        state: State,
        backoff: Backoff,
        out: IO[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        rescan: float = 2.0,
        parallel: int = 4,
    ) -> None:
        self.roots = [str(Path(r).expanduser()) for r in roots]
        self.upload = upload
        self.state = state
        self.backoff = backoff
        self.out = out
        self.clock = clock
        self.rescan_every = rescan
        self.parallel = parallel
        self._lock = threading.Lock()
        self.sessions: dict[Path, Watched] = {}
        self._scanned_at: float | None = None
        self._seen: dict[Path, tuple[int, int]] = {}  # (size, mtime_ns) at the last look
        self._ready: dict[Path, int] = {}  # complete length found at the last look
        self._documents: dict[Path, tuple[str, bytes]] = {}  # the last version parsed whole
        self._harness: dict[Path, str] = {}  # each file's, once known ("": not a session)
        # (size, mtime_ns) of a file whose first line was not complete at the last look: not
        # read again until it changes (a file with no newline was read whole every rescan).
        self._unknown: dict[Path, tuple[int, int]] = {}
        self._real_roots = [Path(r).resolve() for r in self.roots]

    def _harness_of(self, path: Path) -> str | None:
        known = self._harness.get(path)
        if known is None:
            try:
                stat = path.stat()
            except OSError:
                return None
            key = (stat.st_size, stat.st_mtime_ns)
            if self._unknown.get(path) == key:
                return None  # unchanged since it had no complete line
            found = harness_of(path)
            if found is None:
                self._unknown[path] = key  # no complete line yet: looked at again once it grows
                return None
            self._unknown.pop(path, None)
            self._harness[path] = known = found
        return known or None

    def _inside(self, path: Path) -> bool:
        """Whether ``path`` (resolved) is below a watched root: a symlink pointing out of the
        watched folders is not followed."""
        return any(path == root or path.is_relative_to(root) for root in self._real_roots)

    def scan(self) -> None:
        """Find session files (new sessions, new subagent files) under the roots."""
        existing = [r for r in self.roots if Path(r).exists()]
        for found in transcript_groups(existing):
            group = [p for p in found if self._inside(p.resolve())]
            if not group or group[0] != found[0]:
                continue
            main = group[0].resolve()
            if main in self.sessions:
                watched = self.sessions[main]
                if watched.harness == CLAUDE_CODE:
                    for path in group[1:]:
                        if path.resolve() not in watched.files:
                            watched.files.append(path.resolve())
                continue
            harness = self._harness_of(main)
            if harness is None:
                continue
            if harness == CLAUDE_CODE:
                self.sessions[main] = Watched([p.resolve() for p in group], harness)
            else:  # a Codex rollout or a Gemini chat is a session of one file
                self.sessions[main] = Watched([main], harness)
                for path in group[1:]:
                    self.sessions.setdefault(path.resolve(), Watched([path.resolve()], harness))
        for document in self._documents_under(existing):
            if self._inside(document):
                self.sessions.setdefault(document, Watched([document], GEMINI))
        self._scanned_at = self.clock()

    @staticmethod
    def _documents_under(roots: Sequence[str]) -> list[Path]:
        """Gemini CLI chats in one JSON document: ``session-*.json`` files below the folders,
        and any ``.json`` file named on its own."""
        found: list[Path] = []
        for raw in roots:
            path = Path(raw)
            if path.is_dir():
                found += sorted(p for p in path.rglob("session-*.json") if p.is_file())
            elif is_json_document(path):
                found.append(path)
        return [p.resolve() for p in found]

    def _sent(self, path: Path) -> Ready:
        if is_json_document(path):
            return self.state.digests.get(str(path), "")
        return self.state.sent.get(str(path), 0)

    def _length(self, path: Path) -> Ready:
        """What is ready to send of ``path``, re-read only when its size or mtime moved: the
        complete length of a JSON Lines file, the SHA-256 of a JSON document that parses
        whole (a document caught mid-write leaves the last whole version ready)."""
        if is_json_document(path):
            return self._document(path)
        try:
            stat = path.stat()
        except FileNotFoundError:
            return self._ready.get(path, 0)
        key = (stat.st_size, stat.st_mtime_ns)
        if self._seen.get(path) != key or path not in self._ready:
            start = max(self._ready.get(path, 0), self.state.sent.get(str(path), 0))
            if stat.st_size < start:  # truncated or replaced: read from the start
                start = 0
            self._ready[path] = complete_length(path, start)
            self._seen[path] = key
        return self._ready[path]

    def _document(self, path: Path) -> str:
        try:
            stat = path.stat()
            key = (stat.st_size, stat.st_mtime_ns)
            if self._seen.get(path) != key:
                if stat.st_size > unpack.DEFAULT_MAX_LINE:
                    raise ValueError("larger than a JSON document the server reads")
                data = path.read_bytes()
                json.loads(data)
                self._documents[path] = (hashlib.sha256(data).hexdigest(), data)
                self._seen[path] = key
        except (OSError, ValueError, RecursionError):
            pass  # gone, or caught mid-write: looked at again at the next poll
        kept = self._documents.get(path)
        return kept[0] if kept else ""

    def _due(self, now: float, busy: frozenset[Path] = frozenset()) -> tuple[list[Due], int]:
        """Sessions with new complete lines whose wait is over (none of ``busy``), and how
        many others have lines waiting out a failure's wait."""
        waiting = 0
        due = []
        for main, watched in self.sessions.items():
            if main in busy:
                continue
            lengths = [(p, self._length(p)) for p in watched.files]
            new = [(p, n) for p, n in lengths if n != self._sent(p)]
            if not new or not lengths[0][1]:
                continue
            if now < watched.next_try:
                waiting += 1
                continue
            due.append((main, watched, lengths))
        return due, waiting

    def poll(self, *, refill: float = 0.0) -> int:
        """One pass: upload every session with new complete lines whose wait is over.
        Returns how many sessions still have lines waiting to be sent.

        With ``refill`` (seconds), a slot that frees up during the pass takes the next session
        that has grown meanwhile, for up to that long: a session's new lines then wait for one
        upload slot, not for the slowest upload of the whole pass."""
        now = self.clock()
        if self._scanned_at is None or now - self._scanned_at >= self.rescan_every:
            self.scan()
        due, waiting = self._due(now)
        if self.parallel > 1 and (len(due) > 1 or (refill > 0 and due)):
            sent = self._send_side_by_side(due, until=now + refill if refill > 0 else None)
        else:
            sent = [self._send(*args) for args in due]
        return waiting + sent.count(False)

    def _send_side_by_side(self, due: list[Due], *, until: float | None) -> list[bool]:
        """Sessions upload side by side, so many busy sessions do not queue behind each other;
        each session has one upload in flight at most."""
        sent: list[bool] = []
        queue = list(due)
        with ThreadPoolExecutor(self.parallel) as pool:
            running: dict[Future[bool], Path] = {}
            while queue or running:
                while queue and len(running) < self.parallel:
                    main, watched, _ = queue.pop(0)
                    # Measured again as it starts: lines written while it waited for a slot
                    # go with it.
                    lengths = [(p, self._length(p)) for p in watched.files]
                    running[pool.submit(self._send, main, watched, lengths)] = main
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    del running[future]
                    sent.append(future.result())
                if not queue and until is not None and self.clock() < until:
                    queue, _ = self._due(self.clock(), busy=frozenset(running.values()))
        return sent

    def _send(self, main: Path, watched: Watched, lengths: list[tuple[Path, Ready]]) -> bool:
        name = f"{watched.harness} {main.name.split('.')[0]}"
        started = time.monotonic()
        try:
            with tempfile.TemporaryDirectory(prefix="sawtooth-watch-") as folder:
                parts = self._parts(lengths, Path(folder))
                report = self.upload(parts, watched.harness)
        except (GiveUp, OSError) as exc:
            watched.failures += 1
            reply = getattr(exc, "reply", None)
            wait = self.backoff.delay(watched.failures, getattr(reply, "retry_after", None))
            watched.next_try = self.clock() + wait
            reason = str(exc).splitlines()[0][:200]
            with self._lock:
                self._say(f"{name}: not sent ({reason}); retrying in {wait:.1f}s, nothing lost")
            return False
        watched.failures, watched.next_try = 0, 0.0
        with self._lock:
            for path, ready in lengths:
                if isinstance(ready, str):
                    if ready:
                        self.state.digests[str(path)] = ready
                else:
                    self.state.sent[str(path)] = ready
            self.state.save()
            took = time.monotonic() - started
            self._say(f"{name}: {_summary(report, parts)} ({took:.2f}s)")
        return True

    def _parts(self, lengths: list[tuple[Path, Ready]], folder: Path) -> list[tuple[Path, int]]:
        """What to upload: each JSON Lines file cut at its complete length; each JSON document
        as the version checked (a copy under its own name, since the file may be rewritten
        again while it is sent)."""
        parts: list[tuple[Path, int]] = []
        for path, ready in lengths:
            if isinstance(ready, int):
                if ready > 0:
                    parts.append((path, ready))
                continue
            kept = self._documents.get(path)
            if not ready or kept is None or kept[0] != ready:
                continue
            copy = folder / path.name
            copy.write_bytes(kept[1])
            parts.append((copy, len(kept[1])))
        return parts

    def _say(self, line: str) -> None:
        # File names and the server's words are printed to a terminal: control characters
        # (an escape sequence in a file name) are shown as "?" , never sent to it.
        print(printable(line), file=self.out or sys.stderr, flush=True)

    def run(self, *, interval: float, once: bool = False, sleep: Callable[[float], None]) -> int:
        """Poll until interrupted; with ``once``, until everything is sent or retries end."""
        attempts = 0
        while True:
            # Between the looks for new transcripts, freed slots take sessions that grew.
            waiting = self.poll(refill=0.0 if once else self.rescan_every)
            if once:
                if not waiting:
                    return 0
                attempts += 1
                if attempts >= self.backoff.attempts:
                    return 1
                soonest = min(w.next_try for w in self.sessions.values() if w.failures)
                sleep(max(0.0, soonest - self.clock()))
                continue
            sleep(interval)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` with control characters (ESC, CR, BEL...) shown as ``?``.

    >>> printable("a\x1b[2Jb")
    'a?[2Jb'
    """
    return _CONTROL.sub("?", text)


def _summary(report: Any, lengths: Sequence[tuple[Path, int]]) -> str:
    sessions = report.get("sessions", []) if isinstance(report, dict) else []
    new = sum(int(s.get("messages", 0)) for s in sessions)
    compactions = sum(int(s.get("compactions", 0)) for s in sessions)
    size = sum(n for _, n in lengths)
    files = len(lengths)
    text = f"sent {size:,} bytes in {files} file{'s' if files != 1 else ''}, {new} new message"
    text += "" if new == 1 else "s"
    if compactions:
        text += f", {compactions} new compaction{'s' if compactions != 1 else ''}"
    refused = [f for f in report.get("files", []) if f.get("error")] if sessions else []
    if refused:
        text += f", {len(refused)} file(s) refused: {refused[0]['error']}"
    return text


def hook_transcript(stdin: IO[str]) -> str:
    """The transcript a Claude Code hook is about, from the JSON the hook receives on stdin
    (``{"session_id", "transcript_path", "hook_event_name", ...}``)."""
    try:
        payload = json.load(stdin)
    except ValueError as exc:
        raise SystemExit(f"--hook: stdin is not the JSON of a Claude Code hook ({exc})") from exc
    path = payload.get("transcript_path") if isinstance(payload, dict) else None
    if not isinstance(path, str) or not path:
        raise SystemExit("--hook: the hook's JSON has no transcript_path")
    return path


def default_state() -> Path:
    return Path(os.environ.get("SAWTOOTH_WATCH_STATE", DEFAULT_STATE)).expanduser()
