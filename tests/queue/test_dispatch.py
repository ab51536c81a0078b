"""The dispatcher with the inline executor on real audio (espeak-ng speech, the embedded Whisper models), on SQLite and
PostgreSQL: completion stores the analysis, bad audio fails at once with a readable reason, a dead worker is
retried, a lost lease writes nothing, and a re-analysis replaces the results in one step."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from callscope.analysis.runtime.pipeline import Pipeline
from callscope.analysis.runtime.work import WorkerLost
from callscope.analysis.stages.asr import transcriber_from_settings
from callscope.analysis.stored import completion
from callscope.catalog import jobs
from callscope.config import Settings
from callscope.figures import figures
from callscope.runtime import Runtime
from callscope.services import analyses, draft_transcripts
from callscope.workers import outcomes
from callscope.workers.dispatch import Dispatcher, InlineExecutor
from tests.analysis import speech
from tests.queue.rows import add_recording, job_of, recording

pytestmark = pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)

SENTENCE = "Please hold while I look that up for you."
# The queue is under test, not Whisper (tests/analysis measure its accuracy): the transcript is the sentence's words,
# give or take the few one CPU hears differently from another ("Please fold while I look at her for you": 0.33).
SAME_WORDS = 0.5


@pytest.fixture(scope="module")
def wav_bytes(tmp_path_factory) -> bytes:
    call = speech.make_call([0.3, SENTENCE, 0.3])
    return speech.write(tmp_path_factory.mktemp("audio") / "call.wav", [call.samples]).read_bytes()


@pytest.fixture
async def ctx(tmp_path: Path, catalog_url: str):
    settings = Settings(data_dir=tmp_path / "data", database_url=catalog_url, log_level="WARNING", llm_enabled=False,
                        analysis_executor="inline", job_lease_seconds=30, job_retry_base_seconds=0,
                        dispatcher_poll_seconds=0.05)
    runtime = Runtime(settings)
    await runtime.start(background=False)
    yield runtime.ctx
    await runtime.stop()


async def put_recording(ctx, audio: bytes, **kwargs) -> int:
    rid = add_recording(ctx.catalog, now=ctx.clock() - timedelta(seconds=1), **kwargs)
    row = recording(ctx.catalog, rid)
    async with ctx.blobs.writer(row.blob_key) as writer:
        await writer.write(audio)
        await writer.commit()
    return rid


class FlakyExecutor(InlineExecutor):
    """The real inline executor whose first run dies, as a killed Ray worker would."""

    calls = 0

    async def analyze(self, work, progress, transcribed=None):
        self.calls += 1
        if self.calls == 1:
            raise ConnectionError("worker died")
        return await super().analyze(work, progress, transcribed)


async def drain(dispatcher: Dispatcher, rid: int, statuses=("completed", "failed"), timeout: float = 60) -> None:
    async def until_done():
        while recording(dispatcher.ctx.catalog, rid).status not in statuses or dispatcher.running:
            await dispatcher.tick()
            await asyncio.sleep(0.05)
    await asyncio.wait_for(until_done(), timeout)


async def test_a_recording_is_analysed_and_stored(ctx, wav_bytes, embedded_models) -> None:
    rid = await put_recording(ctx, wav_bytes)
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, Pipeline(ctx.settings, **embedded_models)))

    await drain(dispatcher, rid)

    row = recording(ctx.catalog, rid)
    assert (row.status, row.stage, row.progress, row.status_reason) == ("completed", "done", 100, None)
    assert row.dialogues_count >= 1
    stored = await analyses.load_analysis(ctx, row)
    assert stored.row.version == 1 and stored.row.transcript_key.endswith("transcript-v1.json")
    assert speech.wer(SENTENCE, " ".join(s["text"] for s in stored.transcript["segments"])) < SAME_WORDS
    assert "segments" not in stored.results and stored.results["duration_ms"] > 0
    # the figures the trends add up, stored with the analysis
    found = figures(stored.results, stored.transcript["segments"])
    assert (row.pause_compliance, row.agent_talk_ms, row.customer_talk_ms, row.emotion) == (
        found.pause_compliance, found.agent_talk_ms, found.customer_talk_ms, found.emotion)
    assert (job_of(ctx.catalog, rid).state, job_of(ctx.catalog, rid).attempts) == ("done", 1)


async def test_a_corrupt_upload_fails_at_once_with_a_readable_reason(ctx, embedded_models) -> None:
    rid = await put_recording(ctx, b"RIFF....WAVEfmt garbage, not audio at all" * 10)
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, Pipeline(ctx.settings, **embedded_models)))

    await drain(dispatcher, rid)

    row = recording(ctx.catalog, rid)
    assert row.status == "failed" and "cannot decode audio" in row.status_reason
    job = job_of(ctx.catalog, rid)
    assert (job.state, job.attempts) == ("failed", 1)  # bad input is not retried
    assert await analyses.load_analysis(ctx, row) is None


async def test_a_language_the_model_cannot_transcribe_fails_with_the_reason(ctx, tmp_path) -> None:
    transcriber = transcriber_from_settings(Settings(whisper_model="tiny.en"))  # English only
    czech = speech.speak("Dobrý den, chtěl bych změnit adresu na svém účtu.", voice="cs")
    audio = speech.write(tmp_path / "cs.wav", [czech]).read_bytes()
    rid = await put_recording(ctx, audio, language="cs-CZ")
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, Pipeline(ctx.settings, transcriber=transcriber)))

    await drain(dispatcher, rid)

    row = recording(ctx.catalog, rid)
    assert row.status == "failed"
    assert "(tiny.en) transcribes English only" in row.status_reason and "language is cs" in row.status_reason
    assert (job_of(ctx.catalog, rid).state, job_of(ctx.catalog, rid).attempts) == ("failed", 1)  # not retried
    assert await analyses.load_analysis(ctx, row) is None


async def test_a_recording_in_auto_language_keeps_the_language_the_model_found(ctx, embedded_models, tmp_path) -> None:
    spanish = speech.speak("Buenos días, quiero cambiar la dirección de mi cuenta, por favor.", voice="es")
    audio = speech.write(tmp_path / "es.wav", [spanish]).read_bytes()
    rid = await put_recording(ctx, audio, language="auto")
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, Pipeline(ctx.settings, **embedded_models)))

    await drain(dispatcher, rid, timeout=240)  # language identification and models loading

    row = recording(ctx.catalog, rid)
    assert (row.status, row.language) == ("completed", "es")
    transcript = (await analyses.load_analysis(ctx, row)).transcript
    assert "cuenta" in " ".join(s["text"] for s in transcript["segments"]).lower()


async def test_a_dead_worker_is_retried(ctx, wav_bytes, embedded_models) -> None:
    rid = await put_recording(ctx, wav_bytes)
    dispatcher = Dispatcher(ctx, FlakyExecutor(ctx.settings, Pipeline(ctx.settings, **embedded_models)))

    await drain(dispatcher, rid)

    assert recording(ctx.catalog, rid).status == "completed"
    job = job_of(ctx.catalog, rid)
    assert (job.state, job.attempts, job.last_error) == ("done", 2, None)


async def test_the_last_failed_attempt_fails_the_recording(ctx, wav_bytes, embedded_models) -> None:
    rid = await put_recording(ctx, wav_bytes)
    ctx.settings.job_max_attempts = 1
    dispatcher = Dispatcher(ctx, FlakyExecutor(ctx.settings, Pipeline(ctx.settings, **embedded_models)))

    await drain(dispatcher, rid)

    row = recording(ctx.catalog, rid)
    assert row.status == "failed"
    assert row.status_reason == "analysis failed after 1 attempts: ConnectionError: worker died"


class RestartingModelExecutor(InlineExecutor):
    """The real inline executor whose first two runs meet a model actor that Ray is restarting on another node."""

    calls = 0

    async def analyze(self, work, progress, transcribed=None):
        self.calls += 1
        if self.calls <= 2:
            raise WorkerLost("The actor is temporarily unavailable")
        return await super().analyze(work, progress, transcribed)


async def test_a_model_restarting_after_a_lost_node_uses_up_no_attempt(ctx, wav_bytes, embedded_models) -> None:
    rid = await put_recording(ctx, wav_bytes)
    ctx.settings.job_max_attempts = 1  # counted, the first of these would fail the recording
    ctx.settings.job_retry_base_seconds = 0
    dispatcher = Dispatcher(ctx, RestartingModelExecutor(ctx.settings, Pipeline(ctx.settings, **embedded_models)))

    await drain(dispatcher, rid)

    assert recording(ctx.catalog, rid).status == "completed"
    assert job_of(ctx.catalog, rid).attempts == 1


async def test_a_lost_lease_cannot_complete_and_leaves_no_blob(ctx, wav_bytes, embedded_models) -> None:
    rid = await put_recording(ctx, wav_bytes)
    pipeline = Pipeline(ctx.settings, **embedded_models)
    now = ctx.clock()
    [first] = ctx.catalog.change(jobs.claim, 1, "a", 30, now, 3)
    [second] = ctx.catalog.change(jobs.claim, 1, "b", 30, now + timedelta(seconds=31), 3)  # a's lease expired
    row = recording(ctx.catalog, rid)
    from callscope.analysis.runtime.work import Work, analyze

    result = await asyncio.to_thread(analyze, pipeline, ctx.settings, Work(first.id, row.blob_key, None))
    done = replace(completion(result, row), redactions={"email": 2})
    redacted = outcomes.REDACTIONS.labels(entity="email")._value.get()

    assert not await outcomes.complete(ctx, first, done)
    assert recording(ctx.catalog, rid).status == "processing"
    assert await ctx.blobs.list_keys(row.blob_key.rsplit("/", 1)[0]) == [row.blob_key]  # a's transcript went
    assert await outcomes.complete(ctx, second, done)
    assert recording(ctx.catalog, rid).status == "completed"
    assert outcomes.REDACTIONS.labels(entity="email")._value.get() == redacted + 2  # counted once, by the owner


async def test_a_dispatcher_stopped_mid_commit_never_deletes_a_transcript_the_catalog_names(
        ctx, wav_bytes, embedded_models, monkeypatch) -> None:
    """Cancelled while its transaction runs in the catalog's thread, the completion may still commit: its transcript
    stays (a server stopped under load once left a completed recording without its results)."""
    rid = await put_recording(ctx, wav_bytes)
    pipeline = Pipeline(ctx.settings, **embedded_models)
    [claimed] = ctx.catalog.change(jobs.claim, 1, "a", 30, ctx.clock(), 3)
    row = recording(ctx.catalog, rid)
    from callscope.analysis.runtime.work import Work, analyze

    result = await asyncio.to_thread(analyze, pipeline, ctx.settings, Work(claimed.id, row.blob_key, None))
    in_thread, release = asyncio.Event(), threading.Event()
    loop = asyncio.get_running_loop()
    commit = outcomes._commit_completion

    def slow_commit(*args, **kwargs):
        loop.call_soon_threadsafe(in_thread.set)
        release.wait(10)
        return commit(*args, **kwargs)

    monkeypatch.setattr(outcomes, "_commit_completion", slow_commit)
    task = asyncio.ensure_future(outcomes.complete(ctx, claimed, completion(result, row)))
    await asyncio.wait_for(in_thread.wait(), 30)
    task.cancel()
    await asyncio.sleep(0.1)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    deadline = loop.time() + 10
    while recording(ctx.catalog, rid).status != "completed" and loop.time() < deadline:
        await asyncio.sleep(0.05)
    stored = await analyses.load_analysis(ctx, recording(ctx.catalog, rid))
    assert stored.transcript and stored.transcript["segments"]  # named by the catalog and still in the store


async def test_a_first_analysis_shows_its_transcript_while_the_later_stages_run(
        ctx, wav_bytes, embedded_models, monkeypatch) -> None:
    """The transcript, once final, is kept for the recording page while emotions, goals and the summary run; the
    stored analysis replaces it."""
    rid = await put_recording(ctx, wav_bytes)
    row = recording(ctx.catalog, rid)
    reached, release = threading.Event(), threading.Event()
    emotions = Pipeline._emotions

    def held(self, *args, **kwargs):  # the stage after the transcript waits until the draft was seen
        reached.set()
        release.wait(60)
        return emotions(self, *args, **kwargs)

    monkeypatch.setattr(Pipeline, "_emotions", held)
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, Pipeline(ctx.settings, **embedded_models)))
    try:
        await dispatcher.tick()
        assert await asyncio.to_thread(reached.wait, 120)
        draft = None
        for _ in range(100):  # the lease loop writes it within a progress interval
            if (draft := await draft_transcripts.read(ctx, row)) is not None:
                break
            await asyncio.sleep(0.1)
        assert draft is not None and recording(ctx.catalog, rid).status == "processing"
        heard = " ".join(s["text"] for s in draft["segments"]).lower()
        assert "look" in heard and draft["speakers"] and all(s["role"] for s in draft["segments"])
    finally:
        release.set()
    await drain(dispatcher, rid)
    assert recording(ctx.catalog, rid).status == "completed"
    assert await draft_transcripts.read(ctx, row) is None  # the stored transcript took its place


async def test_reanalysis_replaces_the_results_atomically(ctx, wav_bytes, embedded_models) -> None:
    rid = await put_recording(ctx, wav_bytes)
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, Pipeline(ctx.settings, **embedded_models)))
    await drain(dispatcher, rid)
    first = (await analyses.load_analysis(ctx, recording(ctx.catalog, rid))).row

    assert await analyses.reanalyze(ctx, [rid]) == [rid]
    [claimed] = await dispatcher.tick()
    assert claimed.kind == "reanalyze"
    during = recording(ctx.catalog, rid)
    assert (during.status, during.stage) == ("completed", "reanalyzing")
    kept = await analyses.load_analysis(ctx, during)  # the old results stay readable meanwhile
    assert kept.row.version == 1 and kept.transcript["segments"]
    await drain(dispatcher, rid)

    row = recording(ctx.catalog, rid)
    stored = await analyses.load_analysis(ctx, row)
    second = stored.row
    assert (row.status, row.stage, second.version) == ("completed", "done", 2)
    assert stored.transcript["segments"]
    keys = await ctx.blobs.list_keys(row.blob_key.rsplit("/", 1)[0])
    assert second.transcript_key in keys and first.transcript_key not in keys  # the old transcript is gone
    assert await analyses.reanalyze(ctx, [rid, 999999]) == [rid]  # unknown ids are skipped
