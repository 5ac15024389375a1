"""Building an ``anthropic.Anthropic`` client, imported lazily.

The pinned SDK (anthropic 2.x) speaks ``httpx2`` and rejects a plain ``httpx.Client``. Callers
may pass either: an ``httpx2.Client`` goes through untouched, and an ``httpx.Client`` (for
example one with ``httpx.MockTransport`` in tests, or a proxy set up by the app) is bridged
through a small ``httpx2`` transport that replays each request on it.
"""

from __future__ import annotations

from typing import Any


def _bridge(http_client: Any) -> Any:
    import httpx2

    class HttpxBridge(httpx2.BaseTransport):
        """Sends each httpx2 request through an ``httpx.Client`` and converts the response."""

        def __init__(self, client: Any) -> None:
            self.client = client

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            outgoing = self.client.build_request(
                request.method,
                str(request.url),
                headers=list(request.headers.raw),
                content=request.read(),
            )
            incoming = self.client.send(outgoing)
            try:
                body = incoming.read()
            finally:
                incoming.close()
            headers = [
                (k, v)
                for k, v in incoming.headers.raw
                if k.lower() not in (b"content-encoding", b"transfer-encoding")
            ]
            return httpx2.Response(
                incoming.status_code, headers=headers, content=body, request=request
            )

        def close(self) -> None:
            self.client.close()

    return httpx2.Client(transport=HttpxBridge(http_client))


def make_client(
    *,
    api_key: str | None,
    http_client: Any = None,
    max_retries: int = 2,
    timeout: float = 60.0,
    base_url: str | None = None,
) -> Any:
    """An ``anthropic.Anthropic`` client; ``http_client`` may be httpx2 or httpx."""
    import anthropic
    import httpx2

    kwargs: dict[str, Any] = {"api_key": api_key, "max_retries": max_retries, "timeout": timeout}
    if http_client is not None:
        if not isinstance(http_client, httpx2.Client):
            http_client = _bridge(http_client)
        kwargs["http_client"] = http_client
    if base_url is not None:
        kwargs["base_url"] = base_url
    return anthropic.Anthropic(**kwargs)
