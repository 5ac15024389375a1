"""``python -m compaction.client watch [PATH ...] --url URL --key KEY``: follow Claude Code
transcripts as they grow and upload what is new. No Django.

How it stays equal to an import: the server's Claude Code import is idempotent, and importing
a grown file adds exactly what a one-shot import of the whole file would have (a response
Claude Code was still writing over several lines is completed in place). So when a session's
files have grown by whole lines, the watcher sends the session again (its main file and its
``subagents/`` files) cut at the last complete line, through ``/api/v1/imports/claude-code``;
the server stores only the new messages. A line written in two parts is held back until its
newline arrives.

What is kept between runs: a state file with, per transcript, the byte offset up to which it
has been sent. A restart reads only past those offsets to find new lines, and sends nothing for
a session whose files have no new complete line. Offsets move only after the server has
answered 200, so a server that is down loses nothing: the session is retried with growing
waits (jittered, capped, Retry-After honoured) while the other sessions carry on.

Polling (``os.stat`` size and mtime every ``--interval`` seconds; the tree is searched for new
transcripts every ``--rescan`` seconds): no inotify dependency, and it works on every OS. Up to
``--parallel`` sessions upload at once, one upload in flight per session; a slot that frees up
takes the next session that has grown meanwhile, so a busy session's new lines wait for one
slot, not for the slowest upload of the pass.
"""

from __future__ import annotations

import json
import os
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
from compaction.engine.claude_code_records import transcript_groups

DEFAULT_ROOT = "~/.claude/projects"
DEFAULT_STATE = "~/.cache/sawtooth/watch-state.json"
_READ = 1024 * 1024


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
    """One session: its files, and when it may next be tried after a failure."""

    files: list[Path]
    failures: int = 0
    next_try: float = 0.0


@dataclass
class State:
    """Offsets sent, per transcript path, saved atomically after every accepted upload."""

    path: Path
    url: str
    sent: dict[str, int] = field(default_factory=dict)

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
        return cls(path, url, sent)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Write then rename: a crash mid-write leaves the old state, never half a file.
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".watch-state-")
        with os.fdopen(fd, "w") as out:
            json.dump({"url": self.url, "files": self.sent}, out, indent=1, sort_keys=True)
        os.replace(tmp, self.path)


Uploader = Callable[[Sequence[tuple[Path, int]]], Any]
Due = tuple[Path, Watched, list[tuple[Path, int]]]


class Watcher:
    """Polls transcripts and uploads each session whose files grew by whole lines."""

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

    def scan(self) -> None:
        """Find transcripts (new sessions, new subagent files) under the roots."""
        existing = [r for r in self.roots if Path(r).exists()]
        for group in transcript_groups(existing):
            main = group[0].resolve()
            watched = self.sessions.setdefault(main, Watched([]))
            for path in group:
                if path.resolve() not in watched.files:
                    watched.files.append(path.resolve())
        self._scanned_at = self.clock()

    def _length(self, path: Path) -> int:
        """The complete length of ``path``, re-read only when its size or mtime moved."""
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

    def _due(self, now: float, busy: frozenset[Path] = frozenset()) -> tuple[list[Due], int]:
        """Sessions with new complete lines whose wait is over (none of ``busy``), and how
        many others have lines waiting out a failure's wait."""
        waiting = 0
        due = []
        for main, watched in self.sessions.items():
            if main in busy:
                continue
            lengths = [(p, self._length(p)) for p in watched.files]
            new = [(p, n) for p, n in lengths if n != self.state.sent.get(str(p), 0)]
            if not new or lengths[0][1] == 0:
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

    def _send(self, main: Path, watched: Watched, lengths: list[tuple[Path, int]]) -> bool:
        name = main.name.split(".")[0]
        started = time.monotonic()
        try:
            report = self.upload([(p, n) for p, n in lengths if n > 0])
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
            for path, length in lengths:
                self.state.sent[str(path)] = length
            self.state.save()
            took = time.monotonic() - started
            self._say(f"{name}: {_summary(report, lengths)} ({took:.2f}s)")
        return True

    def _say(self, line: str) -> None:
        print(line, file=self.out or sys.stderr, flush=True)

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


def _summary(report: Any, lengths: list[tuple[Path, int]]) -> str:
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
