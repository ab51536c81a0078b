"""The one place where exceptions become the spec's error bodies: `{error}`, `{errors: [...]}` for 422,
`{error, retry_after}` for 429; a `Retry-After` header wherever the error says when to retry (429, the 503 of an
unreachable catalog). Nothing escapes as a traceback. A WebSocket handshake that fails (a path no route serves) has
no response to shape: it is closed with the error's status as a WebSocket code (4xx: 34xx), which the server answers
as HTTP 403, and logged in one line."""

from __future__ import annotations

import falcon
import falcon.asgi
import structlog

from callscope.errors import CallscopeError, RateLimited, ValidationFailed
from callscope.log_scrubbing import redact_path

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


async def _refuse_websocket(req: falcon.asgi.Request, ws: falcon.asgi.WebSocket, status: int) -> None:
    log.info("websocket_refused", status=status, path=redact_path(req.path))
    await ws.close(3000 + status)  # WebSocket codes 3000-3999 are the application's: Falcon's 3000 + HTTP status


async def handle_callscope_error(req: falcon.asgi.Request, resp: falcon.asgi.Response | None, exc: CallscopeError,
                                 params, ws: falcon.asgi.WebSocket | None = None) -> None:
    if resp is None and ws is not None:
        return await _refuse_websocket(req, ws, exc.status)
    assert resp is not None
    resp.status = exc.status
    resp.media = error_body(exc.status, exc)
    if exc.retry_after is not None:
        resp.set_header("Retry-After", str(exc.retry_after))
    # A 5xx that says when to retry is a passing outage, logged once at its cause (the catalog: once per outage),
    # not once per request.
    if exc.status >= 500 and exc.retry_after is None:
        log.warning("request_failed", status=exc.status, error=exc.message, path=redact_path(req.path))


async def handle_http_error(req: falcon.asgi.Request, resp: falcon.asgi.Response | None, exc: falcon.HTTPError,
                            params, ws: falcon.asgi.WebSocket | None = None) -> None:
    if resp is None and ws is not None:
        return await _refuse_websocket(req, ws, exc.status_code)
    assert resp is not None
    resp.status = exc.status
    status = exc.status_code
    message = _HTTP_MESSAGES.get(status) or exc.description or exc.title or "Error"
    resp.media = {"errors": [message]} if status == 422 else {"error": message}
    for name, value in (exc.headers or {}).items():
        resp.set_header(name, value)


async def handle_unexpected(req: falcon.asgi.Request, resp: falcon.asgi.Response | None, exc: Exception, params,
                            ws: falcon.asgi.WebSocket | None = None) -> None:
    log.exception("unhandled_error", path=redact_path(req.path), method=req.method)
    if resp is None and ws is not None:
        return await ws.close(1011)  # the WebSocket code of an internal error
    assert resp is not None
    resp.status = 500
    resp.media = {"error": "Internal server error"}


def install(app: falcon.asgi.App) -> None:
    app.add_error_handler(Exception, handle_unexpected)
    app.add_error_handler(falcon.HTTPError, handle_http_error)
    app.add_error_handler(CallscopeError, handle_callscope_error)
