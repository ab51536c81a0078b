"""analysis.decode: any container/codec PyAV reads -> 16 kHz float32, one array per channel."""

from __future__ import annotations

import numpy as np
import pytest

from callscope.analysis.stages.decode import CORRUPT, NO_AUDIO, decode
from callscope.analysis.types import SAMPLE_RATE
from callscope.errors import ValidationFailed
from tests.analysis.speech import RATE, write


def tone(seconds: float, hz: float = 440.0, level: float = 0.5) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (np.sin(2 * np.pi * hz * t) * level).astype(np.float32)


def rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x, dtype=np.float64))))


def check(audio, channels: int, duration_ms: int, tolerance_ms: int = 5) -> None:
    assert audio.sample_rate == SAMPLE_RATE == 16_000
    assert len(audio.channels) == channels
    assert all(c.dtype == np.float32 and c.ndim == 1 for c in audio.channels)
    assert len({len(c) for c in audio.channels}) == 1
    assert abs(audio.duration_ms - duration_ms) <= tolerance_ms
    assert all(np.abs(c).max() <= 1.0 for c in audio.channels)


def test_mono_wav_16k(tmp_path):
    audio = decode(write(tmp_path / "a.wav", [tone(2.0)]))
    check(audio, 1, 2000)
    assert rms(audio.channels[0]) == pytest.approx(0.5 / np.sqrt(2), rel=0.02)


def test_stereo_wav_keeps_each_side_on_its_channel(tmp_path):
    left, right = tone(3.0), np.concatenate([np.zeros(RATE, np.float32), tone(2.0, 1000)])
    audio = decode(write(tmp_path / "s.wav", [left, right], rate=44_100))
    check(audio, 2, 3000)
    first = slice(0, SAMPLE_RATE - 800)  # right channel is silent for its first second
    assert rms(audio.channels[0][first]) > 0.3 and rms(audio.channels[1][first]) < 1e-3


def test_stereo_mp3(tmp_path):
    audio = decode(write(tmp_path / "s.mp3", [tone(2.5), tone(2.5, 880)], rate=44_100, codec="libmp3lame"))
    check(audio, 2, 2500, tolerance_ms=60)  # encoder delay/padding
    assert rms(audio.channels[0]) > 0.2 and rms(audio.channels[1]) > 0.2


def test_8khz_mulaw_telephony_wav(tmp_path):
    audio = decode(write(tmp_path / "u.wav", [tone(1.5, 300)], rate=8_000, codec="pcm_mulaw"))
    check(audio, 1, 1500)
    assert rms(audio.channels[0]) == pytest.approx(0.5 / np.sqrt(2), rel=0.05)


def test_more_than_two_channels_are_downmixed_to_stereo(tmp_path):
    sides = [tone(1.0, 200 + 100 * i) for i in range(6)]
    audio = decode(write(tmp_path / "six.wav", sides, rate=48_000))
    check(audio, 2, 1000)


@pytest.mark.parametrize(
    "content",
    [b"", b"not audio at all " * 64, np.random.default_rng(1).bytes(4096)],
    ids=["empty", "text", "random"],
)
def test_corrupt_input_raises(tmp_path, content):
    path = tmp_path / "bad.wav"
    path.write_bytes(content)
    with pytest.raises(ValidationFailed) as err:
        decode(path)
    assert err.value.errors == [CORRUPT]


def test_truncated_header_raises(tmp_path):
    good = write(tmp_path / "a.wav", [tone(1.0)])
    cut = tmp_path / "cut.wav"
    cut.write_bytes(good.read_bytes()[:30])
    with pytest.raises(ValidationFailed, match="truncated or corrupt"):
        decode(cut)


def test_file_without_audio_raises(tmp_path):
    import av

    path = tmp_path / "video.mkv"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=5)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        for i in range(3):
            frame = av.VideoFrame.from_ndarray(np.zeros((32, 32, 3), np.uint8), format="rgb24")
            frame.pts = i
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    with pytest.raises(ValidationFailed) as err:
        decode(path)
    assert err.value.errors == [NO_AUDIO]
