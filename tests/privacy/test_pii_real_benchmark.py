"""The personal data scan on real developer sessions (benchmarks/pii_real.py) does not fall
below what the tuning half reached; the held-out half is reported and never tuned on, so it has
no floor here. The targets (0.9 per kind, recall 0.9) are in issue #39's note."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_tuning_half_holds_its_measured_floor() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "pii_real.py"), "--sessions", "tuning"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["sessions"] >= 70
    kinds, recall = figures["per_kind"], figures["recall"]
    # measured at stop 49: e-mail 71 of 77, names 49 of 54, secrets 3 of 5; recall e-mail
    # 71 of 71, names 49 of 67
    assert kinds["email"]["true"] >= 71
    assert kinds["email"]["reported"] - kinds["email"]["true"] <= 6
    assert kinds["name"]["true"] >= 49
    assert kinds["name"]["reported"] - kinds["name"]["true"] <= 5
    assert kinds["secret"]["reported"] - kinds["secret"]["true"] <= 2
    assert recall["email"]["found"] >= 71
    assert recall["name"]["found"] >= 49
