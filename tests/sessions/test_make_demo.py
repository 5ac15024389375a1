"""`make demo` as a newcomer sees it: one line per step, the build's output in a log file (its
end shown when a step fails), and, once serving, the address, the colleague hint and the login
last, every link on the PORT asked for. Run for real (make, migrate, the examples, the web
server and both workers) in a folder of its own, on SQLite as the demo is."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
STEPS = [
    "[1/4] Python packages in .venv",
    "[2/4] Database tables (migrate)",
    "[3/4] Demo login and example traces",
    "[4/4] Web server and two workers",
]

DEMO_UNSET = {
    "DATABASE_URL",
    "SITE_URL",
    "SECRET_KEY",
    "DJANGO_SECRET_KEY",
    "SAWTOOTH_PRODUCTION",
    "CELERY_BROKER_URL",
    "CACHE_URL",
}

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _demo_env(var_dir: Path) -> dict[str, str]:
    # the demo's own configuration, whatever the suite runs on (CI sets some of these)
    env = {k: v for k, v in os.environ.items() if k not in DEMO_UNSET}
    env |= {"SAWTOOTH_VAR_DIR": str(var_dir), "PYTHONUNBUFFERED": "1"}
    return env


# `-o .venv/.installed`: the suite runs in the installed .venv; the install step still runs
# (make's "nothing to be done"), it just never reinstalls in the middle of a test.
def _make(*args: str) -> list[str]:
    return ["make", "--no-print-directory", "-o", ".venv/.installed", *args]


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = _free_port()
    process = subprocess.Popen(
        _make("demo", f"PORT={port}"),
        cwd=ROOT,
        env=_demo_env(tmp_path / "var"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    yield process, port
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C sends the terminal's group
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.stdout is not None
    process.stdout.close()


def test_make_demo_prints_a_line_per_step_and_the_login_last_on_its_port(
    demo: tuple[subprocess.Popen[str], int], tmp_path: Path
) -> None:
    process, port = demo
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:  # ends when make exits; the login line ends the wait
        lines.append(line.rstrip("\n"))
        if line.startswith("Log in at "):
            break
    url = f"http://127.0.0.1:{port}/"
    assert [line[: len(step)] for line, step in zip(lines, STEPS, strict=False)] == STEPS
    assert lines[4:] == [
        f"Sawtooth on {url} with two workers (their log: {tmp_path}/var/demo-workers.log); "
        "Ctrl-C stops all three.",
        f"A login for a colleague: .venv/bin/python manage.py adduser NAME --url {url}",
        f"Log in at {url} as demo / demo-sawtooth",
    ]
    log = (tmp_path / "var" / "demo.log").read_text()
    assert "Applying sessions.0001_initial... OK" in log  # the build's output went there
    assert "Example traces:" in log
    assert httpx.get(f"{url}login/", timeout=30).status_code == 200


def test_a_failing_step_shows_the_end_of_its_log_and_stops(tmp_path: Path) -> None:
    result = subprocess.run(
        _make("demo", f"PORT={_free_port()}", "PY=false"),  # the migrate step fails
        cwd=ROOT,
        env=_demo_env(tmp_path / "var"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith(STEPS[0])
    assert lines[1] == STEPS[1]
    assert lines[2] == f"      failed. The end of {tmp_path}/var/demo.log:"
    assert "Log in at" not in result.stdout
