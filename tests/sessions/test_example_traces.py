"""The example sessions are committed data; the generator in tests/example_traces/ made them.

Regenerating must give the committed files byte for byte, so the data can never drift from
the code that documents how it was built.
"""

from __future__ import annotations

import doctest
import gzip
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from sessions import example_data
from tests import example_traces

ROOT = Path(__file__).resolve().parents[2]
IDS = [
    "example-billing-migration",
    "example-support-triage",
    "example-short-question",
    "example-failed-compaction",
    "example-hostile-content",
    "example-compaction-storm",
    "example-compaction-loop",
]
FILES = sorted(["index.json", *(f"{external_id}.jsonl.gz" for external_id in IDS)])


def test_committed_files_are_the_index_and_one_gzip_per_session() -> None:
    assert sorted(path.name for path in example_data.EXAMPLES_DIR.iterdir()) == FILES
    assert example_data.example_ids() == IDS


def test_regenerating_gives_byte_identical_files(tmp_path: Path) -> None:
    written = example_traces.write_examples(tmp_path)

    assert sorted(path.name for path in written) == FILES
    for path in written:
        committed = example_data.EXAMPLES_DIR / path.name
        assert path.read_bytes() == committed.read_bytes(), (
            f"{committed} is stale: run `python -m tests.example_traces` and commit the result"
        )


def test_loaded_sessions_equal_freshly_generated_ones() -> None:
    assert example_data.example_sessions() == example_traces.example_sessions()


def test_each_file_holds_one_json_line_per_batch_and_no_timestamp(tmp_path: Path) -> None:
    example_traces.write_examples(tmp_path)

    for example in example_traces.example_sessions():
        raw = (tmp_path / f"{example.external_id}.jsonl.gz").read_bytes()
        lines = gzip.decompress(raw).decode("utf-8").splitlines()
        assert raw[4:8] == b"\0\0\0\0"  # gzip MTIME
        assert [json.loads(line) for line in lines] == example.batches
        assert example_data.example_session(example.external_id, tmp_path) == example


def test_generator_runs_as_a_script(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tests.example_traces", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )

    assert len(result.stdout.splitlines()) == len(FILES)
    assert sorted(path.name for path in tmp_path.iterdir()) == FILES


def test_loader_and_generator_do_not_import_django() -> None:
    for module in ("sessions.example_data", "tests.example_traces"):
        code = f"import sys, {module}; assert 'django' not in sys.modules"

        subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


@pytest.mark.parametrize("module", [example_data, example_traces], ids=lambda m: m.__name__)
def test_docstring_examples_hold(module: ModuleType) -> None:
    result = doctest.testmod(module)

    assert result.attempted > 0
    assert result.failed == 0
