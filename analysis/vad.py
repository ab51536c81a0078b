"""Voice activity with Silero VAD, the ONNX copy that ships inside faster-whisper.

onnxruntime runs it; no torch, nothing downloaded. Long channels are processed in windows of
`WINDOW_S` seconds (bounded extra memory: the model's input copies are per window); a speech
region that runs across a window boundary is joined back into one.
"""

from __future__ import annotations

import faster_whisper
import numpy as np
from faster_whisper.vad import VadOptions, get_speech_timestamps

from .result import ModelUsed
from .types import SAMPLE_RATE, Audio, SpeechRegion

MODEL = ModelUsed(stage="vad", name="silero-vad (faster-whisper ONNX)", version=faster_whisper.__version__)

WINDOW_S = 600  # seconds of audio given to the model at a time
_JOIN_MS = 100  # regions this close to a window boundary on both sides are one region


def detect_speech(
    audio: Audio,
    channel: int,
    min_silence_ms: int = 300,
    *,
    threshold: float = 0.5,
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
