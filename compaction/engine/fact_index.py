"""A compacted context indexed once, and facts checked against it by lookups.

:class:`ContextIndex` splits the context's text once (C speed) and registers every name it
holds: paths and their shorter suffixes, folders they run through, dotted module parts, ids,
each with the word it came from so the evidence line can be found again. Rules are matched
line by line through an index of content words (:func:`~compaction.engine.text.rule_words`),
built on first use. So checking N facts against a context of size T costs O(T + N), not the
O(N x T) of a scan per fact.

A path is kept when the context names it by a path form, its distinctive file name, its module
or class name (``InvoiceListLive`` for ``invoice_list_live.ex``, ``Billing.Client`` for
``billing/client.py``), or, for a folder, a file inside it; a rule when one line holds most of
its content words with the same polarity ("do not" = "don't" = "never"), and not when that
line reverses it ("it is fine to change the public API now").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from compaction.engine import text as txt
from compaction.engine.facts import MAX_NAME, Fact, canon_path, looks_like_file
from compaction.engine.messages import (
    CompactionBlock,
    Message,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    block_text,
)
from privacy.detect import pii

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


_ASIDE = re.compile(r"\s*\([^()]{3,}\)")


def _elsewhere(raw: str, name: str, parent: str, *, home: bool = False) -> bool:
    """Whether a bare file name was found as a file of another folder: ``scope.md`` of
    docs/specs/ is not docs/specs/npm/scope.md, the root CMakeLists.txt not tests/CMakeLists.txt.

    >>> _elsewhere("`docs/specs/npm/scope.md`", "scope.md", "specs")
    True
    >>> _elsewhere("specs/scope.md,", "scope.md", "specs"), _elsewhere("scope.md", "scope.md", "x")
    (False, False)
    >>> _elsewhere("**~/.zshrc**", ".zshrc", "tslater", home=True)
    False
    """
    if "/" in name or not parent:
        return False
    tok: str
    for tok in _TOKEN.findall(raw):
        parts = tok.rstrip("/.:-").split("/")
        if len(parts) >= 2 and parts[-1] == name:
            return parts[-2] != parent and not (home and parts[-2] == "~")
    return False


def _stem_elsewhere(raw: str, canon: str) -> bool:
    """Whether ``raw`` is a path to a file of ``canon``'s stem in another folder.

    >>> _stem_elsewhere("tests/cmakelists.txt", "proj/cmakelists.txt")
    True
    >>> _stem_elsewhere("docs/ref.md:47:100", "docs/ref.md"), _stem_elsewhere("Ref", "docs/ref.md")
    (False, False)
    """
    parts = raw.strip("`'\"()[],;").casefold().split("/")
    mine = canon.split("/")
    if len(parts) < 2:
        return False
    same_stem = parts[-1].split(".", 1)[0] == mine[-1].split(".", 1)[0]
    return same_stem and (len(mine) < 2 or parts[-2] != mine[-2])


def _squash(name: str) -> str:
    return name.replace("_", "").replace("-", "")


_NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def name_words(ident: str) -> list[str]:
    """The words of a code name, lower-cased: ``checkpointTree`` → checkpoint, tree."""
    return [w.casefold() for w in _NAME_WORD.findall(ident)]


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
    parts = [p for p in canon_path(path).split("/") if p]
    if not parts or not looks_like_file(parts[-1]) or parts[-1].startswith("."):
        return ()
    stem = parts[-1].split(".", 1)[0]
    if not stem or parts[-1] in GENERIC_NAMES:
        return ()
    forms: list[str] = []
    original = path.rstrip("/").rsplit("/", 1)[-1].split(".", 1)[0]
    # a type named like its file (KeychainBootstrap for KeychainBootstrap.swift) names it
    camel = len(name_words(original)) >= 2 and len(original) >= 8
    multiword = ("_" in stem.strip("_") or "-" in stem or camel) and stem not in _GENERIC_STEMS
    if multiword:
        forms += [stem, _camel(stem)]
    if len(parts) > 1:
        parent = parts[-2]
        forms += [f"{parent}.{stem}", f"{_camel(parent)}.{_camel(stem)}"]
    return tuple(dict.fromkeys(forms))


# A name and its parts; a part may be a dotfile (apps/api/.env).
_TOKEN = re.compile(r"\.?[\w@+~-]+(?:[./:]\.?[\w@+~-]+)*/?")
_REVERSALS = re.compile(
    r"\b(?:(?:is|it's|its|now|are)\s+(?:fine|ok|okay|allowed|permitted)|fine to|ok to|okay to|"
    r"allowed to|free to|feel free|you may|you can now|can now|may now|no longer (?:need|needs|"
    r"needed|required|applies|apply|holds|matters|a constraint|a rule|an issue)|lifted|revoked|"
    r"ignore (?:the )?(?:earlier|previous|old)|disregard|pode agora|agora pode|liberado|"
    r"liberada|permitido|permitida)\b"
)


def _display_words(rule: str) -> list[str]:
    """The content words of a rule as written, for an evidence message. A personal value in
    it is one word, its mask: split into words ("11", "98765-4321") no masker would see it.

    >>> _display_words("o telefone (11) 98765-4321 é privado")
    ['telefone', '[phone (**) *****-**21]', 'privado']
    """
    words: list[str] = []
    at = 0
    for found in pii.scan(rule):
        words += _plain_words(rule[at : found.start])
        words.append(f"[{found.kind} {pii.masked_preview(found)}]")
        at = found.end
    words += _plain_words(rule[at:])
    return list(dict.fromkeys(words))


def _plain_words(text: str) -> list[str]:
    norm = txt.NEGATIONS.sub(" ", txt.normalize(text))
    words = [w.strip("'.-/") for w in txt.RULE_WORD.findall(norm)]
    return [w for w in words if w and w not in txt.STOPWORDS]


def _needed(n: int) -> int:
    """Content words a line must share with a rule of ``n``: all of one or two, else about
    three in four (2 of 3, 3 of 4, 4 of 5, 6 of 8)."""
    return n if n <= 2 else int(txt.RULE_COVER * n + 0.5)


@dataclass(frozen=True)
class Verdict:
    """A fact checked against a context: kept or not, with the line or the reason."""

    kept: bool
    evidence: str


def _clip_line(line: str) -> str:
    return txt.clip(" ".join(line.split()), 200)


def _rule_window(line: str, rule: str) -> str:
    """A long line cut around the first word of the rule it holds."""
    flat = " ".join(line.split())
    if len(flat) <= 200:
        return flat
    folded = flat.casefold()
    pos = 0
    for word in _display_words(rule):
        found = re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", folded)
        if found:
            pos = found.start()
            break
    start = max(0, min(pos - 60, len(flat) - 200))
    return txt.clip(flat[start:], 200)


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
        self._squashed: dict[str, str] | None = None
        self._flat: str | None = None
        self._by_word: dict[str, list[int]] | None = None
        self._line_words: list[frozenset[str]] = []
        names = self.names
        # one C-speed split of the whole text; the name pattern runs on distinct words only
        for word in dict.fromkeys(self.folded.split()):  # first appearance first
            for tok in _TOKEN.findall(word):
                # a name is registered with each of its shorter suffixes: a "token" of
                # thousands of dotted parts is no name, and would cost their square
                if tok not in names and len(tok) <= MAX_NAME:
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
                words = txt.rule_words(line) if line.strip() else frozenset()
                self._line_words.append(words)
                for w in words:
                    by_word.setdefault(w, []).append(i)
            self._by_word = by_word
        return self._by_word

    def phrase_line(self, phrase: str) -> str | None:
        """The context around ``phrase``'s words in order, however spaced (``mise run test``),
        for the evidence; None when no stretch of the context holds them."""
        if self._flat is None:
            self._flat = " ".join(self.folded.split())
        wanted = " ".join(phrase.casefold().split())
        at = self._flat.find(wanted)
        if at < 0:
            return None
        return _clip_line(self._flat[max(0, at - 60) : at + len(wanted) + 60])

    def line_with_words(self, words: frozenset[str]) -> str | None:
        """The first prose line holding every one of ``words`` (stemmed, as
        :func:`~compaction.engine.text.rule_words` gives them), clipped for the evidence."""
        by_word = self._rule_index()
        lines: set[int] | None = None
        for w in words:
            found = set(by_word.get(w, ()))
            lines = found if lines is None else lines & found
            if not lines:
                return None
        return _clip_line(self.prose_lines[min(lines)]) if lines else None

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

    def line_naming(self, name: str) -> str | None:
        """The line that names ``name`` alone (``package.json``), not as the end of a longer
        path (``packages/api/package.json`` names another file)."""
        key = name.casefold()
        raw = self.names.get(key)
        if raw is None or "/" + key in raw:
            return None
        return self._line(raw)

    def check(self, fact: Fact, *, root: str | None = None) -> Verdict:
        if fact.kind == "path":
            return self.check_path(fact.text, root=root)
        if fact.kind == "identifier":
            return self.check_name(fact.text)
        return self.check_rule(fact.text)

    def squashed(self) -> dict[str, str]:
        """Names without their ``_`` and ``-``: one spelling for ``initial_attribution``,
        ``InitialAttribution`` and ``initial-attribution``, for ``PRO-77`` and ``pro77``."""
        if self._squashed is None:
            out: dict[str, str] = {}
            for name, raw in self.names.items():
                if "/" not in name and "." not in name:
                    out.setdefault(_squash(name), raw)
            self._squashed = out
        return self._squashed

    def check_name(self, ident: str) -> Verdict:
        key = ident.casefold().strip()
        i = self.names.get(key)
        if i is None and len(_squash(key)) >= 4:
            i = self.squashed().get(_squash(key))
        if i is None:
            i = self._name_in_words(ident)
        if i is not None:
            return Verdict(True, self._line(i))
        return Verdict(False, f"no line names {ident}")

    def _name_in_words(self, ident: str) -> str | None:
        """A name the context spells out: ``attributionBaseTree`` as "attribution base tree",
        or a longer id it is the start of (``web-cms`` in ``web-cms-pink``). Returns the words
        found."""
        words = name_words(ident)
        if len(words) < 2:
            return None
        # two plain words side by side ("diff lines") are prose, not the name diffLines
        gap = r"[\s_-]" if len(words) >= 3 else "[_-]"
        spelled = gap.join(re.escape(w) for w in words)
        found = re.search(rf"(?<![\w-]){spelled}(?![\w])", self.folded)
        return found.group(0) if found else None

    def check_path(self, path: str, *, root: str | None = None) -> Verdict:
        canon = canon_path(path)
        if not canon:
            return Verdict(False, "not a path")
        if not looks_like_file(path):
            i = self.names.get(canon)
            if i is None:
                i = self.folders().get(canon)
            if i is not None:
                return Verdict(True, self._line(i))
            return Verdict(False, f"no line names the folder {canon} or a file inside it")
        forms = [canon_path(f) for f in path_forms(path)]
        name = forms[-1].rsplit("/", 1)[-1]
        if root and name in ROOT_FILES and path.rsplit("/", 1)[0] == root:
            forms.append(name)
        parent = canon.rsplit("/", 2)[-2] if canon.count("/") >= 1 else ""
        # a file right in the user's home folder, which a summary writes ~/.zshrc
        home = canon.count("/") == 2 and canon.startswith(("users/", "home/"))
        for form in forms:
            i = self.names.get(form)
            if i is not None and not _elsewhere(i, form, parent, home=home):
                return Verdict(True, self._line(i))
        modules = module_forms(path)
        for form in modules:
            i = self.names.get(form)
            # a path found by this form names a file of the same stem: this one only when
            # its folder is this file's (tests/CMakeLists.txt is not the root CMakeLists.txt)
            if i is not None and not _stem_elsewhere(i, canon):
                return Verdict(True, self._line(i))
        if "/" not in canon and len(name.split(".", 1)[0]) >= 6:
            # "condensation.go" for manual_commit_condensation.go: the end of a longer name
            found = re.search(rf"[\w-][_-]{re.escape(name)}(?!\w|\.\w)", self.folded)
            if found:
                return Verdict(True, self._line(found.group(0)[2:]))
        tried = ", ".join(dict.fromkeys([forms[-1], *modules[:2]]))
        return Verdict(False, f"no line names the file ({tried})")

    def check_rule(self, rule: str) -> Verdict:
        verdict = self._check_rule(rule)
        bare = _ASIDE.sub(" ", rule)
        if verdict.kept or bare == rule or not txt.rule_words(bare) - {txt.RULE_NOT}:
            return verdict
        # "fails if any step returns an error (headRef, headCommit, …)": a summary that
        # keeps the rule without its aside keeps the rule
        retry = self._check_rule(bare)
        return retry if retry.kept else verdict

    def _check_rule(self, rule: str) -> Verdict:
        words = txt.rule_words(rule)
        if not words:
            return Verdict(False, "the rule has no content words")
        by_word = self._rule_index()
        hits: dict[int, int] = {}
        for w in words:
            for i in by_word.get(w, ()):
                hits[i] = hits.get(i, 0) + 1
        content = words - {txt.RULE_NOT}
        negated = txt.RULE_NOT in words
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
            if kept_at is None and (not negated or txt.RULE_NOT in line_words):
                kept_at = i
            if best is None:
                best = i
        if kept_at is not None:
            return Verdict(True, _rule_window(self.prose_lines[kept_at], rule))
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
