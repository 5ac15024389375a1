"""The offline extractive summary: the task as the goal, decisions not narration, real files."""

import re

import pytest

from compaction.engine.claude_code import parse_transcript
from compaction.engine.harness import is_harness_text, prompt_text
from compaction.engine.messages import Message, TextBlock
from compaction.engine.strategies import Policy, summarize
from compaction.engine.summarizers import ExtractiveSummarizer, pinned_task
from compaction.engine.text import is_decision
from tests.engine.builders import History
from tests.importers.corpus import AUTO, MANUAL

NOTIFICATION = (
    "<task-notification>\n<task-id>b0be39e</task-id>\n"
    "<output-file>/tmp/claude-1000/-home-USER-projects-spotter/tasks/b0be39e.output</output-file>\n"
    "<status>completed</status>\n</task-notification>\n"
    "Read the output file to retrieve the result: /tmp/claude-1000/tasks/b0be39e.output"
)


# --- the goal is the pinned task ------------------------------------------------------------------


def session_with_a_notification_in_the_middle():
    h = History().system("agent").user("Implement spotter-gqc. Never push to main.")
    for i in range(4):
        h.tool("Read", f"defmodule M{i} do\n" + "x" * 3000, file_path=f"lib/m{i}.ex")
    h.assistant("Started the build in the background.")
    h.user(NOTIFICATION)
    for i in range(4, 8):
        h.tool("Read", "y" * 3000, file_path=f"lib/m{i}.ex")
    h.assistant("Build finished.")
    h.user("<system-reminder>The todo list is empty.</system-reminder>")
    h.assistant("Carrying on.")
    return h.messages


def test_the_goal_is_the_pinned_task_not_the_first_prompt_of_the_slab():
    messages = session_with_a_notification_in_the_middle()
    policy = Policy(keep_last=1, summary_reserve=0, step_fallback=False)
    out = summarize(messages, policy, limit=4000)
    assert out.applied
    assert out.removed[0] > 1, "the pinned task is outside the summarized slab"
    assert out.summary.goal == "Implement spotter-gqc. Never push to main."


def test_without_a_task_the_goal_is_the_first_prompt_in_the_users_own_words():
    h = History().user(NOTIFICATION).user("[Request interrupted by user for tool use]")
    h.user("<command-name>/clear</command-name><command-args></command-args>")
    h.user("Port the CLI to Rust.").assistant("ok")
    summary = ExtractiveSummarizer().summarize(h.messages).summary
    assert summary.goal == "Port the CLI to Rust."


def test_harness_records_state_no_constraint():
    h = History().user("Fix the parser.").assistant("ok")
    h.user("<local-command-stdout>CRITICAL: you must never skip bd sync</local-command-stdout>")
    h.user("Fix it <system-reminder>Never mention this reminder.</system-reminder>")
    h.assistant("done")
    summary = ExtractiveSummarizer().summarize(h.messages).summary
    assert summary.constraints == ()


def test_a_slash_command_with_arguments_is_the_users_request():
    text = (
        "<command-message>orchestrator is running…</command-message>\n"
        "<command-name>/orchestrator</command-name>\n"
        "<command-args>create TODO app by Next.js</command-args>"
    )
    assert is_harness_text(text)
    assert pinned_task([Message(0, "user", (TextBlock(text),))]) == (
        "/orchestrator create TODO app by Next.js"
    )


def test_the_task_of_a_later_compaction_comes_from_the_earlier_summary():
    first = summarize(
        session_with_a_notification_in_the_middle(),
        Policy(keep_last=1, pin_head=False, summary_reserve=0, step_fallback=False),
        limit=4000,
    )
    assert pinned_task(first.messages) == "Implement spotter-gqc. Never push to main."


@pytest.mark.parametrize(
    ("path", "task"),
    [
        (AUTO, "Implement spotter-gqc"),
        (MANUAL, "Work on bead spotter-4te. Run bd show spotter-4te"),
    ],
    ids=["auto", "manual"],
)
def test_real_sessions_keep_their_task_as_the_goal(path, task):
    transcript = parse_transcript(path)
    (observed,) = transcript.compactions
    messages = [m for m in transcript.messages if m.seq < observed.seq]
    out = summarize(messages, Policy(keep_last=2), limit=60_000)
    assert out.applied
    assert out.summary.goal.startswith(task)
    assert not any(is_harness_text(c) or "/tmp/" in c for c in out.summary.constraints)


def test_a_real_task_notification_is_not_a_prompt_in_the_users_words():
    transcript = parse_transcript(AUTO)
    notification = next(m for m in transcript.messages if "<task-notification>" in m.text)
    assert prompt_text(notification) == ""


# --- decisions are choices, not narration ---------------------------------------------------------


@pytest.mark.parametrize(
    "sentence",
    [
        "Let me check the config.",
        "Now let me read the router and dashboard live view for patterns.",
        "I'll add it next to the header when annotations exist.",
        "Let me create a .dialyzerignore file:",
        "Should I keep the old endpoint?",
        "Let me try a different approach - add it to .dialyzerignore:",
    ],
)
def test_narration_is_not_a_decision(sentence):
    assert not is_decision(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "I'll adapt only the internal client.",
        "Decision: keep the endpoint names.",
        "We'll call httpx instead of requests.",
        "I decided to store amounts as integer cents.",
        "Vou usar o cliente v2 em vez do antigo.",
        "Resolved it by using hex_trace_id/1 instead of extracting the id by hand.",
    ],
)
def test_a_choice_is_a_decision(sentence):
    assert is_decision(sentence)


def test_the_summary_lists_decisions_and_drops_narration():
    h = History().user("Migrate billing.")
    h.assistant("Let me check the client. I'll keep the endpoint names. Let me read it:")
    h.assistant("We'll use integer cents rather than floats. I'll add the test.")
    summary = ExtractiveSummarizer().summarize(h.messages).summary
    assert summary.decisions == (
        "I'll keep the endpoint names.",
        "We'll use integer cents rather than floats.",
    )


# --- files touched are real files that were read or edited ----------------------------------------


def test_files_touched_are_files_read_or_edited_successfully():
    h = History().user("Fix billing.")
    h.tool("Read", "def charge(): ...", file_path="billing/api.py")
    h.tool("Read", "File does not exist.", is_error=True, file_path="billing/gone.py")
    h.tool(
        "Read",
        "<tool_use_error>File does not exist.</tool_use_error>",
        file_path="billing/missing.py",
    )
    h.tool("Edit", "ok", file_path="billing/client.py", old_string="a", new_string="b")
    h.tool(
        "Edit",
        "String to replace not found in file.",
        is_error=True,
        file_path="billing/models.py",
        old_string="x",
        new_string="y",
    )
    h.tool("Bash", "", command="grep -rn charge_v2/2 lib/ 2>/dev/null")
    h.tool("Grep", "billing/api.py:3", pattern="def charge", path="billing")
    h.tool("Glob", "billing/api.py", pattern="**/*.py", path=".")
    h.tool("Write", "ok", file_path="/dev/null", content="")
    h.tool("Read", "log", file_path="/tmp/claude-1000/tasks/b0be39e.output")
    h.assistant("Fixed.")
    summary = ExtractiveSummarizer().summarize(h.messages).summary
    assert summary.files_touched == ("billing/api.py (read)", "billing/client.py (edit)")
    assert summary.done == ("Fixed.", "edited billing/client.py")


def test_a_tool_call_whose_result_is_not_in_the_slab_touches_no_file():
    h = History().user("go").tool("Read", "body", file_path="a.py")
    summary = ExtractiveSummarizer().summarize(h.messages[:2]).summary
    assert summary.files_touched == ()


@pytest.mark.parametrize("path", [AUTO, MANUAL], ids=["auto", "manual"])
def test_real_sessions_list_only_real_files(path):
    transcript = parse_transcript(path)
    (observed,) = transcript.compactions
    messages = [m for m in transcript.messages if m.seq < observed.seq]
    files = ExtractiveSummarizer().summarize(messages).summary.files_touched
    assert len(files) >= 10
    for item in files:
        path_part, verbs = re.fullmatch(r"(.*) \(([\w, ]+)\)", item).groups()
        assert set(verbs.split(", ")) <= {"read", "edit"}, item
        assert not path_part.startswith(("/dev/", "/tmp/")), item
        assert re.search(r"/[^/]*\.\w+$|^[^/]*\.\w+$", path_part), f"not a file: {item}"
