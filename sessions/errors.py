"""Errors that an API client can act on: each carries its HTTP status and names the field."""

# The lists of an event batch whose items an error can name: the answer carries
# ``bad_<list>: [indexes]`` so a client (the Recorder) drops those items and resends the rest.
ITEM_LISTS = ("messages", "compactions", "probes")


class ApiError(Exception):
    status = 400

    def __init__(self, message: str, *, bad_items: dict[str, list[int]] | None = None) -> None:
        super().__init__(message)
        self.message = message
        # {"messages": [3], "compactions": [0]}: the batch's items this error is about.
        self.bad_items = {k: v for k, v in (bad_items or {}).items() if v}


class BadRequest(ApiError):
    status = 400


class BadMessages(BadRequest):
    """A batch refused because of some of its items: ``indexes`` says which messages
    (positions in ``messages``), ``bad_items`` which of each list, so a client can drop those
    and resend the others."""

    def __init__(
        self, message: str, *, indexes: list[int], bad_items: dict[str, list[int]] | None = None
    ) -> None:
        super().__init__(message, bad_items={"messages": indexes, **(bad_items or {})})
        self.indexes = indexes


class Unauthorized(ApiError):
    status = 401


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class Unprocessable(ApiError):
    """Well-formed request, content that cannot be read (an upload's unreadable file)."""

    status = 422


class PayloadTooLarge(ApiError):
    status = 413


class TooManyRequests(ApiError):
    status = 429

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after
