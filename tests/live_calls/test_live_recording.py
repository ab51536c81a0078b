"""The audio a live call keeps (callscope/live/recording.py): each track's frames where their timestamps put them
(a gap is silence, a late frame follows what is there), written as one WAV with the agent on the first channel."""

from __future__ import annotations

import io
from pathlib import Path

import av
import numpy as np

from callscope.config import Settings
from callscope.live.recording import CallAudio, wav_header


class Collected:
    """What an upload is given, kept in memory."""

    def __init__(self) -> None:
        self.data = bytearray()

    async def write(self, chunk: bytes) -> None:
        self.data += chunk

    async def abort(self) -> None:
        raise AssertionError("aborted")


async def test_tracks_are_placed_by_timestamp_and_written_as_one_stereo_wav(tmp_path: Path, monkeypatch) -> None:
    audio = CallAudio(Settings(data_dir=tmp_path), 8000, 2)
    agent, customer = audio.tracks
    agent.add(np.full(160, 1000, dtype=np.int16), at=0)
    agent.add(np.full(160, 2000, dtype=np.int16), at=480)  # 40 ms later than the track's end: silence between
    customer.add(np.full(160, -1000, dtype=np.int16), at=0)
    customer.add(np.full(160, -2000, dtype=np.int16), at=100)  # late: after what is there
    assert (agent.samples, customer.samples, audio.seconds) == (640, 320, 0.08)
    upload = Collected()

    async def finish(got, fields):
        assert got is upload and fields == "fields"
        return "found", True

    monkeypatch.setattr("callscope.services.uploads.finish", finish)
    assert await audio.store(upload, "fields") == ("found", True)
    audio.close()
    assert bytes(upload.data[:44]) == wav_header(8000, 2, 640)
    with av.open(io.BytesIO(bytes(upload.data))) as container:
        stream = container.streams.audio[0]
        assert (stream.codec_context.sample_rate, stream.codec_context.channels) == (8000, 2)
        frames = np.concatenate([f.to_ndarray().reshape(-1, 2) for f in container.decode(stream)])
    left, right = frames[:, 0], frames[:, 1]
    assert list(left[[0, 159, 160, 479, 480, 639]]) == [1000, 1000, 0, 0, 2000, 2000]
    assert list(right[[0, 160, 319, 320, 639]]) == [-1000, -2000, -2000, 0, 0]
    assert audio.full(500_000_000) and not audio.full(1000)
