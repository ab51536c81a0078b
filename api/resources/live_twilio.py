"""Twilio Media Streams: the WebSocket the TwiML of a live project's calls streams both parties' audio to
(`<Start><Stream track="both_tracks">`, callscope/services/phone_calls.py), at /telephony/twilio/stream beside the
voice webhooks. The upgrade request must carry Twilio's signature of the stream's URL (`X-Twilio-Signature`,
checked as for the webhooks: callscope/telephony/twilio_voice.py), or the handshake is refused (HTTP 403). Then
`connected`, `start` (the CallSid ties the stream to the phone call and its number's project), `media` (base64
μ-law at 8 kHz, 20 ms a frame; `inbound` is the caller, the customer, `outbound` the operator, the agent) and
`stop`. Twilio reads nothing back: the call's events are for the SSE readers (api/resources/live.py)."""

from __future__ import annotations

import falcon.asgi

from callscope.api.resources.live import Conversation
from callscope.errors import Forbidden, NotFound
from callscope.live import protocol as p
from callscope.live.audio import decode
from callscope.live.calls import AGENT, CUSTOMER, LiveCalls
from callscope.services import phone_calls
from callscope.services.context import Context
from callscope.telephony import twilio_voice as tv

RATE = 8000
TRACKS = {"outbound": 0, "inbound": 1}  # the stored recording's channels: the agent, then the customer


class TwilioMediaStream:
    def __init__(self, ctx: Context, calls: LiveCalls):
        self.ctx, self.calls = ctx, calls

    async def on_websocket(self, req, ws: falcon.asgi.WebSocket) -> None:
        if self.ctx.provider.voice_dialect != tv.DIALECT:
            raise NotFound()
        url = "ws" + (self.ctx.settings.base_url + req.relative_uri).removeprefix("http")
        if not self.ctx.provider.valid_signature(url, [], req.get_header(tv.SIGNATURE_HEADER)):
            raise Forbidden("Invalid provider signature")
        await ws.accept()
        conversation = Conversation(ws, self.ctx, req, sends_events=False)

        async def read(message: str | bytes) -> bool:
            if not isinstance(message, str):
                raise p.ProtocolError("Media Streams messages are JSON text", p.UNSUPPORTED_DATA)
            parsed = p.twilio_message(message)
            if isinstance(parsed, p.TwilioStop):
                return True
            if isinstance(parsed, p.TwilioStart):
                if conversation.session is not None:
                    raise p.ProtocolError("The stream has started already: one start per socket")
                principal, project, fields, stored = await phone_calls.live_call(self.ctx, parsed.start.call_id)
                await conversation.opened(await self.calls.open(principal, project, RATE, [AGENT, CUSTOMER], fields,
                                                                stored))
            elif isinstance(parsed, p.TwilioMedia):
                if conversation.session is None:
                    raise p.ProtocolError("media before start", p.UNSUPPORTED_DATA)
                media = parsed.media
                (samples,) = decode(media.payload, "mulaw", 1)
                conversation.session.add(TRACKS[media.track], samples, at=media.timestamp * RATE // 1000)
            return False

        await conversation.run(read)
