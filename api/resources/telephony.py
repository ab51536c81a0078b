"""The carrier's voice webhooks in Twilio's dialect, under `/telephony/twilio/` (outside the public API's prefix and
its OpenAPI document). No API key: every request must carry the carrier's signature of the URL it requested (on
`CALLSCOPE_PUBLIC_BASE_URL`) and its POST parameters, or it is refused with 403 before anything is read or written.

`voice` is the number's voice URL at the carrier and `status` its call-status callback; the others are handed to
the carrier in the answers (TwiML): `dial` (a dial attempt ended), `answered` (which of several operators took the
call), `recording` (the call's recording is ready) and `hangup` (after a voicemail).
"""

from __future__ import annotations

from urllib.parse import parse_qsl

import structlog

from callscope.api.routing import operation
from callscope.errors import BadRequest, Forbidden, NotFound, PayloadTooLarge
from callscope.services import phone_calls
from callscope.services.context import Context
from callscope.telephony import twilio_voice
from callscope.telephony.voice import Hangup, Instruction

log = structlog.get_logger()

MAX_FORM_BYTES = 64 * 1024  # Twilio's parameters take a few KB
WEBHOOKS = ("voice", "dial", "answered", "recording", "status", "hangup")


class TwilioVoiceWebhooks:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    async def _params(self, req) -> twilio_voice.Params:
        """The POST parameters of a request the carrier signed; 403 for any other."""
        if self.ctx.provider.voice_dialect != twilio_voice.DIALECT:
            raise NotFound()
        body = await req.bounded_stream.read(MAX_FORM_BYTES + 1)
        if len(body) > MAX_FORM_BYTES:
            raise PayloadTooLarge("Request body too large")
        try:
            params = parse_qsl(body.decode(), keep_blank_values=True)
        except UnicodeDecodeError:
            raise BadRequest("The form is not UTF-8") from None
        url = self.ctx.settings.base_url + req.relative_uri
        if not self.ctx.provider.valid_signature(url, params, req.get_header(twilio_voice.SIGNATURE_HEADER)):
            log.warning("telephony_signature_refused", path=req.path, signed=req.get_header(
                twilio_voice.SIGNATURE_HEADER) is not None)
            raise Forbidden("Invalid provider signature")
        return params

    @staticmethod
    def _answer(resp, instruction: Instruction) -> None:
        resp.content_type = twilio_voice.TWIML_CONTENT_TYPE
        resp.text = twilio_voice.twiml(instruction)

    @operation("Twilio voice webhook: an inbound call", None)
    async def on_post_voice(self, req, resp):
        event = twilio_voice.inbound_call(await self._params(req))
        self._answer(resp, await phone_calls.inbound(self.ctx, event))

    @operation("Twilio <Dial action>: a dial attempt ended", None)
    async def on_post_dial(self, req, resp):
        params = await self._params(req)
        attempt = req.get_param_as_int("attempt", required=True, min_value=0)
        self._answer(resp, await phone_calls.dial_finished(self.ctx, twilio_voice.dial_result(params), attempt))

    @operation("Twilio number status callback: an operator answered", None)
    async def on_post_answered(self, req, resp):
        await self._params(req)
        operator_id = req.get_param_as_int("operator", required=True, min_value=1)
        await phone_calls.target_answered(self.ctx, req.get_param("call", required=True), operator_id)
        resp.status = 204

    @operation("Twilio recording status callback", None)
    async def on_post_recording(self, req, resp):
        ready = twilio_voice.recording_ready(await self._params(req))
        # The URL we handed out names the caller's call (a dial's recording may report the operator's leg).
        ready = ready.model_copy(update={"call_id": req.get_param("call") or ready.call_id})
        await phone_calls.recording_ready(self.ctx, ready)
        resp.status = 204

    @operation("Twilio call status callback", None)
    async def on_post_status(self, req, resp):
        if (ended := twilio_voice.call_ended(await self._params(req))) is not None:
            await phone_calls.call_ended(self.ctx, ended)
        resp.status = 204

    @operation("Twilio <Record action>: the voicemail is over", None)
    async def on_post_hangup(self, req, resp):
        await self._params(req)
        self._answer(resp, Hangup())
