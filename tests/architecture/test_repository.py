"""What a fresh clone holds: no tracked link pointing outside the repository (a worktree's
`.venv-main` once pointed at another checkout's virtualenv)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout"
)
def test_no_tracked_link_points_outside_the_repository() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-s", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    links = [entry.split("\t", 1)[1] for entry in listed.split("\0") if entry.startswith("120000")]
    outside = []
    for link in links:
        target = subprocess.run(
            ["git", "cat-file", "-p", f":{link}"], cwd=ROOT, capture_output=True, check=True
        ).stdout.decode()
        resolved = (ROOT / link).parent.joinpath(target).resolve()
        if not resolved.is_relative_to(ROOT.resolve()):
            outside.append(f"{link} -> {target}")
    assert outside == []
