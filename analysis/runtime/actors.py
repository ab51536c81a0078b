"""The analysis on Ray: actors that keep the models loaded, and the task that analyses one recording.

``ModelActor`` owns one model of ``pipeline.MODELS``, built once and kept loaded, named and detached in the
``callscope`` namespace (dispatchers share it; Ray restarts it); a site model's (a project's transcription.model)
stops itself once unused for CALLSCOPE_SITE_MODEL_IDLE_SECONDS and is made again by the next analysis that needs it.
``ModelProxy`` makes its handle look like the model, so ``Pipeline`` runs the same code inline and on Ray;
``analyze_recording`` is the task for one recording (it fetches the audio itself; Ray never retries it: the job queue
does); ``ProgressBoard`` collects the progress the tasks report, and each first analysis's transcript once it is
final. How they are placed and restarted: docs/operations.md.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import ray
import structlog
from pydantic import BaseModel

from callscope import ray_cluster
from callscope.analysis.result import AnalysisResult
from callscope.analysis.runtime import ray_figures
from callscope.analysis.runtime.idle import Idle
from callscope.analysis.runtime.pipeline import MODELS, AnalysisError, Pipeline, Progress, Transcribed, load_model
from callscope.analysis.runtime.work import NotPlaced, Work, WorkerLost, analyze
from callscope.analysis.stages.asr import site_model_settings
from callscope.metrics import model_load

log = structlog.get_logger()

_PLAIN = (bool, int, float, str, Path, type(None), BaseModel)  # BaseModel: a model's ``info``


@ray.remote(max_restarts=-1, max_task_retries=0)
class ModelActor:
    def __init__(self, name: str, settings, idle_seconds: float | None = None) -> None:
        """`idle_seconds`: unused that long, the actor exits (a site model's); None: it stays up."""
        self.model = load_model(name, settings)
        self._idle = Idle(idle_seconds or math.inf)
        if idle_seconds:
            threading.Thread(target=self._watch, name="idle", daemon=True).start()

    def describe(self) -> dict[str, Any] | None:
        """The model's plain public attributes (``info``, ``multilingual``...) for the proxy; None: not available."""
        if self.model is None:
            return None
        attributes = {k: getattr(self.model, k) for k in dir(self.model) if not k.startswith("_")}
        return {k: v for k, v in attributes.items() if isinstance(v, _PLAIN)}

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self._idle.hold()
        try:
            return getattr(self.model, method)(*args, **kwargs)
        finally:
            self._idle.release()

    def retire(self) -> None:
        """Exit where the model has gone unused for its idle seconds. The actor runs one method at a time, so none
        is transcribing meanwhile; Ray does not restart an actor that exits itself, and the calls queued behind
        this one fail: their SiteModelProxy makes the actor again."""
        if self._idle.left() == 0:
            log.info("site_model_actor_retired", idle_seconds=self._idle.seconds)
            ray.actor.exit_actor()

    def _watch(self) -> None:
        """Asks the actor to retire, in its turn after the calls queued before, once the model seems unused long
        enough; `retire` decides."""
        me = ray.get_runtime_context().current_actor
        while True:
            left = self._idle.left()
            if left == 0:
                me.retire.remote()
            time.sleep(left or self._idle.seconds)


class ModelProxy:
    """Stands in for a model object: attributes from ``describe()``, methods run on the actor."""

    def __init__(self, handle: Any, attributes: dict[str, Any]) -> None:
        self._handle = handle
        self.__dict__.update(attributes)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        return partial(self._call, name)

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        return ray.get(self._handle.call.remote(method, *args, **kwargs))


class SiteModelProxy(ModelProxy):
    """A site model's proxy: its actor exits once idle (ModelActor.retire), so a call that finds it gone makes it
    again and is made once more (a transcription of the same audio: nothing was done twice)."""

    def __init__(self, make: Callable[[], tuple[Any, dict[str, Any]]]) -> None:
        self._make = make
        super().__init__(*make())

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return super()._call(method, *args, **kwargs)
        except ray.exceptions.ActorDiedError:
            self._handle, _ = self._make()
            return super()._call(method, *args, **kwargs)


@ray.remote(num_cpus=0)
class ProgressBoard:
    def __init__(self) -> None:
        self._latest: dict[int, tuple[str, float]] = {}
        self._drafts: dict[int, dict] = {}

    def report(self, job_id: int, stage: str, fraction: float) -> None:
        self._latest[job_id] = (stage, fraction)

    def transcribed(self, job_id: int, document: dict) -> None:
        self._drafts[job_id] = document

    def take(self) -> tuple[dict[int, tuple[str, float]], dict[int, dict]]:
        latest, drafts, self._latest, self._drafts = self._latest, self._drafts, {}, {}
        return latest, drafts


def site_transcriber(settings, name: str) -> SiteModelProxy:
    """The transcriber of the site's model `name` (a project's transcription.model): its own named actor, placed and
    reserving what the default transcriber's do, created by the first analysis that needs it and shared by the later
    ones until it goes unused for CALLSCOPE_SITE_MODEL_IDLE_SECONDS (then it exits, and the next analysis makes it
    again). Where no node has room for it within CALLSCOPE_RAY_PLACEMENT_TIMEOUT_SECONDS the analysis fails and the
    queue tries it again, rather than wait on it for ever."""
    model_settings = site_model_settings(settings, name)  # an unknown name fails here, before an actor is made
    _, cpus, gpus = model_resources(settings, "transcriber")

    def make() -> tuple[Any, dict[str, Any]]:
        handle = ModelActor.options(  # type: ignore[attr-defined]  # ray.remote's class: mypy sees the plain one
            name=f"transcriber-site-{name}", lifetime="detached", get_if_exists=True, num_cpus=cpus, num_gpus=gpus,
            **ray_cluster.placement(settings)).remote("transcriber", model_settings, settings.site_model_idle_seconds)
        return handle, ray.get(handle.describe.remote(), timeout=settings.ray_placement_timeout_seconds)
    return SiteModelProxy(make)


@ray.remote(max_retries=0)
def analyze_recording(settings, work: Work, models: dict[str, tuple[Any, dict] | None], board: Any) -> AnalysisResult:
    pipeline = Pipeline(settings, **{name: ModelProxy(*spec) if spec else None for name, spec in models.items()},
                        site_transcriber=lambda name: site_transcriber(settings, name))
    return analyze(pipeline, settings, work, lambda stage, fraction: board.report.remote(work.job_id, stage, fraction),
                   lambda document: board.transcribed.remote(work.job_id, document))


def _running(name: str) -> bool:
    """Whether the model actor ``name`` is up already."""
    try:
        ray.get_actor(name)
    except ValueError:
        return False
    return True


def model_resources(s, name: str) -> tuple[int, float, float]:
    """(actors, CPUs, GPUs) of the model ``name``: Whisper, the language model and the speakers actor (with the
    pyannote.audio pipeline) may take GPUs; the small CPU models reserve CALLSCOPE_RAY_MODEL_NUM_CPUS each (0 by
    default: they run inside the analysis task's turn, and a reservation would starve a small cluster)."""
    if name == "transcriber":
        return s.ray_asr_actors, s.ray_asr_num_cpus, s.ray_asr_num_gpus
    if name == "llm":
        return 1, s.ray_model_num_cpus, s.ray_llm_num_gpus
    if name == "speakers":
        return 1, s.ray_model_num_cpus, s.ray_speakers_num_gpus
    return 1, s.ray_model_num_cpus, 0


class RayExecutor:
    """Runs analyses on Ray for one dispatcher: ``await analyze(work, progress)``."""

    POLL_SECONDS = 0.5

    def __init__(self, settings) -> None:
        self.settings = settings
        self._models: dict[str, list[tuple[Any, dict]]] = {}
        self._board: Any = None
        self._listeners: dict[int, tuple[Progress, Transcribed | None]] = {}
        self._poller: asyncio.Task | None = None
        self._turn = 0
        self.lost = asyncio.Event()

    async def start(self) -> None:
        await asyncio.to_thread(ray_cluster.connect, self.settings)
        for name in MODELS:
            count, cpus, gpus = model_resources(self.settings, name)
            pool = []
            for i in range(count):
                loaded = await asyncio.to_thread(_running, f"{name}-{i}")
                with model_load(name, timed=not loaded) as load:  # another dispatcher's actor: loaded already
                    handle = ModelActor.options(
                        name=f"{name}-{i}", lifetime="detached", get_if_exists=True, num_cpus=cpus, num_gpus=gpus,
                        **ray_cluster.placement(self.settings)).remote(name, self.settings)
                    attributes = await handle.describe.remote()
                    load.timed = load.timed and attributes is not None
                if attributes is None:  # not installed or configured: its stages do not run
                    ray.kill(handle)
                    break
                pool.append((handle, attributes))
            self._models[name] = pool
        self._board = ProgressBoard.remote()
        self._poller = asyncio.create_task(self._poll(), name="ray-progress")
        ray_figures.expose()
        log.info("ray_executor_ready", models={k: len(v) for k, v in self._models.items()})

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.POLL_SECONDS)
            try:
                latest, drafts = await self._board.take.remote()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self._connection_lost(exc):
                    return
                log.warning("progress_board_lost", exc_info=True)  # its worker died: a new board, progress resumes
                self._board = ProgressBoard.remote()
                continue
            for job_id, (stage, fraction) in latest.items():
                if (listener := self._listeners.get(job_id)) is not None:
                    listener[0](stage, fraction)
            for job_id, document in drafts.items():
                if (listener := self._listeners.get(job_id)) is not None and listener[1] is not None:
                    listener[1](document)

    def _connection_lost(self, exc: BaseException) -> bool:
        """Whether ``exc`` says this process lost its Ray cluster (the head, or its client server, went away);
        then ``lost`` is set, and the dispatcher starts a new executor that joins the cluster when it is back."""
        if ray.is_initialized() and not isinstance(exc, (ConnectionError, grpc.RpcError)):  # gRPC: Ray's client
            return False
        if not self.lost.is_set():
            log.warning("ray_connection_lost", error=f"{type(exc).__name__}: {exc}"[:500])
            self.lost.set()
        return True

    def _pick(self) -> dict[str, tuple[Any, dict] | None]:
        self._turn += 1
        return {name: pool[self._turn % len(pool)] if pool else None for name, pool in self._models.items()}

    async def analyze(self, work: Work, progress: Progress, transcribed: Transcribed | None = None
                      ) -> AnalysisResult:
        started = asyncio.Event()

        def reported(stage: str, fraction: float) -> None:
            started.set()
            progress(stage, fraction)

        self._listeners[work.job_id] = (reported, transcribed)
        ref = None
        try:
            options = {"num_cpus": self.settings.ray_task_num_cpus, **ray_cluster.placement(self.settings)}
            ref = analyze_recording.options(**options).remote(self.settings, work, self._pick(), self._board)
            return await self._placed(ref, started, options)
        except asyncio.CancelledError:
            if ref is not None:
                ray.cancel(ref)
            raise
        except ray.exceptions.RayTaskError as exc:
            if isinstance(exc.cause, AnalysisError):
                raise AnalysisError(str(exc.cause)) from None
            if isinstance(exc.cause, ray.exceptions.ActorUnavailableError):  # Ray is restarting a model's actor
                raise WorkerLost(str(exc.cause)[:500]) from None
            raise
        except ray.exceptions.ActorUnavailableError as exc:
            raise WorkerLost(str(exc)[:500]) from None
        except Exception as exc:
            self._connection_lost(exc)
            raise  # the queue tries the job again
        finally:
            self._listeners.pop(work.job_id, None)

    async def _placed(self, ref: Any, started: asyncio.Event, options: dict[str, Any]) -> AnalysisResult:
        """The task's result; NotPlaced (the task cancelled) when it reported nothing within
        CALLSCOPE_RAY_PLACEMENT_TIMEOUT_SECONDS: Ray found no node that offers what it asks for."""
        result = asyncio.ensure_future(ref)
        reporting = asyncio.ensure_future(started.wait())
        timeout = self.settings.ray_placement_timeout_seconds
        try:
            await asyncio.wait({result, reporting}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            result.cancel()
            raise
        finally:
            reporting.cancel()
        if not result.done() and not started.is_set():
            ray.cancel(ref, force=True)
            asks = ", ".join([f"CPU {options['num_cpus']:g}", *options.get("resources", {})])
            raise NotPlaced(f"Ray did not start the analysis within {timeout:g} s: no node offers what it asks "
                            f"for ({asks}); it waits in the queue until one does")
        return await result

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        await asyncio.to_thread(ray_cluster.disconnect)
