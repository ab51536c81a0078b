"""Putting the segmentation model's chunks together: speaker count, local-to-call speaker mapping, overlap."""

from __future__ import annotations

import numpy as np

from callscope.analysis.models.segmentation import CHUNK_FRAMES, FRAME_SAMPLES, ChunkActivity, frame_ms
from callscope.analysis.stages import speaker_activity as sa

STEP = 148  # frames between chunks


def chunks_of(timeline: np.ndarray, permutations: list[list[int]]) -> ChunkActivity:
    """Chunks of a known call-grid `timeline` (frames, 3) of three speakers' activity, chunk c naming speaker s
    as local speaker permutations[c][s] (as the model does: local names are arbitrary)."""
    starts = np.arange(len(permutations)) * STEP * FRAME_SAMPLES
    active = np.zeros((len(starts), CHUNK_FRAMES, 3), dtype=bool)
    for c, start in enumerate(starts):
        part = timeline[start // FRAME_SAMPLES : start // FRAME_SAMPLES + CHUNK_FRAMES]
        for speaker, local in enumerate(permutations[c]):
            active[c, : len(part), local] = part[:, speaker]
    return ChunkActivity(starts, active)


def test_frame_of_inverts_frame_ms():
    for frame in (0, 1, 57, 1000):
        assert sa.frame_of(frame_ms(frame) + 1) == frame
        assert sa.frame_of(frame_ms(frame + 1) - 1) == frame
    assert sa.frame_of(0) == 0


def test_local_speakers_map_to_the_call_speakers_and_overlap_gets_both():
    frames = CHUNK_FRAMES + 3 * STEP
    timeline = np.zeros((frames, 3), dtype=bool)
    timeline[50:400, 0] = True  # speaker 0, then speaker 1 with 40 frames of overlap, then 0 again
    timeline[360:700, 1] = True
    timeline[750:1000, 0] = True
    chunks = chunks_of(timeline, [[0, 1, 2], [1, 0, 2], [2, 1, 0], [0, 2, 1]])
    # windows (ms) labelled by the clustering: cluster 1 is speaker 0, cluster 0 speaker 1
    spans = [(round(frame_ms(a)), round(frame_ms(b))) for a, b in [(60, 150), (150, 300), (420, 520), (520, 680),
                                                                   (760, 850), (850, 990)]]
    labels = np.array([1, 1, 0, 0, 1, 1])
    coverage = sa.window_coverage(chunks.frames(), spans, labels, 2)
    mapping = sa.map_local_speakers(chunks, coverage)
    assert mapping[0, 0] == 1 and mapping[0, 1] == 0 and mapping[1, 1] == 1 and mapping[1, 0] == 0
    assert mapping[0, 2] == sa.NONE  # the third local speaker never speaks
    by_frame = sa.frame_labels(coverage, np.array([(a + b) / 2 for a, b in spans]), labels)
    activity = sa.speaker_activity(chunks, mapping, by_frame, 2)
    assert activity.active[100].tolist() == [False, True]
    assert activity.active[380].tolist() == [True, True]  # both talk at once
    assert activity.active[600].tolist() == [True, False]
    assert not activity.active[720].any()  # silence
    assert 500 < activity.overlap_ms() < 800  # 40 frames of 16.9 ms
    (start, end), = [r for r in activity.regions(0) if r[0] < frame_ms(600) < r[1]]
    assert abs(start - frame_ms(360)) < 40 and abs(end - frame_ms(700)) < 40


def test_a_local_speaker_holding_two_voices_follows_the_windows():
    """The model can hear two similar voices as one local speaker: its frames then go to the windows' speakers."""
    frames = CHUNK_FRAMES + STEP
    timeline = np.zeros((frames, 3), dtype=bool)
    timeline[20:700, 0] = True  # one local speaker throughout, two voices in the windows
    chunks = chunks_of(timeline, [[0, 1, 2], [0, 1, 2]])
    spans = [(round(frame_ms(a)), round(frame_ms(b))) for a, b in [(20, 200), (200, 360), (360, 530), (530, 700)]]
    labels = np.array([0, 0, 1, 1])
    coverage = sa.window_coverage(chunks.frames(), spans, labels, 2)
    mapping = sa.map_local_speakers(chunks, coverage)
    assert mapping[0, 0] == sa.MIXED
    by_frame = sa.frame_labels(coverage, np.array([(a + b) / 2 for a, b in spans]), labels)
    activity = sa.speaker_activity(chunks, mapping, by_frame, 2)
    assert activity.active[100].tolist() == [True, False] and activity.active[600].tolist() == [False, True]
    assert activity.overlap_ms() == 0


def test_speaker_count_averages_the_chunks():
    timeline = np.zeros((CHUNK_FRAMES + STEP, 3), dtype=bool)
    timeline[100:200, :2] = True
    chunks = chunks_of(timeline, [[0, 1, 2], [2, 0, 1]])
    chunks.active[1, :, :] = False  # the second chunk hears nothing: its edge frames weigh little
    count = sa.speaker_count(chunks)
    assert count[150] == 2 and count[50] == 0 and count.max() <= sa.MAX_OVERLAP
