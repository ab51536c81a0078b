"""pyannote segmentation-3.0 as ONNX: the runtime against the torch model, powerset decoding, chunking.

`data/segmentation_reference.npy` holds the torch model's log-probabilities (530 frames, 7 classes) on
`data/campplus_clips.wav` (9 s of the pyannote.audio sample call: two clips of one speaker, then two of the
other), written by `scripts/export_segmentation.py`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from callscope.analysis.models import segmentation as sg

DATA = Path(__file__).resolve().parent / "data"
CHANGE_S = 4.5  # the clips of the second speaker start here


@pytest.fixture(scope="module")
def segmenter() -> sg.Segmenter:
    return sg.load_segmenter(threads=1)


def test_matches_torch_model(segmenter, clips):
    reference = np.load(DATA / "segmentation_reference.npy")
    ours = segmenter.log_probs(clips[None])[0]
    assert ours.shape == reference.shape == (530, 7)
    # compare probabilities (log-probabilities of unlikely classes reach -20 and wobble there)
    assert np.abs(np.exp(ours) - np.exp(reference)).max() < 1e-3
    assert (np.argmax(ours, axis=1) == np.argmax(reference, axis=1)).mean() > 0.995


def test_two_speakers_one_after_the_other(segmenter, clips):
    active = sg.to_multilabel(segmenter.log_probs(clips[None])[0])
    times = sg.frame_ms(np.arange(len(active))) / 1000
    first = active[(times > 0.5) & (times < CHANGE_S - 0.5)].sum(axis=0)
    second = active[(times > CHANGE_S + 0.5) & (times < 8.5)].sum(axis=0)
    # each half is mostly one local speaker, and not the same one
    assert first.max() > 0.8 * first.sum() and second.max() > 0.8 * second.sum()
    assert np.argmax(first) != np.argmax(second)


def test_powerset_decoding():
    log_probs = np.log(np.array([[0.9, 0.02, 0.02, 0.02, 0.02, 0.01, 0.01],   # nobody
                                 [0.1, 0.1, 0.6, 0.1, 0.05, 0.03, 0.02],      # local speaker 1 alone
                                 [0.1, 0.1, 0.1, 0.1, 0.1, 0.4, 0.1]]))       # 0 and 2 together
    assert sg.to_multilabel(log_probs).tolist() == [[False, False, False], [False, True, False],
                                                    [True, False, True]]


def test_chunk_starts_cover_the_audio_on_the_frame_grid():
    assert sg.chunk_starts(50_000) == [0]  # under one chunk: one, padded
    starts = sg.chunk_starts(30 * 16_000, step_frames=148)
    assert starts[0] == 0 and all(s % sg.FRAME_SAMPLES == 0 for s in starts)
    assert np.all(np.diff(starts) <= 148 * sg.FRAME_SAMPLES) and np.all(np.diff(starts) > 0)
    assert 30 * 16_000 - sg.FRAME_SAMPLES < starts[-1] + sg.CHUNK_SAMPLES <= 30 * 16_000 + sg.FRAME_SAMPLES


def test_activity_of_a_short_call(segmenter, clips):
    chunks = segmenter.activity(clips[:3 * 16_000])
    assert chunks.starts.tolist() == [0] and chunks.active.shape == (1, sg.CHUNK_FRAMES, 3)
    assert chunks.active[0, :100].any()  # speech at the start
    assert not chunks.active[0, -100:].any()  # the padding is silence


def test_frames_tile_the_time_line():
    edges = sg.frame_ms(np.arange(4))
    assert np.allclose(np.diff(edges), sg.FRAME_SAMPLES / 16)
    assert edges[0] == pytest.approx((sg.RECEPTIVE_SAMPLES - sg.FRAME_SAMPLES) // 2 / 16)
