"""The labelled retention benchmarks run: the corpus and generated set meets the 0.9 bar, and
the five verdicts on real sessions (benchmarks/verdicts.py) do not fall below the figures the
tuning half reached. The goals are in benchmarks/README.md; the gap is the work left.
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


def run_verdicts() -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "verdicts.py")],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_five_verdicts_hold_their_measured_floor_on_the_tuning_half():
    """The tuning half (the sessions the rules were written against) does not slip below the
    figures it reached; the held-out half is reported, never tuned on, so it has no floor."""
    figures = run_verdicts()
    assert figures["tuning_cases"] >= 31
    assert figures["heldout_cases"] >= 11  # each compaction once (four were read by two labellers)
    # measured at 0.879 / 0.695 / 0.994 / 0.909 on 31 tuning compactions (six repositories)
    assert figures["tuning_precision_lost"] >= 0.87
    assert figures["tuning_recall_lost"] >= 0.69
    assert figures["tuning_precision_kept"] >= 0.99
    assert figures["tuning_precision_lost_needed_again"] >= 0.9
