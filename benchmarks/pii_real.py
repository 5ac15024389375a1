"""Benchmark: precision of the personal data scan on real developer traces, per kind.

Run: ``.venv/bin/python benchmarks/pii_real.py [--verbose]``. The last line printed is JSON:
``{"detections": ..., "findings": ..., "info": ..., "precision_pct": ..., "per_kind": {...},
"seconds": ...}``.

The traces are real sessions other people recorded and published (``benchmarks/data/
realtraces/``, sources and licences in its ``SOURCES.md``, held out from the tests) and the
corpus the tests read (``tests/fixtures/corpus/``). Every distinct value the detector found
in them was labelled once by reading its context (``benchmarks/data/pii_real_labels.jsonl``:
the file, the kind, a SHA-256 of the normalized value, ``person`` or ``not_person`` with a
category; never the value itself). Each detection is scored at the level the product gives it:

* ``finding`` (masked, listed, alerted on): a true positive when labelled ``person``, a false
  positive when ``not_person``; scored apart by confidence: ``high`` (a check digit, a pattern,
  a name a cue or a document marks) and ``review`` (a common first name followed by surnames,
  which the product lists for a reviewer to decide);
* ``info`` (looks like personal data, nobody's): counted apart; an ``info`` detection of a
  value labelled ``person`` is a miss (``person_as_info``).

Detections of values the labels do not know are counted as ``unlabelled`` and listed with
``--verbose``, to be labelled by reading them.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from privacy.detect import pii  # noqa: E402 - after the path insert above

SETS = {
    "realtraces": ROOT / "benchmarks" / "data" / "realtraces",
    "corpus": ROOT / "tests" / "fixtures" / "corpus",
}
LABELS = ROOT / "benchmarks" / "data" / "pii_real_labels.jsonl"
NOT_TRACES = re.compile(
    r"(^|/)(LICEN[CS]E[^/]*|SOURCES\.md|MANIFEST\.json|manifest\.json|README\.md)$"
)
# Keys whose values are record ids, never text a person wrote.
ID_KEY = re.compile(r"^(id|uuid|signature)$|(_id|Id|ID|_uuid|Uuid|UUID)$")


def _text(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8")


def _records(text: str) -> list[Any]:
    """A whole JSON document, else every JSON value of every line (some lines hold two)."""
    try:
        return [json.loads(text)]
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    out = []
    for line in text.splitlines():
        line, at = line.strip(), 0
        while at < len(line):
            try:
                value, at = decoder.raw_decode(line, at)
            except json.JSONDecodeError:
                break
            out.append(value)
            while at < len(line) and line[at].isspace():
                at += 1
    return out


def _parsed(path: Path, text: str) -> list[Any]:
    if path.suffix == ".md":
        return [text]
    if path.suffix == ".txt":  # a recorded SSE stream: data lines are JSON, the rest text
        out: list[Any] = []
        for line in text.splitlines():
            if line.startswith("data:"):
                try:
                    out.append(json.loads(line[5:].strip()))
                    continue
                except json.JSONDecodeError:
                    pass
            if line.strip() and not line.startswith("event:"):
                out.append(line)
        return out
    if path.suffix in (".yaml", ".yml"):
        return []  # the corpus's YAML files are schema definitions, not traces
    return _records(text)


def _strings(value: Any, key: str = "") -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item, key)
    elif isinstance(value, dict):
        for k, v in value.items():
            if not (isinstance(k, str) and ID_KEY.search(k)):
                yield from _strings(v, str(k))


def traces() -> Iterator[tuple[str, str, Path]]:
    for name, root in SETS.items():
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root).as_posix()
            if path.is_file() and not NOT_TRACES.search(relative):
                yield name, relative, path


def detections() -> Iterator[tuple[str, str, pii.Detection]]:
    """Every detection in every distinct string of every trace file."""
    for name, relative, path in traces():
        seen: set[str] = set()
        for record in _parsed(path, _text(path)):
            for text in _strings(record):
                if text in seen:
                    continue
                seen.add(text)
                for found in pii.scan(text):
                    yield name, relative, found


def _pct(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 2) if whole else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--verbose", action="store_true", help="list every error")
    args = parser.parse_args(argv)
    labels = {
        (row["set"], row["file"], row["kind"], row["value_sha256"]): row
        for row in map(json.loads, LABELS.read_text().splitlines())
    }
    counts: dict[str, Counter[str]] = {}
    started = time.perf_counter()
    for name, relative, found in detections():
        digest = hashlib.sha256(found.normalized.encode()).hexdigest()
        label = labels.get((name, relative, found.kind, digest))
        truth = "person" if label is not None and label["label"] == "person" else "not_person"
        if label is None:
            outcome = "unlabelled"
        elif found.level == "info":
            outcome = f"info_{truth}"
        else:
            outcome = f"{'sure' if found.confidence == 'high' else 'review'}_{truth}"
        counts.setdefault(found.kind, Counter())[outcome] += 1
        if args.verbose and outcome in (
            "sure_not_person",
            "review_not_person",
            "info_person",
            "unlabelled",
        ):
            print(
                f"{outcome:20} {name}/{relative}: {found.kind} {pii.masked_preview(found)}"
                f" ({label['category'] if label else 'no label'})",
                file=sys.stderr,
            )
    seconds = time.perf_counter() - started
    per_kind = {}
    for kind, c in sorted(counts.items()):
        tp, fp = c["sure_person"], c["sure_not_person"]
        per_kind[kind] = {
            "findings": tp + fp,
            "true": tp,
            "false": fp,
            "precision_pct": _pct(tp, tp + fp),
            "review": c["review_person"] + c["review_not_person"],
            "review_true": c["review_person"],
            "info": c["info_person"] + c["info_not_person"],
            "person_as_info": c["info_person"],
            "unlabelled": c["unlabelled"],
        }
    tp = sum(k["true"] for k in per_kind.values())
    fp = sum(k["false"] for k in per_kind.values())
    review = sum(k["review"] for k in per_kind.values())
    review_true = sum(k["review_true"] for k in per_kind.values())
    print(
        json.dumps(
            {
                "files": sum(1 for _ in traces()),
                "detections": sum(sum(c.values()) for c in counts.values()),
                "findings": tp + fp,
                "true_findings": tp,
                "false_findings": fp,
                "precision_pct": _pct(tp, tp + fp),
                "review": review,
                "review_true": review_true,
                "precision_with_review_pct": _pct(tp + review_true, tp + fp + review),
                "info": sum(k["info"] for k in per_kind.values()),
                "person_as_info": sum(k["person_as_info"] for k in per_kind.values()),
                "unlabelled": sum(k["unlabelled"] for k in per_kind.values()),
                "per_kind": per_kind,
                "seconds": round(seconds, 2),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
