"""A site's other Whisper model on Ray: a project that names it (transcription.model) has its calls transcribed by
its own actor, created by the first analysis that needs it; the other projects' calls keep the default actor. Unused
for CALLSCOPE_SITE_MODEL_IDLE_SECONDS the site model's actor exits (the default's stays), and the next use makes it
again, a proxy that outlived it included."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
import ray

from callscope.config import Settings
from callscope.resources import Project, ProjectSpec
from callscope.resources.kinds import TranscriptionSpec
from callscope.runtime import Runtime
from callscope.services import analyses
from callscope.services.objects import create_with_id
from callscope.workers.dispatch import Dispatcher
from tests.analysis import speech
from tests.analysis.test_site_models import SITE_FOLDER, asr_model, site_model  # noqa: F401 - fixture
from tests.queue.rows import recording
from tests.queue.test_dispatch import put_recording, wav_bytes  # noqa: F401 - fixture

pytestmark = [pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON), pytest.mark.slow,
              pytest.mark.xdist_group("ray")]


SITE_ACTOR = "transcriber-site-english"


def running(name: str) -> bool:
    try:
        ray.get_actor(name, namespace="callscope")
    except ValueError:
        return False
    return True


def until_gone(name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while running(name) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not running(name), f"{name} still up after {timeout:g} s"


async def test_a_project_s_site_model_runs_in_its_own_actor_stopped_when_idle(tmp_path, wav_bytes,
                                                                             site_model: Path) -> None:
    from callscope.analysis.runtime.actors import RayExecutor, site_transcriber

    # three CPUs: the default transcriber's actor, the site model's and the analysis task each reserve theirs
    settings = Settings(data_dir=tmp_path / "data", log_level="WARNING", ray_num_cpus=3, ray_object_store_mb=128,
                        llm_enabled=False, whisper_models={"english": str(site_model)}, site_model_idle_seconds=4)
    runtime = Runtime(settings)
    await runtime.start(background=False)
    executor = RayExecutor(settings)
    try:
        await executor.start()
        ctx = runtime.ctx
        site = await create_with_id(ctx, Project, "acme", "Site", ProjectSpec(
            name="Site", language="en", transcription=TranscriptionSpec(model="english")))
        plain = await create_with_id(ctx, Project, "acme", "Plain", ProjectSpec(name="Plain", language="en"))
        ids = [await put_recording(ctx, wav_bytes, project_id=p.status.id) for p in (site, plain)]
        dispatcher = Dispatcher(ctx, executor)

        async def until_done():
            while any(recording(ctx.catalog, r).status not in ("completed", "failed") for r in ids):
                await dispatcher.tick()
                await asyncio.sleep(0.2)
        await asyncio.wait_for(until_done(), 240)

        rows = [recording(ctx.catalog, r) for r in ids]
        assert [row.status for row in rows] == ["completed", "completed"], [row.status_reason for row in rows]
        on_site, by_default = [asr_model(await analyses.load_analysis(ctx, row)) for row in rows]
        assert on_site == f"whisper {SITE_FOLDER} ({site_model})"
        assert by_default.startswith("whisper base (")
        # unused for 4 s, the site model's actor exits; the default transcriber's stays
        await asyncio.to_thread(until_gone, SITE_ACTOR)
        assert running("transcriber-0")
        # the next use makes it again, even through a proxy made before it exited
        proxy = await asyncio.to_thread(site_transcriber, settings, "english")
        assert running(SITE_ACTOR)
        await asyncio.to_thread(until_gone, SITE_ACTOR)
        assert await asyncio.to_thread(proxy.supports, "en")
        assert running(SITE_ACTOR)
    finally:
        await executor.stop()
        await runtime.stop()
