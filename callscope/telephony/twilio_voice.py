"""Twilio's voice dialect: request signatures, webhook parameters read into events, and instructions written as
TwiML. The Twilio adapter and the sandbox (which plays Twilio) both speak it; each fetches its recordings its own way.

A request is signed (`X-Twilio-Signature`) as twilio-python's RequestValidator checks it, with the port added or
removed, compared in constant time. Each webhook's form and each URL's query string handed to Twilio is a model
below, which the API's edge (api/resources/telephony.py) validates before anything is read or written; `RecordingUrl`
is never read. The signature and the parameters read: docs/phone-calls.md.
"""

from __future__ import annotations

import abc
import base64
import hashlib
import hmac
from collections.abc import Iterable
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit
from xml.etree import ElementTree

from pydantic import BaseModel, ConfigDict, Field, model_validator

from callscope.catalog.tables import INTEGER_MAX, Call
from callscope.telephony.voice import (
    CallEnded,
    Dial,
    DialResult,
    Hangup,
    InboundCall,
    Instruction,
    RecordingReady,
    Reject,
    Voicemail,
)
from callscope.validation import SINGLE_LINE, PositiveInt64, line

DIALECT = "twilio"
SIGNATURE_HEADER = "X-Twilio-Signature"
TWIML_CONTENT_TYPE = "application/xml"
ANONYMOUS = "anonymous"
DialStatus = Literal["completed", "answered", "busy", "no-answer", "failed", "canceled"]
_ANSWERED = ("completed", "answered")
_FINAL_CALL_STATUSES = ("completed", "busy", "no-answer", "failed", "canceled")

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
    default = 443 if parts.scheme in ("https", "wss") else 80
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


# ----- webhook parameters -----------------------------------------------------------------------

def sid(prefix: str) -> Any:
    """A Twilio SID: two letters naming its kind, then 32 hex digits (what the sandbox makes, too)."""
    return Annotated[str, Field(pattern=rf"^{prefix}[0-9a-fA-F]{{32}}$")]


CallSid = sid("CA")
RecordingSid = sid("RE")
E164 = Annotated[str, Field(pattern=r"^\+[1-9][0-9]{1,14}$")]
# The caller as the carrier gives it: a number (E.164, or the digits a withheld id is dialled as), a withheld id
# spelt out (anonymous, RESTRICTED, ...), or a client: or sip: address; no longer than the call's column.
CALLER_PATTERN = r"^(?:\+?[0-9]+|[A-Za-z]+|(?:client|sip):[^\s\x00-\x1f\x7f-\x9f]+)$"
Caller = line(Call.phone_number.type.length, CALLER_PATTERN)
CallerName = line(Call.caller_name.type.length, SINGLE_LINE)
Status = line(32, SINGLE_LINE)  # a status Twilio may add to; the known ones are matched
Seconds = Annotated[int, Field(ge=0, le=INTEGER_MAX)]  # the catalog's INTEGER columns


class TwilioParams(BaseModel):
    """A webhook's form or query string, by Twilio's names; blank values count as absent, so defaults stand."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _blank_is_absent(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if not (isinstance(v, str) and not v.strip())}
        return data


class VoiceForm(TwilioParams):
    """The voice URL: a call comes in."""

    call_id: CallSid = Field(alias="CallSid")
    to: E164 = Field(alias="To")
    caller: Caller = Field(ANONYMOUS, alias="From")
    caller_name: CallerName = Field("", alias="CallerName")


class DialForm(TwilioParams):
    """`<Dial action>`: a dial attempt ended."""

    call_id: CallSid = Field(alias="CallSid")
    status: DialStatus = Field(alias="DialCallStatus")
    duration: Seconds = Field(0, alias="DialCallDuration")


class RecordingForm(TwilioParams):
    """The recording status callback."""

    call_id: CallSid = Field(alias="CallSid")
    recording_id: RecordingSid = Field(alias="RecordingSid")
    status: Status = Field("completed", alias="RecordingStatus")
    channels: Annotated[int, Field(ge=1, le=2)] = Field(1, alias="RecordingChannels")
    duration: Seconds = Field(0, alias="RecordingDuration")


class StatusForm(TwilioParams):
    """The call status callback: the call's end, or a progress report (ringing, in-progress)."""

    call_id: CallSid = Field(alias="CallSid")
    status: Status = Field(alias="CallStatus")
    duration: Seconds = Field(0, alias="CallDuration")


# The query strings of the URLs the service hands Twilio (callscope/services/phone_calls.py webhook_url).

class DialQuery(TwilioParams):
    attempt: Annotated[int, Field(ge=0, le=INTEGER_MAX)]


class AnsweredQuery(TwilioParams):
    call_id: CallSid = Field(alias="call")
    operator_id: PositiveInt64 = Field(alias="operator")


class RecordingQuery(TwilioParams):
    call_id: CallSid | None = Field(None, alias="call")  # the caller's call (a dial's recording names the leg)


def inbound_call(form: VoiceForm) -> InboundCall:
    return InboundCall(call_id=form.call_id, to=form.to, caller=form.caller, caller_name=form.caller_name)


def dial_result(form: DialForm) -> DialResult:
    if form.status in _ANSWERED:
        return DialResult(call_id=form.call_id, status="answered", duration=form.duration)
    return DialResult(call_id=form.call_id, status=form.status)  # type: ignore[arg-type]


def recording_ready(form: RecordingForm, query: RecordingQuery) -> RecordingReady:
    return RecordingReady(call_id=query.call_id or form.call_id, recording_id=form.recording_id,
                          completed=form.status == "completed", channels=form.channels, duration=form.duration)


def call_ended(form: StatusForm) -> CallEnded | None:
    """The call's end; None for a progress report."""
    if form.status not in _FINAL_CALL_STATUSES:
        return None
    return CallEnded(call_id=form.call_id, status=form.status, duration=form.duration)


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
        if instruction.stream_url:
            # Media Streams: the caller's audio (inbound) and what Twilio plays to them (outbound: the operator)
            start = ElementTree.SubElement(response, "Start")
            ElementTree.SubElement(start, "Stream", url=instruction.stream_url, track="both_tracks")
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


# ----- voice, for a provider that speaks Twilio ------------------------------------------------------

class TwilioVoice(abc.ABC):
    """The dialect's part of a provider: its webhooks are signed with the auth token of `_voice_credentials`."""

    voice_dialect = DIALECT
    # record-from-answer-dual: the first channel is the parent call (the caller), the second the dialled operator
    operator_channel = 1

    @abc.abstractmethod
    def _voice_credentials(self) -> tuple[str, str]:
        """(account sid, auth token)."""

    def valid_signature(self, url: str, params: Params, given: str | None) -> bool:
        return valid_signature(self._voice_credentials()[1], url, params, given)
