"""Which Whisper model hears a live call of a project that names a site model (transcription.model, one of
CALLSCOPE_WHISPER_MODELS; analysis/runtime/live.py `LiveModels.model_for`): the operator's live model wins; else on a
GPU the project's site model; on a CPU, where a larger model falls behind the call, the usual live model unless
CALLSCOPE_LIVE_SITE_MODEL_ON_CPU; and a call heard by the site model for real (the embedded tiny.en linked into a
folder of its own, as tests/analysis/test_site_models.py makes it), loaded before its audio."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from callscope.analysis.runtime.live import ENGLISH_ON_CPU, LiveModels
from callscope.config import Settings
from callscope.live.events import Final
from callscope.resources.kinds import ProjectSpec, TranscriptionSpec
from tests.analysis import speech
from tests.analysis.test_site_models import site_model  # noqa: F401 - fixture

SITE = {"large": "/models/large-v3"}


def test_on_a_gpu_a_project_s_site_model_hears_its_live_calls_whatever_their_language() -> None:
    gpu = LiveModels(Settings(whisper_device="cuda", whisper_model="base", whisper_models=SITE))
    assert gpu.model_for("en", "large") == gpu.model_for("es", "large") == gpu.model_for(None, "large") == SITE["large"]
    assert gpu.model_for("en") == "base"  # the projects that name none keep the batch model
    assert gpu.model_for("en", "dropped") == "base"  # a name the site no longer has: the stored call's analysis fails


def test_on_a_cpu_the_live_model_stays_unless_the_site_says_the_site_model_keeps_up() -> None:
    cpu = LiveModels(Settings(whisper_device="cpu", whisper_model="base", whisper_models=SITE))
    assert cpu.model_for("en", "large") == ENGLISH_ON_CPU and cpu.model_for("es", "large") == "base"
    on_cpu = LiveModels(Settings(whisper_device="cpu", whisper_models=SITE, live_site_model_on_cpu=True))
    assert on_cpu.model_for("en", "large") == on_cpu.model_for("es", "large") == SITE["large"]
    assert on_cpu.model_for("en") == ENGLISH_ON_CPU


def test_the_operator_s_live_model_hears_every_call() -> None:
    for device in ("cpu", "cuda"):
        chosen = LiveModels(Settings(whisper_device=device, whisper_models=SITE, live_whisper_model="small",
                                     live_site_model_on_cpu=True))
        assert chosen.model_for("en", "large") == chosen.model_for("en") == "small"


@pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)
def test_a_live_call_of_the_project_is_heard_by_its_site_model_loaded_before_its_audio(site_model: Path) -> None:
    models = LiveModels(Settings(whisper_device="cpu", whisper_models={"english": str(site_model)},
                                 live_site_model_on_cpu=True, live_negative_utterances=0))
    spec = ProjectSpec(name="Site", language="en", live=True, transcription=TranscriptionSpec(model="english"))
    recognition = models.recognition(spec, [("channel-0", "agent")])
    recognition.warm_up()
    assert str(site_model) in models._transcribers  # loaded before the call's audio, not at its first words
    loaded = models.transcriber("en", "english")
    assert loaded.model_dir == site_model and loaded is not models.transcriber("en")  # its own, not tiny.en's
    decodes = []
    whisper = loaded.model.transcribe
    loaded.model.transcribe = lambda *args, **options: decodes.append(len(args[0])) or whisper(*args, **options)
    call = speech.make_call([0.4, "Thank you for calling. How can I help you today?", 1.5]).samples
    events = []
    for at in range(0, len(call), speech.RATE // 5):  # 200 ms turns, as a carrier's frames come
        events += recognition.feed([call[at:at + speech.RATE // 5]])
    events += recognition.feed([np.zeros(0, np.float32)]) + recognition.finish()
    heard = " ".join(e.text for e in events if isinstance(e, Final)).lower()
    assert "help" in heard, heard
    assert decodes  # the site model's decodes
