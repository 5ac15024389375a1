"""Masked by default: the one place that turns trace text into what a reader may see.

Raw content stays stored as sent; it is masked on the way out. Templates go through the
``masked`` filter (``sessions/templatetags/traces.py``), the API through ``json_mask``, and a
reveal (one value, by a privacy reviewer, with a reason) through ``occurrence_value``. The
detector is ``privacy.detect.pii`` (``scan`` finds, ``mask`` replaces).

A page shows the same message many times over its life, so scans are cached per text; and a
message the analysis pass found clean is not scanned again (``privacy/known_clean.py``).

A person found for sure lends the parts of their name to other texts (``KnownName``): their
surname alone is masked across the project, their first name alone within the session
(capitalised, never inside an identifier). Which project and session a text belongs to is the
door's to say: each request starts with the user's (or the key's) projects
(``config.middleware.NameScopeMiddleware``), and a door that reads one session narrows it to
that session (``names_scope_enter``); a page of many sessions' texts passes each its own scope
(``names_mask``).
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import hmac
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from compaction.engine.memo import digest_lru
from privacy.detect import person_names, pii

# A few pages of a long session (a page shows ~300 texts).
_CACHE_SIZE = 4096


@digest_lru(_CACHE_SIZE)  # a long text is keyed by its digest: no copy of it is kept
def _scan(text: str) -> tuple[Any, ...]:
    """The values a reader may not see: findings, not the "info" level (a role mailbox, a
    public resolver, an example domain), which is nobody's personal data."""
    found = (d for d in pii.scan(text) if d.level == "finding")
    return tuple(sorted(found, key=lambda d: (d.start, d.end)))


def text_mask(text: str, *, read_names: bool = True) -> str:
    """The text with every detected value masked, and the names the door's scope knows; the
    text itself when nothing is found. ``read_names=False``: only names the scope has read
    already (a log filter never queries the database, which may be what is failing)."""
    detections = _scan(text)
    masked = pii.mask(text, list(detections)) if detections else text
    return names_mask(masked, read=read_names)


def json_mask(value: Any, *, values_clean: bool = False) -> Any:
    """A JSON value with every string (keys included) masked, for API output.

    ``values_clean``: its string values are known to hold nothing the detector finds (a
    message the analysis scanned, ``privacy/known_clean.py``); only its keys are masked.
    """
    if isinstance(value, str):
        return names_mask(value) if values_clean else text_mask(value)
    if isinstance(value, list):
        return [json_mask(item, values_clean=values_clean) for item in value]
    if isinstance(value, dict):
        return {
            text_mask(str(k)): json_mask(v, values_clean=values_clean) for k, v in value.items()
        }
    return value


# Kinds no role may see in clear, ever: masked at every door and refused by a reveal.
NEVER_REVEALED = frozenset({"secret"})


@dataclass(frozen=True)
class Occurrence:
    """One masked value in a text, as a reveal control names it (never its raw value):
    ``index`` its first occurrence, ``repeats`` how many times the text holds it."""

    index: int
    kind: str
    repeats: int = 1


def occurrences(text: str) -> list[Occurrence]:
    """One per distinct value (a tracking result that lists one CEP 22 times has one control
    for it, not 22), in the order each first appears. A secret has none: it is never
    revealed (``NEVER_REVEALED``)."""
    first: dict[tuple[str, str], int] = {}
    counts: dict[tuple[str, str], int] = {}
    for index, detection in enumerate(_scan(text)):
        if detection.kind in NEVER_REVEALED:
            continue
        value = (str(detection.kind), detection.normalized)
        first.setdefault(value, index)
        counts[value] = counts.get(value, 0) + 1
    return [
        Occurrence(index=index, kind=value[0], repeats=counts[value])
        for value, index in first.items()
    ]


def occurrence_value(text: str, index: int) -> tuple[str, str] | None:
    """(kind, raw value) of the index-th detected value in ``text``, or None."""
    detections = _scan(text)
    if not 0 <= index < len(detections):
        return None
    found = detections[index]
    return str(found.kind), text[found.start : found.end]


# --- handles and queries: no identifier in a URL we emit, no search by one ------------------


def pii_key() -> bytes:
    """The server secret of keyed hashes over personal data (findings, the subject index,
    opaque handles): SAWTOOTH_PII_KEY, else derived from SECRET_KEY."""
    configured: str = settings.SAWTOOTH_PII_KEY
    if configured:
        return configured.encode()
    return hmac.new(settings.SECRET_KEY.encode(), b"sawtooth-pii-key", hashlib.sha256).digest()


OPAQUE_PREFIX = "~"


def holds_personal_data(text: str) -> bool:
    return bool(_scan(text))


def handle(value: str) -> str:
    """What a link or a form may carry for ``value``: the value itself when it holds no
    personal data, else ``~`` and a keyed hash of it (nobody can test a guess against it
    without the server's key). :func:`handle_matches` reads it back."""
    if not holds_personal_data(value):
        return value
    digest = pii.value_hash(value, pii_key())[:24]
    return f"{OPAQUE_PREFIX}{digest}"


def handle_matches(handle_value: str, value: str) -> bool:
    return handle(value) == handle_value


def query_refusal(q: str) -> str | None:
    """Why a search for ``q`` is not run, or None. Search reads masked text only (the index
    holds no personal data), so a query that is itself a person's identifier could only ever
    confirm or deny it: it is refused, saying so, for every role and key."""
    # A document's bare digits count here even where the scan calls them "info" (no cue, no
    # format): typed as a query, they name someone.
    found = [d for d in pii.scan(q) if d.level == "finding" or d.kind in pii.CHECK_DIGIT_KINDS]
    kinds = sorted({str(d.kind).replace("_", " ") for d in found})
    if not kinds:
        return None
    return (
        f"it holds a {' and a '.join(kinds)}. Search never looks inside personal data, so it "
        "cannot find a person by an identifier; privacy reviewers find where a person's data "
        "is under Subject requests, where each search is recorded in the audit log"
    )


# --- names alone: a found person's surname in the project, first name in the session -------


class NameScope:
    """The name parts a door masks: the surnames found in ``project_ids`` and the first names
    found in ``session_id``. The projects' parts are read in one query, on first use (a page
    that masks nothing reads none), and serve any of their sessions (``for_session``)."""

    def __init__(self, *, project_ids: Iterable[int] | Any, session_id: int | None = None):
        self._project_ids = project_ids  # ids, or a queryset of projects, read lazily
        self.session_id = session_id
        self._parts: tuple[frozenset[str], frozenset[str]] | None = None
        self._firsts_by_session: dict[int, frozenset[str]] | None = None
        self._parent: NameScope | None = None  # for_session's: read through it, once

    def _load(self) -> None:
        from privacy.models import KnownName, NamePart  # see _scope: not at import time

        surnames: set[str] = set()
        firsts: dict[int, set[str]] = {}
        rows = KnownName.objects.filter(project__in=self._project_ids)
        for part, session_id, digest in rows.values_list("part", "session_id", "digest"):
            if part == NamePart.SURNAME:
                surnames.add(digest)
            else:
                firsts.setdefault(session_id, set()).add(digest)
        self._firsts_by_session = {pk: frozenset(found) for pk, found in firsts.items()}
        mine = self._firsts_by_session.get(self.session_id or 0, frozenset())
        self._parts = frozenset(surnames), mine

    def parts(self) -> tuple[frozenset[str], frozenset[str]]:
        """(surname digests, first name digests)."""
        if self._parts is None and self._parent is not None:
            surnames, _ = self._parent.parts()
            firsts = self._parent._firsts_by_session or {}
            self._parts = surnames, firsts.get(self.session_id or 0, frozenset())
        if self._parts is None:
            self._load()
        return self._parts or (frozenset(), frozenset())

    def read(self) -> bool:
        """Whether the parts are in memory (read, or given)."""
        return self._parts is not None

    def for_session(self, session_id: int) -> NameScope:
        """The same projects' surnames with the first names of ``session_id`` (one of them)."""
        if session_id == self.session_id:
            return self
        other = NameScope(project_ids=self._project_ids, session_id=session_id)
        other._parent = self
        return other

    @classmethod
    def known(cls, *, surnames: Iterable[str], firsts: Iterable[str] = ()) -> NameScope:
        """A scope of the given words (tests, benchmarks), hashed as stored."""
        scope = cls(project_ids=[])
        scope._parts = (
            frozenset(name_digest(w) for w in surnames),
            frozenset(name_digest(w) for w in firsts),
        )
        return scope


# The models are imported where they are read: this module is loaded by the logging
# configuration (privacy/log_masking.py), before Django's apps are.
_scope: contextvars.ContextVar[NameScope | None] = contextvars.ContextVar(
    "sawtooth_name_scope", default=None
)


@functools.lru_cache(maxsize=8192)
def _word_digest(word: str, key: bytes) -> str:
    return pii.value_hash(word, key)


def name_digest(word: str) -> str:
    """The keyed hash a name part is stored and compared by: the lowercase word's."""
    return _word_digest(word.lower(), pii_key())


def names_mask(text: str, scope: NameScope | None = None, *, read: bool = True) -> str:
    """``text`` with the name parts of ``scope`` (by default the door's) masked where they stand
    alone: a surname capitalised or in capitals, a first name capitalised as written.

    Applied after the scan's own masks, whose previews ("[person_name C*** F***]") hold no
    word it could take for a name.
    """
    scope = scope if scope is not None else _scope.get()
    if scope is None or not text or (not read and not scope.read()):
        return text
    words = person_names.words_alone(text)
    if not words:
        return text
    surnames, firsts = scope.parts()
    if not surnames and not firsts:
        return text
    key = pii_key()
    parts: list[str] = []
    position = 0
    for start, end, capitalised in words:
        digest = _word_digest(text[start:end].lower(), key)
        if digest in surnames or (capitalised and digest in firsts):
            parts += [text[position:start], f"[person_name {text[start]}***]"]
            position = end
    if not parts:
        return text
    parts.append(text[position:])
    return "".join(parts)


def session_names_mask(text: str, *, session_id: int) -> str:
    """``text`` of session ``session_id`` (its title in a list of sessions) with the door's
    surnames and that session's first names masked alone."""
    scope = _scope.get()
    return names_mask(text, scope.for_session(session_id)) if scope is not None else text


def names_scope_begin(*, project_ids: Iterable[int] | Any) -> contextvars.Token[NameScope | None]:
    """Start a door's scope (a request: the user's or the key's projects); the caller resets
    the token when the door closes."""
    return _scope.set(NameScope(project_ids=project_ids))


def names_scope_end(token: contextvars.Token[NameScope | None]) -> None:
    _scope.reset(token)


def names_scope_enter(*, project_id: int, session_id: int | None = None) -> None:
    """Narrow the current door's scope to one project, and to one session when it reads one
    (its first names then count too). Undone when the door's scope ends."""
    _scope.set(NameScope(project_ids=[project_id], session_id=session_id))


@contextmanager
def names_scope(*, project_id: int, session_id: int | None = None) -> Iterator[NameScope]:
    """The scope of one session's texts for a block of work (a subject's excerpts)."""
    token = _scope.set(NameScope(project_ids=[project_id], session_id=session_id))
    try:
        yield _scope.get() or NameScope(project_ids=[])
    finally:
        _scope.reset(token)


def name_scopes(sessions: Iterable[Any]) -> dict[int, NameScope]:
    """One scope per session (``project_id``, ``pk``), read together: two queries for a page
    of many sessions' texts (search hits)."""
    from privacy.models import KnownName, NamePart  # see _scope: not at import time

    sessions = list(sessions)
    if not sessions:
        return {}
    project_ids = {s.project_id for s in sessions}
    rows = KnownName.objects.filter(project_id__in=project_ids, part=NamePart.SURNAME)
    surnames: dict[int, set[str]] = {}
    for project_id, digest in rows.values_list("project_id", "digest").distinct():
        surnames.setdefault(project_id, set()).add(digest)
    firsts: dict[int, set[str]] = {}
    rows = KnownName.objects.filter(session_id__in={s.pk for s in sessions}, part=NamePart.FIRST)
    for session_id, digest in rows.values_list("session_id", "digest"):
        firsts.setdefault(session_id, set()).add(digest)
    scopes = {}
    for s in sessions:
        scope = NameScope(project_ids=[s.project_id], session_id=s.pk)
        scope._parts = (frozenset(surnames.get(s.project_id, ())), frozenset(firsts.get(s.pk, ())))
        scopes[s.pk] = scope
    return scopes
