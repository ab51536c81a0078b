"""Audio redaction through the dispatcher (inline executor, embedded Whisper, espeak-ng speech), on SQLite and
PostgreSQL: a project that redacts audio never serves its recordings' audio before the redacted copy replaces it;
then only the copy is served, with the redacted words' audio gone; the unredacted audio is deleted, or kept unserved
where the setting says; a crash on either side of the swap never serves the original."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from callscope.analysis.runtime.pipeline import Pipeline
from callscope.analysis.runtime.work import Work, analyze
from callscope.analysis.stages import dtmf
from callscope.analysis.stages.audio_redaction import fill_samples
from callscope.analysis.stages.decode import decode
from callscope.analysis.stored import completion
from callscope.blobs.signing import sign
from callscope.catalog import jobs
from callscope.catalog import recordings as recording_rows
from callscope.config import Settings
from callscope.errors import NotFound
from callscope.resources import Project, ProjectSpec
from callscope.resources.kinds import Redaction
from callscope.runtime import Runtime
from callscope.services import analyses
from callscope.services.audio_urls import UNREDACTED, audio_url, resolve_signed
from callscope.services.objects import create_with_id
from callscope.workers import outcomes
from callscope.workers.dispatch import Dispatcher, InlineExecutor
from callscope.workers.loops import sweep_orphan_blobs
from tests.analysis import speech
from tests.analysis.test_redaction_dtmf import KEYS, keypad
from tests.queue.rows import add_recording, recording
from tests.queue.test_dispatch import drain

pytestmark = pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)

CARD = "4526018159083012"  # Luhn-valid
SAID = "Thanks. My card number is 4 5 2 6, 0 1 8 1, 5 9 0 8, 3 0 1 2. Please take the payment."


@pytest.fixture(scope="module")
def call_wav(tmp_path_factory) -> bytes:
    call = speech.make_call([0.4, SAID, 0.4])
    return speech.write(tmp_path_factory.mktemp("audio") / "call.wav", [call.samples]).read_bytes()


@pytest.fixture
async def ctx(tmp_path: Path, catalog_url: str):
    settings = Settings(data_dir=tmp_path / "data", database_url=catalog_url, log_level="WARNING", llm_enabled=False,
                        analysis_executor="inline", job_lease_seconds=30, job_retry_base_seconds=0,
                        dispatcher_poll_seconds=0.05, redaction_audio_fill="tone")
    runtime = Runtime(settings)
    await runtime.start(background=False)
    yield runtime.ctx
    await runtime.stop()


async def redacting_project(ctx) -> Project:
    return await create_with_id(ctx, Project, "acme", "Payments", ProjectSpec(
        name="Payments", language="en", redaction=Redaction(entities=["payment_card"])))


async def upload(ctx, project: Project, audio: bytes) -> int:
    """A recording as an upload into a project that redacts audio leaves it: pending, its audio unredacted."""
    rid = add_recording(ctx.catalog, project_id=project.status.id, now=ctx.clock() - timedelta(seconds=1))
    ctx.catalog.change(_mark_pending, rid)
    row = recording(ctx.catalog, rid)
    async with ctx.blobs.writer(row.blob_key) as writer:
        await writer.write(audio)
        await writer.commit()
    return rid


def _mark_pending(session, rid: int) -> None:
    recording_rows.mark_audio_unredacted(session, rid, recording_rows.by_id(session, rid).updated_at)


def decoded(data: bytes) -> tuple[np.ndarray, int]:
    """(the first channel's samples as s16 values, sample rate)."""
    samples, rate = speech.read(data)
    return np.round(samples[0] * 32768).astype(np.int64), rate


async def served(ctx, row) -> tuple[np.ndarray, int]:
    """The audio behind the recording's audio URL, decoded."""
    await audio_url(ctx, row)  # a URL is issued
    stream = await ctx.blobs.open(row.blob_key)
    return decoded(b"".join([chunk async for chunk in stream]))


# the card found by the rules in its words (precise mode has no other rule)
FOUND_BY_WORDS = {"payment_card": {"words": 1, "request": 0, "request_meaning": 0, "digit_run": 0, "value_window": 0,
                                   "spelled": 0, "email_shape": 0, "low_confidence": 0}}


def redacted_ms(transcript: dict) -> list[tuple[int, int]]:
    return [(w["start_ms"], w["end_ms"]) for s in transcript["segments"] for w in s["words"] if w["redacted"]]


def pipeline(ctx, embedded_models) -> Pipeline:
    return Pipeline(ctx.settings, **embedded_models)


async def test_the_audio_is_served_only_as_its_redacted_copy(ctx, call_wav, embedded_models) -> None:
    project = await redacting_project(ctx)
    rid = await upload(ctx, project, call_wav)
    original = recording(ctx.catalog, rid)
    with pytest.raises(NotFound, match=UNREDACTED):
        await audio_url(ctx, original)
    token = sign(ctx.url_secret, original.blob_key, int(ctx.clock().timestamp()) + 60)
    with pytest.raises(NotFound):
        await resolve_signed(ctx, token)

    await drain(Dispatcher(ctx, InlineExecutor(ctx.settings, pipeline(ctx, embedded_models))), rid, timeout=120)

    row = recording(ctx.catalog, rid)
    assert (row.status, row.audio_redaction, row.audio_format) == ("completed", "done", "flac")
    assert row.blob_key.endswith(".flac") and row.original_blob_key is None
    assert await ctx.blobs.size(original.blob_key) is None  # the unredacted audio is deleted
    with pytest.raises(NotFound):
        await resolve_signed(ctx, token)
    stored = await analyses.load_analysis(ctx, row)
    assert stored.results["redaction"] == {"entities": ["payment_card"], "counts": {"payment_card": 1}, "audio": True,
                                           "mode": "precise", "tones": 0, "unheard": [], "found_by": FOUND_BY_WORDS}
    text = " ".join(s["text"] for s in stored.transcript["segments"])
    assert "[PAYMENT_CARD]" in text and "4526" not in text.replace(" ", "")
    spans = redacted_ms(stored.transcript)
    samples, rate = await served(ctx, row)
    original_samples, _ = decoded(call_wav)
    assert rate == speech.RATE and abs(len(samples) - len(original_samples)) < rate // 50
    tone = np.round(fill_samples("tone", 0, len(samples), rate) * 32767).astype(np.int64)
    margin = ctx.settings.redaction_audio_margin_ms
    for start, end in spans:  # inside every redacted word, margin included: the tone and nothing of the speech
        a, b = (start - margin) * rate // 1000, (end + margin) * rate // 1000
        assert np.max(np.abs(samples[a:b] - tone[a:b])) <= 1
    before = spans[0][0] - margin - 300  # the words before the card are the speech as recorded
    kept = original_samples[: before * rate // 1000]
    assert np.corrcoef(samples[: len(kept)], kept)[0, 1] > 0.999


async def test_the_kept_original_is_never_served_and_reanalysis_reads_it(ctx, call_wav, embedded_models) -> None:
    ctx.settings.redaction_keep_original_audio = True
    project = await redacting_project(ctx)
    rid = await upload(ctx, project, call_wav)
    original_key = recording(ctx.catalog, rid).blob_key
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, pipeline(ctx, embedded_models)))
    await drain(dispatcher, rid, timeout=120)
    first = recording(ctx.catalog, rid)
    assert (first.audio_redaction, first.original_blob_key) == ("done", original_key)
    assert await ctx.blobs.size(original_key) > 0  # kept
    with pytest.raises(NotFound):  # but no URL leads to it
        await resolve_signed(ctx, sign(ctx.url_secret, original_key, int(ctx.clock().timestamp()) + 60))

    assert await analyses.reanalyze(ctx, [rid]) == [rid]
    [claimed] = await dispatcher.tick()
    assert (await audio_url(ctx, recording(ctx.catalog, rid)))[0]  # the redacted copy stays served meanwhile
    await drain(dispatcher, rid, timeout=120)

    second = recording(ctx.catalog, rid)
    assert second.blob_key == outcomes.redacted_audio_key("acme", second.public_id, claimed.id)
    assert second.blob_key != first.blob_key and await ctx.blobs.size(first.blob_key) is None
    assert second.original_blob_key == original_key and await ctx.blobs.size(original_key) > 0
    assert original_key in ctx.catalog.query(recording_rows.blob_keys)  # the orphan sweep keeps it
    # the card found again in the unredacted audio, counted once (nothing carried from the earlier analysis)
    assert (await analyses.load_analysis(ctx, second)).results["redaction"]["counts"] == {"payment_card": 1}


async def test_a_reanalysis_of_the_redacted_copy_keeps_the_redaction_counts(ctx, call_wav, embedded_models) -> None:
    # the unredacted audio is deleted (the default): a re-analysis reads the redacted copy, where the card is a tone
    project = await redacting_project(ctx)
    rid = await upload(ctx, project, call_wav)
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, pipeline(ctx, embedded_models)))
    await drain(dispatcher, rid, timeout=120)
    first = recording(ctx.catalog, rid)
    assert first.original_blob_key is None
    assert (await analyses.load_analysis(ctx, first)).results["redaction"]["counts"] == {"payment_card": 1}

    assert await analyses.reanalyze(ctx, [rid]) == [rid]
    [claimed] = await dispatcher.tick()
    await drain(dispatcher, rid, timeout=120)

    second = recording(ctx.catalog, rid)
    assert second.blob_key == outcomes.redacted_audio_key("acme", second.public_id, claimed.id)
    stored = await analyses.load_analysis(ctx, second)
    assert stored.row.version == 2
    text = " ".join(s["text"] for s in stored.transcript["segments"])
    assert "4526" not in text.replace(" ", "")  # the copy says no card: nothing to find again...
    # ...and the card it no longer says is still counted (was {"payment_card": 0}), though no rule found it this time
    assert stored.results["redaction"] == {"entities": ["payment_card"], "counts": {"payment_card": 1}, "audio": True,
                                           "mode": "precise", "tones": 0, "unheard": [],
                                           "found_by": {"payment_card": dict.fromkeys(FOUND_BY_WORDS["payment_card"],
                                                                                      0)}}
    [stage] = [s for s in stored.results["stages"] if s["name"] == "redaction"]
    assert "redacted by the earlier analysis" in stage["detail"], stage


async def test_a_crash_after_the_swap_leaves_the_original_unserved_until_the_sweep(ctx, call_wav, embedded_models,
                                                                                  monkeypatch) -> None:
    project = await redacting_project(ctx)
    rid = await upload(ctx, project, call_wav)
    original_key = recording(ctx.catalog, rid).blob_key
    delete = ctx.blobs.delete

    async def crash_on_the_original(key):
        if key == original_key:
            raise ConnectionError("the process died here")
        return await delete(key)

    monkeypatch.setattr(ctx.blobs, "delete", crash_on_the_original)
    await drain(Dispatcher(ctx, InlineExecutor(ctx.settings, pipeline(ctx, embedded_models))), rid, timeout=120)
    monkeypatch.setattr(ctx.blobs, "delete", delete)

    row = recording(ctx.catalog, rid)
    assert (row.status, row.audio_redaction) == ("completed", "done")
    assert await ctx.blobs.size(original_key) > 0  # left behind by the crash
    url, _ = await audio_url(ctx, row)
    assert original_key not in url  # never served: no recording points at it
    with pytest.raises(NotFound):
        await resolve_signed(ctx, sign(ctx.url_secret, original_key, int(ctx.clock().timestamp()) + 60))
    monkeypatch.setattr("callscope.workers.loops.ORPHAN_MIN_AGE", timedelta(0))
    assert await sweep_orphan_blobs(ctx) >= 1
    assert await ctx.blobs.size(original_key) is None and await ctx.blobs.size(row.blob_key) > 0


async def test_a_crash_before_the_swap_leaves_the_audio_unserved_and_the_job_to_retry(ctx, call_wav, embedded_models,
                                                                                     monkeypatch) -> None:
    project = await redacting_project(ctx)
    rid = await upload(ctx, project, call_wav)
    row = recording(ctx.catalog, rid)
    [claimed] = ctx.catalog.change(jobs.claim, 1, "a", 30, ctx.clock(), 3)
    key = outcomes.redacted_audio_key("acme", row.public_id, claimed.id)
    work = Work(claimed.id, row.blob_key, project.spec, redacted_audio_key=key)
    result = await asyncio.to_thread(analyze, pipeline(ctx, embedded_models), ctx.settings, work)
    assert await ctx.blobs.size(key) > 0  # the work stored the copy
    write = ctx.catalog.write

    async def crash_in_the_commit(fn, *args):
        if fn is outcomes._commit_completion:
            raise ConnectionError("the catalog went away")
        return await write(fn, *args)

    monkeypatch.setattr(ctx.catalog, "write", crash_in_the_commit)
    with pytest.raises(ConnectionError):
        await outcomes.complete(ctx, claimed, completion(result, row), key)
    monkeypatch.setattr(ctx.catalog, "write", write)

    after = recording(ctx.catalog, rid)
    assert (after.audio_redaction, after.blob_key) == ("pending", row.blob_key)
    with pytest.raises(NotFound, match=UNREDACTED):
        await audio_url(ctx, after)
    assert await ctx.blobs.list_keys(row.blob_key.rsplit("/", 1)[0]) == [row.blob_key]  # copy and transcript went

    # the job is taken again (its lease expired) and completes
    [again] = ctx.catalog.change(jobs.claim, 1, "b", 30, ctx.clock() + timedelta(seconds=31), 3)
    key = outcomes.redacted_audio_key("acme", row.public_id, again.id)
    result = await asyncio.to_thread(analyze, pipeline(ctx, embedded_models), ctx.settings,
                                     Work(again.id, row.blob_key, project.spec, redacted_audio_key=key))
    assert await outcomes.complete(ctx, again, completion(result, row), key)
    done = recording(ctx.catalog, rid)
    assert (done.audio_redaction, done.blob_key) == ("done", key)
    assert await ctx.blobs.size(row.blob_key) is None


async def test_a_failed_redaction_fails_the_recording_and_never_serves_its_audio(ctx, call_wav, embedded_models,
                                                                                monkeypatch) -> None:
    project = await redacting_project(ctx)
    rid = await upload(ctx, project, call_wav)
    ctx.settings.job_max_attempts = 1

    def broken(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr("callscope.analysis.runtime.work.redact_audio_file", broken)
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, pipeline(ctx, embedded_models)))
    await drain(dispatcher, rid, timeout=120)

    row = recording(ctx.catalog, rid)
    assert (row.status, row.audio_redaction) == ("failed", "pending")
    assert "No space left on device" in row.status_reason
    with pytest.raises(NotFound, match=UNREDACTED):
        await audio_url(ctx, row)

    monkeypatch.undo()  # retryable: a re-analysis redacts it
    assert await analyses.reanalyze(ctx, [rid]) == [rid]
    assert await dispatcher.tick()
    await drain(dispatcher, rid, timeout=120)
    row = recording(ctx.catalog, rid)
    assert (row.status, row.audio_redaction) == ("completed", "done")


async def test_a_recording_analysed_before_its_project_redacted_is_redacted_by_its_reanalysis(ctx, call_wav,
                                                                                           embedded_models) -> None:
    project = await redacting_project(ctx)
    rid = add_recording(ctx.catalog, project_id=project.status.id, now=ctx.clock() - timedelta(seconds=1))
    row = recording(ctx.catalog, rid)  # uploaded before the project redacted: its audio is served
    async with ctx.blobs.writer(row.blob_key) as writer:
        await writer.write(call_wav)
        await writer.commit()
    assert row.audio_redaction is None and (await audio_url(ctx, row))[0]
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, pipeline(ctx, embedded_models)))

    assert await dispatcher.tick()  # claimed (a re-analysis is claimed the same way)
    for _ in range(100):  # its job marks it before the analysis starts
        if (during := recording(ctx.catalog, rid)).audio_redaction is not None:
            break
        await asyncio.sleep(0.02)
    assert during.status == "processing"
    with pytest.raises(NotFound, match=UNREDACTED):  # from the claim on, not served until redacted
        await audio_url(ctx, during)
    await drain(dispatcher, rid, timeout=120)

    done = recording(ctx.catalog, rid)
    assert (done.audio_redaction, done.audio_format) == ("done", "flac")
    assert await ctx.blobs.size(row.blob_key) is None


async def test_keypad_tones_are_taken_out_of_the_served_audio_and_counted(ctx, embedded_models, tmp_path) -> None:
    """A caller reads part of a card and types the rest on the keypad, on an 8 kHz μ-law line, in a strict project:
    the served copy holds no tone a DTMF decoder can read, and the result counts them."""
    said = speech.make_call([0.4, "Can I have the long number on the card please?", 0.4]).samples
    tones = keypad(KEYS, -20)
    line = speech.write(tmp_path / "line.wav", [np.concatenate([said, tones])], rate=8000, codec="pcm_mulaw")
    project = await create_with_id(ctx, Project, "acme", "Strict", ProjectSpec(
        name="Strict", language="en", redaction=Redaction(entities=["payment_card"], mode="strict")))
    rid = await upload(ctx, project, line.read_bytes())
    assert len(dtmf.detect(decode(line))) == len(KEYS)

    await drain(Dispatcher(ctx, InlineExecutor(ctx.settings, pipeline(ctx, embedded_models))), rid, timeout=120)

    row = recording(ctx.catalog, rid)
    assert (row.status, row.audio_redaction) == ("completed", "done")
    stream = await ctx.blobs.open(row.blob_key)
    copy = tmp_path / "served.flac"
    copy.write_bytes(b"".join([chunk async for chunk in stream]))
    assert dtmf.detect(decode(copy)) == []  # 0 of 16 tone windows left
    redaction = (await analyses.load_analysis(ctx, row)).results["redaction"]
    assert (redaction["mode"], redaction["tones"]) == ("strict", len(KEYS))
