"""Login throttling per account and per address, on /login/ and /admin/login/ alike.

Both pages authenticate through ``ThrottledModelBackend`` (``AUTHENTICATION_BACKENDS``), so
neither can forget it. Failures are counted in Django's cache for ``LOGIN_LOCKOUT_SECONDS``:
once an account has ``LOGIN_MAX_FAILURES_PER_ACCOUNT`` failures (from any address), or an
address ``LOGIN_MAX_FAILURES_PER_ADDRESS`` (on any accounts), further attempts are refused
before the password is even hashed, right password or not, until the window passes. Refusing
early is also what keeps a password-guessing crowd from slowing every page (each hash costs
tens of milliseconds of CPU). A successful login clears its account's count.

With the shared cache down, login still works: failures are counted by this web process
alone (``sessions.counters``), the outage is logged, and the page's response says so with
``X-Sawtooth-Degraded: login-throttle``.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver
from django.http import HttpRequest

from sessions import counters

# X-Sawtooth-Degraded: failures were counted by this web process alone (cache down).
DEGRADED_LOGIN_THROTTLE = "login-throttle"
_WHAT = "login throttling"


def _account_key(username: str) -> str:
    digest = hashlib.sha256(username.strip().lower().encode("utf-8", "replace")).hexdigest()
    return f"login-failures:account:{digest[:32]}"


def _address_key(request: HttpRequest | None) -> str | None:
    address = request.META.get("REMOTE_ADDR") if request is not None else None
    return f"login-failures:address:{address}" if address else None


def _count(key: str | None, request: HttpRequest | None) -> int:
    if key is None:
        return 0
    count = counters.count_read(key, what=_WHAT)
    if not count.shared:
        counters.degraded_mark(request, DEGRADED_LOGIN_THROTTLE)
    return count.value


def _bump(key: str | None, request: HttpRequest | None) -> None:
    if key is None:
        return
    count = counters.count_incr(key, timeout=settings.LOGIN_LOCKOUT_SECONDS, what=_WHAT)
    if not count.shared:
        counters.degraded_mark(request, DEGRADED_LOGIN_THROTTLE)


def login_locked(*, request: HttpRequest | None, username: str) -> bool:
    """True when this account or this address has used up its failed attempts."""
    return (
        _count(_account_key(username), request) >= settings.LOGIN_MAX_FAILURES_PER_ACCOUNT
        or _count(_address_key(request), request) >= settings.LOGIN_MAX_FAILURES_PER_ADDRESS
    )


class ThrottledModelBackend(ModelBackend):
    """Django's ModelBackend, refusing (PermissionDenied) while the account or address is
    locked out; Django then counts it as one more failed login."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> Any:
        name = username if username is not None else kwargs.get("username")
        if name is not None and login_locked(request=request, username=str(name)):
            raise PermissionDenied("too many failed logins; try again later")
        return super().authenticate(request, username=username, password=password, **kwargs)


@receiver(user_login_failed)
def _login_failed(sender: Any, credentials: dict[str, Any], request: Any = None, **_: Any) -> None:
    username = credentials.get("username")
    if username:
        _bump(_account_key(str(username)), request)
    _bump(_address_key(request), request)


@receiver(user_logged_in)
def _logged_in(sender: Any, request: Any, user: Any, **_: Any) -> None:
    counters.count_clear(_account_key(user.get_username()), what=_WHAT)
