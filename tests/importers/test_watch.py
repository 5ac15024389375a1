"""The watcher (``python -m compaction.client watch``) against the real server: a transcript
growing on disk, line by line, arrives as a one-shot import of the whole file would."""

from __future__ import annotations

import gzip
import io
import json
import os
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from compaction.client.__main__ import ANY_IMPORT_PATH, IMPORT_PATH, upload
from compaction.client.__main__ import main as client_main
from compaction.client.transport import Backoff
from compaction.client.watch import CLAUDE_CODE, State, Watcher, complete_length, harness_of
from sessions.importers.claude_code import claude_code_import
from sessions.importers.codex import codex_import
from sessions.importers.gemini import gemini_import
from sessions.models import AgentSession
from tests.engine.test_codex import COMPACTED
from tests.engine.test_gemini import FIXTURES as GEMINI
from tests.engine.test_gemini import LINES
from tests.factories import make_key, make_project
from tests.importers.corpus import AUTO, first_write, read_lines
from tests.importers.jobs import JobRunner
from tests.importers.test_claude_code import _live_cut, _stored_rows


@pytest.fixture(autouse=True)
def _import_jobs_run(request: pytest.FixtureRequest) -> Any:
    """Codex and Gemini files go through POST /api/v1/imports, imported in the background:
    a thread runs the jobs, as the worker does, where the watcher talks to live_server."""
    if "live_server" not in request.fixturenames:
        yield None
        return
    with JobRunner() as runner:
        yield runner


ROOT = Path(__file__).resolve().parents[2]
SUBAGENTS = AUTO.parent / AUTO.name.split(".")[0] / "subagents"
SESSION_ID = AUTO.name.split(".")[0]


def test_watcher_imports_no_django() -> None:
    code = "import sys, compaction.client.watch; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_complete_length_holds_back_a_line_without_its_newline(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c": ')
    assert complete_length(path, 0) == 18
    assert complete_length(path, 9) == 18
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c": 3}\n')
    assert complete_length(path, 18) == 27


def _dead_url() -> str:
    """A local port nothing listens on: a server that is down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Harness:
    """A watcher on ``root`` that uploads to ``self.url`` and records each upload."""

    def __init__(self, root: Path, url: str, key: str, state: Path) -> None:
        self.url, self.key = url, key
        self.uploads: list[list[tuple[str, int]]] = []
        self.clock = Clock()
        self.out = io.StringIO()
        self.watcher = Watcher(
            [str(root)],
            upload=self.send,
            state=State.load(state, "server"),
            backoff=Backoff(base=1.0, cap=8.0, attempts=3),
            out=self.out,
            clock=self.clock,
            rescan=0.0,
        )

    def send(self, files: Sequence[tuple[Path, int]], harness: str) -> Any:
        self.uploads.append([(p.name, n) for p, n in files])
        return upload(
            [p for p, _ in files],
            url=self.url,
            key=self.key,
            backoff=Backoff(attempts=1),
            lengths=[n for _, n in files],
            own_names=True,
            path=IMPORT_PATH if harness == CLAUDE_CODE else ANY_IMPORT_PATH,
        )

    def poll(self) -> int:
        self.clock.now += 1
        return self.watcher.poll()


def _grow(path: Path, data: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _sessions(project: Any) -> dict[str, Any]:
    return {
        s.external_id: _stored_rows(s)
        for s in AgentSession.objects.filter(project=project).order_by("external_id")
    }


def _reference(folder: Path | None = None) -> dict[str, Any]:
    """The sessions a one-shot import of the finished transcript stores: with its subagents
    folder, or (given a ``folder`` to copy it to) the main file alone."""
    reference = make_project(name="one-shot import")
    if folder is None:
        claude_code_import(project=reference, paths=[AUTO])
    else:
        folder.mkdir()
        alone = folder / f"{SESSION_ID}.jsonl"
        alone.write_bytes(b"".join(read_lines(AUTO)))
        claude_code_import(project=reference, paths=[alone])
    return _sessions(reference)


@pytest.mark.django_db(transaction=True)
def test_a_watched_session_equals_an_imported_one_message_for_message(
    live_server: Any, tmp_path: Path
) -> None:
    lines = read_lines(AUTO)
    mid_response, _ = _live_cut(lines, where="tool calls")
    after_compaction, _ = _live_cut(lines, where="after compaction")
    project = make_project(name="watched")
    root = tmp_path / "projects" / "-home-dev-app"
    root.mkdir(parents=True)
    main = root / f"{SESSION_ID}.jsonl"
    main.write_bytes(b"")
    w = Harness(tmp_path / "projects", live_server.url, make_key(project), tmp_path / "state.json")

    cuts = sorted({mid_response, 50, after_compaction, len(lines) - 1})
    done = 0
    for cut in cuts:
        _grow(main, b"".join(lines[done:cut]))
        done = cut
        assert w.poll() == 0
    assert len(w.uploads) == len(cuts)

    # the last line, written in two parts: nothing is sent for the first half
    last = lines[-1]
    _grow(main, last[:40])
    w.poll()
    assert len(w.uploads) == len(cuts)
    _grow(main, last[40:])
    w.poll()
    assert w.uploads[-1] == [(main.name, main.stat().st_size)]

    # a subagent's files appear beside the session and join it
    (root / SESSION_ID / "subagents").mkdir(parents=True)
    for child in sorted(SUBAGENTS.iterdir()):
        (root / SESSION_ID / "subagents" / child.name).write_bytes(child.read_bytes())
    w.poll()
    assert sorted(name for name, _ in w.uploads[-1]) == sorted(
        [main.name, *(c.name for c in SUBAGENTS.iterdir())]
    )

    assert w.poll() == 0
    uploads = len(w.uploads)
    assert uploads == len(cuts) + 2  # nothing sent when nothing grew
    assert _sessions(project) == _reference()
    status = w.out.getvalue().splitlines()
    assert len(status) == uploads
    assert all(line.startswith(f"Claude Code {SESSION_ID}: sent ") for line in status)
    assert "1 new compaction" in "\n".join(status)


@pytest.mark.django_db(transaction=True)
def test_a_server_that_is_down_loses_nothing_and_is_retried_with_growing_waits(
    live_server: Any, tmp_path: Path
) -> None:
    lines = read_lines(AUTO)
    project = make_project(name="watched")
    main = tmp_path / f"{SESSION_ID}.jsonl"
    main.write_bytes(b"".join(lines[:300]))
    w = Harness(tmp_path, _dead_url(), make_key(project), tmp_path / "state.json")

    assert w.poll() == 1
    first_wait = w.watcher.sessions[main.resolve()].next_try - w.clock.now
    assert "not sent" in w.out.getvalue()
    assert "nothing lost" in w.out.getvalue()
    _grow(main, b"".join(lines[300:]))  # the agent carries on meanwhile
    w.clock.now += 100
    assert w.poll() == 1
    assert w.watcher.sessions[main.resolve()].failures == 2
    assert State.load(tmp_path / "state.json", "server").sent == {}  # nothing marked sent
    assert 0 <= first_wait <= 2.0

    w.url = live_server.url  # the server is back
    w.clock.now += 100
    assert w.poll() == 0
    assert _sessions(project)[SESSION_ID] == _reference(tmp_path / "ref")[SESSION_ID]


@pytest.mark.django_db(transaction=True)
def test_a_restart_resumes_from_the_state_file_and_sends_nothing_twice(
    live_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = read_lines(AUTO)
    project = make_project(name="watched")
    key = make_key(project)
    main = tmp_path / "watched" / f"{SESSION_ID}.jsonl"
    main.parent.mkdir()
    main.write_bytes(b"".join(lines[:400]))
    state = tmp_path / "state.json"
    args = ["watch", str(main.parent), "--url", live_server.url, "--key", key]
    args += ["--state", str(state), "--once"]

    assert client_main(args) == 0
    assert json.loads(state.read_text())["files"] == {str(main.resolve()): main.stat().st_size}
    # a restart with nothing new sends nothing
    counting = Harness(main.parent, live_server.url, key, state)
    counting.watcher.state = State.load(state, live_server.url)
    counting.poll()
    assert counting.uploads == []

    _grow(main, b"".join(lines[400:]))
    assert client_main(args) == 0
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2
    assert err[1].startswith(f"Claude Code {SESSION_ID}: sent ")
    assert "0 new messages" not in err[1]
    assert _sessions(project)[SESSION_ID] == _reference(tmp_path / "ref")[SESSION_ID]


def _hook(
    payload: dict[str, Any], *args: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compaction.client", "watch", "--hook", *args],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("event", ["PreCompact", "SessionEnd"])
def test_the_hook_recipe_flushes_the_transcript_named_in_the_hook_json(
    live_server: Any, tmp_path: Path, event: str
) -> None:
    project = make_project(name="hooked")
    main = tmp_path / "projects" / "-home-dev-app" / f"{SESSION_ID}.jsonl"
    main.parent.mkdir(parents=True)
    main.write_bytes(b"".join(read_lines(AUTO)))
    payload: dict[str, Any] = {
        "session_id": SESSION_ID,
        "transcript_path": str(main),
        "cwd": "/home/dev/app",
        "hook_event_name": event,
    }
    payload.update({"trigger": "auto"} if event == "PreCompact" else {"reason": "exit"})
    env = {**os.environ, "SAWTOOTH_WATCH_STATE": str(tmp_path / "state.json")}
    done = _hook(payload, "--url", live_server.url, "--key", make_key(project), env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(f"Claude Code {SESSION_ID}: sent ")
    assert AgentSession.objects.get(project=project, external_id=SESSION_ID).message_count > 0
    assert _sessions(project)[SESSION_ID] == _reference(tmp_path / "ref")[SESSION_ID]


def test_the_hook_refuses_json_without_a_transcript(tmp_path: Path) -> None:
    done = _hook(
        {"hook_event_name": "SessionEnd"},
        "--url",
        "http://x",
        "--key",
        "k",
        env={**os.environ, "SAWTOOTH_WATCH_STATE": str(tmp_path / "s.json")},
    )
    assert done.returncode == 1
    assert "no transcript_path" in done.stderr


@pytest.mark.django_db(transaction=True)
def test_several_sessions_growing_together_each_equal_their_import(
    live_server: Any, tmp_path: Path
) -> None:
    log = AUTO.parents[1] / "claude-code-log"
    sources = sorted(log.rglob("*.jsonl"))[:3]
    project = make_project(name="watched")
    root = tmp_path / "projects"
    copies = []
    for source in sources:
        copy = root / source.parent.name / source.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copies.append((source, copy))
    w = Harness(root, live_server.url, make_key(project), tmp_path / "state.json")
    assert w.watcher.parallel > 1
    for half in (0, 1):
        for source, copy in copies:
            lines = read_lines(source)
            cut = len(lines) // 2
            _grow(copy, b"".join(lines[:cut] if half == 0 else lines[cut:]))
        assert w.poll() == 0
    assert len(w.uploads) == 2 * len(sources)

    reference = make_project(name="one-shot import")
    claude_code_import(project=reference, paths=sources)
    assert _sessions(project) == _sessions(reference)


def test_a_damaged_state_file_means_starting_over_not_crashing(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text('{"url": "u", "files": {"/a.jsonl": "lots", "/b.jsonl": 12}}')
    assert State.load(state, "u").sent == {"/b.jsonl": 12}
    assert State.load(state, "another server").sent == {}
    state.write_text("{half")
    assert State.load(state, "u").sent == {}


def test_a_freed_slot_takes_a_session_that_grew_while_another_upload_is_slow(
    tmp_path: Path,
) -> None:
    """No server: the uploader is a stand-in that says when it was called. Session "slow"
    uploads until "busy" has been sent twice; "busy" grows while its first upload runs. With
    ``refill`` the freed slot sends "busy" again at once, instead of at the next pass, after
    the slowest upload of this one."""
    import threading

    root = tmp_path / "projects" / "p"
    root.mkdir(parents=True)
    slow, busy = root / f"{'a' * 8}-slow.jsonl", root / f"{'b' * 8}-busy.jsonl"
    for path in (slow, busy):
        path.write_bytes(b'{"type": "user"}\n')
    calls: list[tuple[str, int]] = []
    busy_again = threading.Event()
    out = io.StringIO()

    def send(files: Sequence[tuple[Path, int]], harness: str) -> Any:
        path, length = files[0]
        calls.append((path.name, length))
        if path == busy and len(calls) <= 2:
            _grow(busy, b'{"type": "assistant"}\n')  # a line written during the upload
        elif path == busy:
            busy_again.set()
        elif path == slow and not busy_again.wait(10):
            raise OSError("busy was not sent again while this upload ran")
        return {"sessions": []}

    watcher = Watcher(
        [str(tmp_path / "projects")],
        upload=send,
        state=State.load(tmp_path / "state.json", "server"),
        backoff=Backoff(base=1.0, cap=8.0, attempts=3),
        out=out,
        parallel=2,
    )
    assert watcher.poll(refill=30.0) == 0
    assert [name for name, _ in calls].count(busy.name) == 2
    assert "not sent" not in out.getvalue()  # the slow upload ended after busy's second one
    assert watcher.state.sent[str(busy.resolve())] == busy.stat().st_size
    assert watcher.state.sent[str(slow.resolve())] == slow.stat().st_size


def test_a_session_waiting_for_a_slot_sends_the_lines_written_while_it_waited(
    tmp_path: Path,
) -> None:
    """Three sessions, two slots: "c" waits for one, and grows meanwhile. Its upload, in the
    same pass, carries the new line too, not just what it had when the pass began."""
    import threading

    root = tmp_path / "projects" / "p"
    root.mkdir(parents=True)
    a, b, c = (root / f"{x * 8}-{x}.jsonl" for x in "abc")
    for path in (a, b, c):
        path.write_bytes(b'{"type": "user"}\n')
    grown = threading.Event()
    sent: dict[str, list[int]] = {}

    def send(files: Sequence[tuple[Path, int]], harness: str) -> Any:
        path, length = files[0]
        sent.setdefault(path.name, []).append(length)
        if path == a:
            _grow(c, b'{"type": "assistant"}\n')
            grown.set()
        elif path == b:
            grown.wait(10)
        return {"sessions": []}

    watcher = Watcher(
        [str(tmp_path / "projects")],
        upload=send,
        state=State.load(tmp_path / "state.json", "server"),
        backoff=Backoff(base=1.0, cap=8.0, attempts=3),
        out=io.StringIO(),
        parallel=2,
    )
    assert watcher.poll() == 0
    assert sent[c.name] == [c.stat().st_size]
    assert watcher.state.sent[str(c.resolve())] == c.stat().st_size


# --- Codex rollouts and Gemini CLI chats --------------------------------------------------

ROLLOUT = COMPACTED  # a real Codex Desktop rollout with a (remote) compaction in it
ROLLOUT_NAME = ROLLOUT.name.removesuffix(".gz")
GEMINI_CHAT = GEMINI / "ai-sessions" / "gemini-cli-pomodoro-timer.json"


def _codex_lines() -> list[bytes]:
    return [line + b"\n" for line in gzip.open(ROLLOUT).read().split(b"\n") if line.strip()]


def _one_shot(importer: Any, path: Path, data: bytes) -> dict[str, Any]:
    """The sessions a one-shot import of the finished file stores (under the same name)."""
    reference = make_project(name="one-shot import")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    importer(project=reference, paths=[path])
    return _sessions(reference)


def test_the_harness_is_recognised_by_the_first_line(tmp_path: Path) -> None:
    rollout = tmp_path / "rollout-x.jsonl"
    rollout.write_bytes(_codex_lines()[0])
    chat_lines = tmp_path / "session-x.jsonl"
    chat_lines.write_bytes(LINES.read_bytes())
    claude = tmp_path / "s.jsonl"
    claude.write_bytes(read_lines(AUTO)[0])
    half = tmp_path / "half.jsonl"
    half.write_bytes(_codex_lines()[0][:30])
    assert harness_of(rollout) == "Codex"
    assert harness_of(chat_lines) == "Gemini CLI"
    assert harness_of(tmp_path / "session-y.json") == "Gemini CLI"
    assert harness_of(claude) == "Claude Code"
    assert harness_of(half) is None  # not known until its first line is whole


@pytest.mark.django_db(transaction=True)
def test_a_watched_codex_rollout_equals_an_imported_one_message_for_message(
    live_server: Any, tmp_path: Path
) -> None:
    lines = _codex_lines()
    compacted = next(i for i, line in enumerate(lines) if b'"type":"compacted"' in line)
    project = make_project(name="watched")
    day = tmp_path / "codex" / "sessions" / "2026" / "02" / "23"
    day.mkdir(parents=True)
    rollout = day / ROLLOUT_NAME
    rollout.write_bytes(b"")
    w = Harness(tmp_path / "codex", live_server.url, make_key(project), tmp_path / "state.json")

    # cut mid-response, right after the compacted line (no call after it yet), and so on
    cuts = [40, compacted - 1, compacted + 1, compacted + 4, len(lines) - 1]
    done = 0
    for cut in cuts:
        _grow(rollout, b"".join(lines[done:cut]))
        done = cut
        assert w.poll() == 0
    assert len(w.uploads) == len(cuts)
    # the last line, written in two parts: held back until its newline
    _grow(rollout, lines[-1][:25])
    w.poll()
    assert len(w.uploads) == len(cuts)
    _grow(rollout, lines[-1][25:])
    w.poll()
    assert w.uploads[-1] == [(ROLLOUT_NAME, rollout.stat().st_size)]
    assert w.poll() == 0
    assert len(w.uploads) == len(cuts) + 1  # nothing sent when nothing grew

    whole = _one_shot(codex_import, tmp_path / "ref" / ROLLOUT_NAME, b"".join(lines))
    assert _sessions(project) == whole
    (messages, events), *_ = whole.values()
    assert len(events) == 1
    assert len(messages) > 600
    status = w.out.getvalue().splitlines()
    assert len(status) == len(w.uploads)
    assert all(line.startswith(f"Codex {ROLLOUT_NAME[:-6]}: sent ") for line in status)
    assert "1 new compaction" in "\n".join(status)


def _rewrite(path: Path, data: bytes) -> None:
    """Gemini CLI rewrites its chat whole."""
    path.write_bytes(data)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000))


@pytest.mark.django_db(transaction=True)
def test_a_watched_gemini_chat_equals_an_imported_one_message_for_message(
    live_server: Any, tmp_path: Path
) -> None:
    record = json.loads(GEMINI_CHAT.read_bytes())
    messages = record["messages"]
    project = make_project(name="watched")
    chats = tmp_path / "gemini" / "tmp" / "0123abcd" / "chats"
    chats.mkdir(parents=True)
    chat = chats / "session-2025-08-01T10-00-5d1b2e3f.json"
    w = Harness(tmp_path / "gemini", live_server.url, make_key(project), tmp_path / "state.json")

    sent = 0
    for n in (3, 9, 10, 16, len(messages)):
        last = messages[n - 1]
        if last["type"] == "gemini":  # first written without tokens, then completed
            early = json.dumps({**record, "messages": [*messages[: n - 1], first_write(last)]})
            _rewrite(chat, early.encode())
            assert w.poll() == 0
            sent += 1
        version = json.dumps({**record, "messages": messages[:n]}).encode()
        # caught in the middle of the rewrite: nothing is sent until it parses whole
        _rewrite(chat, version[: len(version) // 2])
        assert w.poll() == 0
        assert len(w.uploads) == sent
        _rewrite(chat, version)
        assert w.poll() == 0
        sent += 1
        assert w.uploads[-1] == [(chat.name, len(version))]
    _rewrite(chat, version)  # written again, unchanged: nothing to send
    w.poll()
    assert len(w.uploads) == sent

    assert _sessions(project) == _one_shot(gemini_import, tmp_path / "ref" / chat.name, version)
    status = w.out.getvalue().splitlines()
    assert len(status) == sent
    assert all(line.startswith(f"Gemini CLI {chat.name[:-5]}: sent ") for line in status)


@pytest.mark.django_db(transaction=True)
def test_a_watched_gemini_json_lines_chat_with_a_rewind_equals_an_imported_one(
    live_server: Any, tmp_path: Path
) -> None:
    lines = [line + b"\n" for line in LINES.read_bytes().split(b"\n") if line.strip()]
    project = make_project(name="watched")
    chat = tmp_path / "chats" / LINES.name
    chat.parent.mkdir()
    chat.write_bytes(b"")
    w = Harness(tmp_path, live_server.url, make_key(project), tmp_path / "state.json")
    rewind = next(i for i, line in enumerate(lines) if b"$rewindTo" in line)
    for cut in (2, 5, rewind, len(lines)):  # the last cut holds the rewind and what follows
        chat.write_bytes(b"".join(lines[:cut]))
        assert w.poll() == 0
    assert len(w.uploads) == 4
    assert _sessions(project) == _one_shot(
        gemini_import, tmp_path / "ref" / LINES.name, b"".join(lines)
    )
    assert w.out.getvalue().startswith(f"Gemini CLI {LINES.name.split('.')[0]}: sent ")


@pytest.mark.django_db(transaction=True)
def test_a_restart_resumes_codex_and_gemini_sessions_without_resending(
    live_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _codex_lines()
    record = json.loads(GEMINI_CHAT.read_bytes())
    project = make_project(name="watched")
    key = make_key(project)
    rollout = tmp_path / "codex" / ROLLOUT_NAME
    chat = tmp_path / "gemini" / "chats" / "session-2025-08-01T10-00-5d1b2e3f.json"
    for folder in (rollout.parent, chat.parent):
        folder.mkdir(parents=True)
    rollout.write_bytes(b"".join(lines[:300]))
    chat.write_text(json.dumps({**record, "messages": record["messages"][:8]}))
    state = tmp_path / "state.json"
    args = ["watch", str(tmp_path / "codex"), str(chat), "--url", live_server.url, "--key", key]
    args += ["--state", str(state), "--once"]

    assert client_main(args) == 0
    saved = json.loads(state.read_text())
    assert saved["files"] == {str(rollout.resolve()): rollout.stat().st_size}
    assert list(saved["documents"]) == [str(chat.resolve())]
    assert len(capsys.readouterr().err.splitlines()) == 2
    # a restart with nothing new sends nothing
    assert client_main(args) == 0
    assert capsys.readouterr().err == ""

    _grow(rollout, b"".join(lines[300:]))
    final = json.dumps(record).encode()
    _rewrite(chat, final)
    assert client_main(args) == 0
    err = sorted(capsys.readouterr().err.splitlines())
    assert len(err) == 2
    assert err[0].startswith("Codex rollout-")
    assert "0 new messages" not in err[0]
    assert err[1].startswith("Gemini CLI session-")
    assert "0 new messages" not in err[1]
    reference = make_project(name="one-shot import")
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / ROLLOUT_NAME).write_bytes(b"".join(lines))
    (tmp_path / "ref" / chat.name).write_bytes(final)
    codex_import(project=reference, paths=[tmp_path / "ref" / ROLLOUT_NAME])
    gemini_import(project=reference, paths=[tmp_path / "ref" / chat.name])
    assert _sessions(project) == _sessions(reference)
