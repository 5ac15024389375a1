"""Sessions 3 to 5: a short question, a failed compaction near the window, hostile content."""

from __future__ import annotations

import random
from collections.abc import Callable

from sessions.example_data import ExampleSession
from tests.example_traces.billing_repo import billing_repo
from tests.example_traces.repo import Failure
from tests.example_traces.trace import SEED, Call, Trace

# -- Session 3: a short question, no compaction


def short_question(tool_ids: set[str]) -> ExampleSession:
    external_id = "example-short-question"
    t = Trace(
        external_id=external_id,
        rng=random.Random(f"{SEED}:{external_id}"),
        tool_ids=tool_ids,
        session={
            "agent": "docs-helper",
            "model": "claude-haiku-4-5",
            "context_window": 200_000,
            "started_at": "2026-11-04T09:30:00Z",
            "metadata": {"repository": "acme/sawtooth"},
        },
        system_tokens=2_600,
    )
    t.prompt("Where do we configure the Celery broker URL?", wait=0)
    t.step(
        Call(
            "grep",
            {"pattern": "CELERY_BROKER_URL", "path": "."},
            'config/settings.py:121:CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", '
            '"sqla+sqlite:///var/celery-broker.sqlite3")\n'
            "docker-compose.yml:31:      CELERY_BROKER_URL: redis://redis:6379/0\n"
            "README.md:58:Set `CELERY_BROKER_URL` to use Redis or RabbitMQ instead of the "
            "embedded broker.",
            seconds=0.5,
        ),
        text="Let me search for it.",
    )
    t.reply(
        "In `config/settings.py` (line 121), read from the `CELERY_BROKER_URL` environment "
        "variable. `docker-compose.yml` sets it to `redis://redis:6379/0` for the full stack."
    )
    t.prompt("And the default when the variable is missing?")
    t.reply(
        "`sqla+sqlite:///var/celery-broker.sqlite3`: an embedded SQLite broker, so the default "
        "setup needs no Redis or RabbitMQ server. The README (line 58) explains how to switch."
    )
    return t.example()


# -- Session 4: a compaction that fails, then a splice that saves nothing, near the window

_UPGRADES = (
    ("anyio", "3.7.1", "4.6.2", 89.4),
    ("coverage", "7.3.2", "7.6.4", 231.0),
    ("h11", "0.14.0", "0.14.0", 58.3),
    ("httpcore", "0.17.3", "1.0.6", 78.0),
    ("httpx", "0.24.1", "0.27.2", 76.4),
    ("iniconfig", "2.0.0", "2.0.0", 5.9),
    ("mypy", "1.6.1", "1.13.0", 12600.0),
    ("mypy-extensions", "1.0.0", "1.0.0", 4.7),
    ("packaging", "23.2", "24.1", 53.0),
    ("pluggy", "1.3.0", "1.5.0", 20.0),
    ("pytest", "7.4.3", "8.3.3", 342.0),
    ("pytest-cov", "4.1.0", "5.0.0", 21.0),
    ("ruff", "0.1.5", "0.7.2", 10600.0),
    ("sniffio", "1.3.0", "1.3.1", 10.2),
    ("typing-extensions", "4.8.0", "4.12.2", 37.6),
)


def _pip_outdated() -> str:
    rows = [(name, old, new) for name, old, new, _ in _UPGRADES if old != new]
    lines = [
        "Package           Version Latest Type",
        "----------------- ------- ------ -----",
    ]
    lines += [f"{name:<17} {old:<7} {new:<6} wheel" for name, old, new in rows]
    return "\n".join(lines)


def _pip_install() -> str:
    lines = ["Obtaining file:///home/dev/billing", "  Installing build dependencies ... done",
             "  Checking if build backend supports build_editable ... done",
             "  Getting requirements to build editable ... done",
             "  Preparing editable metadata (pyproject.toml) ... done"]  # fmt: skip
    for name, old, new, size in _UPGRADES:
        if old == new:
            lines.append(
                f"Requirement already satisfied: {name}=={old} in "
                "./.venv/lib/python3.12/site-packages"
            )
            continue
        wheel = f"{name.replace('-', '_')}-{new}-py3-none-any.whl"
        lines += [
            f"Collecting {name}=={new}",
            f"  Downloading {wheel}.metadata ({max(2.1, size / 40):.1f} kB)",
            f"Downloading {wheel} ({size:.1f} kB)",
            f"   {'-' * 40} {size:.1f}/{size:.1f} kB {1.2 + size / 900:.1f} MB/s eta 0:00:00",
        ]
    lines.append("Building wheels for collected packages: billing")
    lines.append("  Building editable for billing (pyproject.toml) ... done")
    lines.append(
        "  Created wheel for billing: filename=billing-3.8.2-0.editable-py3-none-any.whl "
        "size=4312 sha256=9c1f0e5d4b7a2e6f83c1d0a9b8e7f6d5c4b3a29180f7e6d5c4b3a2918f7e6d5c"
    )
    changed = [(n, o, v) for n, o, v, _ in _UPGRADES if o != v]
    lines.append("Installing collected packages: " + ", ".join(n for n, _, _ in changed))
    for name, old, _ in changed:
        lines += [
            f"  Attempting uninstall: {name}",
            f"    Found existing installation: {name} {old}",
            f"    Uninstalling {name}-{old}:",
            f"      Successfully uninstalled {name}-{old}",
        ]
    lines.append(
        "Successfully installed billing-3.8.2 " + " ".join(f"{n}-{v}" for n, _, v in changed)
    )
    return "\n".join(lines)


def failed_compaction(tool_ids: set[str]) -> ExampleSession:
    external_id = "example-failed-compaction"
    rng = random.Random(f"{SEED}:{external_id}")
    repo = billing_repo()
    t = Trace(
        external_id=external_id,
        rng=rng,
        tool_ids=tool_ids,
        session={
            "agent": "dependency-upgrader",
            "model": "claude-sonnet-4-5",
            "context_window": 100_000,
            "started_at": "2026-11-05T16:00:00Z",
            "metadata": {"repository": "acme/billing", "git_branch": "deps-2026-11"},
        },
        system_tokens=4_000,
    )

    def compact_when_full(trace: Trace) -> None:
        if not trace.compactions and trace.context > 80_000:
            trace.fail_compaction(error="summarizer timed out after 30s", duration_ms=30_000)
        elif len(trace.compactions) == 1 and trace.context > 88_000:
            trace.splice_saving_nothing(
                summary=(
                    "Goal: upgrade the dev dependencies of billing and keep the suite green.\n\n"
                    "Constraints:\n- (none recorded)\n\n"
                    "Done:\n- pyproject.toml bumped; pip install succeeded after relaxing "
                    "the httpx pin.\n- test_retry.py ported to pytest 8.\n\n"
                    "Current state: test_request_retries_on_429 fails intermittently.\n\n"
                    "Next steps:\n- Find why the fake provider sees three requests."
                ),
                to_seq=trace.prompt_seqs[1] - 1,
                saved=rng.randint(900, 1_500),
                duration_ms=9_400,
            )

    t.policy = compact_when_full
    t.prompt(
        "Upgrade the dev dependencies in pyproject.toml to their latest versions (pytest 8 "
        "included) and get the suite green again.",
        wait=0,
    )
    t.step(repo.read("pyproject.toml"), text="Starting with the current pins.")
    t.step(Call("run_command", {"command": "pip list --outdated"}, _pip_outdated(), seconds=6))
    old_dev = 'dev = ["pytest==7.4.3", "pytest-cov==4.1.0", "anyio==3.7.1", "mypy==1.6.1", ' + (
        '"ruff==0.1.5"]'
    )
    new_dev = 'dev = ["pytest==8.3.3", "pytest-cov==5.0.0", "anyio==4.6.2", "mypy==1.13.0", ' + (
        '"ruff==0.7.2"]'
    )
    t.step(repo.edit("pyproject.toml", old_dev, new_dev), text="Bumping the dev pins.")
    t.step(
        Call(
            "run_command",
            {"command": "pip install -e '.[dev]'"},
            "ERROR: Cannot install anyio==4.6.2 and billing[dev]==3.8.2 because these package "
            "versions have conflicting dependencies.\n\nThe conflict is caused by:\n"
            "    The user requested anyio==4.6.2\n"
            "    httpx 0.24.1 depends on httpcore<0.18.0 and >=0.15.0\n"
            "    httpcore 0.17.3 depends on anyio<5.0 and >=3.0\n"
            "    pytest-cov 5.0.0 depends on pytest>=4.6\n\n"
            "To fix this you could try to:\n1. loosen the range of package versions you've "
            "specified\n2. remove package versions to allow pip to attempt to solve the "
            "dependency conflict\n\nERROR: ResolutionImpossible: for help visit "
            "https://pip.pypa.io/en/latest/topics/dependency-resolution/"
            "#dealing-with-dependency-conflicts",
            is_error=True,
            seconds=14,
        )
    )
    t.step(
        repo.edit(
            "pyproject.toml", 'dependencies = ["httpx==0.24.1"]', 'dependencies = ["httpx==0.27.2"]'
        ),
        text="httpx 0.24 pins an old httpcore; moving httpx forward too.",
    )
    t.step(Call("run_command", {"command": "pip install -e '.[dev]'"}, _pip_install(), seconds=41))
    repo.pytest_version = "8.3.3"
    seed_failure = Failure(
        "tests/billing/test_retry.py::TestDelayFor::test_delays_are_reproducible_with_a_seed",
        ("assert 0.143608 == 0.323833", " +  where 0.143608 = round(0.14360818436471305, 6)"),
    )
    warns_failure = Failure(
        "tests/billing/test_retry.py::TestDelayFor::test_bad_retry_after_is_ignored_without_a_warning",
        ("exceptions must be derived from Warning, not <class 'NoneType'>",),
        marker="pytest.warns(None)",
        exception="TypeError",
    )
    t.step(
        repo.pytest("tests", verbose=True, failures=[seed_failure, warns_failure], seconds=5.2),
        text="Installed. Running the suite on pytest 8.",
    )
    t.step(
        repo.read("tests/billing/test_retry.py"),
        thinking=(
            "Two failures in test_retry.py, both pytest 8 removals: nose-style setup() is no "
            "longer called, so the seed is never set, and pytest.warns(None) is gone. "
            "setup_method and warnings.catch_warnings fix both."
        ),
    )
    t.step(
        repo.edit(
            "tests/billing/test_retry.py",
            "    def setup(self) -> None:",
            "    def setup_method(self) -> None:",
        )
    )
    t.step(
        repo.edit(
            "tests/billing/test_retry.py",
            "        with pytest.warns(None) as record:",
            "        with warnings.catch_warnings(record=True) as record:",
        )
    )
    t.step(
        repo.edit(
            "tests/billing/test_retry.py", "import random\n", "import random\nimport warnings\n"
        )
    )
    flaky = Failure(
        "tests/billing/test_client.py::test_request_retries_on_429",
        ("assert 3 == 2", " +  where 3 = len([RecordedRequest(method='GET', ...), ...])"),
        marker="assert len(fake_provider.requests) == 2",
    )
    t.step(repo.pytest("tests", verbose=True, failures=[flaky], seconds=5.4))
    t.step(
        repo.pytest("tests", verbose=True, seconds=5.1), text="Unrelated to retry; running again."
    )
    t.reply(
        "The upgrade is in: pytest 8.3.3, pytest-cov 5, anyio 4.6, mypy 1.13, ruff 0.7 and "
        "httpx 0.27.2. `test_retry.py` needed two pytest 8 fixes. One test, "
        "`test_request_retries_on_429`, failed once and passed on the rerun: it looks flaky."
    )
    t.prompt("Any progress? The upgrade looks done; the flaky test is the priority now.", wait=40)
    investigation: list[tuple[Callable[..., Call], tuple[str, ...], str | None]] = [
        (repo.read, ("tests/billing/conftest.py",), "The fake provider is per test; checking how."),
        (repo.read, ("billing/client.py",), "How the client retries."),
        (repo.grep, ("_default", "."), "Who else touches the module-level client?"),
        (repo.read, ("billing/retry.py",), None),
        (repo.read, ("tests/billing/test_client.py",), "Reading the test itself again."),
        (repo.grep, ("sleep_before_retry", "."), None),
        (repo.read, ("pyproject.toml",), "Is anything in the config changing test order?"),
        (repo.read, ("tests/billing/conftest.py",), "Back to the fixture teardown."),
    ]
    runs = 0
    while t.context < 93_500:
        function, arguments, text = investigation[runs % len(investigation)]
        t.step(function(*arguments), text=text)
        runs += 1
        failures = [flaky] if runs % 3 != 2 else []
        # The whole suite while there is room, then only the flaky file.
        target = "tests" if t.context < 80_000 and runs % 2 else "tests/billing/test_client.py"
        t.step(
            repo.pytest(target, verbose=True, failures=failures, seconds=1 + 4 * rng.random()),
            text="Running the suite again." if target == "tests" else None,
        )
    t.reply(
        f"Still flaky after {runs} more runs: `test_request_retries_on_429` fails about two "
        "times in three, always with one extra recorded request."
    )
    t.prompt(
        "Stop there, you're almost out of context. Write down what's left so a fresh session "
        "can pick it up."
    )
    t.reply(
        "Where things stand:\n\n"
        "- Done: dev dependencies upgraded (pytest 8.3.3, pytest-cov 5, anyio 4.6, mypy 1.13, "
        "ruff 0.7) and httpx 0.27.2; `test_retry.py` ported to pytest 8 (`setup_method`, "
        "`warnings.catch_warnings`).\n"
        "- Open: `tests/billing/test_client.py::test_request_retries_on_429` fails about two "
        "runs in three with three recorded requests instead of two. My best guess is the "
        "module-level `billing.client._default` surviving between tests, but I have not "
        "proven it.\n"
        "- Note: two context compactions failed in this session (a summarizer timeout, then "
        "a splice that freed almost nothing), which is why the context is nearly full."
    )
    return t.example()


# -- Session 5: hostile content, to check that every page escapes trace text

_HOSTILE_PAGE = """<!doctype html>
<html><head><title>Status: comments</title></head>
<body>
<h1>Incident 2026-11-05: elevated API errors</h1>
<ul class="comments">
  <li><b>ana</b>: Thanks for the update!</li>
  <li><b>guest_5521</b>: <script>alert(1)</script></li>
  <li><b>guest_7310</b>: nice page <img src=x onerror=alert(2)></li>
  <li><b>guest_0042</b>: <a href="javascript:alert(3)">click for details</a></li>
  <li><b>guest_9999</b>: </script><script>alert(4)</script></li>
  <li><b>guest_1234</b>: {{ 7*7 }} ${7*7} <svg onload=alert(5)></li>
  <li><b>bruno</b>: Still seeing 502s from sa-east-1.</li>
</ul>
</body></html>"""


def hostile_content(tool_ids: set[str]) -> ExampleSession:
    external_id = "example-hostile-content"
    t = Trace(
        external_id=external_id,
        rng=random.Random(f"{SEED}:{external_id}"),
        tool_ids=tool_ids,
        session={
            "agent": "web-researcher",
            "model": "claude-sonnet-4-5",
            "context_window": 200_000,
            "started_at": "2026-11-06T11:00:00Z",
            "metadata": {"ticket": "SEC-88 <script>alert('metadata')</script>"},
        },
        system_tokens=3_200,
    )
    t.prompt(
        "Our status page comments show <script>alert(1)</script> in the feed. Can you fetch "
        "https://status.example.com/comments and tell me what's going on?",
        wait=0,
    )
    t.step(
        Call(
            "fetch_url",
            {"url": "https://status.example.com/comments"},
            _HOSTILE_PAGE,
            seconds=1.8,
        ),
        text="Fetching the page.",
    )
    t.reply(
        "Someone is testing the comment form for stored XSS. The page contains, verbatim:\n\n"
        "- `<script>alert(1)</script>`\n- `<img src=x onerror=alert(2)>`\n"
        "- a link to `javascript:alert(3)`: [click for details](javascript:alert(3))\n"
        "- `</script><script>alert(4)</script>`, which breaks out of an inline script block\n"
        "- `{{ 7*7 }}` and `<svg onload=alert(5)>`, template and SVG probes\n\n"
        "If any of them executed in your browser, comment bodies are rendered unescaped."
    )
    t.prompt(
        "Grep our templates for |safe and mark_safe, please. Was <img src=x onerror=alert(2)> "
        "the one that fired?"
    )
    t.step(
        Call(
            "grep",
            {"pattern": r"\|safe|mark_safe", "path": "templates"},
            "templates/status/comments.html:14:    "
            '<div class="body">{{ comment.body|safe }}</div>\n'
            "templates/status/base.html:9:  {{ banner_html|safe }}",
            seconds=0.5,
        )
    )
    t.reply(
        "Yes, very likely: `templates/status/comments.html` line 14 renders "
        "`{{ comment.body|safe }}`, so `<img src=x onerror=alert(2)>` runs in every visitor's "
        "browser. Drop `|safe` there (Django escapes by default) and check where "
        "`banner_html` in `base.html` comes from. Then delete the five probe comments."
    )
    return t.example()
