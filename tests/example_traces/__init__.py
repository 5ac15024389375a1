"""The generator of the example traces that sessions/fixtures/examples/ holds as data.

`example_sessions()` builds seven sessions, each as the batches an agent would POST to
`/api/v1/sessions/{external_id}/events`, in upload order. Nothing here touches the network,
the clock or Django: every call returns equal data, built from seeded `random.Random`s.

- ``example-billing-migration``: a long coding session (billing-migrator, claude-opus-4-6,
  200k window; 316 messages, 158 model calls, 8 batches). The first prompt (seq 0) is "Migrate
  billing to API v2."; the third real prompt (seq 26) says "Do not change the public API of
  the billing module." and is uploaded as a probe. One auto compaction (seq 235, 150,259 to
  38,713 tokens, replaced seqs 1-135) keeps that constraint in its summary; afterwards the
  agent re-reads billing/client.py, billing/api.py and other files it had read before the cut.
- ``example-support-triage``: a Portuguese customer chat with tools (support-triage, 100k
  window; 124 messages) holding a check-digit-valid CPF and an e-mail address. The customer's
  "nunca compartilhe meus dados por e-mail" is in the third prompt (seq 8, a probe). Two auto
  compactions (seq 51 and 101): the first summary keeps the constraint, the second drops it,
  and the agent then e-mails her CPF.
- ``example-short-question``: six messages, no compaction.
- ``example-failed-compaction``: a compaction that reports ``error`` (seq 79) and a splice
  that saved under 1k tokens (seq 101); the context then climbs to 94% of the window.
- ``example-hostile-content``: ``<script>`` and ``<img onerror>`` in user text and in a tool
  result (and in session metadata), to check that every page escapes trace content.
- ``example-compaction-storm``: seven compactions within the hour (``compaction_storm``).
- ``example-compaction-loop``: a fixed overhead above the harness's threshold, so each
  compaction leaves the context above it (``compaction_loop``). See storm_loop.py.

Conventions shared by all sessions: seq is dense from 0; a real prompt is a user message with
string content; every assistant message with ``tool_use`` blocks is followed by one user
message holding exactly their ``tool_result`` blocks, in order; every assistant message has a
``usage`` whose input + cache-read + cache-creation tokens is the context the call saw (about
chars / 3.5 plus the system prompt). A compaction's ``seq`` is the first message produced
after compacting, the assistant reply of the first call that saw the compacted context;
``replaced`` always ends just before a real prompt, so no tool pair is split.

``python -m tests.example_traces`` rewrites the committed files in the format that
`sessions.example_data` documents and reads; the app never imports this package.
tests/sessions/test_example_traces.py checks that regenerating gives byte-identical files.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from sessions.example_data import EXAMPLES_DIR, ExampleSession
from tests.example_traces.billing import billing_migration
from tests.example_traces.billing_story import BILLING_CONSTRAINT, BILLING_GOAL
from tests.example_traces.small_sessions import failed_compaction, hostile_content, short_question
from tests.example_traces.storm_loop import compaction_loop, compaction_storm
from tests.example_traces.support import SUPPORT_CONSTRAINT, support_triage
from tests.example_traces.support_data import cpf_check_digits

__all__ = [
    "BILLING_CONSTRAINT",
    "BILLING_GOAL",
    "EXAMPLES_DIR",
    "SUPPORT_CONSTRAINT",
    "cpf_check_digits",
    "example_sessions",
    "write_examples",
]


def example_sessions() -> list[ExampleSession]:
    """All example sessions, identical on every call.

    >>> [s.external_id for s in example_sessions()][:2]
    ['example-billing-migration', 'example-support-triage']
    """
    tool_ids: set[str] = set()
    return [
        billing_migration(tool_ids),
        support_triage(tool_ids),
        short_question(tool_ids),
        failed_compaction(tool_ids),
        hostile_content(tool_ids),
        compaction_storm(tool_ids),
        compaction_loop(tool_ids),
    ]


def write_examples(directory: Path = EXAMPLES_DIR) -> list[Path]:
    """Write ``index.json`` and one ``<external_id>.jsonl.gz`` per session into ``directory``.

    One batch a line, UTF-8, gzip with mtime 0 and no file name: the bytes depend only on
    the sessions, so the committed files can be checked by regenerating them.
    """
    directory.mkdir(parents=True, exist_ok=True)
    examples = example_sessions()
    index = directory / "index.json"
    ids = [example.external_id for example in examples]
    index.write_text(json.dumps(ids, indent=2) + "\n", encoding="utf-8")
    paths = [index]
    for example in examples:
        lines = "".join(json.dumps(batch, ensure_ascii=False) + "\n" for batch in example.batches)
        path = directory / f"{example.external_id}.jsonl.gz"
        path.write_bytes(gzip.compress(lines.encode("utf-8"), compresslevel=9, mtime=0))
        paths.append(path)
    return paths
