"""find_pauses: every documented rule on hand-built segments and VAD regions."""

from __future__ import annotations

import pytest

from callscope.analysis.result import Pause, PauseRules, TranscriptSegment
from callscope.analysis.stages.pauses import announces_hold, find_pauses, rules_for, union
from callscope.analysis.types import SpeechRegion
from callscope.resources.kinds import ProjectSpec
from tests.analysis.transcripts import long_dialogue, segment, word


def seg(id: int, start: int, end: int, text: str = "fine thanks", channel: int = 0) -> TranscriptSegment:
    words = text.split()
    step = (end - start) // len(words)
    return TranscriptSegment(id=id, channel=channel, speaker=f"speaker-{channel + 1}", start_ms=start, end_ms=end,
                             text=text,
                             words=[word(start + i * step, end if i == len(words) - 1 else start + (i + 1) * step, w)
                                    for i, w in enumerate(words)])


def vad(*spans: tuple[int, int], channel: int = 0) -> list[SpeechRegion]:
    return [SpeechRegion(channel, s, e) for s, e in spans]


def two_turns(gap_ms: int, first: str = "fine thanks") -> list[TranscriptSegment]:
    return [seg(0, 1000, 2000, first), seg(1, 2000 + gap_ms, 3000 + gap_ms, "ok then", channel=1)]


def test_rules_from_project_and_defaults():
    assert PauseRules().long_pause_threshold_ms == 5000
    assert PauseRules().max_hold_ms == 120_000 and PauseRules().min_pause_ms == 1000
    assert "please hold" in PauseRules().hold_phrases and "bear with me" in PauseRules().hold_phrases
    assert rules_for(None).long_pause_threshold_ms == 5000
    unset = ProjectSpec(name="p", language="en")
    assert rules_for(unset).long_pause_threshold_ms == 5000
    spec = ProjectSpec(name="p", language="en", long_pause_threshold_seconds=8)
    assert rules_for(spec).long_pause_threshold_ms == 8000
    assert rules_for(spec, max_hold_ms=60_000).max_hold_ms == 60_000


def test_a_short_pause_is_not_long_and_compliant():
    [pause] = find_pauses(two_turns(2000), [], 10_000)
    assert pause == Pause(start_ms=2000, end_ms=4000, duration_ms=2000, compliant=True, after_dialogue_id=0,
                          long=False)


def test_threshold_boundary():
    rules = PauseRules(long_pause_threshold_ms=5000)
    [below] = find_pauses(two_turns(4999), [], 20_000, rules)
    [at] = find_pauses(two_turns(5000), [], 20_000, rules)
    assert not below.long and below.compliant
    assert at.long and not at.compliant  # long and no hold announced


def test_gaps_shorter_than_min_pause_are_ignored():
    assert find_pauses(two_turns(999), [], 10_000) == []
    assert len(find_pauses(two_turns(1000), [], 10_000)) == 1
    assert find_pauses(two_turns(1500), [], 10_000, PauseRules(min_pause_ms=2000)) == []


def test_long_pause_after_a_hold_phrase_is_compliant_up_to_max_hold():
    rules = PauseRules(long_pause_threshold_ms=5000, max_hold_ms=60_000)
    [held] = find_pauses(two_turns(6000, "Please hold, I'll check."), [], 100_000, rules)
    assert held.long and held.compliant
    [at_max] = find_pauses(two_turns(60_000, "One moment please"), [], 100_000, rules)
    assert at_max.long and at_max.compliant
    [too_long] = find_pauses(two_turns(60_001, "One moment please"), [], 100_000, rules)
    assert too_long.long and not too_long.compliant


def test_hold_phrases_match_whole_words_case_insensitively():
    rules = PauseRules()
    assert announces_hold(rules, "Okay, BEAR with me.")
    assert announces_hold(rules, "let me check that for you")
    assert not announces_hold(rules, "I'll put the household on the plan")  # "hold" inside a word
    assert not announces_hold(rules, "please holding")
    custom = PauseRules(hold_phrases=["un momento"])
    assert announces_hold(custom, "Un momento, por favor") and not announces_hold(custom, "please hold")


def test_hold_phrase_must_be_in_the_segment_before_the_pause():
    dialogue = [seg(0, 0, 1000, "please hold"), seg(1, 1200, 2000, "sure", channel=1),
                seg(2, 9000, 10_000, "thanks for waiting")]
    [pause] = find_pauses(dialogue, [], 12_000)
    assert pause.after_dialogue_id == 1 and pause.long and not pause.compliant


def test_speech_on_any_channel_or_in_vad_fills_the_gap():
    dialogue = two_turns(6000)  # silence 2000..8000 in the words
    # VAD hears speech on the other channel in the middle: two shorter gaps remain.
    pauses = find_pauses(dialogue, vad((4000, 5000), channel=1), 12_000)
    assert [(p.start_ms, p.end_ms, p.long) for p in pauses] == [(2000, 4000, False), (5000, 8000, False)]
    assert [p.after_dialogue_id for p in pauses] == [0, 0]
    # VAD regions that extend the words shorten the pause.
    [pause] = find_pauses(dialogue, vad((900, 2300)) + vad((7600, 9100), channel=1), 12_000)
    assert (pause.start_ms, pause.end_ms) == (2300, 7600)


def test_after_dialogue_id_is_the_last_segment_that_ended_before_the_gap():
    dialogue = [seg(0, 0, 3000, "a long first turn"), seg(1, 500, 1500, "mm hm", channel=1),
                seg(2, 6000, 7000, "next")]
    [pause] = find_pauses(dialogue, [], 8000)
    assert (pause.start_ms, pause.end_ms, pause.after_dialogue_id) == (3000, 6000, 0)
    dialogue = [seg(0, 0, 1500, "hello there"), seg(1, 1000, 2500, "hi how are you", channel=1),
                seg(2, 6000, 7000, "next")]
    assert find_pauses(dialogue, [], 8000)[0].after_dialogue_id == 1


def test_a_silence_inside_one_segment_is_a_pause_after_that_segment():
    words = [word(0, 500, "please", 0.9), word(500, 1000, "hold", 0.9), word(8000, 9000, "thanks", 0.9)]
    dialogue = [segment(0, 0, "speaker-1", 0, 9000, "please hold thanks", words)]
    [pause] = find_pauses(dialogue, [], 10_000)
    assert (pause.start_ms, pause.end_ms, pause.after_dialogue_id, pause.long, pause.compliant) == (
        1000, 8000, 0, True, True)


def test_leading_and_trailing_silence_are_excluded():
    dialogue = [seg(0, 10_000, 11_000), seg(1, 12_500, 13_000, "bye", channel=1)]
    pauses = find_pauses(dialogue, [], 60_000)
    assert [(p.start_ms, p.end_ms) for p in pauses] == [(11_000, 12_500)]
    # Noise that VAD took for speech before the first and after the last word opens no pause either.
    pauses = find_pauses(dialogue, vad((1000, 2000), (40_000, 41_000)), 60_000)
    assert [(p.start_ms, p.end_ms) for p in pauses] == [(11_000, 12_500)]


def test_no_dialogue_no_pauses():
    assert find_pauses([], vad((0, 1000), (5000, 6000)), 10_000) == []
    assert find_pauses([seg(0, 0, 1000)], [], 10_000) == []


def test_segments_without_words_count_by_their_span():
    dialogue = [segment(0, 0, "speaker-1", 0, 1000, "hello"), segment(1, 1, "speaker-2", 3000, 4000, "hi")]
    [pause] = find_pauses(dialogue, [], 5000)
    assert (pause.start_ms, pause.end_ms, pause.after_dialogue_id) == (1000, 3000, 0)


@pytest.mark.parametrize("spans,expected", [
    ([], []),
    ([(5, 10), (0, 3), (3, 4), (8, 12), (20, 20)], [(0, 4), (5, 12)]),
])
def test_union(spans, expected):
    assert union(spans) == expected


def test_an_hours_pauses_are_four_quarter_hours_pauses():
    # each gap's last piece said before it is found by bisection (its cost per audio minute is in
    # benchmarks/call_lengths.py, not timed here)
    quarter, hour = long_dialogue(15), long_dialogue(60)
    assert abs(len(find_pauses(hour, [], 3_600_000)) - 4 * len(find_pauses(quarter, [], 900_000))) <= 4
