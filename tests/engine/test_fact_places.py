"""Where a summary says a fact: found as written or by the verdict's evidence line, never across
two lines, overlapping marks merged, and in linear time on a hostile summary."""

from __future__ import annotations

import textwrap

from compaction.engine.fact_places import (
    NEEDLE_MAX,
    Place,
    Segment,
    fact_places,
    line_segments,
    needles,
    summary_lines,
    unbulleted,
)
from tests.infra import run_on_cases


def test_a_fact_is_found_as_written_whatever_its_case_and_spacing():
    lines = summary_lines("Goal: ship\nEdited   Billing/API.py  twice")
    assert fact_places(lines, [needles("billing/api.py", "")]) == [Place(1, 7, 21)]


def test_a_path_is_found_by_its_file_name_when_the_summary_names_only_that():
    lines = summary_lines("Done: api.py moved to v2")
    assert fact_places(lines, [needles("lib/billing/api.py", "")]) == [Place(0, 6, 12)]


def test_a_paraphrase_is_found_by_the_line_the_verdict_quoted_without_its_bullet():
    # as the page shows the lines: without their bullets
    lines = [unbulleted(line) for line in summary_lines("Done:\n- the secondary emotions")]
    wanted = needles("detect_secondary_emotions", "- the secondary emotions")
    assert fact_places(lines, [wanted]) == [Place(1, 0, len("the secondary emotions"))]


def test_a_fact_the_summary_does_not_say_has_no_place_and_a_find_never_crosses_lines():
    lines = summary_lines("keep billing\napi.py")
    assert fact_places(lines, [needles("billing api.py", ""), needles("x", "")]) == [None, None]


def test_overlapping_marks_merge_into_one_naming_every_fact():
    assert line_segments("a billing/api.py b", [(2, 16, 1), (10, 16, 2)]) == [
        Segment("a "),
        Segment("billing/api.py", (1, 2)),
        Segment(" b"),
    ]


def test_a_needle_is_never_longer_than_the_bound():
    assert all(len(n) <= NEEDLE_MAX for n in needles("x" * 5000, "y" * 5000))


# The worst case of a substring search is a long run of one character with a needle that
# almost matches everywhere; 1 MB of it, with a hundred facts, is searched in a child process
# killed past a minute: linear work takes well under a second, quadratic work would take hours.
SCRIPT = textwrap.dedent(
    """
    import json, sys
    from compaction.engine.fact_places import fact_places, needles, summary_lines
    for text in json.loads(sys.stdin.read()):
        lines = summary_lines(text)
        wanted = [needles("a" * (100 + n) + "b", "a" * 199 + "c") for n in range(100)]
        fact_places(lines, wanted)
    print("done")
    """
)


def test_finding_facts_in_a_megabyte_of_the_worst_case_is_linear():
    cases = ["a" * 1_000_000, "a " * 500_000, ("a" * 199 + "\n") * 5_000]
    assert run_on_cases(SCRIPT, cases, timeout=60) == "done"
