"""Audio frames as they arrive (G.711 μ-law or 16-bit PCM, 8 or 16 kHz, 1 or 2 interleaved channels) turned into
what the rest of a live call uses: 16-bit samples per track at the frame's own rate (kept as the recording) and
16 kHz float samples per track (what the recogniser hears). 8 kHz is raised to 16 kHz by a polyphase low-pass filter
that keeps its state from frame to frame, so 20 ms frames join without a click at each seam."""

from __future__ import annotations

import numpy as np
from scipy.signal import firwin, lfilter, lfilter_zi

TARGET_RATE = 16_000


def _mulaw_table() -> np.ndarray:
    """G.711 μ-law byte -> 16-bit linear sample (ITU-T G.711's expansion; bytes are stored inverted)."""
    codes = ~np.arange(256, dtype=np.int32) & 0xFF
    sign = codes & 0x80
    exponent = (codes >> 4) & 0x07
    mantissa = codes & 0x0F
    magnitude = (((mantissa << 3) + 0x84) << exponent) - 0x84
    return np.where(sign != 0, -magnitude, magnitude).astype(np.int16)


MULAW = _mulaw_table()


def decode(frame: bytes, encoding: str, channels: int) -> list[np.ndarray]:
    """One frame as int16 samples per channel; the frame holds whole samples of every channel (the caller checks)."""
    if encoding == "mulaw":
        samples = MULAW[np.frombuffer(frame, dtype=np.uint8)]
    elif encoding == "pcm16":
        samples = np.frombuffer(frame, dtype="<i2").astype(np.int16)
    else:
        raise ValueError(f"unknown encoding {encoding}")
    return [samples[c::channels] for c in range(channels)]


class Upsampler:
    """8 kHz -> 16 kHz for one track, frame by frame: zeros between the samples, then a low-pass FIR at the old
    Nyquist frequency whose state carries over between frames."""

    TAPS = firwin(63, 0.5) * 2  # gain 2 makes up for the zeros put in

    def __init__(self) -> None:
        self._state = lfilter_zi(self.TAPS, 1.0) * 0.0

    def __call__(self, samples: np.ndarray) -> np.ndarray:
        stuffed = np.zeros(2 * len(samples), dtype=np.float64)
        stuffed[::2] = samples
        out, self._state = lfilter(self.TAPS, 1.0, stuffed, zi=self._state)
        return out.astype(np.float32)


class TrackAudio:
    """One track's samples at `rate` in, 16 kHz float in [-1, 1) out."""

    def __init__(self, rate: int):
        if rate not in (8000, TARGET_RATE):
            raise ValueError(f"unsupported sample rate {rate}")
        self.rate = rate
        self._upsample = Upsampler() if rate == 8000 else None

    def to_16k(self, samples: np.ndarray) -> np.ndarray:
        floats = samples.astype(np.float32) / 32768.0
        return self._upsample(floats) if self._upsample is not None else floats
