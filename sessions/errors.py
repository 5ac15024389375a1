"""Errors that an API client can act on: each carries its HTTP status and names the field."""


class ApiError(Exception):
    status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BadRequest(ApiError):
    status = 400


class BadMessages(BadRequest):
    """A batch refused because of some of its messages: ``indexes`` says which (positions in
    ``messages``), so a client can drop those and resend the others."""

    def __init__(self, message: str, *, indexes: list[int]) -> None:
        super().__init__(message)
        self.indexes = indexes


class Unauthorized(ApiError):
    status = 401


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class PayloadTooLarge(ApiError):
    status = 413


class TooManyRequests(ApiError):
    status = 429

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after
