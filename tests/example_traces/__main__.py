"""``python -m tests.example_traces [OUTDIR]``: rewrite the example sessions' data files."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.example_traces import EXAMPLES_DIR, write_examples


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.example_traces",
        description="Write the example sessions as gzip-compressed JSON Lines, a batch a line.",
    )
    parser.add_argument(
        "outdir",
        type=Path,
        nargs="?",
        default=EXAMPLES_DIR,
        help=f"directory to write into (default: {EXAMPLES_DIR})",
    )
    args = parser.parse_args(argv)
    for path in write_examples(args.outdir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
