"""Speaker embeddings: resemblyzer's GE2E voice encoder, exported to ONNX, with its mel front end in numpy.

The embedded model is `models/voice_encoder.onnx`: the `pretrained.pt` that the PyPI package resemblyzer 0.1.4
ships (Apache-2.0, see `models/NOTICE`), a 3-layer LSTM over 40-band mel frames that maps a 1.6 s partial
utterance to an L2-normalised 256-d embedding. `scripts/export_speaker_encoder.py` made it and checked it
against resemblyzer itself. It is shipped rather than exported on first use so that the runtime needs neither
torch nor resemblyzer (librosa, numba, webrtcvad); its sha256 is checked at load so a damaged copy fails loudly.

The front end reproduces resemblyzer's `wav_to_mel_spectrogram` (librosa `melspectrogram` with its defaults:
centred, zero-padded periodic-Hann STFT, power 2, Slaney mel filters; a *power* mel, no log) and its volume
normalisation to -30 dBFS (increase only).
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import numpy as np

from callscope.analysis.models.files import OnnxModel, verified_embedded
from callscope.analysis.types import SAMPLE_RATE
from callscope.config import Settings

EMBEDDED_MODEL = Path(__file__).resolve().parent / "voice_encoder.onnx"
EMBEDDED_SHA256 = "5318e5ee14833374eb9244b134ec3bc2b8af7d1365561e77c48e6f1142a1584f"
EMBEDDED_VERSION = "resemblyzer-0.1.4"

N_FFT = 400  # 25 ms window
HOP = 160  # 10 ms step: one mel frame per HOP samples
N_MELS = 40
PARTIAL_FRAMES = 160  # 1.6 s: the length of one partial utterance the model embeds
PARTIAL_SAMPLES = PARTIAL_FRAMES * HOP
EMBEDDING_DIM = 256
TARGET_DBFS = -30.0
_INT16_MAX = 2**15 - 1


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale (librosa's default, htk=False): linear below 1 kHz, logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0
    return np.where(hz >= min_log_hz, min_log_mel + np.log(np.maximum(hz, 1e-10) / min_log_hz) / logstep, hz / f_sp)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    mel = np.asarray(mel, dtype=np.float64)
    f_sp, min_log_hz = 200.0 / 3, 1000.0
    min_log_mel, logstep = min_log_hz / f_sp, math.log(6.4) / 27.0
    return np.where(mel >= min_log_mel, min_log_hz * np.exp(logstep * (mel - min_log_mel)), f_sp * mel)


@lru_cache(maxsize=1)
def mel_filterbank() -> np.ndarray:
    """librosa.filters.mel(sr=16000, n_fft=400, n_mels=40): triangular, Slaney-normalised; (40, 201) float32."""
    fft_freqs = np.fft.rfftfreq(N_FFT, 1.0 / SAMPLE_RATE)
    mel_f = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(SAMPLE_RATE / 2), N_MELS + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fft_freqs[None, :]
    lower = -ramps[:-2] / fdiff[:-1, None]
    upper = ramps[2:] / fdiff[1:, None]
    weights = np.maximum(0.0, np.minimum(lower, upper))
    weights *= (2.0 / (mel_f[2 : N_MELS + 2] - mel_f[:N_MELS]))[:, None]
    return weights.astype(np.float32)


@lru_cache(maxsize=1)
def _window() -> np.ndarray:
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)  # periodic Hann


def mel_spectrogram(wav: np.ndarray) -> np.ndarray:
    """resemblyzer's `wav_to_mel_spectrogram`: power mel frames, (1 + len(wav) // HOP, 40) float32."""
    wav = np.asarray(wav, dtype=np.float32)
    padded = np.pad(wav, N_FFT // 2)
    n_frames = 1 + (len(padded) - N_FFT) // HOP
    if n_frames < 1:
        return np.zeros((0, N_MELS), dtype=np.float32)
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP][:n_frames]
    power = np.abs(np.fft.rfft(frames * _window(), axis=1)) ** 2
    return (power.astype(np.float32) @ mel_filterbank().T).astype(np.float32)


def normalize_volume(wav: np.ndarray, target_dbfs: float = TARGET_DBFS) -> np.ndarray:
    """Raise the level of `wav` to `target_dbfs` (never lower it), as resemblyzer's preprocessing does."""
    wav = np.asarray(wav, dtype=np.float32)
    rms = float(np.sqrt(np.mean((wav.astype(np.float64) * _INT16_MAX) ** 2))) if len(wav) else 0.0
    if rms <= 0.0:
        return wav
    change = target_dbfs - 20 * math.log10(rms / _INT16_MAX)
    return wav if change < 0 else (wav * 10 ** (change / 20)).astype(np.float32)


def partial_slices(n_samples: int, rate: float = 1.3, min_coverage: float = 0.75) -> list[int]:
    """First mel frame of each partial utterance that resemblyzer's `embed_utterance` would take."""
    n_frames = math.ceil((n_samples + 1) / HOP)
    step = round((SAMPLE_RATE / rate) / HOP)
    starts = list(range(0, max(1, n_frames - PARTIAL_FRAMES + step + 1), step))
    coverage = (n_samples - starts[-1] * HOP) / PARTIAL_SAMPLES
    if coverage < min_coverage and len(starts) > 1:
        starts.pop()
    return starts


class SpeakerEncoder(OnnxModel):
    """The ONNX voice encoder with its session; embeddings are L2-normalised float32 vectors of 256."""

    STAGE = "speaker-embedding"
    TITLE = "GE2E voice encoder"

    def embed_mels(self, mels: np.ndarray, batch: int = 64) -> np.ndarray:
        """Embeddings of partial utterances `mels` (n, 160, 40) -> (n, 256)."""
        mels = np.asarray(mels, dtype=np.float32)
        if len(mels) == 0:
            return np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
        parts = [self._run(mels[i : i + batch]) for i in range(0, len(mels), batch)]
        return np.concatenate(parts).astype(np.float32)

    def embed_partials(self, wav: np.ndarray, starts: list[int]) -> np.ndarray:
        """Embeddings of the 1.6 s partials of one volume-normalised span `wav` beginning at mel frames `starts`.

        The span is zero-padded up to the last partial (as resemblyzer pads an utterance).
        """
        end = (max(starts) + PARTIAL_FRAMES) * HOP if starts else 0
        wav = np.pad(np.asarray(wav, dtype=np.float32), (0, max(0, end - len(wav))))
        mel = mel_spectrogram(wav)
        return self.embed_mels(np.stack([mel[s : s + PARTIAL_FRAMES] for s in starts])) if starts else \
            np.zeros((0, EMBEDDING_DIM), dtype=np.float32)

    def embed_utterance(self, wav: np.ndarray) -> np.ndarray:
        """resemblyzer's `embed_utterance` of a volume-normalised `wav`: the normalised mean of its partials."""
        partials = self.embed_partials(wav, partial_slices(len(wav)))
        return l2_normalize(partials.mean(axis=0))


def l2_normalize(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


def load_speaker_encoder(settings: Settings) -> SpeakerEncoder:
    """The configured encoder (`settings.speaker_encoder_model`, an ONNX file with the same input and output),
    else the embedded one after checking its sha256. Raises FileNotFoundError or ValueError saying what is wrong.
    """
    threads = settings.analysis_threads
    if settings.speaker_encoder_model:
        path = Path(settings.speaker_encoder_model).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"speaker encoder {path} (CALLSCOPE_SPEAKER_ENCODER_MODEL) does not exist")
        return SpeakerEncoder(path, threads=threads)
    digest = verified_embedded(EMBEDDED_MODEL, EMBEDDED_SHA256, "speaker encoder")
    return SpeakerEncoder(EMBEDDED_MODEL, threads=threads, version=f"{EMBEDDED_VERSION}+{digest[:12]}")
