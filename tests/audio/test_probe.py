"""callscope.audio.probe against real files made with PyAV (tests/audio_samples.py)."""

from __future__ import annotations

import os
import time
import tracemalloc
from pathlib import Path

import pytest

from callscope.audio.probe import (
    CONTENT_TYPES,
    CORRUPT,
    EMPTY,
    NO_AUDIO,
    UNSUPPORTED,
    AudioInfo,
    format_from_filename,
    probe,
)
from callscope.errors import ValidationFailed
from tests.audio_samples import (
    FORMATS,
    JPEG_BYTES,
    PNG_BYTES,
    make_audio,
    make_large_wav,
    make_video_mp4,
    tone_samples,
    truncate,
    wav_header,
)


def rejected(path: Path) -> str:
    with pytest.raises(ValidationFailed) as caught:
        probe(path)
    assert caught.value.status == 422
    assert len(caught.value.errors) == 1
    return caught.value.errors[0]


# --- the six formats --------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize(("seconds", "channels"), [(1.5, 1), (4.2, 2)])
def test_each_format_probes_with_its_duration(tmp_path: Path, fmt: str, seconds: float, channels: int) -> None:
    path = make_audio(tmp_path / f"call.{fmt}", fmt, seconds=seconds, channels=channels)
    info = probe(path)
    assert isinstance(info, AudioInfo)
    assert info.format == fmt
    assert abs(info.duration_ms - seconds * 1000) <= 100
    assert info.channels == channels
    assert info.sample_rate in (16000, 48000)  # Opus always decodes at 48 kHz
    assert info.size_bytes == path.stat().st_size
    assert info.bit_rate is None or info.bit_rate > 0
    assert info.content_type == CONTENT_TYPES[fmt]


@pytest.mark.parametrize(
    ("kwargs", "codec"),
    [
        ({"fmt": "ogg", "ogg_codec": "vorbis", "channels": 2}, "vorbis"),
        ({"fmt": "ogg", "ogg_codec": "flac"}, "flac"),
        ({"fmt": "m4a", "faststart": True}, "aac"),
    ],
)
def test_other_flavours(tmp_path: Path, kwargs: dict, codec: str) -> None:
    info = probe(make_audio(tmp_path / "call.bin", seconds=2.0, **kwargs))
    assert info.format == kwargs["fmt"]
    assert info.codec == codec
    assert abs(info.duration_ms - 2000) <= 100


def test_codecs_are_named(tmp_path: Path) -> None:
    codecs = {fmt: probe(make_audio(tmp_path / f"c.{fmt}", fmt, seconds=1.0)).codec for fmt in FORMATS}
    assert codecs == {"mp3": "mp3", "wav": "pcm_s16le", "flac": "flac", "m4a": "aac", "ogg": "opus", "webm": "opus"}


def test_extension_is_not_trusted(tmp_path: Path) -> None:
    info = probe(make_audio(tmp_path / "call.mp3", "wav", seconds=2.0))
    assert info.format == "wav"
    assert info.duration_ms == 2000
    info = probe(make_audio(tmp_path / "call.txt", "flac", seconds=1.0))
    assert info.format == "flac"


# --- not audio ---------------------------------------------------------------------------------------


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.mp3"
    path.write_bytes(b"")
    assert rejected(path) == EMPTY == "File is empty"


NOT_AUDIO = [
    ("notes.mp3", b"Hello, this is not a recording.\nJust text.\n" * 50),
    ("one-line.wav", b"hi"),
    ("image.png", PNG_BYTES),
    ("image.mp3", JPEG_BYTES),
    ("random.wav", os.urandom(64 * 1024)),
    ("playlist.mp3", b"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n"),
    ("zeros.flac", bytes(32 * 1024)),
]


# named by the file: random bytes in a test's id would differ between the xdist workers' collections
@pytest.mark.parametrize(("name", "content"), NOT_AUDIO, ids=[name for name, _ in NOT_AUDIO])
def test_not_audio_is_unsupported(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert rejected(path) == UNSUPPORTED
    assert UNSUPPORTED == "Unsupported audio format: accepted formats are MP3, WAV, FLAC, M4A, OGG and WebM"


@pytest.mark.parametrize("with_audio", [True, False])
def test_video_is_unsupported(tmp_path: Path, with_audio: bool) -> None:
    path = make_video_mp4(tmp_path / "movie.m4a", seconds=1.0, with_audio=with_audio)
    assert rejected(path) == UNSUPPORTED


def test_webm_with_video_is_unsupported(tmp_path: Path) -> None:
    import av

    path = tmp_path / "screen.webm"
    with av.open(str(path), "w", format="webm") as out:
        video = out.add_stream("libvpx", rate=10)
        video.width = video.height = 64
        video.pix_fmt = "yuv420p"
        for i in range(5):
            frame = av.VideoFrame(64, 64, "yuv420p")
            for plane in frame.planes:
                plane.update(bytes([i * 40]) * plane.buffer_size)
            frame.pts = i
            out.mux(video.encode(frame))
        out.mux(video.encode(None))
    assert rejected(path) == UNSUPPORTED


def test_no_audio_message() -> None:
    # Reached by a whitelisted container holding only data/subtitle streams; PyAV's encoders cannot
    # easily make one here, so only the message is pinned.
    assert NO_AUDIO == "File has no audio stream"


# --- truncated and corrupt -----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["wav", "flac", "mp3", "m4a", "ogg", "webm"])
@pytest.mark.parametrize("keep", [0.3, 0.7])
def test_truncated_is_rejected(tmp_path: Path, fmt: str, keep: float) -> None:
    path = truncate(make_audio(tmp_path / f"call.{fmt}", fmt, seconds=6.0), keep)
    assert rejected(path) == CORRUPT == "Audio file is truncated or corrupt"


def test_truncated_faststart_m4a_is_rejected(tmp_path: Path) -> None:
    # moov first: the sample tables promise packets past the end of the file
    path = truncate(make_audio(tmp_path / "call.m4a", "m4a", seconds=6.0, faststart=True), 0.6)
    assert rejected(path) == CORRUPT


@pytest.mark.parametrize("fmt", ["wav", "flac", "ogg", "m4a"])
def test_cut_by_a_few_bytes_is_rejected(tmp_path: Path, fmt: str) -> None:
    # M4A with its moov box first (a "faststart" file): with the moov at the end, FFmpeg's default, the
    # last bytes are metadata (udta) and losing a few of them is not noticed — cut more and it is.
    path = make_audio(tmp_path / f"call.{fmt}", fmt, seconds=6.0, faststart=fmt == "m4a")
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 7)
    assert rejected(path) == CORRUPT


def test_wav_cut_at_a_sample_boundary_is_rejected(tmp_path: Path) -> None:
    # no partial packet, yet the data chunk promises more than the file holds
    path = tmp_path / "call.wav"
    path.write_bytes(wav_header(16000 * 2 * 6) + tone_samples(16000 * 4, 16000))  # 6 s promised, 4 s held
    assert rejected(path) == CORRUPT


def test_streamed_wav_without_sizes_is_measured(tmp_path: Path) -> None:
    # writers streaming to a pipe leave 0xFFFFFFFF ("until the end") in the RIFF and data sizes
    path = tmp_path / "call.wav"
    header = bytearray(wav_header(0))
    header[4:8] = header[40:44] = b"\xff\xff\xff\xff"
    path.write_bytes(bytes(header) + tone_samples(16000 * 3, 16000))
    assert abs(probe(path).duration_ms - 3000) <= 100


def test_mp3_cut_slightly_is_accepted_with_the_shorter_duration(tmp_path: Path) -> None:
    """Undetectable on purpose: within TRUNCATION_TOLERANCE_S of the Xing header's frame count, a cut
    MP3 is a valid, shorter MP3 (its last, partial frame still decodes); the measured duration is kept."""
    path = make_audio(tmp_path / "call.mp3", "mp3", seconds=8.0)
    truncate(path, 0.96)
    info = probe(path)
    assert info.format == "mp3"
    assert 7500 <= info.duration_ms < 8000


def test_mp3_without_xing_header_cut_is_a_shorter_mp3(tmp_path: Path) -> None:
    """Without a Xing/Info header nothing declares an MP3's length: cut anywhere, it is a shorter MP3."""
    import av

    path = tmp_path / "call.mp3"
    with av.open(str(path), "w", format="mp3", options={"write_xing": "0"}) as out:
        pass  # replaced below
    path = make_audio(tmp_path / "x.mp3", "mp3", seconds=8.0)
    # drop the first frame (the Xing/Info frame holds no audio) by re-muxing without it
    src = av.open(str(path))
    plain = tmp_path / "plain.mp3"
    with av.open(str(plain), "w", format="mp3", options={"write_xing": "0", "id3v2_version": "0"}) as out:
        stream = out.add_stream_from_template(src.streams.audio[0])
        for packet in src.demux(src.streams.audio[0]):
            if packet.size:
                packet.stream = stream
                out.mux(packet)
    src.close()
    assert abs(probe(plain).duration_ms - 8000) <= 150
    truncate(plain, 0.5)
    info = probe(plain)
    assert abs(info.duration_ms - 4000) <= 300


def test_corrupt_header_is_rejected(tmp_path: Path) -> None:
    path = make_audio(tmp_path / "call.flac", "flac", seconds=2.0)
    data = bytearray(path.read_bytes())
    data[8:40] = os.urandom(32)  # STREAMINFO
    path.write_bytes(bytes(data))
    assert rejected(path) in (CORRUPT, UNSUPPORTED)


def test_audio_container_header_alone_is_corrupt(tmp_path: Path) -> None:
    path = make_audio(tmp_path / "call.m4a", "m4a", seconds=2.0)
    truncate(path, 0.05)
    assert rejected(path) == CORRUPT


# --- large files ----------------------------------------------------------------------------------------


def test_large_wav_is_fast_and_flat(tmp_path: Path) -> None:
    size = 200 * 1024 * 1024
    path = make_large_wav(tmp_path / "long.wav", size)
    assert abs(path.stat().st_size - size) <= 4
    tracemalloc.start()
    try:
        started = time.monotonic()
        info = probe(path)
        elapsed = time.monotonic() - started
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.format == "wav"
    assert abs(info.duration_ms - (size - 44) / 32000 * 1000) <= 1
    assert elapsed < 5
    assert peak < 5 * 1024 * 1024


# --- helpers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("call.MP3", "mp3"),
        ("a.b.wav", "wav"),
        ("x.flac", "flac"),
        ("x.m4a", "m4a"),
        ("x.ogg", "ogg"),
        ("x.opus", "ogg"),
        ("x.webm", "webm"),
        ("x.txt", None),
        ("noext", None),
        ("", None),
        (None, None),
    ],
)
def test_format_from_filename(name: str | None, fmt: str | None) -> None:
    assert format_from_filename(name) == fmt


def test_content_types() -> None:
    assert CONTENT_TYPES == {
        "mp3": "audio/mpeg",
        "wav": "audio/wav",
        "flac": "audio/flac",
        "m4a": "audio/mp4",
        "ogg": "audio/ogg",
        "webm": "audio/webm",
    }
