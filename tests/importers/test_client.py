"""The agent-side client: recorder, retries, bounded buffer, and the upload command."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from compaction.client import Backoff, GiveUp, Recorder
from compaction.client.__main__ import main as client_main
from compaction.client.transport import Reply, post_with_retries, retry_after_seconds
from sessions.models import AgentSession, CompactionEvent, Message
from tests.factories import make_key, make_project
from tests.importers.corpus import AUTO

ROOT = Path(__file__).resolve().parents[2]


def test_client_imports_no_django() -> None:
    code = (
        "import sys, compaction.client, compaction.client.__main__; "
        "assert 'django' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_retries_honour_retry_after_then_succeed() -> None:
    replies = [
        Reply(429, b"", retry_after=7.0),
        Reply(503, b"", retry_after=None),
        Reply(202, b"{}"),
    ]
    waits: list[float] = []
    reply = post_with_retries(
        lambda: replies.pop(0), backoff=Backoff(base=0.5, attempts=5), sleep=waits.append
    )
    assert reply.status == 202
    assert waits[0] == 7.0
    assert 0 <= waits[1] <= 1.0  # jittered backoff for the second attempt


def test_a_refusal_is_not_retried() -> None:
    calls: list[int] = []

    def once() -> Reply:
        calls.append(1)
        return Reply(409, b'{"error": "conflict"}')

    with pytest.raises(GiveUp, match="HTTP 409"):
        post_with_retries(once, backoff=Backoff(attempts=5), sleep=lambda s: None)
    assert len(calls) == 1


def test_network_errors_are_retried_until_attempts_run_out() -> None:
    def once() -> Reply:
        raise ConnectionRefusedError("refused")

    waits: list[float] = []
    with pytest.raises(GiveUp, match=r"gave up after 3 attempts \(\[Errno 111\] refused|refused"):
        post_with_retries(once, backoff=Backoff(attempts=3), sleep=waits.append)
    assert len(waits) == 2


def test_retry_after_accepts_http_dates() -> None:
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0


def test_the_buffer_is_bounded_and_never_blocks_the_agent() -> None:
    recorder = Recorder(
        url="http://127.0.0.1:9",  # discard port: nothing listens
        key="st_x_y",
        session_id="offline",
        max_buffer=3,
        flush_interval=60,
        backoff=Backoff(attempts=1),
    )
    started = time.monotonic()
    seqs = [recorder.message("user", f"m{i}") for i in range(50)]
    assert time.monotonic() - started < 1.0
    assert recorder.dropped > 0
    assert None in seqs
    recorder.close(timeout=2)


@pytest.mark.django_db(transaction=True)
def test_recorder_uploads_in_the_background(live_server) -> None:
    key = make_key(make_project())
    recorder = Recorder(
        url=live_server.url, key=key, session_id="run-42:main", agent="tester", flush_interval=0.05
    )
    recorder.message("user", "Migrate billing. Do not change the public API.")
    recorder.response(
        {
            "id": "msg_1",
            "role": "assistant",
            "content": [
                {"type": "compaction", "content": "Goal: migrate billing."},
                {"type": "text", "text": "Done."},
            ],
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 90},
        }
    )
    assert recorder.flush(timeout=10)
    recorder.close()
    session = AgentSession.objects.get(external_id="run-42:main")
    assert session.agent == "tester"
    answer = Message.objects.get(session=session, seq=1)
    assert answer.context_tokens == 100
    event = CompactionEvent.objects.get(session=session)
    assert (event.seq, event.summary, event.strategy) == (
        1,
        "Goal: migrate billing.",
        "server_compaction",
    )
    assert (recorder.sent, recorder.failed, recorder.dropped) == (2, 0, 0)


@pytest.mark.django_db(transaction=True)
def test_upload_command_imports_a_transcript_with_its_subagents(live_server, capsys) -> None:
    key = make_key(make_project())
    assert client_main(["upload", str(AUTO), "--url", live_server.url, "--key", key]) == 0
    out = capsys.readouterr().out
    assert '"compactions": 1' in out
    event = CompactionEvent.objects.get()
    assert "compaction_call" in event.kept
    assert AgentSession.objects.filter(parent__isnull=False).count() == 1
    # again: nothing new
    assert client_main(["upload", str(AUTO), "--url", live_server.url, "--key", key]) == 0
    assert '"messages": 0' in capsys.readouterr().out


def test_upload_command_reports_a_refused_key(live_server, capsys, transactional_db) -> None:
    status = client_main(["upload", str(AUTO), "--url", live_server.url, "--key", "st_bad_key"])
    assert status == 1
    assert "HTTP 401" in capsys.readouterr().err
