"""analysis.diarize: mono calls split into speakers by speaker embeddings (espeak-ng voices, real VAD and ASR)."""

from __future__ import annotations

import numpy as np
import pytest

from callscope.analysis.models.campplus import CamPlusPlus, load_campplus
from callscope.analysis.models.segmentation import frame_ms, load_segmenter
from callscope.analysis.models.speaker_encoder import load_speaker_encoder
from callscope.analysis.result import TranscriptSegment
from callscope.analysis.stages import diarize_by_voice, vad
from callscope.analysis.stages.speaker_activity import SpeakerActivity, frame_of
from callscope.analysis.stages.timing import to_speech
from callscope.analysis.types import Audio, SpeechRegion
from callscope.config import Settings
from tests.analysis.speech import ESPEAK, SKIP_REASON
from tests.analysis.transcripts import word
from tests.analysis.voices import AGENT, CUSTOMER, VOICE_PAIRS, conversation, der, dialogue_lines

needs_speech = pytest.mark.skipif(ESPEAK is None, reason=SKIP_REASON)
MAX_DER = 0.15  # the target for synthetic two-voice calls


@pytest.fixture(scope="module")
def ge2e():
    return load_speaker_encoder(Settings())


@pytest.fixture(scope="module")
def campplus():
    return load_campplus()


@pytest.fixture(scope="module")
def segmenter():
    return load_segmenter()


@pytest.fixture(scope="module", params=["campplus", "ge2e"])
def encoder(request):
    """Each diarization model (CALLSCOPE_DIARIZATION_MODEL): the synthetic calls must pass with both."""
    return request.getfixturevalue(request.param)


def labelled_speech(call, encoder) -> tuple[int, list[tuple[int, int, int]]]:
    """(speakers found, VAD speech in 100 ms steps labelled by the nearest window): diarization without ASR."""
    audio = Audio(channels=(call.samples,))
    regions = vad.detect_speech(audio, 0)
    windows, labels = diarize_by_voice.label_speech(audio, regions, encoder)
    centers = np.array([w.center_ms for w in windows])
    spans = [(t, min(t + 100, r.end_ms), diarize_by_voice.speaker_at(centers, labels, t, min(t + 100, r.end_ms)))
             for r in regions for t in range(r.start_ms, r.end_ms, 100)]
    return int(labels.max()) + 1, spans


# --- pure parts --------------------------------------------------------------------------------


def test_region_windows_cover_the_region():
    assert diarize_by_voice.region_windows(0, 300) == []  # a click
    short = diarize_by_voice.region_windows(1000, 1900)
    assert short == [diarize_by_voice.Window(1000, 1900, 900)] and short[0].weak
    long = diarize_by_voice.region_windows(0, 4000)
    assert [(w.start_ms, w.end_ms) for w in long] == [(0, 1600), (800, 2400), (1600, 3200), (2400, 4000)]
    assert not any(w.weak for w in long)


def test_der_scores_perfect_swapped_and_missed_speech():
    reference = [(0, 2000, 0), (2500, 4000, 1)]
    assert der(reference, [(0, 2000, "b"), (2500, 4000, "a")]) == 0  # labels are mapped
    assert der(reference, [(0, 4000, "a")]) > 0.3  # one label for both, and speech in the gap
    assert der(reference, []) == 1.0


def seg(id: int, start: int, end: int, words: list[tuple[int, int, str]]) -> TranscriptSegment:
    return TranscriptSegment(id=id, channel=0, speaker="speaker-1", start_ms=start, end_ms=end,
                             text=" ".join(w for _, _, w in words), words=[word(s, e, w) for s, e, w in words])


def test_relabel_splits_segments_where_the_speaker_changes():
    windows = [diarize_by_voice.Window(0, 1600), diarize_by_voice.Window(800, 2400),
               diarize_by_voice.Window(3000, 4600), diarize_by_voice.Window(5000, 6600)]
    labels = np.array([1, 1, 0, 1])  # cluster 1 speaks first: it must become speaker-1
    segments = [
        seg(5, 0, 4600, [(100, 600, "Hello,"), (700, 1500, "thanks."), (3100, 3600, "Hi,"), (3700, 4500, "yes.")]),
        seg(9, 5000, 6600, [(5100, 6500, "Goodbye.")]),
    ]
    out = diarize_by_voice.relabel(segments, windows, labels)
    assert [(s.id, s.speaker, s.text) for s in out] == [
        (0, "speaker-1", "Hello, thanks."), (1, "speaker-2", "Hi, yes."), (2, "speaker-1", "Goodbye.")]
    assert (out[0].start_ms, out[0].end_ms, out[1].start_ms, out[1].end_ms) == (0, 1500, 3100, 4600)
    assert [w.text for w in out[1].words] == ["Hi,", "yes."]
    assert segments[0].speaker == "speaker-1" and len(segments[0].words) == 4  # inputs unchanged


def test_relabel_follows_speaker_activity_and_keeps_overlap():
    """With the segmentation's activity, each speaker's segments follow that speaker's voice: two segments
    overlap where both talk at once."""
    active = np.zeros((400, 2), dtype=bool)
    active[frame_of(0) : frame_of(2600), 1] = True  # cluster 1 speaks first, until 2.6 s
    active[frame_of(2200) : frame_of(5000), 0] = True  # cluster 0 from 2.2 s: 0.4 s of overlap
    windows = [diarize_by_voice.Window(0, 1500), diarize_by_voice.Window(3000, 4500)]
    labels = np.array([1, 0])
    segments = [seg(0, 100, 4800, [(100, 600, "Hello"), (700, 2000, "there."), (2700, 3600, "Hi,"),
                                   (3700, 4800, "yes.")])]
    out = diarize_by_voice.relabel(segments, windows, labels, SpeakerActivity(active))
    assert [(s.speaker, s.text) for s in out] == [("speaker-1", "Hello there."), ("speaker-2", "Hi, yes.")]
    assert out[0].end_ms == round(frame_ms(frame_of(2600)))  # to the end of that voice, into the overlap
    assert out[1].start_ms == round(frame_ms(frame_of(2200)))
    assert out[0].end_ms > out[1].start_ms


def test_no_speech_keeps_one_speaker(encoder):
    audio = Audio(channels=(np.zeros(16000, np.float32),))
    segments = [seg(0, 0, 500, [(0, 500, "Hm.")])]
    out, info = diarize_by_voice.diarize_mono(audio, [], segments, encoder)
    assert [(s.speaker, s.text) for s in out] == [("speaker-1", "Hm.")] and info.speakers == 1 and info.windows == 0


# --- synthetic calls ---------------------------------------------------------------------------


@needs_speech
def test_one_voice_stays_one_speaker(encoder):
    call = conversation(("en-us+m3",), [(0, text) for text in AGENT + CUSTOMER[:2]], 0.5)
    speakers, spans = labelled_speech(call, encoder)
    assert speakers == 1
    assert der(call.turns, spans) < 0.08  # only the VAD's edges


@needs_speech
@pytest.mark.parametrize("pair", VOICE_PAIRS[:2])
def test_two_voices_are_split_with_low_der(encoder, pair):
    gaps = list(np.random.default_rng(1).uniform(0.15, 1.0, 12))  # some under the VAD's 300 ms: joined turns
    call = conversation(pair, dialogue_lines(12), gaps)
    speakers, spans = labelled_speech(call, encoder)
    assert speakers == 2
    assert der(call.turns, spans) < MAX_DER


@needs_speech
def test_mono_call_with_whisper_segments(encoder, segmenter):
    from callscope.analysis.models.files import whisper_model_dir
    from callscope.analysis.stages.asr import Transcriber

    settings = Settings()
    call = conversation(VOICE_PAIRS[0], dialogue_lines(8), 0.7)
    audio = Audio(channels=(call.samples,))
    regions = vad.detect_speech(audio, 0)
    segments = Transcriber(whisper_model_dir(settings), settings.whisper_compute_type,
                           settings.analysis_threads).transcribe(audio, 0, "en", None)
    segments = to_speech(segments, regions)  # as the pipeline gives them
    campplus = isinstance(encoder, CamPlusPlus)  # as the pipeline runs it: CAM++ with the segmentation model
    dialogue, info = diarize_by_voice.diarize_mono(audio, regions, segments, encoder,
                                                   segmenter=segmenter if campplus else None)

    assert info.speakers == 2 and info.model == encoder.info and "2 speaker(s)" in info.detail
    assert (info.segmentation == segmenter.info) if campplus else info.segmentation is None
    assert [s.id for s in dialogue] == list(range(len(dialogue)))
    assert [s.start_ms for s in dialogue] == sorted(s.start_ms for s in dialogue)
    assert dialogue[0].speaker == "speaker-1"  # the agent spoke first
    assert {s.speaker for s in dialogue} == {"speaker-1", "speaker-2"}
    assert " ".join(s.text for s in dialogue).split() == " ".join(s.text for s in segments).split()  # no words lost
    error = der(call.turns, [(s.start_ms, s.end_ms, s.speaker) for s in dialogue])
    assert error < MAX_DER, error
    # each reference turn is mostly one speaker's: the customer's line is not the agent's
    agent = [s for s in dialogue if "change the address" in s.text.lower()]
    assert agent and all(s.speaker == "speaker-2" for s in agent)


def test_short_speech_is_not_embedded(ge2e):
    audio = Audio(channels=(np.zeros(32000, np.float32),))
    windows, embeddings = diarize_by_voice.embed_windows(audio, [SpeechRegion(0, 100, 350)], ge2e)
    assert windows == [] and embeddings.shape == (0, 256)


def test_campplus_windows_cover_each_region():
    regions = [SpeechRegion(0, 5000, 5300), SpeechRegion(0, 0, 4000), SpeechRegion(0, 6000, 7000)]
    windows = diarize_by_voice.campplus_windows(regions)
    assert [(w.start_ms, w.end_ms) for w in windows] == [(0, 1500), (750, 2250), (1500, 3000), (2250, 3750),
                                                         (2500, 4000), (6000, 7000)]  # 300 ms: none


def test_spectral_clustering_finds_the_clusters_and_keeps_few_windows_one_speaker():
    rng = np.random.default_rng(0)
    centres = rng.standard_normal((3, 192))
    points = np.concatenate([c + 0.35 * rng.standard_normal((20, 192)) for c in centres])
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    labels = diarize_by_voice.spectral_cluster(points)
    assert len(set(labels.tolist())) == 3
    assert all(len(set(labels[i * 20:(i + 1) * 20].tolist())) == 1 for i in range(3))
    assert diarize_by_voice.spectral_cluster(points[:diarize_by_voice.CAMPP_MIN_WINDOWS - 1]).tolist() == [0] * 9


def test_small_clusters_fold_and_similar_clusters_merge():
    e = np.array([[1, 0], [1, 0], [0.99, 0.14], [0, 1], [0, 1], [0.1, 0.99]], dtype=float)
    e /= np.linalg.norm(e, axis=1, keepdims=True)
    assert (diarize_by_voice.fold_small_clusters(e, np.array([0, 0, 0, 1, 1, 2]), min_size=2).tolist()
            == [0, 0, 0, 1, 1, 1])
    assert (diarize_by_voice.merge_similar_clusters(e, np.array([0, 0, 1, 2, 2, 2]), cosine=0.9).tolist()
            == [0, 0, 0, 1, 1, 1])
    assert (diarize_by_voice.merge_similar_clusters(e, np.array([0, 0, 0, 1, 1, 1]), cosine=0.9).tolist()
            == [0, 0, 0, 1, 1, 1])


def call_embeddings(speakers: int, windows: int, seed: int = 0, utterances: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """(embeddings, true speaker) of the windows of a call, in time order, shaped as CAM++'s of real voices: cosine
    about 0.35 between two voices' windows, 0.6 between one voice's; turns of 5-40 consecutive windows, each near one
    of its voice's `utterances` (what is said moves a voice's windows: over thousands of them, each window's nearest
    are of its own utterance)."""
    rng = np.random.default_rng(seed)
    voices = np.sqrt(0.35) * rng.standard_normal(192) + 0.5 * rng.standard_normal((speakers, 192))
    said = voices[:, None, :] + np.sqrt(0.15) * rng.standard_normal((speakers, utterances, 192))
    truth, points, last = [], [], -1
    while len(truth) < windows:
        last = int(rng.choice([s for s in range(speakers) if s != last] or [0]))
        length = int(rng.integers(5, 41))
        points.append(said[last, rng.integers(utterances)] + np.sqrt(0.2) * rng.standard_normal((length, 192)))
        truth += [last] * length
    points = np.concatenate(points)[:windows]
    return points / np.linalg.norm(points, axis=1, keepdims=True), np.array(truth[:windows])


def test_thousands_of_windows_of_k_voices_give_k_speakers():
    # a 60-minute call has ~4,000 windows: spectral clustering over all of them splits and merges voices (here 4
    # speakers of 2; issue 24: 1 of 7), and its eigen-decomposition takes minutes
    for speakers, windows in ((2, 2000), (6, 4000)):
        embeddings, truth = call_embeddings(speakers, windows, seed=speakers)
        labels = diarize_by_voice.cluster_windows(embeddings)
        assert labels.max() + 1 == speakers
        assert all(len(set(labels[truth == s].tolist())) == 1 for s in range(speakers))


def test_one_voice_of_thousands_of_windows_stays_one_speaker():
    embeddings, _ = call_embeddings(1, 2000, seed=1)
    assert diarize_by_voice.cluster_windows(embeddings).max() == 0


def test_chunks_only_above_the_chunk_size_and_agree_with_the_whole_on_a_short_call(monkeypatch):
    embeddings, truth = call_embeddings(3, 150, utterances=1)
    direct = diarize_by_voice.spectral_cluster(embeddings)
    # under CAMPP_CHUNK_WINDOWS: the same
    assert diarize_by_voice.cluster_windows(embeddings).tolist() == direct.tolist()
    sizes = []
    spectral = diarize_by_voice.spectral_cluster
    monkeypatch.setattr(diarize_by_voice, "spectral_cluster", lambda e, k: sizes.append(len(e)) or spectral(e, k))
    monkeypatch.setattr(diarize_by_voice, "CAMPP_CHUNK_WINDOWS", 60)
    chunked = diarize_by_voice.cluster_windows(embeddings)
    assert sizes == [50, 50, 50]  # three chunks of consecutive windows, as equal as can be
    # one partition
    assert len({(a, b) for a, b in zip(direct, chunked, strict=True)}) == len(set(direct.tolist())) == 3
    assert all(len(set(chunked[truth == s].tolist())) == 1 for s in range(3))


def test_chunk_clusters_link_by_centroid_similarity():
    a, b = np.eye(4)[:2]
    near_a = np.array([0.9, 0.1, 0.3, 0.3]) / np.linalg.norm([0.9, 0.1, 0.3, 0.3])  # cosine 0.9 to a
    linked = diarize_by_voice.link_centroids(np.stack([a, b, near_a, b]))
    assert linked[0] == linked[2] != linked[1] == linked[3]
    half_a = np.array([0.5, 0, 0.866, 0])  # cosine 0.5 to a: another voice, unless there may be only 2
    assert len(set(diarize_by_voice.link_centroids(np.stack([a, b, half_a])).tolist())) == 3
    assert diarize_by_voice.link_centroids(np.stack([a, b, half_a]), max_speakers=2).tolist() in ([0, 1, 0], [1, 0, 1])
    assert diarize_by_voice.link_centroids(a[None]).tolist() == [0]


def test_campplus_turns_asks_for_the_segmentation_only_with_turns_to_place():
    """`campplus_turns` (what `find_turns` runs after CAM++, and the long-call benchmark on saved model outputs):
    one voice is not segmented; with two, the segmentation's local speakers become each speaker's activity."""
    from callscope.analysis.models.segmentation import CHUNK_FRAMES, ChunkActivity
    from callscope.analysis.result import ModelUsed

    model = ModelUsed(stage="speaker-embedding", name="CAM++", version="test")
    segmentation = ModelUsed(stage="speaker-segmentation", name="segmentation", version="test")
    asked: list[int] = []
    active = np.zeros((1, CHUNK_FRAMES, 3), dtype=bool)
    active[0, frame_of(0) : frame_of(4000), 0] = True  # local speaker 0: the first voice, 0-4 s
    active[0, frame_of(5000) : frame_of(9000), 1] = True  # local speaker 1: the second, 5-9 s

    def segment() -> ChunkActivity:
        asked.append(1)
        return ChunkActivity(np.array([0]), active)

    rng = np.random.default_rng(0)
    voices = rng.standard_normal((2, 192))
    embeddings = np.concatenate([v + 0.3 * rng.standard_normal((20, 192)) for v in voices])
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    windows = ([diarize_by_voice.Window(s, s + 1500) for s in np.linspace(0, 2500, 20).astype(int)]
               + [diarize_by_voice.Window(s, s + 1500) for s in np.linspace(5000, 7500, 20).astype(int)])

    turns = diarize_by_voice.campplus_turns(windows[:20], embeddings[:20], model, segment, segmentation)
    assert turns.labels.tolist() == [0] * 20 and turns.activity is None and turns.segmentation is None
    assert asked == []

    turns = diarize_by_voice.campplus_turns(windows, embeddings, model, segment, segmentation)
    assert turns.labels.tolist() == [0] * 20 + [1] * 20 and turns.segmentation == segmentation and asked == [1]
    assert turns.activity is not None and turns.model == model and turns.method == "campplus"
    first, second = turns.activity.regions(0), turns.activity.regions(1)
    assert first[0][0] < 100 and 3900 < first[-1][1] < 4100 and 4900 < second[0][0] < 5100
