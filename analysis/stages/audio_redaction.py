"""Audio redaction: a recording with the redacted words' audio replaced by silence or a tone, as FLAC.

FLAC because it is lossless: the served audio holds exactly the fill inside each span and the source's own samples
elsewhere, so it can be checked sample by sample (a lossy codec would smear speech back over the span's edges).
Streaming because recordings can be hours long: frames are decoded, filled and encoded one at a time at the source's
own rate (no resampling: the spans' sample indexes are the source's), so memory does not grow with the file.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import av
import numpy as np

from callscope.analysis.result import TranscriptSegment
from callscope.errors import ValidationFailed

Fill = Literal["silence", "tone"]
CORRUPT = "Audio file is truncated or corrupt"  # decode.py's words: the same file fails the same way
NO_AUDIO = "Audio file has no audio stream"
TONE_HZ = 1000.0
TONE_PEAK = 0.1  # -20 dBFS
_S16 = 32768.0
EDGE_REACH_MS = 1_000  # Whisper placed a value's first word up to 900 ms late (issue 42's probe)


@dataclass(frozen=True)
class RedactedAudio:
    duration_ms: int
    size_bytes: int
    channels: int
    sample_rate: int


def redacted_spans(segments: Sequence[TranscriptSegment], margin_ms: int) -> list[tuple[int, int]]:
    """(start_ms, end_ms) of the redacted words, adjacent redacted words of a segment as one range (the gaps between
    a number's digits are redacted too), each widened by margin_ms (start not below 0), merged where they overlap
    or touch, sorted. A range that begins with its segment's first word begins with the segment, one that ends with
    its last word ends with it: Whisper's times drift most at a segment's edges (a number read for two seconds,
    written as one word, got 760 ms of it), and its segments hold the speech they transcribe. Inside a segment a
    range reaches back to the end of the word before it and on to the start of the word after it, by EDGE_REACH_MS
    at most: a value's first word placed late ("four" said at 13.6 s, timed 14.5 s) is still covered, and the gap
    holds no other word of the segment (every channel is filled: a long pause may hold the other party's speech)."""
    ranges: list[tuple[int, int]] = []
    for segment in segments:
        words = segment.words
        i = 0
        while i < len(words):
            if not words[i].redacted:
                i += 1
                continue
            j = i
            while j + 1 < len(words) and words[j + 1].redacted:
                j += 1
            run = words[i:j + 1]
            start = min(min(w.start_ms, w.end_ms) for w in run)
            end = max(max(w.start_ms, w.end_ms) for w in run)
            start = min(start, max(words[i - 1].end_ms, start - EDGE_REACH_MS) if i else segment.start_ms)
            end = max(end, min(words[j + 1].start_ms, end + EDGE_REACH_MS) if j + 1 < len(words) else segment.end_ms)
            ranges.append((start, end))
            i = j + 1
    return merged(widened(ranges, margin_ms))


def blanked_spans(segments: Sequence[TranscriptSegment], unheard: Iterable[tuple[int, int]],
                  margin_ms: int) -> list[tuple[int, int]]:
    """What the served audio replaces: the redacted words (redacted_spans) and the speech without words that strict
    mode lists (RedactionSummary.unheard), each widened by margin_ms, merged."""
    return merged([*redacted_spans(segments, margin_ms), *widened(unheard, margin_ms)])


def widened(ranges: Iterable[tuple[int, int]], margin_ms: int) -> list[tuple[int, int]]:
    """Each range widened by margin_ms on both sides, its start not below 0."""
    return [(max(0, s - margin_ms), e + margin_ms) for s, e in ranges]


def merged(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """ranges sorted, those that overlap or touch as one."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def fill_samples(fill: Fill, start_index: int, count: int, sample_rate: int) -> np.ndarray:
    """The fill of samples start_index..start_index+count-1 (absolute indexes in the file), float32, one channel.

    Values lie on the s16 grid (k / 32768), so the FLAC holds them exactly; the tone is a function of the absolute
    index only, so a checker regenerates it for any range.
    """
    if fill == "silence":
        return np.zeros(count, dtype=np.float32)
    if fill != "tone":
        raise ValueError(f"unknown fill {fill!r}: silence or tone")
    index = np.arange(start_index, start_index + count, dtype=np.float64)
    tone = np.round(TONE_PEAK * _S16 * np.sin(2.0 * np.pi * TONE_HZ * index / sample_rate)) / _S16
    return tone.astype(np.float32)


def _sample_ranges(spans: Iterable[tuple[int, int]], sample_rate: int) -> list[tuple[int, int]]:
    # floor the start and ceil the end: a sample partly inside a span is filled
    return sorted((s * sample_rate // 1000, -(-e * sample_rate // 1000)) for s, e in spans if e > s)


def redact_audio_file(source: Path, target: Path, spans: Iterable[tuple[int, int]], fill: Fill) -> RedactedAudio:
    """Write `source` to `target` as FLAC (s16) with every sample inside `spans` (ms) replaced by `fill` on every
    channel; the source's sample rate and channels are kept (more than two channels are downmixed to stereo).
    Raises ValidationFailed when the source has no audio or cannot be decoded."""
    if fill not in ("silence", "tone"):
        raise ValueError(f"unknown fill {fill!r}: silence or tone")
    try:
        result = _redact(Path(source), Path(target), spans, fill)
    except ValidationFailed:
        Path(target).unlink(missing_ok=True)
        raise
    except (av.error.FFmpegError, ValueError, OSError, EOFError) as exc:
        Path(target).unlink(missing_ok=True)
        if isinstance(exc, FileNotFoundError) and not Path(source).exists():
            raise
        raise ValidationFailed(CORRUPT) from exc
    return result


def _redact(source: Path, target: Path, spans: Iterable[tuple[int, int]], fill: Fill) -> RedactedAudio:
    with av.open(str(source), mode="r") as inp:
        if not inp.streams.audio:
            raise ValidationFailed(NO_AUDIO)
        stream = inp.streams.audio[0]
        channels = min(stream.codec_context.channels or 1, 2)
        layout = "mono" if channels == 1 else "stereo"
        rate = stream.codec_context.sample_rate
        if not rate:
            raise ValidationFailed(CORRUPT)
        ranges = _sample_ranges(spans, rate)
        # same rate: only the sample format changes (and a downmix above two channels), never the timing
        resampler = av.AudioResampler(format="fltp", layout=layout, rate=rate)
        with av.open(str(target), mode="w", format="flac") as out:
            encoder = out.add_stream("flac", rate=rate, layout=layout)
            encoder.codec_context.format = "s16"
            encoder.codec_context.open()
            writer = _Writer(out, encoder, channels, rate)
            position, first = 0, 0  # samples written; the first range that may still apply

            def put(block: np.ndarray) -> None:
                nonlocal position, first
                n = block.shape[1]
                while first < len(ranges) and ranges[first][1] <= position:
                    first += 1
                for lo, hi in ranges[first:]:
                    if lo >= position + n:
                        break
                    a, b = max(lo, position) - position, min(hi, position + n) - position
                    block[:, a:b] = fill_samples(fill, position + a, b - a, rate)
                writer.write(block)
                position += n

            for frame in inp.decode(stream):
                frame.pts = None  # count samples, as decode.py does: the spans' times are in decoded samples
                for converted in resampler.resample(frame):
                    put(converted.to_ndarray())
            for converted in resampler.resample(None):
                put(converted.to_ndarray())
            if position == 0:
                raise ValidationFailed(CORRUPT)
            writer.close()
    return RedactedAudio(duration_ms=position * 1000 // rate, size_bytes=target.stat().st_size, channels=channels,
                         sample_rate=rate)


class _Writer:
    """Encodes float blocks as s16 FLAC frames of the encoder's frame size (FLAC takes no other size but the last)."""

    def __init__(self, container, stream, channels: int, rate: int) -> None:
        self.container, self.stream, self.channels, self.rate = container, stream, channels, rate
        self.size = stream.codec_context.frame_size or 4096
        self.pending = np.zeros((channels, 0), dtype=np.int16)
        self.pts = 0

    def write(self, block: np.ndarray) -> None:
        # a lossy decoder or a downmix can overshoot full scale: clip rather than wrap
        pcm = np.clip(np.rint(block * _S16), -32768, 32767).astype(np.int16)
        self.pending = np.concatenate([self.pending, pcm], axis=1) if self.pending.shape[1] else pcm
        while self.pending.shape[1] >= self.size:
            self._encode(self.pending[:, : self.size])
            self.pending = self.pending[:, self.size :]

    def close(self) -> None:
        if self.pending.shape[1]:
            self._encode(self.pending)
        self.container.mux(self.stream.encode(None))

    def _encode(self, pcm: np.ndarray) -> None:
        layout = "mono" if self.channels == 1 else "stereo"
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(pcm.T).reshape(1, -1), format="s16", layout=layout)
        frame.sample_rate = self.rate
        frame.pts = self.pts
        self.pts += pcm.shape[1]
        self.container.mux(self.stream.encode(frame))
