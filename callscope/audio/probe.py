"""Probe an uploaded recording with a real demuxer (PyAV / FFmpeg) — never trust its name.

:func:`probe` opens the file with only the demuxers of the six accepted formats (MP3, WAV, FLAC, M4A, OGG, WebM;
only the ``file`` protocol), decides which it really is from the demuxer and codec, reads every packet of the
audio stream (flat memory) to measure the duration and catch truncated or corrupt files, decodes the first packets,
and returns an :class:`AudioInfo`. Anything else raises :class:`~callscope.errors.ValidationFailed` (422). The
format mapping and the truncation checks per format: docs/api.md.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Literal

import av
import av.error
import av.logging
from pydantic import BaseModel, ConfigDict

from callscope.errors import ValidationFailed

AudioFormat = Literal["mp3", "wav", "flac", "m4a", "ogg", "webm"]

FORMATS: tuple[AudioFormat, ...] = ("mp3", "wav", "flac", "m4a", "ogg", "webm")

CONTENT_TYPES: dict[AudioFormat, str] = {
    "mp3": "audio/mpeg",
    "wav": "audio/wav",
    "flac": "audio/flac",
    "m4a": "audio/mp4",
    "ogg": "audio/ogg",
    "webm": "audio/webm",
}

EMPTY = "File is empty"
UNSUPPORTED = "Unsupported audio format: accepted formats are MP3, WAV, FLAC, M4A, OGG and WebM"
CORRUPT = "Audio file is truncated or corrupt"
NO_AUDIO = "File has no audio stream"

TRUNCATION_TOLERANCE_S = 0.5
"""A header may declare at most this much more audio than the packets present hold."""

_EXACT_TOLERANCE_S = 0.02
"""FLAC's STREAMINFO counts samples exactly, and so does demuxing its frames."""

_PADDING_SLACK_S = 0.1
"""Measured packets may fall this much short of the header (encoder delay/padding, edit lists) and the
header's duration is still the one reported."""

_DECODE_CHECK_PACKETS = 8
"""The first packets decoded to prove the codec data is real (the rest is only demuxed)."""

# FFmpeg demuxer names (as AVInputFormat.name) -> format, and the codecs accepted in each.
# None: any audio codec FFmpeg can decode.
_DEMUXERS: dict[str, tuple[AudioFormat, frozenset[str] | None]] = {
    "mp3": ("mp3", frozenset({"mp3", "mp2", "mp1"})),
    "wav": ("wav", None),
    "flac": ("flac", frozenset({"flac"})),
    "mov,mp4,m4a,3gp,3g2,mj2": ("m4a", frozenset({"aac", "alac"})),
    "ogg": ("ogg", frozenset({"vorbis", "opus", "flac"})),
    "matroska,webm": ("webm", frozenset({"opus", "vorbis"})),
}
_FORMAT_WHITELIST = ",".join(_DEMUXERS)

# Decoder names PyAV reports -> codec names.
_DECODER_ALIASES = {"mp3float": "mp3", "mp2float": "mp2", "mp1float": "mp1", "aac_fixed": "aac", "libopus": "opus"}

_EXTENSIONS: dict[str, AudioFormat] = {
    ".mp3": "mp3",
    ".wav": "wav",
    ".wave": "wav",
    ".flac": "flac",
    ".m4a": "m4a",
    ".mp4": "m4a",
    ".ogg": "ogg",
    ".oga": "ogg",
    ".opus": "ogg",
    ".webm": "webm",
}

# PyAV ignores FFmpeg's log by default; make sure it stays quiet (garbage uploads make FFmpeg chatty).
av.logging.set_level(None)
av.logging.set_libav_level(av.logging.PANIC)


class AudioInfo(BaseModel):
    """What the probe found: the real format, never the one the file name claims."""

    model_config = ConfigDict(frozen=True)

    format: AudioFormat
    codec: str
    duration_ms: int
    sample_rate: int
    channels: int
    bit_rate: int | None = None
    size_bytes: int

    @property
    def content_type(self) -> str:
        return CONTENT_TYPES[self.format]


def format_from_filename(name: str | None) -> AudioFormat | None:
    """The format a file name's extension claims (only to pick a size limit while streaming an upload)."""
    if not name:
        return None
    return _EXTENSIONS.get(os.path.splitext(name.strip().lower())[1])


def _looks_like_audio_container(head: bytes) -> bool:
    """Does the file start like one of the six containers (so a failed open means damaged, not foreign)?"""
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return True
    if head[:4] in (b"fLaC", b"OggS", b"\x1aE\xdf\xa3"):
        return True
    if head[4:8] == b"ftyp":
        return True
    if head[:3] == b"ID3":
        return True
    # MPEG audio frame sync (11 bits), layer bits not 00
    return len(head) >= 2 and head[0] == 0xFF and (head[1] & 0xE0) == 0xE0 and (head[1] & 0x06) != 0


def _wav_data_missing(path: Path, size: int) -> bool:
    """Does the WAV's ``data`` chunk promise more bytes than the file holds?

    FFmpeg clamps the data size to the file, so the header is read here. A size of 0 or 0xFFFFFFFF is a
    streaming writer's marker ("until the end of the file") and promises nothing.
    """
    with open(path, "rb") as f:
        header = f.read(12)
        if header[:4] != b"RIFF" or header[8:12] != b"WAVE":
            return False  # RF64/BW64 and friends: FFmpeg's own checks only
        offset = 12
        for _ in range(64):
            f.seek(offset)
            chunk = f.read(8)
            if len(chunk) < 8:
                return True  # the chunk list runs past the end of the file
            chunk_id, chunk_size = chunk[:4], struct.unpack("<I", chunk[4:])[0]
            if chunk_id == b"data":
                if chunk_size in (0, 0xFFFFFFFF):
                    return False
                return offset + 8 + chunk_size > size
            offset += 8 + chunk_size + (chunk_size & 1)
    return False


def _ogg_crc(data: bytes) -> int:
    crc = 0
    for byte in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _OGG_CRC_TABLE[((crc >> 24) & 0xFF) ^ byte]
    return crc


def _make_ogg_crc_table() -> list[int]:
    table = []
    for i in range(256):
        r = i << 24
        for _ in range(8):
            r = ((r << 1) ^ 0x04C11DB7) & 0xFFFFFFFF if r & 0x80000000 else (r << 1) & 0xFFFFFFFF
        table.append(r)
    return table


_OGG_CRC_TABLE = _make_ogg_crc_table()


def _ogg_ends_with_complete_page(path: Path, size: int) -> bool:
    """Does the Ogg file end exactly with a whole page whose checksum is right?

    FFmpeg drops a cut-off last page silently (and takes the duration from the last whole page), so a
    truncated Ogg would pass as a shorter file. A page is at most 27 + 255 + 255 * 255 bytes.
    """
    tail_size = min(size, 27 + 255 + 255 * 255)
    with open(path, "rb") as f:
        f.seek(size - tail_size)
        tail = f.read(tail_size)
    at = tail.rfind(b"OggS")
    while at >= 0:
        header = tail[at : at + 27]
        if len(header) == 27 and header[4] == 0:
            segments = header[26]
            table = tail[at + 27 : at + 27 + segments]
            end = at + 27 + segments + sum(table)
            if len(table) == segments and end == len(tail):
                page = bytearray(tail[at:end])
                crc = struct.unpack("<I", bytes(page[22:26]))[0]
                page[22:26] = b"\0\0\0\0"
                if _ogg_crc(bytes(page)) == crc:
                    return True
        at = tail.rfind(b"OggS", 0, at)
    return False


def _codec_name(stream: av.audio.stream.AudioStream) -> str:
    name = stream.codec_context.codec.name
    return _DECODER_ALIASES.get(name, name)


def _seconds(value: int | None, time_base) -> float | None:  # Fraction
    if value is None or time_base is None:
        return None
    return float(value * time_base)


def probe(path: Path) -> AudioInfo:
    """Probe the local file ``path``; raise :class:`ValidationFailed` when it is not acceptable audio."""
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        raise ValidationFailed(EMPTY)
    with open(path, "rb") as f:
        head = f.read(16)
    # Data a permissive demuxer (e.g. MP3's) accepted but in which no audio is found is "unsupported"
    # unless the file starts like one of the six containers.
    broken = CORRUPT if _looks_like_audio_container(head) else UNSUPPORTED

    with _open(path, broken) as container:
        demuxer = container.format.name
        fmt, codecs = _DEMUXERS[demuxer]
        stream, codec = _audio_stream(container, codecs)
        ctx = stream.codec_context
        if not ctx.sample_rate or not ctx.channels:
            raise ValidationFailed(broken)
        first_pts, end_pts = _demux_all(container, stream, demuxer, broken)
        if demuxer == "wav" and _wav_data_missing(path, size):
            raise ValidationFailed(CORRUPT)
        if demuxer == "ogg" and not _ogg_ends_with_complete_page(path, size):
            raise ValidationFailed(CORRUPT)
        duration = _duration(container, stream, fmt, first_pts, end_pts)
        return AudioInfo(
            format=fmt,
            codec=codec,
            duration_ms=max(0, round(duration * 1000)),
            sample_rate=ctx.sample_rate,
            channels=ctx.channels,
            bit_rate=ctx.bit_rate or container.bit_rate or None,
            size_bytes=size,
        )


def _open(path: Path, broken: str) -> av.container.InputContainer:
    """The file opened by one of the six demuxers and the ``file`` protocol only."""
    try:
        return av.open(
            str(path),
            mode="r",
            # max_size: the WAV demuxer's packet size (default 4 KiB) — 1 MiB packets make a 1 GB WAV a
            # thousand packets instead of a quarter million.
            options={"format_whitelist": _FORMAT_WHITELIST, "protocol_whitelist": "file", "max_size": str(1 << 20)},
        )
    except (av.error.FFmpegError, UnicodeDecodeError, ValueError):
        raise ValidationFailed(broken) from None


def _audio_stream(container: av.container.InputContainer, codecs: frozenset[str] | None) -> tuple[
        av.audio.stream.AudioStream, str]:
    """The first audio stream and its codec, of a container without video (cover art aside) and in a codec the
    container's format accepts."""
    streams = list(container.streams)
    if any(s.type == "video" and not s.disposition & av.stream.Disposition.attached_pic for s in streams):
        raise ValidationFailed(UNSUPPORTED)
    audio = [s for s in streams if s.type == "audio"]
    if not audio:
        raise ValidationFailed(NO_AUDIO)
    stream = audio[0]
    if stream.codec_context.codec is None:
        raise ValidationFailed(UNSUPPORTED)
    codec = _codec_name(stream)
    if codecs is not None and codec not in codecs:
        raise ValidationFailed(UNSUPPORTED)
    return stream, codec


def _demux_all(container: av.container.InputContainer, stream: av.audio.stream.AudioStream, demuxer: str,
               broken: str) -> tuple[int, int]:
    """Read every packet of ``stream`` (decoding the first few, and the last one alone) and return the span they
    cover, (first pts, end pts) in the stream's time base; ValidationFailed for a corrupt or undecodable stream."""
    ctx = stream.codec_context
    first_pts: int | None = None
    end_pts: int | None = None
    packets = 0
    decoded = 0
    last_packet = None
    try:
        for packet in container.demux(stream):
            if packet.size == 0:  # the flush packet at end of stream
                continue
            if packet.is_corrupt and demuxer != "wav":
                # (WAV flags a short last read even for streamed files: its header is checked by the caller)
                raise ValidationFailed(CORRUPT)
            packets += 1
            pts = packet.pts if packet.pts is not None else packet.dts
            if pts is not None:
                first_pts = pts if first_pts is None else min(first_pts, pts)
                end = pts + (packet.duration or 0)
                end_pts = end if end_pts is None else max(end_pts, end)
            if packets <= _DECODE_CHECK_PACKETS:
                decoded += len(ctx.decode(packet))
            else:
                last_packet = packet  # one packet held at a time: memory stays flat
        if decoded == 0 and packets:
            decoded = len(ctx.decode(None))  # some decoders buffer a few packets first
        if last_packet is not None:
            # A file cut inside its last frame often still demuxes (FLAC, MP3): decode that frame alone.
            ctx.flush_buffers()
            ctx.decode(last_packet)
    except av.error.FFmpegError:
        raise ValidationFailed(CORRUPT if decoded else broken) from None
    if packets == 0 or end_pts is None or decoded == 0:
        raise ValidationFailed(broken)
    return max(first_pts or 0, 0), end_pts


def _duration(container: av.container.InputContainer, stream: av.audio.stream.AudioStream, fmt: AudioFormat,
              first_pts: int, end_pts: int) -> float:
    """Seconds: what the header declares when the packets present agree with it, else what they measure;
    ValidationFailed when the header promises more audio than the tolerance allows (truncation)."""
    time_base = stream.time_base
    measured = float((end_pts - first_pts) * time_base)
    declared = _seconds(stream.duration, time_base)
    if declared is None and fmt == "webm" and container.duration:
        declared = container.duration / av.time_base  # the segment's Duration element
    if declared is None or declared <= 0:
        return measured
    missing = declared - measured
    tolerance = _EXACT_TOLERANCE_S if fmt == "flac" else TRUNCATION_TOLERANCE_S
    if missing > tolerance:
        raise ValidationFailed(CORRUPT)
    if -TRUNCATION_TOLERANCE_S <= missing <= _PADDING_SLACK_S:
        return declared  # the header's figure honours encoder delay and padding
    return measured  # a little short (accepted, measured) or the header under-declares
