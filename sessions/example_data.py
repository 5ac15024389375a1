"""The example sessions that `demo_setup`, the tests and the benchmarks load.

They are data, committed under ``sessions/fixtures/examples/``:

- ``index.json``: the external ids, in the order the sessions are uploaded;
- ``<external_id>.jsonl.gz``: one session, gzip-compressed JSON Lines in UTF-8. Each line is
  one event batch exactly as an agent POSTs it to ``/api/v1/sessions/{external_id}/events``
  (DESIGN.md, "Ingest wire format, v1"): ``session`` (the header: agent, model,
  context_window, started_at, ...), ``messages``, and optionally ``compactions`` and
  ``probes``. Lines are in upload order; seqs are dense from 0 across the whole file.

The files are written by ``python -m tests.example_traces`` (a deterministic generator that
lives with the tests); never edit them by hand. This module imports nothing of Django.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXAMPLES_DIR = Path(__file__).resolve().parent / "fixtures" / "examples"


@dataclass(frozen=True)
class ExampleSession:
    """One example trace: the wire-format batches an agent would upload, in order."""

    external_id: str
    batches: list[dict[str, Any]]


def example_ids(directory: Path = EXAMPLES_DIR) -> list[str]:
    """The external ids of the example sessions, in upload order.

    >>> example_ids()[:2]
    ['example-billing-migration', 'example-support-triage']
    """
    ids = json.loads((directory / "index.json").read_text(encoding="utf-8"))
    return [str(external_id) for external_id in ids]


def example_session(external_id: str, directory: Path = EXAMPLES_DIR) -> ExampleSession:
    """One example session, read from ``<external_id>.jsonl.gz``."""
    with gzip.open(directory / f"{external_id}.jsonl.gz", "rt", encoding="utf-8") as lines:
        batches = [json.loads(line) for line in lines if line.strip()]
    return ExampleSession(external_id=external_id, batches=batches)


def example_sessions(directory: Path = EXAMPLES_DIR) -> list[ExampleSession]:
    """All example sessions, in upload order; a fresh copy on every call."""
    return [example_session(external_id, directory) for external_id in example_ids(directory)]
