"""The audio a live call received, kept while the call lasts (one spool file per track, 16-bit samples at the
track's rate, in a private folder of the data directory; gone when closed) and stored when it ends as the call's
recording: a WAV file, stereo with the agent on the first channel and the customer on the second (mono for a
one-channel call), through the upload service, so it is probed, stored and analysed like an upload."""

from __future__ import annotations

import struct
import tempfile
from typing import BinaryIO

import numpy as np

from callscope.catalog.recordings import Found
from callscope.config import Settings
from callscope.private_files import private_dir
from callscope.services import uploads

CHUNK_SAMPLES = 1 << 16  # per track, read back at a time when the WAV is written


class TrackSpool:
    """One track's samples in call order. `add` places samples at a sample position when one is given (Twilio's
    media timestamps): a gap before it is silence, a frame that comes late goes after what is there."""

    def __init__(self, folder):
        self.file: BinaryIO = tempfile.TemporaryFile(dir=folder)  # noqa: SIM115 - closed by close()
        self.samples = 0

    def add(self, samples: np.ndarray, at: int | None = None) -> None:
        if at is not None and at > self.samples:
            self.file.write(bytes(2 * (at - self.samples)))
            self.samples = at
        self.file.write(samples.astype("<i2").tobytes())
        self.samples += len(samples)

    def read(self, start: int, count: int) -> np.ndarray:
        """`count` samples from `start`, silence past the end."""
        self.file.seek(2 * start)
        got = np.frombuffer(self.file.read(2 * count), dtype="<i2")
        return np.pad(got, (0, count - len(got)))

    def close(self) -> None:
        self.file.close()


def wav_header(rate: int, channels: int, samples: int) -> bytes:
    data = samples * channels * 2
    return (b"RIFF" + struct.pack("<I", 36 + data) + b"WAVEfmt " +
            struct.pack("<IHHIIHH", 16, 1, channels, rate, rate * channels * 2, channels * 2, 16) +
            b"data" + struct.pack("<I", data))


class CallAudio:
    """Every track of one call at one sample rate; track 0 is the agent's (or the only one)."""

    def __init__(self, settings: Settings, rate: int, tracks: int):
        folder = private_dir(settings.data_dir / "live-spool")
        self.rate = rate
        self.tracks = [TrackSpool(folder) for _ in range(tracks)]
        self.limit_bytes = settings.upload_limits_mb["wav"] * 1_000_000

    @property
    def seconds(self) -> float:
        return max(t.samples for t in self.tracks) / self.rate

    @property
    def wav_bytes(self) -> int:
        return 44 + max(t.samples for t in self.tracks) * 2 * len(self.tracks)

    def full(self, more_samples: int) -> bool:
        """Whether `more_samples` more on a track would make the recording larger than a WAV upload may be."""
        return self.wav_bytes + more_samples * 2 * len(self.tracks) > self.limit_bytes

    async def store(self, upload: uploads.Upload, fields: uploads.UploadFields) -> tuple[Found, bool]:
        """Write the WAV into `upload` and finish it (the recording and its analysis job); aborted on failure."""
        length = max(t.samples for t in self.tracks)
        try:
            await upload.write(wav_header(self.rate, len(self.tracks), length))
            for start in range(0, length, CHUNK_SAMPLES):
                count = min(CHUNK_SAMPLES, length - start)
                block = np.stack([t.read(start, count) for t in self.tracks], axis=1)  # interleaved
                await upload.write(block.astype("<i2").tobytes())
        except BaseException:
            await upload.abort()
            raise
        return await uploads.finish(upload, fields)

    def close(self) -> None:
        for track in self.tracks:
            track.close()
