"""The labelled retention benchmark runs and meets its bar (precision and recall of "lost")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_retention_benchmark_reports_precision_and_recall_of_lost_at_or_above_0_9():
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "retention.py")],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["facts_labelled_real"] >= 30
    assert figures["lost_labelled"] >= 20
    assert figures["precision_lost"] >= 0.9, done.stderr
    assert figures["recall_lost"] >= 0.9, done.stderr
