"""Live recognition of one call as its own Ray actor, on the cluster the batch analysis runs on: live calls scale
out as batch calls do, and the API process that holds the call's socket holds no model.

`LiveActor` loads the live models in its own worker process (an actor is a process) and then runs one call's
`LiveRecognition` (analysis/runtime/live.py). Loading takes seconds (a process, its imports, Whisper), so
CALLSCOPE_LIVE_SPARE_ACTORS actors are started ahead (`Spares`, from the first live call of this process on): a
call takes a loaded one and, once it has begun, another starts for the next call. `RayRecognition` is the call's
`Recognition` (callscope/live/session.py): it takes the actor and forwards each turn to it. Actors ask Ray for
CALLSCOPE_RAY_LIVE_NUM_CPUS / _NUM_GPUS on the nodes that offer CALLSCOPE_RAY_WORKER_RESOURCE. One that finds no
room (or whose models do not load) within CALLSCOPE_LIVE_START_TIMEOUT_SECONDS, or that dies mid-call with its
process or node, raises `RecognitionLost`: the call goes on without live recognition, said in an event, and its
recording is analysed as usual. Ray never restarts one (a new actor would not have heard the call so far), and
none is detached: they end with the API process.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import ray
import structlog

from callscope import ray_cluster
from callscope.config import Settings
from callscope.live.events import Event, Role
from callscope.live.session import RecognitionLost
from callscope.resources.kinds import ProjectSpec

if TYPE_CHECKING:
    from callscope.analysis.runtime.live import LiveRecognition

log = structlog.get_logger()

LOST = "Live recognition lost its worker (its process or node went away); the recording is analysed as usual"


def no_capacity(seconds: float) -> str:
    return (f"Live recognition found no room on the analysis cluster within {seconds:g} s; the recording is "
            f"analysed as usual")


@ray.remote(max_restarts=0, max_task_retries=0)
class LiveActor:
    def __init__(self, settings: Settings) -> None:
        from callscope.analysis.runtime.live import LiveModels  # faster-whisper: only in the actor's process

        self.models = LiveModels(settings)
        self.models.load()
        self.recognition: LiveRecognition | None = None

    def begin(self, spec: ProjectSpec, tracks: list[tuple[str, Role]]) -> None:
        self.recognition = self.models.recognition(spec, tracks)
        self.recognition.warm_up()  # the project's site model, where it is heard with one: not loaded ahead

    def feed(self, chunks: list[np.ndarray]) -> list[Event]:
        assert self.recognition is not None
        return self.recognition.feed(chunks)

    def finish(self) -> list[Event]:
        assert self.recognition is not None
        return self.recognition.finish()


def start_actor(settings: Settings) -> Any:
    return LiveActor.options(num_cpus=settings.ray_live_num_cpus, num_gpus=settings.ray_live_num_gpus,
                             **ray_cluster.placement(settings)).remote(settings)


class Spares:
    """Actors started ahead for the next calls of this process, their models loading or loaded."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # calls start in worker threads, at once
        self._actors: list[Any] = []

    def take(self, settings: Settings) -> Any:
        """A spare actor (a new one where none is left)."""
        with self._lock:
            ray_cluster.connect(settings)
            return self._actors.pop(0) if self._actors else start_actor(settings)

    def make_up(self, settings: Settings) -> None:
        """Start spares up to CALLSCOPE_LIVE_SPARE_ACTORS. Called once the taking call's actor has begun (or given
        up): Ray does not place actors in the order they were made, so a spare started beside a new call's actor
        could take the room the call waits for."""
        with self._lock:
            while len(self._actors) < settings.live_spare_actors:
                self._actors.append(start_actor(settings))


_spares = Spares()


class RayRecognition:
    """The call's `Recognition`, run by its own `LiveActor` (blocking calls: the session runs them in a thread)."""

    def __init__(self, settings: Settings, spec: ProjectSpec, tracks: Sequence[tuple[str, Role]]):
        self.settings, self.spec, self.tracks = settings, spec, list(tracks)
        self.actor: Any | None = None

    def warm_up(self) -> None:
        """Take a spare actor and begin the call on it (waiting, at most CALLSCOPE_LIVE_START_TIMEOUT_SECONDS, for
        it to be placed and loaded)."""
        timeout = self.settings.live_start_timeout_seconds
        self.actor = _spares.take(self.settings)
        try:
            self._call("begin", self.spec, self.tracks, timeout=timeout)
        except RecognitionLost as exc:
            if exc.reason != "lost":
                raise
            self.actor = start_actor(self.settings)  # the spare died while it waited (its node went away)
            self._call("begin", self.spec, self.tracks, timeout=timeout)
        finally:
            _spares.make_up(self.settings)

    def feed(self, chunks: Sequence[np.ndarray]) -> list[Event]:
        return self._call("feed", list(chunks))

    def finish(self) -> list[Event]:
        try:
            return self._call("finish")
        finally:
            self._release()

    def _call(self, method: str, *args: Any, timeout: float | None = None) -> Any:
        assert self.actor is not None
        try:
            return ray.get(getattr(self.actor, method).remote(*args), timeout=timeout)
        except ray.exceptions.GetTimeoutError as exc:
            self._release()
            raise RecognitionLost("no_capacity", no_capacity(timeout or 0), str(exc)[:500]) from exc
        except ray.exceptions.RayActorError as exc:  # ActorDiedError, ActorUnavailableError: process or node gone
            self._release()
            raise RecognitionLost("lost", LOST, str(exc)[:500]) from exc
        except BaseException:  # the recognition's own failure: the session says so; the actor is not needed
            self._release()
            raise

    def _release(self) -> None:
        actor, self.actor = self.actor, None
        if actor is not None:
            with contextlib.suppress(Exception):  # gone already, or Ray is: it ends with this process anyway
                ray.kill(actor, no_restart=True)
