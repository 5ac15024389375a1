"""A search snippet's text (escaped line breaks read as spaces) is made in linear time on
hostile text: 1 MB of each worst case for ``_ESCAPED_BREAK`` (escapes back to back, escaped
backslashes before every letter, a backslash run) in a child process killed past a minute, so
a slow machine cannot fail it and a backtracking pattern cannot pass it."""

from __future__ import annotations

import os
import textwrap

from tests.infra import run_on_cases

WORST_CASES = ["\\n" * 500_000, "\\\\n" * 333_333, "\\" * 1_000_000, "a\\t" * 333_333]

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import django
    django.setup()
    from sessions.search import snippet_text
    for text in json.loads(sys.stdin.read()):
        out = snippet_text(text)
        assert len(out) <= len(text)
    print("done")
    """
)


def test_snippet_text_reads_a_megabyte_of_each_worst_case_in_linear_time() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    assert run_on_cases(SCRIPT, WORST_CASES, timeout=60, env=env).endswith("done")
