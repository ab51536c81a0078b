"""The Ray executor for real: a local Ray, the Whisper model in an actor, the task fetching the audio from the
blob store itself; the dispatcher stores the result and the recording showed its progress on the way."""

from __future__ import annotations

import asyncio

import pytest
from prometheus_client import REGISTRY

from callscope.config import Settings
from callscope.runtime import Runtime
from callscope.services import analyses
from callscope.workers.dispatch import Dispatcher
from tests.analysis import speech
from tests.queue.rows import recording
from tests.queue.test_dispatch import SAME_WORDS, SENTENCE, put_recording, wav_bytes  # noqa: F401 - fixture

pytestmark = [pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON), pytest.mark.slow,
              pytest.mark.xdist_group("ray")]


async def test_recordings_are_analysed_on_ray(tmp_path, wav_bytes) -> None:
    from callscope.analysis.runtime.actors import RayExecutor

    settings = Settings(data_dir=tmp_path / "data", log_level="WARNING", ray_num_cpus=2, ray_object_store_mb=128,
                        llm_enabled=False)  # the queue and Ray are under test, not the language model
    runtime = Runtime(settings)
    await runtime.start(background=False)
    executor = RayExecutor(settings)
    asr_runs = REGISTRY.get_sample_value("callscope_stage_duration_seconds_count", {"stage": "asr"}) or 0
    try:
        await executor.start()
        ctx = runtime.ctx
        ids = [await put_recording(ctx, wav_bytes) for _ in range(2)]
        bad = await put_recording(ctx, b"not audio" * 100)
        dispatcher = Dispatcher(ctx, executor)
        stages: set[tuple[str, int]] = set()

        async def until_done():
            while any(recording(ctx.catalog, r).status not in ("completed", "failed") for r in [*ids, bad]):
                await dispatcher.tick()
                for r in ids:
                    row = recording(ctx.catalog, r)
                    stages.add((row.stage, row.progress))
                await asyncio.sleep(0.2)
        await asyncio.wait_for(until_done(), 120)

        for r in ids:
            row = recording(ctx.catalog, r)
            assert row.status == "completed", row.status_reason
            transcript = (await analyses.load_analysis(ctx, row)).transcript
            assert speech.wer(SENTENCE, " ".join(s["text"] for s in transcript["segments"])) < SAME_WORDS
        assert any(0 < progress < 100 for _, progress in stages)  # progress came back from the Ray task
        failed = recording(ctx.catalog, bad)
        assert failed.status == "failed" and "cannot decode audio" in failed.status_reason
        # the stage times measured on the Ray worker came back with the results, into this process's metrics
        assert REGISTRY.get_sample_value("callscope_stage_duration_seconds_count", {"stage": "asr"}) == asr_runs + 2
        assert REGISTRY.get_sample_value("callscope_model_load_duration_seconds_count", {"model": "transcriber"})
        assert REGISTRY.get_sample_value("callscope_ray_nodes_alive", {"kind": "head"}) == 1  # Ray's state API
    finally:
        await executor.stop()
        await runtime.stop()


async def test_work_no_node_can_take_goes_back_to_the_queue_saying_why_and_runs_once_room_returns(
        tmp_path, wav_bytes) -> None:
    from callscope.analysis.runtime.actors import RayExecutor

    settings = Settings(data_dir=tmp_path / "data", log_level="WARNING", ray_num_cpus=2, ray_object_store_mb=128,
                        llm_enabled=False, job_retry_base_seconds=0)
    runtime = Runtime(settings)
    await runtime.start(background=False)
    executor = RayExecutor(settings)
    unplaced = REGISTRY.get_sample_value("callscope_jobs_retried_total", {"reason": "unplaced"}) or 0
    asr_runs = REGISTRY.get_sample_value("callscope_stage_duration_seconds_count", {"stage": "asr"}) or 0
    try:
        await executor.start()
        ctx = runtime.ctx
        [call] = [await put_recording(ctx, wav_bytes)]
        dispatcher = Dispatcher(ctx, executor)
        # the worker nodes are gone: the task asks for a resource no node offers
        executor.settings = settings.model_copy(update={"ray_worker_resource": "gone-workers",
                                                        "ray_placement_timeout_seconds": 3})
        await dispatcher.tick()
        await asyncio.wait_for(asyncio.gather(*dispatcher.running.values()), 60)
        row = recording(ctx.catalog, call)
        assert (row.status, row.stage) == ("processing", "retrying"), (row.status, row.stage, row.status_reason)
        assert row.status_reason.startswith("NotPlaced: Ray did not start the analysis within 3 s: no node offers "
                                            "what it asks for (CPU 0.5, gone-workers)"), row.status_reason
        assert REGISTRY.get_sample_value("callscope_jobs_retried_total", {"reason": "unplaced"}) == unplaced + 1
        executor.settings = settings  # room again: the same job runs, once
        while recording(ctx.catalog, call).status != "completed":
            await dispatcher.tick()
            await asyncio.wait_for(asyncio.gather(*dispatcher.running.values()), 120)
        row = recording(ctx.catalog, call)
        assert row.status_reason is None
        assert REGISTRY.get_sample_value("callscope_stage_duration_seconds_count", {"stage": "asr"}) == asr_runs + 1
    finally:
        await executor.stop()
        await runtime.stop()
