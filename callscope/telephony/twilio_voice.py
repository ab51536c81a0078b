"""Twilio's voice dialect: request signatures, webhook parameters read into events, instructions written as TwiML,
and the recordings API. The Twilio adapter and the sandbox (which plays Twilio) both speak it.

Signature (`X-Twilio-Signature`): the full URL Twilio requested (query string included), then every POST parameter
sorted by name (a repeated name: its distinct values sorted) as name+value, HMAC-SHA1 with the auth token, base64.
Twilio is not consistent about default ports, so the URL is also checked with the port added (or removed); the
comparison is constant-time. (The rules of twilio-python's RequestValidator, implemented here.)

Parameters read: voice webhook `CallSid`, `From`, `To`, `CallerName`; `<Dial action>` `DialCallStatus`,
`DialCallDuration`; recording status callback `RecordingSid`, `RecordingUrl`, `RecordingStatus`,
`RecordingChannels`, `RecordingDuration`; call status callback `CallStatus`, `CallDuration`. (A dialled number's
`answered` callback is known by its URL, which names the caller's call and the operator.)
"""

from __future__ import annotations

import abc
import base64
import hashlib
import hmac
import logging
import re
from collections.abc import AsyncGenerator, Iterable
from urllib.parse import urlsplit, urlunsplit
from xml.etree import ElementTree

import httpx

from callscope.errors import ProviderError, ValidationFailed

from .base import ProviderUnavailable
from .voice import CallEnded, Dial, DialResult, Hangup, InboundCall, Instruction, RecordingReady, Reject, Voicemail

log = logging.getLogger(__name__)

DIALECT = "twilio"
SIGNATURE_HEADER = "X-Twilio-Signature"
TWIML_CONTENT_TYPE = "application/xml"
_ANSWERED = {"completed", "answered"}
_DIAL_STATUSES = {"busy", "no-answer", "failed", "canceled"}
_FINAL_CALL_STATUSES = {"completed", *_DIAL_STATUSES}
_SID = re.compile(r"^[A-Za-z0-9]{2,64}$")  # it becomes part of a URL path

Params = list[tuple[str, str]]


# ----- signatures -------------------------------------------------------------------------------

def signature(auth_token: str, url: str, params: Iterable[tuple[str, str]]) -> str:
    values: dict[str, set[str]] = {}
    for name, value in params:
        values.setdefault(name, set()).add(value)
    payload = url + "".join(name + value for name in sorted(values) for value in sorted(values[name]))
    digest = hmac.new(auth_token.encode(), payload.encode(), hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


def _port_variants(url: str) -> list[str]:
    parts = urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    without = urlunsplit(parts._replace(netloc=host))
    with_port = urlunsplit(parts._replace(netloc=f"{host}:{parts.port or default}"))
    return list(dict.fromkeys((url, without, with_port)))


def valid_signature(auth_token: str, url: str, params: Params, given: str | None) -> bool:
    if not given or not auth_token:
        return False
    return any(hmac.compare_digest(signature(auth_token, variant, params).encode(), given.encode())
               for variant in _port_variants(url))


# ----- webhook parameters into events -----------------------------------------------------------

def _field(params: Params, name: str, required: bool = True) -> str:
    value = next((v for k, v in reversed(params) if k == name), "").strip()
    if required and not value:
        raise ValidationFailed(f"{name} is required")
    return value


def _int(params: Params, name: str) -> int:
    value = _field(params, name, required=False)
    return int(value) if value.isdigit() else 0


def inbound_call(params: Params) -> InboundCall:
    return InboundCall(call_id=_field(params, "CallSid"), to=_field(params, "To"),
                       caller=_field(params, "From", required=False) or "anonymous",
                       caller_name=_field(params, "CallerName", required=False)[:255])


def dial_result(params: Params) -> DialResult:
    status = _field(params, "DialCallStatus")
    if status in _ANSWERED:
        return DialResult(call_id=_field(params, "CallSid"), status="answered",
                          duration=_int(params, "DialCallDuration"))
    if status not in _DIAL_STATUSES:
        raise ValidationFailed(f"DialCallStatus {status!r} is unknown")
    return DialResult(call_id=_field(params, "CallSid"), status=status)  # type: ignore[arg-type]


def recording_ready(params: Params) -> RecordingReady:
    recording_id = _field(params, "RecordingSid")
    if not _SID.match(recording_id):
        raise ValidationFailed("RecordingSid is malformed")
    return RecordingReady(call_id=_field(params, "CallSid"), recording_id=recording_id,
                          url=_field(params, "RecordingUrl"),
                          completed=_field(params, "RecordingStatus", required=False) in ("", "completed"),
                          channels=_int(params, "RecordingChannels") or 1,
                          duration=_int(params, "RecordingDuration"))


def call_ended(params: Params) -> CallEnded | None:
    """The call's end; None for a progress report (ringing, in-progress), which a status callback may also be."""
    status = _field(params, "CallStatus")
    if status not in _FINAL_CALL_STATUSES:
        return None
    return CallEnded(call_id=_field(params, "CallSid"), status=status, duration=_int(params, "CallDuration"))


# ----- instructions as TwiML --------------------------------------------------------------------

def _callback(element: ElementTree.Element, prefix: str, url: str, events: str) -> None:
    element.set(prefix, url)
    element.set(prefix + "Method", "POST")
    element.set(prefix + "Event", events)


def twiml(instruction: Instruction) -> str:
    response = ElementTree.Element("Response")
    if isinstance(instruction, Reject):
        ElementTree.SubElement(response, "Reject")
    elif isinstance(instruction, Hangup):
        ElementTree.SubElement(response, "Hangup")
    elif isinstance(instruction, Dial):
        dial = ElementTree.SubElement(response, "Dial", action=instruction.action_url, method="POST",
                                      timeout=str(instruction.timeout))
        if instruction.recording_url:
            # Caller and operator on separate channels, so the analysis tells them apart by channel.
            dial.set("record", "record-from-answer-dual")
            _callback(dial, "recordingStatusCallback", instruction.recording_url, "completed absent")
        for target in instruction.targets:
            number = ElementTree.SubElement(dial, "Number")
            number.text = target.phone_number
            if target.answered_url:
                _callback(number, "statusCallback", target.answered_url, "answered")
    elif isinstance(instruction, Voicemail):
        ElementTree.SubElement(response, "Say").text = instruction.prompt
        record = ElementTree.SubElement(response, "Record", action=instruction.action_url, method="POST",
                                        maxLength=str(instruction.max_seconds), playBeep="true")
        _callback(record, "recordingStatusCallback", instruction.recording_url, "completed absent")
    return '<?xml version="1.0" encoding="UTF-8"?>' + ElementTree.tostring(response, encoding="unicode")


# ----- the recordings API -----------------------------------------------------------------------

class TwilioVoice(abc.ABC):
    """Voice for a provider that speaks Twilio's dialect; the provider says which credentials sign its webhooks
    and fetch its recordings, and where a recording lives (the two abstract methods)."""

    voice_dialect = DIALECT
    # record-from-answer-dual: the first channel is the parent call (the caller), the second the dialled operator
    operator_channel = 1
    _client: httpx.AsyncClient

    @abc.abstractmethod
    def _voice_credentials(self) -> tuple[str, str]:
        """(account sid, auth token)."""

    @abc.abstractmethod
    def _recording_resource(self, ready: RecordingReady) -> str:
        """The recording's resource URL, without extension."""

    def valid_signature(self, url: str, params: Params, given: str | None) -> bool:
        return valid_signature(self._voice_credentials()[1], url, params, given)

    async def recording_chunks(self, ready: RecordingReady) -> AsyncGenerator[bytes, None]:
        """The recording as WAV, streamed (both channels of a dual-channel recording)."""
        query = {"RequestedChannels": "2"} if ready.channels == 2 else {}
        url = self._recording_resource(ready) + ".wav"
        try:
            async with self._client.stream("GET", url, params=query, auth=httpx.BasicAuth(*self._voice_credentials()),
                                           follow_redirects=True) as response:
                _check(response, "GET", url)
                async for chunk in response.aiter_bytes():
                    yield chunk
        except httpx.HTTPError as exc:
            log.warning("twilio recording download failed: %s: %s", url, type(exc).__name__)
            raise ProviderUnavailable() from None

    async def delete_recording(self, ready: RecordingReady) -> None:
        url = self._recording_resource(ready) + ".json"
        try:
            response = await self._client.delete(url, auth=httpx.BasicAuth(*self._voice_credentials()))
        except httpx.HTTPError as exc:
            log.warning("twilio recording delete failed: %s: %s", url, type(exc).__name__)
            raise ProviderUnavailable() from None
        if response.status_code != 404:  # already gone is what we wanted
            _check(response, "DELETE", url)


def _check(response: httpx.Response, method: str, url: str) -> None:
    if response.is_success:
        return
    log.warning("twilio %s %s answered %s", method, url, response.status_code)
    if response.status_code >= 500 or response.status_code in (401, 429):
        raise ProviderUnavailable()
    raise ProviderError(f"The provider refused the recording (HTTP {response.status_code})")
