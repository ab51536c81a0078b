"""Synthetic calls for the analysis tests: espeak-ng speech with known sentences and silences.

`make_call` builds one channel from sentences and silences and returns where each sentence
is; `write` encodes channels to a file (WAV, MP3, 8 kHz μ-law WAV...) with PyAV.
"""

from __future__ import annotations

import io
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import av
import numpy as np

RATE = 16_000
ESPEAK = shutil.which("espeak-ng")
SKIP_REASON = "espeak-ng is not installed (apt-get install espeak-ng): no synthetic speech"

SENTENCES = [
    "Thank you for calling customer service.",
    "I would like to change the address on my account.",
    "Please hold while I look that up for you.",
    "The weather is lovely this morning.",
    "Could you send me a copy of the invoice?",
    "Have a nice day and goodbye.",
]


def _to_16k(samples: np.ndarray, rate: int) -> np.ndarray:
    """Resample mono float32 with FFmpeg's resampler (PyAV), independently of analysis.decode."""
    frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1).astype(np.float32), format="fltp", layout="mono")
    frame.sample_rate = rate
    resampler = av.AudioResampler(format="fltp", layout="mono", rate=RATE)
    out = [f.to_ndarray()[0] for f in resampler.resample(frame)] + [
        f.to_ndarray()[0] for f in resampler.resample(None)
    ]
    return np.concatenate(out).astype(np.float32)


def speak(text: str, voice: str = "en-us", speed: int = 150) -> np.ndarray:
    """`text` spoken by espeak-ng, 16 kHz float32, leading and trailing silence trimmed."""
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "out.wav"
        subprocess.run([ESPEAK, "-w", str(wav), "-v", voice, "-s", str(speed), text], check=True, timeout=30)
        with av.open(str(wav)) as container:
            stream = container.streams.audio[0]
            rate = stream.codec_context.sample_rate
            pcm = np.concatenate([f.to_ndarray().reshape(-1) for f in container.decode(stream)])
    samples = pcm.astype(np.float32) / 32768.0 if pcm.dtype == np.int16 else pcm.astype(np.float32)
    samples = _to_16k(samples, rate)
    loud = np.flatnonzero(np.abs(samples) > 0.01)
    return samples[loud[0] : loud[-1] + 1] * 0.8 if len(loud) else samples


@dataclass
class Call:
    samples: np.ndarray  # 16 kHz float32
    sentences: list[tuple[int, int, str]]  # (start_ms, end_ms, text)
    silences: list[tuple[int, int]]  # (start_ms, end_ms) of the silences between sentences

    @property
    def text(self) -> str:
        return " ".join(t for _, _, t in self.sentences)


def silence(seconds: float, noise: float = 0.0, seed: int = 0) -> np.ndarray:
    n = int(seconds * RATE)
    if not noise:
        return np.zeros(n, dtype=np.float32)
    return (np.random.default_rng(seed).standard_normal(n) * noise).astype(np.float32)


def make_call(parts: list[str | float], noise: float = 0.0) -> Call:
    """A channel of sentences (str) and silences (float seconds), e.g. [0.5, "Hello.", 1.0, "Bye.", 0.5]."""
    pieces, sentences, silences, pos = [], [], [], 0
    for part in parts:
        chunk = speak(part) if isinstance(part, str) else silence(part)
        start, pos = pos, pos + len(chunk)
        ms = (start * 1000 // RATE, pos * 1000 // RATE)
        (sentences.append((*ms, part)) if isinstance(part, str) else silences.append(ms))
        pieces.append(chunk)
    samples = np.concatenate(pieces)
    if noise:
        samples = samples + silence(len(samples) / RATE, noise)
    inner = [s for s in silences if sentences and sentences[0][0] <= s[0] and s[1] <= sentences[-1][1]]
    return Call(samples=samples.astype(np.float32), sentences=sentences, silences=inner)


def pad_to(samples: np.ndarray, n: int) -> np.ndarray:
    return np.pad(samples, (0, max(0, n - len(samples))))


def write(path: Path, channels: list[np.ndarray], rate: int = RATE, codec: str = "pcm_s16le") -> Path:
    """Encode 16 kHz float32 channels to `path` at `rate` with `codec` (PyAV): wav, mp3, μ-law..."""
    n = max(len(c) for c in channels)
    data = np.stack([pad_to(c, n) for c in channels]).astype(np.float32)
    layout = {1: "mono", 2: "stereo", 6: "5.1"}[len(channels)]
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream(codec, rate=rate, layout=layout)
        frame = av.AudioFrame.from_ndarray(data, format="fltp", layout=layout)
        frame.sample_rate = RATE
        resampler = av.AudioResampler(format=stream.codec_context.format, layout=layout, rate=rate)
        for out in [*resampler.resample(frame), *resampler.resample(None)]:
            out.pts = None
            for packet in stream.encode(out):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return path


def read(source: Path | bytes) -> tuple[np.ndarray, int]:
    """A file (or its bytes) decoded at its own rate: (channels x samples float32, -1..1; rate). An s16 sample s
    reads as s / 32768."""
    with av.open(str(source) if isinstance(source, Path) else io.BytesIO(source)) as container:
        stream = container.streams.audio[0]
        rate = stream.codec_context.sample_rate
        layout = "mono" if stream.codec_context.channels == 1 else "stereo"
        resampler = av.AudioResampler(format="fltp", layout=layout, rate=rate)
        chunks = []
        for frame in container.decode(stream):
            frame.pts = None
            chunks += [f.to_ndarray() for f in resampler.resample(frame)]
        chunks += [f.to_ndarray() for f in resampler.resample(None)]
    return np.concatenate(chunks, axis=1), rate


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9']+", text.lower().replace("-", " "))


def wer(reference: str, hypothesis: str) -> float:
    """Word error rate: word-level edit distance over the reference's length (case, punctuation ignored)."""
    ref, hyp = _words(reference), _words(hypothesis)
    row = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        prev, row[0] = row[0], i
        for j, h in enumerate(hyp, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (r != h))
    return row[-1] / max(len(ref), 1)
