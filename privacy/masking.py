"""Masked by default: the one place that turns trace text into what a reader may see.

Raw content stays stored as sent; it is masked on the way out. Templates go through the
``masked`` filter (``sessions/templatetags/traces.py``), the API through ``json_mask``, and a
reveal (one value, by a privacy reviewer, with a reason) through ``occurrence_value``. The
detector is ``privacy.detect.pii`` (``scan`` finds, ``mask`` replaces).

A page shows the same message many times over its life, so scans are cached per text; and a
message the analysis pass found clean is not scanned again (``privacy/known_clean.py``).
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from compaction.engine.memo import digest_lru
from privacy.detect import pii

# A few pages of a long session (a page shows ~300 texts).
_CACHE_SIZE = 4096


@digest_lru(_CACHE_SIZE)  # a long text is keyed by its digest: no copy of it is kept
def _scan(text: str) -> tuple[Any, ...]:
    """The values a reader may not see: findings, not the "info" level (a role mailbox, a
    public resolver, an example domain), which is nobody's personal data."""
    found = (d for d in pii.scan(text) if d.level == "finding")
    return tuple(sorted(found, key=lambda d: (d.start, d.end)))


def text_mask(text: str) -> str:
    """The text with every detected value masked; the text itself when nothing is found."""
    detections = _scan(text)
    return pii.mask(text, list(detections)) if detections else text


def json_mask(value: Any, *, values_clean: bool = False) -> Any:
    """A JSON value with every string (keys included) masked, for API output.

    ``values_clean``: its string values are known to hold nothing the detector finds (a
    message the analysis scanned, ``privacy/known_clean.py``); only its keys are masked.
    """
    if isinstance(value, str):
        return value if values_clean else text_mask(value)
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
