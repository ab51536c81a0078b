"""timing.to_speech: word and segment times moved into their channel's speech; timing.unheard: the speech no word
accounts for."""

from __future__ import annotations

from callscope.analysis.result import TranscriptSegment, TranscriptWord
from callscope.analysis.stages.diarize_by_channel import merge_channels
from callscope.analysis.stages.timing import MAX_SHIFT_MS, UNHEARD_MIN_MS, UNHEARD_REACH_MS, to_speech, unheard
from callscope.analysis.types import SpeechRegion


def words(*spans: tuple[int, int]) -> list[TranscriptWord]:
    return [TranscriptWord(start_ms=s, end_ms=e, text=f"w{i}", probability=0.9) for i, (s, e) in enumerate(spans)]


def segment(start: int, end: int, *spans: tuple[int, int], channel: int = 0) -> TranscriptSegment:
    return TranscriptSegment(id=0, speaker="?", channel=channel, start_ms=start, end_ms=end, text="x",
                             words=words(*spans))


def regions(*spans: tuple[int, int], channel: int = 0) -> list[SpeechRegion]:
    return [SpeechRegion(channel=channel, start_ms=s, end_ms=e) for s, e in spans]


def times(seg: TranscriptSegment) -> list[tuple[int, int]]:
    return [(w.start_ms, w.end_ms) for w in seg.words]


def test_a_late_last_word_ends_with_the_speech_and_the_segment_with_it():
    # the voice stops at 1800 ms; Whisper ends the turn at 2400 ms
    [out] = to_speech([segment(950, 2400, (950, 1400), (1400, 2400))], regions((1000, 1800)))
    assert times(out) == [(1000, 1400), (1400, 1800)]
    assert (out.start_ms, out.end_ms) == (1000, 1800)


def test_a_word_wholly_in_the_silence_after_a_turn_moves_to_its_end():
    [out] = to_speech([segment(1000, 2300, (1000, 1700), (1900, 2300))], regions((1000, 1800), (5000, 6000)))
    assert times(out) == [(1000, 1700), (1800, 1800)]
    assert out.end_ms == 1800


def test_a_word_in_a_silence_moves_to_the_nearer_region():
    [out] = to_speech([segment(2100, 2900, (2100, 2300), (2800, 2900))], regions((0, 2000), (3000, 4000)))
    assert times(out) == [(2000, 2000), (3000, 3000)]


def test_a_word_far_from_any_speech_keeps_its_times():
    far = 2000 + MAX_SHIFT_MS + 500
    [out] = to_speech([segment(far, far + 300, (far, far + 300))], regions((0, 2000)))
    assert times(out) == [(far, far + 300)] and (out.start_ms, out.end_ms) == (far, far + 300)


def test_a_word_across_a_short_silence_spans_both_regions():
    [out] = to_speech([segment(900, 2200, (900, 2200))], regions((1000, 1500), (1700, 2100)))
    assert times(out) == [(1000, 2100)]


def test_words_stay_in_order_and_inside_their_segment():
    spans = [(0, 300), (350, 900), (950, 1700), (1750, 2600), (2650, 3900), (4000, 4100)]
    [out] = to_speech([segment(0, 4100, *spans)], regions((100, 800), (1000, 2000), (3000, 3500)))
    starts = [w.start_ms for w in out.words]
    assert starts == sorted(starts)
    assert all(w.start_ms <= w.end_ms for w in out.words)
    assert out.start_ms <= out.words[0].start_ms and out.end_ms >= max(w.end_ms for w in out.words)
    assert out.start_ms >= 100 and out.end_ms <= 4100


def test_a_turn_whose_words_end_early_ends_with_its_speech():
    # the last digit's word ends at 8070 ms, the voice at 8350 ms; the word starts 60 ms after the voice
    [out] = to_speech([segment(6100, 8070, (6140, 7000), (7800, 8070))], regions((6080, 7450), (7750, 8350)))
    assert (out.start_ms, out.end_ms) == (6080, 8350)
    assert times(out) == [(6140, 7000), (7800, 8070)]


def test_segments_in_one_speech_region_do_not_overlap():
    first = segment(1200, 2000, (1200, 2000))
    second = segment(2600, 3500, (2600, 3500))
    a, b = to_speech([first, second], regions((1000, 4000)))
    assert (a.start_ms, a.end_ms, b.start_ms, b.end_ms) == (1000, 2600, 2600, 4000)


def test_a_segment_without_words_is_clipped_to_its_speech_or_kept():
    bare = TranscriptSegment(id=0, speaker="?", channel=0, start_ms=500, end_ms=2500, text="x")
    [out] = to_speech([bare], regions((1000, 2000)))
    assert (out.start_ms, out.end_ms) == (1000, 2000)
    [kept] = to_speech([bare], regions((3000, 4000)))
    assert (kept.start_ms, kept.end_ms) == (500, 2500)


def test_no_speech_regions_change_nothing_and_the_input_is_not_changed():
    seg = segment(950, 2400, (950, 1400), (1400, 2400))
    assert to_speech([seg], []) == [seg]
    to_speech([seg], regions((1000, 1800)))
    assert times(seg) == [(950, 1400), (1400, 2400)]


def test_stereo_turns_no_longer_run_into_the_other_channels_next_turn():
    # left speaks 0-1.8 s, right answers from 2.0 s; Whisper's left turn ends at 2.4 s
    left = to_speech([segment(0, 2400, (0, 900), (900, 2400))], regions((0, 1800)))
    right = to_speech([segment(2000, 3000, (2000, 3000), channel=1)], regions((2000, 3000), channel=1))
    first, second = merge_channels([left, right])
    assert first.end_ms <= second.start_ms


def test_speech_no_word_accounts_for_is_unheard_on_its_own_channel_only():
    # a 10 s turn of which Whisper wrote one word at its end, a turn it skipped, and the other channel's speech
    said = [segment(1_000, 11_000, (9_500, 10_000)), segment(20_000, 21_000, (20_000, 21_000), channel=1)]
    speech = [*regions((1_000, 11_000), (13_000, 15_000)), *regions((20_000, 21_000), (30_000, 31_000), channel=1)]
    assert unheard(said, speech) == [(1_000, 9_500 - UNHEARD_REACH_MS), (10_000 + UNHEARD_REACH_MS, 11_000),
                                     (13_000, 15_000), (30_000, 31_000)]


def test_speech_near_a_word_or_too_short_to_say_a_digit_is_heard():
    # a digit timed 0.1 s in a second of speech, and a breath between two words
    said = [segment(0, 5_000, (400, 500), (2_000, 2_300), (2_300 + 2 * UNHEARD_REACH_MS + UNHEARD_MIN_MS - 10, 4_000))]
    assert unheard(said, regions((0, 1_000), (1_900, 4_000))) == []
    assert unheard([], regions((0, UNHEARD_MIN_MS - 1))) == []


def test_a_segment_whisper_hallucinated_accounts_for_no_speech():
    said = segment(1_000, 5_000, (1_000, 5_000)).model_copy(update={
        "text": "If you are interested in this video, don't forget to subscribe to the channel."})
    assert unheard([said], regions((1_000, 5_000))) == [(1_000, 5_000)]
