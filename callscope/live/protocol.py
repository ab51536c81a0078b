"""The messages of a live call's socket, as pydantic models: the generic endpoint's (`start`, binary audio frames,
`stop`) and Twilio Media Streams' (`connected`, `start`, `media`, `stop`), and the close codes the service ends a
socket with. A message that is not one of these is a `ProtocolError`, which names the problem (never the audio) and
says which close code it ends the socket with."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from callscope.telephony.twilio_voice import CallSid
from callscope.validation import ExternalId, Name, PositiveInt64

# Close codes. 1000: the call ended as asked (`stop`); the RFC 6455 codes where one says it; otherwise 4000 plus the
# HTTP status the same refusal has on the REST API (4000-4999 are the application's).
NORMAL = 1000
UNSUPPORTED_DATA = 1003  # a text frame where audio was expected, or audio before `start`
INVALID_PAYLOAD = 1007  # malformed JSON, or a message that is not the protocol's
TOO_BIG = 1009  # an audio frame over CALLSCOPE_LIVE_MAX_FRAME_BYTES
INTERNAL_ERROR = 1011
IDLE = 4408  # nothing received for CALLSCOPE_LIVE_IDLE_TIMEOUT_SECONDS
TOO_LONG = 4413  # the call's audio reached the largest recording the service stores


def http_close_code(status: int) -> int:
    """The close code of a refusal the REST API answers with `status` (403 -> 4403)."""
    return 4000 + status


class ProtocolError(Exception):
    """A message the protocol does not allow: `message` for the client and the log, `code` to close with."""

    def __init__(self, message: str, code: int = INVALID_PAYLOAD):
        super().__init__(message)
        self.message, self.code = message, code


def problems(exc: ValidationError) -> str:
    """A validation failure in one line: each field and what is wrong with it, never the value."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'message'}: {e['msg']}" for e in exc.errors())


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProtocolError(f"Malformed JSON: {exc.msg} at character {exc.pos}") from None


# ----- the generic endpoint -------------------------------------------------------------------

Encoding = Literal["mulaw", "pcm16"]


class Start(BaseModel):
    """The first message: which project the call is for, and the audio's format. With 2 channels (interleaved
    samples), channel 1 is the agent and channel 2 the customer."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["start"]
    project_id: PositiveInt64 | None = Field(None, description="Required for an account-wide key.")
    name: Name | None = Field(None, description="The recording's name; default `Live call`.")
    external_id: ExternalId | None = Field(None, description="Your id of the call; unique per project.")
    encoding: Encoding = Field(description="mulaw (G.711 μ-law, 8 bits) or pcm16 (signed 16-bit little-endian).")
    sample_rate: Literal[8000, 16000]
    channels: Literal[1, 2] = 1

    @property
    def bytes_per_frame(self) -> int:
        """Bytes of one sample of every channel."""
        return (1 if self.encoding == "mulaw" else 2) * self.channels


class Stop(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["stop"]


def generic_message(text: str, started: bool) -> Start | Stop:
    """A text message of the generic endpoint: `start` first, then only `stop`."""
    data = _json(text)
    kind = data.get("type") if isinstance(data, dict) else None
    if kind not in ("start", "stop"):
        raise ProtocolError('A message must be a JSON object whose type is "start" or "stop"')
    if kind == "start" and started:
        raise ProtocolError("The call has started already: one start per socket")
    if kind == "stop" and not started:
        raise ProtocolError("stop before start", UNSUPPORTED_DATA)
    try:
        return Start.model_validate(data) if kind == "start" else Stop.model_validate(data)
    except ValidationError as exc:
        raise ProtocolError(f"Invalid {kind} message: {problems(exc)}") from None


# ----- Twilio Media Streams -------------------------------------------------------------------

class _Twilio(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class MediaFormat(_Twilio):
    encoding: Literal["audio/x-mulaw"]
    sample_rate: Literal[8000] = Field(alias="sampleRate")
    channels: Literal[1]


class StreamStart(_Twilio):
    call_id: CallSid = Field(alias="callSid")
    stream_id: Annotated[str, Field(max_length=64)] = Field("", alias="streamSid")
    tracks: list[Literal["inbound", "outbound"]] = Field(min_length=1, max_length=2)
    media_format: MediaFormat = Field(alias="mediaFormat")


class Media(_Twilio):
    track: Literal["inbound", "outbound"]
    timestamp: Annotated[int, Field(ge=0, le=2**31)] = Field(description="Milliseconds since the stream started.")
    payload: bytes = Field(description="μ-law 8 kHz audio (base64 in the message).")

    @field_validator("payload", mode="before")
    @classmethod
    def _base64(cls, value: Any) -> bytes:
        if not isinstance(value, str):
            raise ValueError("must be base64 text")
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("is not base64") from None


class TwilioConnected(_Twilio):
    event: Literal["connected"]


class TwilioStart(_Twilio):
    event: Literal["start"]
    start: StreamStart


class TwilioMedia(_Twilio):
    event: Literal["media"]
    media: Media


class TwilioStop(_Twilio):
    event: Literal["stop"]


class TwilioOther(_Twilio):
    """`mark`, `dtmf` and whatever Twilio adds: read and let be."""

    event: str


_TWILIO: dict[str, type[_Twilio]] = {"connected": TwilioConnected, "start": TwilioStart, "media": TwilioMedia,
                                     "stop": TwilioStop}


def twilio_message(text: str) -> _Twilio:
    """One of the messages above (TwilioOther for an event not read)."""
    data = _json(text)
    event = data.get("event") if isinstance(data, dict) else None
    if not isinstance(event, str):
        raise ProtocolError("A Media Streams message must be a JSON object with an event")
    model = _TWILIO.get(event, TwilioOther)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ProtocolError(f"Invalid {event} message: {problems(exc)}") from None
