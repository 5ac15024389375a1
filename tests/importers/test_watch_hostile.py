"""The watcher against hostile folders: a file with no final newline is not read again at
every rescan, a symlink out of the watched folder is not followed, and escape codes in file
names never reach the terminal."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from compaction.client import watch
from compaction.client.transport import Backoff
from tests.importers.corpus import SPOTTER

SHORT = SPOTTER / "short.jsonl"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _watcher(root: Path, tmp_path: Path) -> tuple[watch.Watcher, list[list[str]], io.StringIO]:
    sent: list[list[str]] = []
    out = io.StringIO()

    def upload(files: Sequence[tuple[Path, int]], harness: str) -> Any:
        sent.append([p.name for p, _ in files])
        return {"sessions": [{"messages": 1}], "files": []}

    watcher = watch.Watcher(
        [str(root)],
        upload=upload,
        state=watch.State.load(tmp_path / "state.json", "server"),
        backoff=Backoff(base=1.0, cap=8.0, attempts=3),
        out=out,
        clock=Clock(),
        rescan=0.0,
        parallel=1,
    )
    return watcher, sent, out


def test_a_file_with_no_newline_is_not_read_again_until_it_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "projects"
    root.mkdir()
    partial = root / "s.jsonl"
    partial.write_bytes(b'{"type": "user", "half a line' + b"x" * 100_000)
    reads: list[Path] = []
    real = watch.first_line

    def counting(path: Path) -> bytes | None:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(watch, "first_line", counting)
    watcher, _, _ = _watcher(root, tmp_path)
    for _ in range(5):
        watcher.poll()
    assert len(reads) == 1  # before: once per rescan
    with partial.open("ab") as fh:
        fh.write(b'"}\n')
    watcher.poll()
    assert len(reads) == 2


def test_a_symlink_out_of_the_watched_folder_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.jsonl").write_bytes(SHORT.read_bytes())
    root = tmp_path / "projects"
    root.mkdir()
    os.symlink(outside / "secret.jsonl", root / "link.jsonl")
    (root / "own.jsonl").write_bytes(SHORT.read_bytes())
    watcher, sent, _ = _watcher(root, tmp_path)
    watcher.poll()
    assert [p.name for p in watcher.sessions] == ["own.jsonl"]
    assert sent == [["own.jsonl"]]


def test_escape_codes_in_a_file_name_never_reach_the_terminal(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    root.mkdir()
    (root / "s\x1b]0;pwned\x07\x1b[2J.jsonl").write_bytes(SHORT.read_bytes())
    watcher, sent, out = _watcher(root, tmp_path)
    watcher.poll()
    assert len(sent) == 1
    printed = out.getvalue()
    assert "\x1b" not in printed
    assert "\x07" not in printed
    assert "s?]0;pwned??[2J" in printed
