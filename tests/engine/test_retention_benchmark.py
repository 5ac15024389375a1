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
    # 42 since the held-out half of stop 47 was read and joined it (READ_AFTER_MEASURING)
    assert figures["tuning_cases"] >= 42
    assert figures["heldout_cases"] >= 15  # labelled after the rules above, blind to them
    # measured at 0.786 / 0.609 / 0.989 / 0.812 on 42 tuning compactions (eleven repositories)
    assert figures["tuning_precision_lost"] >= 0.78
    assert figures["tuning_recall_lost"] >= 0.60
    assert figures["tuning_precision_kept"] >= 0.985
    assert figures["tuning_precision_lost_needed_again"] >= 0.8
