"""Summary sections: what the span page shows as titled parts of a summary."""

from __future__ import annotations

from compaction.engine.sections import sections, summary_sections


def test_summary_sections_parse_markdown_and_plain_headings():
    text = "## Goal\nShip v2\n**Constraints**: do not change the API\nnotes\nNext steps: test"
    assert summary_sections(text) == [
        ("Goal", "Ship v2"),
        ("Constraints", "do not change the API\nnotes"),
        ("Next steps", "test"),
    ]


def test_summary_sections_read_numbered_titles_and_keep_the_preface():
    text = (
        "This session is being continued from a previous conversation.\n"
        "Summary:\n"
        "1. Primary Request and Intent:\n   Implement the importer\n"
        "2. Key Technical Concepts:\n   - streaming\n"
        "**Current state of the work**: half done\n"
    )
    assert summary_sections(text) == [
        ("Overview", "This session is being continued from a previous conversation."),
        ("Primary Request and Intent", "Implement the importer"),
        ("Key Technical Concepts", "- streaming\n**Current state of the work**: half done"),
    ]


def test_a_summary_without_titles_is_shown_whole():
    assert summary_sections("The agent migrated billing.\nNext it will test.") == []


def test_a_long_sentence_ending_with_a_colon_is_not_a_title():
    text = "Goal: x\nLet me chronologically analyze the conversation:\nmore\nNext steps: y"
    assert summary_sections(text) == [
        ("Goal", "x\nLet me chronologically analyze the conversation:\nmore"),
        ("Next steps", "y"),
    ]


def test_a_replayed_summary_shows_its_own_fields_and_skips_the_empty_ones():
    shown = sections({"goal": "Ship v2", "constraints": ["no API change"], "errors": []}, "")
    assert [(s.name, s.items, s.text) for s in shown] == [
        ("Goal", [], "Ship v2"),
        ("Constraints", ["no API change"], ""),
    ]


def test_an_observed_summary_is_parsed_from_its_text():
    shown = sections({}, "Goal: x\nNext steps: y")
    assert [(s.name, s.text) for s in shown] == [("Goal", "x"), ("Next steps", "y")]
