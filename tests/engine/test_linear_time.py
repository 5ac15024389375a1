"""The fact extractor and the verdicts run in linear time on hostile text.

Each case feeds one message of 1 MB of a pattern's worst case (a long run of the characters
its quantifiers repeat, with no character that would end a match) through everything an
analysis does with a prompt and a context: extraction, the names index, the verdicts. A
pattern that backtracks takes hours on any of them (1 MB of ``a+`` ran for hours before the
name patterns started only at the start of a run); a linear one takes about a second. The
bound is a minute for all of them together, in a child process that is killed past it, so
a slow machine cannot fail the test and a quadratic pattern cannot pass it.
"""

from __future__ import annotations

import textwrap

from tests.infra import run_on_cases

WORST_CASES = [
    "a+" * 500_000,
    "a@" * 500_000,
    "x" * 1_000_000,
    "a." * 500_000,
    "a.." * 333_333,
    "a-" * 500_000,
    "a/" * 500_000,
    "a_" * 500_000,
    "aB" * 500_000,
    "\\a{" * 333_333,
    "$$" * 500_000,
    "\\[" * 500_000,
    "\\begin{a}" * 111_111,
    "<a" * 500_000,
    "[A" * 500_000,
    "基a" * 500_000,
    "x@y." * 250_000,
    "    a(" * 166_666,
    "<system_instruction></system_instruction>" * 24_000,
    "<system_instruction>" * 50_000,
    "never " * 166_666,
    "please and " * 90_000,
    "/.claude/commands/aaaaaa" * 40_000,
    "*** Update File: a" * 50_000,
]

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from compaction.engine.evals import retention
    from compaction.engine.fact_index import ContextIndex
    from compaction.engine.facts import message_facts
    from compaction.engine.messages import Message, TextBlock, ToolUseBlock
    from compaction.engine.verdicts import _COMMAND_FILE, dependency_of, paraphrase_line
    for text in json.loads(sys.stdin.read()):
        prompt = Message(0, "user", (TextBlock(text),))
        call = Message(1, "assistant", (ToolUseBlock("t", "Bash", {"command": text}),))
        message_facts(prompt)
        message_facts(call)
        retention([prompt, call], [Message(2, "user", (TextBlock(text),))], later=[call])
        paraphrase_line(ContextIndex(text), "detect_secondary_emotions")
        wrote = Message(3, "assistant", (
            ToolUseBlock("w", "Write", {"file_path": "/p/a.py", "content": text}),
            ToolUseBlock("p", "apply_patch", {"input": "*** Begin Patch\\n" + text}),
        ))
        message_facts(wrote)
        retention([prompt, wrote], [Message(4, "user", (TextBlock("done"),))], later=[wrote])
        dependency_of(text), _COMMAND_FILE.search(text)
    print("done")
    """
)


def test_every_extractor_pattern_reads_a_megabyte_of_its_worst_case_in_linear_time():
    assert run_on_cases(SCRIPT, WORST_CASES, timeout=60 * len(WORST_CASES)) == "done"
