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
    assert figures["sessions"] >= 117
    kinds, recall = figures["per_kind"], figures["recall"]
    # measured at stop 49: e-mail 87 of 97, names 53 of 65, secrets 12 of 14; recall e-mail
    # 87 of 93, names 53 of 100, secrets 12 of 16
    assert kinds["email"]["true"] >= 87
    assert kinds["email"]["reported"] - kinds["email"]["true"] <= 10
    assert kinds["name"]["true"] >= 53
    assert kinds["name"]["reported"] - kinds["name"]["true"] <= 12
    assert kinds["secret"]["reported"] - kinds["secret"]["true"] <= 2
    assert recall["email"]["found"] >= 87
    assert recall["name"]["found"] >= 53
    assert recall["secret"]["found"] >= 12
