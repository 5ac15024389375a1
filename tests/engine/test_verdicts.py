"""How a lost fact is found needed again after the boundary, one case per way."""

from __future__ import annotations

from compaction.engine.facts import Fact
from compaction.engine.messages import Message, TextBlock, ToolResultBlock, ToolUseBlock
from compaction.engine.verdicts import NeededAgain, is_reloaded, needed_again


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
