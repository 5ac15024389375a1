"""gunicorn's settings for Sawtooth: ``gunicorn -c config/gunicorn.py config.wsgi:application``.

The access log prints what a request asked for, and a path carries a session's external id
(``/api/v1/sessions/cliente-530.582.439-79/events``), a query or a referrer a search: every such
part is printed with personal data masked, like every other log line (``privacy/log_masking.py``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from gunicorn.glogging import Logger

from privacy import masking

accesslog = "-"

# The request line, path, query string and referrer, as the access log format names them.
REQUEST_ATOMS = ("r", "U", "q", "f", "{referer}i")


class MaskedAccessLogger(Logger):  # type: ignore[misc]  # gunicorn ships no type hints
    def atoms(self, resp: Any, req: Any, environ: Any, request_time: Any) -> dict[str, Any]:
        atoms: dict[str, Any] = super().atoms(resp, req, environ, request_time)
        for name in REQUEST_ATOMS:
            value = atoms.get(name)
            if isinstance(value, str):
                atoms[name] = masking.text_mask(_decoded(value))
        return atoms


def _decoded(value: str) -> str:
    """Percent-decoded until it stops changing: a login redirect's ``next`` quotes a query
    that was quoted already (``%2540`` is an ``@``)."""
    for _ in range(3):
        decoded = unquote(value)
        if decoded == value:
            break
        value = decoded
    return value


logger_class = MaskedAccessLogger
