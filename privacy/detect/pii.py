"""Personal data detectors for LGPD review: find, normalize and mask identifiers in text.

    >>> [(d.kind, d.level) for d in scan("CPF 529.982.247-25, Ana@UOL.com.br, noreply@x.com")]
    [('cpf', 'finding'), ('email', 'finding'), ('email', 'info')]
    >>> mask("CPF 529.982.247-25")
    'CPF [cpf ***.***.***-25]'

Who does what:
- check digits come from libraries, not from this file: python-stdnum (`stdnum.br.cpf`,
  `stdnum.br.cnpj` including the alphanumeric CNPJ, `stdnum.luhn` for cards) and validate-docbr
  (`PIS`, `CNH`, `CNS`, `TituloEleitoral`). A look-alike whose check digits fail is not reported.
- pattern kinds (e-mail, phone, CEP, RG, IP, Pix key, person names) are regular expressions
  here; `ipaddress` validates IPs.
- secrets (kind `secret`: passwords in URLs and configuration, API keys, JWTs, private keys)
  are ``secrets.py``'s; a secret's span wins over any other kind, and its mask keeps only a
  key's published prefix and the length: `[secret sk-ant-… 108 chars]`.

The scan runs on a normalized copy of the text (NFKC, so full-width digits count; zero-width
characters dropped) and maps every position back to the original. Digit groups separated by a
space, no-break space, dot, dash or slash are joined when the joined digits validate.

A value that looks like personal data and is nobody's (a role mailbox, a public resolver, an
example domain: ``not_personal.py``) is found at level "info": never masked.

Masking keeps the kind and the last two characters of the value, separators kept in place:
`[cpf ***.***.***-25]`, `[email a***@***.com]`, `[phone +55 ** *****-**21]`. Names keep
initials: `[person_name M*** S***]`. Nothing else of the value survives.

The module is pure (no Django) and fast: plain ASCII or already-NFKC text skips the
normalization loop, and validators run only on candidates (see benchmarks/pii.py).

(About 650 lines, over the usual 600: every detector shares the normalized copy and its map
back to the original positions; split by kind, each would need that machinery again.)
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import hmac
import ipaddress
import re
import sys
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from stdnum import luhn
from stdnum.br import cnpj as stdnum_cnpj
from stdnum.br import cpf as stdnum_cpf
from validate_docbr import CNH, CNS, PIS, TituloEleitoral

from compaction.engine.memo import text_digest
from privacy.detect import addresses, context, not_personal, person_names, secrets
from privacy.detect.normalized import Normalized as _Normalized
from privacy.detect.not_personal import Level

KINDS: tuple[str, ...] = (
    "cpf",
    "cnpj",
    "pis",
    "cnh",
    "titulo_eleitor",
    "cns",
    "credit_card",
    "email",
    "phone",
    "cep",
    "rg",
    "ip",
    "pix_key",
    "person_name",
    "street_address",
    "secret",
)
CHECK_DIGIT_KINDS: frozenset[str] = frozenset(
    {"cpf", "cnpj", "pis", "cnh", "titulo_eleitor", "cns", "credit_card"}
)
Confidence = Literal["high", "review"]


@dataclass(frozen=True)
class Detection:
    """One identifier found in a text; `start`/`end` index the ORIGINAL text."""

    kind: str
    start: int
    end: int
    value: str
    normalized: str
    confidence: Confidence
    # "info": looks like personal data and is nobody's (not_personal.py): listed, never masked
    level: Level = "finding"


# --- check-digit kinds over runs of digit groups ---------------------------------------------

# A numeric candidate: at least eight digits joined by single separators (space, dot, dash,
# slash), or a dotted quad. Prose numbers (years, amounts, counts) are shorter and skipped in C.
_RUN = re.compile(
    r"[0-9](?<![0-9A-Za-z][0-9])"  # the boundary is checked after the first digit: faster
    r"(?:(?:[ .\-/]?[0-9]){7,}|[0-9]{0,2}(?:\.[0-9]{1,3}){3})(?![0-9A-Za-z@])"
)
_GROUP = re.compile(r"[0-9]+")
_ALNUM_CNPJ = re.compile(
    r"([0-9A-Z](?<![0-9A-Za-z][0-9A-Z])[0-9A-Z][ .]?[0-9A-Z]{3}[ .]?[0-9A-Z]{3}[ /]?[0-9A-Z]{4}"
    r"[ \-]?[0-9]{2})(?![0-9A-Za-z])"
)
_MAX_GROUPS = 8
_CONTEXT = 40  # characters before a candidate searched for a keyword

_KEYWORDS: dict[str, re.Pattern[str]] = {
    # Letter boundaries, not word boundaries: a field name "cpf_titular" or "nr_cnpj" names it.
    "cpf": re.compile(r"(?<![a-z])cpf(?![a-z])", re.IGNORECASE),
    "cnpj": re.compile(r"(?<![a-z])cnpj(?![a-z])", re.IGNORECASE),
    "pis": re.compile(r"(?<![a-z])(pis|pasep|nis|nit)(?![a-z])", re.IGNORECASE),
    "cnh": re.compile(r"(?<![a-z])(cnh|habilita[çc][ãa]o|driver'?s licen[cs]e)(?![a-z])", re.I),
    "titulo_eleitor": re.compile(r"\b(t[íi]tulo|eleitor|voter)", re.IGNORECASE),
    "cns": re.compile(
        r"(?<![a-z])(cns|cart[ãa]o (do )?sus|cart[ãa]o nacional de sa[úu]de)(?![a-z])", re.I
    ),
    "credit_card": re.compile(r"\b(cart[ãa]o|card|cr[ée]dito|credit|visa|master)", re.I),
    "phone": re.compile(
        r"\b(tel|telefone|fone|celular|cel|whats(app)?|zap|phone|mobile|ligue|call)\b", re.I
    ),
    "cep": re.compile(r"\b(cep|c\.e\.p\.?)\b", re.IGNORECASE),
    # not ripgrep's command ("rg -n 10703774") nor a DOI's "/RG.2.1.4773.5363"
    "rg": re.compile(r"(?<![\w/])(rg|identidade|registro geral)\b(?![ \t]+-|\.\d)", re.I),
    "pix_key": re.compile(r"\bpix\b", re.IGNORECASE),
}

_cnh = CNH()
_cns = CNS()
_pis = PIS()
_titulo = TituloEleitoral()


def _card_valid(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and digits[0] in "3456" and luhn.is_valid(digits)


def _card_brand_known(digits: str) -> bool:
    if digits[0] == "4" or digits[:2] in {"34", "37", "36", "38"}:
        return True
    if digits[:2] in {"51", "52", "53", "54", "55", "65"} or digits[:4] in {"6011", "6062"}:
        return True
    return digits[:4] in {"4011", "4389", "5041", "5066", "5067", "6277", "6363", "6504"}


_VALIDATORS: dict[str, Callable[[str], bool]] = {
    "cpf": stdnum_cpf.is_valid,
    "cnpj": stdnum_cnpj.is_valid,
    "pis": _pis.validate,
    "cnh": _cnh.validate,
    "titulo_eleitor": _titulo.validate,
    "cns": _cns.validate,
    "credit_card": _card_valid,
}
# Kinds by digit count, most likely first when no keyword or shape decides.
_BY_LENGTH: dict[int, tuple[str, ...]] = {
    11: ("cpf", "pis", "cnh"),
    12: ("titulo_eleitor",),
    13: ("credit_card",),
    14: ("cnpj", "credit_card"),
    15: ("cns", "credit_card"),
    16: ("credit_card",),
    17: ("credit_card",),
    18: ("credit_card",),
    19: ("credit_card",),
}
# Group shapes (digits per group) that say which document a number is.
_SHAPES: dict[tuple[int, ...], str] = {
    (3, 3, 3, 2): "cpf",
    (3, 5, 2, 1): "pis",
    (2, 3, 3, 4, 2): "cnpj",
    (3, 4, 4, 4): "cns",
    (4, 4, 4): "titulo_eleitor",
    (4, 4, 4, 4): "credit_card",
}
# Found without a keyword or a telling shape, these kinds are weak evidence.
_REVIEW_WHEN_BARE = frozenset({"pis", "cnh", "cns"})


def _keyword_kinds(text: str, start: int) -> set[str]:
    """Kinds whose keyword appears in the few characters before `start`."""
    window = text[max(0, start - _CONTEXT) : start]
    return {kind for kind, pattern in _KEYWORDS.items() if pattern.search(window)}


def _classify(
    digits: str, shape: tuple[int, ...], keywords: Callable[[], set[str]]
) -> tuple[str, Confidence, bool] | None:
    """(kind, confidence, cued) of a check-digit-valid number, or None: ``cued`` when a
    keyword names the kind or the number has the document's own punctuation."""
    candidates = _BY_LENGTH.get(len(digits))
    if not candidates:
        return None
    valid = [kind for kind in candidates if _VALIDATORS[kind](digits)]
    if not valid:
        return None
    named = keywords()
    for kind in valid:
        if kind in named:
            return kind, "high", True
    # Named or shaped as one document whose check digits fail: a look-alike, not another kind.
    if any(kind in named for kind in candidates):
        return None
    if "phone" in named and _phone_e164(digits):
        return None  # a phone that happens to pass a check digit: the phone pass reports it
    shaped = _SHAPES.get(shape)
    if shaped is not None:
        return (shaped, "high", True) if shaped in valid else None
    kind = valid[0]
    if kind == "credit_card" and not _card_brand_known(digits):
        return kind, "review", False
    return kind, ("review" if kind in _REVIEW_WHEN_BARE else "high"), False


def _check_digit_hits(
    norm: _Normalized, groups: list[tuple[int, int]], found: list[Detection]
) -> None:
    text = norm.text
    i = 0
    while i < len(groups):
        hit: tuple[int, str, str, Confidence, bool] | None = None
        for j in range(min(len(groups), i + _MAX_GROUPS) - 1, i - 1, -1):
            # Groups of one digit are joined only as the last (PIS's check digit):
            # "1 2 3 4" is a list, not a number.
            if any(e - s < 2 for s, e in groups[i:j]):
                continue
            if _has_decimal_part(text, groups, i, j):
                continue
            shape = tuple(e - s for s, e in groups[i : j + 1])
            if sum(shape) not in _BY_LENGTH:
                continue
            digits = "".join(text[s:e] for s, e in groups[i : j + 1])
            at = groups[i][0]
            classified = _classify(digits, shape, functools.partial(_keyword_kinds, text, at))
            if classified:
                hit = (j, digits, *classified)
                break
        if hit is None:
            i += 1
            continue
        j, digits, kind, confidence, cued = hit
        start, end = groups[i][0], groups[j][1]
        level = "finding" if cued else context.number_level(text, start, end, _KEYWORDS[kind])
        found.append(_detection(norm, kind, start, end, digits, confidence, level))
        i = j + 1


def _has_decimal_part(text: str, groups: list[tuple[int, int]], i: int, j: int) -> bool:
    """Whether groups i..j of a run read as (part of) a decimal number, not a document: a group
    of more than five digits after a point ("latency": 4.883108139038086, an embedding's
    -0.00049407856, a time's nanoseconds), which no document's format has; or one last digit
    after a point that follows four or more ("1234567890.0", a Unix time, not PIS's check
    digit). Floats in logs pass a check digit about one time in ten."""
    for k in range(i, j + 1):
        start, end = groups[k]
        if end - start > 5 and start >= 2 and text[start - 1] == "." and text[start - 2].isdigit():
            return True
    if j > i:
        (before_start, before_end), (start, end) = groups[j - 1], groups[j]
        return end - start == 1 and before_end - before_start > 3 and text[start - 1] == "."
    return False


def _has_keyword(text: str, start: int, kind: str) -> bool:
    return _KEYWORDS[kind].search(text, max(0, start - _CONTEXT), start) is not None


def _look_alike(text: str, groups: list[tuple[int, int]]) -> bool:
    """True when the whole run is shaped or named as a document whose check digits fail.

    Such a run is reported as nothing: not as a shorter number found inside it, nor a phone.
    """
    shape = tuple(e - s for s, e in groups)
    shaped = _SHAPES.get(shape)
    candidates = _BY_LENGTH.get(sum(shape), ())
    if shaped is None and not candidates:
        return False  # most runs: dates, amounts, ids of no document's length
    digits = "".join(text[s:e] for s, e in groups)
    if shaped is not None:
        return not _VALIDATORS[shaped](digits)
    named = [kind for kind in candidates if _has_keyword(text, groups[0][0], kind)]
    return bool(named) and not any(_VALIDATORS[kind](digits) for kind in named)


def _names_a_host(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Whether an address can point at someone's machine: loopback (127.0.0.1 in every dev
    log), unspecified, link-local, multicast and reserved addresses cannot.

    >>> _names_a_host(ipaddress.IPv4Address("127.0.0.1")), _names_a_host(
    ...     ipaddress.IPv4Address("189.40.12.7"))
    (False, True)
    """
    return not (
        address.is_loopback
        or address.is_unspecified
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
    )


def _ip_level(
    text: str, start: int, end: int, address: ipaddress.IPv4Address | ipaddress.IPv6Address
) -> Level:
    """``info`` for an address nobody owns as a person (not_personal.py) or one whose context
    names a machine or no one (context.py); ``finding`` when it points at a person."""
    if not_personal.ip_level(address) == "info":
        return "info"
    return context.ip_level(text, start, end)


def _in_longer_dotted_number(text: str, start: int, end: int) -> bool:
    """Whether the four numbers at [start, end) go on with a fifth, or come after a letter or
    number, each joined by a dot: "PS3.3 C.7.6.3.1.2", "OID 1.3.6.1.4.1"."""
    after = text[end : end + 2]
    before = text[max(0, start - 2) : start]
    return (len(after) == 2 and after[0] == "." and after[1].isdigit()) or (
        len(before) == 2 and before[1] == "." and before[0].isalnum()
    )


def _inside_uuid(text: str, start: int, end: int) -> bool:
    """Whether the digits at [start, end) are part of a UUID (looked for only when a hyphen
    touches them, so ordinary numbers cost one comparison)."""
    if text[start - 1 : start] != "-" and text[end : end + 1] != "-":
        return False
    window = _UUID.finditer(text, max(0, start - 36), min(len(text), end + 36))
    return any(m.start(1) <= start and end <= m.end(1) for m in window)


_CODE_PREFIX = re.compile(r"(?<![0-9A-Za-z])[A-Za-z]{1,12}-\Z")


def _reference_code(text: str, start: int, groups: list[tuple[int, int]]) -> bool:
    """Whether the run at ``start`` is a reference code: letters and a hyphen, not a
    document's name, then digits grouped as no document is ("protocolo AT-2026-4699089").
    Digits in one piece ("cliente-52998224725", a CPF inside an id) or in a document's own
    format are still read, and so is "CPF-..." or "tel-..."."""
    if text[start - 1 : start] != "-" or len(groups) < 2:
        return False
    if tuple(e - s for s, e in groups) in _SHAPES:
        return False
    prefix = _CODE_PREFIX.search(text, max(0, start - 13), start)
    if prefix is None:
        return False
    letters = prefix.group(0)[:-1]
    return not any(pattern.search(letters) for pattern in _KEYWORDS.values())


_VERSION_AFTER = re.compile(
    r"\s*(?:\+(?![\d.])|or (?:higher|later|newer|above)\b|ou (?:superior|mais)\b)"
)


def _may_hold_phone(text: str, start: int, end: int, digit_count: int) -> bool:
    """Whether a phone can end inside the run at [start, end): it has ten digits or more, or
    follows a parenthesised area code ("(11) 98765-4321"); and no slash, which a phone never
    crosses (``_PHONE`` refuses a digit and a slash on either side). Dates and most ids do not
    pay for the phone pattern."""
    if "/" in text[start:end]:
        return False
    return digit_count >= 10 or ")" in text[max(0, start - 2) : start]


def _scan_runs(norm: _Normalized, found: list[Detection]) -> None:
    text = norm.text
    for run in _RUN.finditer(text):
        start, end = run.span()
        if _DOTTED_QUAD.fullmatch(text, start, end):
            if _in_longer_dotted_number(text, start, end):
                continue  # a section number or an OID ("C.7.6.3.1.2"), not an address
            if _VERSION_AFTER.match(text, end):
                continue  # "Git 2.39.5.2 or higher": a version, not an address
            try:
                address = ipaddress.IPv4Address(run.group(0))
            except ValueError:
                continue
            if _names_a_host(address):
                level = _ip_level(text, start, end, address)
                found.append(_detection(norm, "ip", start, end, str(address), "high", level))
            continue
        if _inside_uuid(text, start, end):
            continue  # "f570967d-c939-4f10-8cf0-929492801236": an id, whatever its digits pass
        groups = [(m.start(), m.end()) for m in _GROUP.finditer(text, start, end)]
        if _reference_code(text, start, groups):
            continue
        digit_count = sum(e - s for s, e in groups)
        if digit_count >= 11:  # no document is shorter: most runs (dates, ids) skip this
            if _look_alike(text, groups):
                continue
            _check_digit_hits(norm, groups, found)
        if _may_hold_phone(text, start, end, digit_count):
            for match in _PHONE.finditer(text, max(0, start - 10), end):
                _phone_hit(norm, match, found)
        for match in _CEP.finditer(text, start, end):
            value = match.group(1)
            if (len(value) == 8 or "." in value) and not _has_keyword(text, start, "cep"):
                continue  # eight bare digits are a CEP only after the word
            digits = re.sub(r"[^0-9]", "", value)
            found.append(_detection(norm, "cep", match.start(1), match.end(1), digits, "high"))
        if _has_keyword(text, start, "rg"):
            for match in _RG.finditer(text, start, min(len(text), end + 2)):
                canonical = re.sub(r"[^0-9X]", "", match.group(1).upper())
                found.append(
                    _detection(norm, "rg", match.start(1), match.end(1), canonical, "high")
                )


def _scan_alnum_cnpj(norm: _Normalized, found: list[Detection]) -> None:
    for match in _ALNUM_CNPJ.finditer(norm.text):
        value = match.group(1)
        compact = re.sub(r"[ ./\-]", "", value)
        if compact.isdigit() or not any(c.isdigit() for c in compact[:12]):
            continue  # numeric CNPJs come from the digit runs; all letters is a word
        if stdnum_cnpj.is_valid(compact):
            found.append(_detection(norm, "cnpj", match.start(1), match.end(1), compact, "high"))


# --- pattern kinds -----------------------------------------------------------------------------

_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}\.)+"
    r"[A-Za-z]{2,24}(?![A-Za-z0-9])"
)
_PHONE = re.compile(
    r"(?<![0-9A-Za-z+])(?<![0-9][ .\-/])(?:\+?55[ .\-]?)?"
    r"(?:\(0?([1-9][0-9])\)|0?([1-9][0-9]))[ .\-]?"
    r"(9[ .\-]?[0-9]{4}|[2-5][0-9]{3})[ .\-]?([0-9]{4})(?![0-9A-Za-z]|[ .\-/][0-9])"
)
_VALID_DDD = frozenset(
    str(code)
    for code in (
        *range(11, 20), 21, 22, 24, 27, 28, *range(31, 36), 37, 38, *range(41, 50), 51,
        *range(53, 56), *range(61, 70), 71, *range(73, 76), 77, 79, *range(81, 90),
        *range(91, 100),
    )
)  # fmt: skip
_CEP = re.compile(r"(?<![0-9A-Za-z.\-])([0-9]{2}\.?[0-9]{3}-[0-9]{3}|[0-9]{8})(?![0-9A-Za-z])")
_RG = re.compile(r"(?<![0-9A-Za-z])([0-9]{1,2}\.?[0-9]{3}\.?[0-9]{3}-?[0-9Xx])(?![0-9A-Za-z])")
_DOTTED_QUAD = re.compile(r"[0-9]{1,3}(?:\.[0-9]{1,3}){3}")
_IPV6 = re.compile(
    r"(?<![0-9A-Fa-f:])((?:[0-9A-Fa-f]{1,4}:){2,7}:?[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{1,4})*)"
    r"(?![0-9A-Fa-f:])"
)
_IPV6_HINT = re.compile(r":[0-9A-Fa-f]{0,4}:")
_UUID = re.compile(
    r"(?<![0-9A-Fa-f-])([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
    r"[0-9a-fA-F]{12})(?![0-9A-Fa-f-])"
)
# A Pix key: a UUID after the word "pix" (also ``chave_pix``).
_PIX_CUE = re.compile(r"(?:\b|(?<=_))pix\b", re.IGNORECASE)


def _phone_e164(digits: str) -> str | None:
    """'11987654321' -> '+5511987654321' when it is a Brazilian landline or mobile."""
    if digits.startswith("55") and len(digits) in (12, 13):
        digits = digits[2:]
    if len(digits) not in (10, 11) or digits[:2] not in _VALID_DDD:
        return None
    if len(digits) == 11 and digits[2] != "9":
        return None
    if len(digits) == 10 and digits[2] not in "2345":
        return None
    return "+55" + digits


def _phone_hit(norm: _Normalized, match: re.Match[str], found: list[Detection]) -> None:
    text = norm.text
    digits = re.sub(r"[^0-9]", "", match.group(0))
    if digits.startswith("0"):
        digits = digits[1:]
    e164 = _phone_e164(digits)
    if e164 is None:
        return
    formatted = any(c in match.group(0) for c in "()+ -")
    if not formatted and "phone" not in _keyword_kinds(text, match.start()):
        return  # a bare digit string is a phone only next to a phone word
    found.append(_detection(norm, "phone", match.start(), match.end(), e164, "high"))


def _windows(text: str, needle: str, before: int, after: int) -> list[tuple[int, int]]:
    """Merged (start, end) windows around every occurrence of `needle`."""
    windows: list[tuple[int, int]] = []
    at = text.find(needle)
    while at != -1:
        start, end = max(0, at - before), min(len(text), at + after)
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
        at = text.find(needle, at + 1)
    return windows


# "u003c" of an escaped "<" before an address: "\\u003cbot@corp.com".
_ESCAPED_SIGN = re.compile(r"u00[0-9a-fA-F]{2}(?=[A-Za-z0-9])")
# What follows a host in an scp or git target: a colon and a path, no space.
_SSH_TARGET = re.compile(r":[\w~/.$]")


def _scan_patterns(norm: _Normalized, found: list[Detection]) -> None:
    text = norm.text
    # read once, on the first address, and lent to the names below
    made_up: person_names.MadeUp | None = None
    for start, end in _windows(text, "@", 65, 256):
        for match in _EMAIL.finditer(text, start, end):
            value, at = match.group(0), match.start()
            if text[at - 3 : at] == "://":
                continue  # the user of a URL (ssh://aur@aur.archlinux.org/x.git), no mailbox
            if text[at - 1 : at] == "\\" and _ESCAPED_SIGN.match(value):
                # a sign escaped in JSON written out ("\\u003cbot@corp.com\\u003e")
                value, at = value[5:], at + 5
            if text[at - 1 : at] == "\\" and value[0] in "ntr":
                # an escaped break or tab written out ("origin\\tgit@github.com")
                value, at = value[1:], at + 1
                if not value[0].isalnum():
                    continue
            level = not_personal.email_level(value)
            if level is None:
                continue  # a file name such as icon@2x.png
            if level == "finding" and _SSH_TARGET.match(text, match.end()):
                level = "info"  # an scp or git target's login: "login@gerrit.host:hooks/x"
            if level == "finding":
                if made_up is None:
                    made_up = person_names.MadeUp.of(person_names.lowered_in_place(text))
                if person_names.in_made_up_data(text, at, match.end(), made_up):
                    level = "info"  # a test's or a seed's made-up address
            found.append(_detection(norm, "email", at, match.end(), value.lower(), "high", level))
    # Two colons at most four hex digits apart, found by a literal-led search: times ("10:45")
    # and JSON ("a": 1) never pay for the address pattern.
    if _IPV6_HINT.search(text):
        for match in _IPV6.finditer(text):
            value = match.group(1)
            if value.count(":") < 2:
                continue
            try:
                address6 = ipaddress.IPv6Address(value)
            except ValueError:
                continue
            if not _names_a_host(address6):
                continue
            level = _ip_level(text, match.start(1), match.end(1), address6)
            found.append(
                _detection(norm, "ip", match.start(1), match.end(1), str(address6), "high", level)
            )
    for cue in _PIX_CUE.finditer(text) if "pix" in text.lower() else ():
        key = _UUID.search(text, cue.end(), cue.end() + _CONTEXT + 36)
        if key:
            value = key.group(1).lower()
            found.append(_detection(norm, "pix_key", key.start(1), key.end(1), value, "high"))
    for name in person_names.find(text, made_up):
        level = "info" if name.made_up else not_personal.name_level(name.canonical)
        found.append(
            _detection(
                norm, "person_name", name.start, name.end, name.canonical, name.confidence, level
            )
        )


def _scan_addresses(norm: _Normalized, found: list[Detection]) -> None:
    for address in addresses.find(norm.text):
        normalized = addresses.normalized(address.value)
        found.append(
            _detection(norm, "street_address", address.start, address.end, normalized, "high")
        )


def _scan_secrets(norm: _Normalized, found: list[Detection]) -> None:
    for secret in secrets.find(norm.text):
        found.append(
            _detection(norm, "secret", secret.start, secret.end, secret.value, "high", secret.level)
        )


# --- public API --------------------------------------------------------------------------------


def _detection(
    norm: _Normalized,
    kind: str,
    start: int,
    end: int,
    normalized: str,
    confidence: Confidence,
    level: Level = "finding",
) -> Detection:
    orig_start, orig_end = norm.span(start, end)
    return Detection(
        kind=kind,
        start=orig_start,
        end=orig_end,
        value=norm.original[orig_start:orig_end],
        normalized=normalized,
        confidence=confidence,
        level=level,
    )


# A secret's span is its own (a password before "@host" is not an e-mail's local part).
# An address's span holds a street named after a person ("Rua José Bonifácio, 12"): the address.
_PRIORITY: dict[str, float] = {kind: index for index, kind in enumerate(KINDS)}
_PRIORITY |= {"secret": -1, "street_address": _PRIORITY["person_name"] - 0.5}


def _detector_version() -> str:
    """What :func:`scan` finds depends on: the detector's files, the check digit libraries,
    the regex engine and the Unicode tables of the running Python. Any change gives another
    version, so a text found clean under one is never taken as clean under the next. "" when
    the source cannot be read: then nothing is taken as clean."""
    try:
        # Every module of the detector: secrets, names, context rules and this file.
        here = Path(__file__)
        siblings = sorted(p for p in here.parent.glob("*.py") if p.name != here.name)
        sources = [here.read_bytes(), *(path.read_bytes() for path in siblings)]
    except OSError:
        return ""
    parts = [
        *sources,
        sys.version.encode(),
        unicodedata.unidata_version.encode(),
        *(metadata.version(name).encode() for name in ("python-stdnum", "validate-docbr")),
    ]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]


DETECTOR_VERSION = _detector_version()


def scan(text: str) -> list[Detection]:
    """Every identifier in `text`, in order, without overlaps.

    >>> scan("tel (11) 98765-4321")[0].normalized
    '+5511987654321'
    """
    if not text:
        return []
    norm = _Normalized(text)
    found: list[Detection] = []
    _scan_runs(norm, found)
    _scan_alnum_cnpj(norm, found)
    _scan_patterns(norm, found)
    _scan_addresses(norm, found)
    _scan_secrets(norm, found)
    # Overlaps: check-digit kinds first (KINDS order), then the longer match.
    found.sort(key=lambda d: (_PRIORITY[d.kind], d.confidence != "high", d.start - d.end))
    kept: list[Detection] = []
    starts: list[int] = []  # of the kept detections, in text order; they never overlap
    for detection in found:
        at = bisect.bisect_left(starts, detection.start)
        before = kept[at - 1] if at else None
        after = kept[at] if at < len(kept) else None
        if (before is not None and before.end > detection.start) or (
            after is not None and after.start < detection.end
        ):
            continue
        starts.insert(at, detection.start)
        kept.insert(at, detection)
    return kept


class ScanMemo:
    """:func:`scan` that remembers its results for one pass reading the same strings more than
    once (the findings scan and the subject index read every message). Texts are keyed by a
    digest, so the memo holds no copy of them, only what was found.

    >>> memo = ScanMemo()
    >>> first = memo.scan("CPF 529.982.247-25")
    >>> [d.kind for d in first], memo.scan("CPF 529.982.247-25") is first
    (['cpf'], True)
    """

    def __init__(self) -> None:
        self._found: dict[bytes, list[Detection]] = {}

    def scan(self, text: str) -> list[Detection]:
        if not text:
            return []
        key = text_digest(text)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = scan(text)
        return found


def _keep_tail(value: str, keep: int) -> str:
    """Replace every letter or digit but the last `keep` by '*', separators kept."""
    significant = [i for i, c in enumerate(value) if c.isalnum()]
    hidden = set(significant[: max(0, len(significant) - keep)])
    return "".join("*" if i in hidden else c for i, c in enumerate(value))


def masked_preview(detection: Detection) -> str:
    """The masked form of one detection, without the kind.

    >>> masked_preview(scan("CPF 529.982.247-25")[0])
    '***.***.***-25'
    """
    value = detection.value
    if detection.kind == "email":
        local, _, domain = value.partition("@")
        tld = domain.rsplit(".", 1)[-1] if "." in domain else ""
        return f"{local[:1]}***@***.{tld}"
    if detection.kind == "secret":
        # Never a character of the value: the published prefix of a key, and the length.
        return f"{secrets.prefix_of(detection.value)}… {len(detection.normalized)} chars"
    if detection.kind == "street_address":
        # The street's type word and the number's last digit: "Rua ***, *3".
        head = value.split()[0]
        return f"{head} ***, *{value[-1]}"
    if detection.kind == "person_name":
        return " ".join(word[:1] + "***" for word in value.split() if word[:1].isupper())
    return _keep_tail(value, 2)


def mask(text: str, detections: Sequence[Detection] | None = None) -> str:
    """`text` with every detection replaced by `[kind masked-preview]`.

    >>> mask("e-mail ana@uol.com.br, or noreply@example.com")
    'e-mail [email a***@***.br], or noreply@example.com'
    """
    if detections is None:
        detections = [d for d in scan(text) if d.level == "finding"]
    parts: list[str] = []
    position = 0
    for detection in sorted(detections, key=lambda d: d.start):
        if detection.start < position:
            continue
        parts.append(text[position : detection.start])
        parts.append(f"[{detection.kind} {masked_preview(detection)}]")
        position = detection.end
    parts.append(text[position:])
    return "".join(parts)


def value_hash(normalized: str, key: bytes) -> str:
    """Keyed hash (HMAC-SHA256, hex) of a normalized value: how findings and subject searches
    compare identifiers without storing them.

    >>> value_hash("52998224725", b"k") == value_hash("52998224725", b"k")
    True
    """
    return hmac.new(key, normalized.encode(), hashlib.sha256).hexdigest()


def json_strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a JSON value (keys excepted) with its path, e.g. ``[1].input.cpf``.

    >>> list(json_strings([{"type": "text", "text": "oi"}]))
    [('[0].type', 'text'), ('[0].text', 'oi')]
    """
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from json_strings(item, f"{path}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from json_strings(item, f"{path}.{key}" if path else str(key))


def mask_json(
    value: Any,
    only: Callable[[Detection], bool] | None = None,
    *,
    detect: Callable[[str], list[Detection]] = scan,
) -> Any:
    """A copy of a JSON value with the personal data in every string masked.

    `only` picks which detections to mask (all of them by default); `detect` is the scan
    (a :class:`ScanMemo`'s, to reuse what a pass found already).

    >>> mask_json({"cpf": "529.982.247-25", "n": 3})
    {'cpf': '[cpf ***.***.***-25]', 'n': 3}
    """
    if isinstance(value, str):
        found = [d for d in detect(value) if d.level == "finding"]
        if only is not None:
            found = [d for d in found if only(d)]
        return mask(value, found) if found else value
    if isinstance(value, list):
        return [mask_json(item, only, detect=detect) for item in value]
    if isinstance(value, dict):
        return {key: mask_json(item, only, detect=detect) for key, item in value.items()}
    return value
