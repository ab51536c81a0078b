"""The whole pipeline on inputs that are not a normal call: silence only, noise only, one speaker, a 0.5 s file,
a corrupt file. Each either completes with an honest, valid result or raises AnalysisError with one readable line;
nothing crashes. (A recording whose analysis raises AnalysisError becomes `failed` with that line as its reason:
tests/queue.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from callscope.analysis.result import EMOTIONS, AnalysisResult
from callscope.analysis.runtime.pipeline import AnalysisError, Pipeline
from callscope.config import Settings
from callscope.resources.kinds import Goal, ProjectSpec
from tests.analysis import speech

pytestmark = pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)

PROJECT = ProjectSpec(name="p", language="en", goals=[
    Goal(id=1, name="Greeting", description="The agent thanks the caller for calling.")])


@pytest.fixture(scope="module")
def pipeline() -> Pipeline:
    return Pipeline(Settings(llm_enabled=False))


def valid(result: AnalysisResult) -> None:
    """What every result must hold whatever the audio was."""
    assert result.duration_ms >= 0 and result.channels >= 1
    assert [s.id for s in result.segments] == list(range(len(result.segments)))
    for segment in result.segments:
        assert list(segment.emotions) == list(EMOTIONS) and abs(sum(segment.emotions.values()) - 1) < 1e-3
    for goal in result.goals:
        assert 0 <= goal.score <= 1 and isinstance(goal.met, bool) and goal.explanation
    assert result.characteristics.talk_time_ms + result.characteristics.non_talk_time_ms <= result.duration_ms + 50
    AnalysisResult.model_validate(result.model_dump(mode="json"))  # it round-trips as stored


def test_silence_only_completes_with_no_speech(pipeline, tmp_path: Path) -> None:
    path = speech.write(tmp_path / "silence.wav", [speech.silence(5.0)])
    result = pipeline.run(path, PROJECT)
    valid(result)
    assert result.segments == [] and result.characteristics.talk_time_ms == 0
    assert all(not goal.met for goal in result.goals)


def test_noise_only_completes_without_inventing_words(pipeline, tmp_path: Path) -> None:
    noise = (np.random.default_rng(3).standard_normal(5 * speech.RATE) * 0.05).astype(np.float32)
    result = pipeline.run(speech.write(tmp_path / "noise.wav", [noise]), PROJECT)
    valid(result)
    assert sum(len(s.text.split()) for s in result.segments) <= 3  # Whisper may hallucinate a word or two on noise


def test_one_speaker_is_one_speaker(pipeline, tmp_path: Path) -> None:
    call = speech.make_call([0.3, speech.SENTENCES[0], 0.8, speech.SENTENCES[1], 0.8, speech.SENTENCES[4], 0.3])
    result = pipeline.run(speech.write(tmp_path / "one.wav", [call.samples]), PROJECT)
    valid(result)
    assert {s.speaker for s in result.segments} == {"speaker-1"} and len(result.speakers) == 1
    assert speech.wer(call.text, " ".join(s.text for s in result.segments)) < 0.3


def test_a_half_second_file_completes(pipeline, tmp_path: Path) -> None:
    word = speech.speak("Hello.")[: speech.RATE // 2]
    result = pipeline.run(speech.write(tmp_path / "short.wav", [speech.pad_to(word, speech.RATE // 2)]), PROJECT)
    valid(result)
    assert result.duration_ms == pytest.approx(500, abs=30)


@pytest.mark.parametrize("content", [b"", b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 16, b"\xff\xfb" * 400,
                                     b"not audio at all" * 100])
def test_a_corrupt_file_raises_one_readable_line(pipeline, tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "broken.mp3"
    path.write_bytes(content)
    with pytest.raises(AnalysisError) as raised:
        pipeline.run(path, PROJECT)
    message = str(raised.value)
    assert "cannot decode audio" in message and "\n" not in message
