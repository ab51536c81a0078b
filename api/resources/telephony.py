"""The carrier's voice webhooks in Twilio's dialect, under `/telephony/twilio/` (outside the public API's prefix and
its OpenAPI document). No API key: every request must carry the carrier's signature of the URL it requested (on
`CALLSCOPE_PUBLIC_BASE_URL`) and its POST parameters, or it is refused with 403 before anything is read or written.
A signed request whose form or query string is not what the carrier sends (the models of twilio_voice.py) is
refused with 400 `{error}` and a logged warning, also before anything is read or written.

`voice` is the number's voice URL at the carrier and `status` its call-status callback; the others are handed to
the carrier in the answers (TwiML): `dial` (a dial attempt ended), `answered` (which of several operators took the
call), `recording` (the call's recording is ready) and `hangup` (after a voicemail).
"""

from __future__ import annotations

from typing import TypeVar
from urllib.parse import parse_qsl

import structlog
from pydantic import ValidationError

from callscope.api.body import messages
from callscope.api.routing import operation
from callscope.errors import BadRequest, Forbidden, NotFound, PayloadTooLarge
from callscope.services import phone_calls
from callscope.services.context import Context
from callscope.telephony import twilio_voice as tv
from callscope.telephony.voice import Hangup, Instruction

log = structlog.get_logger()

MAX_FORM_BYTES = 64 * 1024  # Twilio's parameters take a few KB
WEBHOOKS = ("voice", "dial", "answered", "recording", "status", "hangup")
P = TypeVar("P", bound=tv.TwilioParams)


def _refused(req, problems: list[str]) -> BadRequest:
    """A request whose parameters are not what the carrier sends: 400, and a warning that names the problems
    (never the values)."""
    log.warning("telephony_webhook_refused", path=req.path, problems=problems)
    return BadRequest("Invalid webhook parameters: " + "; ".join(problems))


def _pairs(req, text: str, where: str) -> tv.Params:
    try:
        return parse_qsl(text, keep_blank_values=True, errors="strict")
    except UnicodeDecodeError:  # percent-escapes of bytes that are not UTF-8
        raise _refused(req, [f"the {where} is not UTF-8"]) from None


def _read(req, model: type[P], pairs: tv.Params) -> P:
    try:
        return model.model_validate(dict(pairs))  # a repeated name: its last value
    except ValidationError as exc:
        raise _refused(req, messages(exc)) from None


class TwilioVoiceWebhooks:
    def __init__(self, ctx: Context):
        self.ctx = ctx

    async def _form(self, req) -> tv.Params:
        """The POST parameters of a request the carrier signed; 403 for any other."""
        if self.ctx.provider.voice_dialect != tv.DIALECT:
            raise NotFound()
        body = await req.bounded_stream.read(MAX_FORM_BYTES + 1)
        if len(body) > MAX_FORM_BYTES:
            raise PayloadTooLarge("Request body too large")
        try:
            text = body.decode()
        except UnicodeDecodeError:
            raise _refused(req, ["the form is not UTF-8"]) from None
        params = _pairs(req, text, "form")
        url = self.ctx.settings.base_url + req.relative_uri
        if not self.ctx.provider.valid_signature(url, params, req.get_header(tv.SIGNATURE_HEADER)):
            log.warning("telephony_signature_refused", path=req.path, signed=req.get_header(
                tv.SIGNATURE_HEADER) is not None)
            raise Forbidden("Invalid provider signature")
        return params

    @staticmethod
    def _query(req, model: type[P]) -> P:
        """The query string of a URL the service handed the carrier (signed with the form)."""
        return _read(req, model, _pairs(req, req.query_string, "query string"))

    @staticmethod
    def _answer(resp, instruction: Instruction) -> None:
        resp.content_type = tv.TWIML_CONTENT_TYPE
        resp.text = tv.twiml(instruction)

    @operation("Twilio voice webhook: an inbound call", None)
    async def on_post_voice(self, req, resp):
        form = _read(req, tv.VoiceForm, await self._form(req))
        self._answer(resp, await phone_calls.inbound(self.ctx, tv.inbound_call(form)))

    @operation("Twilio <Dial action>: a dial attempt ended", None)
    async def on_post_dial(self, req, resp):
        form = _read(req, tv.DialForm, await self._form(req))
        query = self._query(req, tv.DialQuery)
        self._answer(resp, await phone_calls.dial_finished(self.ctx, tv.dial_result(form), query.attempt))

    @operation("Twilio number status callback: an operator answered", None)
    async def on_post_answered(self, req, resp):
        await self._form(req)
        query = self._query(req, tv.AnsweredQuery)
        await phone_calls.target_answered(self.ctx, query.call_id, query.operator_id)
        resp.status = 204

    @operation("Twilio recording status callback", None)
    async def on_post_recording(self, req, resp):
        form = _read(req, tv.RecordingForm, await self._form(req))
        await phone_calls.recording_ready(self.ctx, tv.recording_ready(form, self._query(req, tv.RecordingQuery)))
        resp.status = 204

    @operation("Twilio call status callback", None)
    async def on_post_status(self, req, resp):
        if (ended := tv.call_ended(_read(req, tv.StatusForm, await self._form(req)))) is not None:
            await phone_calls.call_ended(self.ctx, ended)
        resp.status = 204

    @operation("Twilio <Record action>: the voicemail is over", None)
    async def on_post_hangup(self, req, resp):
        await self._form(req)
        self._answer(resp, Hangup())
