"""Local speaker activity with pyannote's segmentation-3.0 model, exported to ONNX: who is speaking, frame by frame,
inside 10 s chunks of a mono call.

`Segmenter` cuts the call into chunks of `CHUNK_SAMPLES` every `STEP_FRAMES` frames (one frame grid over the call;
a call under 10 s is one chunk padded with silence) and gives, per chunk and frame (16.875 ms), which of 3 *local*
speakers talk, at most 2 at once; diarize_by_voice.py maps them to the call's speakers. The model and its origin:
docs/analysis.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from callscope.analysis.models.files import OnnxModel, verified_embedded

EMBEDDED_MODEL = Path(__file__).resolve().parent / "segmentation-3.0.onnx"
EMBEDDED_SHA256 = "80d2141640e63ce75daedc4399f1e624ee378a2e31d49ff2a09021b74ffe3c80"
EMBEDDED_VERSION = "pyannote-segmentation-3.0"

CHUNK_SAMPLES = 160_000  # 10 s: the model's training length
FRAME_SAMPLES = 270  # one output frame every 16.875 ms (SincNet's stride 10 and three max-pools of 3)
RECEPTIVE_SAMPLES = 991  # what one frame hears (61.9 ms); its centre is RECEPTIVE_SAMPLES // 2 after its start
CHUNK_FRAMES = 589
LOCAL_SPEAKERS = 3
# the powerset classes as sets of local speakers, in the model's output order
POWERSET = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0], [1, 0, 1], [0, 1, 1]], dtype=bool)
STEP_FRAMES = 148  # chunks 2.5 s apart (4 cover each instant); pyannote's own default step is 1 s
BATCH = 8


def to_multilabel(log_probs: np.ndarray) -> np.ndarray:
    """The most probable powerset class of each frame as local speaker activity: (..., 7) -> (..., 3) bool."""
    return POWERSET[np.argmax(log_probs, axis=-1)]


def chunk_starts(samples: int, step_frames: int = STEP_FRAMES) -> list[int]:
    """Start samples of the chunks covering `samples`: every `step_frames` frames, the last one ending with the
    audio (moved back to a whole frame, the audio is padded after it); one chunk at 0 for audio under a chunk."""
    step = step_frames * FRAME_SAMPLES
    last = max(0, samples - CHUNK_SAMPLES)
    last -= last % FRAME_SAMPLES
    starts = list(range(0, last, step))
    return [*starts, last]


@dataclass(frozen=True)
class ChunkActivity:
    """Local speaker activity of the chunks of one call: `starts[c]` is chunk c's first sample, `active[c, f, k]`
    whether its local speaker k speaks in its frame f (frame f of chunk c is frame starts[c] // FRAME_SAMPLES + f
    of the call's grid)."""

    starts: np.ndarray  # (chunks,) int
    active: np.ndarray  # (chunks, CHUNK_FRAMES, LOCAL_SPEAKERS) bool

    @property
    def offsets(self) -> np.ndarray:
        """The call-grid frame of each chunk's frame 0."""
        return self.starts // FRAME_SAMPLES

    def frames(self) -> int:
        """Frames of the call's grid that the chunks cover."""
        return int(self.offsets[-1]) + CHUNK_FRAMES if len(self.starts) else 0


def frame_ms(frame: int | np.ndarray) -> np.ndarray:
    """The start (ms) of a frame of the call's grid: the middle of what it hears, minus half a step, so that
    consecutive frames tile the time line."""
    return (np.asarray(frame) * FRAME_SAMPLES + (RECEPTIVE_SAMPLES - FRAME_SAMPLES) // 2) / 16


class Segmenter(OnnxModel):
    """The ONNX segmentation model with its session."""

    STAGE = "speaker-segmentation"
    TITLE = "pyannote segmentation-3.0"

    def log_probs(self, chunks: np.ndarray) -> np.ndarray:
        """Powerset log-probabilities (n, frames, 7) of 16 kHz mono float32 chunks (n, samples)."""
        return self._run(np.asarray(chunks, dtype=np.float32)[:, None, :])

    def activity(self, wav: np.ndarray, step_frames: int = STEP_FRAMES) -> ChunkActivity:
        """Local speaker activity of the chunks of `wav` (16 kHz mono float32), see `chunk_starts`. The chunks are
        cut a batch at a time: all of an hour's, 4 hearing each instant, would be 0.9 GB."""
        starts = chunk_starts(len(wav), step_frames)
        batches = (np.stack([_chunk(wav, s) for s in starts[lo : lo + BATCH]]) for lo in range(0, len(starts), BATCH))
        active = np.concatenate([to_multilabel(self.log_probs(batch)) for batch in batches])
        return ChunkActivity(np.array(starts, dtype=int), active)


def _chunk(wav: np.ndarray, start: int) -> np.ndarray:
    """CHUNK_SAMPLES of `wav` from `start`, padded with silence after its end."""
    out = np.zeros(CHUNK_SAMPLES, dtype=np.float32)
    part = wav[start : start + CHUNK_SAMPLES]
    out[: len(part)] = part
    return out


def load_segmenter(threads: int = 2) -> Segmenter:
    """The embedded segmentation model after checking its sha256; raises FileNotFoundError or ValueError."""
    digest = verified_embedded(EMBEDDED_MODEL, EMBEDDED_SHA256, "segmentation model")
    return Segmenter(EMBEDDED_MODEL, threads=threads, version=f"{EMBEDDED_VERSION}+{digest[:12]}")
