"""Benchmark: precision and recall of "lost" on a labelled retention set.

Run: ``.venv/bin/python benchmarks/retention.py [--data benchmarks/data/retention_labels.jsonl]
[--feedback feedback.jsonl ...] [--verbose]``. The last line printed is JSON:
``{"facts_labelled": ..., "precision_lost": ..., "recall_lost": ..., "seconds": ...}``.

The set (``benchmarks/data/retention_labels.jsonl``, one case a line):

* ``"source": "corpus"``: a real Claude Code compaction of the corpus (``transcript``,
  relative to it); the context before the boundary is checked against the summary Claude Code
  wrote. Each fact was labelled by reading that summary: ``kept``, ``lost``, or ``not_a_fact``
  (something an extractor might take for a fact: a temp path, a directory, a harness record).
* ``"source": "realtraces"``: a real Claude Code compaction of a session held out in
  ``benchmarks/data/realtraces/`` (``benchmarks/data/retention_real_labels.jsonl``: 12
  compactions of 7 sessions, every fact the extractor reported labelled by reading the summary,
  plus the facts a reader found that it did not extract, ``"extracted": false``).
* ``"source": "generated"``: a small history (``prompts``, ``tools`` with their results,
  ``probes``) and a ``summary``; ``keep_all`` means the splice dropped nothing.

Labels from daily use (``--feedback FILE``): the product's verdict feedback export (the
feedback page's "Download JSON Lines", or ``GET /api/v1/feedback/export``), one mark a line:
``{"kind": "lost"|"kept"|"alert", "session", "seq", "fact", "verdict", "mark": "right"|"wrong",
"note"}``. A mark on a fact's verdict is a label: "lost" marked right, or "kept" marked wrong,
says the fact was lost; the other two say it was not (a fact kept, or no fact at all: both are
"not lost" to this score). Alert marks are skipped. Each mark is used twice:

* as it stands, it scores the verdict the product gave when it was marked:
  ``feedback_marks``, ``precision_lost_feedback`` (lost marked right / lost marked) and
  ``missed_lost_feedback`` (kept marked wrong);
* where its ``session`` and ``seq`` name a compaction of the set (a Claude Code transcript's
  ``sessionId`` and the seq its boundary has once imported), its fact joins that case's labels
  (``feedback_joined``) unless the set already labels that text (``feedback_known``: the
  set's own label wins), so the engine of today is scored on it. Its kind is the second word
  of ``verdict`` ("lost constraint"); a fact the product masked (it quoted personal data)
  matches the reported fact whose text masks to it. Marks naming no case of the set are
  counted in ``feedback_unjoined``.

Scoring, for the verdict "lost": a fact labelled ``lost`` and reported lost is a true positive;
reported kept, or not extracted at all, a false negative. A fact labelled ``kept`` or
``not_a_fact`` and reported lost is a false positive. A labelled fact is the reported one of the
same kind and text; one the extractor did not find when it was labelled matches a reported fact
that names the same thing (a path ending the same way, a text holding the other). Facts the
eval reports that the set does not label are counted (``unlabelled``) and printed with
``--verbose``. Figures are given for the whole set and for the real compactions alone.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compaction.engine.claude_code import Transcript, parse_transcript
from compaction.engine.evals import Probe, RetentionReport, retention
from compaction.engine.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from privacy.detect import pii

DATA = Path(__file__).resolve().parent / "data" / "retention_labels.jsonl"
REAL_DATA = Path(__file__).resolve().parent / "data" / "retention_real_labels.jsonl"
REALTRACES = Path(__file__).resolve().parent / "data" / "realtraces"
# The copy of the real-trace corpus the tests read (its SOURCES.md names each file's origin).
CORPUS = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "corpus"


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@functools.cache
def _transcript(path: Path) -> Transcript:
    return parse_transcript(path)


def corpus_transcript(case: Mapping[str, Any]) -> Transcript:
    root = REALTRACES if case["source"] == "realtraces" else CORPUS
    return _transcript(root / case["transcript"])


def corpus_contexts(case: Mapping[str, Any]) -> tuple[list[Message], list[Message]]:
    """The history before a real compaction, and the summary Claude Code wrote for it."""
    transcript = corpus_transcript(case)
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
    if case["source"] in ("corpus", "realtraces"):
        return corpus_contexts(case)
    return generated_contexts(case)


# A label's kind, as the reader named it, and the extractor's kinds it may be reported as.
KINDS = {"file": ("path",), "decision": ("decision", "constraint", "task"), "next_step": ("task",)}


def _norm(text: str) -> str:
    return " ".join(text.casefold().replace("`", "").split())


def _names_same(label: Mapping[str, Any], reported_kind: str, reported_text: str) -> bool:
    """Whether a reported fact names what a reader labelled without the extractor's words."""
    if reported_kind not in KINDS.get(label["kind"], (label["kind"],)):
        return False
    a, b = _norm(label["text"]), _norm(reported_text)
    if reported_kind == "path":
        a, b = a.strip("./"), b.strip("./")
        return a == b or a.endswith("/" + b) or b.endswith("/" + a)
    return a == b or (len(b) >= 8 and b in a) or (len(a) >= 8 and a in b)


# --- labels from the product's verdict feedback -------------------------------------------


def load_feedback(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The fact marks of feedback exports (alert marks and unknown marks left out)."""
    marks = []
    for path in paths:
        for record in load(path):
            if record.get("kind") in ("lost", "kept") and record.get("mark") in ("right", "wrong"):
                marks.append(record)
    return marks


def feedback_label(mark: Mapping[str, Any]) -> str:
    """What a mark says the fact was: "lost", or "kept" (not lost)."""
    said_lost = mark["kind"] == "lost"
    return "lost" if said_lost == (mark["mark"] == "right") else "kept"


def masked(text: str) -> str:
    """``text`` as the product shows and exports it: personal data masked."""
    found = [d for d in pii.scan(text) if d.level == "finding"]
    return pii.mask(text, found) if found else text


def case_compaction(case: Mapping[str, Any]) -> tuple[str, int] | None:
    """The (session id, seq) of a real case's compaction, as the product names it."""
    if case["source"] not in ("corpus", "realtraces"):
        return None
    transcript = corpus_transcript(case)
    boundary = transcript.compactions[case.get("compaction", 0)]
    return (transcript.session_id or "", boundary.seq)


def feedback_join(
    cases: Sequence[dict[str, Any]], marks: Sequence[Mapping[str, Any]]
) -> dict[str, int]:
    """Add each mark naming a case's compaction to that case's labels; counts of what
    became of them (joined, known, unjoined)."""
    by_compaction = {key: case for case in cases if (key := case_compaction(case)) is not None}
    counts = {"joined": 0, "known": 0, "unjoined": 0}
    for mark in marks:
        case = by_compaction.get((str(mark.get("session")), mark.get("seq")))
        if case is None:
            counts["unjoined"] += 1
            continue
        text = str(mark["fact"])
        if any(f["text"] == text or masked(f["text"]) == text for f in case["facts"]):
            counts["known"] += 1
            continue
        words = str(mark.get("verdict", "")).split()
        case["facts"].append(
            {
                "kind": words[1] if len(words) > 1 else "",
                "text": text,
                "label": feedback_label(mark),
                "note": str(mark.get("note", "")),
                "source": "feedback",
            }
        )
        counts["joined"] += 1
    return counts


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
        claimed: set[tuple[str, str]] = set(labels)
        for key, label in labels.items():
            item = reported.get(key)
            if item is None and label.get("source") == "feedback":
                # the product's text, masked where it quoted personal data; kind as it said
                item = next(
                    (
                        i
                        for k, i in reported.items()
                        if k not in claimed
                        and label["kind"] in ("", k[0])
                        and label["text"] in (k[1], masked(k[1]))
                    ),
                    None,
                )
                if item is not None:
                    claimed.add((item.fact.kind, item.fact.text))
            if item is None and label.get("extracted") is False:
                item = next(
                    (
                        i
                        for k, i in reported.items()
                        if k not in claimed and _names_same(label, k[0], k[1])
                    ),
                    None,
                )
                if item is not None:
                    claimed.add((item.fact.kind, item.fact.text))
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
            if key not in claimed:
                yield (
                    case["case"],
                    "unlabelled",
                    {"kind": key[0], "text": key[1]},
                    item.kept,
                    (item.evidence),
                )


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 1.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, nargs="+", default=[DATA, REAL_DATA])
    parser.add_argument(
        "--feedback",
        type=Path,
        nargs="*",
        default=[],
        help="verdict feedback exported by the product (JSON Lines) as extra labels",
    )
    parser.add_argument("--verbose", action="store_true", help="print every error")
    args = parser.parse_args(argv)
    cases = [case for path in args.data for case in load(path)]
    marks = load_feedback(args.feedback)
    joined = feedback_join(cases, marks)
    started = time.perf_counter()
    reports = [evaluate(c) for c in cases]
    seconds = time.perf_counter() - started
    counts = {"tp": 0, "fp": 0, "fn": 0, "tn": 0, "unlabelled": 0}
    real_counts = dict(counts)
    real_cases = {c["case"] for c in cases if c["source"] != "generated"}
    for name, outcome, label, kept, evidence in score(cases, reports):
        counts[outcome] += 1
        if name in real_cases:
            real_counts[outcome] += 1
        if outcome in ("fp", "fn", "unlabelled") and (args.verbose or outcome != "unlabelled"):
            assert label is not None
            print(
                f"{outcome:10} {name}: {label['kind']} {label['text'][:90]!r} "
                f"(labelled {label.get('label', '-')}, reported "
                f"{'-' if kept is None else 'kept' if kept else 'lost'}): {evidence[:120]}",
                file=sys.stderr,
            )
    lost_marked = sum(1 for m in marks if m["kind"] == "lost")
    lost_right = sum(1 for m in marks if m["kind"] == "lost" and m["mark"] == "right")
    tp, fp, fn = counts["tp"], counts["fp"], counts["fn"]
    rtp, rfp, rfn = real_counts["tp"], real_counts["fp"], real_counts["fn"]
    print(
        json.dumps(
            {
                "cases": len(cases),
                "cases_real": len(real_cases),
                "facts_labelled": tp + fp + fn + counts["tn"],
                "facts_labelled_real": rtp + rfp + rfn + real_counts["tn"],
                "lost_labelled": tp + fn,
                "true_lost": tp,
                "false_lost": fp,
                "missed_lost": fn,
                "unlabelled": counts["unlabelled"],
                "precision_lost": _ratio(tp, tp + fp),
                "recall_lost": _ratio(tp, tp + fn),
                "precision_lost_real": _ratio(rtp, rtp + rfp),
                "recall_lost_real": _ratio(rtp, rtp + rfn),
                "unlabelled_real": real_counts["unlabelled"],
                "feedback_marks": len(marks),
                "feedback_joined": joined["joined"],
                "feedback_known": joined["known"],
                "feedback_unjoined": joined["unjoined"],
                "precision_lost_feedback": (
                    round(lost_right / lost_marked, 4) if lost_marked else None
                ),
                "missed_lost_feedback": sum(
                    1 for m in marks if m["kind"] == "kept" and m["mark"] == "wrong"
                ),
                "seconds": round(seconds, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
