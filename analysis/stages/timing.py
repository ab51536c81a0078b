"""Word and segment timestamps corrected against the voice activity of their channel.

`to_speech` moves every word into the channel's VAD speech regions (clipped to the speech it overlaps, or moved to
the nearest region when it lies at most `MAX_SHIFT_MS` from it), makes each segment span its words and widens its
edges to the speech regions they are in, never past the channel's previous or next segment. Word order is kept;
the input is not changed. Why (Whisper's word times drift): docs/analysis.md; figures: benchmarks/RESULTS.md.
`unheard` lists the speech no word accounts for, which strict redaction takes out of the audio.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from callscope.analysis.result import TranscriptSegment, TranscriptWord
from callscope.analysis.stages.audio_redaction import merged
from callscope.analysis.types import SpeechRegion

MAX_SHIFT_MS = 1000  # a word in a silence farther than this from speech is left where Whisper put it


class _Speech:
    """One channel's speech regions (sorted, non-overlapping) and the clamping of spans into them."""

    def __init__(self, regions: list[SpeechRegion]) -> None:
        spans = sorted((r.start_ms, r.end_ms) for r in regions if r.end_ms > r.start_ms)
        self.starts = [s for s, _ in spans]
        self.ends = [e for _, e in spans]

    def around(self, ms: int) -> tuple[int, int] | None:
        """The region that contains the instant `ms` (edges included), or None."""
        i = bisect_right(self.starts, ms) - 1
        return (self.starts[i], self.ends[i]) if i >= 0 and ms <= self.ends[i] else None

    def clamp(self, start: int, end: int, move: bool) -> tuple[int, int]:
        """[start, end] clipped to the regions it overlaps; when it overlaps none and `move`, put at the edge of
        the nearest region within MAX_SHIFT_MS; else unchanged."""
        if not self.starts:
            return start, end
        first = bisect_right(self.ends, start)  # regions ending after `start`...
        last = bisect_right(self.starts, end) - 1  # ...and starting before `end` overlap the span
        if first <= last and (self.starts[first] < end or start == end):
            lo, hi = max(start, self.starts[first]), min(end, self.ends[last])
            return lo, max(lo, hi)
        if not move:
            return start, end
        before = self.ends[first - 1] if first > 0 else None  # the silence lies between these two regions
        after = self.starts[first] if first < len(self.starts) else None
        gap_before = start - before if before is not None else None
        gap_after = after - end if after is not None else None
        if gap_before is not None and (gap_after is None or gap_before <= gap_after):
            return (before, before) if gap_before <= MAX_SHIFT_MS else (start, end)
        if gap_after is not None and gap_after <= MAX_SHIFT_MS:
            return after, after
        return start, end


def to_speech(segments: list[TranscriptSegment], regions: list[SpeechRegion]) -> list[TranscriptSegment]:
    """`segments` of one channel, in time order, with their words' and their own times moved into that channel's
    speech `regions` (see the module's docstring); unchanged when the channel has no speech regions."""
    speech = _Speech(regions)
    if not speech.starts:
        return list(segments)
    moved = [_words_to_speech(segment, speech) for segment in segments]
    out: list[TranscriptSegment] = []
    for i, (segment, (words, (start, end))) in enumerate(zip(segments, moved, strict=True)):
        if (region := speech.around(start)) is not None:
            start = min(start, max(region[0], out[-1].end_ms if out else region[0]))
        if (region := speech.around(end)) is not None:
            end = max(end, min(region[1], moved[i + 1][1][0] if i + 1 < len(moved) else region[1]))
        out.append(segment.model_copy(update={"start_ms": start, "end_ms": end, "words": words}))
    return out


def _words_to_speech(segment: TranscriptSegment, speech: _Speech) -> tuple[list[TranscriptWord], tuple[int, int]]:
    """The segment's words moved into speech and the span they cover (its own span clipped, without words)."""
    if not segment.words:
        return [], speech.clamp(segment.start_ms, segment.end_ms, move=False)
    words = [_moved(word, speech) for word in segment.words]
    return words, (words[0].start_ms, max(w.end_ms for w in words))


def _moved(word: TranscriptWord, speech: _Speech) -> TranscriptWord:
    start, end = speech.clamp(word.start_ms, word.end_ms, move=True)
    return word if (start, end) == (word.start_ms, word.end_ms) else word.model_copy(
        update={"start_ms": start, "end_ms": end})


# what Whisper writes over audio it could not read, learnt from video captions: a segment saying it heard nothing
HALLUCINATIONS = re.compile(r"subscribe|like button|thanks? (?:you )?for watching|next video|subtitles by|amara\.org",
                            re.IGNORECASE)
UNHEARD_MIN_MS = 300  # uncovered speech shorter than this is a breath, a click or a word's tail
UNHEARD_REACH_MS = 500  # a word accounts for the speech this close to it: its times drift, a digit is timed short


def unheard(segments: list[TranscriptSegment], regions: list[SpeechRegion],
            min_ms: int = UNHEARD_MIN_MS) -> list[tuple[int, int]]:
    """(start_ms, end_ms) of the speech farther than UNHEARD_REACH_MS from every word of its channel, each piece at
    least min_ms, in time order: what the recogniser heard as speech but wrote nothing for (a stretch it skipped,
    words its own checks threw away, or the middle of a long turn of which a segment kept only the end), so what
    was said there is unknown; a segment Whisper hallucinated (HALLUCINATIONS: "... don't forget to subscribe to the
    channel" over an e-mail read back) accounts for none."""
    words: dict[int, list[tuple[int, int]]] = {}
    for segment in [s for s in segments if not HALLUCINATIONS.search(s.text)]:
        words.setdefault(segment.channel, []).extend(
            (w.start_ms - UNHEARD_REACH_MS, w.end_ms + UNHEARD_REACH_MS) for w in segment.words)
    heard = {channel: merged(spans) for channel, spans in words.items()}  # disjoint, in order
    ends = {channel: [end for _, end in spans] for channel, spans in heard.items()}
    out = []
    for region in regions:
        spans = heard.get(region.channel, [])
        at = region.start_ms
        for k in range(bisect_right(ends.get(region.channel, []), at), len(spans)):
            start, end = spans[k]
            if min(start, region.end_ms) - at >= min_ms:
                out.append((at, min(start, region.end_ms)))
            at = max(at, end)
            if at >= region.end_ms:
                break
        if region.end_ms - at >= min_ms:
            out.append((at, region.end_ms))
    return sorted(out)
