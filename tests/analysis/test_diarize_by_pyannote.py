"""CALLSCOPE_DIARIZATION_MODEL=pyannote: pyannote.audio's own pipeline behind the diarization stage.

The pipeline itself (torch and gated weights on a GPU cluster's volume) cannot run here: it is the outside boundary,
stood in for by a callable that answers what pyannote.audio answers, a pyannote.core Annotation. Everything on our
side of it is real: the Annotation's turns, the words relabelled by them, the stage detail, the loading errors.
"""

from __future__ import annotations

import types
from importlib.util import find_spec

import numpy as np
import pytest
from pyannote.core import Annotation, Segment

from callscope.analysis.result import ModelUsed
from callscope.analysis.stages import diarize_by_voice
from callscope.analysis.stages.diarize_by_pyannote import (
    PyannotePipeline,
    PyannoteUnavailable,
    Turn,
    load_pyannote_pipeline,
    turns_of,
)
from callscope.analysis.stages.speakers import SpeakerAnalyzer
from callscope.analysis.types import Audio
from callscope.config import Settings
from tests.analysis.test_diarize_by_voice import seg

INFO = ModelUsed(stage="diarization", name="pyannote.audio pipeline (speaker-diarization)", version="test")


def annotation(*turns: tuple[float, float, str]) -> Annotation:
    out = Annotation()
    for start, end, label in turns:
        out[Segment(start, end)] = label
    return out


def test_turns_of_an_annotation_or_of_a_pipeline_output():
    found = annotation((3.0, 5.5, "SPEAKER_01"), (0.2, 3.2, "SPEAKER_00"), (6.0, 6.0, "SPEAKER_00"))
    expected = [Turn(200, 3200, "SPEAKER_00"), Turn(3000, 5500, "SPEAKER_01")]  # in time order, empty turn left out
    assert turns_of(found) == expected
    assert turns_of(types.SimpleNamespace(speaker_diarization=found)) == expected  # pyannote.audio 4's DiarizeOutput


def test_words_take_the_speaker_of_their_turn_and_segments_follow_the_turns():
    turns = [Turn(0, 2600, "A"), Turn(2200, 5000, "B"), Turn(5200, 7000, "A")]
    segments = [seg(0, 100, 4800, [(100, 600, "Hello"), (700, 2000, "there."), (2800, 3600, "Hi,"),
                                   (3700, 4800, "yes.")]),
                seg(1, 5300, 6900, [(5300, 6900, "Goodbye.")])]
    out, found = diarize_by_voice.diarize_turns(segments, turns, INFO)
    assert [(s.speaker, s.text) for s in out] == [("speaker-1", "Hello there."), ("speaker-2", "Hi, yes."),
                                                  ("speaker-1", "Goodbye.")]
    assert out[0].end_ms == 2600 and out[1].start_ms == 2200  # each to its own turn's edge: 0.4 s of overlap
    assert [s.id for s in out] == [0, 1, 2]
    assert (found.speakers, found.overlap_ms, found.model) == (2, 400, INFO)
    assert found.detail == "by the pyannote.audio pipeline: 2 speaker(s), overlapped speech 0.4 s"


def test_turn_activity_counts_overlap_once_per_moment():
    activity = diarize_by_voice.TurnActivity((((0, 1000), (3000, 4000)), ((500, 3500),), ((3200, 3300),)))
    assert activity.overlap_ms() == 500 + 500
    assert activity.regions(1) == [(500, 3500)] and activity.regions(7) == []


def test_the_analyzer_diarizes_a_mono_call_with_the_pipeline(monkeypatch):
    heard: list[dict] = []

    def pipeline(file: dict) -> Annotation:  # what pyannote.audio's Pipeline.__call__ takes and answers
        heard.append(file)
        return annotation((0.0, 1.0, "SPEAKER_00"), (1.2, 2.0, "SPEAKER_01"))

    loaded = PyannotePipeline(pipeline, INFO, types.SimpleNamespace(from_numpy=lambda a: a))
    monkeypatch.setattr("callscope.analysis.stages.speakers.load_pyannote_pipeline", lambda location, device: loaded)
    analyzer = SpeakerAnalyzer(Settings(diarization_model="pyannote", pyannote_pipeline="/volume/pipeline"))
    audio = Audio((np.zeros(32_000, dtype=np.float32),))
    out, found = analyzer.diarize(audio, [], [seg(0, 0, 2000, [(100, 900, "Hello."), (1300, 1900, "Hi.")])])
    assert [(s.speaker, s.text) for s in out] == [("speaker-1", "Hello."), ("speaker-2", "Hi.")]
    assert found.model == INFO and found.method == "pyannote"
    assert heard[0]["sample_rate"] == 16_000 and heard[0]["waveform"].shape == (1, 32_000)


def test_loading_says_what_is_missing(tmp_path):
    with pytest.raises(PyannoteUnavailable, match="needs CALLSCOPE_PYANNOTE_PIPELINE"):
        load_pyannote_pipeline(None)
    with pytest.raises(PyannoteUnavailable, match="no pipeline config at"):
        load_pyannote_pipeline(str(tmp_path))
    (tmp_path / "config.yaml").write_text("pipeline:\n  name: pyannote.audio.pipelines.SpeakerDiarization\n")
    if find_spec("pyannote.audio") is None:
        with pytest.raises(PyannoteUnavailable, match=r"needs pyannote\.audio and torch installed"):
            load_pyannote_pipeline(str(tmp_path))
    with pytest.raises(PyannoteUnavailable, match="needs CALLSCOPE_PYANNOTE_PIPELINE"):
        SpeakerAnalyzer(Settings(diarization_model="pyannote"))
