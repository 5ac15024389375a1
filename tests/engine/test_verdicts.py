"""How a lost fact is found needed again after the boundary, one case per way."""

from __future__ import annotations

from compaction.engine import text as txt
from compaction.engine.fact_index import ContextIndex
from compaction.engine.facts import Fact, extract_facts, message_facts
from compaction.engine.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from compaction.engine.summarizers import file_actions
from compaction.engine.verdicts import (
    NeededAgain,
    acted_index,
    is_reloaded,
    needed_again,
    verdict_of,
)


def call(seq: int, tool_id: str, name: str, **args: str) -> Message:
    return Message(seq, "assistant", (ToolUseBlock(tool_id, name, dict(args)),))


def result(seq: int, tool_id: str, text: str = "ok", *, error: bool = False) -> Message:
    return Message(seq, "user", (ToolResultBlock(tool_id, text, error),))


def test_a_read_forced_before_an_edit_shows_as_the_edit():
    later = [
        call(10, "r", "Read", file_path="/p/lib/billing.py"),
        result(11, "r"),
        call(12, "e", "Edit", file_path="/p/lib/billing.py", old_string="a", new_string="b"),
    ]
    assert needed_again([Fact("path", "lib/billing.py")], later) == [NeededAgain(12, "reedit")]


def test_a_command_run_again_and_a_rule_the_user_repeats():
    later = [
        call(20, "b", "Bash", command="cd /p && mise run test 2>&1 | tail -30"),
        result(21, "b"),
        Message(22, "user", (TextBlock("Again: never push to main without a review."),)),
    ]
    facts = [
        Fact("identifier", "mise run test", origin="tool"),
        Fact("constraint", "Never push to main without review."),
        Fact("constraint", "Keep the public API unchanged."),
    ]
    assert needed_again(facts, later) == [
        NeededAgain(20, "rerun"),
        NeededAgain(22, "repeated_by_user"),
        None,
    ]


def test_the_same_call_failing_as_before_is_the_error_come_back():
    earlier = [
        call(1, "x", "Read", file_path="/p/missing.py"),
        result(2, "x", "ENOENT", error=True),
    ]
    later = [
        call(30, "y", "Read", file_path="/p/missing.py"),
        result(31, "y", "ENOENT", error=True),
    ]
    assert needed_again([Fact("path", "/p/missing.py")], later, earlier) == [
        NeededAgain(30, "error_again")
    ]
    # the same read succeeding is a plain re-read
    fine = [call(30, "y", "Read", file_path="/p/missing.py"), result(31, "y", "x = 1")]
    assert needed_again([Fact("path", "/p/missing.py")], fine, earlier) == [
        NeededAgain(30, "reread")
    ]


def test_what_each_harness_puts_back_itself_is_reloaded_only_for_that_harness():
    assert is_reloaded("/home/u/p/AGENTS.md", "codex")
    assert not is_reloaded("/home/u/p/AGENTS.md", "claude-code:2.1")
    assert is_reloaded("/Users/u/.claude/plans/witty-spinning-cake.md", "claude-code")
    assert not is_reloaded("docs/plans/rollout.md", "claude-code")


# --- what the tuning half of benchmarks/verdicts.py taught (each a case that failed before) ---


def test_a_mention_in_a_subagents_prompt_or_an_issue_is_no_reread():
    """Only a call that reads, edits or runs shows the need: a Task prompt or an issue
    tracker's text naming the file is the agent delegating or reporting."""
    later = [
        call(40, "t", "Task", prompt="Review lib/billing.py for races"),
        call(41, "m", "mcp__linear__update_issue", description="see lib/billing.py"),
    ]
    assert needed_again([Fact("path", "/p/lib/billing.py")], later) == [None]
    later.append(call(42, "r", "Read", file_path="/p/lib/billing.py"))
    assert needed_again([Fact("path", "/p/lib/billing.py")], later) == [NeededAgain(42, "reread")]


def test_a_name_written_into_new_code_is_not_a_name_looked_up_again():
    edit = call(
        50, "e", "Edit", file_path="/p/ui.swift", old_string="x", new_string="FitTodayColor.a"
    )
    assert needed_again([Fact("identifier", "FitTodayColor")], [edit]) == [None]
    grep = call(51, "g", "Grep", pattern="FitTodayColor", path="/p")
    assert needed_again([Fact("identifier", "FitTodayColor")], [edit, grep]) == [
        NeededAgain(51, "reread")
    ]


def _verdict(path: str, summary: str, files: list[str]) -> str:
    fact = Fact("path", path, origin="tool")
    return verdict_of(fact, ContextIndex(summary), acted=None, files=files).verdict


def test_a_common_file_name_alone_keeps_the_one_file_of_that_name_the_session_used():
    pkg = "/u/proj/napoli/package.json"
    assert _verdict(pkg, "- **`package.json`** (read only)", [pkg]) == "kept"
    # two package.json files: the bare name does not say which
    two = [pkg, "/u/proj/napoli/web/package.json"]
    assert _verdict(pkg, "- **`package.json`** (read only)", two) == "lost"
    # the summary names another file of that name: not this one
    assert _verdict(pkg, "edited packages/api/package.json", [pkg]) == "lost"


def test_rules_come_from_instructions_not_from_descriptions():
    rules = txt.constraint_sentences(
        "Never push to main. And please don't touch auth. You must not log tokens. "
        "I don't think the reviewer made commits. ~350 lines of helper methods never called. "
        "Recovery reads the pointer directly, never deriving names."
    )
    assert rules == [
        "Never push to main.",
        "And please don't touch auth.",
        "You must not log tokens.",
    ]


def _facts(text: str) -> tuple[str | None, list[tuple[str, str]]]:
    found = message_facts(Message(0, "user", (TextBlock(text),)))
    return (found.task.text if found.task else None), [(f.kind, f.text) for f in found.facts]


def test_an_approved_plan_is_the_agents_text_and_sets_no_rules():
    task, facts = _facts(
        "Implement the following plan:\n\n# Plan: random keys\n\n"
        "- recovery never derives IPNS names\n- Do not reuse the HKDF path"
    )
    assert task == "Implement the following plan:"
    assert [f for f in facts if f[0] == "constraint"] == []


def test_a_launchers_preamble_gives_rules_but_not_the_task_and_a_notice_is_no_task():
    task, facts = _facts(
        "<system_instruction>\nYou are working inside Conductor, a Mac app.\n"
        "Never force-push the workspace branch.\n</system_instruction>\n\n"
        "do you have access to the skill-creator skill? if so load it"
    )
    assert task is not None
    assert task.startswith("do you have access to the skill-creator skill")
    assert ("constraint", "Never force-push the workspace branch.") in facts
    task, _ = _facts(
        "<task-notification>\n<task-id>ae3</task-id>\n</task-notification>\n"
        "Full transcript available at: /private/tmp/claude-501/tasks/ae3.output"
    )
    assert task is None


# --- what the held-out half of stop 47, read and moved to tuning, taught ---------------------


def _mentioned_or_lost(name: str, calls: list[Message], summary: str = "Done.") -> str:
    fact = Fact("identifier", name, origin="summary")
    return verdict_of(fact, ContextIndex(summary), acted=acted_index(calls)).verdict


def test_a_name_only_briefed_to_a_subagent_or_only_removed_is_mentioned():
    brief = call(1, "t", "Task", prompt="Rename list_projects in the CLI", description="x")
    assert _mentioned_or_lost("list_projects", [brief]) == "mentioned"
    removed = call(2, "e", "Edit", file_path="/p/a.js", old_string="clue-card", new_string="")
    assert _mentioned_or_lost("clue-card", [brief, removed]) == "mentioned"
    searched = call(3, "g", "Grep", pattern="list_projects", path="/p")
    assert _mentioned_or_lost("list_projects", [brief, searched]) == "lost"


def test_a_name_in_code_counts_once_two_calls_wrote_it():
    one = call(1, "w", "Write", file_path="/p/ui.js", content="getElementById('term')")
    assert _mentioned_or_lost("getElementById", [one]) == "mentioned"
    two = call(2, "e", "Edit", file_path="/p/ui.js", old_string="a", new_string="getElementById")
    assert _mentioned_or_lost("getElementById", [one, two]) == "lost"


def test_a_codex_patch_is_an_edit_of_each_file_it_names():
    patch = "*** Begin Patch\n*** Update File: src/bridges/AldenBridge.ts\n@@\n-a\n+b\n"
    found = message_facts(
        Message(1, "assistant", (ToolUseBlock("c", "apply_patch", {"input": patch}),))
    )
    assert [(f.kind, f.text) for _, f in found.uses] == [("path", "src/bridges/AldenBridge.ts")]


def test_a_file_whose_text_holds_a_patch_is_that_file_not_the_patchs():
    text = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n"
    write = ToolUseBlock("w", "Write", {"file_path": "docs/patching.md", "content": text})
    assert file_actions(write) == [("edit", "docs/patching.md")]


def test_codex_agents_md_and_a_redacted_name_are_no_facts():
    task, facts = _facts("# AGENTS.md instructions for g:\\proj\n\n<INSTRUCTIONS>\nNever do X.")
    assert (task, facts) == (None, [])
    task, facts = _facts("<environment_context>\n<approval_policy>never</approval_policy>")
    assert (task, facts) == (None, [])
    read = call(1, "r", "Read", file_path="/Users/v/.REDACTED.txt")
    assert extract_facts([read, result(2, "r")]) == []


def test_a_dependency_a_home_file_and_a_command_file_as_a_summary_names_them():
    dep = "/app/frontend/node_modules/@ark-ui/react/dist/tree-view.d.ts"
    assert _verdict(dep, "Built the file list on @ark-ui/react.", [dep]) == ("paraphrased")
    assert _verdict(dep, "Used a tree view for the file list.", [dep]) == "lost"
    assert _verdict("/Users/t/.zshrc", "- **~/.zshrc**: added aliases", []) == "kept"
    assert _verdict("/Users/t/dev/.zshrc", "- **~/.zshrc**: added aliases", []) == "lost"
    command = "/Users/t/.claude/commands/deep-research.md"
    assert _verdict(command, "keep /deep-research command", [command]) == "kept"
