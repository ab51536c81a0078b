"""One live call: the audio of its tracks in, the events out, and the recording when it ends.

`add` keeps each frame (the recording, callscope/live/recording.py) and queues it, at 16 kHz, for the recognition,
which a task runs in a worker thread on everything queued since its last turn (so it never falls further behind than
one turn). `end` (the client's `stop`, a disconnect, an idle socket, a refused message) finishes the recognition,
stores the audio as the recording `public_id` (the full analysis is queued with it) and appends the `end` event. It
runs once, shielded: a socket that goes away while the call is being stored does not cut that short.

The recognition is injected (`Recognition`: analysis/runtime/live.py in this process, or the call's own Ray actor,
analysis/runtime/live_actor.py): this module holds no model. A recognition that fails or loses its node stops with
a `recognition_stopped` event, and the call goes on: its audio is kept, stored and analysed as any other.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol

import numpy as np
import structlog

from callscope.catalog.recordings import Found
from callscope.errors import CallscopeError
from callscope.identifiers import uuid7
from callscope.live.audio import TrackAudio
from callscope.live.events import End, EndReason, Event, EventLog, RecognitionStopped
from callscope.live.recording import CallAudio
from callscope.services import uploads
from callscope.services.context import Context, Principal

log = structlog.get_logger()

NOT_STORED = "The call's audio could not be stored"
NO_AUDIO = "No audio arrived: nothing is stored"
RECOGNITION_FAILED = "Live recognition failed; the recording is analysed as usual"


class Recognition(Protocol):
    """One call's recognition, run in a worker thread: in this process (analysis/runtime/live.py) or as the call's
    Ray actor (analysis/runtime/live_actor.py)."""

    def warm_up(self) -> None: ...

    def feed(self, chunks: Sequence[np.ndarray]) -> list[Event]: ...

    def finish(self) -> list[Event]: ...


class RecognitionLost(Exception):
    """The recognition went away mid-call (`lost`: its process or node) or never found room (`no_capacity`);
    `message` is for the call's followers, `cause` for the log."""

    def __init__(self, reason: Literal["lost", "no_capacity"], message: str, cause: str):
        super().__init__(message)
        self.reason, self.message, self.cause = reason, message, cause


class CallTooLong(Exception):
    """The call's audio reached the largest recording the service stores."""


class LiveSession:
    """`fields`: what the recording is (asked for when the call ends: a phone call knows by then who answered);
    `stored`: told of the recording once it is stored."""

    def __init__(self, ctx: Context, principal: Principal, project_id: int | None, rate: int, tracks: int,
                 recognition: Recognition, fields: Callable[[], Awaitable[uploads.UploadFields]],
                 stored: Callable[[Found], Awaitable[None]] | None = None):
        self.ctx, self.principal, self.fields = ctx, principal, fields
        self.public_id = str(uuid7())
        self.account, self.project_id = principal.account, project_id
        self.log = EventLog(self.public_id)
        self.audio = CallAudio(ctx.settings, rate, tracks)
        self._to_16k = [TrackAudio(rate) for _ in range(tracks)]
        self._queued: list[list[np.ndarray]] = [[] for _ in range(tracks)]
        self._recognition: Recognition | None = recognition
        self._stored = stored
        self._wake = asyncio.Event()
        self._closing = False
        self._error: str | None = None
        self._task: asyncio.Task | None = None
        self._ending: asyncio.Future[End] | None = None
        self.ended_at: float | None = None  # time.monotonic() of the end

    def start(self) -> None:
        """Start recognising: the models load (in a worker thread, or in the call's actor) while the call's first
        audio is queued for them; without them the call goes on unrecognised, its audio kept."""
        self._task = asyncio.create_task(self._recognise(), name=f"live-{self.public_id}")

    def add(self, track: int, samples: np.ndarray, at: int | None = None) -> None:
        """A frame of int16 samples of one track; `at`: its first sample's place in the call (Twilio's timestamps),
        a gap before it being silence."""
        spool = self.audio.tracks[track]
        gap = max(0, at - spool.samples) if at is not None else 0
        if self.audio.full(gap + len(samples)):
            raise CallTooLong()
        spool.add(samples, at)
        if self._recognition is not None:
            heard = np.concatenate([np.zeros(gap, dtype=np.int16), samples]) if gap else samples
            self._queued[track].append(self._to_16k[track].to_16k(heard))
            self._wake.set()

    async def _recognise(self) -> None:
        assert self._recognition is not None
        await self._run(self._recognition.warm_up)
        while True:
            await self._wake.wait()
            self._wake.clear()
            chunks = [np.concatenate(q) if q else np.zeros(0, dtype=np.float32) for q in self._queued]
            self._queued = [[] for _ in self._queued]
            if self._recognition is not None and any(len(c) for c in chunks):
                await self._run(self._recognition.feed, chunks)
            if self._closing and not any(self._queued):  # what came during the last turn is heard too
                return

    async def _run(self, step: Callable[..., Any], *args) -> None:
        """One turn of the recognition in a worker thread; a failure stops it, said in an event at once (the call
        goes on, its audio kept for the batch analysis)."""
        reason: Literal["lost", "no_capacity", "failed"]
        try:
            await self.log.append(await asyncio.to_thread(step, *args) or [])
            return
        except RecognitionLost as exc:
            log.warning("live_recognition_lost", public_id=self.public_id, reason=exc.reason, error=exc.cause)
            reason, message = exc.reason, exc.message
        except Exception:  # a model that fails: logged with its cause
            log.exception("live_recognition_failed", public_id=self.public_id)
            reason, message = "failed", RECOGNITION_FAILED
        self._recognition, self._error = None, message
        await self.log.append([RecognitionStopped(at=round(self.audio.seconds, 3), reason=reason, message=message)])

    async def end(self, reason: EndReason, problem: str | None = None) -> End:
        """End the call (once; later calls get the same end)."""
        if self._ending is None:
            self._ending = asyncio.ensure_future(self._end(reason, problem))
        return await asyncio.shield(self._ending)

    async def _end(self, reason: EndReason, problem: str | None) -> End:
        self._closing = True
        self._wake.set()
        if self._task is not None:
            await self._task
        if self._recognition is not None:
            await self._run(self._recognition.finish)
        seconds = round(self.audio.seconds, 3)
        stored, error = False, self._error
        try:
            if self.audio.wav_bytes <= 44:
                error = error or NO_AUDIO
            else:
                found, _ = await self.audio.store(
                    uploads.Upload(self.ctx, self.principal, "live-call.wav", self.public_id), await self.fields())
                stored = found.recording.public_id == self.public_id
                if not stored:  # its external_id's recording came first (a carrier's own recording of the call)
                    error = f"The call was stored already, as recording {found.recording.public_id}"
                elif self._stored is not None:
                    await self._stored(found)
        except CallscopeError as exc:
            error = exc.message
        except Exception:  # a failure of the store or the catalog: said in the end event, logged with its cause
            log.exception("live_call_not_stored", public_id=self.public_id)
            error = NOT_STORED
        finally:
            self.audio.close()
        end = End(at=seconds, reason=reason, duration=seconds, stored=stored, error=error)
        await self.log.append([end])
        self.ended_at = time.monotonic()
        log.info("live_call_ended", account=self.account, public_id=self.public_id, reason=reason, problem=problem,
                 seconds=seconds, stored=stored, events=len(self.log.events))
        return end
