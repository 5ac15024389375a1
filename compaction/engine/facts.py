"""Facts a compaction must keep, extracted once per message.

Facts: the task (the first real prompt), the rules the user stated, files read or edited
successfully, and identifiers that matter (ticket and task ids, branch names, error codes, code
names). Not facts: directories, ``.``, failed reads, temp paths, and harness records that Claude
Code writes as user messages (``<task-notification>``, ``<system-reminder>``, command output).

How they are checked: :mod:`compaction.engine.fact_index`.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Literal, TypedDict

from compaction.engine import text as txt
from compaction.engine.harness import strip_harness_records
from compaction.engine.memo import digest_lru
from compaction.engine.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    is_prompt,
)
from compaction.engine.summarizers import _PATH_KEYS as PATH_KEYS
from compaction.engine.summarizers import SUMMARY_HEADER, file_actions, patch_paths
from privacy.detect import secrets

FactKind = Literal["probe", "task", "constraint", "decision", "path", "identifier"]
# Where a fact was found: a tool call of the agent (it acted on it), what the user said, an
# earlier compaction's summary (an account of finished work unless acted on since), or a
# command the agent ran (a fact once it ran it twice: the session relies on it).
FactOrigin = Literal["tool", "said", "summary", "command"]


class FactDict(TypedDict):
    """``Fact.to_dict()``."""

    kind: FactKind
    text: str
    seq: int | None


RULE_KINDS = frozenset({"probe", "task", "constraint", "decision"})
MAX_NAME = 400  # characters: longer than any path or code name worth remembering


@dataclass(frozen=True)
class Fact:
    """Something the agent must still know after a compaction."""

    kind: FactKind
    text: str
    seq: int | None = None
    origin: FactOrigin = "said"

    def to_dict(self) -> FactDict:
        return {"kind": self.kind, "text": self.text, "seq": self.seq}


# --- harness records ---------------------------------------------------------------------------

_HARNESS_PREFIXES = (
    "[request interrupted by user",
    "caveat: the messages below were generated",
    "read the output file to retrieve the result",
    "full transcript available at:",  # after a background agent's task-notification
)
# Prompts the harness writes around text the agent wrote: Claude Code sends the plan the
# agent drafted in plan mode, once approved, as "Implement the following plan:". Its lines
# describe the design ("recovery never derives IPNS names"); they are no rules the user set,
# and the harness keeps the plan file itself.
_AGENT_WRITTEN_PROMPTS = ("implement the following plan:",)
# Summaries spliced in by a compaction: a source of rules and files, never the task.
_SUMMARY_PREFIXES = (
    "this session is being continued from a previous conversation",
    SUMMARY_HEADER.casefold(),
)


def prompt_prose(message: Message) -> str:
    """What the user wrote in a prompt: text blocks without harness records ("" for a record).

    >>> prompt_prose(Message(4, "user", (TextBlock(
    ...     "<task-notification><output-file>/tmp/x.output</output-file></task-notification>\\n"
    ...     "Read the output file to retrieve the result: /tmp/x.output"),)))
    ''
    """
    if not is_prompt(message):
        return ""
    raw = "\n".join(b.text for b in message.content if isinstance(b, TextBlock))
    if raw.lstrip()[:40].casefold().startswith(_CODEX_MEMORY):
        return ""  # Codex's AGENTS.md, which it puts back itself after compacting
    if "<" in raw:
        raw = strip_harness_records(raw)
    lines = [
        line
        for line in raw.splitlines()
        if not line.strip().casefold().startswith(_HARNESS_PREFIXES)
    ]
    return "\n".join(lines).strip()


_CODEX_MEMORY = "# agents.md instructions for"
# What a trace's uploader left where a value was (Entire CLI's redaction): a name cut out.
REDACTED = "REDACTED"
# Instructions a launcher puts before the user's words (Conductor's <system_instruction>):
# rules the agent was given, but not the task the user asked for.
_LAUNCHER_TAGS = ("system_instruction", "system-instruction")


def _asked(prose: str) -> str:
    r"""``prose`` without a launcher's instruction elements: where the user's request is.

    >>> _asked("<system_instruction>You are in Conductor.</system_instruction>\nFix the bug.")
    '\nFix the bug.'
    """
    for tag in _LAUNCHER_TAGS:
        opening, closing = f"<{tag}>", f"</{tag}>"
        if opening not in prose:
            continue
        parts, at = [], 0  # one pass: each element cut once (linear in the text)
        while (start := prose.find(opening, at)) >= 0:
            parts.append(prose[at:start])
            end = prose.find(closing, start)
            at = len(prose) if end < 0 else end + len(closing)
        parts.append(prose[at:])
        prose = "".join(parts)
    return prose


def is_summary(prose: str) -> bool:
    return prose[:200].casefold().lstrip().startswith(_SUMMARY_PREFIXES)


# --- what is pasted, not said -------------------------------------------------------------------

# A fenced block runs to its closing fence, or to the end of the text when it has none.
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[^\n]*\n.*?(?:^[ \t]*\1[ \t]*$|\Z)", re.M | re.S)
# A log or diagnostic line: a [Tag] prefix, a timestamp, a level, a stack frame.
_LOG_LINE = re.compile(
    r"^[ \t]*(?:\[[A-Za-z][\w .:/-]{0,40}\]|\d{4}-\d\d-\d\d[ T]\d\d:\d\d|"
    r"(?:ERROR|WARN(?:ING)?|INFO|DEBUG|TRACE|FATAL)\b|at [\w.$<>]+\(|File \"|Traceback \()"
    r".*$",
    re.M,
)
_TABLE_ROW = re.compile(r"^[ \t]*\|.*\|[ \t]*$", re.M)
# An indented line that reads as code (not a nested bullet of a list).
_CODE_LINE = re.compile(r"^(?: {4}|\t)[ \t]*+(?![-*+•]\s|\d+[.)]\s)(?=.*[{};=()<>]).*$", re.M)
# Each alternative stops at the first character that cannot be inside it, so a long run of
# openers without a closer is scanned once, not once per opener (linear on hostile text).
_LATEX = re.compile(
    r"\$\$[^$]{0,5000}\$\$|\\\[[^\[\]]{0,5000}\\\]|\$[^$\n]{1,300}\$|"
    r"\\(?:begin|end)\{[^{}\\]{0,40}\}|\\[A-Za-z]+(?:\{[^{}\\]{0,200}\})*",
)
_PLACEHOLDER = re.compile(r"<[A-Za-z][\w-]*>")
_ESCAPE = re.compile(r"\\[ntr]")


@digest_lru(4096)
def said(prose: str) -> str:
    r"""What a person wrote, without what is pasted into it as a document: fenced and indented
    code, log lines, tables, LaTeX, ``<placeholder>`` tokens (escapes such as ``\n`` split
    the words they glue). Facts come from what is said; a pasted listing is material.

    >>> said("Fix the parser.\n```go\nheadErr := x\n```\n[Cache] listAll failed\nThanks")
    'Fix the parser.\n\n\nThanks'
    """
    text = _FENCE.sub("", prose) if "```" in prose or "~~~" in prose else prose
    text = _LOG_LINE.sub("", text)
    text = _TABLE_ROW.sub("", text) if "|" in text else text
    text = _CODE_LINE.sub("", text)
    text = _LATEX.sub(" ", text) if "$" in text or "\\" in text else text
    text = _PLACEHOLDER.sub(" ", text) if "<" in text else text
    return _ESCAPE.sub(" ", text) if "\\" in text else text


# --- paths ---------------------------------------------------------------------------------------

_TEMP_PREFIXES = (
    "/tmp/",  # noqa: S108 - recognising temp paths, not creating one
    "/var/tmp/",  # noqa: S108
    "/private/tmp/",
    "/private/var/folders/",
    "/var/folders/",
    "/dev/",
    "/proc/",
    "/sys/",
)
_EXTENSIONLESS_FILES = frozenset(
    [
        "makefile",
        "dockerfile",
        "procfile",
        "gemfile",
        "rakefile",
        "justfile",
        "vagrantfile",
        "brewfile",
        "license",
        "readme",
        "codeowners",
        "jenkinsfile",
    ]
)


@lru_cache(maxsize=65536)
def is_temp_path(path: str) -> bool:
    p = path.strip()
    return p.startswith(_TEMP_PREFIXES) or "/.cache/" in p or p.startswith("~/.cache/")


@lru_cache(maxsize=65536)
def looks_like_file(path: str) -> bool:
    """A path whose last part is a file name, not a folder or ``.``.

    >>> [looks_like_file(p) for p in ("lib/a.ex", "lib", ".", "lib/", "Makefile", ".env")]
    [True, False, False, False, True, True]
    """
    if not path or path.endswith("/"):
        return False
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if name in ("", ".", ".."):
        return False
    if name.startswith("."):
        return len(name) > 1 and "/" not in name
    return "." in name.strip(".") or name.casefold() in _EXTENSIONLESS_FILES


@lru_cache(maxsize=65536)
def canon_path(path: str) -> str:
    p = path.strip().casefold()
    while p.startswith(("./", "~/")):
        p = p[2:]
    return p.strip("/")


# --- identifiers ---------------------------------------------------------------------------------

# Task ids without a digit (``proj-abc``, ``spotter-gqc``, ``spotter-gqc.6``): a lower-case
# word, a hyphen and a short code that is not an English word of a compound.
_TASK_ID = re.compile(r"(?<![\w./-])([a-z][a-z0-9]{1,20}-[a-z0-9]{2,8}(?:\.\d+)*)(?![\w/-])")


_COMPOUND_TAILS = txt.wordset(
    "in on up out off run end all set way to by of and or new old use the one two fix ups ins "
    "ons bit box key run based safe side time like free aware only wide less tier site line "
    "case mode type back down over load file term step word offs item items sent made"
)
# "branch fix-rounding", "na branch `feature/x`", "git checkout -b feature/x": a word after
# "branch" is a branch only when it looks like one (a slash, dash, underscore or digit, or
# quoted), not "branch com a main" or "branch that".
_BRANCH = re.compile(
    r"\bbranch(?:es)?[,:]?[ \t]+(?:named[ \t]+|called[ \t]+)?(?:[`'\"]([\w][\w./-]{2,})[`'\"]|"
    r"([\w][\w.]*[/_-][\w./-]+|(?=[\w./-]*[A-Za-z])[\w]*\d[\w./-]*))|"
    r"\bgit\s+(?:checkout\s+-[bB]|switch\s+-c|switch|push\s+(?:-u\s+)?\w+)\s+([\w][\w./-]{2,})",
    re.I,
)
_NOISE_IDENTIFIERS = frozenset(
    n.casefold()
    for n in txt.wordset(
        "JavaScript TypeScript GitHub GitLab PostgreSQL MySQL SQLite LiveView OpenTelemetry "
        "macOS iOS iPhone iPad YouTube LinkedIn ChatGPT OpenAI PyPI NumPy FastAPI NodeJS "
        "WebSocket DevTools VSCode PowerShell GraphQL MongoDB DynamoDB CloudFlare DigitalOcean"
        # the harness's own tools: naming one is how the agent works, not what it works on
        " ExitPlanMode EnterPlanMode TodoWrite TodoRead TaskWrite TaskCreate TaskUpdate TaskList"
        " TaskOutput AskUserQuestion WebFetch WebSearch NotebookEdit MultiEdit BashOutput"
        " KillShell KillBash SlashCommand"
    )
)
_URL = re.compile(r"\b\w+://\S+")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")  # personal data, not an id to keep
_VERSION = re.compile(r"^[vV]\d+$")  # "API v2" names a version, not a thing to remember


def find_task_ids(text: str) -> list[str]:
    """Hyphenated task and ticket ids, with or without a digit.

    >>> find_task_ids("Do spotter-gqc, proj-abc and spotter-4te.3; a well-known pre-commit")
    ['spotter-gqc', 'proj-abc', 'spotter-4te.3']
    """
    out: list[str] = []
    for m in _TASK_ID.finditer(text):
        ident = m.group(1)
        tail = ident.split("-", 1)[1].split(".", 1)[0]
        has_digit = any(c.isdigit() for c in tail)
        if tail in _COMPOUND_TAILS or (not has_digit and len(tail) > 4):
            continue
        out.append(ident)
    return list(dict.fromkeys(out))


def find_identifiers(prose: str) -> list[str]:
    """Identifiers of a prompt: code names, ticket and task ids, branch names; not the pieces
    of a path, URL or e-mail address (``claude-1000`` in ``/tmp/claude-1000/x``).

    >>> find_identifiers("Fix BILL-42 in billing/charge_v2.py on branch fix-rounding: spotter-gqc")
    ['BILL-42', 'fix-rounding', 'spotter-gqc']
    """
    without_urls = _EMAIL.sub(" ", _URL.sub(" ", prose))
    branches = [
        (m.group(1) or m.group(2) or m.group(3)).rstrip(".,;:")
        for m in _BRANCH.finditer(without_urls)
    ]
    bare = txt.PATH_PATTERN.sub(" ", without_urls)
    found = [*txt.find_identifiers(bare), *branches, *find_task_ids(bare)]
    out: dict[str, None] = {}
    for ident in found:
        if ident.casefold() not in _NOISE_IDENTIFIERS and not _VERSION.match(ident):
            out.setdefault(ident, None)
    return list(out)


# --- commands ------------------------------------------------------------------------------------

# Commands that only look (a listing, a read, a search, the state of git): how the agent finds
# its way, not something the session needs to remember.
READ_COMMANDS = txt.wordset(
    "cat head tail less more sed awk grep rg ag wc ls find bat nl file stat diff"
)  # they read a file: using one after a compaction re-reads it (verdicts.needed_again)
_LOOKING = READ_COMMANDS | txt.wordset(
    "echo printf pwd which whoami sleep true false cd tree sort uniq cut jq date env type test "
    "for while if do then gh curl open kill ps lsof"
)
_CHECK_STEPS = txt.wordset(
    "test tests build lint check fmt format compile dev start serve deploy migrate vet typecheck "
    "bench run exec up restart"
)
_CHECK_TOOLS = txt.wordset("pytest xcodebuild tsc jest vitest eslint ruff mypy playwright")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SEGMENTS = re.compile(r"&&|\|\||;|\|")


def command_core(command: str) -> str:
    """The words that name what a shell command runs: its first real step, without ``cd``,
    variables, redirections, pipes or options past the first two words ("" for a command that
    only looks around).

    >>> command_core("cd /p && FOO=1 mise run test 2>&1 | tail -30")
    'mise run test'
    >>> command_core("go test -run TestFormat ./cmd/"), command_core("git commit -m x")
    ('go test', '')
    >>> command_core("xcodebuild build -scheme FitToday"), command_core("gh pr view 12")
    ('xcodebuild build', '')
    """
    first = command.strip().split("\n", 1)[0][:500]
    for segment in _SEGMENTS.split(first):
        words = [w for w in segment.split() if not _ASSIGNMENT.match(w)]
        if not words or words[0] in ("cd", "export", "source", "set", "."):
            continue
        program = words[0].rsplit("/", 1)[-1]
        if program in _LOOKING or program == "git":
            return ""  # git's own steps (status, add, commit) are how work is saved, not facts
        core = [program]
        for word in words[1:3]:
            if word.startswith(("-", ">", "<", "2>", "&")) or "/" in word or "=" in word:
                break
            core.append(word)
        # how the session builds, tests, checks or runs its work ("mise run test", "go vet"),
        # not a look around ("gh pr view") or a shell loop; one word ("node") names a tool
        if len(core) < 2 or not (_CHECK_STEPS & set(core[1:]) or program in _CHECK_TOOLS):
            return ""
        return " ".join(core)
    return ""


# --- extraction, once per message ---------------------------------------------------------------

_FAILED_MARKERS = re.compile(
    r"file does not exist|no such file or directory|<tool_use_error>|\beisdir\b|is a directory|"
    r"\benoent\b|path does not exist",
    re.IGNORECASE,
)
_FAILED_SCREEN = re.compile(
    r"xist|XIST|uch file|UCH FILE|tool_use_error|irector|IRECTOR|EISDIR|ENOENT"
)
_PATH_KEY_SET = frozenset(PATH_KEYS)


@lru_cache(maxsize=1024)
def _is_search(tool_name: str) -> bool:
    name = tool_name.casefold()
    return any(w in name for w in _SEARCH_WORDS)


_SEARCH_WORDS = ("grep", "glob", "search", "find", "list", "ls")


@dataclass(frozen=True)
class MessageFacts:
    """What one message contributes: rules and names of a prompt, candidate paths of tool
    calls (kept only if their result did not fail), tool calls its results report failed."""

    task: Fact | None = None
    facts: tuple[Fact, ...] = ()
    uses: tuple[tuple[str, Fact], ...] = ()
    failed: frozenset[str] = frozenset()
    answered: tuple[str, ...] = ()
    # the user stopped the agent here (an interruption, a refused tool call): what they say
    # next, or said when refusing, is a decision
    interrupted: bool = False
    decisions: tuple[Fact, ...] = ()


_NO_FACTS = MessageFacts()


def _first_sentence(prose: str, limit: int = 240) -> str:
    parts = txt.sentences(prose)
    if not parts:
        return ""
    task = parts[0]
    if len(task.split()) < 2 and len(parts) > 1:
        task = f"{task} {parts[1]}"
    return task if len(task) <= limit else txt.clip(task, limit)


# Not files: an import alias (``@/lib/api/errors``), a module path under a host
# (``github.com/go-git/go-git/v5/plumbing``), members written as alternatives
# (``.onMove/.onDelete``).
_NOT_A_FILE = re.compile(r"^(?:[@#]/|[a-z0-9-]+\.(?:com|org|io|net|dev|in)/|\.[A-Za-z]\w*/\.)")


def _prompt_path_ok(path: str) -> bool:
    if is_temp_path(path) or path.strip("./") == "" or _NOT_A_FILE.match(path):
        return False
    if path.endswith("/") or looks_like_file(path):
        return True
    # "and/or", "input/output": a bare pair of words is not a folder
    return path.startswith(("/", "~", "./")) or path.count("/") >= 2


# A folder written with its trailing slash ("only touch lib/ and priv/").
_FOLDER = re.compile(
    rf"(?<![@/.:+-])(?<!{txt.W})(?:~/|\./|/)?(?:(?:{txt.W}|[.@+-])+/)+(?=[\s,;:)'\"`]|$)"
)


def _prompt_paths(prose: str) -> list[str]:
    """Paths and folders of a prompt, a folder keeping the slash it was written with."""
    found = [
        p + "/" if f"{p}/" in prose and not looks_like_file(p) else p for p in txt.find_paths(prose)
    ]
    found += [m.group(0) for m in _FOLDER.finditer(prose)]
    return list(dict.fromkeys(found))


def _without_secrets(prose: str) -> str:
    """The prose with each secret blanked: a key or a password is never a fact to keep (a
    piece of it, "the identifier Vq3s…", would be shown where no masker knows it).

    >>> _without_secrets("use DB_PASSWORD=Fg7kQz92Lm now")
    'use DB_PASSWORD=  now'
    """
    found = secrets.find(prose)
    if not found:
        return prose
    parts: list[str] = []
    at = 0
    for secret in found:
        parts += [prose[at : secret.start], " "]
        at = secret.end
    parts.append(prose[at:])
    return "".join(parts)


@digest_lru(4096)  # prose can be long: a long one is keyed by its digest, not kept
def _prose_facts(prose: str) -> tuple[tuple[FactKind, str], ...]:
    prose = _without_secrets(said(prose))
    out: list[tuple[FactKind, str]] = []
    out += [("constraint", s) for s in txt.constraint_sentences(prose)]
    out += [("path", p) for p in _prompt_paths(prose) if _prompt_path_ok(p)]
    out += [("identifier", i) for i in find_identifiers(prose)]
    return tuple(out)


# A summary's heading or line that reports what the user asked or set, in the languages the
# summaries of this product's users are written in; rules are drawn from those lines only.
_USER_LINE = re.compile(
    r"\b(?:users?|user's|request(?:ed|s)?|intent|instructions?|constraints?|requirements?|"
    r"feedback|preferences?|asked|insist(?:ed|s)?|usu[aá]rios?|pedido|pediu|solicit\w*|"
    r"restri[cç]\w*|regras?)\b|用户|要求|约束|指示",
    re.IGNORECASE,
)
_HEADING = re.compile(
    r"^\s*(?:#{1,6}\s|\d{1,2}[.)]\s|\*\*[^*\n]{1,80}\*\*:?\s*$|[A-Z][^\n]{0,60}:\s*$)"
)


def _instruction_lines(prose: str) -> str:
    """The lines of a summary that report the user's words: under a heading about the user's
    requests or messages ("All user messages:", "Primary Request and Intent"), or naming the
    user themselves. The rest recounts work, bugs and code, where "Always 0.7" describes a
    bug, not a rule.

    >>> _instruction_lines("## Errors\\n- Always 0.7\\n## All user messages\\n- never push")
    '- never push'
    """
    keep: list[str] = []
    under_user = False
    for line in prose.splitlines():
        if _HEADING.match(line):
            under_user = bool(_USER_LINE.search(line))
            continue
        if under_user or _USER_LINE.search(line):
            keep.append(line)
    return "\n".join(keep)


@digest_lru(1024)
def _summary_facts(prose: str) -> tuple[tuple[FactKind, str], ...]:
    """What a previous compaction's summary hands on: the rules it reports the user set, the
    files and the names it mentions, not its folders (``Presentation/DI/``): those describe
    where finished steps happened, and a new summary that leaves them out loses nothing a user
    asked for. Files and names are checked as facts only when the agent acted on them since."""
    rules: tuple[tuple[FactKind, str], ...] = tuple(
        ("constraint", r) for k, r in _prose_facts(_instruction_lines(prose)) if k == "constraint"
    )
    return rules + tuple(
        (kind, text)
        for kind, text in _prose_facts(prose)
        if (kind == "path" and looks_like_file(text)) or kind == "identifier"
    )


_INTERRUPTED = "[request interrupted by user"
# Claude Code's words when the user refuses a tool call and says what to do instead
_REFUSAL = "to tell you how to proceed, the user said:"


def _refusal_words(block: ToolResultBlock) -> str:
    """What the user said when refusing a tool call ("" when the result is not a refusal)."""
    text = block.text
    at = text[:400].casefold().find(_REFUSAL)
    if at < 0:
        return ""
    words = _first_sentence(said(text[at + len(_REFUSAL) :].strip()))
    return "" if words.casefold().startswith(_NOT_SAID) else words


# what the harness writes in the user's place ("The user wants to clarify these questions.")
_NOT_SAID = ("the user wants to", "the user doesn't want")


def _is_decision(text: str) -> bool:
    """A question back ("do the reads follow that pattern?") decides nothing."""
    return bool(text) and not text.rstrip().endswith("?")


def _result_failed(block: ToolResultBlock) -> bool:
    if block.is_error:
        return True
    content = block.content
    head = content[:300] if isinstance(content, str) else block.text[:300]
    # cheap screen first: most results name none of the markers' key words
    if _FAILED_SCREEN.search(head) is None:
        return False
    return _FAILED_MARKERS.search(head) is not None


def message_facts(message: Message) -> MessageFacts:
    """The facts one message contributes (pure; cache it with :class:`FactCache`)."""
    if message.role == "assistant":
        uses: list[tuple[str, Fact]] = []
        for use in message.tool_uses():
            command = use.input.get("command")
            patched = patch_paths(use)
            if isinstance(command, str) and _PATH_KEY_SET.isdisjoint(use.input) and not patched:
                core = command_core(command)
                if core:
                    uses.append((use.id, Fact("identifier", core, message.seq, "command")))
                continue
            if _PATH_KEY_SET.isdisjoint(use.input) and not patched:
                continue  # a path only in a shell command is not a file read or edited
            for action, path in file_actions(use):
                if action == "use" or is_temp_path(path):
                    continue
                if not looks_like_file(path) and (
                    action == "read" or "/" not in path or _is_search(use.name)
                ):
                    continue  # a folder searched or listed, or ".", is not a file read
                uses.append((use.id, Fact("path", path, message.seq, "tool")))
        return MessageFacts(uses=tuple(uses)) if uses else _NO_FACTS
    if message.role != "user":
        return _NO_FACTS
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    interrupted = any(
        isinstance(b, TextBlock) and _INTERRUPTED in b.text[:200].casefold()
        for b in message.content
    )
    if results:  # a tool-result carrier: no prompt, maybe failed calls, maybe a refusal
        failed = frozenset(b.tool_use_id for b in results if _result_failed(b))
        decisions = tuple(
            Fact("decision", said_text, message.seq)
            for b in results
            if _is_decision(said_text := _refusal_words(b))
        )
        if not (failed or interrupted or decisions):
            return MessageFacts(answered=tuple(b.tool_use_id for b in results))
        return MessageFacts(
            failed=failed,
            answered=tuple(b.tool_use_id for b in results),
            interrupted=interrupted and not decisions,
            decisions=decisions,
        )
    prose = prompt_prose(message)
    if not prose:
        return MessageFacts(interrupted=True) if interrupted else _NO_FACTS
    summary = is_summary(prose)
    found = _summary_facts(prose) if summary else _prose_facts(prose)
    if not summary and prose[:100].casefold().lstrip().startswith(_AGENT_WRITTEN_PROMPTS):
        found = tuple((kind, text) for kind, text in found if kind != "constraint")
    origin: FactOrigin = "summary" if summary else "said"
    facts = tuple(Fact(kind, text, message.seq, origin) for kind, text in found)
    task = None if summary else Fact("task", _first_sentence(said(_asked(prose))), message.seq)
    return MessageFacts(
        task=task if task and task.text else None, facts=facts, interrupted=interrupted
    )


class FactCache:
    """Facts of each message object, computed once; hold one per session or replay.

    Like the replay's token cache it keeps a reference to each message so that its ``id`` is
    not reused, and it remembers every tool call reported failed, so a failed read stays
    failed after its result was cleared from the context.
    """

    def __init__(self) -> None:
        self._cache: dict[int, tuple[Message, MessageFacts]] = {}
        self.failed: set[str] = set()

    def of(self, message: Message) -> MessageFacts:
        hit = self._cache.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        facts = message_facts(message)
        self._cache[id(message)] = (message, facts)
        self.failed |= facts.failed
        return facts


@lru_cache(maxsize=65536)
def _path_keys(path: str) -> tuple[str, ...]:
    parts = [p for p in canon_path(path).split("/") if p]
    keys = tuple("/".join(parts[i:]) for i in range(len(parts)) if len(parts) - i >= 2)
    return keys or ("/".join(parts),)


class _Combined:
    """Facts of a history fed message by message, deduplicated, in order; a tool call's path
    is added when its result arrives and did not fail."""

    def __init__(self, failed: set[str]) -> None:
        self.failed = failed
        self.entries: list[tuple[int, Fact]] = []  # (seq it was settled at, fact)
        self.seen: set[tuple[str, str]] = set()
        self.path_seen: set[str] = set()
        self.pending: dict[str, Fact] = {}
        self.commands: dict[str, int] = {}  # successful runs of each command's core
        self.has_task = False
        self.interrupted = False

    def add(self, fact: Fact, at: int) -> None:
        if fact.kind in ("path", "identifier") and (
            len(fact.text) > MAX_NAME or REDACTED in fact.text
        ):
            return  # thousands of parts are no name; nor is what an uploader's redaction left
        if fact.kind == "path":
            keys = _path_keys(fact.text)
            if not keys[0] or canon_path(fact.text) in self.path_seen:
                return
            if any(k in self.path_seen for k in keys):
                return
            self.path_seen.update(keys)
        else:
            key = (fact.kind, txt.normalize(fact.text))
            if not key[1] or key in self.seen:
                return
            self.seen.add(key)
        self.entries.append((at, fact))

    def feed(self, seq: int, part: MessageFacts) -> None:
        # what the user writes after stopping the agent, in the same message or the next one
        after_stop = self.interrupted or part.interrupted
        if part.task is not None and self.has_task and after_stop and _is_decision(part.task.text):
            self.add(Fact("decision", part.task.text, part.task.seq), seq)
        if part.task is not None or part.decisions:
            self.interrupted = False
        elif part.interrupted:
            self.interrupted = True
        for fact in part.decisions:
            self.add(fact, seq)
        if part.task is not None and not self.has_task:
            self.has_task = True
            # a first sentence that is itself a rule is checked once, as the rule
            rules = [f.text for f in part.facts if f.kind == "constraint"]
            if not any(txt.same_rule(part.task.text, r) for r in rules):
                self.add(part.task, seq)
        for fact in part.facts:
            self.add(fact, seq)
        for tool_id, fact in part.uses:
            self.pending[tool_id] = fact
        for tool_id in part.answered:
            use = self.pending.pop(tool_id, None)
            if use is not None and tool_id not in self.failed:
                self._settle(use, seq)

    def _settle(self, use: Fact, seq: int) -> None:
        if use.origin != "command":
            self.add(use, seq)
            return
        runs = self.commands[use.text] = self.commands.get(use.text, 0) + 1
        if runs == 2:
            self.add(replace(use, origin="tool"), seq)

    def flush(self, seq: int) -> None:
        """Calls whose result has not arrived yet count as made (the result may be cut off)."""
        for tool_id, fact in list(self.pending.items()):
            if tool_id not in self.failed:
                self._settle(fact, seq)
        self.pending.clear()

    def snapshot(self, before_seq: int | None = None) -> list[Fact]:
        end = (
            len(self.entries)
            if before_seq is None
            else bisect.bisect_left(self.entries, before_seq, key=lambda e: e[0])
        )
        return _without_bare_names([f for _, f in self.entries[:end]])


def _without_bare_names(facts: list[Fact]) -> list[Fact]:
    """A bare file name ("invoices.py") said in a prompt is the file read under that name."""
    names = {
        canon_path(f.text).rsplit("/", 1)[-1]
        for f in facts
        if f.kind == "path" and "/" in canon_path(f.text)
    }
    if not names:
        return facts
    return [
        f
        for f in facts
        if f.kind != "path" or "/" in canon_path(f.text) or canon_path(f.text) not in names
    ]


def extract_facts(messages: Sequence[Message], *, cache: FactCache | None = None) -> list[Fact]:
    """The task, rules and identifiers the user stated, and files read or edited successfully.

    Each message is extracted once per ``cache``; a path named twice (absolute in a tool call,
    relative in a prompt) counts once.

    >>> [(f.kind, f.text[:16]) for f in extract_facts([Message(3, "user", (TextBlock(
    ...     "Migrate billing. Do not change the public API of billing/api.py."),))])]
    [('task', 'Migrate billing.'), ('constraint', 'Do not change th'), ('path', 'billing/api.py')]
    """
    cache = cache if cache is not None else FactCache()
    parts = [(m.seq, cache.of(m)) for m in messages]  # first, so every failure is known
    combined = _Combined(cache.failed)
    for seq, part in parts:
        combined.feed(seq, part)
    combined.flush(parts[-1][0] if parts else 0)
    return combined.snapshot()


class FactLedger:
    """Incremental extraction over a growing history: feed messages in order, read the facts
    before any seq. An analysis keeps one per session and snapshots it at each compaction
    (a binary search and a copy of the facts) instead of re-extracting every earlier message.
    """

    def __init__(self) -> None:
        self.cache = FactCache()
        self._combined = _Combined(self.cache.failed)

    def feed(self, messages: Iterable[Message]) -> None:
        for m in messages:
            self._combined.feed(m.seq, self.cache.of(m))

    def facts(self, *, before_seq: int | None = None) -> list[Fact]:
        return self._combined.snapshot(before_seq)
