"""Real audio files for tests, made with PyAV and numpy (no fixtures checked in).

* :func:`make_audio` encodes a few seconds of a speech-like tone (a 160 Hz voice with harmonics,
  amplitude-modulated at ~4 Hz like syllables) in any of the six accepted formats.
* :func:`make_large_wav` streams a valid 16-bit PCM WAV of about ``size_bytes`` to disk quickly
  (a 1 GB file in a few seconds; memory stays flat).
* :func:`make_video_mp4` makes an MP4 with a video stream (and optionally an AAC track).
* :func:`truncate` cuts a file to a fraction of its size.
* :data:`PNG_BYTES`, :data:`JPEG_BYTES`: tiny valid images.

Encoders used (all in PyAV's bundled FFmpeg): mp3 → libmp3lame in the mp3 muxer (with its Xing/Info
header), wav → pcm_s16le, flac → flac, m4a → aac in the ``ipod`` muxer (moov at the end, like FFmpeg's
default; ``faststart=True`` puts it first), ogg → libopus in ogg (``ogg_codec="vorbis"`` or ``"flac"`` for
the other Ogg flavours), webm → libopus in webm.
"""

from __future__ import annotations

import base64
import math
import os
import struct
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

FORMATS = ("mp3", "wav", "flac", "m4a", "ogg", "webm")

# fmt -> (muxer, codec)
_ENCODING: dict[str, tuple[str, str]] = {
    "mp3": ("mp3", "libmp3lame"),
    "wav": ("wav", "pcm_s16le"),
    "flac": ("flac", "flac"),
    "m4a": ("ipod", "aac"),
    "ogg": ("ogg", "libopus"),
    "webm": ("webm", "libopus"),
}

# Smallest valid images (1x1), for "this is not audio" tests.
PNG_BYTES = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
JPEG_BYTES = base64.b64decode(
    "/9j/4AAQSkZJRgABAQEASABIAAD/2wBDAP//////////////////////////////////////////////////////////////////"
    "////////////////////wgALCAABAAEBAREA/8QAFBABAAAAAAAAAAAAAAAAAAAAAP/aAAgBAQABPxA="
)


def tone_samples(n: int, sample_rate: int, channels: int = 1, start: int = 0, amplitude: float = 0.3) -> bytes:
    """``n`` frames of interleaved signed 16-bit little-endian PCM of a speech-like tone."""
    t = np.arange(start, start + n, dtype=np.float64) / sample_rate
    two_pi = 2.0 * math.pi
    envelope = 0.5 + 0.5 * np.sin(two_pi * 4.0 * t)  # ~4 syllables a second
    voice = (np.sin(two_pi * 160.0 * t) + 0.5 * np.sin(two_pi * 320.0 * t) + 0.25 * np.sin(two_pi * 480.0 * t)
             + 0.12 * np.sin(two_pi * 1200.0 * t)) / 1.87
    value = np.trunc(32767 * amplitude * envelope * voice)
    # a slightly different level per channel, so stereo is really two channels
    levels = [value] + [np.trunc(value * 0.8)] * (channels - 1)
    return np.stack(levels, axis=1).astype("<i2").tobytes()


def _layout(channels: int) -> str:
    return {1: "mono", 2: "stereo"}.get(channels, f"{channels}c")


def make_audio(
    path: str | os.PathLike,
    fmt: str,
    seconds: float = 3.0,
    channels: int = 1,
    sample_rate: int = 16000,
    *,
    faststart: bool = False,
    ogg_codec: str = "opus",
) -> Path:
    """Encode ``seconds`` of tone into ``path`` as ``fmt`` (one of :data:`FORMATS`); return the path.

    The file's extension is not looked at: ``make_audio("x.mp3", "wav")`` writes WAV data to x.mp3.
    """
    path = Path(path)
    if fmt not in _ENCODING:
        raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")
    muxer, codec = _ENCODING[fmt]
    if fmt == "ogg":
        codec = {"opus": "libopus", "vorbis": "vorbis", "flac": "flac"}[ogg_codec]
    options = {"movflags": "+faststart"} if (fmt == "m4a" and faststart) else {}
    total = round(seconds * sample_rate)
    with av.open(str(path), mode="w", format=muxer, options=options) as container:
        stream = container.add_stream(codec, rate=sample_rate, layout=_layout(channels))
        if codec == "vorbis":
            stream.codec_context.options = {"strict": "experimental"}
        stream.time_base = Fraction(1, sample_rate)
        ctx = stream.codec_context
        frame_size = ctx.frame_size or 1024
        resampler = av.AudioResampler(
            format=ctx.format.name, layout=_layout(channels), rate=sample_rate, frame_size=frame_size
        )
        chunk = 4096
        pts = 0
        while pts < total:
            n = min(chunk, total - pts)
            frame = av.AudioFrame(format="s16", layout=_layout(channels), samples=n)
            frame.planes[0].update(tone_samples(n, sample_rate, channels, start=pts))
            frame.sample_rate = sample_rate
            frame.pts = pts
            frame.time_base = Fraction(1, sample_rate)
            pts += n
            for out in resampler.resample(frame):
                container.mux(stream.encode(out))
        for out in resampler.resample(None):
            container.mux(stream.encode(out))
        container.mux(stream.encode(None))
    return path


def wav_header(data_size: int, sample_rate: int = 16000, channels: int = 1, bits: int = 16) -> bytes:
    """A canonical 44-byte RIFF/WAVE header for ``data_size`` bytes of PCM."""
    block_align = channels * bits // 8
    return (
        b"RIFF"
        + struct.pack("<I", min(36 + data_size, 0xFFFFFFFF))
        + b"WAVEfmt "
        + struct.pack("<IHHIIHH", 16, 1, channels, sample_rate, sample_rate * block_align, block_align, bits)
        + b"data"
        + struct.pack("<I", min(data_size, 0xFFFFFFFF))
    )


def make_large_wav(
    path: str | os.PathLike, size_bytes: int, sample_rate: int = 16000, channels: int = 1
) -> Path:
    """Write a valid 16-bit PCM WAV of about ``size_bytes`` (header included) by streaming.

    A one-second block of tone is repeated (whole seconds, then a tail), so a 1 GB file takes a few
    seconds and ~32 KB of memory. WAV's 32-bit sizes cap a file at 4 GiB.
    """
    path = Path(path)
    block_align = channels * 2
    data_size = max(0, size_bytes - 44) // block_align * block_align
    if data_size > 0xFFFFFFFF - 36:
        raise ValueError("a WAV file cannot exceed 4 GiB")
    second = tone_samples(sample_rate, sample_rate, channels)
    with open(path, "wb") as f:
        f.write(wav_header(data_size, sample_rate, channels))
        left = data_size
        big = second * max(1, (1 << 20) // len(second))  # ~1 MiB blocks: fewer syscalls
        while left >= len(big):
            f.write(big)
            left -= len(big)
        while left >= len(second):
            f.write(second)
            left -= len(second)
        f.write(second[:left])
    return path


def make_video_mp4(path: str | os.PathLike, seconds: float = 1.0, with_audio: bool = True) -> Path:
    """An MP4 with a real H.264 (or MPEG-4) video stream, plus an AAC track when ``with_audio``."""
    path = Path(path)
    fps = 10
    width = height = 64
    codec = "libx264" if "libx264" in av.codecs_available else "mpeg4"
    with av.open(str(path), mode="w", format="mp4") as container:
        video = container.add_stream(codec, rate=fps)
        video.width, video.height, video.pix_fmt = width, height, "yuv420p"
        audio = None
        if with_audio:
            audio = container.add_stream("aac", rate=16000, layout="mono")
            resampler = av.AudioResampler(format="fltp", layout="mono", rate=16000, frame_size=1024)
        for i in range(int(seconds * fps)):
            frame = av.VideoFrame(width, height, "yuv420p")
            for p, plane in enumerate(frame.planes):
                plane.update(bytes([(i * 20 + p * 60) % 256]) * plane.buffer_size)
            frame.pts = i
            frame.time_base = Fraction(1, fps)
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        if audio is not None:
            n = int(seconds * 16000)
            frame = av.AudioFrame(format="s16", layout="mono", samples=n)
            frame.planes[0].update(tone_samples(n, 16000))
            frame.sample_rate = 16000
            frame.pts = 0
            frame.time_base = Fraction(1, 16000)
            for out in resampler.resample(frame) + resampler.resample(None):
                container.mux(audio.encode(out))
            container.mux(audio.encode(None))
    return path


def truncate(path: str | os.PathLike, keep_fraction: float) -> Path:
    """Cut ``path`` in place to ``keep_fraction`` (0..1) of its size; return the path."""
    path = Path(path)
    size = path.stat().st_size
    with open(path, "r+b") as f:
        f.truncate(int(size * keep_fraction))
    return path
