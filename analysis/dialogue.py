"""Diarization by channel: the per-channel transcripts of a call merged into one dialogue.

A stereo call records each party on its own channel, so the channel *is* the speaker: channel 0 is
"speaker-1", channel 1 is "speaker-2" (and channel n is "speaker-{n+1}" for recordings with more channels).
A mono call has one channel and therefore one speaker, "speaker-1": splitting a mono channel into speakers
needs diarization by speaker embeddings, which is not available yet.
"""

from __future__ import annotations

from dataclasses import replace

from callscope.analysis.types import Segment


def speaker_of(channel: int) -> str:
    """The speaker label of a channel: "speaker-1" for channel 0, "speaker-2" for channel 1, ..."""
    return f"speaker-{channel + 1}"


def merge_channels(per_channel: list[list[Segment]]) -> list[Segment]:
    """One dialogue from the segments of each channel (``per_channel[i]`` holds channel i's segments).

    Segments are ordered by start time, ties by channel (then by their order within the channel); their ids
    are renumbered 0..n-1 in that order and their speaker is set from the channel. The input segments are
    not changed: the result holds copies.
    """
    keyed = [
        (segment.start_ms, channel, position, segment)
        for channel, segments in enumerate(per_channel)
        for position, segment in enumerate(segments)
    ]
    keyed.sort(key=lambda item: item[:3])
    return [
        replace(segment, id=new_id, channel=channel, speaker=speaker_of(channel), words=list(segment.words))
        for new_id, (_, channel, _, segment) in enumerate(keyed)
    ]
