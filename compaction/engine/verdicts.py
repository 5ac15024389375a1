"""What became of each fact at a compaction, drawn from what the session did.

Five verdicts (DESIGN.md, "Verdicts"):

* ``kept``: the compacted context names it (the evidence is the line);
* ``paraphrased``: it says it in other words (``detect_secondary_emotions`` as "secondary
  emotions");
* ``lost``: a fact the session needed, and the context neither names nor conveys it;
* ``mentioned``: a file or a name only pasted or named (in a prompt, or in an earlier
  summary's account of finished work) and never used by a tool call: not a fact, never lost;
* ``reloaded``: a file the harness puts back by itself after compacting (its memory file, its
  own temp files).

Then, for each lost fact, whether the session needed it again before the next compaction
(:func:`needed_again`): the agent re-read or re-edited the file, ran the command again, used
the name again, or the user repeated the rule. One sweep over the actions after the boundary.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, TypedDict

from compaction.engine import text as txt
from compaction.engine.fact_index import ContextIndex, name_words
from compaction.engine.facts import (
    READ_COMMANDS,
    Fact,
    canon_path,
    is_summary,
    looks_like_file,
    prompt_prose,
)
from compaction.engine.messages import Message, ToolResultBlock, ToolUseBlock, block_text
from compaction.engine.summarizers import file_actions

Verdict = Literal["kept", "paraphrased", "lost", "mentioned", "reloaded"]
VERDICTS: frozenset[str] = frozenset({"kept", "paraphrased", "lost", "mentioned", "reloaded"})
# Retention counts these only: mentioned and reloaded are not facts at risk.
FACT_VERDICTS: frozenset[str] = frozenset({"kept", "paraphrased", "lost"})
NOT_LOST: frozenset[str] = frozenset({"kept", "paraphrased"})
How = Literal["reread", "reedit", "rerun", "repeated_by_user", "error_again"]


class NeededAgainDict(TypedDict):
    seq: int
    how: How


@dataclass(frozen=True)
class NeededAgain:
    """The first sign after the boundary that a lost fact was needed: where and how."""

    seq: int
    how: How

    def to_dict(self) -> NeededAgainDict:
        return {"seq": self.seq, "how": self.how}


# --- reloaded: what each harness puts back itself ------------------------------------------------

# Memory files each harness reads again at the start of every context, compacted or not, and its
# own scratch files; named per harness, by the start of the session's ``agent`` (any harness's
# when the agent is not one of them).
RELOADED_NAMES: dict[str, frozenset[str]] = {
    "claude-code": frozenset({"claude.md", "claude.local.md"}),
    "codex": frozenset({"agents.md", "agents.override.md"}),
    "gemini": frozenset({"gemini.md"}),
    "cline": frozenset({".clinerules"}),
}
# Claude Code keeps a long tool result in a file of its own and points the model at it, and
# attaches the plan of plan mode (``~/.claude/plans/<name>.md``) again after compacting.
_HARNESS_TEMP = re.compile(
    r"(?:^|/)tool-results/(?:toolu|call)_[A-Za-z0-9_-]+\.txt$|(?:^|/)\.claude/plans/[^/]+\.md$"
)


def is_reloaded(path: str, harness: str | None = None) -> bool:
    """Whether ``harness`` (any, when None) puts this file back by itself after compacting.

    >>> is_reloaded("/home/u/proj/CLAUDE.md", "claude-code"), is_reloaded("AGENTS.md", "cline")
    (True, False)
    >>> is_reloaded("/Users/u/.claude/projects/p/tool-results/toolu_01AbC.txt")
    True
    """
    canon = canon_path(path)
    if _HARNESS_TEMP.search(canon):
        return True
    name = canon.rsplit("/", 1)[-1]
    known = [n for h, n in RELOADED_NAMES.items() if harness and harness.startswith(h)]
    return any(name in names for names in (known or RELOADED_NAMES.values()))


# --- acted on: the tool calls of the context -----------------------------------------------------


def acted_index(messages: Iterable[Message]) -> ActedIndex | None:
    """Every name the agent's tool calls used: paths, commands, patterns, the code it wrote;
    None when the context holds no tool call (a conversation, or a history built by hand):
    then nothing tells a fact from a mention, and every candidate counts.

    A file or a name a prompt or an earlier summary mentions is a fact only when this index
    names it too (:func:`verdict_of`).
    """
    direct: list[str] = []
    code: list[str] = []
    calls = False
    for m in messages:
        if m.role != "assistant":
            continue
        for block in m.content:
            if isinstance(block, ToolUseBlock):
                calls = True
                for key, value in _acted_inputs(block):
                    (code if key in _CODE_KEYS else direct).append(value)
    return ActedIndex(direct, code) if calls else None


# What a tool call says rather than does: the brief of a subagent or a task, a command's
# description, a plan, a message to a teammate. Measured on the tuning half of
# benchmarks/verdicts.py: names found only there were labelled mentioned or paraphrased 15
# times in 20.
_PROSE_KEYS = frozenset(
    {"description", "prompt", "subject", "activeForm", "todos", "plan", "question", "questions"}
)
_PROSE_TOOLS = frozenset(
    {"TodoWrite", "TaskCreate", "TaskUpdate", "SendMessage", "ExitPlanMode", "AskUserQuestion"}
)
# The code an edit replaced: a name only there was removed, not worked with.
_REMOVED_KEYS = frozenset({"old_string", "old_str"})
# The code a call writes: a name in it is worked with when two calls write it.
_CODE_KEYS = frozenset({"content", "new_string", "new_str", "file_text", "patch", "input"})
_CODE_NAME = re.compile(r"[A-Za-z_$][\w$-]*")


def _acted_inputs(block: ToolUseBlock) -> Iterable[tuple[str, str]]:
    """The inputs of one tool call that act on something, by key: paths, commands, patterns
    and the code it writes, without the prose it carries or the code it removes."""
    if block.name in _PROSE_TOOLS:
        return
    yield "name", block.name
    for key, value in block.input.items():
        if key in _PROSE_KEYS or key in _REMOVED_KEYS or value is None:
            continue
        yield key, value if isinstance(value, str) else json.dumps(value, sort_keys=True)


class ActedIndex:
    """The names a context's tool calls acted on. A name a prompt or a summary mentions is
    acted on when a call opened, searched or ran it; in code the agent wrote, when two
    calls wrote it (one file that happens to hold ``getElementById`` is not work on it)."""

    def __init__(self, direct: Sequence[str], code: Sequence[str]) -> None:
        self._all = ContextIndex("\n".join([*direct, *code]), "")
        self._direct = ContextIndex("\n".join(direct), "")
        self._code_calls: Counter[str] = Counter()
        for text in code:
            self._code_calls.update({n.casefold() for n in _CODE_NAME.findall(text)})

    def uses(self, fact: Fact) -> bool:
        if not self._all.check(fact).kept:
            return False
        if fact.kind != "identifier" or self._direct.check(fact).kept:
            return True
        return self._code_calls[fact.text.casefold()] >= 2


def known_files(facts: Iterable[Fact]) -> list[str]:
    """The files of a session's facts, by their full paths (to find a folder's files)."""
    return [canon_path(f.text) for f in facts if f.kind == "path" and looks_like_file(f.text)]


# --- paraphrase: the words of a name ------------------------------------------------------------

# Words that name an action or a kind of thing in almost any code name: a summary that says
# "secondary emotions" conveys detect_secondary_emotions; "data" alone conveys nothing.
_GENERIC_WORDS = txt.wordset(
    "get set is has do make create update handle process compute calculate calc detect build run "
    "load save init new old data value values info item items list util utils helper helpers "
    "manager service test tests spec file files main index app config type types string str int "
    "num obj object id ids name names to of the for from with by on in at and or fn func impl "
    "add remove delete check validate parse format render show use"
)


# Measured on the tuning half of benchmarks/verdicts.py: with two words, 10 of 11 facts read as
# paraphrased were lost ("session state" for session_state.go); three keep only names a line
# spells out whole.
MIN_PARAPHRASE_WORDS = 3


@lru_cache(maxsize=65536)
def _content_words(name: str) -> frozenset[str]:
    words = [w for w in name_words(name) if w not in _GENERIC_WORDS and not w.isdigit()]
    return txt.rule_words(" ".join(words)) if words else frozenset()


def paraphrase_line(index: ContextIndex, name: str) -> str | None:
    """The line of the context that spells out a name's words in prose, if one does: all its
    content words, at least three of them (fewer, "session state" for ``session_state.go``,
    are too common to stand for a name).

    >>> paraphrase_line(ContextIndex("Added a retry budget for the upload queue."),
    ...                 "upload_queue_retry_budget")
    'Added a retry budget for the upload queue.'
    >>> paraphrase_line(ContextIndex("Fixed the data path."), "process_data") is None
    True
    """
    stem = name.rsplit("/", 1)[-1].split(".", 1)[0]
    words = _content_words(stem)
    if len(words) < MIN_PARAPHRASE_WORDS:
        return None
    return index.line_with_words(words)


# --- the verdict of one fact ---------------------------------------------------------------------


@dataclass(frozen=True)
class Checked:
    verdict: Verdict
    evidence: str


def verdict_of(
    fact: Fact,
    index: ContextIndex,
    *,
    acted: ActedIndex | None,
    files: Sequence[str] = (),
    root: str | None = None,
    harness: str | None = None,
) -> Checked:
    """The verdict of one fact against a compacted context's ``index``.

    ``acted`` indexes the tool calls of the context before the compaction (None: every
    candidate counts as acted on, as for a generated history); ``files`` are the session's
    files by full path, so a folder is kept when the context names a file inside it.
    """
    if fact.kind == "path" and is_reloaded(fact.text, harness):
        return Checked("reloaded", "the harness loads it again by itself after compacting")
    if (
        acted is not None
        and fact.origin != "tool"
        and fact.kind in ("path", "identifier")
        and not acted.uses(fact)
    ):
        where = "an earlier summary" if fact.origin == "summary" else "a prompt"
        return Checked("mentioned", f"named in {where}, never used by a tool call since")
    if fact.kind == "identifier" and " " in fact.text:  # a command's core: its words in order
        line = index.phrase_line(fact.text)
        if line is not None:
            return Checked("kept", line)
        return Checked("lost", f"no line runs {fact.text}")
    found = index.check(fact, root=root)
    if found.kept:
        return Checked("kept", found.evidence)
    if fact.kind == "path" and not looks_like_file(fact.text):
        inside = _file_inside(index, canon_path(fact.text), files)
        if inside is not None:
            return Checked("kept", inside)
    elif fact.kind == "path":
        alone = _only_file_of_its_name(index, canon_path(fact.text), files)
        if alone is not None:
            return Checked("kept", alone)
    if fact.kind in ("path", "identifier"):
        line = paraphrase_line(index, fact.text)
        if line is not None:
            return Checked("paraphrased", line)
    if fact.kind == "path" and (command := _COMMAND_FILE.search(canon_path(fact.text))):
        named = index.check_name(command.group(1))
        if named.kept:  # Claude Code's custom command file, by the command's name
            return Checked("kept", named.evidence)
    if fact.kind == "path":
        package = dependency_of(fact.text)
        if package is not None and (named := index.check_name(package)).kept:
            return Checked("paraphrased", named.evidence)
    return Checked("lost", found.evidence)


# A custom slash command of Claude Code is a file named after it: /deep-research is
# .claude/commands/deep-research.md. Names of six characters or more only.
_COMMAND_FILE = re.compile(r"(?:^|/)\.claude/commands/([a-z0-9][a-z0-9_-]{5,})\.md$")
# Where package managers unpack dependencies: a file read there is the library's, and a summary
# that names the library conveys it.
_DEPENDENCY_DIRS = ("node_modules/", "site-packages/", ".cargo/registry/src/", "pkg/mod/")


def dependency_of(path: str) -> str | None:
    """The package a dependency's file belongs to, if ``path`` is one.

    >>> dependency_of("/app/node_modules/@ark-ui/react/dist/index.d.ts")
    '@ark-ui/react'
    >>> dependency_of("/u/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/tauri-2.10.2/x.rs")
    'tauri'
    >>> dependency_of("/venv/lib/python3.11/site-packages/httpx/_client.py")
    'httpx'
    >>> dependency_of("lib/b.py") is None
    True
    """
    for where in _DEPENDENCY_DIRS:
        at = path.rfind(where)
        if at < 0:
            continue
        parts = path[at + len(where) :].split("/")
        if where.startswith(".cargo"):
            parts = parts[1:]  # the registry's index folder
        if len(parts) < 2 or not parts[0]:
            return None
        if parts[0].startswith("@"):
            return f"{parts[0]}/{parts[1]}"
        name = parts[0].split("@", 1)[0]
        cut = re.search(r"-\d", name) if where.startswith(".cargo") else None
        return name[: cut.start()] if cut else name
    return None


def _file_inside(index: ContextIndex, folder: str, files: Sequence[str]) -> str | None:
    """The line naming a file the session used inside ``folder`` (``migrations/`` is kept by
    "001_init.sql"), if any."""
    prefix = folder.strip("/") + "/"
    for path in files:
        at = path.find(prefix)
        if at < 0 or (at > 0 and path[at - 1] != "/"):
            continue
        found = index.check_path(path)
        if found.kept:
            return found.evidence
    return None


def _only_file_of_its_name(index: ContextIndex, path: str, files: Sequence[str]) -> str | None:
    """The line naming ``path`` by its bare name ("package.json", "index.js") when it is the
    only file of that name the session used: a name too common to stand for a file in
    general stands for the one this session had."""
    name = path.rsplit("/", 1)[-1]
    if "/" not in path or sum(1 for f in set(files) if f.rsplit("/", 1)[-1] == name) != 1:
        return None
    return index.line_naming(name)


# --- needed again ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Action:
    seq: int
    how: How  # what using a fact through this call shows: reread, reedit or rerun
    paths: tuple[str, ...]
    text: str
    failed: bool


def _command_how(command: str) -> How:
    words = command.strip().split()
    return "reread" if words and words[0].rsplit("/", 1)[-1] in READ_COMMANDS else "rerun"


def _failed_ids(messages: Sequence[Message]) -> set[str]:
    """The ids of the calls whose result, in ``messages``, reports an error."""
    return {
        b.tool_use_id
        for m in messages
        if m.role == "user"
        for b in m.content
        if isinstance(b, ToolResultBlock) and b.is_error
    }


def _actions(later: Sequence[Message]) -> list[_Action]:
    failed = _failed_ids(later)
    out: list[_Action] = []
    for m in later:
        if m.role != "assistant":
            continue
        for use in m.tool_uses():
            done = file_actions(use)
            command = use.input.get("command")
            if any(a == "edit" for a, _ in done):
                how: How = "reedit"
            elif isinstance(command, str) and not done:
                how = _command_how(command)
            elif done:
                how = "reread"
            else:
                continue  # a subagent's prompt, an issue tracker's text: no use of the fact here
            paths = tuple(canon_path(p) for _, p in done)
            out.append(_Action(m.seq, how, paths, block_text(use).casefold(), use.id in failed))
    return out


def _failed_calls(messages: Sequence[Message]) -> frozenset[str]:
    """The text of each call of ``messages`` whose result failed (only those are read)."""
    failed = _failed_ids(messages)
    if not failed:
        return frozenset()
    return frozenset(
        block_text(use).casefold()
        for m in messages
        if m.role == "assistant"
        for use in m.tool_uses()
        if use.id in failed
    )


def _same_file(a: str, b: str) -> bool:
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _file_use(
    path: str, actions: Sequence[_Action], failed_before: frozenset[str]
) -> NeededAgain | None:
    canon = canon_path(path)
    name = canon.rsplit("/", 1)[-1]
    for i, action in enumerate(actions):
        named = any(_same_file(p, canon) for p in action.paths) or (
            not action.paths and (canon in action.text or ("." in name and name in action.text))
        )
        if not named:
            continue
        if action.failed and action.text in failed_before:
            return NeededAgain(action.seq, "error_again")  # the same call failed the same way
        if action.how == "reread":
            # Claude Code refuses an edit of a file not read in this context: a read right
            # before an edit of the same file is forced, and the edit is what shows the need
            for after in actions[i + 1 : i + 4]:
                if after.how == "reedit" and any(_same_file(p, canon) for p in after.paths):
                    return NeededAgain(after.seq, "reedit")
        return NeededAgain(action.seq, action.how)
    return None


def _name_use(name: str, actions: Sequence[_Action]) -> NeededAgain | None:
    """The first call that looks the name up again or runs it: a search, a read, a command.
    Code the agent writes with it shows it still knew the name, not that it had to find it."""
    pattern = re.compile(r"(?<![\w-])" + re.escape(name.casefold()) + r"(?![\w-])")
    for action in actions:
        if action.how == "reedit":
            continue
        if name.casefold() in action.text and pattern.search(action.text):
            return NeededAgain(action.seq, action.how)
    return None


def _repeated(rule: str, prompts: Sequence[tuple[int, str]]) -> NeededAgain | None:
    words = txt.rule_words(rule) - {txt.RULE_NOT}
    if not words:
        return None
    need = len(words) if len(words) <= 2 else int(txt.RULE_COVER * len(words) + 0.5)
    for seq, prose in prompts:
        for sentence in txt.sentences(prose):
            if len(words & txt.rule_words(sentence)) >= need:
                return NeededAgain(seq, "repeated_by_user")
    return None


def needed_again(
    facts: Sequence[Fact], later: Sequence[Message], earlier: Sequence[Message] = ()
) -> list[NeededAgain | None]:
    """For each (lost) fact, the first call or prompt after the boundary that needed it, up to
    the next compaction (``later``: the messages after the boundary until then). Reads and
    files the harness attaches itself are user messages, not the agent's calls: they do not
    count. A call that fails again as it failed in ``earlier`` (the context before the
    boundary) is the same error come back.

    >>> from compaction.engine.messages import ToolUseBlock
    >>> later = [Message(9, "assistant", (ToolUseBlock("t", "Read", {"file_path": "/p/a.py"}),))]
    >>> needed_again([Fact("path", "/p/a.py"), Fact("path", "b.py")], later)
    [NeededAgain(seq=9, how='reread'), None]
    """
    actions = _actions(later)
    failed_before = _failed_calls(earlier) if any(a.failed for a in actions) else frozenset()
    prompts = [
        (m.seq, prose) for m in later if (prose := prompt_prose(m)) and not is_summary(prose)
    ]
    out: list[NeededAgain | None] = []
    for fact in facts:
        if fact.kind == "path":
            out.append(_file_use(fact.text, actions, failed_before))
        elif fact.kind == "identifier":
            out.append(_name_use(fact.text, actions))
        else:
            out.append(_repeated(fact.text, prompts))
    return out
