"""The watcher (``python -m compaction.client watch``) against the real server: a transcript
growing on disk, line by line, arrives as a one-shot import of the whole file would."""

from __future__ import annotations

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

from compaction.client.__main__ import main as client_main
from compaction.client.__main__ import upload
from compaction.client.transport import Backoff
from compaction.client.watch import State, Watcher, complete_length
from sessions.importers.claude_code import claude_code_import
from sessions.models import AgentSession
from tests.factories import make_key, make_project
from tests.importers.corpus import AUTO, read_lines
from tests.importers.test_claude_code import _live_cut, _stored_rows

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

    def send(self, files: Sequence[tuple[Path, int]]) -> Any:
        self.uploads.append([(p.name, n) for p, n in files])
        return upload(
            [p for p, _ in files],
            url=self.url,
            key=self.key,
            backoff=Backoff(attempts=1),
            lengths=[n for _, n in files],
            own_names=True,
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
    assert all(line.startswith(f"{SESSION_ID}: sent ") for line in status)
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
    assert err[1].startswith(f"{SESSION_ID}: sent ")
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
    assert done.stderr.startswith(f"{SESSION_ID}: sent ")
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

    def send(files: Sequence[tuple[Path, int]]) -> Any:
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

    def send(files: Sequence[tuple[Path, int]]) -> Any:
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
