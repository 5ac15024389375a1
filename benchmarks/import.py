"""Claude Code import: MB/s and peak memory for a large transcript, into PostgreSQL.

Builds a transcript of --mb megabytes by repeating a real one from the corpus (each
copy gets fresh uuids and message ids, so nothing is deduplicated away), imports it with
``manage.py import_claude_code`` into a scratch database in a child process, and prints the
figures as one final JSON line, e.g. {"mb": 200, "seconds": 12.3, "mb_per_s": 16.2,
"peak_rss_mb": 180, "messages": 123456}.

    .venv/bin/python benchmarks/import.py [--mb 200] [--source PATH] [--keep]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _scratch import drop_database, fresh_database

ROOT = Path(__file__).resolve().parent.parent
DB_NAME = "sawtooth_bench_import"
DEFAULT_SOURCE = (
    ROOT / "tests/fixtures/corpus/claude_code/spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz"
)
_ID_KEYS = ("uuid", "parentUuid", "logicalParentUuid")


def build_transcript(source: Path, target: Path, megabytes: int) -> int:
    """Write copies of `source` until the file reaches the size; return the bytes written."""
    opener = gzip.open if source.name.endswith(".gz") else open
    with opener(source, "rt", encoding="utf-8") as fh:
        base = [json.loads(line) for line in fh if line.strip()]
    limit = megabytes * 1024 * 1024
    written = 0
    copy = 0
    with target.open("w", encoding="utf-8") as out:
        while written < limit:
            for record in base:
                for key in _ID_KEYS:
                    if isinstance(record.get(key), str):
                        record[key] = f"{record[key].split('~')[0]}~{copy}"
                message = record.get("message")
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    message["id"] = f"{message['id'].split('~')[0]}~{copy}"
                line = json.dumps(record, ensure_ascii=False) + "\n"
                out.write(line)
                written += len(line.encode("utf-8"))
                if written >= limit:
                    break
            copy += 1
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--source", type=Path, default=DEFAULT_SOURCE)
    parser.add_argument("--keep", action="store_true", help="keep the scratch database")
    args = parser.parse_args()

    url = fresh_database(DB_NAME)
    env = {**os.environ, "DATABASE_URL": url, "CELERY_BROKER_URL": "memory://localhost//"}
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    subprocess.run(
        [*manage, "createproject", "bench"],
        env=env,
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
    )

    with tempfile.TemporaryDirectory(prefix="sawtooth-bench-") as tmp:
        path = Path(tmp) / "big.jsonl"
        size = build_transcript(args.source, path, args.mb)
        print(f"built {path} ({size / 2**20:.1f} MB)", file=sys.stderr)
        started = time.perf_counter()
        done = subprocess.run(
            [*manage, "import_claude_code", str(path), "--project", "bench", "--json"],
            env=env,
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - started
    # ru_maxrss of waited-for children, in KiB on Linux: the import command's peak.
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    report = json.loads(done.stdout)
    if not args.keep:
        drop_database(DB_NAME)
    mb = size / 2**20
    print(
        json.dumps(
            {
                "mb": round(mb, 1),
                "seconds": round(seconds, 1),
                "mb_per_s": round(mb / seconds, 1),
                "peak_rss_mb": round(peak_kib / 1024, 1),
                "messages": report["messages"],
                "compactions": report["compactions"],
            }
        )
    )


if __name__ == "__main__":
    main()
