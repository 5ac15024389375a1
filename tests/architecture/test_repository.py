"""What a fresh clone holds: no tracked link pointing outside the repository (a worktree's
`.venv-main` once pointed at another checkout's virtualenv)."""

from __future__ import annotations

import re
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


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    kept = "".join(c for c in heading.strip().lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def _anchors(markdown: str) -> set[str]:
    found, in_code = set(), False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            found.add(_slug(line.lstrip("#")))
    return found


def test_readme_and_docs_links_resolve() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.is_file():
                broken.append(f"{page.name}: {target}")
            elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked.read_text()):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert len(pages) > 5
    assert broken == []


def test_the_readme_fits_on_a_few_screens() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 120
