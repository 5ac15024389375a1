"""Benchmark guard: run the fast benchmarks at small sizes and compare with committed baselines.

Each benchmark prints a final JSON line of figures. A time (``seconds``, ``*_seconds``,
``*_ms``, ``*_ms_median``) or a rate (``*_per_s``) fails the guard only when it is more than
MARGIN (3x) slower than its baseline, and a time also only when it grew by more than a small
absolute amount (scheduler noise on a few shared cores). Other figures (counts, sizes, memory)
are shown, not judged. Baselines are the best of a few runs (the least disturbed); a figure
that fails is measured again, up to twice, and judged on its best run, so only a slowdown
that persists fails. The baselines live in benchmarks/baselines.json, with the sizes they
were measured at; a size changed here without new baselines is an error, not a silent pass.

Machines differ: CI may run on one twice as slow as the one the baselines were taken on. So the
baselines carry a calibration (seconds for a fixed piece of pure-Python work, best of several)
and the guard measures it again before judging: when this machine is slower, the margin grows by
that ratio (never shrinks when it is faster), so a slower machine is not a regression while a
slowdown of our code still is.

    .venv/bin/python benchmarks/guard.py              # run and compare (make bench, CI)
    .venv/bin/python benchmarks/guard.py --update     # measure anew and rewrite baselines
    .venv/bin/python benchmarks/guard.py --update --runs 3 --only replay
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BASELINES = Path(__file__).resolve().parent / "baselines.json"
MARGIN = 3.0
# A time must also grow by more than this before it can fail: below it, noise decides.
NOISE = {"s": 0.25, "ms": 50.0}
# A failing benchmark is run up to this many more times before the failure counts.
RETRIES = 2

# name -> arguments: sizes chosen so the whole guard runs in well under two minutes.
SUITE: dict[str, list[str]] = {
    "replay": ["benchmarks/replay.py", "--calls", "6000"],  # two compactions: 2,000 had none
    "import": ["benchmarks/import.py", "--mb", "5"],
    "ingest": ["benchmarks/ingest.py", "--messages", "4000", "--clients", "2"],
    "pages": ["benchmarks/pages.py", "--calls", "500", "--sessions", "1000", "--repeat", "5"],
    "pii": ["benchmarks/pii.py", "--per-kind", "50", "--prose-mb", "1"],
}


def kind_of(figure: str) -> str:
    """'time' (lower is better), 'rate' (higher is better) or 'info' (not judged).

    >>> [kind_of(k) for k in ("seconds", "list_page_ms_median", "mb_per_s", "peak_rss_mb")]
    ['time', 'time', 'rate', 'info']
    """
    if figure == "seconds" or figure.endswith(("_seconds", "_ms", "_ms_median")):
        return "time"
    if figure.endswith("_per_s"):
        return "rate"
    return "info"


@dataclass(frozen=True)
class Row:
    benchmark: str
    figure: str
    baseline: float | None
    now: float | None
    slower: float | None  # how many times slower than the baseline (time or rate)
    verdict: str


def calibrate(rounds: int = 15) -> float:
    """Seconds this machine takes for a fixed piece of pure-Python work, the best of `rounds`.

    The work resembles ours (build rows, JSON round trip, sort, regex over text): what it
    measures is how fast this machine runs the interpreter today, load included.
    """
    text = " ".join(f"word{i} 123.456.789-{i % 100:02d}" for i in range(20_000))
    pattern = re.compile(r"\d{3}\.\d{3}\.\d{3}-\d{2}")
    fastest = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        rows = [(i * 7 % 1000, i, f"message {i}") for i in range(30_000)]
        json.loads(json.dumps([{"seq": s, "text": t, "tokens": n} for n, s, t in rows]))
        rows.sort()
        pattern.findall(text)
        fastest = min(fastest, time.perf_counter() - started)
    return fastest


def machine_factor(baseline_seconds: float | None, now_seconds: float) -> float:
    """How much slower this machine is than the baselines' one; 1 when faster or unknown.

    >>> machine_factor(0.1, 0.2), machine_factor(0.2, 0.1), machine_factor(None, 0.3)
    (2.0, 1.0, 1.0)
    """
    if not baseline_seconds:
        return 1.0
    return max(1.0, round(now_seconds / baseline_seconds, 2))


def judge(
    benchmark: str,
    figure: str,
    baseline: float | None,
    now: float | None,
    machine: float = 1.0,
) -> Row:
    """One figure against its baseline, on a machine `machine` times slower than the baseline's.

    >>> judge("replay", "seconds", 1.0, 3.5).verdict
    'FAIL'
    >>> judge("replay", "seconds", 0.01, 0.2).verdict  # 20x, but within the noise
    'ok'
    >>> judge("ingest", "messages_per_s", 900, 280).verdict
    'FAIL'
    >>> judge("replay", "seconds", 1.0, 3.5, machine=2.0).verdict  # 1.75x on this machine
    'ok'
    """
    kind = kind_of(figure)
    if kind == "info" or baseline is None or now is None:
        verdict = "new" if baseline is None else "missing" if now is None else "info"
        return Row(benchmark, figure, baseline, now, None, verdict)
    if kind == "time":
        slower = now / baseline if baseline > 0 else float("inf")
        noise = NOISE["ms"] if figure.endswith(("_ms", "_ms_median")) else NOISE["s"]
        failed = slower > MARGIN * machine and now - baseline > noise
    else:
        slower = baseline / now if now > 0 else float("inf")
        failed = slower > MARGIN * machine
    return Row(benchmark, figure, baseline, now, slower, "FAIL" if failed else "ok")


def run(name: str) -> dict[str, float]:
    """Run one benchmark and return the figures of its final JSON line."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *SUITE[name]], cwd=ROOT, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-4000:])
        raise SystemExit(f"guard: benchmark {name} failed (exit {done.returncode})")
    figures = json.loads(lines[-1])
    print(f"  {name}: {seconds:.1f}s wall", file=sys.stderr, flush=True)
    return {k: v for k, v in figures.items() if isinstance(v, int | float)}


def best(figure: str, values: list[float]) -> float:
    """The least disturbed of several runs: the fastest time, the highest rate; else the median.

    On a few CPU cores shared with other work, the slower runs measure the neighbours.
    >>> best("seconds", [3.0, 1.0, 2.0]), best("mb_per_s", [3.0, 1.0, 2.0])
    (1.0, 3.0)
    """
    kind = kind_of(figure)
    return (
        min(values)
        if kind == "time"
        else max(values)
        if kind == "rate"
        else statistics.median(values)
    )


def measure(names: list[str], runs: int) -> dict[str, dict[str, float]]:
    """The best of `runs` runs of every figure of every named benchmark."""
    samples: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    for _ in range(runs):
        for name in names:
            samples[name].append(run(name))
    return {
        name: {k: best(k, [s[k] for s in runs_]) for k in runs_[0]}
        for name, runs_ in samples.items()
    }


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:g}" if isinstance(value, int) or value >= 100 else f"{value:.3g}"


def table(rows: list[Row]) -> str:
    header = ("benchmark", "figure", "baseline", "now", "slower", "verdict")
    cells = [header] + [
        (
            r.benchmark,
            r.figure,
            _cell(r.baseline),
            _cell(r.now),
            "-" if r.slower is None else f"{r.slower:.2f}x",
            r.verdict,
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    lines = []
    for row in cells:
        padded = zip(row, widths, strict=True)
        lines.append(
            "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(padded))
        )
    return "\n".join(lines)


def load_document() -> dict[str, Any]:
    if not BASELINES.exists():
        return {"benchmarks": {}, "measured_on": {}}
    document: dict[str, Any] = json.loads(BASELINES.read_text())
    return document


def load() -> dict[str, dict[str, object]]:
    return dict(load_document()["benchmarks"])


def update(names: list[str], runs: int) -> None:
    """Measure the named benchmarks anew. The calibration is measured again only when every
    benchmark is: the others' baselines were taken against the one stored."""
    previous = load_document().get("measured_on") or {}
    assert isinstance(previous, dict)
    calibration = previous.get("calibration_seconds")
    if calibration is None or set(names) == set(SUITE):
        calibration = round(calibrate(), 4)
    stored = load()
    for name, figures in measure(names, runs).items():
        stored[name] = {"args": SUITE[name][1:], "runs": runs, "figures": figures}
    document = {
        "about": "Baselines of benchmarks/guard.py (best of runs); rewrite: guard.py --update.",
        "measured_on": {
            "when": time.strftime("%Y-%m-%d", time.gmtime()),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "calibration_seconds": calibration,
        },
        "benchmarks": {name: stored[name] for name in sorted(stored)},
    }
    BASELINES.write_text(json.dumps(document, indent=2) + "\n")
    print(f"guard: wrote {os.path.relpath(BASELINES, ROOT)} for {', '.join(names)}")


def compare(
    name: str, baseline: dict[str, float], figures: dict[str, float], machine: float
) -> list[Row]:
    keys = sorted(set(baseline) | set(figures))
    return [judge(name, k, baseline.get(k), figures.get(k), machine) for k in keys]


def confirmed(name: str, baseline: dict[str, float], machine: float) -> list[Row]:
    """Run a benchmark; a figure that fails is measured again (best of up to RETRIES more
    runs) before it counts, so a neighbour's burst of work on a shared machine is not a
    regression, while a real one fails every run."""
    figures = run(name)
    for _ in range(RETRIES):
        if not any(row.verdict == "FAIL" for row in compare(name, baseline, figures, machine)):
            break
        print(f"  {name}: over the margin; running it again to confirm", file=sys.stderr)
        again = run(name)
        figures = {k: best(k, [v, again[k]]) if k in again else v for k, v in figures.items()}
    return compare(name, baseline, figures, machine)


def check(names: list[str]) -> int:
    document = load_document()
    stored = load()
    stale = [n for n in names if n not in stored or stored[n].get("args") != SUITE[n][1:]]
    if stale:
        print(
            f"guard: no baseline at the current sizes for {', '.join(stale)}; "
            "run benchmarks/guard.py --update and commit benchmarks/baselines.json"
        )
        return 1
    measured_on = document.get("measured_on") or {}
    assert isinstance(measured_on, dict)
    base_calibration = measured_on.get("calibration_seconds")
    now_calibration = calibrate()
    machine = machine_factor(base_calibration, now_calibration)
    margin = MARGIN * machine
    print(
        f"guard: calibration {now_calibration:.4f} s here, {base_calibration or '-'} s where the "
        f"baselines were taken: this machine counts as {machine:g}x slower, margin {margin:.2g}x"
    )
    rows: list[Row] = []
    for name in names:
        baseline = stored[name]["figures"]
        assert isinstance(baseline, dict)
        rows.extend(confirmed(name, baseline, machine))
    print(table(rows))
    judged = [r for r in rows if r.slower is not None]
    failed = [r for r in rows if r.verdict == "FAIL"]
    if failed:
        names_ = ", ".join(f"{r.benchmark}.{r.figure} ({r.slower:.1f}x)" for r in failed)
        print(f"guard: {len(failed)} of {len(judged)} figures over {margin:.2g}x slower: {names_}")
        return 1
    print(f"guard: all {len(judged)} timed figures within {margin:.2g}x of their baselines")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the baselines")
    parser.add_argument("--runs", type=int, default=1, help="with --update: best of N runs")
    parser.add_argument("--only", action="append", choices=sorted(SUITE), help="repeatable")
    args = parser.parse_args(argv)
    names = args.only or list(SUITE)
    if args.update:
        update(names, args.runs)
        return 0
    return check(names)


if __name__ == "__main__":
    raise SystemExit(main())
