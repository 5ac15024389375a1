"""Benchmark: the five verdicts of the product on real compactions, against labels read by hand.

Run: ``.venv/bin/python benchmarks/verdicts.py [--split heldout|tuning|all] [--verbose]
[--feedback FILE ...]``.
The last line printed is JSON with the held-out figures (the split nobody tuned on):
``{"heldout_cases": ..., "heldout_precision_lost": ..., "heldout_recall_lost": ...,
"heldout_precision_lost_needed_again": ..., "heldout_precision_kept": ..., "seconds": ...}``,
each precision with its 90 % interval (Wilson) and its counts.

The labels (``benchmarks/data/verdict_labels.jsonl``, one compaction a line) name a real
Claude Code transcript or Codex rollout (``rollout-*.jsonl``, its ``compacted`` lines with the
summary Codex wrote) under ``benchmarks/data/realtraces/`` (its SOURCES.md gives each file's
origin and licence), the compaction's index in the file, and each fact a reader found in the
history since the previous compaction: its kind, its text, one of the five verdicts of
DESIGN.md (``kept``, ``paraphrased``, ``lost``, ``mentioned``, ``reloaded``) and, for a lost
fact, ``needed_again`` (how the session needed it after the boundary) or null. The earlier
set (``retention_real_labels.jsonl``, scored by ``retention.py``) is not read here: it was
labelled when everything a previous summary named was a fact, which the five verdicts undo.

The split is by repository and fixed before tuning: a session is held out when the first hex
digit of sha256("owner/name") is 0-7, except the repositories already labelled before the
split (they are tuning, whatever their hash) and those held out until the product's errors on
them were read (``READ_AFTER_MEASURING``: tuning from then on). Each case says its ``split``;
this script checks it against the rule and refuses a case that disagrees.

A compaction labelled twice (two readers, or the same file stored plain and gzipped) is scored
once, from the first case in the file; the second reading measures the readers' agreement
(``second_readings_*`` in the JSON line).

Scoring: the product's report for each compaction comes from the same analysis the product
runs (:func:`compaction.engine.analysis.analyse`, chained contexts included). A label is
matched to the reported fact of the same kind and text, else one naming the same thing (a path
ending the same way, a text holding the other). Precision of "lost": reported lost and
labelled lost / reported lost and labelled; recall: labelled lost and reported lost / labelled
lost (a fact not reported at all is missed). "Lost and needed again" is right when the label is
lost with a need. "Kept" is right when the label is not lost. Reported facts no label names are
counted (``unlabelled``) and listed with ``--verbose``.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._stats import wilson
from compaction.engine import codex, unpack
from compaction.engine.analysis import KEPT_USER_MESSAGES, analyse
from compaction.engine.claude_code import parse_transcript
from compaction.engine.evals import RetentionItem
from compaction.engine.messages import Message, ObservedCompaction

DATA = Path(__file__).resolve().parent / "data"
LABELS = DATA / "verdict_labels.jsonl"
REALTRACES = DATA / "realtraces"
# Labelled before the split was fixed: tuning, whatever their hash.
LABELLED_BEFORE = frozenset(
    {
        "entireio/cli",
        "Viniciuscarvalho/FitToday",
        "chiphuyen/sniffly",
        "dspurkayastha/Apollo",
        "kfischer-okarin/scripts-and-tools",
        "yutakobayashidev/repiq",
    }
)
# Held out until the errors the product made on them were read (stop 47): tuning since, and
# the held-out half is sessions labelled after that.
READ_AFTER_MEASURING = frozenset(
    {
        "MythologIQ/Zo-Qore",
        "PackmindHub/context-evaluator",
        "blackgirlbytes/planetfall-seed-signalkit",
        "teslamint/entirecontext",
        "tslateman/duet",
    }
)
KINDS = {"file": "path", "next_step": "task"}


def split_of(repo: str) -> str:
    """The half a repository's sessions belong to."""
    if repo in LABELLED_BEFORE or repo in READ_AFTER_MEASURING:
        return "tuning"
    return "heldout" if hashlib.sha256(repo.encode()).hexdigest()[0] in "01234567" else "tuning"


def load(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def repo_of(case: Mapping[str, Any]) -> str:
    if case.get("repo"):
        return str(case["repo"])
    return str(case["transcript"]).split("/", 1)[0].replace("__", "/", 1)


def compaction_key(case: Mapping[str, Any]) -> tuple[str, int]:
    """Which compaction a case labels: the same file stored plain and gzipped is one."""
    return str(case["transcript"]).removesuffix(".gz"), int(case["compaction"])


def all_cases() -> list[dict[str, Any]]:
    out = []
    for case in load(LABELS):
        rule = split_of(repo_of(case))
        if case.get("split") != rule:
            raise SystemExit(f"{case['case']}: split {case.get('split')!r}, the rule says {rule}")
        out.append(case)
    return out


def cases() -> list[dict[str, Any]]:
    """Each labelled compaction once: where two labellers read the same compaction, the
    first case in the file is scored and the second only measures their agreement
    (:func:`second_readings`)."""
    seen: set[tuple[str, int]] = set()
    out = []
    for case in all_cases():
        key = compaction_key(case)
        if key not in seen:
            seen.add(key)
            out.append(case)
    return out


def second_readings() -> dict[str, Any]:
    """How often two labellers who read the same compaction gave a fact the same verdict
    (facts matched by kind and text): the labels' own noise, which bounds any precision."""
    first: dict[tuple[str, int], dict[str, Any]] = {}
    shared = agreed = cases_read_twice = 0
    for case in all_cases():
        key = compaction_key(case)
        if key not in first:
            first[key] = case
            continue
        cases_read_twice += 1
        labels = {(f["kind"], _norm(f["text"])): f["label"] for f in first[key]["facts"]}
        for fact in case["facts"]:
            other = labels.get((fact["kind"], _norm(fact["text"])))
            if other is not None:
                shared += 1
                agreed += other == fact["label"]
    return {
        "compactions_read_twice": cases_read_twice,
        "facts_read_twice": shared,
        "agreement": round(agreed / shared, 3) if shared else None,
    }


@dataclass(frozen=True)
class Session:
    """What the benchmark reads of one labelled file, whichever harness wrote it."""

    session_id: str | None
    harness: str  # as the product names it: "claude-code", "codex"
    messages: tuple[Message, ...]
    compactions: tuple[ObservedCompaction, ...]


def _codex(path: Path) -> Session:
    """A Codex rollout: its messages, and each ``compacted`` line that kept a summary."""
    rollout = codex.parse_rollout_bytes(unpack.read_unpacked(path, max_bytes=1 << 30))
    compactions = tuple(
        ObservedCompaction(
            seq=c.seq,
            trigger=c.trigger,
            strategy="server_compaction" if c.remote else "summarize",
            tokens_before=c.tokens_before,
            tokens_after=c.tokens_after,
            summary=c.summary,
            kept={KEPT_USER_MESSAGES: list(c.kept_user_seqs)} if c.kept_user_seqs else None,
        )
        for c in rollout.compactions
    )
    return Session(rollout.session_id, "codex", tuple(rollout.messages), compactions)


@functools.cache
def _transcript(path: Path) -> Session:
    if "rollout-" in path.name:
        return _codex(path)
    t = parse_transcript(path)
    return Session(t.session_id, "claude-code", t.messages, t.compactions)


@functools.cache
def _reports(path: Path) -> tuple[tuple[RetentionItem, ...], ...]:
    t = _transcript(path)
    spans = analyse(t.messages, t.compactions, harness=t.harness).spans
    return tuple(s.retention.items for s in spans)


def _norm(text: str) -> str:
    return " ".join(text.casefold().replace("`", "").split())


def _same(label: Mapping[str, Any], item: RetentionItem) -> bool:
    kind = KINDS.get(label["kind"], label["kind"])
    if item.fact.kind != kind and not (
        kind in ("constraint", "decision", "task", "probe")
        and item.fact.kind in ("constraint", "decision", "task", "probe")
    ):
        return False
    a, b = _norm(label["text"]), _norm(item.fact.text)
    if a == b:
        return True
    if kind == "path":
        a, b = a.strip("./"), b.strip("./")
        return a == b or a.endswith("/" + b) or b.endswith("/" + a)
    return (len(b) >= 8 and b in a) or (len(a) >= 8 and a in b)


@dataclass
class Score:
    """Counts of one split (or one kind of it)."""

    pairs: list[tuple[str, str, bool, bool]] = field(default_factory=list)  # label, reported…
    missed_lost: int = 0
    unlabelled: int = 0

    def add(self, label: str, label_again: bool, item: RetentionItem) -> None:
        verdict = item.verdict or ("kept" if item.kept else "lost")
        self.pairs.append((label, verdict, label_again, item.needed_again is not None))

    def figures(self) -> dict[str, Any]:
        lost_reported = [(lab, again) for lab, rep, again, _ in self.pairs if rep == "lost"]
        tp = sum(lab == "lost" for lab, _ in lost_reported)
        labelled_lost = sum(lab == "lost" for lab, *_ in self.pairs) + self.missed_lost
        found = sum(lab == "lost" and rep == "lost" for lab, rep, *_ in self.pairs)
        needed = [
            (lab, again) for lab, rep, again, r_again in self.pairs if rep == "lost" and r_again
        ]
        needed_tp = sum(lab == "lost" and again for lab, again in needed)
        kept = [lab for lab, rep, *_ in self.pairs if rep == "kept"]
        kept_tp = sum(lab != "lost" for lab in kept)
        labelled_again = sum(lab == "lost" and again for lab, _, again, _ in self.pairs)
        return {
            "labelled": len(self.pairs) + self.missed_lost,
            "labels": dict(Counter(lab for lab, *_ in self.pairs)),
            "lost_labelled": labelled_lost,
            "lost_needed_again_labelled": labelled_again,
            "reported_lost": len(lost_reported),
            "precision_lost": _ratio(tp, len(lost_reported)),
            "precision_lost_ci90": wilson(tp, len(lost_reported)),
            "recall_lost": _ratio(found, labelled_lost),
            "recall_lost_ci90": wilson(found, labelled_lost),
            "reported_lost_needed_again": len(needed),
            "precision_lost_needed_again": _ratio(needed_tp, len(needed)),
            "precision_lost_needed_again_ci90": wilson(needed_tp, len(needed)),
            "reported_kept": len(kept),
            "precision_kept": _ratio(kept_tp, len(kept)),
            "precision_kept_ci90": wilson(kept_tp, len(kept)),
            "unlabelled": self.unlabelled,
        }


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 3) if b else None


def score(selected: Sequence[Mapping[str, Any]], verbose: bool = False) -> dict[str, Score]:
    """Scores of the whole selection ("all") and per label kind."""
    scores: dict[str, Score] = {"all": Score()}
    for case in selected:
        path = REALTRACES / case["transcript"]
        items = list(_reports(path)[case["compaction"]])
        used: set[int] = set()
        for label in case["facts"]:
            kind_score = scores.setdefault(label["kind"], Score())
            match = next(
                (i for i, item in enumerate(items) if i not in used and _same(label, item)), None
            )
            again = bool(label.get("needed_again"))
            if match is None:
                if label["label"] == "lost":
                    for s in (scores["all"], kind_score):
                        s.missed_lost += 1
                    if verbose:
                        print(f"  missed  {case['case']}: {label['kind']} {label['text'][:90]!r}")
                continue
            used.add(match)
            for s in (scores["all"], kind_score):
                s.add(label["label"], again, items[match])
            item = items[match]
            if verbose and (item.verdict == "lost") != (label["label"] == "lost"):
                print(
                    f"  {item.verdict:11s} labelled {label['label']:11s} {case['case']}: "
                    f"{label['kind']} {label['text'][:80]!r} | {item.evidence[:80]}"
                )
        unlabelled = [i for i in range(len(items)) if i not in used and items[i].verdict == "lost"]
        scores["all"].unlabelled += len(unlabelled)
        if verbose:
            for i in unlabelled:
                print(
                    f"  unlabelled lost {case['case']}: {items[i].fact.kind} "
                    f"{items[i].fact.text[:90]!r}"
                )
    return scores


# --- labels from the product's verdict feedback -------------------------------------------


def feedback_label(mark: Mapping[str, Any]) -> str | None:
    """What one exported mark says the fact was, in the five words: the verdict when marked
    right, what the member said it should be when marked wrong; a wrong "lost" without it
    reads as "mentioned" (not lost: all the lost figures need), anything else as unknown."""
    said = str(mark.get("kind"))
    if mark.get("mark") == "right":
        return said
    should_be = mark.get("should_be")
    if isinstance(should_be, str) and should_be:
        return should_be
    return "mentioned" if said == "lost" else None


def feedback_join(cases_: Sequence[dict[str, Any]], paths: Sequence[Path]) -> dict[str, int]:
    """Add each fact mark of the exports at ``paths`` that names one of ``cases_``'
    compactions (by the transcript's session id and the boundary's seq) to that case's
    labels, unless the case already labels that text. Counts of what became of them."""
    by_compaction = {}
    for case in cases_:
        t = _transcript(REALTRACES / case["transcript"])
        by_compaction[(t.session_id or "", t.compactions[case["compaction"]].seq)] = case
    counts = {"joined": 0, "known": 0, "unjoined": 0, "unknown": 0}
    for path in paths:
        for mark in load(path):
            if mark.get("kind") == "alert" or mark.get("mark") not in ("right", "wrong"):
                continue
            label = feedback_label(mark)
            found = by_compaction.get((str(mark.get("session")), mark.get("seq")))
            if label is None or found is None:
                counts["unknown" if label is None else "unjoined"] += 1
                continue
            case = found
            text = str(mark.get("fact", ""))
            if any(_norm(f["text"]) == _norm(text) for f in case["facts"]):
                counts["known"] += 1
                continue
            words = str(mark.get("verdict", "")).split()
            case["facts"].append(
                {
                    "kind": words[1] if len(words) > 1 else "",
                    "text": text,
                    "label": label,
                    "needed_again": None,
                    "note": str(mark.get("note", "")),
                    "source": "feedback",
                }
            )
            counts["joined"] += 1
    return counts


def _flat(prefix: str, figures: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for key, value in figures.items():
        yield f"{prefix}_{key}", value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--split", choices=("heldout", "tuning", "all"), default="all")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument(
        "--feedback",  # the product's export: its marks join the cases of their compactions
        type=Path,
        action="append",
        default=[],
        help="the product's verdict feedback export (JSON Lines) as more labels",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    every = cases()
    out: dict[str, Any] = {}
    if args.feedback:
        out.update(_flat("feedback", feedback_join(every, args.feedback)))
    for split in ("tuning", "heldout"):
        if args.split not in (split, "all"):
            continue
        selected = [c for c in every if c["split"] == split]
        if args.verbose:
            print(f"== {split}: {len(selected)} compactions")
        scores = score(selected, args.verbose)
        out[f"{split}_cases"] = len(selected)
        out[f"{split}_sessions"] = len({c["transcript"] for c in selected})
        out[f"{split}_repositories"] = len({repo_of(c) for c in selected})
        out[f"{split}_languages"] = sorted({c.get("language", "en") for c in selected})
        out.update(_flat(split, scores["all"].figures()))
        for kind, s in sorted(scores.items()):
            if kind != "all":
                f = s.figures()
                print(
                    f"{split} {kind:11s} labelled {f['labelled']:4d}  lost {f['lost_labelled']:3d}"
                    f"  precision_lost {f['precision_lost']} {f['precision_lost_ci90']}"
                    f"  recall_lost {f['recall_lost']}  precision_kept {f['precision_kept']}"
                )
    out.update(_flat("second_readings", second_readings()))
    out["seconds"] = round(time.perf_counter() - started, 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
