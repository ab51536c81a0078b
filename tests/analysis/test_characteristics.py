"""characteristics: talk time, non-talk time, words per minute and interruptions per speaker."""

from __future__ import annotations

from callscope.analysis.result import TranscriptSegment
from callscope.analysis.stages.characteristics import characteristics, count_interruptions, talk_spans
from tests.analysis.transcripts import long_dialogue, segment, word


def seg(id: int, start: int, end: int, words: int, channel: int = 0) -> TranscriptSegment:
    step = (end - start) // words
    return TranscriptSegment(id=id, channel=channel, speaker=f"speaker-{channel + 1}", start_ms=start, end_ms=end,
                             text=" ".join(["word"] * words),
                             words=[word(start + i * step, end if i == words - 1 else start + (i + 1) * step, "word")
                                    for i in range(words)])


def test_talk_time_per_speaker_and_words_per_minute():
    dialogue = [seg(0, 0, 30_000, 60), seg(1, 31_000, 46_000, 30, channel=1), seg(2, 50_000, 80_000, 90)]
    c = characteristics(dialogue, 100_000)
    one, two = c.speaker("speaker-1"), c.speaker("speaker-2")
    assert (one.talk_time_ms, one.words, one.words_per_minute) == (60_000, 150, 150.0)
    assert (two.talk_time_ms, two.words, two.words_per_minute, two.channel) == (15_000, 30, 120.0, 1)
    assert [s.speaker for s in c.speakers] == ["speaker-1", "speaker-2"]


def test_non_talk_time_is_duration_minus_the_union_of_speech():
    # Overlapping speech counts once; silence before, between and after counts as non-talk.
    dialogue = [seg(0, 1000, 5000, 4), seg(1, 4000, 6000, 2, channel=1), seg(2, 9000, 10_000, 1)]
    c = characteristics(dialogue, 12_000)
    assert c.talk_time_ms == 6000  # 1000..6000 and 9000..10000
    assert c.non_talk_time_ms == 6000
    assert characteristics([], 5000).non_talk_time_ms == 5000
    assert characteristics([], 5000).speakers == []


def test_a_silence_of_a_second_or_more_inside_a_segment_is_not_talk():
    words = [word(0, 400, "a", 1.0), word(700, 1000, "b", 1.0), word(5000, 5500, "c", 1.0)]
    said = segment(0, 0, "speaker-1", 0, 5500, "a b c", words)
    assert talk_spans(said) == [(0, 1000), (5000, 5500)]
    c = characteristics([said], 6000)
    assert c.speaker("speaker-1").talk_time_ms == 1500 and c.non_talk_time_ms == 4500
    assert c.speaker("speaker-1").words_per_minute == 120.0


def test_segments_without_words_count_whole_with_the_words_of_their_text():
    c = characteristics([segment(0, 0, "speaker-1", 0, 30_000, "one two three four")], 30_000)
    assert c.speaker("speaker-1").talk_time_ms == 30_000 and c.speaker("speaker-1").words_per_minute == 8.0


def test_interruptions_are_counted_for_the_speaker_who_starts_over_the_other():
    dialogue = [
        seg(0, 0, 5000, 10),
        seg(1, 4000, 7000, 6, channel=1),      # starts 1000 ms before speaker-1 ends: interruption
        seg(2, 6800, 9000, 4),                 # starts 200 ms before speaker-2 ends: overlap too short
        seg(3, 10_000, 15_000, 10),
        seg(4, 11_000, 11_200, 1, channel=1),  # a 200 ms back-channel inside: not an interruption
        seg(5, 12_000, 12_300, 1, channel=1),  # 300 ms inside: interruption (boundary)
        seg(6, 16_000, 17_000, 2, channel=1),  # after the others: not an interruption
    ]
    assert count_interruptions(dialogue) == {"speaker-2": 2}
    c = characteristics(dialogue, 20_000)
    assert c.speaker("speaker-1").interruptions == 0 and c.speaker("speaker-2").interruptions == 2


def test_starting_together_is_no_interruption_and_speakers_do_not_interrupt_themselves():
    assert count_interruptions([seg(0, 0, 2000, 2), seg(1, 0, 2000, 2, channel=1)]) == {}
    assert count_interruptions([seg(0, 0, 2000, 2), seg(1, 1000, 3000, 2)]) == {}


def test_speech_past_the_duration_is_clamped():
    c = characteristics([seg(0, 0, 12_000, 12)], 10_000)
    assert c.talk_time_ms == 10_000 and c.non_talk_time_ms == 0


def test_interruptions_are_those_of_every_pair_and_counted_in_linear_time():
    # the one-pass count agrees with the rule applied to every pair of segments
    dialogue = long_dialogue(10)
    pairs: dict[str, int] = {}
    for b in dialogue:
        if any(a.speaker != b.speaker and a.start_ms < b.start_ms < a.end_ms
               and min(a.end_ms, b.end_ms) - b.start_ms >= 300 for a in dialogue):
            pairs[b.speaker] = pairs.get(b.speaker, 0) + 1
    assert count_interruptions(dialogue) == pairs and sum(pairs.values()) > 0
