"""Headers every page gets: a Content-Security-Policy, and Secure cookies over HTTPS.

The policy (``CONTENT_SECURITY_POLICY``) allows scripts only from our own static files, so an
injected ``<script>`` in trace content would not run even if escaping ever failed; templates
therefore hold no inline script (page code lives in ``static/js``). Served over HTTPS, the
session and CSRF cookies are marked ``Secure`` whatever the settings say. HSTS comes from
Django's SecurityMiddleware (``SECURE_HSTS_SECONDS``), which sends it on HTTPS only.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

_COOKIES = ("SESSION_COOKIE_NAME", "CSRF_COOKIE_NAME")


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        policy = settings.CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        if request.is_secure():
            for setting in _COOKIES:
                name = getattr(settings, setting)
                if name in response.cookies:
                    response.cookies[name]["secure"] = True
        return response
