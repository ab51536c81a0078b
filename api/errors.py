"""The one place where exceptions become the spec's error bodies: `{error}`, `{errors: [...]}` for 422,
`{error, retry_after}` for 429; a `Retry-After` header wherever the error says when to retry (429, the 503 of an
unreachable catalog). Nothing escapes as a traceback."""

from __future__ import annotations

import falcon
import falcon.asgi
import structlog

from callscope.errors import CallscopeError, RateLimited, ValidationFailed
from callscope.redaction import redact_path

log = structlog.get_logger()

_HTTP_MESSAGES = {
    404: "Resource not found",
    405: "Method not allowed",
    411: "Length required",
    413: "Request body too large",
    415: "Unsupported media type",
}


def error_body(status: int, exc: CallscopeError) -> dict:
    if isinstance(exc, ValidationFailed):
        return {"errors": exc.errors}
    if isinstance(exc, RateLimited):
        return {"error": exc.message, "retry_after": exc.retry_after}
    return {"error": exc.message}


async def handle_callscope_error(req: falcon.asgi.Request, resp: falcon.asgi.Response, exc: CallscopeError,
                                 params) -> None:
    resp.status = exc.status
    resp.media = error_body(exc.status, exc)
    if exc.retry_after is not None:
        resp.set_header("Retry-After", str(exc.retry_after))
    # A 5xx that says when to retry is a passing outage, logged once at its cause (the catalog: once per outage),
    # not once per request.
    if exc.status >= 500 and exc.retry_after is None:
        log.warning("request_failed", status=exc.status, error=exc.message, path=redact_path(req.path))


async def handle_http_error(req: falcon.asgi.Request, resp: falcon.asgi.Response, exc: falcon.HTTPError,
                            params) -> None:
    resp.status = exc.status
    status = exc.status_code
    message = _HTTP_MESSAGES.get(status) or exc.description or exc.title or "Error"
    resp.media = {"errors": [message]} if status == 422 else {"error": message}
    for name, value in (exc.headers or {}).items():
        resp.set_header(name, value)


async def handle_unexpected(req: falcon.asgi.Request, resp: falcon.asgi.Response, exc: Exception, params) -> None:
    log.exception("unhandled_error", path=redact_path(req.path), method=req.method)
    resp.status = 500
    resp.media = {"error": "Internal server error"}


def install(app: falcon.asgi.App) -> None:
    app.add_error_handler(Exception, handle_unexpected)
    app.add_error_handler(falcon.HTTPError, handle_http_error)
    app.add_error_handler(CallscopeError, handle_callscope_error)
