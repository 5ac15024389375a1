"""Nothing over 800 lines without a reason written at its top.

A module of the project's own packages longer than that either splits along its seams or says
why it stays whole: the first paragraph of its docstring has a line starting with
"Over 800 lines because". Migrations and tests are left out (generated, or lists of cases).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("sessions", "compaction", "alerts", "privacy", "team", "config")
LIMIT = 800
REASON = "Over 800 lines because"


def project_modules(root: Path = ROOT) -> list[Path]:
    """Every .py file of the packages, migrations and tests left out."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).parts
            if "migrations" in parts or "tests" in parts or ".venv" in parts:
                continue
            found.append(path)
    return found


def reason_at_top(source: str) -> bool:
    """True when the module docstring's first paragraph has a line starting with REASON."""
    docstring = ast.get_docstring(ast.parse(source), clean=True) or ""
    first_paragraph = re.split(r"\n[ \t]*\n", docstring, maxsplit=1)[0]
    return any(line.startswith(REASON) for line in first_paragraph.splitlines())


def too_long(paths: list[Path], root: Path = ROOT) -> list[str]:
    out = []
    for path in paths:
        source = path.read_text(encoding="utf-8")
        lines = len(source.splitlines())
        if lines > LIMIT and not reason_at_top(source):
            out.append(f"{path.relative_to(root)}: {lines} lines")
    return out


def test_no_module_is_over_800_lines_without_a_reason_at_its_top() -> None:
    modules = project_modules()
    assert ROOT / "compaction" / "engine" / "analysis.py" in modules  # the scan sees the engine
    assert not too_long(modules), (
        f"over {LIMIT} lines: split along the seams, or start a line of the docstring's first "
        f"paragraph with {REASON!r}: {too_long(modules)}"
    )


def _module(lines: int, docstring: str) -> str:
    head = f'"""{docstring}"""\n'
    return head + "x = 1\n" * (lines - len(head.splitlines()))


def test_a_long_module_needs_its_reason_in_the_first_paragraph(tmp_path: Path) -> None:
    package = tmp_path / "compaction"
    (package / "migrations").mkdir(parents=True)
    cases = {
        "silent.py": _module(801, "A module.\n"),
        "reason_below.py": _module(801, "A module.\n\nOver 800 lines because it is.\n"),
        "reason_in_prose.py": _module(801, "A module, not Over 800 lines because.\n"),
        "reasoned.py": _module(801, "A module.\nOver 800 lines because it is one table.\n"),
        "at_the_limit.py": _module(800, "A module.\n"),
        "migrations/0001_initial.py": _module(900, "A migration.\n"),
    }
    for name, source in cases.items():
        (package / name).write_text(source)
    assert len((package / "silent.py").read_text().splitlines()) == 801

    assert too_long(project_modules(tmp_path), tmp_path) == [
        "compaction/reason_below.py: 801 lines",
        "compaction/reason_in_prose.py: 801 lines",
        "compaction/silent.py: 801 lines",
    ]
