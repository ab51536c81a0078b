"""The ONNX voice encoder: resemblyzer parity, numpy mel front end, shapes, normalisation, the sha256 check."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from callscope.analysis.models import speaker_encoder as se
from callscope.config import Settings
from tests.analysis.speech import ESPEAK, SKIP_REASON, speak

# resemblyzer 0.1.4's own VoiceEncoder("cpu").embed_utterance(normalize_volume(_signal(), -30, increase_only=True))
# computed with torch and librosa (scripts/export_speaker_encoder.py's environment): its six largest components,
# its dot product with a fixed random vector, and how many components are positive.
REFERENCE_TOP = [246, 100, 224, 243, 150, 16]
REFERENCE_VALUES = [0.247939, 0.247255, 0.213275, 0.184878, 0.179548, 0.169785]
REFERENCE_PROBE = -2.342257
REFERENCE_POSITIVE = 114


def _signal() -> np.ndarray:
    """3.2 s of a voice-like harmonic tone with a gliding pitch and syllable-rate amplitude."""
    t = np.arange(int(3.2 * 16000)) / 16000
    f0 = 140 + 30 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / 16000
    voice = sum(np.sin(k * phase) / k for k in range(1, 12)) * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t))
    return (0.1 * voice).astype(np.float32)


@pytest.fixture(scope="module")
def encoder() -> se.SpeakerEncoder:
    return se.load_speaker_encoder(Settings(analysis_threads=2))


def test_matches_resemblyzer(encoder):
    embedding = encoder.embed_utterance(se.normalize_volume(_signal()))
    assert np.argsort(-embedding)[:6].tolist() == REFERENCE_TOP
    np.testing.assert_allclose(embedding[REFERENCE_TOP], REFERENCE_VALUES, atol=2e-6)
    probe = np.random.default_rng(7).standard_normal(256)
    assert float(embedding @ probe) == pytest.approx(REFERENCE_PROBE, abs=2e-5)
    assert int((embedding > 0).sum()) == REFERENCE_POSITIVE


def test_embeddings_are_normalised_and_non_negative(encoder):
    mels = np.random.default_rng(0).random((3, se.PARTIAL_FRAMES, se.N_MELS)).astype(np.float32)
    out = encoder.embed_mels(mels)
    assert out.shape == (3, 256) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert (out >= 0).all()  # ReLU before the normalisation, as in GE2E
    assert encoder.embed_mels(np.zeros((0, se.PARTIAL_FRAMES, se.N_MELS))).shape == (0, 256)


def test_mel_front_end():
    tone = np.sin(2 * np.pi * 1000 * np.arange(16000) / 16000).astype(np.float32)
    mel = se.mel_spectrogram(tone)
    assert mel.shape == (1 + 16000 // se.HOP, se.N_MELS)
    bank = se.mel_filterbank()
    peak = int(np.argmax(mel[50]))
    assert peak == int(np.argmax(bank[:, 1000 * se.N_FFT // 16000]))  # the band whose filter peaks near 1 kHz
    assert np.allclose(se.mel_spectrogram(np.zeros(800, np.float32)), 0)


def test_volume_is_only_raised():
    quiet = np.full(1600, 0.001, np.float32)
    raised = se.normalize_volume(quiet)
    assert 20 * np.log10(np.sqrt(np.mean((raised * 32767.0) ** 2)) / 32767) == pytest.approx(-30, abs=0.01)
    loud = np.full(1600, 0.5, np.float32)
    assert se.normalize_volume(loud) is loud or np.array_equal(se.normalize_volume(loud), loud)


def test_partial_slices_match_resemblyzer():
    # what resemblyzer's compute_partial_slices(n, rate=1.3, min_coverage=0.75) returns: a step of 77 frames
    assert se.partial_slices(16000) == [0]
    assert se.partial_slices(3 * 16000) == [0, 77, 154]
    assert se.partial_slices(int(1.7 * 16000)) == [0]


def test_damaged_or_missing_model_is_refused(tmp_path, monkeypatch):
    damaged = tmp_path / "voice_encoder.onnx"
    shutil.copy(se.EMBEDDED_MODEL, damaged)
    with open(damaged, "r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0xFF]))
    monkeypatch.setattr(se, "EMBEDDED_MODEL", damaged)
    with pytest.raises(ValueError, match="damaged"):
        se.load_speaker_encoder(Settings(analysis_threads=1))
    with pytest.raises(FileNotFoundError, match="CALLSCOPE_SPEAKER_ENCODER_MODEL"):
        se.load_speaker_encoder(Settings(analysis_threads=1, speaker_encoder_model=str(tmp_path / "no.onnx")))


def test_info_names_model_and_version(encoder):
    assert encoder.info.stage == "speaker-embedding"
    assert encoder.info.version.startswith(se.EMBEDDED_VERSION) and se.EMBEDDED_SHA256[:12] in encoder.info.version


@pytest.mark.skipif(ESPEAK is None, reason=SKIP_REASON)
def test_same_voice_is_closer_than_another_voice(encoder):
    a1 = encoder.embed_utterance(se.normalize_volume(speak("Please hold while I look that up for you.", "en-us+m3")))
    a2 = encoder.embed_utterance(se.normalize_volume(speak("Could you send me a copy of the invoice?", "en-us+m3")))
    b = encoder.embed_utterance(se.normalize_volume(speak("Could you send me a copy of the invoice?", "en+f4")))
    assert float(a1 @ a2) > 0.8
    assert float(a1 @ a2) > float(a1 @ b) + 0.1
