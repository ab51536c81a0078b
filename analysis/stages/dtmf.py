"""Keypad tones (DTMF) in a recording: where a caller typed digits, so that the served audio can be rid of them (a
tone's digit is as readable as a spoken one: any DTMF decoder reads the card back from the file).

A Goertzel filter per frame at the eight DTMF frequencies; a frame holds a key when the strongest frequency of each
group stands clear of the rest of its group, the two are within the allowed twist, and together they carry most of
the frame's energy (a vowel's harmonics spread theirs). Pure and deterministic; any sample rate of 8 kHz or more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from callscope.analysis.types import Audio

LOW_HZ = (697.0, 770.0, 852.0, 941.0)
HIGH_HZ = (1209.0, 1336.0, 1477.0, 1633.0)
KEYS = ("123A", "456B", "789C", "*0#D")  # KEYS[low][high]
WINDOW_MS = 40  # 25 Hz bins at any rate: the low group's frequencies are 73 Hz apart at the closest
HOP_MS = 20
MIN_FRAMES = 2  # a key held 60 ms or more (keypads send 70-100 ms; one frame alone is a vowel's chance)
MIN_LEVEL_DB = -45.0  # each tone's level (dBFS) at least: carriers' keypad tones are -10 to -30 dBFS
TWIST_DB = 8.0  # high group over low ("forward twist") at most; ITU-T Q.24 allows 8 dB
REVERSE_TWIST_DB = 4.0  # low over high at most (Q.24: 4 dB)
CLEAR_DB = 6.0  # the strongest frequency of a group over the next one in it
MIN_SHARE = 0.6  # of the frame's energy in the two tones: less is speech with a formant near a DTMF frequency
PAD_MS = 20  # filled beyond the frames that held the key: the tone's edges fall inside a hop


@dataclass(frozen=True)
class Tone:
    start_ms: int
    end_ms: int
    key: str
    channel: int


def _powers(frames: np.ndarray, rate: int, freqs: tuple[float, ...]) -> np.ndarray:
    """Each frame's power (a sine's amplitude squared over 2) at each of freqs: Goertzel, frames x freqs."""
    n = frames.shape[1]
    out = np.empty((frames.shape[0], len(freqs)))
    for k, f in enumerate(freqs):
        coeff = 2.0 * np.cos(2.0 * np.pi * f / rate)
        s1 = np.zeros(frames.shape[0])
        s2 = np.zeros(frames.shape[0])
        for x in frames.T:
            s1, s2 = x + coeff * s1 - s2, s1
        out[:, k] = (s1 * s1 + s2 * s2 - coeff * s1 * s2) * 2.0 / (n * n)
    return out


def _keys(samples: np.ndarray, rate: int) -> list[str | None]:
    """The key each frame (WINDOW_MS every HOP_MS) holds, or None."""
    window, hop = rate * WINDOW_MS // 1000, rate * HOP_MS // 1000
    if len(samples) < window:
        return []
    count = 1 + (len(samples) - window) // hop
    frames = np.lib.stride_tricks.sliding_window_view(samples.astype(np.float64), window)[::hop][:count]
    low, high = _powers(frames, rate, LOW_HZ), _powers(frames, rate, HIGH_HZ)
    energy = np.mean(frames * frames, axis=1) + 1e-12
    floor = 10 ** (MIN_LEVEL_DB / 10) / 2
    out: list[str | None] = []
    for f in range(count):
        lo, hi = np.sort(low[f]), np.sort(high[f])
        li, hi_i = int(np.argmax(low[f])), int(np.argmax(high[f]))
        twist = 10 * np.log10((hi[-1] + 1e-12) / (lo[-1] + 1e-12))
        ok = (lo[-1] >= floor and hi[-1] >= floor and -REVERSE_TWIST_DB <= twist <= TWIST_DB
              and lo[-1] >= lo[-2] * 10 ** (CLEAR_DB / 10) and hi[-1] >= hi[-2] * 10 ** (CLEAR_DB / 10)
              and (lo[-1] + hi[-1]) >= MIN_SHARE * energy[f])
        out.append(KEYS[li][hi_i] if ok else None)
    return out


def detect(audio: Audio) -> list[Tone]:
    """The keypad tones on each channel of audio, in time order: runs of MIN_FRAMES frames or more holding the same
    key, widened by PAD_MS."""
    tones = []
    for channel, samples in enumerate(audio.channels):
        keys = [*_keys(samples, audio.sample_rate), None]
        run = 0
        for f, key in enumerate(keys):
            if f and key is not None and key == keys[f - 1]:
                run += 1
                continue
            if f and keys[f - 1] is not None and run + 1 >= MIN_FRAMES:
                first = f - 1 - run
                tones.append(Tone(max(0, first * HOP_MS - PAD_MS), (f - 1) * HOP_MS + WINDOW_MS + PAD_MS,
                                  keys[f - 1] or "", channel))
            run = 0
    return sorted(tones, key=lambda t: (t.start_ms, t.channel))
