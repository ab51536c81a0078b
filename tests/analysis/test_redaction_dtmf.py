"""Keypad tones (analysis/stages/dtmf.py): every key found at phone levels, alone and with speech over it, through
8 kHz μ-law as carriers record it; none in speech; none left in the audio served with them filled."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from callscope.analysis.stages import dtmf
from callscope.analysis.stages.audio_redaction import merged, redact_audio_file
from callscope.analysis.stages.decode import decode
from callscope.analysis.types import Audio
from tests.analysis import speech

KEYS = "".join(dtmf.KEYS)
TONE_MS, GAP_MS = 80, 80
START_MS = 500


def keypad(keys: str, level_db: float, rate: int = speech.RATE) -> np.ndarray:
    """keys typed from START_MS: each TONE_MS of its two frequencies (each at level_db dBFS peak), GAP_MS apart."""
    out = np.zeros(rate * (START_MS + len(keys) * (TONE_MS + GAP_MS) + 500) // 1000, dtype=np.float32)
    amplitude = 10 ** (level_db / 20)
    t = np.arange(rate * TONE_MS // 1000) / rate
    for i, key in enumerate(keys):
        row = next(r for r, keys_ in enumerate(dtmf.KEYS) if key in keys_)
        low, high = dtmf.LOW_HZ[row], dtmf.HIGH_HZ[dtmf.KEYS[row].index(key)]
        at = rate * (START_MS + i * (TONE_MS + GAP_MS)) // 1000
        out[at:at + len(t)] = amplitude * (np.sin(2 * np.pi * low * t) + np.sin(2 * np.pi * high * t))
    return out


def phone(tmp_path: Path, samples: np.ndarray, name: str = "call.wav") -> Path:
    return speech.write(tmp_path / name, [samples], rate=8000, codec="pcm_mulaw")


@pytest.mark.parametrize("level_db", [-10, -20, -30])
def test_every_key_is_found_at_phone_levels_through_mu_law(tmp_path, level_db):
    tones = dtmf.detect(decode(phone(tmp_path, keypad(KEYS * 2, level_db))))
    assert "".join(t.key for t in tones) == KEYS * 2
    for i, tone in enumerate(tones):  # each covers its key's time
        start = START_MS + i * (TONE_MS + GAP_MS)
        assert tone.start_ms <= start and tone.end_ms >= start + TONE_MS


@pytest.mark.skipif(not speech.ESPEAK, reason=speech.SKIP_REASON)
def test_keys_under_speech_are_found_and_speech_alone_holds_none(tmp_path):
    talk = np.concatenate([speech.speak(s) for s in speech.SENTENCES[:4]])
    assert dtmf.detect(decode(phone(tmp_path, talk, "talk.wav"))) == []
    tones = keypad(KEYS * 3, -20)
    n = max(len(tones), len(talk))
    mixed = speech.pad_to(tones, n) + 0.3 * speech.pad_to(talk, n)  # speech 8 dB under the tones (RMS)
    found = dtmf.detect(decode(phone(tmp_path, mixed.astype(np.float32))))
    assert "".join(t.key for t in found) == KEYS * 3


def test_the_served_audio_keeps_no_tone_window(tmp_path):
    source = phone(tmp_path, keypad(KEYS * 3, -15))
    tones = dtmf.detect(decode(source))
    assert len(tones) == 48
    served = tmp_path / "served.flac"
    redact_audio_file(source, served, merged((t.start_ms, t.end_ms) for t in tones), "tone")
    assert dtmf.detect(decode(served)) == []  # 0 of 48 tone windows left (the 1 kHz fill is no key)
    samples = decode(served).channels[0]
    audio = Audio(channels=(samples,))
    assert audio.duration_ms == decode(source).duration_ms


def test_a_tone_shorter_than_two_frames_or_a_single_frequency_is_no_key():
    rate = speech.RATE
    t = np.arange(rate) / rate
    single = (0.1 * np.sin(2 * np.pi * 770 * t)).astype(np.float32)  # one group only: a hum, a ring tone
    assert dtmf.detect(Audio(channels=(single,))) == []
    blip = keypad("5", -10)
    blip[rate * (START_MS + 30) // 1000:] = 0  # 30 ms
    assert dtmf.detect(Audio(channels=(blip,))) == []


REAL = Path.home() / ".cache" / "callscope" / "real-speech" / "clips"


@pytest.mark.skipif(not REAL.is_dir(), reason="no real speech: scripts/fetch_real_speech.py")
def test_real_speech_holds_no_key():
    clips = sorted(p for p in REAL.iterdir() if p.suffix in (".wav", ".flac"))
    assert clips
    assert [(c.name, t) for c in clips for t in dtmf.detect(decode(c))] == []
