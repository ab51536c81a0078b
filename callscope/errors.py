"""Typed errors raised by services and stores; api/errors.py turns them into the spec's bodies."""

from __future__ import annotations


class CallscopeError(Exception):
    """Base of every error that maps to an HTTP status and a message a user can read."""

    status = 500
    #: Seconds a client should wait before trying again (sent as ``Retry-After``); None: the error does not say.
    retry_after: int | None = None

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class BadRequest(CallscopeError):
    status = 400


class Unauthorized(CallscopeError):
    status = 401


class Forbidden(CallscopeError):
    status = 403


class NotFound(CallscopeError):
    status = 404

    def __init__(self, message: str = "Resource not found"):
        super().__init__(message)


class Conflict(CallscopeError):
    """A write lost an optimistic-concurrency race, or the object already exists."""

    status = 409


class PayloadTooLarge(CallscopeError):
    status = 413


class ValidationFailed(CallscopeError):
    """422 with the spec's `{errors: [...]}` body (every 422 of the spec uses this shape)."""

    status = 422

    def __init__(self, errors: list[str] | str):
        self.errors = [errors] if isinstance(errors, str) else list(errors)
        super().__init__("; ".join(self.errors))


class RateLimited(CallscopeError):
    status = 429

    def __init__(self, retry_after: int, limit: int, reset_at: int):
        super().__init__("Rate limit exceeded")
        self.retry_after = retry_after
        self.limit = limit
        self.reset_at = reset_at


class BadGateway(CallscopeError):
    """An upstream service answered something this service cannot read."""

    status = 502


class ServiceUnavailable(CallscopeError):
    """Something this service needs (the catalog database, the Kubernetes API) cannot be reached for now."""

    status = 503

    def __init__(self, message: str, retry_after: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class ProviderError(ValidationFailed):
    """The upstream phone-number provider rejected a request (spec: 422)."""


def one_line(exc: BaseException) -> str:
    """An exception as one line a user can read: its message (``detail`` or ``message`` where it has one), else its
    type's name."""
    text = getattr(exc, "detail", None) or getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(text).split())
