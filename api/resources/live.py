"""Live calls on the API: the generic live endpoint (a WebSocket at /api/v1/public/live: an API key with write
permission, `start`, binary audio frames, `stop`; the call's events come back on the same socket) and the events of
a live call as Server-Sent Events (GET /recordings/{id}/live, read permission). The carrier's stream is
api/resources/live_twilio.py; the call itself, callscope/live. Both sockets run as a `Conversation`: each message
read until the call ends, and whatever ends it (stop, a refused message, an idle or vanished client) ends the call
the same way: its audio stored and analysed, one log line, the socket closed with a code that says why.

A WebSocket is no API operation: it is outside the OpenAPI document and the API middleware, so the endpoint checks
its key itself; a bad key (or permission) refuses the handshake (HTTP 403) with one log line (api/errors.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence

import falcon
import falcon.asgi
import structlog
from falcon.constants import WebSocketPayloadType
from falcon.media import BinaryBaseHandlerWS, TextBaseHandlerWS

from callscope import tracing
from callscope.api.middleware import PERMISSION_MESSAGES
from callscope.api.resources.base import Resource, principal_of
from callscope.api.routing import operation
from callscope.errors import CallscopeError, Forbidden
from callscope.live import protocol as p
from callscope.live.audio import decode
from callscope.live.calls import LiveCalls
from callscope.live.events import EndReason, Event, Role
from callscope.live.session import CallTooLong, LiveSession, Recognition
from callscope.resources import ProjectSpec
from callscope.services import keys
from callscope.services.context import Context, Principal

log = structlog.get_logger()

SEND_TIMEOUT_S = 10  # for the last events to reach a client once the call has ended


class RawText(TextBaseHandlerWS):
    """The WebSockets' text messages as they come (the live endpoints read JSON themselves, with their own
    errors, and send with send_text)."""

    def deserialize(self, payload: str) -> object:
        return payload


class RawBinary(BinaryBaseHandlerWS):
    """The WebSockets' binary messages (audio) as they come."""

    def deserialize(self, payload: bytes) -> object:
        return payload


def install(app: falcon.asgi.App) -> None:
    app.ws_options.media_handlers[WebSocketPayloadType.TEXT] = RawText()
    app.ws_options.media_handlers[WebSocketPayloadType.BINARY] = RawBinary()


class _Idle(Exception):
    pass


def live_calls(ctx: Context) -> LiveCalls:
    """The process's register of live calls, each recognised by its own Ray actor or in this process's threads
    (CALLSCOPE_LIVE_EXECUTOR; the models load with the first live call, not with the API: start-up time)."""
    settings = ctx.settings
    models = None

    def recognition(spec: ProjectSpec, tracks: Sequence[tuple[str, Role]]) -> Recognition:
        if (settings.live_executor or settings.analysis_executor) == "ray":
            from callscope.analysis.runtime.live_actor import RayRecognition  # Ray: heavy, with the first call

            return RayRecognition(settings, spec, tracks)
        from callscope.analysis.runtime.live import LiveModels  # faster-whisper: heavy, with the first call

        nonlocal models
        if models is None:
            models = LiveModels(settings)
        return models.recognition(spec, tracks)

    return LiveCalls(ctx, recognition)


async def _send_events(ws: falcon.asgi.WebSocket, session: LiveSession) -> None:
    try:
        async for event in session.log.follow():
            await ws.send_text(event.model_dump_json())
    except (falcon.WebSocketDisconnected, OSError):  # the client went first (uvicorn: ClientDisconnected)
        pass


class Conversation:
    """One live call's socket: `run` reads messages with `read` (True: the client said stop) until the call ends."""

    def __init__(self, ws: falcon.asgi.WebSocket, ctx: Context, req: falcon.asgi.Request, *, sends_events: bool):
        self.ws, self.ctx, self.req, self.path, self.sends_events = ws, ctx, req, req.path, sends_events
        self.session: LiveSession | None = None
        self._sender: asyncio.Task | None = None

    async def opened(self, session: LiveSession) -> None:
        self.session = session
        if self.sends_events:
            await self.ws.send_text(json.dumps({"type": "started", "recording": {"public_id": session.public_id}}))
            self._sender = asyncio.create_task(_send_events(self.ws, session))

    async def _receive(self) -> str | bytes:
        settings = self.ctx.settings
        try:
            message = await asyncio.wait_for(self.ws.receive_media(), settings.live_idle_timeout_seconds)
        except TimeoutError:
            raise _Idle() from None
        assert isinstance(message, str | bytes)  # the raw handlers above
        if len(message) > settings.live_max_frame_bytes:
            raise p.ProtocolError(f"A message may be at most {settings.live_max_frame_bytes} bytes; this one has "
                                  f"{len(message)}", p.TOO_BIG)
        return message

    async def run(self, read: Callable[[str | bytes], Awaitable[bool]]) -> None:
        """The call as one server span (traces: its parent the upgrade request's `traceparent`), so the recording it
        stores, and that recording's analysis and webhook, are in the call's trace."""
        span = tracing.start_request(self.req)
        reason: EndReason | None = None
        try:
            reason = await self._run(read)
        finally:
            tracing.end_request(span, "GET", self.req.uri_template, 101, {
                "callscope.live.public_id": self.session.public_id if self.session else None,
                "callscope.live.end": reason, "callscope.live.seconds": self.session.audio.seconds if self.session
                else None})

    async def _run(self, read: Callable[[str | bytes], Awaitable[bool]]) -> EndReason:
        reason: EndReason = "stop"
        problem: str | None = None
        code: int | None = p.NORMAL
        try:
            while not await read(await self._receive()):
                pass
        except p.ProtocolError as exc:
            reason, problem, code = "error", exc.message, exc.code
        except CallscopeError as exc:
            reason, problem, code = "error", exc.message, p.http_close_code(exc.status)
        except CallTooLong:
            reason, problem, code = "too_long", "The call reached the longest recording stored", p.TOO_LONG
        except _Idle:
            seconds = self.ctx.settings.live_idle_timeout_seconds
            reason, problem, code = "idle", f"Nothing received for {seconds:g} s", p.IDLE
        except falcon.WebSocketDisconnected:
            reason, code = "disconnect", None
        except asyncio.CancelledError:  # the server stops: the call still ends, its audio stored
            if self.session is not None:
                await asyncio.shield(self.session.end("disconnect"))
            raise
        except Exception:  # a fault of ours: logged with its cause; the call ends as any other
            log.exception("live_call_failed", path=self.path)
            reason, problem, code = "error", "Internal server error", p.INTERNAL_ERROR
        if self.session is None:
            if problem is not None:
                log.info("live_call_refused", path=self.path, problem=problem, code=code)
        else:
            await self.session.end(reason, problem)
            if self._sender is not None:
                try:
                    await asyncio.wait_for(self._sender, SEND_TIMEOUT_S)
                except TimeoutError:
                    pass
        if code is not None:
            await self._close(code, problem)
        return reason

    async def _close(self, code: int, problem: str | None) -> None:
        try:
            if problem is not None and self.sends_events:
                await self.ws.send_text(json.dumps({"type": "error", "error": problem, "code": code}))
            # a close frame's reason holds at most 123 bytes
            await self.ws.close(code, reason=problem.encode()[:120].decode(errors="ignore") if problem else None)
        except (falcon.WebSocketDisconnected, OSError):  # the client went first (uvicorn: ClientDisconnected)
            pass


class LiveCallSocket(Resource):
    """wss://…/api/v1/public/live"""

    def __init__(self, ctx: Context, calls: LiveCalls):
        super().__init__(ctx)
        self.calls = calls

    async def on_websocket(self, req, ws: falcon.asgi.WebSocket) -> None:
        principal = await keys.authenticate(self.ctx, req.get_header("Authorization"))
        if "write" not in principal.permissions:
            raise Forbidden(PERMISSION_MESSAGES["write"])
        await ws.accept()
        conversation = Conversation(ws, self.ctx, req, sends_events=True)
        start: p.Start | None = None

        async def read(message: str | bytes) -> bool:
            nonlocal start
            if isinstance(message, str):
                parsed = p.generic_message(message, started=start is not None)
                if isinstance(parsed, p.Stop):
                    return True
                start = parsed
                await conversation.opened(await self.calls.open_generic(principal, start))
                return False
            if start is None or conversation.session is None:
                raise p.ProtocolError("Audio before start", p.UNSUPPORTED_DATA)
            if len(message) % start.bytes_per_frame:
                raise p.ProtocolError(f"An audio frame must hold whole samples of every channel "
                                      f"({start.bytes_per_frame} bytes each)")
            for channel, samples in enumerate(decode(message, start.encoding, start.channels)):
                conversation.session.add(channel, samples)
            return False

        await conversation.run(read)


def _last_event_id(req) -> int:
    """Where a reconnecting reader left off (SSE's Last-Event-ID: the seq of the last event it got)."""
    value = req.get_header("Last-Event-ID") or ""
    return int(value) if value.isdigit() and len(value) < 12 else 0


class LiveCallEvents(Resource):
    def __init__(self, ctx: Context, calls: LiveCalls):
        super().__init__(ctx)
        self.calls = calls

    @operation("Follow a live call's events", "read", errors=(401, 403, 404), name="followLiveCall",
               description=("The events of a live call, as Server-Sent Events (`text/event-stream`): every event so "
                            "far, then each as it happens, until `end`. Each SSE message's `event` is the event's "
                            "type (partial, final, goal, alert, end), its `id` the event's `seq` (a reader that "
                            "reconnects with `Last-Event-ID` gets only what it missed) and its `data` the event as "
                            "JSON, as the live endpoint's socket sends it. An ended call's events stay readable for "
                            "CALLSCOPE_LIVE_KEEP_EVENTS_SECONDS."),
               scope="A project-scoped key reads its own project's calls only (others are 404).",
               error_notes={404: "No live call of the key's account (and project) has this public_id, now or lately "
                                 "(in this API process)."})
    async def on_get(self, req, resp, id):
        principal: Principal = principal_of(req)
        stream_events(req, resp, self.calls.visible(principal, id))


def stream_events(req, resp, session: LiveSession) -> None:
    """The call's events as Server-Sent Events from where the reader left off (also the members' recording page's,
    api/pages/recording.py)."""
    after = _last_event_id(req)
    resp.content_type = "text/event-stream"
    resp.set_header("Cache-Control", "no-store")

    async def emitter():
        async for event in session.log.follow(after):
            yield _sse(event)

    resp.sse = emitter()


def _sse(event: Event) -> falcon.asgi.SSEvent:
    return falcon.asgi.SSEvent(data=event.model_dump_json().encode(), event=getattr(event, "type", None),
                               event_id=str(event.seq))
