"""Benchmark: precision and recall of "lost" on a labelled retention set.

Run: ``.venv/bin/python benchmarks/retention.py [--data benchmarks/data/retention_labels.jsonl]
[--verbose]``. The last line printed is JSON: ``{"facts_labelled": ..., "precision_lost": ...,
"recall_lost": ..., "seconds": ...}``.

The set (``benchmarks/data/retention_labels.jsonl``, one case a line):

* ``"source": "corpus"``: a real Claude Code compaction of the corpus (``transcript``,
  relative to it); the context before the boundary is checked against the summary Claude Code
  wrote. Each fact was labelled by reading that summary: ``kept``, ``lost``, or ``not_a_fact``
  (something an extractor might take for a fact: a temp path, a directory, a harness record).
* ``"source": "generated"``: a small history (``prompts``, ``tools`` with their results,
  ``probes``) and a ``summary``; ``keep_all`` means the splice dropped nothing.

Scoring, for the verdict "lost": a fact labelled ``lost`` and reported lost is a true positive;
reported kept, or not extracted at all, a false negative. A fact labelled ``kept`` or
``not_a_fact`` and reported lost is a false positive. Facts the eval reports that the set does
not label are counted (``unlabelled``) and printed with ``--verbose``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compaction.engine.claude_code import parse_transcript
from compaction.engine.evals import Probe, RetentionReport, retention
from compaction.engine.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock

DATA = Path(__file__).resolve().parent / "data" / "retention_labels.jsonl"
# The copy of the real-trace corpus the tests read (its SOURCES.md names each file's origin).
CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "corpus"


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def corpus_contexts(case: Mapping[str, Any]) -> tuple[list[Message], list[Message]]:
    """The history before a real compaction, and the summary Claude Code wrote for it."""
    transcript = parse_transcript(CORPUS / case["transcript"])
    boundary = transcript.compactions[case.get("compaction", 0)]
    summary_seq = transcript.summary_seqs[case.get("compaction", 0)]
    before = [m for m in transcript.messages if m.seq < boundary.seq]
    after = [m for m in transcript.messages if m.seq == summary_seq]
    return before, after


def generated_contexts(case: Mapping[str, Any]) -> tuple[list[Message], list[Message]]:
    """Prompts first, then one tool call and its result per ``tools`` entry, then the summary
    as the compacted context (or the whole history when ``keep_all``)."""
    messages: list[Message] = []
    seq = 0

    def add(role: str, *blocks: Any) -> None:
        nonlocal seq
        messages.append(Message(seq, role, tuple(blocks)))  # type: ignore[arg-type]
        seq += 1

    for i, prompt in enumerate(case["prompts"]):
        add("user", TextBlock(prompt))
        add("assistant", TextBlock(f"Step {i}."))
    for i, tool in enumerate(case["tools"]):
        tool_id = f"toolu_{i:03d}"
        add("assistant", ToolUseBlock(tool_id, tool["name"], tool["input"]))
        add("user", ToolResultBlock(tool_id, tool["result"], bool(tool.get("is_error"))))
    if case.get("keep_all"):
        return messages, list(messages)
    return messages, [Message(seq, "user", (TextBlock(case["summary"]),))]


def contexts(case: Mapping[str, Any]) -> tuple[list[Message], list[Message]]:
    if case["source"] == "corpus":
        return corpus_contexts(case)
    return generated_contexts(case)


def evaluate(case: Mapping[str, Any]) -> RetentionReport:
    before, after = contexts(case)
    probes = [Probe(p["text"], p.get("seq")) for p in case.get("probes", [])]
    return retention(before, after, probes=probes)


def score(
    cases: Sequence[Mapping[str, Any]], reports: Sequence[RetentionReport]
) -> Iterator[tuple[str, str, Mapping[str, Any] | None, bool | None, str]]:
    """(case, outcome, label, reported kept, evidence) for every labelled or reported fact;
    outcome is tp, fp, fn, tn or unlabelled."""
    for case, report in zip(cases, reports, strict=True):
        labels = {(f["kind"], f["text"]): f for f in case["facts"]}
        reported = {(i.fact.kind, i.fact.text): i for i in report.items}
        for key, label in labels.items():
            item = reported.get(key)
            lost = item is not None and not item.kept
            truly_lost = label["label"] == "lost"
            outcome = ("tp" if lost else "fn") if truly_lost else ("fp" if lost else "tn")
            yield (
                case["case"],
                outcome,
                label,
                None if item is None else item.kept,
                (item.evidence if item is not None else "not extracted"),
            )
        for key, item in reported.items():
            if key not in labels:
                yield (
                    case["case"],
                    "unlabelled",
                    {"kind": key[0], "text": key[1]},
                    item.kept,
                    (item.evidence),
                )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--verbose", action="store_true", help="print every error")
    args = parser.parse_args(argv)
    cases = load(args.data)
    started = time.perf_counter()
    reports = [evaluate(c) for c in cases]
    seconds = time.perf_counter() - started
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0, "unlabelled": 0}
    real = 0
    for name, outcome, label, kept, evidence in score(cases, reports):
        counts[outcome] += 1
        real += outcome != "unlabelled" and name.startswith("spotter-")
        if outcome in ("fp", "fn", "unlabelled") and (args.verbose or outcome != "unlabelled"):
            assert label is not None
            print(
                f"{outcome:10} {name}: {label['kind']} {label['text'][:90]!r} "
                f"(labelled {label.get('label', '-')}, reported "
                f"{'-' if kept is None else 'kept' if kept else 'lost'}): {evidence[:120]}",
                file=sys.stderr,
            )
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    labelled = tp + fp + fn + counts["tn"]
    print(
        json.dumps(
            {
                "cases": len(cases),
                "facts_labelled": labelled,
                "facts_labelled_real": real,
                "lost_labelled": tp + fn,
                "true_lost": tp,
                "false_lost": fp,
                "missed_lost": fn,
                "unlabelled": counts["unlabelled"],
                "precision_lost": round(tp / (tp + fp), 4) if tp + fp else 1.0,
                "recall_lost": round(tp / (tp + fn), 4) if tp + fn else 1.0,
                "seconds": round(seconds, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
