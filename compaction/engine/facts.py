"""Facts a compaction must keep, extracted once per message, and a one-pass index of a
compacted context to check them against.

Facts: the task (the first real prompt), the rules the user stated, files read or edited
successfully, and identifiers that matter (ticket and task ids, branch names, error codes, code
names). Not facts: directories, ``.``, failed reads, temp paths, and harness records that Claude
Code writes as user messages (``<task-notification>``, ``<system-reminder>``, command output).

Matching: a :class:`ContextIndex` tokenizes the compacted context once; a path is kept when the
context names it by a path form, its distinctive file name, its module or class name
(``InvoiceListLive`` for ``invoice_list_live.ex``, ``Billing.Client`` for ``billing/client.py``),
or, for a folder, a file inside it; a rule is kept when one line holds most of its content words
with the same polarity ("do not" = "don't" = "never"), and is lost when that line reverses it
("it is fine to change the public API now").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from compaction.engine import text as txt
from compaction.engine.messages import (
    CompactionBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    block_text,
    is_prompt,
)
from compaction.engine.summarizers import _PATH_KEYS as PATH_KEYS
from compaction.engine.summarizers import SUMMARY_HEADER, file_actions

FactKind = Literal["probe", "task", "constraint", "path", "identifier"]
RULE_KINDS = frozenset({"probe", "task", "constraint"})


@dataclass(frozen=True)
class Fact:
    """Something the agent must still know after a compaction."""

    kind: FactKind
    text: str
    seq: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "seq": self.seq}


# --- harness records ---------------------------------------------------------------------------

HARNESS_TAGS = (
    "task-notification",
    "system-reminder",
    "command-name",
    "command-message",
    "command-args",
    "command-contents",
    "local-command-stdout",
    "local-command-stderr",
    "local-command-caveat",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "user-prompt-submit-hook",
    "user-memory-input",
)
_HARNESS_BLOCK = re.compile(
    r"<(" + "|".join(HARNESS_TAGS) + r")\b[^>]*>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE
)
_HARNESS_PREFIXES = (
    "[request interrupted by user",
    "caveat: the messages below were generated",
    "read the output file to retrieve the result",
)
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
    if "<" in raw:
        raw = _HARNESS_BLOCK.sub(" ", raw)
    lines = [
        line
        for line in raw.splitlines()
        if not line.strip().casefold().startswith(_HARNESS_PREFIXES)
    ]
    return "\n".join(lines).strip()


def is_summary(prose: str) -> bool:
    return prose[:200].casefold().lstrip().startswith(_SUMMARY_PREFIXES)


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
# File names too common to stand for one file on their own.
GENERIC_NAMES = frozenset(
    [
        "__init__.py",
        "__main__.py",
        "conftest.py",
        "setup.py",
        "settings.py",
        "models.py",
        "views.py",
        "urls.py",
        "utils.py",
        "main.py",
        "main.go",
        "main.rs",
        "lib.rs",
        "mod.rs",
        "index.js",
        "index.ts",
        "index.tsx",
        "index.html",
        "readme.md",
        "package.json",
        "cargo.toml",
        "pyproject.toml",
        "mix.exs",
        "config.exs",
        "test_helper.exs",
        "makefile",
        "dockerfile",
    ]
)
_GENERIC_STEMS = frozenset(n.rsplit(".", 1)[0] for n in GENERIC_NAMES) | {
    "index",
    "main",
    "mod",
    "lib",
    "app",
    "test",
    "tests",
    "config",
    "helpers",
    "types",
}


def is_temp_path(path: str) -> bool:
    p = path.strip()
    return p.startswith(_TEMP_PREFIXES) or "/.cache/" in p or p.startswith("~/.cache/")


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


def _canon_path(path: str) -> str:
    p = path.strip().casefold()
    while p.startswith(("./", "~/")):
        p = p[2:]
    return p.strip("/")


def path_forms(path: str) -> list[str]:
    """A path and the shorter spellings a summary may use for it: relative to the checkout,
    or the bare file name when that name is distinctive.

    >>> path_forms("/home/u/proj/lib/billing/api_client.py")
    ['/home/u/proj/lib/billing/api_client.py', 'lib/billing/api_client.py', \
'billing/api_client.py', 'api_client.py']
    >>> path_forms("src/billing/__init__.py")
    ['src/billing/__init__.py', 'billing/__init__.py']
    """
    return list(_path_forms(path))


@lru_cache(maxsize=65536)
def _path_forms(path: str) -> tuple[str, ...]:
    parts = [p for p in path.strip("/").split("/") if p]
    forms = [path]
    for n in (3, 2):
        if len(parts) > n:
            forms.append("/".join(parts[-n:]))
    name = parts[-1] if parts else ""
    dotfile = name.startswith(".") and len(name) > 4
    distinctive = "." in name.strip(".") or dotfile
    if len(parts) > 1 and distinctive and name.lower() not in GENERIC_NAMES:
        forms.append(name)
    return tuple(forms)


# Files that live at the top of a checkout: named alone, they mean the one at the top.
ROOT_FILES = frozenset(
    [
        "mix.exs",
        "package.json",
        "pyproject.toml",
        "cargo.toml",
        "go.mod",
        "gemfile",
        "makefile",
        "dockerfile",
        "readme.md",
        "setup.py",
        "docker-compose.yml",
    ]
)


def checkout_root(paths: Iterable[str]) -> str | None:
    """The folder every absolute path of a session is under (its checkout), if there are two.

    >>> checkout_root(["/p/app/lib/a.ex", "/p/app/mix.exs", "rel/x.py"])
    '/p/app'
    """
    dirs = [p.rsplit("/", 1)[0] for p in paths if p.startswith("/") and "/" in p[1:]]
    if len(dirs) < 2:
        return None
    parts = dirs[0].split("/")
    for d in dirs[1:]:
        other = d.split("/")
        n = 0
        while n < min(len(parts), len(other)) and parts[n] == other[n]:
            n += 1
        parts = parts[:n]
    root = "/".join(parts)
    return root if root.count("/") >= 2 else None


def _camel(snake: str) -> str:
    return snake.replace("_", "").replace("-", "")


def module_forms(path: str) -> list[str]:
    """Module and class spellings of a file, lower-cased: the multi-word stem in snake and
    camel case, and ``parent.stem`` (``Billing.Client``, ``Spotter.Transcripts.Message``).

    >>> module_forms("lib/invoices/invoice_list_live.ex")
    ['invoice_list_live', 'invoicelistlive', 'invoices.invoice_list_live', \
'invoices.invoicelistlive']
    >>> module_forms("billing/client.py")
    ['billing.client']
    """
    return list(_module_forms(path))


@lru_cache(maxsize=65536)
def _module_forms(path: str) -> tuple[str, ...]:
    parts = [p for p in _canon_path(path).split("/") if p]
    if not parts or not looks_like_file(parts[-1]) or parts[-1].startswith("."):
        return ()
    stem = parts[-1].split(".", 1)[0]
    if not stem or parts[-1] in GENERIC_NAMES:
        return ()
    forms: list[str] = []
    multiword = ("_" in stem.strip("_") or "-" in stem) and stem not in _GENERIC_STEMS
    if multiword:
        forms += [stem, _camel(stem)]
    if len(parts) > 1:
        parent = parts[-2]
        forms += [f"{parent}.{stem}", f"{_camel(parent)}.{_camel(stem)}"]
    return tuple(dict.fromkeys(forms))


# --- identifiers ---------------------------------------------------------------------------------

# Task ids without a digit (``proj-abc``, ``spotter-gqc``, ``spotter-gqc.6``): a lower-case
# word, a hyphen and a short code that is not an English word of a compound.
_TASK_ID = re.compile(r"(?<![\w./-])([a-z][a-z0-9]{1,20}-[a-z0-9]{2,8}(?:\.\d+)*)(?![\w/-])")


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


_COMPOUND_TAILS = _wordset(
    "in on up out off run end all set way to by of and or new old use the one two fix ups ins "
    "ons bit box key run based safe side time like free aware only wide less tier site line "
    "case mode type back down over load file term step word"
)
_BRANCH = re.compile(r"\bbranch(?:es)?\s+(?:named\s+|called\s+)?[`'\"]?([\w][\w./-]{2,})", re.I)
_NOISE_IDENTIFIERS = frozenset(
    n.casefold()
    for n in _wordset(
        "JavaScript TypeScript GitHub GitLab PostgreSQL MySQL SQLite LiveView OpenTelemetry "
        "macOS iOS iPhone iPad YouTube LinkedIn ChatGPT OpenAI PyPI NumPy FastAPI NodeJS "
        "WebSocket DevTools VSCode PowerShell GraphQL MongoDB DynamoDB CloudFlare DigitalOcean"
    )
)
_URL = re.compile(r"\b\w+://\S+")
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
    of a path or URL (``claude-1000`` in ``/tmp/claude-1000/x``).

    >>> find_identifiers("Fix BILL-42 in billing/charge_v2.py on branch fix-rounding: spotter-gqc")
    ['BILL-42', 'fix-rounding', 'spotter-gqc']
    """
    without_urls = _URL.sub(" ", prose)
    branches = [m.group(1).rstrip(".,;:") for m in _BRANCH.finditer(without_urls)]
    bare = txt.PATH_PATTERN.sub(" ", without_urls)
    found = [*txt.find_identifiers(bare), *branches, *find_task_ids(bare)]
    out: dict[str, None] = {}
    for ident in found:
        if ident.casefold() not in _NOISE_IDENTIFIERS and not _VERSION.match(ident):
            out.setdefault(ident, None)
    return list(out)


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


_NO_FACTS = MessageFacts()


def _first_sentence(prose: str, limit: int = 240) -> str:
    parts = txt.sentences(prose)
    if not parts:
        return ""
    task = parts[0]
    if len(task.split()) < 2 and len(parts) > 1:
        task = f"{task} {parts[1]}"
    return task if len(task) <= limit else txt.clip(task, limit)


def _prompt_path_ok(path: str) -> bool:
    if is_temp_path(path) or path.strip("./") == "":
        return False
    if path.endswith("/") or looks_like_file(path):
        return True
    # "and/or", "input/output": a bare pair of words is not a folder
    return path.startswith(("/", "~", "./")) or path.count("/") >= 2


# A folder written with its trailing slash ("only touch lib/ and priv/").
_FOLDER = re.compile(r"(?<![\w@/.:-])(?:~/|\./|/)?(?:[\w.@+-]+/)+(?=[\s,;:)'\"`]|$)")


def _prompt_paths(prose: str) -> list[str]:
    """Paths and folders of a prompt, a folder keeping the slash it was written with."""
    found = [
        p + "/" if f"{p}/" in prose and not looks_like_file(p) else p for p in txt.find_paths(prose)
    ]
    found += [m.group(0) for m in _FOLDER.finditer(prose)]
    return list(dict.fromkeys(found))


@lru_cache(maxsize=4096)
def _prose_facts(prose: str) -> tuple[tuple[FactKind, str], ...]:
    out: list[tuple[FactKind, str]] = []
    out += [("constraint", s) for s in txt.constraint_sentences(prose)]
    out += [("path", p) for p in _prompt_paths(prose) if _prompt_path_ok(p)]
    out += [("identifier", i) for i in find_identifiers(prose)]
    return tuple(out)


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
            if _PATH_KEY_SET.isdisjoint(use.input):
                continue  # a path only in a shell command is not a file read or edited
            for action, path in file_actions(use):
                if action == "use" or is_temp_path(path):
                    continue
                if not looks_like_file(path) and (
                    action == "read" or "/" not in path or _is_search(use.name)
                ):
                    continue  # a folder searched or listed, or ".", is not a file read
                uses.append((use.id, Fact("path", path, message.seq)))
        return MessageFacts(uses=tuple(uses)) if uses else _NO_FACTS
    if message.role != "user":
        return _NO_FACTS
    results = [b for b in message.content if isinstance(b, ToolResultBlock)]
    if results:  # a tool-result carrier: no prompt, maybe failed calls
        failed = frozenset(b.tool_use_id for b in results if _result_failed(b))
        return MessageFacts(failed=failed) if failed else _NO_FACTS
    prose = prompt_prose(message)
    if not prose:
        return _NO_FACTS
    facts = tuple(Fact(kind, text, message.seq) for kind, text in _prose_facts(prose))
    summary = is_summary(prose)
    task = None if summary else Fact("task", _first_sentence(prose), message.seq)
    return MessageFacts(task=task if task and task.text else None, facts=facts)


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
    parts = [p for p in _canon_path(path).split("/") if p]
    keys = tuple("/".join(parts[i:]) for i in range(len(parts)) if len(parts) - i >= 2)
    return keys or ("/".join(parts),)


def extract_facts(messages: Sequence[Message], *, cache: FactCache | None = None) -> list[Fact]:
    """The task, rules and identifiers the user stated, and files read or edited successfully.

    Each message is extracted once per ``cache``; a path named twice (absolute in a tool call,
    relative in a prompt) counts once.

    >>> [(f.kind, f.text[:16]) for f in extract_facts([Message(3, "user", (TextBlock(
    ...     "Migrate billing. Do not change the public API of billing/api.py."),))])]
    [('task', 'Migrate billing.'), ('constraint', 'Do not change th'), ('path', 'billing/api.py')]
    """
    cache = cache if cache is not None else FactCache()
    parts = [cache.of(m) for m in messages]
    failed = cache.failed
    facts: list[Fact] = []
    seen: set[tuple[str, str]] = set()
    path_seen: set[str] = set()
    has_task = False

    def add(fact: Fact) -> None:
        if fact.kind == "path":
            keys = _path_keys(fact.text)
            if not keys[0] or any(k in path_seen for k in keys):
                return
            if _canon_path(fact.text) in path_seen:
                return
            path_seen.update(keys)
            facts.append(fact)
            return
        key = (fact.kind, txt.normalize(fact.text))
        if key[1] and key not in seen:
            seen.add(key)
            facts.append(fact)

    for part in parts:
        if part.task is not None and not has_task:
            has_task = True
            # a first sentence that is itself a rule is checked once, as the rule
            rules = [f.text for f in part.facts if f.kind == "constraint"]
            if not any(same_rule(part.task.text, r) for r in rules):
                add(part.task)
        for fact in part.facts:
            add(fact)
        for tool_id, fact in part.uses:
            if tool_id not in failed:
                add(fact)
    return facts


class FactLedger:
    """Incremental extraction over a growing history: feed messages in order, read the facts
    of everything fed so far. An analysis keeps one per session and snapshots it at each
    compaction instead of re-extracting every earlier message."""

    def __init__(self) -> None:
        self.cache = FactCache()
        self._messages: list[Message] = []

    def feed(self, messages: Iterable[Message]) -> None:
        for m in messages:
            self.cache.of(m)
            self._messages.append(m)

    def facts(self, *, before_seq: int | None = None) -> list[Fact]:
        ms = (
            self._messages
            if before_seq is None
            else [m for m in self._messages if m.seq < before_seq]
        )
        return extract_facts(ms, cache=self.cache)


# --- matching ------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\.?[\w@+~-]+(?:[./:][\w@+~-]+)*/?")
_NEGATIONS = re.compile(
    r"\b(?:do not|does not|did not|don't|dont|doesn't|didn't|never|must not|mustn't|"
    r"should not|shouldn't|cannot|can't|can not|won't|will not|not|no|avoid|avoiding|"
    r"nao|nunca|jamais|evite|evitar|proibido|proibida|sem)\b"
)
_REVERSALS = re.compile(
    r"\b(?:(?:is|it's|its|now|are)\s+(?:fine|ok|okay|allowed|permitted)|fine to|ok to|okay to|"
    r"allowed to|free to|feel free|you may|you can now|can now|may now|no longer (?:need|needs|"
    r"needed|required|applies|apply|holds|matters|a constraint|a rule|an issue)|lifted|revoked|"
    r"ignore (?:the )?(?:earlier|previous|old)|disregard|pode agora|agora pode|liberado|"
    r"liberada|permitido|permitida)\b"
)
_NOT = "~not"
_STOPWORDS = _wordset(
    "a an the to of in on at for and or is are be been being it its this that these those "
    "with we you your our us i me my please por favor o os as de do da dos das e um uma "
    "em no na nos nas para que by from any all so just also must should shall always "
    "ever will would can could may might have has had was were which who whom what when "
    "there here then than into onto over about before after earlier later now again one "
    "rule rules use using used usar sempre deve devem precisa precisam voce voces"
)
_WORD = re.compile(r"~not|[\w][\w'./-]*")


def _stem(word: str) -> str:
    word = word.strip("'.-/")
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


@lru_cache(maxsize=65536)
def rule_words(text: str) -> frozenset[str]:
    """Content words of a rule, stemmed, with every negation spelled as one word.

    >>> sorted(rule_words("Don't change the public API")) == sorted(rule_words(
    ...     "never changing the public APIs"))
    True
    """
    norm = _NEGATIONS.sub(f" {_NOT} ", txt.normalize(text).replace("\u2019", "'"))
    out: set[str] = set()
    for w in _WORD.findall(norm):
        if w == _NOT:
            out.add(_NOT)
            continue
        if w in _STOPWORDS:
            continue
        if w.startswith("un") and len(w) >= 7:
            out.add(_NOT)
            w = w[2:]
        stem = _stem(w)
        if stem and stem not in _STOPWORDS:
            out.add(stem)
    return frozenset(out)


_COVER = 0.75


def _display_words(rule: str) -> list[str]:
    """The content words of a rule as written, for an evidence message."""
    norm = _NEGATIONS.sub(" ", txt.normalize(rule))
    words = [w.strip("'.-/") for w in _WORD.findall(norm)]
    return list(dict.fromkeys(w for w in words if w and w not in _STOPWORDS))


def _needed(n: int) -> int:
    """Content words a line must share with a rule of ``n``: all of one or two, else about
    three in four (2 of 3, 3 of 4, 4 of 5, 6 of 8)."""
    return n if n <= 2 else int(_COVER * n + 0.5)


@dataclass(frozen=True)
class Verdict:
    """A fact checked against a context: kept or not, with the line or the reason."""

    kept: bool
    evidence: str


def _clip_line(line: str) -> str:
    return txt.clip(" ".join(line.split()), 200)


class ContextIndex:
    """A compacted context tokenized once: a set of names (paths, their suffixes, dotted module
    parts, ids) with the line each first appears on, and, built on first use, an index of the
    prose lines by content word for rules. Every check is a set or dict lookup."""

    def __init__(self, text: str, prose: str | None = None) -> None:
        self.text = text
        self.folded = text.casefold()
        self.prose_lines = (prose if prose is not None else text).split("\n")
        self.names: dict[str, str] = {}
        self._folders: dict[str, str] | None = None
        self._by_word: dict[str, list[int]] | None = None
        self._line_words: list[frozenset[str]] = []
        names = self.names
        # one C-speed split of the whole text; the name pattern runs on distinct words only
        for word in dict.fromkeys(self.folded.split()):  # first appearance first
            for tok in _TOKEN.findall(word):
                if tok not in names:
                    self._add(names, tok, word)

    @staticmethod
    def _add(names: dict[str, str], tok: str, raw: str) -> None:
        """Register a token and the shorter names it contains; each maps to the raw token,
        which :meth:`_line` finds again for the evidence."""
        tok = tok.rstrip("/.:-")
        while tok.startswith(("./", "~/")):
            tok = tok[2:]
        tok = tok.lstrip("/")
        if not tok:
            return
        names.setdefault(tok, raw)
        if "/" in tok:
            parts = [p for p in tok.split("/") if p]
            for j in range(1, len(parts)):
                names.setdefault("/".join(parts[j:]), raw)
            last = parts[-1] if parts else ""
            if "." in last:
                names.setdefault(last.split(".", 1)[0], raw)
        elif "." in tok or ":" in tok:
            pieces = [p for p in re.split(r"[.:]+", tok) if p]
            for j in range(1, len(pieces)):
                names.setdefault(".".join(pieces[j:]), raw)
                names.setdefault(".".join(pieces[:j]), raw)

    def folders(self) -> dict[str, str]:
        """Every folder a named path runs through (``lib``, ``lib/billing``, ``billing``)."""
        if self._folders is None:
            out: dict[str, str] = {}
            for name, raw in self.names.items():
                if "/" not in name:
                    continue
                parts = name.split("/")[:-1]
                for a in range(len(parts)):
                    for b in range(a + 1, min(len(parts), a + 6) + 1):
                        out.setdefault("/".join(parts[a:b]), raw)
            self._folders = out
        return self._folders

    def _rule_index(self) -> dict[str, list[int]]:
        if self._by_word is None:
            by_word: dict[str, list[int]] = {}
            self._line_words = []
            for i, line in enumerate(self.prose_lines):
                words = rule_words(line) if line.strip() else frozenset()
                self._line_words.append(words)
                for w in words:
                    by_word.setdefault(w, []).append(i)
            self._by_word = by_word
        return self._by_word

    def _line(self, raw: str) -> str:
        """The line of the context where a token first appears, for the evidence (a window
        around the token when the line is long)."""
        pos = self.folded.find(raw)
        if pos < 0:
            return raw
        source = self.text if len(self.text) == len(self.folded) else self.folded
        start = source.rfind("\n", 0, pos) + 1
        end = source.find("\n", pos)
        end = end if end >= 0 else len(source)
        if end - start > 200:
            start = max(start, pos - 80)
            end = min(end, start + 200)
        return _clip_line(source[start:end])

    def check(self, fact: Fact, *, root: str | None = None) -> Verdict:
        if fact.kind == "path":
            return self.check_path(fact.text, root=root)
        if fact.kind == "identifier":
            return self.check_name(fact.text)
        return self.check_rule(fact.text)

    def check_name(self, ident: str) -> Verdict:
        key = ident.casefold().strip()
        i = self.names.get(key)
        if i is not None:
            return Verdict(True, self._line(i))
        return Verdict(False, f"no line names {ident}")

    def check_path(self, path: str, *, root: str | None = None) -> Verdict:
        canon = _canon_path(path)
        if not canon:
            return Verdict(False, "not a path")
        if not looks_like_file(path):
            i = self.names.get(canon)
            if i is None:
                i = self.folders().get(canon)
            if i is not None:
                return Verdict(True, self._line(i))
            return Verdict(False, f"no line names the folder {canon} or a file inside it")
        forms = [_canon_path(f) for f in path_forms(path)]
        name = forms[-1].rsplit("/", 1)[-1]
        if root and name in ROOT_FILES and path.rsplit("/", 1)[0] == root:
            forms.append(name)
        for form in forms:
            i = self.names.get(form)
            if i is not None:
                return Verdict(True, self._line(i))
        modules = module_forms(path)
        for form in modules:
            i = self.names.get(form)
            if i is not None:
                return Verdict(True, self._line(i))
        tried = ", ".join(dict.fromkeys([forms[-1], *modules[:2]]))
        return Verdict(False, f"no line names the file ({tried})")

    def check_rule(self, rule: str) -> Verdict:
        words = rule_words(rule)
        if not words:
            return Verdict(False, "the rule has no content words")
        by_word = self._rule_index()
        hits: dict[int, int] = {}
        for w in words:
            for i in by_word.get(w, ()):
                hits[i] = hits.get(i, 0) + 1
        content = words - {_NOT}
        negated = _NOT in words
        rule_reverses = bool(_REVERSALS.search(txt.normalize(rule)))
        need = _needed(len(content))
        best: int | None = None
        kept_at: int | None = None
        for i, _ in sorted(hits.items(), key=lambda kv: (-kv[1], kv[0])):
            line_words = self._line_words[i]
            if len(content & line_words) < need:
                continue
            line = txt.normalize(self.prose_lines[i])
            if not rule_reverses and _REVERSALS.search(line):
                return Verdict(False, f"reversed: {_clip_line(self.prose_lines[i])}")
            if kept_at is None and (not negated or _NOT in line_words):
                kept_at = i
            if best is None:
                best = i
        if kept_at is not None:
            return Verdict(True, _clip_line(self.prose_lines[kept_at]))
        if best is not None:
            return Verdict(
                False,
                f"closest line has the words without the negation: "
                f"{_clip_line(self.prose_lines[best])}"
                if negated
                else f"closest line: {_clip_line(self.prose_lines[best])}",
            )
        return Verdict(False, f"no line has most of: {', '.join(_display_words(rule)[:8])}")


def context_index(messages: Iterable[Message]) -> ContextIndex:
    """Index a context: all its text for names, its prose (not tool output) for rules."""
    text: list[str] = []
    prose: list[str] = []
    for m in messages:
        for b in m.content:
            if isinstance(b, TextBlock | CompactionBlock):
                t = b.text if isinstance(b, TextBlock) else (b.content or "")
                text.append(t)
                prose.append(t)
            elif isinstance(b, ThinkingBlock):
                if not b.redacted:
                    text.append(b.thinking)
                    prose.append(b.thinking)
            elif isinstance(b, ToolResultBlock):
                text.append(b.text)
            else:
                text.append(block_text(b))
    return ContextIndex("\n".join(text), "\n".join(prose))


def same_rule(a: str, b: str) -> bool:
    """A probe and an auto-extracted rule that say the same thing (count them once).

    >>> same_rule("do not change the public API",
    ...           "Before you go on: do not change the public API of the billing module.")
    True
    """
    wa, wb = rule_words(a), rule_words(b)
    if not wa or not wb:
        return False
    common = len(wa & wb)
    return common >= _COVER * len(wa) and common >= 0.5 * len(wb)
