"""Person names in text, for the personal data scan (``pii.scan`` calls :func:`find`).

A name is a run of two to five capitalized words ("Camila Nogueira Figueiredo", "Ana de
Souza", "JOAQUIM BARBOSA") that something marks as a person's:

- a cue before it, in Portuguese or English: "meu nome é", "me chamo", "nome:", "cliente",
  "titular", "Sr.", "Sra.", "dona", "my name is", "name:", "customer", "Mr.", "Mrs." (high);
- a weaker cue ("sou", "eu sou", "aqui é", "I am", "I'm", "this is") when the first word is a
  common first name: "Sou Joaquim" could be a job ("Sou Desenvolvedor Python") (high);
- a signature: a sign-off ("Atenciosamente,", "Att.", "Obrigada,", "Best regards,") and the
  name alone on the next line (high);
- a labelled field in JSON: ``"nome": "…"``, ``"full_name": "…"`` (high);
- a document of the same person beside it: "Joaquim Barbosa, CPF 530…", "CPF 530… (Joaquim
  Barbosa)" (high);
- the same name again in the text, once it was found one of the ways above (high);
- else, a common first name followed by capitalized surnames ("atender Camila Figueiredo"):
  to review, not sure (review).

    >>> [(n.canonical, n.confidence) for n in find("Sou Joaquim Barbosa, CPF 530.582.439-79")]
    [('joaquim barbosa', 'high')]
    >>> find("I am Claude Code, Anthropic's CLI") == find("Cliente Premium Gold") == []
    True

Words that name products, plans, roles or code are never a person's ("Premium", "Claude").
Everything here reads the text once for capitalized runs, which are rare in code and logs,
and looks only at a few characters around each.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass
from typing import Literal

from privacy.detect.context import mark_within
from privacy.detect.not_personal import email_level

Confidence = Literal["high", "review"]

_UPPER = "A-ZÁÉÍÓÚÂÊÔÃÕÇÀÜ"
_LOWER = "a-záéíóúâêôãõçàü"
_TITLE = rf"[{_UPPER}][{_LOWER}]+(?:-[{_UPPER}][{_LOWER}]+)?"
_CAPS = rf"[{_UPPER}]{{2,}}"
_LINK = r"(?:[ \t]+(?:d[aeo]s?|e|D[AEO]S?|E)[ \t]+|[ \t]+)"
# A name written with initials ("Italo A. Gomes", "Arun R", "JY Voon"): only where a cue
# marks the whole as a person's, never on its own ("Plan B", "AB Testing").
_INITIAL = rf"[{_UPPER}]\.?"
_CANDIDATE = re.compile(
    rf"(?<![\w-])(?:{_TITLE}(?:{_LINK}(?:{_TITLE}|{_INITIAL}(?![{_LOWER}]))){{1,4}}"
    rf"|{_CAPS}(?:{_LINK}{_CAPS}){{1,4}}"
    rf"|[{_UPPER}]{{1,2}}\.?(?:{_LINK}{_TITLE}){{1,3}})(?![\w-])"
)
_HAS_INITIAL = re.compile(rf"(?:^|\s)[{_UPPER}]{{1,2}}(?:\.|\s|$)")
_WORD_AT = re.compile(rf"[{_UPPER}{_LOWER}-]+")
_LOOK = 40  # characters looked at around a candidate

# Not a bare "name:" or "name" key: config files and APIs name workflows, tasks and things
# ("name: Build And Deploy", "name": "In Progress").
_STRONG_CUE = re.compile(
    r"(?:\bmeu nome [ée]|\bme chamo|\bchamo-me|\bnome(?: completo)?\s*:|\bcliente\s*:?|"
    r"\btitular\s*:?|\bsenhora?|\bdona|\bsra?\.?|\bmy name is|\bfull name\s*:|"
    r"\bcustomer\s*:|\bmrs?\.?|\bms\.?|\bdra?\.)[ \t]*$"
)
_WEAK_CUE = re.compile(
    r"(?:\b(?:eu )?sou(?: [oa])?|\baqui [ée](?: [oa])?|\bi am|\bi'm|\bthis is)[ \t]*$"
)
_FIELD = re.compile(
    r'\\{0,3}"(?:nome|nome_completo|nome_cliente|full_?name|customer_name|titular|cliente'
    r'|author_?name|author|committer|assignee|owner|reporter)\\{0,3}"\s*:\s*\\{0,3}"$'
)
# The "name" of an author's object ({"author": {"name": "Randall Morgan", ...}}, GitHub's
# commit authors), JSON perhaps written out inside a string (its quotes escaped).
_NAME_KEY = re.compile(r'\\{0,3}"name\\{0,3}"\s*:\s*\\{0,3}"$')
_AUTHOR_OBJECT = ('"author', '"committer')
_AUTHOR_OBJECT_REACH = 160
# A person's own line: a commit's author, a sign-off trailer, an e-mail's sender, an issue's
# owner or assignee ("Owner: Ana Lima · Assignee: Ana Lima"), git config, a package's authors
# (TOML's `authors = ["Ana Lima"]`, `authors = [{ name = "Ana Lima" }]`). Markdown may bold
# the key ("**Author:** Ana Lima"); a command inside a tool call's JSON arguments escapes its
# quotes (git -c user.name=\"Ana Lima\").
_AUTHOR_CUE = re.compile(
    r"(?:^|\n|·)[ \t]*\*{0,2}(?:author|commit|committer|co-authored-by|signed-off-by"
    r"|reviewed-by|from|de|to|para|cc|reply-to|owner|assignee|assigned to|reporter)\*{0,2}"
    r"[ \t]*:[ \t]*\*{0,2}[ \t]*$"
    r"|user\.name[ \t=]*\\?[\"']?$"
    r"|\[user\][ \t]*\r?\n(?:[^\n\[]*\n){0,3}[ \t]*name[ \t]*=[ \t]*$"
    r"|\bauthors[ \t]*=[ \t]*\[[ \t\r\n]*(?:\{[ \t]*name[ \t]*=[ \t]*)?\\?[\"']$"
)
# git's own hint when it has no identity: its `git config --global user.name "Your Name"` is
# git's placeholder, not the user's name.
_GIT_IDENTITY_HINT = "please tell me who you are"
# "Name <someone@host>": an e-mail's display name.
_DISPLAY_NAME = re.compile(r"[ \t]*<[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9.\-]{1,253}>")
# Where names are made up: seed, fixture, factory, mock and test data of an app.
_MADE_UP = re.compile(
    r"seed|fixture|factor(?:y|ies)|faker|mock|dummy|sample|demo|stub|__tests__|/tests?/|/spec/"
    r"|\.test\.|\.spec\.|test_|_test\b|\bexpect\(|\bdescribe\(|\bassert"
)
# A reserved example address on a name's own line: the line is a template's.
_EXAMPLE_ADDRESS = re.compile(r"@example\.|\bexample\.(?:com|org|net)\b")
_LINE_REACH = 120
# Names that stand for nobody: a text that shows them is a sample (a README's inbox table).
_PLACEHOLDER_PEOPLE = ("john doe", "jane doe", "fulano de tal")
# A commit's author written as one word, as git prints a login-like name:
# "Author: Mertozturkk <mert@example.org>". Only in git's own author and trailer lines, and
# only with the address beside it; the name is the person's whatever it looks like.
_ONE_WORD_AUTHOR = re.compile(
    r"(?:^|\n)[ \t]{0,8}(?:Author|Commit|Committer|Co-[Aa]uthored-[Bb]y|Signed-off-by)[ \t]{0,3}:"
    r"[ \t]{0,3}"
    r"([A-Za-z][A-Za-z0-9_.\-]{1,38})[ \t]{1,3}<[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9.\-]{1,253}>"
)
_SIGN_OFF = re.compile(
    r"(?:^|\n)[ \t]*(?:att\.?|atenciosamente|abra[çc]os?|obrigad[oa]|cordialmente|"
    r"sauda[çc][õo]es|best regards|kind regards|regards|thanks|cheers|sincerely|best)"
    r"[,.!]?[ \t]*\r?\n[ \t]*$"
)
_DOCUMENT_AFTER = re.compile(r"[ \t]*[,(\-\u2013][ \t]*(?:cpf|cnpj|rg)\b[\s:nº°.]*\d")
_DOCUMENT_BEFORE = re.compile(
    r"\b(?:cpf|cnpj|rg)\b[\s:nº°.]*[\d.\-/ ]{7,20}[ \t]*[,(\-\u2013][ \t]*$"
)

# Common first names (Brazilian and English): a weak cue needs one, and such a name followed
# by surnames is worth a review even without a cue.
_FIRST_NAMES_TEXT = (
    "Maria Ana Francisca Antônia Adriana Juliana Márcia Fernanda Patrícia Aline Sandra Camila "
    "Amanda Bruna Jéssica Letícia Júlia Luciana Vanessa Mariana Gabriela Vera Débora Beatriz "
    "Larissa Carla Renata Paula Cláudia Rafaela Simone Tatiana Luana Cristina Helena Isabela "
    "Laura Sofia Alice Manuela Valentina Lúcia Rita Sônia Priscila Natália Bianca Carolina "
    "Daniela Eduarda Fabiana Giovanna Heloísa Lívia Raquel Rosa Silvia Tereza Yasmin "
    "José João Antônio Francisco Carlos Paulo Pedro Lucas Luiz Marcos Luis Gabriel Rafael "
    "Daniel Marcelo Bruno Eduardo Felipe Raimundo Rodrigo Manoel Mateus André Fernando Fábio "
    "Leonardo Gustavo Guilherme Leandro Tiago Anderson Ricardo Márcio Jorge Sebastião Alexandre "
    "Roberto Edson Diego Vitor Sérgio Cláudio Matheus Thiago Geraldo Adriano Luciano Júlio Renato "
    "Miguel Arthur Heitor Bernardo Davi Enzo Samuel Henrique Vinícius Otávio Igor Caio "
    "Joaquim Murilo Rogério Wagner Wellington Washington Hugo Fabrício Emerson Everton Jefferson "
    "John Mary James Robert Michael William David Richard Joseph Thomas Charles Jennifer "
    "Linda Elizabeth Susan Jessica Sarah Karen Nancy Lisa Emily Emma Olivia"
)
FIRST_NAMES = frozenset(_FIRST_NAMES_TEXT.split())
_KNOWN_FIRST = {name.upper() for name in FIRST_NAMES} | FIRST_NAMES

# Capitalized words that name products, plans, roles, places or code, never a person.
_NOT_NAME_TEXT = (
    "premium gold silver platinum black vip plus pro max basic standard enterprise business "
    "novo nova antigo especial corporativo empresarial pessoa física jurídica ltda sa me eireli "
    "claude code anthropic openai gpt gemini codex python java javascript typescript rust go "
    "api sdk cli server client manager admin support team bot assistant agent user test "
    "example demo the this that and for with from github google microsoft amazon aws azure "
    "docker linux windows macos ubuntu debian react django node npm pip main master readme "
    "license brasil brazil são rio janeiro minas gerais santa bahia sul norte "
    "rua avenida av travessa praça bairro centro loja casa aurora shopping banco "
    "inc llc ltd gmbh corp corporation co labs technologies software systems solutions "
    "foundation group company platforms "
    "name full first last nome sobrenome"
)
_NOT_NAME = frozenset(_NOT_NAME_TEXT.split())
# Words that start a sentence before a name ("Sou Rita…", "Cliente Ana…"): where a run of
# capitalized words starts with one, the name starts after it.
_LEADS_TEXT = (
    "sou eu aqui oi olá ola cliente titular senhor senhora dona sr sra dr dra prezado prezada "
    "caro cara obrigado obrigada att atenciosamente hello hi dear i my name nome"
)
_LEADS = frozenset(_LEADS_TEXT.split())


@dataclass(frozen=True)
class NameSpan:
    start: int
    end: int
    canonical: str  # lowercase, single spaces: how two mentions compare
    confidence: Confidence
    # "info": a name of seed, fixture, factory or test data, or one a later mention repeats
    # only as a word: listed, never masked
    made_up: bool = False


def _words(name: str) -> list[str]:
    return name.split()


def _plausible(name: str) -> bool:
    return not any(word.lower() in _NOT_NAME for word in _words(name))


def _is_caps(name: str) -> bool:
    return name.upper() == name


def _marked(text: str, lowered: str, start: int, end: int, name: str) -> Confidence | None:
    """How sure a candidate at [start, end) is a person's name, from what is around it."""
    before = lowered[max(0, start - _LOOK) : start]
    if _STRONG_CUE.search(before) or _FIELD.search(before) or _AUTHOR_CUE.search(before):
        return "high"
    if _NAME_KEY.search(before) and any(
        key in lowered[max(0, start - _AUTHOR_OBJECT_REACH) : start] for key in _AUTHOR_OBJECT
    ):
        return "high"
    if _DISPLAY_NAME.match(text, end):
        return "high"
    if _DOCUMENT_AFTER.match(lowered, end) or _DOCUMENT_BEFORE.search(before):
        return "high"
    if _is_caps(name):
        return None  # shouting, headers, constants: only a cue or a document says otherwise
    if _HAS_INITIAL.search(name):
        return None  # "Plan B", "Maria A": an initial is a name's only where a cue says so
    known_first = _words(name)[0] in _KNOWN_FIRST
    if known_first and _WEAK_CUE.search(before):
        return "high"
    if _SIGN_OFF.search(before) and (end == len(text) or text[end] in "\r\n"):
        return "high"
    return "review" if known_first else None


def lowered_in_place(text: str) -> str:
    """``text`` in lower case, each character where it was: a letter whose lower case is
    longer ("İ") keeps its first character, so offsets in one are offsets in the other."""
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c.lower()[:1] for c in text)
    return lowered


def find(text: str, made_up_data: MadeUp | None = None) -> list[NameSpan]:
    """The person names in ``text``, in order (see the module's docstring for what counts).
    ``made_up_data``: the text's :class:`MadeUp`, when the caller has read it already."""
    lowered = lowered_in_place(text)
    if lowered == text:
        return []  # no capital letter, no name
    found: list[NameSpan] = []
    for match in _CANDIDATE.finditer(text):
        end = match.end()
        words = list(_WORD_AT.finditer(text, match.start(), end))
        # The name may start after the run's first words: a cue ("Sou Rita Prado"), or a
        # word that starts the sentence ("Hoje Camila Figueiredo ligou").
        for first in range(len(words) - 1):
            start = words[first].start()
            name = text[start:end]
            if words[first].group(0).lower() in _LEADS or not _plausible(name):
                continue
            confidence = _marked(text, lowered, start, end, name)
            if confidence is not None:
                canonical = " ".join(name.lower().split())
                if made_up_data is None:
                    made_up_data = MadeUp.of(lowered)
                made_up = _made_up(text, lowered, start, end, made_up_data)
                found.append(NameSpan(start, end, canonical, confidence, made_up))
                break
    if "<" in text and "@" in text:
        _one_word_authors(text, found)
    return _with_repeats(text, found)


def _one_word_authors(text: str, found: list[NameSpan]) -> None:
    """Commit authors git prints as one word ("Author: Mertozturkk <…>"), into ``found``."""
    taken = [(n.start, n.end) for n in found]
    for match in _ONE_WORD_AUTHOR.finditer(text):
        start, end = match.span(1)
        word = match.group(1)
        if word.lower() in _NOT_NAME or "bot" in word.lower() or any(c.isdigit() for c in word):
            continue  # a product, a bot, or a login with digits ("JamBalaya56562"): no name
        if any(a <= start < b for a, b in taken):
            continue  # a name of two words or more already found there
        address = match.group(0)[match.group(0).rfind("<") + 1 : -1]
        if email_level(address) != "finding":
            continue  # a bot's or a tool's identity: "release-check <release-check@x.invalid>"
        found.append(NameSpan(start, end, word.lower(), "high"))
    found.sort(key=lambda n: n.start)


# How far a made-up data mark reaches: a value this close to "seed", "fixture", "mock" or a
# test is that data; one further away, in the same long text (a whole session exported as one
# Markdown file, a config dump that lists "fixtures.ts"), is not.
_MADE_UP_BEFORE = 2000
_MADE_UP_AFTER = 600


@dataclass(frozen=True)
class MadeUp:
    """Where a text's made-up data is, read once for all the values in it."""

    marks: tuple[int, ...]  # starts of seed, fixture, factory, mock and test marks
    sample: bool  # a sample beside "Jane Doe (jane@corp.com)"
    examples: bool  # documentation with example.com addresses: "send a text to John"
    git_hint: bool  # git's "please tell me who you are", with its placeholder name

    @classmethod
    def of(cls, lowered: str) -> MadeUp:
        sample = any(name in lowered for name in _PLACEHOLDER_PEOPLE)
        examples = "example.com" in lowered or "@example." in lowered
        marks = tuple(m.start() for m in _MADE_UP.finditer(lowered))
        return cls(marks, sample, examples, _GIT_IDENTITY_HINT in lowered)

    def covers(self, start: int, end: int) -> bool:
        """Whether the value at [start, end) is a sample's or sits near a made-up data mark.
        Documentation's examples make its names made up, not a real address beside them
        ("e-mail ana@uol.com.br, or noreply@example.com")."""
        if self.sample:
            return True
        return mark_within(self.marks, start, end, _MADE_UP_BEFORE, _MADE_UP_AFTER)


def in_made_up_data(text: str, start: int, end: int, made_up: MadeUp) -> bool:
    """Whether the value at [start, end) sits in made-up data: not an e-mail's address in
    angle brackets (an author line's)."""
    return text[start - 1 : start] != "<" and made_up.covers(start, end)


def _made_up(text: str, lowered: str, start: int, end: int, made_up: MadeUp) -> bool:
    """Whether a name sits in made-up data: seed, fixture, factory, mock or test data, or a
    documentation sample, and nothing a person says of themselves marks the name (an author
    line, an e-mail's display name, "my name is")."""
    before = lowered[max(0, start - _LOOK) : start]
    if made_up.git_hint and "user.name" in before:
        return True
    if _AUTHOR_CUE.search(before) or _DISPLAY_NAME.match(text, end):
        # a person's own line, unless it is a template's ("Signed-off-by: Jane Smith
        # <jane.smith@example.com>")
        line_end = lowered.find("\n", end, end + _LINE_REACH)
        stop = end + _LINE_REACH if line_end == -1 else line_end
        return _EXAMPLE_ADDRESS.search(lowered, end, stop) is not None
    if re.search(r"(?:\bmeu nome [ée]|\bme chamo|\bmy name is)[ \t]*$", before):
        return False
    return made_up.examples or made_up.covers(start, end)


def _with_repeats(text: str, found: list[NameSpan]) -> list[NameSpan]:
    """A name found for sure once is sure everywhere in the same text, and so are its first
    name and its last surname alone, capitalised as written and never inside an identifier
    ("Camila Nogueira Figueiredo ... Camila said"): a mask beside a name in clear hides
    nothing."""
    sure = {text[n.start : n.end] for n in found if n.confidence == "high" and not n.made_up}
    if not sure:
        return found
    by_start = {n.start: n for n in found}
    parts: set[str] = set()
    for name in sure:
        words = [w for w in _words(name) if w[:1].isupper() and len(w) > 2]
        # Only a name that starts with a known first name lends its parts: "Activate Skill"
        # found by a field must not make every "Skill" of the text a surname.
        if len(words) > 1 and words[0] in _KNOWN_FIRST:
            # never a word that leads into names ("Sou Ana Sou": "Sou" is no surname)
            parts |= {w for w in (words[0], words[-1]) if w.lower() not in _LEADS}
    for name in sorted(sure, key=len, reverse=True):
        _add_repeats(text, name, by_start, None)
    # A part alone inside a full name is that name: found by a binary search over the full
    # names' spans (their starts, and the furthest end reached up to each), linear in all.
    spans = sorted((n.start, n.end) for n in by_start.values())
    starts = [start for start, _ in spans]
    reach = list(itertools.accumulate((end for _, end in spans), max))
    for name in sorted(parts - sure):
        _add_repeats(text, name, by_start, (starts, reach))
    return sorted(by_start.values(), key=lambda n: n.start)


def _add_repeats(
    text: str,
    name: str,
    by_start: dict[int, NameSpan],
    full_names: tuple[list[int], list[int]] | None,
) -> None:
    """Every occurrence of ``name`` in ``text`` that is not inside a word (nor, for a part of a
    name, inside one of the ``full_names`` spans) into ``by_start``."""
    canonical = " ".join(name.lower().split())
    at = text.find(name)
    while at != -1:
        end = at + len(name)
        inside_word = (at and (text[at - 1].isalnum() or text[at - 1] in "_-")) or (
            end < len(text) and (text[end].isalnum() or text[end] in "_-")
        )
        covered = False
        if full_names is not None:
            starts, reach = full_names
            i = bisect.bisect_right(starts, at) - 1
            covered = i >= 0 and reach[i] > at
        if not inside_word and not covered:
            by_start[at] = NameSpan(at, end, canonical, "high")
        at = text.find(name, end)


# --- a found person's names alone, elsewhere -------------------------------------------------

# A word that could be a name alone: capitalised ("Camila") or in capitals ("FIGUEIREDO"),
# never inside an identifier: not after or before a letter, digit, "_", "-", ".", "/", "@",
# "#" or "$", and not before "(" or ".x" ("MariaDB", "Maria_id", "Maria.tsx", "Maria()").
# One class repeated once, behind a one-character look-behind: linear, a start inside a word
# fails at once.
_ALONE = re.compile(rf"(?<![\w.\-/@#$])(?:[{_UPPER}][{_LOWER}]+|[{_UPPER}]{{2,}})(?![\w\-(]|\.\w)")
_PARTICLES = frozenset({"da", "das", "de", "do", "dos", "e", "del", "van", "von", "der", "le"})


@dataclass(frozen=True)
class NameParts:
    """What a found name lends to other texts: its first name (masked alone within its own
    session) and its surnames (masked alone across the project), lowercase."""

    first: str
    surnames: tuple[str, ...]


def name_parts(name: str) -> NameParts | None:
    """The first name and surnames of a found name as written, or None when it has one word.
    Particles ("da", "de") and words of two letters or fewer are nobody's name alone.

    >>> name_parts("Camila Nogueira Figueiredo")
    NameParts(first='camila', surnames=('nogueira', 'figueiredo'))
    >>> name_parts("Ana de Souza"), name_parts("Madonna")
    (NameParts(first='ana', surnames=('souza',)), None)
    """
    words = [w.lower() for w in name.split()]
    if len(words) < 2:
        return None
    surnames = tuple(
        w for w in words[1:] if len(w) > 2 and w not in _PARTICLES and w not in _NOT_NAME
    )
    if len(words[0]) <= 2 or words[0] in _NOT_NAME:
        return None
    return NameParts(words[0], surnames)


def words_alone(text: str) -> list[tuple[int, int, bool]]:
    """(start, end, capitalised) of each word of ``text`` that could be a name alone: not
    inside an identifier. ``capitalised``: written "Camila", not "CAMILA".

    >>> [("Camila", True)] == [(t[s:e], c) for t in ["Camila fixed mariaDB in Maria.tsx"]
    ...                        for s, e, c in words_alone(t)]
    True
    """
    if text.lower() == text:
        return []
    return [(m.start(), m.end(), m.group(0)[1:2].islower()) for m in _ALONE.finditer(text)]
