"""Audio redaction (analysis/stages/audio_redaction.py): the redacted words' time ranges, and the served FLAC with
every sample inside them replaced by the fill on every channel, the rest of the recording kept, memory flat."""

from __future__ import annotations

import tracemalloc

import av
import numpy as np
import pytest

from callscope.analysis.result import TranscriptSegment, TranscriptWord
from callscope.analysis.stages.audio_redaction import (
    RedactedAudio,
    blanked_spans,
    fill_samples,
    redact_audio_file,
    redacted_spans,
)
from callscope.errors import ValidationFailed
from tests.analysis import speech
from tests.audio_samples import JPEG_BYTES, make_audio, make_large_wav, make_video_mp4, truncate

SPANS = [(400, 900), (1500, 1520), (2200, 2600)]


def segment(index: int, words: list[tuple[int, int, bool]]) -> TranscriptSegment:
    timed = [TranscriptWord(start_ms=s, end_ms=e, text=" w", probability=0.9, redacted=r,
                            entity="payment_card" if r else None) for s, e, r in words]
    return TranscriptSegment(id=index, speaker="speaker-1", channel=0, start_ms=words[0][0], end_ms=words[-1][1],
                             text="w " * len(words), words=timed)


def inside(spans: list[tuple[int, int]], rate: int, n: int, pad: int = 0) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    for s, e in spans:
        mask[max(0, s * rate // 1000 - pad): -(-e * rate // 1000) + pad] = True
    return mask


# --- the time ranges ------------------------------------------------------------------------------------------


def test_adjacent_redacted_words_are_one_range_with_the_gaps_between_them():
    segments = [segment(0, [(0, 100, False), (200, 400, True), (500, 700, True), (900, 1000, True),
                            (1200, 1300, False), (1500, 1600, True)])]
    assert redacted_spans(segments, 0) == [(100, 1200), (1300, 1600)]  # and the gaps to the words around them


def test_a_range_at_a_segment_s_edge_reaches_the_segment_s_edge():
    # Whisper gave a number read for two seconds, written as one word at the segment's start, 760 ms of it
    said = segment(0, [(1760, 2500, True), (2600, 2800, False), (3000, 3200, True)])
    said = said.model_copy(update={"start_ms": 500, "end_ms": 3900})
    assert redacted_spans([said], 0) == [(500, 2600), (2800, 3900)]
    inner = said.model_copy(update={"words": [w.model_copy(update={"redacted": i == 1})
                                              for i, w in enumerate(said.words)]})
    assert redacted_spans([inner], 0) == [(2500, 3000)]  # inside the segment: to the words around it


def test_a_value_s_first_word_timed_late_is_covered_from_the_word_before_it_within_the_reach():
    # issue 42: "four" said at 13.6 s, timed at 14.5 s; the word before it ended at 13.6 s
    said = segment(0, [(13_000, 13_600, False), (14_500, 14_700, True), (14_800, 15_000, True),
                       (17_000, 17_300, False)])
    assert redacted_spans([said], 500) == [(13_100, 16_500)]  # the next word 2 s on: 1 s reach, then the margin


def test_margins_widen_clamp_at_zero_and_merge_overlapping_or_touching_ranges():
    segments = [segment(0, [(30, 100, True), (200, 300, False), (400, 500, True), (700, 800, False)]),
                segment(1, [(1000, 1100, True), (1300, 1400, False)]),
                segment(2, [(560, 600, True)])]  # another speaker's, overlapping in time: sorted and merged
    assert redacted_spans(segments, 0) == [(30, 200), (300, 700), (1000, 1300)]
    assert redacted_spans(segments, 50) == [(0, 750), (950, 1350)]  # 250 and 250 touch: one range
    assert redacted_spans(segments, 150) == [(0, 1450)]
    assert redacted_spans([segment(0, [(0, 100, False)])], 200) == []


def test_speech_without_words_is_blanked_with_the_redacted_words_and_the_same_margin():
    segments = [segment(0, [(1000, 1100, True), (1300, 1400, False)])]
    assert blanked_spans(segments, [(50, 400), (1350, 2000)], 100) == [(0, 500), (900, 2100)]
    assert blanked_spans(segments, [], 100) == redacted_spans(segments, 100)


def test_the_tone_is_a_function_of_the_absolute_sample_index_at_minus_20_dbfs():
    whole = fill_samples("tone", 0, 16000, 16000)
    assert np.array_equal(fill_samples("tone", 1234, 500, 16000), whole[1234:1734])
    assert np.abs(whole).max() == pytest.approx(0.1, abs=1e-4)
    assert 20 * np.log10(np.abs(whole).max()) == pytest.approx(-20, abs=0.01)
    assert np.array_equal(np.round(whole * 32768), whole * 32768)  # on the s16 grid: the FLAC holds it exactly
    assert not fill_samples("silence", 7, 100, 8000).any()


# --- the served audio -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fill", ["silence", "tone"])
@pytest.mark.parametrize("channels", [1, 2])
@pytest.mark.parametrize("fmt", ["wav", "mp3", "ogg"])
def test_every_sample_in_a_span_is_the_fill_on_every_channel_and_the_rest_survives(tmp_path, fmt, channels, fill):
    source = make_audio(tmp_path / f"call.{fmt}", fmt, seconds=3.0, channels=channels, sample_rate=16000)
    original, rate = speech.read(source)
    served = redact_audio_file(source, tmp_path / "served.flac", SPANS, fill)
    out, out_rate = speech.read(tmp_path / "served.flac")
    with av.open(str(tmp_path / "served.flac")) as container:
        assert container.format.name == "flac"
        assert container.streams.audio[0].codec_context.format.name == "s16"
    assert served == RedactedAudio(duration_ms=out.shape[1] * 1000 // rate,
                                   size_bytes=(tmp_path / "served.flac").stat().st_size, channels=channels,
                                   sample_rate=rate)
    assert (out_rate, out.shape[0]) == (rate, channels)
    assert out.shape[1] == original.shape[1]  # the same decoded samples, none added or lost
    assert abs(out.shape[1] - 3 * 16000 * rate // 16000) <= 1152 * rate // 16000  # within a frame of 3 s
    for s, e in SPANS:
        lo, hi = s * rate // 1000, -(-e * rate // 1000)
        want = fill_samples(fill, lo, hi - lo, rate)
        for c in range(channels):
            if fill == "silence":
                assert not out[c, lo:hi].any()
            else:
                np.testing.assert_allclose(out[c, lo:hi], want, atol=1 / 32768, rtol=0)
    kept = ~inside(SPANS, rate, out.shape[1], pad=rate // 100)
    for c in range(channels):
        a, b = original[c, kept], out[c, kept]
        assert np.corrcoef(a, b)[0, 1] > 0.9999
        if fmt == "wav":  # lossless to lossless: the very samples
            assert np.array_equal(a, b)
        else:  # the same decoder's output, quantised to s16
            assert np.abs(np.clip(a, -1, 1) - b).max() <= 1 / 32768


def test_more_than_two_channels_are_downmixed_to_stereo(tmp_path):
    source = make_audio(tmp_path / "six.wav", "wav", seconds=1.0, channels=6, sample_rate=8000)
    served = redact_audio_file(source, tmp_path / "served.flac", [(100, 300)], "silence")
    out, rate = speech.read(tmp_path / "served.flac")
    assert (served.channels, served.sample_rate, out.shape[0], rate) == (2, 8000, 2, 8000)
    assert not out[:, 800:2400].any() and out[:, 3000:].any()


def test_memory_stays_flat_on_minutes_of_48_khz_stereo(tmp_path):
    seconds, rate = 120, 48000
    source = make_large_wav(tmp_path / "long.wav", 44 + seconds * rate * 4, sample_rate=rate, channels=2)
    spans = [(s * 1000, s * 1000 + 700) for s in range(5, seconds, 10)]
    tracemalloc.start()
    try:
        served = redact_audio_file(source, tmp_path / "served.flac", spans, "tone")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    decoded = seconds * rate * 2 * 4  # the whole file as float32: 46 MB
    assert served.duration_ms == seconds * 1000 and served.channels == 2
    assert peak < decoded / 20, f"peak {peak / 1e6:.1f} MB for {decoded / 1e6:.0f} MB decoded"


@pytest.mark.parametrize("kind", ["truncated", "garbage", "image", "no audio stream", "empty"])
def test_corrupt_input_is_a_validation_failure_and_leaves_no_file(tmp_path, kind):
    path = tmp_path / "bad.mp3"
    if kind == "truncated":
        truncate(make_audio(tmp_path / "bad.flac", "flac", seconds=2.0), 0.02)
        path = tmp_path / "bad.flac"
    elif kind == "garbage":
        path.write_bytes(b"\x00\x01not audio at all" * 200)
    elif kind == "image":
        path.write_bytes(JPEG_BYTES)
    elif kind == "no audio stream":
        path = make_video_mp4(tmp_path / "video.mp4", with_audio=False)
    else:
        path.write_bytes(b"")
    with pytest.raises(ValidationFailed):
        redact_audio_file(path, tmp_path / "served.flac", [(0, 100)], "silence")
    assert not (tmp_path / "served.flac").exists()


def test_a_missing_source_is_not_a_validation_failure(tmp_path):
    with pytest.raises(FileNotFoundError):
        redact_audio_file(tmp_path / "nowhere.wav", tmp_path / "served.flac", [], "silence")
