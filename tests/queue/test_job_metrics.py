"""The work's metrics, on SQLite and PostgreSQL: a job analysed through the dispatcher (the inline executor on a
scripted transcriber: the metrics are under test, not the models) moves the job, stage and usage series; a failed
job counts under its reason class; /metrics serves them with the queue's figures read from the catalog; their
label sets stay bounded."""

from __future__ import annotations

import asyncio
import socket
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from callscope import metrics
from callscope.analysis.result import ModelUsed
from callscope.analysis.runtime.pipeline import Pipeline
from callscope.api.app import create_app
from callscope.catalog import jobs
from callscope.config import Settings
from callscope.errors import ServiceUnavailable
from callscope.metrics_catalog import TOP_PROJECTS, exposition, serve
from callscope.runtime import Runtime
from callscope.workers import dispatch
from callscope.workers.dispatch import Dispatcher, InlineExecutor
from tests.analysis.transcripts import call
from tests.audio_samples import make_audio
from tests.queue.rows import add_recording, recording

AUDIO_SECONDS = 4.0


class ScriptedTranscriber:
    multilingual, device = True, "cpu"
    info = ModelUsed(stage="asr", name="scripted", version="0")

    def transcribe(self, audio, channel, language, hints, regions):
        turns = call(("speaker-1", "Thank you for calling, how can I help"), ("speaker-2", "I moved house"))
        return [s for s in turns if s.channel == channel]


class BrokenExecutor(InlineExecutor):
    async def analyze(self, work, progress, transcribed=None):
        raise RuntimeError("the analysis broke")


@pytest.fixture
async def runtime(tmp_path: Path, catalog_url: str):
    settings = Settings(data_dir=tmp_path / "data", database_url=catalog_url, log_level="WARNING", llm_enabled=False,
                        analysis_executor="inline", job_lease_seconds=30, job_retry_base_seconds=0,
                        dispatcher_poll_seconds=0.05)
    runtime = Runtime(settings)
    await runtime.start(background=False)
    yield runtime
    await runtime.stop()


@pytest.fixture
def executor(runtime) -> InlineExecutor:
    pipeline = Pipeline(runtime.settings, transcriber=ScriptedTranscriber(), speakers=None, embedder=None, llm=None)
    return InlineExecutor(runtime.settings, pipeline)


async def put_recording(ctx, audio: bytes, account: str = "acme") -> int:
    rid = add_recording(ctx.catalog, now=ctx.clock() - timedelta(seconds=1), account=account)
    row = recording(ctx.catalog, rid)
    async with ctx.blobs.writer(row.blob_key) as writer:
        await writer.write(audio)
        await writer.commit()
    return rid


async def drain(dispatcher: Dispatcher, rid: int) -> None:
    async def until_done():
        while recording(dispatcher.ctx.catalog, rid).status not in ("completed", "failed") or dispatcher.running:
            await dispatcher.tick()
            await asyncio.sleep(0.05)
    await asyncio.wait_for(until_done(), 60)


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def wav(tmp_path: Path) -> bytes:
    return make_audio(tmp_path / "call.wav", "wav", seconds=AUDIO_SECONDS, channels=2).read_bytes()


async def test_an_analysed_job_moves_the_job_stage_and_usage_series(runtime, executor, tmp_path) -> None:
    ctx = runtime.ctx
    rid = await put_recording(ctx, wav(tmp_path))
    watched = {
        "started": ("callscope_jobs_started_total", {"kind": "analyze"}),
        "completed": ("callscope_jobs_completed_total", {"kind": "analyze"}),
        "attempts": ("callscope_job_attempts_count", {}),
        "waited": ("callscope_recording_upload_to_completed_seconds_count", {}),
        "asr_runs": ("callscope_stage_duration_seconds_count", {"stage": "asr"}),
        "asr_audio": ("callscope_stage_audio_seconds_total", {"stage": "asr"}),
        "skipped_goals": ("callscope_stage_duration_seconds_count", {"stage": "goals"}),
        "recordings": ("callscope_recordings_analyzed_total", {"account": "acme"}),
        "audio": ("callscope_audio_analyzed_seconds_total", {"account": "acme"}),
    }
    before = {key: value(name, **labels) for key, (name, labels) in watched.items()}

    await drain(Dispatcher(ctx, executor), rid)

    assert recording(ctx.catalog, rid).status == "completed"
    moved = {key: value(name, **labels) - before[key] for key, (name, labels) in watched.items()}
    assert moved == {"started": 1, "completed": 1, "attempts": 1, "waited": 1, "asr_runs": 1,
                     "asr_audio": AUDIO_SECONDS, "skipped_goals": 0,  # a stage that did not run is not timed
                     "recordings": 1, "audio": recording(ctx.catalog, rid).duration_ms / 1000}
    assert value("callscope_recording_upload_to_completed_seconds_sum") >= 1  # uploaded a second before


async def test_failed_jobs_count_by_their_reason_class(runtime, executor, tmp_path) -> None:
    ctx = runtime.ctx

    def failed(reason: str) -> float:
        return value("callscope_jobs_failed_total", kind="analyze", reason=reason)

    before = {reason: failed(reason) for reason in metrics.FAILURE_REASONS}
    retried = value("callscope_jobs_retried_total", reason="error")

    corrupt = await put_recording(ctx, b"RIFF....WAVEfmt not audio at all" * 10)
    await drain(Dispatcher(ctx, executor), corrupt)
    broken = await put_recording(ctx, wav(tmp_path))
    ctx.settings.job_max_attempts = 2
    await drain(Dispatcher(ctx, BrokenExecutor(ctx.settings, executor._pipeline)), broken)
    abandoned = await put_recording(ctx, wav(tmp_path))  # its dispatcher died on its last attempt
    now = ctx.clock()
    ctx.catalog.change(jobs.claim, 1, "gone", 30, now, 1)
    ctx.catalog.change(jobs.claim, 1, "gone-too", 30, now + timedelta(seconds=31), 2)
    await Dispatcher(replace(ctx, clock=lambda: now + timedelta(seconds=62)), executor).tick()

    assert [recording(ctx.catalog, rid).status for rid in (corrupt, broken, abandoned)] == ["failed"] * 3
    assert {reason: failed(reason) - before[reason] for reason in metrics.FAILURE_REASONS} == {
        "input": 1, "error": 1, "unresponsive": 1}
    assert value("callscope_jobs_retried_total", reason="error") - retried == 1  # the broken one's first attempt


def families(text: str) -> dict:
    return {family.name: family for family in text_string_to_metric_families(text)}


async def test_metrics_serves_the_work_and_the_queue_read_from_the_catalog(runtime, executor, tmp_path) -> None:
    ctx = runtime.ctx
    done = await put_recording(ctx, wav(tmp_path))
    await drain(Dispatcher(ctx, executor), done)
    for project in range(TOP_PROJECTS + 5):  # more projects with a queue than get a series
        add_recording(ctx.catalog, project_id=project, now=ctx.clock() - timedelta(minutes=2))
    add_recording(ctx.catalog, project_id=0, now=ctx.clock() - timedelta(minutes=2))
    app = create_app(ctx, runtime.usage, runtime.limiter)

    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://callscope.test") as http:
        response = await http.get("/metrics")

    assert response.status_code == 200
    found = families(response.text)
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in found.values() for s in f.samples}
    assert samples[("callscope_catalog_up", ())] == 1
    queued = {labels: n for (name, labels), n in samples.items() if name == "callscope_jobs_queued"}
    assert len(queued) == TOP_PROJECTS + 1  # the deepest, and the rest together
    assert queued[(("account", "acme"), ("project", "0"))] == 2  # the deepest queue has its own series
    # 26 queued: project 0's two and 19 other projects' one in their own series, 5 together
    assert queued[(("account", metrics.OTHER), ("project", metrics.OTHER))] == 5
    assert samples[("callscope_jobs_oldest_queued_age_seconds", ())] >= 120
    # a call of a second waiting two minutes: over the indicative minute for its length
    assert samples[("callscope_recordings_overdue", (("length", "under_5m"),))] == TOP_PROJECTS + 6
    assert samples[("callscope_recordings_overdue", (("length", "over_60m"),))] == 0
    assert samples[("callscope_stage_duration_seconds_count", (("stage", "asr"),))] >= 1
    assert samples[("callscope_jobs_completed_total", (("kind", "analyze"),))] >= 1
    assert {"callscope_webhook_events_undelivered", "callscope_webhook_oldest_undelivered_age_seconds"} <= set(found)


async def test_the_catalog_away_is_a_zero_not_a_failed_scrape(runtime, monkeypatch) -> None:
    def away(*args, **kwargs):
        raise ServiceUnavailable("away", 5)

    monkeypatch.setattr(runtime.ctx.catalog, "query", away)
    found = families(generate_latest(exposition(runtime.ctx.catalog, runtime.ctx.clock)).decode())
    assert [s.value for s in found["callscope_catalog_up"].samples] == [0]
    assert "callscope_jobs_queued" not in found and "callscope_http_requests" in found  # the process's own still


def test_the_account_label_is_bounded(monkeypatch) -> None:
    monkeypatch.setattr(metrics, "_accounts", set())
    labels = {metrics.account_label(f"account-{i}") for i in range(metrics.MAX_ACCOUNTS + 50)}
    assert len(labels) == metrics.MAX_ACCOUNTS + 1 and metrics.OTHER in labels
    assert metrics.account_label("account-0") == "account-0"  # one seen keeps its own series


async def test_the_controller_serves_them_on_a_port_of_its_own(runtime) -> None:
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    stop = serve(runtime.ctx.catalog, runtime.ctx.clock, port)
    try:
        response = await asyncio.to_thread(httpx.get, f"http://127.0.0.1:{port}/metrics", timeout=10)
    finally:
        stop()
    found = families(response.text)
    assert [s.value for s in found["callscope_catalog_up"].samples] == [1]
    assert "callscope_jobs_started" in found  # the process's own (the dispatcher's, in the controller)


async def test_model_loads_are_timed_and_their_failures_counted(runtime, monkeypatch) -> None:
    def load(name, settings):
        if name == "llm":
            raise MemoryError("no room for the model")
        return None if name == "embedder" else object()  # the embedder not installed: nothing loaded, not timed

    monkeypatch.setattr(dispatch, "load_model", load)
    loads = {name: value("callscope_model_load_duration_seconds_count", model=name)
             for name in ("speakers", "embedder")}
    failures = value("callscope_model_load_failures_total", model="llm")

    with pytest.raises(MemoryError):
        await InlineExecutor(runtime.settings).start()

    assert value("callscope_model_load_duration_seconds_count", model="speakers") == loads["speakers"] + 1
    assert value("callscope_model_load_duration_seconds_count", model="embedder") == loads["embedder"]
    assert value("callscope_model_load_failures_total", model="llm") == failures + 1
