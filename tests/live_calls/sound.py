"""The audio of the live-call tests: G.711 μ-law written as a carrier writes it, and a two-party call of espeak-ng
speech laid out on a timeline (tests/analysis/speech.py speaks)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tests.analysis import speech

RATE = speech.RATE


def mulaw_encode(samples: np.ndarray) -> bytes:
    """16-bit samples as G.711 μ-law bytes (the standard's segment encoding, bias 0x84, bits inverted)."""
    x = samples.astype(np.int32)
    sign = np.where(x < 0, 0x80, 0)
    magnitude = np.minimum(np.abs(x), 32635) + 0x84
    exponent = np.floor(np.log2(magnitude)).astype(np.int32) - 7
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    return (~(sign | (exponent << 4) | mantissa) & 0xFF).astype(np.uint8).tobytes()


@dataclass
class TwoParty:
    agent: np.ndarray  # 16 kHz float32, both the same length
    customer: np.ndarray

    def pcm16(self, rate: int = RATE) -> tuple[np.ndarray, np.ndarray]:
        """Both tracks as int16 at `rate` (8 kHz: every other sample of a low-passed copy)."""
        out = []
        for track in (self.agent, self.customer):
            if rate == 8000:
                kernel = np.sinc(np.arange(-16, 17) / 2) * np.hamming(33) / 2
                track = np.convolve(track, kernel, mode="same")[::2]
            out.append(np.clip(np.round(track * 32767), -32768, 32767).astype(np.int16))
        return out[0], out[1]


def two_party(script: list[tuple[str, float, str]], tail: float = 1.0) -> TwoParty:
    """(who, pause before, sentence) in the order said: one speaker at a time, each sentence after the pause."""
    tracks: dict[str, list[np.ndarray]] = {"agent": [], "customer": []}
    at = 0
    for who, pause, sentence in script:
        spoken = speech.speak(sentence)
        start = at + int(pause * RATE)
        for name, parts in tracks.items():
            parts.append(np.zeros(start - at, dtype=np.float32))
            parts.append(spoken if name == who else np.zeros(len(spoken), dtype=np.float32))
        at = start + len(spoken)
    end = np.zeros(int(tail * RATE), dtype=np.float32)
    return TwoParty(np.concatenate([*tracks["agent"], end]), np.concatenate([*tracks["customer"], end]))
