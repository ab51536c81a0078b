"""Who speaks in each frame of a mono call: the segmentation model's chunks (`segmentation.py`) put together with
the call's speakers found by clustering speaker embeddings (`diarize_by_voice.py`).

`speaker_activity` averages the overlapping chunks into a speaker count per frame, maps each chunk's local speakers to
the call's speakers by the clustered windows covering their frames (frame by frame, `frame_labels`, where a local
speaker is under ``PURITY`` one speaker's), and in each frame lets the most active speakers speak (two in overlapped
speech). How: docs/analysis.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from callscope.analysis.models.segmentation import (
    CHUNK_FRAMES,
    FRAME_SAMPLES,
    RECEPTIVE_SAMPLES,
    ChunkActivity,
    frame_ms,
)

MAX_OVERLAP = 2  # the model's powerset: at most two at once
PURITY = 0.9  # a local speaker whose own frames are under this share one cluster's windows is two voices (fit clips)
NONE, MIXED = -1, -2  # map_local_speakers: no window covers the local speaker / it is two voices


def frame_of(ms: float) -> int:
    """The call-grid frame holding the instant `ms`."""
    return max(0, int((ms * 16 - (RECEPTIVE_SAMPLES - FRAME_SAMPLES) // 2) // FRAME_SAMPLES))


@dataclass(frozen=True)
class SpeakerActivity:
    """`active[g, s]`: the call's speaker s speaks in frame g of the call's grid (`segmentation.frame_ms`)."""

    active: np.ndarray  # (frames, speakers) bool

    def regions(self, speaker: int) -> list[tuple[int, int]]:
        """The spans (ms) where `speaker` speaks, in time order."""
        return _runs(self.active[:, speaker]) if speaker < self.active.shape[1] else []

    def overlap_ms(self) -> int:
        """How long two speak at once."""
        return sum(b - a for a, b in _runs(self.active.sum(axis=1) > 1))


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    # int(): frame_ms gives a numpy float, whose round() is an int only from NumPy 2 on
    return [(int(round(frame_ms(a))), int(round(frame_ms(b))))  # noqa: RUF046
            for a, b in zip(edges[::2], edges[1::2], strict=True)]


def _weights() -> np.ndarray:
    return np.hamming(CHUNK_FRAMES) + 1e-3  # never zero: a frame heard by one chunk's edge only still counts


def _spread(chunks: ChunkActivity, values: Iterable[np.ndarray], shape: tuple[int, ...] = ()) -> np.ndarray:
    """Per-frame values of each chunk, (CHUNK_FRAMES, *shape) one chunk at a time (an hour's chunks at once would be
    4 times the call's frames), weighted and averaged onto the call's grid: (frames, *shape)."""
    weights = _weights().reshape(-1, *([1] * len(shape)))
    total = np.zeros((chunks.frames(), *shape))
    norm = np.zeros((chunks.frames(), *([1] * len(shape))))
    for offset, value in zip(chunks.offsets, values, strict=True):
        total[offset : offset + CHUNK_FRAMES] += value * weights
        norm[offset : offset + CHUNK_FRAMES] += weights
    return total / np.maximum(norm, 1e-9)


def speaker_count(chunks: ChunkActivity) -> np.ndarray:
    """How many speak in each frame of the call's grid (0, 1 or 2)."""
    average = _spread(chunks, (active.sum(axis=1).astype(float) for active in chunks.active))
    return np.clip(np.rint(average), 0, MAX_OVERLAP).astype(int)


def window_coverage(frames: int, spans_ms: list[tuple[int, int]], labels: np.ndarray, speakers: int) -> np.ndarray:
    """(frames, speakers): how many windows of each speaker cover each frame of the call's grid."""
    coverage = np.zeros((frames, speakers))
    for (start, end), label in zip(spans_ms, labels, strict=True):
        coverage[frame_of(start) : frame_of(end) + 1, label] += 1
    return coverage


def frame_labels(coverage: np.ndarray, centers_ms: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The call speaker of each frame by the windows alone: the label most of the windows covering it have, else
    (no window there) the label of the window whose centre (`centers_ms`, ascending) is nearest."""
    middle = (frame_ms(np.arange(len(coverage))) + frame_ms(np.arange(1, len(coverage) + 1))) / 2
    after = np.clip(np.searchsorted(centers_ms, middle), 1, len(centers_ms) - 1) if len(centers_ms) > 1 else None
    if after is None:
        nearest = np.zeros(len(coverage), dtype=int)
    else:
        nearest = np.where(middle - centers_ms[after - 1] <= centers_ms[after] - middle, after - 1, after)
    return np.where(coverage.max(axis=1) > 0, np.argmax(coverage, axis=1), labels[nearest])


def map_local_speakers(chunks: ChunkActivity, coverage: np.ndarray, purity: float = PURITY) -> np.ndarray:
    """(chunks, 3): the call speaker of each chunk's local speaker, by the windows covering the frames where it
    speaks alone (`coverage` from `window_coverage`); NONE when no window covers them, MIXED when under `purity`
    of those windows' frames are of one speaker (the model heard two voices as one)."""
    alone = chunks.active & (chunks.active.sum(axis=2, keepdims=True) == 1)
    padded = np.zeros((chunks.frames(), coverage.shape[1]))
    padded[: min(len(coverage), len(padded))] = coverage[: len(padded)]
    mapping = np.full(alone.shape[::2], NONE, dtype=int)
    for c, offset in enumerate(chunks.offsets):
        votes = alone[c].T.astype(float) @ padded[offset : offset + CHUNK_FRAMES]  # (3, speakers)
        total = votes.sum(axis=1)
        pure = votes.max(axis=1) >= purity * np.maximum(total, 1e-9)
        mapping[c] = np.where(total > 0, np.where(pure, np.argmax(votes, axis=1), MIXED), NONE)
    return mapping


def speaker_activity(chunks: ChunkActivity, mapping: np.ndarray, by_frame: np.ndarray,
                     speakers: int) -> SpeakerActivity:
    """Who speaks in each frame: the `speaker_count(chunks)` call speakers most active there (see the module);
    a MIXED local speaker's frames go to the speaker the windows say (`by_frame` from `frame_labels`)."""
    padded = np.zeros(chunks.frames(), dtype=int)
    padded[: min(len(by_frame), len(padded))] = by_frame[: len(padded)]

    def local(c: int) -> np.ndarray:  # (CHUNK_FRAMES, speakers): which call speakers chunk c hears in each frame
        out = np.zeros((CHUNK_FRAMES, speakers))
        for k, speaker in enumerate(mapping[c]):
            if speaker >= 0:
                out[:, speaker] = np.maximum(out[:, speaker], chunks.active[c, :, k])
            elif speaker == MIXED:
                frames = np.flatnonzero(chunks.active[c, :, k])
                out[frames, padded[chunks.offsets[c] + frames]] = 1
        return out

    share = _spread(chunks, (local(c) for c in range(len(chunks.offsets))), (speakers,))
    count = np.minimum(speaker_count(chunks), speakers)
    ranks = np.argsort(np.argsort(-share, axis=1, kind="stable"), axis=1, kind="stable")
    return SpeakerActivity((ranks < count[:, None]) & (share > 0))
