"""analysis.vad: Silero VAD (faster-whisper's ONNX copy) finds the silences put into synthetic calls."""

from __future__ import annotations

from itertools import pairwise

import faster_whisper
import numpy as np
import pytest

from callscope.analysis.stages import vad
from callscope.analysis.stages.vad import MODEL, detect_speech
from callscope.analysis.types import Audio
from tests.analysis.speech import ESPEAK, SENTENCES, SKIP_REASON, make_call, pad_to, silence

pytestmark = pytest.mark.skipif(ESPEAK is None, reason=SKIP_REASON)

TOLERANCE_MS = 250


@pytest.fixture(scope="module")
def call():
    return make_call([0.6, SENTENCES[0], 1.0, SENTENCES[1], 1.5, SENTENCES[2], 0.8, SENTENCES[3], 2.0, SENTENCES[4],
                      0.7])


def gaps(regions):
    return [(a.end_ms, b.start_ms) for a, b in pairwise(regions)]


def assert_silences_found(regions, call):
    assert len(regions) == len(call.sentences)
    assert len(gaps(regions)) == len(call.silences)
    for (start, end), (found_start, found_end) in zip(call.silences, gaps(regions), strict=True):
        assert abs(found_start - start) <= TOLERANCE_MS, (start, found_start)
        assert abs(found_end - end) <= TOLERANCE_MS, (end, found_end)
    assert abs(regions[0].start_ms - call.sentences[0][0]) <= TOLERANCE_MS
    assert abs(regions[-1].end_ms - call.sentences[-1][1]) <= TOLERANCE_MS


def test_model_info():
    assert MODEL.stage == "vad" and MODEL.version == faster_whisper.__version__


def test_finds_inserted_silences(call):
    regions = detect_speech(Audio((call.samples,)), 0)
    assert all(r.channel == 0 for r in regions)
    assert_silences_found(regions, call)


def test_finds_silences_under_low_noise(call):
    noisy = call.samples + silence(len(call.samples) / 16_000, noise=0.003, seed=7)
    assert_silences_found(detect_speech(Audio((noisy,)), 0), call)


def test_min_silence_merges_shorter_pauses(call):
    regions = detect_speech(Audio((call.samples,)), 0, min_silence_ms=1200)
    # only the 1.5 s and 2.0 s silences split the speech
    assert len(regions) == 3


def test_channel_is_chosen(call):
    other = np.zeros_like(call.samples)
    audio = Audio((other, call.samples))
    assert detect_speech(audio, 0) == []
    regions = detect_speech(audio, 1)
    assert regions and all(r.channel == 1 for r in regions)


def test_call_speech_uses_the_stereo_threshold_on_several_channels(call):
    quiet = call.samples * 0.05  # a quiet voice: some of it under Silero's 0.5, over the stereo threshold
    stereo = Audio((call.samples, quiet))
    assert vad.call_speech(stereo) == [
        *detect_speech(stereo, 0, threshold=vad.STEREO_THRESHOLD),
        *detect_speech(stereo, 1, threshold=vad.STEREO_THRESHOLD)]
    mono = Audio((quiet,))
    assert vad.call_speech(mono) == detect_speech(mono, 0)
    covered = lambda regions: sum(r.end_ms - r.start_ms for r in regions)  # noqa: E731 - a local helper
    assert covered(detect_speech(mono, 0, threshold=vad.STEREO_THRESHOLD)) >= covered(detect_speech(mono, 0))


@pytest.mark.parametrize("noise", [0.0, 0.003], ids=["silence", "low-noise"])
def test_no_speech_in_silence_or_noise(noise):
    assert detect_speech(Audio((silence(10.0, noise=noise),)), 0) == []


def test_tiny_inputs():
    assert detect_speech(Audio((np.zeros(0, np.float32),)), 0) == []
    assert detect_speech(Audio((np.zeros(100, np.float32),)), 0) == []


def test_long_audio_in_windows_gives_the_same_regions(call, monkeypatch):
    whole = detect_speech(Audio((call.samples,)), 0)
    # windows of 3 s: boundaries fall inside sentences; regions are joined back across them
    monkeypatch.setattr(vad, "WINDOW_S", 3)
    windowed = detect_speech(Audio((pad_to(call.samples, len(call.samples)),)), 0)
    assert_silences_found(windowed, call)
    assert len(windowed) == len(whole)
