"""A live call's events, in the order they happen, and the log that keeps them for whoever follows the call (the
socket that sends the audio, and any number of SSE readers, who may join late and get what they missed first).

Every event has the recording's `public_id`, a sequence number `seq` (1, 2, ... per call) and `at`, the seconds
of the call's audio it was decided at. Times inside an event (`start`, `end`, word times) are seconds since the
call began, too. The recognition makes them without `public_id` and `seq`; the log fills those in."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Literal

from pydantic import BaseModel, Field

Role = Literal["agent", "customer", "unknown"]


class Event(BaseModel):
    public_id: str = ""
    seq: int = 0
    at: float = Field(description="Seconds of the call's audio when the event was decided.")


class Word(BaseModel):
    text: str
    start: float
    end: float
    probability: float


class Partial(Event):
    """The words of an utterance still being said: `stable` are confirmed (two successive hypotheses agreed on
    them; they never change), `text` is all of it so far (the rest may still change)."""

    type: Literal["partial"] = "partial"
    speaker: str
    role: Role
    start: float
    stable: str
    text: str


class Final(Event):
    """An utterance closed (the speaker paused): its words and their times, never changed once sent."""

    type: Literal["final"] = "final"
    speaker: str
    role: Role
    start: float
    end: float
    text: str
    words: list[Word]


class GoalMet(Event):
    """A phrase goal of the project met: the words that met it and their time."""

    type: Literal["goal"] = "goal"
    goal_id: int
    goal_name: str
    phrase: str
    quote: str
    start: float
    speaker: str
    role: Role


class Alert(Event):
    """`phrase`: one of the project's `liveAlerts` said (`name`, `phrase`, `quote`, `speaker`, `role`, `start`);
    `silence`: nobody spoke for longer than the project's pause threshold without a hold announced (`start`,
    `seconds`, `threshold`); `emotion`: the customer sounded negative in consecutive utterances (`emotion`, the one
    that prevailed in the last, `quote` of it, `speaker`, `role`, `start`)."""

    type: Literal["alert"] = "alert"
    kind: Literal["phrase", "silence", "emotion"]
    name: str
    start: float
    phrase: str | None = None
    quote: str | None = None
    speaker: str | None = None
    role: Role | None = None
    seconds: float | None = None
    threshold: float | None = None
    emotion: str | None = None


class RecognitionStopped(Event):
    """Live recognition stopped while the call goes on (no more partials, finals, goals or alerts): `lost`, its Ray
    actor's process or node went away; `failed`, its models failed; `no_capacity`, the cluster had no room for it in
    time. The audio is still kept, stored and analysed in full when the call ends."""

    type: Literal["recognition_stopped"] = "recognition_stopped"
    reason: Literal["lost", "failed", "no_capacity"]
    message: str


EndReason = Literal["stop", "disconnect", "idle", "error", "too_long"]


class End(Event):
    """The call is over. `stored`: its audio is the recording `public_id`, whose full analysis is queued; false when
    no audio arrived (or it could not be stored: `error` says why)."""

    type: Literal["end"] = "end"
    reason: EndReason
    duration: float
    stored: bool
    error: str | None = None


class EventLog:
    """The events of one call. `append` numbers them; `follow` yields them all from a sequence number on, waits
    for the next ones, and stops after `end`."""

    def __init__(self, public_id: str):
        self.public_id = public_id
        self.events: list[Event] = []
        self._changed = asyncio.Condition()

    @property
    def ended(self) -> bool:
        return bool(self.events) and isinstance(self.events[-1], End)

    async def append(self, events: list[Event]) -> None:
        if not events or self.ended:
            return
        async with self._changed:
            for event in events:
                self.events.append(event.model_copy(update={"public_id": self.public_id,
                                                            "seq": len(self.events) + 1}))
            self._changed.notify_all()

    async def follow(self, after: int = 0) -> AsyncIterator[Event]:
        """Every event with `seq` > `after`, as they come, until `end`."""
        sent = after
        while True:
            async with self._changed:
                await self._changed.wait_for(lambda: len(self.events) > sent)  # noqa: B023 - awaited here
                new = self.events[sent:]
            for event in new:
                yield event
                if isinstance(event, End):
                    return
            sent += len(new)
