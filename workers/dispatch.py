"""The analysis dispatcher: claims jobs from the catalog's queue and runs them on an executor.

It runs in every `callscope serve` (with CALLSCOPE_DISPATCHER_ENABLED) and in the Kopf operator; any number may
share one catalog. Per tick it fails the exhausted jobs, then claims at most as many as it has free slots; each job
runs in a task that heartbeats its lease and writes its progress, and a lost lease cancels the work. A result is
stored through workers/outcomes.py; an AnalysisError fails the recording at once; anything else is retried with
backoff. Executors: ``RayExecutor`` (the default) or ``InlineExecutor``. Where tracing is on, each job is a span in
the trace of the request that queued it, and its work carries the trace to the analysis (callscope/tracing.py). In
full: docs/operations.md.
"""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import structlog

from callscope import tracing
from callscope.analysis.result import AnalysisResult
from callscope.analysis.runtime.pipeline import MODELS, AnalysisError, Pipeline, Progress, Transcribed, load_model
from callscope.analysis.runtime.work import NotPlaced, Work, WorkerLost, analyze
from callscope.analysis.stages.speakers import KnownVoice
from callscope.analysis.stored import completion
from callscope.catalog import analyses as analysis_rows
from callscope.catalog import jobs, voiceprints
from callscope.catalog import recordings as recording_rows
from callscope.catalog.jobs import Claimed, RetryPolicy
from callscope.catalog.tables import Recording
from callscope.errors import ServiceUnavailable
from callscope.metrics import (
    JOBS_RETRIED,
    JOBS_STARTED,
    LEASE_LOSSES,
    MODEL_LOAD_FAILURES,
    STAGE_AUDIO,
    STAGE_SECONDS,
    model_load,
)
from callscope.resources import Project, ProjectSpec
from callscope.services import draft_transcripts, scope
from callscope.services.context import Context
from callscope.workers import outcomes, scorecards
from callscope.workers.periodic import every

log = structlog.get_logger()

PROGRESS_SECONDS = 1.0
LOST_GRACE_SECONDS = 10.0

for _model in MODELS:  # at 0 from the start: a model's first failure to load is an increase the alert sees
    MODEL_LOAD_FAILURES.labels(_model)


class Executor(Protocol):
    lost: asyncio.Event  # set when the executor can run nothing more (its Ray cluster is gone): start a new one

    async def start(self) -> None: ...

    async def analyze(self, work: Work, progress: Progress, transcribed: Transcribed | None = None
                      ) -> AnalysisResult: ...

    async def stop(self) -> None: ...


class InlineExecutor:
    """The pipeline in this process's threads, as many as the dispatcher has slots; models loaded once."""

    def __init__(self, settings, pipeline: Pipeline | None = None) -> None:
        self.settings = settings
        self._pipeline = pipeline
        self._threads = ThreadPoolExecutor(settings.dispatcher_slots, thread_name_prefix="analysis")
        self.lost = asyncio.Event()  # threads of this process are never lost

    async def start(self) -> None:
        if self._pipeline is None:
            models = {}
            for name in MODELS:
                with model_load(name) as load:
                    models[name] = await asyncio.to_thread(load_model, name, self.settings)
                    load.timed = models[name] is not None
            self._pipeline = Pipeline(self.settings, **models)

    async def analyze(self, work: Work, progress: Progress, transcribed: Transcribed | None = None
                      ) -> AnalysisResult:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._threads, analyze, self._pipeline, self.settings, work, progress,
                                          transcribed)

    async def stop(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)


def build_executor(settings) -> Executor:
    if settings.analysis_executor == "inline":
        return InlineExecutor(settings)
    from callscope.analysis.runtime.actors import RayExecutor  # imports Ray, which the inline executor never needs

    return RayExecutor(settings)


async def run_dispatcher(ctx: Context, restart_delay: float = 10.0) -> None:
    """Start the analysis executor (Ray, or inline) and dispatch jobs until cancelled; the executor stops with it.

    Started as a task, so the API answers while Ray starts; an executor that fails to start is tried again, and
    so is one that is lost (the Ray head went away: the dispatcher joins the cluster again when it is back).
    """
    while True:
        executor = build_executor(ctx.settings)
        try:
            await executor.start()
        except asyncio.CancelledError:
            await executor.stop()
            raise
        except Exception:
            log.exception("analysis_executor_start_failed", executor=ctx.settings.analysis_executor)
            await executor.stop()
            await asyncio.sleep(restart_delay)
            continue
        try:
            await Dispatcher(ctx, executor).run()
        finally:
            await executor.stop()
        log.warning("analysis_executor_lost", executor=ctx.settings.analysis_executor, restart_in_s=restart_delay)
        await asyncio.sleep(restart_delay)


def owner_id() -> str:
    """Unique per dispatcher: host, process, and a random part (a restarted process is a new owner)."""
    return f"{socket.gethostname()[:60]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def observe_stages(result: AnalysisResult) -> None:
    """Each stage that ran: its seconds, and the audio it went through (the real-time factor is their ratio). The
    stages ran inline or on a Ray worker: their times come back with the result, and are observed here."""
    for stage in result.stages:
        if stage.ran and stage.seconds is not None:
            STAGE_SECONDS.labels(stage.name).observe(stage.seconds)
            STAGE_AUDIO.labels(stage.name).inc(result.duration_ms / 1000)


def _describe(exc: BaseException) -> str:
    """One line for `status_reason` and the log: a Ray task's error by its cause (its text is a remote traceback)."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException) and cause is not exc:
        exc = cause
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:1000]


class LeaseLost(Exception):
    pass


class Dispatcher:
    def __init__(self, ctx: Context, executor: Executor, owner: str | None = None) -> None:
        self.ctx = ctx
        self.settings = ctx.settings
        self.executor = executor
        self.owner = owner or owner_id()
        self.policy = RetryPolicy(self.settings.job_max_attempts, self.settings.job_retry_base_seconds,
                                  self.settings.job_retry_max_seconds)
        self.running: dict[int, asyncio.Task] = {}

    async def run(self) -> None:
        """Tick until cancelled (a failing tick is logged and the loop goes on) or until the executor is lost.

        Lost, the jobs in hand get LOST_GRACE_SECONDS to fail on their own (their analyses cannot finish; they go
        back to the queue with their attempt given back); the rest are cancelled and their leases expire."""
        log.info("dispatcher_started", owner=self.owner, slots=self.settings.dispatcher_slots,
                 executor=type(self.executor).__name__)
        ticking = asyncio.create_task(every(self.settings.dispatcher_poll_seconds, self.tick, "dispatcher"))
        lost = asyncio.create_task(self.executor.lost.wait())
        try:
            await asyncio.wait({ticking, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (ticking, lost):
                task.cancel()
            await asyncio.gather(ticking, lost, return_exceptions=True)
            if self.running and self.executor.lost.is_set():
                await asyncio.wait(list(self.running.values()), timeout=LOST_GRACE_SECONDS)
            for task in self.running.values():
                task.cancel()
            await asyncio.gather(*self.running.values(), return_exceptions=True)

    async def tick(self) -> list[Claimed]:
        """Fail exhausted jobs, then claim and start as many jobs as there are free slots."""
        catalog, now = self.ctx.catalog, self.ctx.clock()
        for dead in await catalog.read(jobs.exhausted, now, self.policy.max_attempts):
            await outcomes.fail(self.ctx, dead, f"analysis did not finish after {dead.attempts} attempts "
                                                "(the analysis worker stopped responding)", cause="unresponsive")
        free = self.settings.dispatcher_slots - len(self.running)
        claimed = await catalog.write(jobs.claim, free, self.owner, self.settings.job_lease_seconds, now,
                                    self.policy.max_attempts)
        for job in claimed:
            JOBS_STARTED.labels(job.kind).inc()
            task = asyncio.create_task(tracing.traced(
                self.process(job), "job.run", "consumer", parent=job.trace_parent, attributes={
                    "callscope.job.id": job.id, "callscope.job.kind": job.kind, "callscope.job.attempt": job.attempts,
                    "callscope.recording.id": job.recording_id, "callscope.dispatcher": self.owner}),
                name=f"job-{job.id}")
            self.running[job.id] = task
            task.add_done_callback(lambda _t, job_id=job.id: self.running.pop(job_id, None))
        return claimed

    async def process(self, job: Claimed) -> None:
        log.info("job_started", job_id=job.id, recording_id=job.recording_id, kind=job.kind, attempt=job.attempts)
        try:
            recording = await self.ctx.catalog.read(recording_rows.by_id, job.recording_id)
            if recording is None:
                return  # deleted meanwhile; its job went with it
            voices = [KnownVoice(operator_id=v.operator_id, embedding=voiceprints.embedding(v), model=v.model)
                      for v in await self.ctx.catalog.read(voiceprints.of_account, recording.account)]
            work = await self._work(job, recording, tuple(voices))
            result = await self._with_lease(job, recording, work)
        except LeaseLost:
            LEASE_LOSSES.inc()
            log.warning("job_lease_lost", job_id=job.id, owner=self.owner)
            return
        except AnalysisError as exc:  # the input itself is bad: no retry
            await outcomes.fail(self.ctx, job, str(exc), cause="input")
            return
        except asyncio.CancelledError:
            raise  # shutting down: the lease expires and another dispatcher takes the job
        except Exception as exc:  # noqa: BLE001 - any failure of the analysis: retried or failed
            if self.executor.lost.is_set() or isinstance(exc, WorkerLost):
                # not the recording's fault (its cluster or a model's node went away): queued again, attempt given back
                JOBS_RETRIED.labels("unplaced" if isinstance(exc, NotPlaced) else "worker_lost").inc()
                await self.ctx.catalog.write(jobs.retry_later, job, _describe(exc), self.policy.delay(1),
                                             self.ctx.clock(), counted=False)
                return
            await self._retry_or_fail(job, exc)
            return
        observe_stages(result)
        try:
            with tracing.span("results.store", attributes={"callscope.recording.id": job.recording_id}):
                await outcomes.complete(self.ctx, job, completion(result, recording), work.redacted_audio_key)
        except Exception:  # e.g. the catalog went away: the lease expires and the job is taken again
            log.exception("job_completion_failed", job_id=job.id, recording_id=job.recording_id)

    async def _work(self, job: Claimed, recording: Recording, voices: tuple[KnownVoice, ...]) -> Work:
        """The job's work. Where the project redacts audio, the audio is not served from now until its redacted
        copy replaces it, and the work stores that copy under a key of its own; the analysis reads the kept
        unredacted audio where there is one, else the redacted copy, with the redaction counts of the analysis that
        made it (what the copy no longer says is still counted as redacted)."""
        project = self._project(recording)
        redacted_key = None
        if project is not None and project.redacts_audio:
            await self.ctx.catalog.write(recording_rows.mark_audio_unredacted, recording.id, self.ctx.clock())
            redacted_key = outcomes.redacted_audio_key(recording.account, recording.public_id, job.id)
        before = None  # the unredacted audio kept: this analysis finds every span again
        if not recording.original_blob_key:
            before = await self.ctx.catalog.read(analysis_rows.redacted_audio_counts, recording.id)
        return Work(job.id, recording.original_blob_key or recording.blob_key, project, voices,
                    (recording.called_at or recording.created_at).date(), recording.agent_channel, redacted_key,
                    before.counts if before else None, before.tones if before else 0, trace=tracing.carrier(),
                    scorecards=tuple(scorecards.forms_for(self.ctx, recording)))

    def _project(self, recording: Recording) -> Any:
        """The project's rules with the recording's language; with the project gone, its language alone (the
        pipeline refuses a language its Whisper model cannot transcribe rather than assume English)."""
        project = scope.by_id(self.ctx, Project, recording.account, recording.project_id)
        if project is None:
            return ProjectSpec(name="(no project)", language=recording.language) if recording.language else None
        return project.spec.model_copy(update={"language": recording.language})

    async def _with_lease(self, job: Claimed, recording: Recording, work: Work) -> AnalysisResult:
        """Run the work while heartbeating the lease and writing progress (and a first analysis's transcript, once
        final, for the recording page: callscope/services/draft_transcripts.py); LeaseLost when it goes."""
        latest: dict[str, tuple[str, float]] = {}
        drafts: list[dict] = []  # a first analysis's transcript, shown while the later stages run
        work_task = asyncio.ensure_future(self.executor.analyze(
            work, lambda s, f: latest.__setitem__("p", (s, f)), drafts.append if job.kind == jobs.ANALYZE else None))
        catalog = self.ctx.catalog
        interval = self.settings.job_lease_seconds / 3
        loop = asyncio.get_running_loop()
        next_beat, written = loop.time() + interval, None
        try:
            while True:
                done, _ = await asyncio.wait({work_task}, timeout=PROGRESS_SECONDS)
                if done:
                    return work_task.result()
                now = self.ctx.clock()
                try:
                    if loop.time() >= next_beat:
                        if not await catalog.write(jobs.heartbeat, job.id, self.owner,
                                                 self.settings.job_lease_seconds, now):
                            raise LeaseLost()
                        next_beat = loop.time() + interval
                    if (current := latest.get("p")) is not None and current != written:
                        if not await catalog.write(jobs.report_progress, job, current[0],
                                                 round(current[1] * 100), now):
                            raise LeaseLost()
                        written = current
                    if drafts:
                        await draft_transcripts.store(self.ctx, recording, drafts.pop())
                except ServiceUnavailable:  # the catalog is away: work on; beat and report again next round
                    pass  # (an outage longer than the lease loses it, as the next beat finds)
        finally:
            if not work_task.done():
                work_task.cancel()
                await asyncio.gather(work_task, return_exceptions=True)

    async def _retry_or_fail(self, job: Claimed, exc: BaseException) -> None:
        reason = _describe(exc)
        if job.attempts >= self.policy.max_attempts:
            await outcomes.fail(self.ctx, job, f"analysis failed after {job.attempts} attempts: {reason}",
                                cause="error")
            return
        delay = self.policy.delay(job.attempts)
        JOBS_RETRIED.labels("error").inc()
        log.warning("job_retry", job_id=job.id, attempt=job.attempts, delay_s=round(delay, 1), error=reason)
        await self.ctx.catalog.write(jobs.retry_later, job, reason, delay, self.ctx.clock())
