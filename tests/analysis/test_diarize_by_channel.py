"""merge_channels: one dialogue by start time, ids renumbered, speakers by channel."""

from __future__ import annotations

from callscope.analysis.result import TranscriptSegment
from callscope.analysis.stages.diarize_by_channel import merge_channels
from tests.analysis.transcripts import word


def seg(start: int, end: int, text: str, channel: int = 0, id: int = 0) -> TranscriptSegment:
    return TranscriptSegment(id=id, channel=channel, speaker="?", start_ms=start, end_ms=end, text=text,
                             words=[word(start, end, text, 0.9)])


def test_stereo_segments_are_ordered_by_start_and_renumbered():
    left = [seg(0, 1000, "hello", id=0), seg(3000, 4000, "how can I help", id=1)]
    right = [seg(1200, 2500, "hi there", id=0), seg(4500, 5000, "my bill", id=1)]
    dialogue = merge_channels([left, right])
    assert [s.text for s in dialogue] == ["hello", "hi there", "how can I help", "my bill"]
    assert [s.id for s in dialogue] == [0, 1, 2, 3]
    assert [s.speaker for s in dialogue] == ["speaker-1", "speaker-2", "speaker-1", "speaker-2"]
    assert [s.channel for s in dialogue] == [0, 1, 0, 1]
    assert dialogue[0].words == left[0].words


def test_ties_are_broken_by_channel():
    dialogue = merge_channels([[seg(500, 900, "left")], [seg(500, 800, "right")]])
    assert [(s.text, s.speaker) for s in dialogue] == [("left", "speaker-1"), ("right", "speaker-2")]
    dialogue = merge_channels([[seg(600, 900, "left")], [seg(500, 800, "right")]])
    assert [s.text for s in dialogue] == ["right", "left"]


def test_mono_is_one_speaker_and_inputs_are_not_changed():
    segments = [seg(2000, 3000, "b", id=7), seg(0, 1000, "a", id=9)]
    dialogue = merge_channels([segments])
    assert [(s.id, s.text, s.speaker) for s in dialogue] == [(0, "a", "speaker-1"), (1, "b", "speaker-1")]
    assert [s.id for s in segments] == [7, 9] and segments[0].speaker == "?"


def test_empty():
    assert merge_channels([]) == [] and merge_channels([[], []]) == []


def test_a_segment_is_cut_where_its_words_are_a_pause_apart():
    from callscope.analysis.stages.diarize_by_channel import split_at_gaps

    words = [word(0, 400, "Please", 0.9), word(450, 800, "hold.", 0.9),  # 5 s of silence, then
             word(5800, 6200, "Thank", 0.9), word(6250, 6600, "you.", 0.9), word(7500, 7900, "Right.", 0.9)]
    segment = TranscriptSegment(id=3, channel=1, speaker="channel-1", start_ms=0, end_ms=8000,
                                text="Please hold. Thank you. Right.", words=words)
    pieces = split_at_gaps([segment], gap_ms=1000)
    assert [(p.start_ms, p.end_ms, p.text) for p in pieces] == [(0, 800, "Please hold."), (5800, 8000,
                                                                                           "Thank you. Right.")]
    assert [len(p.words) for p in pieces] == [2, 3] and all(p.channel == 1 for p in pieces)
    assert split_at_gaps([segment], gap_ms=6000) == [segment]  # no gap that long: unchanged
    empty = TranscriptSegment(id=0, channel=0, speaker="channel-0", start_ms=0, end_ms=500, text="Hm.")
    assert split_at_gaps([empty], gap_ms=1000) == [empty]
