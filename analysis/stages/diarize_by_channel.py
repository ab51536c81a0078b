"""Diarization by channel: the per-channel transcripts of a call merged into one dialogue.

A stereo call records each party on its own channel, so the channel *is* the speaker: channel 0 is
"speaker-1", channel 1 is "speaker-2" (and channel n is "speaker-{n+1}" for recordings with more channels).
A mono call's channel is split into speakers by analysis/stages/diarize_by_voice.py.

Whisper sometimes keeps one segment across a long silence (on a stereo channel: while the other party talks), so
segments are first cut where their words are a pause apart (`split_at_gaps`): a segment is one utterance, and a
pause always falls between two segments.
"""

from __future__ import annotations

from callscope.analysis.result import TranscriptSegment, TranscriptWord


def speaker_of(channel: int) -> str:
    """The speaker label of a channel: "speaker-1" for channel 0, "speaker-2" for channel 1, ..."""
    return f"speaker-{channel + 1}"


def merge_channels(per_channel: list[list[TranscriptSegment]]) -> list[TranscriptSegment]:
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
        segment.model_copy(update={"id": new_id, "channel": channel, "speaker": speaker_of(channel),
                                   "words": list(segment.words)})
        for new_id, (_, channel, _, segment) in enumerate(keyed)
    ]


def split_segment(segment: TranscriptSegment, groups: list[int]) -> list[tuple[int, TranscriptSegment]]:
    """`segment` cut where the group of its words (`groups[i]` of `segment.words[i]`: a speaker, an utterance)
    changes; each piece with its group."""
    pieces: list[tuple[int, TranscriptSegment]] = []
    group: list[TranscriptWord] = []
    for i, (word, key) in enumerate(zip(segment.words, groups, strict=True)):
        group.append(word)
        if i + 1 == len(segment.words) or groups[i + 1] != key:
            first, last = not pieces, i + 1 == len(segment.words)
            start = segment.start_ms if first else group[0].start_ms
            end = segment.end_ms if last else group[-1].end_ms
            text = segment.text if first and last else " ".join(w.text for w in group)
            pieces.append((key, segment.model_copy(update={"start_ms": start, "end_ms": end, "text": text,
                                                           "words": group})))
            group = []
    return pieces


def split_at_gaps(segments: list[TranscriptSegment], gap_ms: int) -> list[TranscriptSegment]:
    """The segments cut wherever two consecutive words are at least `gap_ms` apart (ids unchanged: the dialogue
    is renumbered when the channels are merged)."""
    out: list[TranscriptSegment] = []
    for segment in segments:
        groups, utterance = [], 0
        for i, word in enumerate(segment.words):
            if i and word.start_ms - segment.words[i - 1].end_ms >= gap_ms:
                utterance += 1
            groups.append(utterance)
        out.extend([piece for _, piece in split_segment(segment, groups)] if segment.words else [segment])
    return out
