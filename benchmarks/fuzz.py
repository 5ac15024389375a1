"""Benchmark: the whole hostile-value fuzz of every page and GET endpoint, on PostgreSQL.

CI sends a sample of the hostile query values to each parameter of each page
(tests/hostile/test_fuzz.py, 4 per parameter); this sends all of them. Prints how many requests
were sent, how many answered a 5xx (which fails the run) and how long it took.

    .venv/bin/python benchmarks/fuzz.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _scratch import drop_database, fresh_database

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_fuzz"
TEST = (
    "tests/hostile/test_fuzz.py::test_no_page_or_get_endpoint_answers_a_5xx_to_hostile_query_values"
)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        env = {
            **os.environ,
            "DATABASE_URL": fresh_database(DB_NAME),
            "SAWTOOTH_FUZZ_PAGE_VALUES": "all",
            "SAWTOOTH_FUZZ_REPORT": str(report),
        }
        started = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TEST],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
            )
        finally:
            drop_database(DB_NAME)
            drop_database("test_" + DB_NAME)
        seconds = time.perf_counter() - started
        figures = json.loads(report.read_text()) if report.exists() else {}
    if done.returncode != 0:
        print(done.stdout[-4000:], file=sys.stderr)
    print(
        json.dumps(
            {
                "values_per_parameter": "all",
                "requests": figures.get("requests"),
                "server_errors": figures.get("server_errors"),
                "passed": done.returncode == 0,
                "seconds": round(seconds, 1),
            }
        )
    )
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
