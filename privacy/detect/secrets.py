"""Secrets in trace text: the ``secret`` kind of the scan (``pii.scan`` calls :func:`find`).

A secret is a credential: a password in a URL or in configuration, an API key by its
published prefix and shape, a JWT, a PEM private key, a password typed in a prompt. Unlike
personal data it is never revealed, to any role: a reader sees its kind, its published prefix
(``sk-ant-…``, never a character of a password), its length and, on a finding, a keyed
fingerprint.

    >>> [(s.value, s.level) for s in find("DATABASE_URL=postgres://app:Pa55w0rd@db:5432/x")]
    [('Pa55w0rd', 'finding')]
    >>> [s.prefix for s in find("key sk-ant-api03-" + "a1B2" * 20)]
    ['sk-ant-']
    >>> find("password = request.POST['password']")
    []

Every pattern starts at a literal (a prefix, a keyword, ``://``) after a boundary that its own
run cannot contain, and runs a bounded or single character class: each position of the text is
read a bounded number of times (tests/engine/test_secrets.py feeds each pattern 1 MB of its
worst case).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from privacy.detect.context import mark_within
from privacy.detect.not_personal import Level

# Published prefixes and shapes, longest first where one prefix starts another.
_KEY_SHAPES: tuple[tuple[str, str], ...] = (
    ("sk-ant-", r"sk-ant-[A-Za-z0-9_\-]{20,300}"),
    ("sk-proj-", r"sk-proj-[A-Za-z0-9_\-]{20,300}"),
    ("sk-", r"sk-[A-Za-z0-9]{20,300}"),  # OpenAI's classic key: no dash inside
    ("sk-", r"sk-[a-z]{2,12}-[A-Za-z0-9_\-]{20,300}"),  # a scoped key: "sk-user-…", "sk-svcacct-…"
    ("sb_secret_", r"sb_secret_[A-Za-z0-9_\-]{20,255}"),  # Supabase's secret key
    ("github_pat_", r"github_pat_[A-Za-z0-9_]{22,255}"),
    ("ghp_", r"ghp_[A-Za-z0-9]{30,255}"),
    ("gho_", r"gho_[A-Za-z0-9]{30,255}"),
    ("ghu_", r"ghu_[A-Za-z0-9]{30,255}"),
    ("ghs_", r"ghs_[A-Za-z0-9]{30,255}"),
    ("ghr_", r"ghr_[A-Za-z0-9]{30,255}"),
    ("glpat-", r"glpat-[A-Za-z0-9_\-]{20,64}"),
    ("AKIA", r"AKIA[0-9A-Z]{16}"),
    ("ASIA", r"ASIA[0-9A-Z]{16}"),
    ("xox", r"xox[abposre]-[A-Za-z0-9\-]{10,255}"),
    ("AIza", r"AIza[0-9A-Za-z_\-]{35}"),
    ("npm_", r"npm_[A-Za-z0-9]{36}"),
    ("pypi-", r"pypi-AgE[A-Za-z0-9_\-]{50,300}"),
    ("sk_live_", r"sk_live_[0-9A-Za-z]{20,255}"),
    ("rk_live_", r"rk_live_[0-9A-Za-z]{20,255}"),
    ("sk_test_", r"sk_test_[0-9A-Za-z]{20,255}"),
    ("hf_", r"hf_[A-Za-z0-9]{30,64}"),
    ("eyJ", r"eyJ[A-Za-z0-9_\-]{10,4000}\.eyJ[A-Za-z0-9_\-]{10,8000}\.[A-Za-z0-9_\-]{10,2000}"),
)
PREFIXES: tuple[str, ...] = tuple(prefix for prefix, _ in _KEY_SHAPES)
# Where a key may start, found by plain substring search (much faster than a regex tried at
# every position); the shape is then matched there.
_NEEDLES: tuple[str, ...] = ("sk-", "_live_", "sk_test_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_")
_NEEDLES += ("github_pat_", "glpat-", "AKIA", "sb_secret_")
_NEEDLES += ("ASIA", "xox", "AIza", "npm_", "pypi-", "hf_", "eyJ")
# A key starts where no key character precedes it and ends where none follows.
_KEY = re.compile(r"(?:" + "|".join(shape for _, shape in _KEY_SHAPES) + r")(?![A-Za-z0-9_\-])")
_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_ASSIGNED_STEMS = ("pass", "senha", "secret", "key", "token")
_PEM = re.compile(
    r"-----BEGIN (?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY-----"
    r"(?:[A-Za-z0-9+/=\s]|\\[nr]){0,20000}"
    r"(?:-----END (?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY-----)?"
)
# scheme://user:password@host: the password is the secret (the user and host are not).
_URL_PASSWORD = re.compile(
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{1,20}://[^\s:/@\"'<>]{0,128}:"
    r"([^\s:/@\"'<>]{1,128})@"
)
# A key of configuration or a field that holds a secret, then `:` or `=`, then its value. The
# scan starts at each `:` or `=` (C-fast) and looks at the few characters before it: a
# case-insensitive alternation tried at every position costs more than the rest of the scan.
_COMPOUND_KEYS: tuple[str, ...] = tuple(
    f"{head}{joint}{tail}"
    for head, tails in (
        ("secret", ("key",)),
        ("api", ("key",)),
        ("access", ("key", "token")),
        ("private", ("key",)),
        ("auth", ("token",)),
        ("refresh", ("token",)),
        ("bearer", ("token",)),
        ("client", ("secret",)),
    )
    for tail in tails
    for joint in ("_", "-", "")
)
# Not "pwd": PWD is the working directory in every shell environment.
_ASSIGNED_KEYS = (*_COMPOUND_KEYS, "password", "passwd", "passphrase", "senha", "secret")
_ASSIGNED_KEYS += ("token",)
_SEPARATOR = re.compile(r"[:=]")
# A value ends at a quote, a bracket, a separator or a full-width sign of CJK text
# ("KEY=sb_secret_…。 有一个问题").
_ASSIGNED_VALUE = re.compile(
    r"[=>]?[ \t]{0,3}([\"'`]?)([^\s\"'`,;<>(){}\[\]\u3000-\u303f\uff00-\uffef]{4,256})"
)
# A password said in words: "my password is X", "a senha do painel é X".
_SAID = re.compile(
    r"(?i)\b(?:password|passphrase|senha)(?:[ \t]{1,3}[^\s]{1,20}){0,3}?[ \t]{1,3}"
    r"(?:is|é|e|era|was)[ \t]{1,3}"
    r"([\"'`]?)([^\s\"'`]{4,128})"
)
_BEARER = re.compile(r"(?i)\bbearer[ \t]{1,3}([A-Za-z0-9._~+/\-]{20,2000}=*)")

# What stands for a value in docs and code, not a value.
_PLACEHOLDER_WORDS = (
    "example",
    "xxxx",
    "***",  # a masked value: "password=***"
    "your",
    "placeholder",
    "dummy",
    "redacted",
    "changeme",
    "change_me",
    "<",
    "${",
    "{{",
    "%(",
    "...",
    "…",
)
_PLACEHOLDER_VALUES = frozenset(
    {
        "password",
        "passwd",
        "pass",
        "secret",
        "senha",
        "token",
        "none",
        "null",
        "true",
        "false",
        "undefined",
        "string",
        "str",
        "required",
        "optional",
        "invalid",
        "wrong",
        "expired",
        "fake",
        "read",  # a workflow's permission: "id-token: write"
        "write",
    }
)
_IDENTIFIER_PATH = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\??\.[A-Za-z_$][A-Za-z0-9_$]*)*")


# Where a credential is an example, whatever it looks like: beside a host of the reserved
# example domains (RFC 2606: ``jira.example.com``, ``user:pass@api.example.org``), or in a
# project's test code (a Rust ``#[test]``, an ``assert``, a pytest or jest test). Looked for
# once per text by substring search; a secret is an example when one sits within reach.
_EXAMPLE_MARKS = (
    "example.com",
    "example.org",
    "example.net",
    "#[test]",
    "#[cfg(test)]",
    "assert",
    "mock",
    "def test_",
    "fn test_",
    "@pytest",
    "describe(",
    "expect(",
    # Go's tests: the package, a test's helpers and its files
    "testing.t",
    "t.fatal",
    "t.error",
    "httptest",
    "_test.go",
)
_EXAMPLE_BEFORE = 400  # characters before a secret where a mark makes it an example
_EXAMPLE_AFTER = 120


def _example_marks(lowered: str) -> list[int]:
    found: list[int] = []
    for mark in _EXAMPLE_MARKS:
        at = lowered.find(mark)
        while at != -1:
            found.append(at)
            at = lowered.find(mark, at + len(mark))
    return sorted(found)


@dataclass(frozen=True)
class Secret:
    start: int
    end: int
    value: str
    prefix: str  # the published prefix of a key ("sk-ant-"), "" for a password
    level: Level


def prefix_of(value: str) -> str:
    """The published prefix a key starts with, else "".

    >>> prefix_of("ghp_" + "a" * 36), prefix_of("hunter22")
    ('ghp_', '')
    """
    if value.startswith("-----BEGIN"):
        return "PEM "
    for prefix in PREFIXES:
        if value.startswith(prefix):
            return prefix
    return ""


# Words a sentence written as a value is made of: "leak-me-if-you-can",
# "sk_this_is_a_very_bad_idea_12345" are a writer's examples, not keys.
_PHRASE_WORDS_TEXT = (
    "a an the this that is are be me my you your if it not here goes very bad idea can do "
    "put replace with"
)
_PHRASE_WORDS = frozenset(_PHRASE_WORDS_TEXT.split())
# Chinese, Japanese and Korean script: a value in it is a writer's words ("你的密码": "your
# password"); accented Latin letters stay possible in a password ("Maçã2024!").
# A secret manager's reference, not its value: "twitter-api-key:latest", "DB_PASSWORD:3" (a
# name of words joined by "-" or "_", then a version); "admin:123456" stays a credential.
_REFERENCE = re.compile(r"[A-Za-z0-9]{1,64}(?:[_\-][A-Za-z0-9]{1,64}){1,8}:(?:latest|[0-9]{1,3})")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _placeholder(value: str) -> bool:
    lowered = value.lower()
    if lowered in _PLACEHOLDER_VALUES or len(set(lowered)) <= 2:
        return True
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return True
    if _REFERENCE.fullmatch(value) or value.endswith("$"):
        return True  # a secret manager's name and version, a template cut at "${{"
    if _CJK.search(value):
        return True  # words of a language typed no password is made of ("你的密码")
    words = re.split(r"[-_.]", lowered)
    sentence = all(w.isalpha() or w.isdigit() for w in words)
    if sentence and sum(w in _PHRASE_WORDS for w in words) > 1:
        return True  # a sentence, not a random key whose pieces happen to spell "a" or "is"
    return _dev_default(value)


# Words that make a lower-case value a development default, not a credential someone chose to
# keep: admin123, dev_password_123, test-webhook-secret, local-proxy.
_DEV_WORDS = (
    "admin", "dev", "test", "local", "secret", "password", "passw", "demo", "default", "root",
    "postgres", "mysql", "sample", "changeit", "qwerty", "letmein", "guest",
)  # fmt: skip
_DEV_VALUE = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+){0,8}")


def _dev_default(value: str) -> bool:
    """A value of lower-case words and digits holding a development word.

    >>> _dev_default("admin123"), _dev_default("dev_password_123"), _dev_default("Pa55w0rd")
    (True, True, False)
    """
    return _DEV_VALUE.fullmatch(value) is not None and any(w in value for w in _DEV_WORDS)


def _level(value: str) -> Level:
    return "info" if _placeholder(value) else "finding"


def _code_like(value: str) -> bool:
    """An unquoted value that reads as code or a word, not a literal: a variable
    (``password=password``), a dotted path (``settings.API_KEY``), a type (``str``), a
    number (``max_token=4096``)."""
    if value.isdigit():
        return True
    return _IDENTIFIER_PATH.fullmatch(value) is not None and (
        not any(c.isdigit() for c in value) or "." in value
    )


def _key_matches(text: str) -> list[re.Match[str]]:
    """The keys of published shapes in ``text``, in order."""
    starts: set[int] = set()
    for needle in _NEEDLES:
        at = text.find(needle)
        while at != -1:
            if needle == "_live_":
                at -= 2  # "sk_live_", "rk_live_"
            if at >= 0 and (at == 0 or text[at - 1] not in _KEY_CHARS):
                starts.add(at)
            at = text.find(needle, at + len(needle) + (2 if needle == "_live_" else 0))
    found = [_KEY.match(text, at) for at in sorted(starts)]
    return [match for match in found if match is not None]


_STEM_REACH = 28  # from a stem's start to the separator: "secret_access_key" + quote, spaces


def _separators_after_stems(text: str, lowered: str) -> list[int]:
    """Positions of the `:` and `=` within reach of a stem ("pass", "key", "token", ...):
    the few a secret-holding key can end before. Stems are found by substring search; only
    when lowering changed the text's length (a rare non-ASCII letter) is every separator
    read."""
    if len(lowered) != len(text):
        return [m.start() for m in _SEPARATOR.finditer(text)]
    found: set[int] = set()
    for stem in _ASSIGNED_STEMS:
        at = lowered.find(stem)
        while at != -1:
            window = text[at : at + _STEM_REACH]
            for separator in _SEPARATOR.finditer(window):
                found.add(at + separator.start())
            at = lowered.find(stem, at + 1)
    return sorted(found)


def _assigned_key(text: str, at: int) -> str | None:
    """The secret-holding key that ends just before the separator at ``at``, if any:
    ``DB_PASSWORD=``, ``"api_key":``, ``password :``; None for ``mypassword=`` or ``x=``."""
    head = text[max(0, at - 24) : at].rstrip(" \t")
    if head[-1:] in ("'", '"'):
        head = head[:-1]
    lowered = head.lower()
    if not lowered.endswith(_ASSIGNED_KEYS):
        return None
    key = next(k for k in _ASSIGNED_KEYS if lowered.endswith(k))
    before = head[-len(key) - 1 : -len(key)]
    return None if before.isalpha() else key


def _in_code(text: str, at: int, value: str, end: int) -> bool:
    """Whether an unquoted value after a secret's key is code, by what stands around it: a
    Rust path or reference (``&zeroize::Zeroizing``, ``Zeroizing::new``), a macro (``vec!``),
    a call, generic or index right after it (``(``, ``<``, ``[``), or, after a ``:``, a type
    annotation or a variable that a ``;``, ``,``, ``)`` or ``}`` ends (``privateKey: Uint8Array;``).
    A value in a ``.env`` or YAML line ends at the line's end; a connection string's
    ``Password=…;`` has ``=``, not ``:``."""
    if "::" in value or value.startswith("&") or value.endswith("!"):
        return True
    after = text[end : end + 1]
    if after in ("(", "<", "["):
        return True
    closing = text[end : end + 3].lstrip(" ")[:1]  # "{ publicKey: Uint8Array }"
    return text[at] == ":" and closing in (";", ",", ")", "}")


def _assigned(text: str, at: int) -> list[Secret]:
    key = _assigned_key(text, at)
    if key is None:
        return []
    match = _ASSIGNED_VALUE.match(text, at + 1)
    if match is None:
        return []
    quote, value = match.group(1), _unescaped(match.group(2))
    if key == "token" and not quote:
        return []  # "token: 1234" is a count or a word more often than a secret
    if "://" in value or (quote == "`" and _code_like(value)):
        return []  # a URL (its password is the URL pattern's), a command: `curl ...`
    if (not quote and _code_like(value)) or (quote and value.isdigit() and len(value) < 6):
        return []
    if not quote and _in_code(text, at, value, match.end(2)):
        return []
    prefix = prefix_of(value)
    if prefix and prefix != "PEM " and (shaped := _KEY.match(value)) is not None:
        value = shaped.group(0)  # the key ends with its shape: "github_pat_…@github.com/x.git"
    level = _level(value)
    if prefix and prefix != "PEM " and _KEY.fullmatch(value) is None:
        level = "info"  # a published prefix without the key's shape: "sk-ant-..." in a template
    return [Secret(match.start(2), match.start(2) + len(value), value, prefix, level)]


def _unescaped(value: str) -> str:
    """A value up to a backslash: in JSON written out as text, ``None\\n`` is ``None`` and a
    line break."""
    cut = value.find("\\")
    return value if cut < 0 else value[:cut]


# A private key's body is hundreds of base64 characters; a few are a template's placeholder.
_PEM_MIN_BODY = 64


def find(text: str) -> list[Secret]:
    """Every secret in ``text``, in order, without overlaps (the first found wins)."""
    found: list[Secret] = []
    if "-----BEGIN" in text:
        for match in _PEM.finditer(text):
            body = sum(c.isalnum() for c in match.group(0)) - len("BEGINPRIVATEKEY")
            level: Level = "finding" if body >= _PEM_MIN_BODY else "info"
            found.append(Secret(match.start(), match.end(), match.group(0), "PEM ", level))
    for match in _key_matches(text):
        value = match.group(0)
        if prefix_of(value) in ("sk-", "sk-proj-", "sk-ant-") and not (
            any(c.isdigit() for c in value[3:]) and any(c.isalpha() for c in value[3:])
        ):
            continue  # "sk-learn-..." words, not a key
        found.append(Secret(match.start(), match.end(), value, prefix_of(value), _level(value)))
    if "://" in text:
        for match in _URL_PASSWORD.finditer(text):
            value = match.group(1)
            found.append(Secret(match.start(1), match.end(1), value, "", _level(value)))
    lowered = text.lower()
    for at in _separators_after_stems(text, lowered):
        found.extend(_assigned(text, at))
    said = "password" in lowered or "senha" in lowered or "passphrase" in lowered
    for match in _SAID.finditer(text) if said else ():
        quote, value = match.group(1), _unescaped(match.group(2)).rstrip(".,")
        if len(value) < 4 or (not quote and _code_like(value)):
            continue
        end = match.start(2) + len(value)
        found.append(Secret(match.start(2), end, value, "", _level(value)))
    for match in _BEARER.finditer(text) if "bearer" in lowered else ():
        value = match.group(1)
        if _code_like(value):
            continue
        found.append(Secret(match.start(1), match.end(1), value, prefix_of(value), _level(value)))
    found.sort(key=lambda s: (s.start, s.start - s.end))
    kept: list[Secret] = []
    for secret in found:
        if kept and secret.start < kept[-1].end:
            continue
        kept.append(secret)
    if len(lowered) == len(text) and any(secret.level == "finding" for secret in kept):
        marks = _example_marks(lowered)
        kept = [
            Secret(s.start, s.end, s.value, s.prefix, "info")
            if s.level == "finding"
            and mark_within(marks, s.start, s.end, _EXAMPLE_BEFORE, _EXAMPLE_AFTER)
            else s
            for s in kept
        ]
    return kept
