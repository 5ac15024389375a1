"""Small text helpers shared by the summarizers and the evals (English and Portuguese cues)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = " \t\n\"'`\u201c\u201d\u2018\u2019\u00ab\u00bb()[]{}<>*_-\u2013\u2014:,.;!?"

# Cues that mark a constraint. Strong ones count anywhere in a clause ("we must never ...");
# weak ones only when they open the clause, as an imperative does ("Only touch billing/",
# "Keep the endpoint names"), so "we can only guess" or "Keep going" style narration and
# Portuguese "não" in "eu não sei" are not taken for rules. Word boundaries keep "only" out
# of "commonly".
_STRONG_CUES = re.compile(
    r"\b(must|must not|mustn't|should not|shouldn't|proibido|proibida|é proibido)\b",
    re.IGNORECASE,
)
# "do not", "never", "nunca" instruct when they open the clause, after a filler or "you" / "we"
# ("Never push to main", "and please don't touch auth", "you never commit"): later in a clause
# they describe ("helper methods never called", "recovery never derives the key", "I don't
# think so").
_NEGATIVE_CUES = re.compile(
    r"^(?:(?:please|and|but|also|so|just|then|now|ok|okay|remember|e|mas|também|tambem|"
    r"então|entao|por favor)[,!]?\s+){0,4}"
    r"(?:(?:you|we|você|voce|vocês|voces)\s+(?:should\s+|must\s+)?)?"
    r"(do not|don't|dont|never|nunca|jamais)\b",
    re.IGNORECASE,
)
_WEAK_CUES = re.compile(
    r"^(?:please\s+|por favor,?\s+)?(only|always|avoid|make sure|keep the|keep all|keep every|"
    # "Não mande", "não altere", "não faça": the negated subjunctive that Portuguese uses as
    # an imperative; not "não tem" or "não sei".
    r"n[ãa]o\s+\w{2,}[ea]\b|sempre|apenas|somente|só|evite|evitar|mantenha|manter|"
    r"(?:você|voce|vocês|voces)\s+(?:deve|devem|precisa|precisam))\b",
    re.IGNORECASE,
)
# A clause ends at a colon, semicolon or dash used as a separator.
_CLAUSE_SPLIT = re.compile(r"\s*(?::|;|\s[\u2013\u2014-]\s)\s*")


# What a weak cue must be followed by to instruct: a word ("Always run the tests"), not a
# value ("Always 0.7", "Always []": how a bug shows, described).
_CUE_THEN_WORD = re.compile(r"^\S+\s+(?:(?:to|de|a|the|o|os)\s+)?(?:\d[\d.,]*\s+)?[^\W\d_]")


def _is_rule(clause: str) -> bool:
    clause = clause.strip().lstrip("-*\u2022>\"'`\u201c\u2018 ")
    if clause.endswith("?"):
        return False  # a question asks, it does not set a rule
    if _STRONG_CUES.search(clause) or _NEGATIVE_CUES.search(clause):
        return True
    weak = _WEAK_CUES.search(clause)
    if weak is None:
        return False
    rest = clause[weak.start(1) :]
    return bool(_CUE_THEN_WORD.match(rest)) or " " in weak.group(1)


# A decision names a choice ("decided", "instead of", "rather than", "em vez de"), or states an
# intention with a scope ("I'll adapt only the client", "we'll keep the names"). Narration of
# the next action ("Let me check the config.", "I'll add it.", "Now let me read:") is not one.
_CHOICE_CUES = re.compile(
    r"\b(decided|decide to|decision|chose|choose|chosen|opted|opt for|going with|settled on|"
    r"plan is|approach is|instead of|rather than|in favou?r of|trade-?off|"
    r"decidi|decidimos|escolhi|escolhemos|optei|optamos|em vez d[eoa]s?|ao inv[ée]s d[eoa]s?)\b",
    re.IGNORECASE,
)
_INTENT_OPENER = re.compile(
    r"^(?:(?:now|ok|okay|so|first|next|then|great|good|perfect|alright|right)[,!.]?\s+)*"
    r"(?:i['\u2019]ll|i will|we['\u2019]ll|we will|let['\u2019]s|i['\u2019]m going to|"
    r"we['\u2019]re going to|vou|vamos)\b",
    re.IGNORECASE,
)
_SCOPE_CUES = re.compile(
    r"\b(only|instead|rather|not|never|without|keep|avoid|stick with|"
    r"apenas|somente|só|sem|não|nao|nunca|manter|evitar)\b",
    re.IGNORECASE,
)
_DONE_CUES = re.compile(
    r"\b(done|fixed|implemented|added|updated|created|passing|passes|completed|finished|"
    r"resolved|merged|pronto|feito|corrigi|corrigido|implementei|adicionei|atualizei|"
    r"concluí|concluido|concluído|passando)\b",
    re.IGNORECASE,
)
_NEXT_CUES = re.compile(
    r"\b(next|then|todo|to do|remaining|pending|still need|need to|will now|"
    r"próximo|proximo|próximos|em seguida|depois|falta|faltam|pendente|preciso)\b",
    re.IGNORECASE,
)

# A word character of a name: a letter, digit or underscore that is not Chinese, Japanese or
# Korean. Those scripts write no spaces, so a path or a name ends where they begin
# ("基于~/proj/claude.md全面review" names ~/proj/claude.md).
W = r"[^\W\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]"
_NW = rf"(?!{W})"  # the end of a name
_PW = rf"(?<!{W})"  # the start of a name

# A path: at least one slash or a dotted file name with a known-looking extension.
_PATH = re.compile(
    rf"(?<![@/.:+-])(?<!{W})(?:[~.]?/)?(?:(?:{W}|[.@+-])+/)+(?:{W}|[.@+-])+|"
    rf"(?<![@/.+-])(?<!{W})(?:{W}|-)+(?:\.(?:{W}|-)+)*\.(?:py|pyi|js|ts|tsx|jsx|json|ya?ml|toml|md|"
    rf"txt|rs|go|java|rb|ex|exs|sh|sql|html|css|cfg|ini|lock|c|h|cpp|hpp|kt|swift|php|cs){_NW}"
)
PATH_PATTERN = _PATH
# Identifiers worth keeping exact: snake_case, CamelCase, dotted names, call-like names, ids
# with digits (issue keys, ticket numbers). Plain English words never match.
_IDENT = re.compile(
    rf"{_PW}(?:[A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+|[a-z]+[A-Z][A-Za-z0-9]+|"
    rf"[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]+|[A-Za-z]+-\d+[A-Za-z0-9-]*|[A-Za-z]+\d+[A-Za-z]*){_NW}"
)


def sentences(text: str) -> list[str]:
    """Split prose into trimmed sentences.

    >>> sentences("Fix it. Do not touch auth!\\nThanks")
    ['Fix it.', 'Do not touch auth!', 'Thanks']
    """
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def normalize(text: str) -> str:
    """Casefold, strip accents and punctuation at the edges, collapse spaces.

    >>> normalize("  Não  mude a API pública! ")
    'nao mude a api publica'
    """
    if text.isascii():
        stripped = text
    else:
        decomposed = unicodedata.normalize("NFKD", text)
        stripped = "".join(c for c in decomposed if not unicodedata.combining(c))
    stripped = stripped.replace("\u2019", "'").replace("\u2018", "'")
    return _SPACE.sub(" ", stripped.casefold()).strip(_EDGE_PUNCT)


def contains(haystack_normalized: str, needle: str) -> bool:
    """Normalized containment: ``needle`` appears in an already normalized haystack."""
    n = normalize(needle)
    return bool(n) and n in haystack_normalized


_QUOTES = "\"'`\u201c\u201d\u2018\u2019"


def _unquoted(rule: str) -> str:
    """A rule without the bullet and the quotes a summary puts around the user's words."""
    bare = rule.strip().lstrip("-*\u2022> ").strip()
    if len(bare) > 2 and bare[0] in _QUOTES and bare.rstrip(".")[-1:] in _QUOTES:
        bare = bare.rstrip(".")[1:-1].strip()
    return bare


def constraint_sentences(text: str, max_len: int = 300) -> list[str]:
    """Rules the text states ("do not", "never", "must", "only", "não", "nunca"...), each from
    the clause that states it, so a preamble such as "One rule for the whole task:" is not
    part of what must survive.

    >>> constraint_sentences("Migrate billing. Do not change the public API. Nunca use float.")
    ['Do not change the public API.', 'Nunca use float.']
    >>> constraint_sentences("One rule: only touch billing/. Keep going, we can only guess.")
    ['only touch billing/.']
    """
    out: list[str] = []
    for sentence in sentences(text):
        clauses = [c for c in _CLAUSE_SPLIT.split(sentence) if c.strip()]
        for index, clause in enumerate(clauses):
            if not _is_rule(clause):
                continue
            # The rule runs from its clause to the end of the sentence ("Do not X: use Y").
            rule = sentence[sentence.index(clause) :] if index else sentence
            rule = _unquoted(rule)
            if rule and len(rule) <= max_len:
                out.append(rule)
            break
    return out


def is_decision(sentence: str) -> bool:
    """A choice the assistant made, not narration of its next step.

    >>> is_decision("Let me check the config."), is_decision("I'll add it next to the header.")
    (False, False)
    >>> is_decision("I'll adapt only the client."), is_decision("Use httpx instead of requests.")
    (True, True)
    """
    s = sentence.strip()
    if s.endswith(("?", ":")):
        return False  # a question, or the lead-in to a tool call
    if _CHOICE_CUES.search(s):
        return True
    return bool(_INTENT_OPENER.match(s) and _SCOPE_CUES.search(s))


# Narration: the agent telling what it is about to do ("Let me check the config.", "Now I'll
# run the tests:"), or a bare reaction ("Good catch!", "You're absolutely right!").
_NARRATION = re.compile(
    r"^(?:(?:now|ok|okay|so|first|next|then|great|good|perfect|alright|right|actually)"
    r"[,!.]?\s+)*(?:let me|let['\u2019]s|i['\u2019]ll|i will|i['\u2019]m going to|"
    r"deixa eu|vou)\b",
    re.IGNORECASE,
)
_REACTION = re.compile(
    r"^(?:(?:you['\u2019]re |you are )?(?:absolutely |exactly )?right|good catch|great|perfect|"
    r"excellent|got it|ok(?:ay)?|sure|understood|exactly|interesting|hmm)[!.,]*$",
    re.IGNORECASE,
)


def is_narration(sentence: str) -> bool:
    """Whether a sentence of the agent narrates its next action or only reacts.

    >>> [is_narration(s) for s in ("Let me check the config.", "Now I'll run the tests:",
    ...     "Good catch!", "Fixed the rounding in charge().", "I'll keep the API unchanged.")]
    [True, True, True, False, True]
    """
    s = sentence.strip()
    return bool(_NARRATION.match(s) or _REACTION.match(s) or s.endswith(":"))


def said_sentences(text: str) -> list[str]:
    """The sentences of an agent's text that say something: no narration, no reaction."""
    return [s for s in sentences(text) if not is_narration(s)]


def decision_sentences(text: str, max_len: int = 300) -> list[str]:
    return [s for s in sentences(text) if len(s) <= max_len and is_decision(s)]


def done_sentences(text: str, max_len: int = 300) -> list[str]:
    return [s for s in said_sentences(text) if len(s) <= max_len and _DONE_CUES.search(s)]


def next_sentences(text: str, max_len: int = 300) -> list[str]:
    return [s for s in said_sentences(text) if len(s) <= max_len and _NEXT_CUES.search(s)]


def find_paths(text: str) -> list[str]:
    """File paths mentioned in text, in order of first appearance.

    >>> find_paths("read billing/api.py and setup.cfg, not http://x")
    ['billing/api.py', 'setup.cfg']
    """
    seen: dict[str, None] = {}
    for m in _PATH.finditer(text):
        p = m.group(0).rstrip(".,:;")
        if "://" in text[max(0, m.start() - 3) : m.start() + 3] or p.startswith("//"):
            continue
        if len(p) >= 3:
            seen.setdefault(p, None)
    return list(seen)


def find_identifiers(text: str) -> list[str]:
    """Code identifiers and ids with digits, in order of first appearance.

    >>> find_identifiers("call charge_v2 on BillingClient for ticket BILL-42")
    ['charge_v2', 'BillingClient', 'BILL-42']
    """
    seen: dict[str, None] = {}
    for m in _IDENT.finditer(text):
        seen.setdefault(m.group(0), None)
    return list(seen)


def dedupe(items: Iterable[str]) -> list[str]:
    """Keep the first of items equal after :func:`normalize`, in order."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = normalize(item)
        if key and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def clip(text: str, limit: int) -> str:
    """Cut text at ``limit`` characters, marking the cut.

    >>> clip("abcdef", 4)
    'abc…'
    """
    text = text.strip()
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


# --- rule words: what a rule says, whatever the wording -------------------------------------

NEGATIONS = re.compile(
    r"\b(?:do not|does not|did not|don't|dont|doesn't|didn't|never|must not|mustn't|"
    r"should not|shouldn't|cannot|can't|can not|won't|will not|not|no|avoid|avoiding|"
    r"nao|nunca|jamais|evite|evitar|proibido|proibida|sem)\b"
)
RULE_NOT = "~not"


def wordset(words: str) -> frozenset[str]:
    """The words of a space-separated list."""
    return frozenset(words.split())


STOPWORDS = wordset(
    "a an the to of in on at for and or is are be been being it its this that these those "
    "with we you your our us i me my please por favor o os as de do da dos das e um uma "
    "em no na nos nas para que by from any all so just also must should shall always "
    "ever will would can could may might have has had was were which who whom what when "
    "there here then than into onto over about before after earlier later now again one "
    "rule rules use using used usar sempre deve devem precisa precisam voce voces"
)
RULE_WORD = re.compile(r"~not|[\w][\w'./-]*")


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
    norm = NEGATIONS.sub(f" {RULE_NOT} ", normalize(text).replace("\u2019", "'"))
    out: set[str] = set()
    for w in RULE_WORD.findall(norm):
        if w == RULE_NOT:
            out.add(RULE_NOT)
            continue
        if w in STOPWORDS:
            continue
        if w.startswith("un") and len(w) >= 7:
            out.add(RULE_NOT)
            w = w[2:]
        stem = _stem(w)
        if stem and stem not in STOPWORDS:
            out.add(stem)
    return frozenset(out)


RULE_COVER = 0.75


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
    return common >= RULE_COVER * len(wa) and common >= 0.5 * len(wb)
