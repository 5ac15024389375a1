"""Facts, not tokens (issue 24): what real sessions nobody here wrote showed the extractor and
the checker getting wrong, one small history per cause."""

from __future__ import annotations

from compaction.engine.evals import extract_facts, retention, span_verdict
from compaction.engine.fact_index import ContextIndex
from compaction.engine.facts import Fact
from compaction.engine.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tests.engine.builders import History

PREVIOUS = "This session is being continued from a previous conversation that ran out of context."


def facts_of(h: History) -> list[tuple[str, str]]:
    return [(f.kind, f.text) for f in extract_facts(h.messages)]


def kept(summary: str, fact: Fact) -> bool:
    return ContextIndex(summary).check(fact).kept


def test_a_pasted_latex_spec_code_listing_and_table_give_no_facts():
    h = History().user(
        "Implement the solver.\n\n"
        "$$x_1 = d1 + \\contentReference{a}$$\n\n"
        "```c\n#include <string.h>\nint un_pad(char *s);\n```\n\n"
        "| name | must_not_change |\n|------|------|\n| ad_hoc | yes |\n"
    )
    assert facts_of(h) == [("task", "Implement the solver.")]


def test_a_previous_summary_hands_on_files_and_rules_not_its_folders():
    h = History().user("Add the trainer tab.")
    h.user(
        f"{PREVIOUS}\n\nFiles: Presentation/DI/ and Presentation/Features/Workout/Views/, "
        "and WorkoutTabView.swift was fixed.\n"
        "The user asked: never push to main without review."
    )
    found = facts_of(h)
    assert ("path", "WorkoutTabView.swift") in found
    assert ("constraint", "never push to main without review.") in found
    assert not [t for k, t in found if k == "path" and t.endswith("/")]


def test_a_previous_summary_gives_rules_only_where_it_reports_the_user():
    h = History().user("Fix the emotion detector.")
    h.user(
        f"{PREVIOUS}\n\n2. Errors and fixes:\n- confidence: Always 0.7\n"
        "- Never returned secondary emotions (fixed)\n"
        '6. All user messages:\n- "Only touch the detector module"\n'
    )
    rules = [t for k, t in facts_of(h) if k == "constraint"]
    # a bug the summary describes is history, not a rule; what the user said is one
    assert rules == ["Only touch the detector module"]


def test_import_aliases_module_paths_harness_tools_and_hyphenated_words_are_not_facts():
    h = History().user(
        "Import from @/lib/api/errors and github.com/go-git/go-git/v5/plumbing/object, use "
        ".onMove/.onDelete, call ExitPlanMode when done; weigh the trade-offs of cross-item "
        "sync in billing/client.py."
    )
    found = facts_of(h)
    assert ("path", "billing/client.py") in found
    texts = {t for _, t in found}
    for noise in (
        "@/lib/api/errors",
        "github.com/go-git/go-git/v5/plumbing/object",
        ".onMove/.onDelete",
        "ExitPlanMode",
        "trade-offs",
        "cross-item",
    ):
        assert noise not in texts


def test_a_numbered_heading_after_the_word_branch_is_not_a_branch():
    h = History().user(
        "Reset the shadow branch\n\n8. Current work: totals. Then push branch fix/totals-2."
    )
    identifiers = [t for k, t in facts_of(h) if k == "identifier"]
    assert identifiers == ["fix/totals-2"]


def test_spelling_variants_of_a_name_count_as_the_name():
    summary = (
        "Stored InitialAttribution in metadata; PRO-77 is open; the CMS is web-cms-pink; "
        "fixed manual_commit_condensation.go."
    )
    assert kept(summary, Fact("identifier", "initial_attribution"))
    assert kept(summary, Fact("identifier", "pro77"))
    assert kept(summary, Fact("identifier", "web-cms"))
    assert kept(summary, Fact("path", "condensation.go"))
    # two plain words side by side are prose, not the name
    assert not kept("Counted the diff lines again.", Fact("identifier", "diffLines"))


def test_a_file_of_the_same_name_in_another_folder_is_not_the_file():
    summary = "Created `docs/specs/npm/scope.md`; edited tests/CMakeLists.txt."
    assert not kept(summary, Fact("path", "/home/u/repiq/docs/specs/scope.md"))
    assert kept(summary, Fact("path", "/home/u/repiq/docs/specs/npm/scope.md"))
    assert not kept(summary, Fact("path", "/home/u/proj/CMakeLists.txt"))


def test_a_rule_kept_without_its_aside_is_kept():
    summary = '- "The attribution silently fails if any step in the chain returns an error..."'
    rule = (
        "The attribution silently fails if any step in the chain returns an error "
        "(headRef, headCommit, headTree, shadowCommit)."
    )
    assert kept(summary, Fact("decision", rule))


def test_what_the_user_says_after_interrupting_is_a_decision_and_can_be_lost():
    h = History().user("Package the CLI for Debian.")
    h.assistant("I will build it from source.")
    h.user("[Request interrupted by user]")
    h.user("Lets do the system package approach please")
    h.user("What does the postinst script do?")  # a later prompt is not a decision
    assert ("decision", "Lets do the system package approach please") in facts_of(h)
    assert [k for k, _ in facts_of(h)].count("decision") == 1
    summary = [Message(99, "user", (TextBlock("Packaging the CLI for Debian from source."),))]
    report = retention(h.messages, summary)
    (item,) = [i for i in report.items if i.fact.kind == "decision"]
    assert not item.kept
    assert span_verdict("", [f.kind for f in report.lost]).status == "bad"


def test_what_the_user_says_when_refusing_a_tool_call_is_a_decision_but_a_question_is_not():
    h = History().user("Summarise the checkpoints.")
    for i, said in enumerate(
        (
            "hang on a sec, I'll get you a raw transcript log file to look at",
            "do the read and webfetch tool calls follow a similar pattern?",
            "The user wants to clarify these questions.",
        )
    ):
        tool_id = f"toolu_{i}"
        h.messages.append(
            Message(
                len(h.messages), "assistant", (ToolUseBlock(tool_id, "Bash", {"command": "ls"}),)
            )
        )
        refusal = (
            "The user doesn't want to proceed with this tool use. The tool use was rejected. "
            f"To tell you how to proceed, the user said:\n{said}"
        )
        h.messages.append(
            Message(len(h.messages), "user", (ToolResultBlock(tool_id, refusal, True),))
        )
    decisions = [t for k, t in facts_of(h) if k == "decision"]
    assert decisions == ["hang on a sec, I'll get you a raw transcript log file to look at"]


def test_a_prompt_in_the_message_that_records_the_interruption_is_a_decision():
    h = History().user("Package the CLI for Debian.")
    h.assistant("Building from source.")
    h.user("[Request interrupted by user]\nNo, use the system package instead.")
    assert ("decision", "No, use the system package instead.") in facts_of(h)
