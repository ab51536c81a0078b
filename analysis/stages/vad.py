"""Voice activity with Silero VAD, the ONNX copy that ships inside faster-whisper.

onnxruntime runs it; no torch, nothing downloaded. Long channels are processed in windows of
`WINDOW_S` seconds (bounded extra memory: the model's input copies are per window); a speech
region that runs across a window boundary is joined back into one.
"""

from __future__ import annotations

import faster_whisper
import numpy as np
from faster_whisper.vad import VadOptions, get_speech_timestamps

from callscope.analysis.result import ModelUsed
from callscope.analysis.types import SAMPLE_RATE, Audio, SpeechRegion

MODEL = ModelUsed(stage="vad", name="silero-vad (faster-whisper ONNX)", version=faster_whisper.__version__)

WINDOW_S = 600  # seconds of audio given to the model at a time
# Silero's speech probability from which a stereo channel's audio is speech. A channel holds one voice, and its
# regions move that voice's word times (timing.py): at 0.5 a prompt's quiet lead-in and last syllable fall
# outside. Measured on the "fit" stereo and phone-band dialogue (benchmarks/real_speech.py, DER): 0.5: 5.5 / 5.1 %,
# 0.3-0.45: 4.2-4.4 %, 0.25: 4.4 / 4.6 %, 0.15: 15 % (the other party's bleed becomes speech); 0.35 is the
# middle of the plateau. Mono keeps 0.5: its regions place the speaker-embedding windows (diarize_by_voice.py).
STEREO_THRESHOLD = 0.35
THRESHOLD = 0.5  # Silero's own default, for mono
_JOIN_MS = 100  # regions this close to a window boundary on both sides are one region


def call_speech(audio: Audio) -> list[SpeechRegion]:
    """The speech regions of every channel of a call (STEREO_THRESHOLD on a call of several channels)."""
    threshold = STEREO_THRESHOLD if len(audio.channels) > 1 else THRESHOLD
    return [region for channel in range(len(audio.channels))
            for region in detect_speech(audio, channel, threshold=threshold)]


def detect_speech(
    audio: Audio,
    channel: int,
    min_silence_ms: int = 300,
    *,
    threshold: float = THRESHOLD,
    speech_pad_ms: int = 30,
    min_speech_ms: int = 100,
) -> list[SpeechRegion]:
    """Speech regions of one channel, in time order, in milliseconds from the start.

    A silence shorter than `min_silence_ms` does not split a region; each region is padded by
    `speech_pad_ms` on both sides (small, so that region gaps match the real silences), and
    regions shorter than `min_speech_ms` (clicks) are dropped.
    """
    if audio.sample_rate != SAMPLE_RATE:
        raise ValueError(f"VAD needs {SAMPLE_RATE} Hz audio, got {audio.sample_rate}")
    samples = np.asarray(audio.channels[channel], dtype=np.float32)
    options = VadOptions(
        threshold=threshold,
        min_silence_duration_ms=min_silence_ms,
        speech_pad_ms=speech_pad_ms,
        min_speech_duration_ms=min_speech_ms,
    )
    window = WINDOW_S * SAMPLE_RATE
    spans: list[list[int]] = []  # [start_ms, end_ms]
    for offset in range(0, len(samples), window):
        part = samples[offset : offset + window]
        if len(part) < 512:  # shorter than one model window: nothing to judge
            continue
        for ts in get_speech_timestamps(part, options, sampling_rate=SAMPLE_RATE):
            start = (offset + ts["start"]) * 1000 // SAMPLE_RATE
            end = (offset + ts["end"]) * 1000 // SAMPLE_RATE
            boundary = offset * 1000 // SAMPLE_RATE
            if spans and offset and start - boundary <= _JOIN_MS and boundary - spans[-1][1] <= _JOIN_MS:
                spans[-1][1] = end
            else:
                spans.append([start, end])
    return [SpeechRegion(channel=channel, start_ms=s, end_ms=e) for s, e in spans if e > s]
