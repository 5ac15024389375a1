"""Webhook secrets at rest: encrypted with a key derived from the install's SECRET_KEY.

Signing needs the secret itself, so it cannot be hashed like an API key; it is sealed with
Fernet (AES-128-CBC plus HMAC-SHA256, from ``cryptography``) under a key derived by HKDF from
SECRET_KEY, so a database dump alone does not reveal it. Keys in SECRET_KEY_FALLBACKS still
open what they sealed, so rotating SECRET_KEY the Django way keeps deliveries signed.
"""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

# What a sealed value starts with, so a reader (and the migration) can tell it from clear text.
PREFIX = "fernet1:"


class SecretUnreadable(ValueError):
    """Sealed under a key this install no longer has (SECRET_KEY changed without fallback)."""


def _fernet(secret_key: str | bytes) -> Fernet:
    raw = secret_key.encode() if isinstance(secret_key, str) else secret_key
    key = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=b"sawtooth", info=b"webhook-secret-v1"
    ).derive(raw)
    return Fernet(base64.urlsafe_b64encode(key))


def _box() -> MultiFernet:
    keys = [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]
    return MultiFernet([_fernet(key) for key in keys])


def secret_seal(secret: str) -> str:
    """The stored form of ``secret``: ``fernet1:<token>``, different at every call."""
    return PREFIX + _box().encrypt(secret.encode()).decode("ascii")


def secret_open(sealed: str) -> str:
    """The secret ``secret_seal`` sealed. Raises SecretUnreadable."""
    if not sealed.startswith(PREFIX):
        raise SecretUnreadable("the stored webhook secret is not sealed")
    try:
        return _box().decrypt(sealed.removeprefix(PREFIX).encode("ascii")).decode()
    except (InvalidToken, UnicodeError):
        raise SecretUnreadable(
            "the webhook secret was sealed under another SECRET_KEY; add the old key to "
            "SECRET_KEY_FALLBACKS or set the secret again"
        ) from None
