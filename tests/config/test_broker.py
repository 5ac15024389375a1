"""The embedded filesystem broker: a message is never readable half-written, and a file that
does not parse is skipped instead of stopping the worker (config/broker.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from kombu import Connection, Exchange, Queue

from config import broker


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Any]:
    for name in ("queue", "processed", "control"):
        (tmp_path / name).mkdir()
    return {
        "data_folder_in": str(tmp_path / "queue"),
        "data_folder_out": str(tmp_path / "queue"),
        "processed_folder": str(tmp_path / "processed"),
        "control_folder": str(tmp_path / "control"),
        "store_processed": False,
    }


def test_filesystem_urls_use_the_atomic_transport(folders: dict[str, Any]) -> None:
    broker.register()
    with Connection("filesystem://localhost//", transport_options=folders) as conn:
        assert isinstance(conn.default_channel, broker.Channel)


def test_a_message_is_invisible_to_workers_until_it_is_whole(
    folders: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen_while_writing: list[list[str]] = []
    real_dumps = broker.dumps

    def dumps_and_look(payload: Any) -> str:
        # the moment kombu's own transport had an empty .msg file in the folder
        seen_while_writing.append(os.listdir(folders["data_folder_out"]))
        return real_dumps(payload)

    monkeypatch.setattr(broker, "dumps", dumps_and_look)
    with Connection(transport=broker.Transport, transport_options=folders) as conn:
        queue = Queue("work", Exchange("work"), routing_key="work")
        producer = conn.Producer()
        producer.publish({"n": 1}, exchange=queue.exchange, routing_key="work", declare=[queue])
        assert seen_while_writing
        assert all(not name.endswith(".msg") for names in seen_while_writing for name in names), (
            seen_while_writing
        )
        assert [n for n in os.listdir(folders["data_folder_in"]) if n.endswith(".work.msg")]
        message = conn.SimpleQueue(queue).get(timeout=1)
        assert message.payload == {"n": 1}


def test_a_file_that_does_not_parse_is_skipped_not_fatal(folders: dict[str, Any]) -> None:
    # Its own queue name: kombu keeps the exchanges a process declared in memory.
    with Connection(transport=broker.Transport, transport_options=folders) as conn:
        queue = Queue("other", Exchange("other"), routing_key="other")
        simple = conn.SimpleQueue(queue)
        # what a process killed mid-write left behind, first in the folder's order
        left = Path(folders["data_folder_in"], "0_left-behind.other.msg")
        left.write_bytes(b"")
        simple.put({"n": 2})
        assert simple.get(timeout=1).payload == {"n": 2}
        assert not left.exists()
