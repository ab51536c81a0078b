"""Decoding: a recording to 16 kHz float32, one array per channel (PyAV).

Channels: a mono file gives one channel and a stereo file two, kept apart (in call centres
each side of the call usually has its own channel). A file with more than two channels (5.1
audio of a video, say) is downmixed to stereo by FFmpeg's standard matrix: call recordings
have one or two sides (a stereo call's speakers are its channels; a mono call is diarized). Samples are
clipped to -1..1 (a downmix or a lossy decoder can overshoot full scale).

Memory: frames are decoded and resampled one at a time; only the 16 kHz output is kept
(at most about twice that at the final concatenation), never the whole source file.
"""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np

from callscope.analysis.types import SAMPLE_RATE, Audio
from callscope.errors import ValidationFailed

CORRUPT = "Audio file is truncated or corrupt"
NO_AUDIO = "Audio file has no audio stream"


def decode(path: Path) -> Audio:
    """Decode `path` to an `Audio` at 16 kHz float32 (-1..1), one or two channels."""
    try:
        with av.open(str(path), mode="r") as container:
            if not container.streams.audio:
                raise ValidationFailed(NO_AUDIO)
            stream = container.streams.audio[0]
            channels = min(stream.codec_context.channels or 1, 2)
            resampler = av.AudioResampler(
                format="fltp", layout="mono" if channels == 1 else "stereo", rate=SAMPLE_RATE
            )
            chunks: list[np.ndarray] = []
            for frame in container.decode(stream):
                frame.pts = None  # resample by sample count; gaps in pts are not ours to fill
                for out in resampler.resample(frame):
                    chunks.append(out.to_ndarray())
            for out in resampler.resample(None):  # flush the resampler's delay
                chunks.append(out.to_ndarray())
    except ValidationFailed:
        raise
    except (av.error.FFmpegError, ValueError, OSError, EOFError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValidationFailed(CORRUPT) from exc
    if not chunks or sum(c.shape[1] for c in chunks) == 0:
        raise ValidationFailed(CORRUPT)
    data = np.concatenate(chunks, axis=1) if len(chunks) > 1 else chunks[0]
    del chunks
    np.clip(data, -1.0, 1.0, out=data)  # a downmix or a lossy codec can overshoot full scale
    return Audio(channels=tuple(np.ascontiguousarray(data[i], dtype=np.float32) for i in range(data.shape[0])))
