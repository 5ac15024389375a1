"""The secret key: never a public default.

``SECRET_KEY`` (or ``DJANGO_SECRET_KEY``) from the environment wins. Without one, the embedded
default setup generates a random key on first start and keeps it in ``var/secret_key``
(readable by the owner only), so each install signs with its own. Production (``DEBUG`` off
with ``DATABASE_URL`` set, or ``SAWTOOTH_PRODUCTION=1``) must be given a key: the web and
worker processes refuse to start without one (``production_key_require``, called from
``config/wsgi.py``, ``config/asgi.py`` and ``config/celery.py``), and ``manage.py check
--deploy`` reports it. Settings themselves never raise, so tooling and tests still load them.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

from django.core.checks import CheckMessage, Error
from django.core.exceptions import ImproperlyConfigured

# Keys published in this repository's history or Django's templates: never accepted.
PUBLIC_KEYS = frozenset({"insecure-development-key-change-me", "change-me-in-production"})
KEY_FILE = "secret_key"


def configured_key() -> str:
    """The key given in the environment ("" when none, or a known public one)."""
    for name in ("SECRET_KEY", "DJANGO_SECRET_KEY"):
        value = os.environ.get(name, "").strip()
        if value:
            return "" if value in PUBLIC_KEYS or value.startswith("django-insecure-") else value
    return ""


def is_production(*, debug: bool) -> bool:
    explicit = os.environ.get("SAWTOOTH_PRODUCTION", "").strip().lower()
    if explicit in ("1", "true", "yes", "on"):
        return True
    if explicit in ("0", "false", "no", "off"):
        return False
    return not debug and bool(os.environ.get("DATABASE_URL", "").strip())


def install_key(var_dir: Path) -> str:
    """This install's own key from ``var/secret_key``, generated on first use."""
    path = var_dir / KEY_FILE
    try:
        key = path.read_text(encoding="utf-8").strip()
        if key:
            return key
    except FileNotFoundError:
        pass
    var_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    try:
        # O_EXCL: two processes starting at once agree on the first key written.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip() or key
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(key)
    return key


def secret_key(*, var_dir: Path) -> str:
    return configured_key() or install_key(var_dir)


MISSING = (
    "SECRET_KEY: required in production (DEBUG off with DATABASE_URL set, or "
    "SAWTOOTH_PRODUCTION=1); set SECRET_KEY to a long random string, never a published one"
)


def production_key_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``manage.py check --deploy``: production without a key of its own is an error."""
    from django.conf import settings

    if settings.SAWTOOTH_PRODUCTION and not configured_key():
        return [Error(MISSING, id="sawtooth.E001")]
    return []


def production_key_require() -> None:
    """Refuse to serve in production without a key of its own (raise ImproperlyConfigured)."""
    from django.conf import settings

    if settings.SAWTOOTH_PRODUCTION and not configured_key():
        raise ImproperlyConfigured(MISSING)
