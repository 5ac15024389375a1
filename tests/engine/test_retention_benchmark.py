"""The labelled retention benchmark runs: the corpus and generated set meets the 0.9 bar, and
the real-trace set (sessions nobody here wrote) does not fall below the figures it reached when
it was labelled. Its goal is 0.9 too; the gap is the work left, named in benchmarks/README.md.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "benchmarks" / "data"


def run_benchmark(*data: str) -> tuple[dict[str, float], str]:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "retention.py"), "--data", *data],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_the_corpus_and_generated_set_scores_at_or_above_0_9():
    figures, report = run_benchmark(str(DATA / "retention_labels.jsonl"))
    assert figures["facts_labelled"] >= 100
    assert figures["lost_labelled"] >= 20
    assert figures["precision_lost"] >= 0.9, report
    assert figures["recall_lost"] >= 0.9, report


def test_the_real_trace_set_holds_its_measured_floor():
    figures, report = run_benchmark(str(DATA / "retention_real_labels.jsonl"))
    assert figures["cases_real"] >= 12
    assert figures["facts_labelled_real"] >= 600
    assert figures["precision_lost_real"] >= 0.74, report
    assert figures["recall_lost_real"] >= 0.89, report
