"""The benchmark guard: fails a figure only when it is over 3x slower than its baseline."""

from __future__ import annotations

import doctest
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

GUARD_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "guard.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_guard", GUARD_PATH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


guard = _load()


@pytest.mark.parametrize(
    ("figure", "baseline", "now", "verdict"),
    [
        ("seconds", 2.0, 5.9, "ok"),  # 2.95x: inside the margin
        ("seconds", 2.0, 6.1, "FAIL"),  # 3.05x
        ("seconds", 0.02, 0.2, "ok"),  # 10x, but 0.18 s is scheduler noise
        ("session_page_ms_median", 40.0, 130.0, "FAIL"),
        ("session_page_ms_median", 10.0, 40.0, "ok"),  # 4x, 30 ms: noise
        ("messages_per_s", 1200, 450, "ok"),  # a rate: lower is slower
        ("messages_per_s", 1200, 350, "FAIL"),
        ("peak_rss_mb", 40, 400, "info"),  # not a speed: shown, not judged
    ],
)
def test_a_figure_fails_only_when_over_three_times_slower(
    figure: str, baseline: float, now: float, verdict: str
) -> None:
    assert guard.judge("b", figure, baseline, now).verdict == verdict


def test_the_committed_baselines_cover_the_suite_at_its_sizes() -> None:
    stored = json.loads(guard.BASELINES.read_text())["benchmarks"]
    assert set(stored) == set(guard.SUITE)
    for name, argv in guard.SUITE.items():
        assert stored[name]["args"] == argv[1:], name
        timed = [f for f in stored[name]["figures"] if guard.kind_of(f) != "info"]
        assert timed, f"{name} has no timed figure to guard"


def test_baselines_at_other_sizes_fail_the_check_before_running_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    baselines = tmp_path / "baselines.json"
    old = {"replay": {"args": ["--calls", "99"], "runs": 1, "figures": {"seconds": 1.0}}}
    baselines.write_text(json.dumps({"benchmarks": old}))
    monkeypatch.setattr(guard, "BASELINES", baselines)
    monkeypatch.setattr(guard, "run", lambda name: pytest.fail("ran a benchmark"))

    assert guard.check(["replay"]) == 1
    assert "no baseline at the current sizes for replay" in capsys.readouterr().out


def test_a_slow_figure_fails_the_check_and_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    baselines = tmp_path / "baselines.json"
    args = guard.SUITE["replay"][1:]
    stored = {"replay": {"args": args, "runs": 1, "figures": {"seconds": 1.0, "calls": 2000}}}
    baselines.write_text(json.dumps({"benchmarks": stored}))
    monkeypatch.setattr(guard, "BASELINES", baselines)
    monkeypatch.setattr(guard, "calibrate", lambda: 0.1)  # no calibration stored: counts as 1x
    monkeypatch.setattr(guard, "run", lambda name: {"seconds": 25.0, "calls": 2000})

    assert guard.check(["replay"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("guard: calibration 0.1000 s here")
    assert out.splitlines()[1].split() == [
        "benchmark",
        "figure",
        "baseline",
        "now",
        "slower",
        "verdict",
    ]
    assert out.splitlines()[3].split() == ["replay", "seconds", "1", "25", "25.00x", "FAIL"]
    assert "guard: 1 of 1 figures over 3x slower: replay.seconds (25.0x)" in out

    monkeypatch.setattr(guard, "run", lambda name: {"seconds": 1.4, "calls": 2000})
    assert guard.check(["replay"]) == 0
    assert "guard: all 1 timed figures within 3x of their baselines" in capsys.readouterr().out


def test_a_slow_run_is_measured_again_and_only_a_lasting_slowdown_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    baselines = tmp_path / "baselines.json"
    args = guard.SUITE["replay"][1:]
    stored = {"replay": {"args": args, "runs": 1, "figures": {"seconds": 1.0}}}
    baselines.write_text(json.dumps({"benchmarks": stored}))
    monkeypatch.setattr(guard, "BASELINES", baselines)
    monkeypatch.setattr(guard, "calibrate", lambda: 0.1)

    busy_then_quiet = iter([9.0, 1.1])
    monkeypatch.setattr(guard, "run", lambda name: {"seconds": next(busy_then_quiet)})
    assert guard.check(["replay"]) == 0

    runs: list[str] = []
    monkeypatch.setattr(guard, "run", lambda name: runs.append(name) or {"seconds": 9.0})
    assert guard.check(["replay"]) == 1
    assert runs == ["replay"] * (1 + guard.RETRIES)


@pytest.mark.parametrize(
    ("calibration_now", "seconds_now", "passes"),
    [
        (0.25, 5.0, True),  # 5x slower on a machine 2.5x slower: 2x, inside the margin
        (0.25, 9.0, False),  # 9x on a machine 2.5x slower: 3.6x, a slowdown of ours
        (0.05, 4.0, False),  # a faster machine never widens the margin: 4x fails
        (0.10, 2.9, True),
    ],
)
def test_a_slower_machine_widens_the_margin_by_how_much_slower_it_is(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    calibration_now: float,
    seconds_now: float,
    passes: bool,
) -> None:
    baselines = tmp_path / "baselines.json"
    args = guard.SUITE["replay"][1:]
    document = {
        "measured_on": {"calibration_seconds": 0.1},
        "benchmarks": {"replay": {"args": args, "runs": 1, "figures": {"seconds": 1.0}}},
    }
    baselines.write_text(json.dumps(document))
    monkeypatch.setattr(guard, "BASELINES", baselines)
    monkeypatch.setattr(guard, "calibrate", lambda: calibration_now)
    monkeypatch.setattr(guard, "run", lambda name: {"seconds": seconds_now})
    assert (guard.check(["replay"]) == 0) is passes


def test_a_partial_update_keeps_the_calibration_the_other_baselines_were_taken_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    baselines = tmp_path / "baselines.json"
    stored = {
        name: {"args": argv[1:], "runs": 1, "figures": {"seconds": 1.0}}
        for name, argv in guard.SUITE.items()
    }
    document = {"measured_on": {"calibration_seconds": 0.1}, "benchmarks": stored}
    baselines.write_text(json.dumps(document))
    monkeypatch.setattr(guard, "BASELINES", baselines)
    monkeypatch.setattr(guard, "calibrate", lambda: 0.3)
    monkeypatch.setattr(guard, "run", lambda name: {"seconds": 2.0})

    guard.update(["replay"], runs=1)
    written = json.loads(baselines.read_text())
    assert written["measured_on"]["calibration_seconds"] == 0.1
    assert written["benchmarks"]["replay"]["figures"]["seconds"] == 2.0

    guard.update(list(guard.SUITE), runs=1)
    assert json.loads(baselines.read_text())["measured_on"]["calibration_seconds"] == 0.3


def test_the_guards_own_examples_hold() -> None:
    assert doctest.testmod(guard).failed == 0
