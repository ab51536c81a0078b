"""Call characteristics as call-analytics products report them: talk time, non-talk time, talk speed and
interruptions per speaker.

`characteristics(segments, duration_ms)`: talk time is the union of a speaker's word spans (joined under
``JOIN_MS``), non-talk time the rest of the call, words per minute over talk time, and an interruption a segment that
starts inside another speaker's and overlaps it by at least ``INTERRUPTION_MIN_OVERLAP_MS``. All times in
milliseconds. Every rule: docs/analysis.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby

from callscope.analysis.result import CallCharacteristics, SpeakerTraits, TranscriptSegment
from callscope.analysis.stages.pauses import Interval, spoken_pieces, total

JOIN_MS = 1_000
INTERRUPTION_MIN_OVERLAP_MS = 300


def talk_spans(segment: TranscriptSegment) -> list[Interval]:
    """The spans a segment was talked in: its words' spans joined across gaps shorter than JOIN_MS."""
    spans: list[list[int]] = []
    for start, end in sorted(spoken_pieces(segment)):
        if spans and start - spans[-1][1] < JOIN_MS:
            spans[-1][1] = max(spans[-1][1], end)
        else:
            spans.append([start, end])
    return [(s, e) for s, e in spans]


def word_count(segment: TranscriptSegment) -> int:
    return len(segment.words) if segment.words else len(segment.text.split())


def count_interruptions(dialogue: Sequence[TranscriptSegment]) -> dict[str, int]:
    """Interruptions per interrupting speaker (see the module docstring). One pass in order of start, keeping each
    speaker's latest end so far: an hour's call has thousands of segments, and pairs of them would be millions."""
    counts: dict[str, int] = {}
    latest_end: dict[str, int] = {}  # speaker -> the latest end of their segments that started earlier
    for start, group in groupby(sorted(dialogue, key=lambda s: s.start_ms), key=lambda s: s.start_ms):
        starting = list(group)
        for b in starting:
            # min(A.end, B.end) - B.start >= 300: both run on for 300 ms after B starts
            if b.end_ms - start >= INTERRUPTION_MIN_OVERLAP_MS and any(
                    end - start >= INTERRUPTION_MIN_OVERLAP_MS for speaker, end in latest_end.items()
                    if speaker != b.speaker):
                counts[b.speaker] = counts.get(b.speaker, 0) + 1
        for b in starting:
            latest_end[b.speaker] = max(latest_end.get(b.speaker, b.end_ms), b.end_ms)
    return counts


def characteristics(dialogue: Sequence[TranscriptSegment], duration_ms: int) -> CallCharacteristics:
    """The characteristics of a call from its dialogue (see the module docstring for the rules)."""
    def clamp(spans: list[Interval]) -> list[Interval]:
        return [(max(0, s), min(duration_ms, e)) for s, e in spans]

    by_speaker: dict[str, list[TranscriptSegment]] = {}
    for segment in dialogue:
        by_speaker.setdefault(segment.speaker, []).append(segment)
    interruptions = count_interruptions(dialogue)
    speakers = []
    for name in sorted(by_speaker, key=lambda n: (by_speaker[n][0].channel, n)):
        segments = by_speaker[name]
        talk = total(clamp([span for seg in segments for span in talk_spans(seg)]))
        words = sum(word_count(seg) for seg in segments)
        speakers.append(SpeakerTraits(
            speaker=name, channel=segments[0].channel, talk_time_ms=talk, words=words,
            words_per_minute=round(words / (talk / 60_000), 1) if talk else 0.0,
            interruptions=interruptions.get(name, 0),
        ))
    talk_all = total(clamp([span for seg in dialogue for span in talk_spans(seg)]))
    return CallCharacteristics(
        duration_ms=duration_ms, talk_time_ms=talk_all, non_talk_time_ms=max(0, duration_ms - talk_all),
        speakers=speakers,
    )


__all__ = ["characteristics"]
