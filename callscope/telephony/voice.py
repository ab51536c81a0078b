"""Phone calls, provider-neutral: what a carrier's webhooks tell the service (events) and what the service tells the
carrier to do with a call (instructions). A carrier's dialect (`twilio_voice.py`) reads its webhooks into events and
writes instructions in its own markup; the rules (callscope/services/phone_calls.py) see only these models."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

DialStatus = Literal["answered", "busy", "no-answer", "failed", "canceled"]


# ----- events ---------------------------------------------------------------------------------

class InboundCall(BaseModel):
    call_id: str = Field(description="The provider's id of the call (Twilio's CallSid).")
    to: str = Field(description="The virtual number called, E.164.")
    caller: str = Field(description="The caller's number as the provider gives it.")
    caller_name: str = Field("", description="The caller's name, when the provider looks it up (CNAM).")


class DialResult(BaseModel):
    """The end of one dial attempt: answered (and over), or why nobody took the call."""

    call_id: str
    status: DialStatus
    duration: int = Field(0, description="Seconds the operator was connected; 0 unless answered.")


class RecordingReady(BaseModel):
    """A recording the provider holds. Where it lives the provider knows from its own configuration and the id,
    never from the webhook (credentials go with the download)."""

    call_id: str
    # It names the provider's copy in a URL path or a file name.
    recording_id: str = Field(pattern=r"^[A-Za-z0-9]{2,64}$",
                              description="The provider's id of the recording (Twilio's RecordingSid).")
    completed: bool = Field(description="False when the provider has no audio (absent, failed).")
    channels: int = 1
    duration: int = 0


class CallEnded(BaseModel):
    call_id: str
    status: str = Field(description="The provider's final status of the call (completed, busy, no-answer, ...).")
    duration: int = 0


# ----- instructions ---------------------------------------------------------------------------

class Target(BaseModel):
    phone_number: str
    answered_url: str | None = Field(None, description="Called back when this target answers (who took the call).")


class Dial(BaseModel):
    """Ring the targets (all at once when several) for `timeout` seconds; `action_url` hears how it ended."""

    targets: list[Target]
    timeout: int
    action_url: str
    recording_url: str | None = Field(None, description="Set: record both parties on two channels from answer.")
    stream_url: str | None = Field(None, description="Set: stream both parties' audio to this WebSocket while the "
                                   "call lasts (a live call).")


class Voicemail(BaseModel):
    prompt: str
    max_seconds: int
    action_url: str
    recording_url: str


class Reject(BaseModel):
    pass


class Hangup(BaseModel):
    pass


Instruction = Dial | Voicemail | Reject | Hangup
