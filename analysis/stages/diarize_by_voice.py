"""Diarization of mono calls: who spoke when, from speaker embeddings (a stereo call: diarize_by_channel.py).

`label_speech` cuts the speech of the VAD regions into windows, embeds them (CAM++ by default, GE2E with
`CALLSCOPE_DIARIZATION_MODEL=ge2e`) and clusters them into speakers (`cluster_windows`: a long call by chunks linked
by their voices); with more than one voice the segmentation model places the turns and overlapped speech
(speaker_activity.py). `relabel` gives each Whisper word the speaker of its nearest window and moves each speaker's
segments into that speaker's voice; `diarize_turns` does the same from pyannote.audio's turns (diarize_by_pyannote.py).
How it decides: docs/analysis.md; why, with the figures: benchmarks/RESULTS.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from callscope.analysis.models.campplus import EMBEDDING_DIM, CamPlusPlus
from callscope.analysis.models.segmentation import ChunkActivity, Segmenter
from callscope.analysis.models.speaker_encoder import (
    HOP,
    PARTIAL_FRAMES,
    PARTIAL_SAMPLES,
    SpeakerEncoder,
    normalize_volume,
)
from callscope.analysis.result import ModelUsed, TranscriptSegment
from callscope.analysis.stages import speaker_activity as sa
from callscope.analysis.stages.diarize_by_channel import speaker_of, split_segment
from callscope.analysis.stages.diarize_by_pyannote import Turn
from callscope.analysis.stages.timing import to_speech
from callscope.analysis.types import SAMPLE_RATE, Audio, SpeechRegion

WINDOW_MS = PARTIAL_FRAMES * HOP * 1000 // SAMPLE_RATE  # 1600
HOP_MS = 800
MIN_REGION_MS = 400  # shorter speech (a click, a breath) is not embedded; its words follow their neighbours
FULL_MS = 1200  # speech under this in a window (resemblyzer's 75 % coverage) gives a weak embedding
DEFAULT_THRESHOLD = 0.22  # cosine distance (1 - similarity) below which clusters merge
MIN_CLUSTER_SHARE = 0.10  # a cluster under this share of the windows and under MIN_CLUSTER_WINDOWS is no party
MIN_CLUSTER_WINDOWS = 5
MAX_SPEAKERS = 8

# CAM++ + spectral clustering (see the module's docstring)
CAMPP_WINDOW_MS, CAMPP_HOP_MS = 1500, 750
# affinity pruning: keep each row's largest max(PVAL * n, min(MIN_PNUM, n / 2)) values. 3D-Speaker's MIN_PNUM 6 split
# one espeak voice of a synthetic call into 3-4 clusters; 9-20 clustered all the "fit" clips of the real-speech
# manifest (three one-voice read clips, a Spanish dialogue mono, stereo and phone mixed to mono) and the
# synthetic two-voice calls right, 25 merged the Spanish dialogue: 14 is the middle of that plateau.
CAMPP_PVAL, CAMPP_MIN_PNUM = 0.012, 14
CAMPP_MIN_WINDOWS = 10  # fewer windows: one speaker
CAMPP_MIN_CLUSTER = 4  # a cluster of fewer windows joins the nearest larger one
CAMPP_MERGE_COSINE = 0.875  # clusters whose centroids are this similar are one speaker
# long calls (see `cluster_windows`): more windows than this (about 5 min of speech) are clustered by chunks of
# consecutive windows, whose clusters link into speakers while their centroids' average cosine similarity is at
# least CAMPP_LINK_COSINE (the middle of the gap between one voice's and two voices' chunk clusters on the "fit"
# long calls of benchmarks/long_calls.py)
CAMPP_CHUNK_WINDOWS = 400
CAMPP_LINK_COSINE = 0.75


@dataclass(frozen=True)
class Window:
    start_ms: int
    end_ms: int
    speech_ms: int = WINDOW_MS  # how much of it is speech: a short region's window is its audio repeated

    @property
    def weak(self) -> bool:
        return self.speech_ms < FULL_MS

    @property
    def center_ms(self) -> float:
        return (self.start_ms + self.end_ms) / 2


@dataclass(frozen=True)
class DiarizationInfo:
    """What the mono diarization found, for the result's stage detail."""

    speakers: int
    windows: int
    threshold: float
    model: ModelUsed

    method: str = "ge2e"
    segmentation: ModelUsed | None = None  # the segmentation model, when it placed the turns
    overlap_ms: int = 0  # speech where two speakers talk at once, by the segmentation model

    @property
    def detail(self) -> str:
        if self.method == "pyannote":
            return (f"by the pyannote.audio pipeline: {self.speakers} speaker(s), overlapped speech "
                    f"{self.overlap_ms / 1000:.1f} s")
        if self.method == "campplus":
            turns = (f"; turns and overlapped speech ({self.overlap_ms / 1000:.1f} s) by pyannote segmentation-3.0"
                     if self.segmentation is not None else "")
            return (f"by speaker embeddings (CAM++): {self.speakers} speaker(s) from {self.windows} window(s) of "
                    f"1.5 s, spectral clustering{turns}")
        return (f"by speaker embeddings: {self.speakers} speaker(s) from {self.windows} window(s) of 1.6 s, "
                f"cosine distance threshold {self.threshold:g}")


def region_windows(start_ms: int, end_ms: int) -> list[Window]:
    """Windows of WINDOW_MS every HOP_MS covering one speech region; the last one ends with the region.

    A region shorter than a window gets one window of its own audio repeated (silence padding would make the
    encoder describe the silence).
    """
    if end_ms - start_ms < MIN_REGION_MS:
        return []
    if end_ms - start_ms <= WINDOW_MS:
        return [Window(start_ms, end_ms, end_ms - start_ms)]
    starts = [*range(start_ms, end_ms - WINDOW_MS, HOP_MS), end_ms - WINDOW_MS]
    return [Window(s, s + WINDOW_MS) for s in starts]


def campplus_windows(regions: list[SpeechRegion]) -> list[Window]:
    """CAM++ windows of CAMPP_WINDOW_MS every CAMPP_HOP_MS over the regions (in time order); the last one of a
    region ends with it; a region under a window is one window of its own length, none under MIN_REGION_MS."""
    out = []
    for region in sorted(regions, key=lambda r: r.start_ms):
        start, end = region.start_ms, region.end_ms
        if end - start < MIN_REGION_MS:
            continue
        if end - start <= CAMPP_WINDOW_MS:
            out.append(Window(start, end, end - start))
            continue
        out.extend(Window(s, s + CAMPP_WINDOW_MS, CAMPP_WINDOW_MS)
                   for s in range(start, end - CAMPP_WINDOW_MS, CAMPP_HOP_MS))
        out.append(Window(end - CAMPP_WINDOW_MS, end, CAMPP_WINDOW_MS))
    return out


def spectral_cluster(embeddings: np.ndarray, max_speakers: int = MAX_SPEAKERS) -> np.ndarray:
    """Cluster ids 0..k-1 of L2-normalised `embeddings` (3D-Speaker's SpectralCluster + CommonClustering)."""
    n = len(embeddings)
    if n < CAMPP_MIN_WINDOWS:
        return np.zeros(n, dtype=int)
    from scipy.cluster.vq import kmeans2  # scipy is heavy to import: paid by the first mono call only
    from scipy.linalg import eigh

    affinity = embeddings.astype(np.float64) @ embeddings.T.astype(np.float64)
    # at most half the windows kept per row: a party with a few short turns (7 of 18 windows, fr-dialogue-mono) keeps
    # its own neighbours instead of being tied to the other voice's windows
    drop = min(int((1 - CAMPP_PVAL) * n), n - min(CAMPP_MIN_PNUM, n // 2))
    for row in affinity:
        row[np.argsort(row)[:drop]] = 0
    affinity = 0.5 * (affinity + affinity.T)
    np.fill_diagonal(affinity, 0)
    laplacian = np.diag(np.abs(affinity).sum(axis=1)) - affinity
    # only the smallest max_speakers + 1 eigenpairs are used: a tenth of the time of all of them at 1,000 windows
    values, vectors = eigh(laplacian, subset_by_index=[0, min(max_speakers, n - 1)])
    k = int(np.argmax(np.diff(values))) + 1
    _, labels = kmeans2(vectors[:, :k], k, minit="++", seed=0)
    return merge_similar_clusters(embeddings, fold_small_clusters(embeddings, labels))


def cluster_windows(embeddings: np.ndarray, max_speakers: int = MAX_SPEAKERS) -> np.ndarray:
    """Cluster ids 0..k-1 of the L2-normalised embeddings of a call's windows in time order.

    Up to CAMPP_CHUNK_WINDOWS windows: `spectral_cluster`. More (a long call): the windows are cut into chunks of
    consecutive windows (as equal as can be, at most CAMPP_CHUNK_WINDOWS each), each chunk is spectral-clustered on
    its own, its clusters' centroids are linked across chunks (`link_centroids`), and each window takes the nearest
    speaker's centroid. Over a whole long call the eigengap stops counting speakers and the eigen-decomposition grows
    as the cube of the windows (see the module); by chunks the time is linear in the windows and the count rests on
    how alike the clusters' voices are, whatever the length.
    """
    n = len(embeddings)
    if n <= CAMPP_CHUNK_WINDOWS:
        return spectral_cluster(embeddings, max_speakers)
    labels = np.empty(n, dtype=int)
    centroids: list[np.ndarray] = []
    for chunk in np.array_split(np.arange(n), -(-n // CAMPP_CHUNK_WINDOWS)):
        local = spectral_cluster(embeddings[chunk], max_speakers)
        labels[chunk] = local + len(centroids)
        centroids.extend(_centroids_of(embeddings[chunk], local, np.unique(local)))
    labels = link_centroids(np.stack(centroids), max_speakers)[labels]
    # a chunk's cluster may hold two voices (too few windows of one to be its own): each window takes the nearest
    # speaker's centroid
    ids = np.unique(labels)
    labels = ids[np.argmax(embeddings @ _centroids_of(embeddings, labels, ids).T, axis=1)]
    return merge_similar_clusters(embeddings, fold_small_clusters(embeddings, labels))


def link_centroids(centroids: np.ndarray, max_speakers: int = MAX_SPEAKERS) -> np.ndarray:
    """The speaker (0..k-1) of each of the chunks' cluster `centroids`: average linkage on cosine distance, merged
    while the clusters' mean similarity is at least CAMPP_LINK_COSINE, at most `max_speakers` speakers."""
    if len(centroids) < 2:
        return np.zeros(len(centroids), dtype=int)
    from scipy.cluster.hierarchy import fcluster, linkage  # scipy is heavy to import: long mono calls only

    tree = linkage(centroids.astype(np.float64), method="average", metric="cosine")
    groups = fcluster(tree, t=1 - CAMPP_LINK_COSINE, criterion="distance")
    if groups.max() > max_speakers:
        groups = fcluster(tree, t=max_speakers, criterion="maxclust")
    return groups - 1


def _centroids_of(embeddings: np.ndarray, labels: np.ndarray, ids: np.ndarray) -> np.ndarray:
    means = np.stack([embeddings[labels == i].mean(axis=0) for i in ids])
    return means / np.linalg.norm(means, axis=1, keepdims=True)


def fold_small_clusters(embeddings: np.ndarray, labels: np.ndarray, min_size: int | None = None) -> np.ndarray:
    """Clusters of fewer than `min_size` (CAMPP_MIN_CLUSTER) windows join the nearest larger one's centroid."""
    min_size = CAMPP_MIN_CLUSTER if min_size is None else min_size
    ids, counts = np.unique(labels, return_counts=True)
    major = ids[counts >= min_size]
    if len(major) == 0:
        return np.zeros_like(labels)
    minor = ~np.isin(labels, major)
    out = labels.copy()
    if minor.any():
        out[minor] = major[np.argmax(embeddings[minor] @ _centroids_of(embeddings, labels, major).T, axis=1)]
    return out


def merge_similar_clusters(embeddings: np.ndarray, labels: np.ndarray, cosine: float | None = None) -> np.ndarray:
    """Clusters whose centroids' cosine similarity is at least `cosine` (CAMPP_MERGE_COSINE) merge, the most
    similar pair first; ids 0..k-1 after."""
    cosine = CAMPP_MERGE_COSINE if cosine is None else cosine
    while len(ids := np.unique(labels)) > 1:
        centroids = _centroids_of(embeddings, labels, ids)
        similarity = np.triu(centroids @ centroids.T, 1)
        i, j = np.unravel_index(np.argmax(similarity), similarity.shape)
        if similarity[i, j] < cosine:
            break
        labels = np.where(labels == ids[j], ids[i], labels)
    return np.unique(labels, return_inverse=True)[1]


def campplus_embeddings(audio: Audio, speech_regions: list[SpeechRegion], model: CamPlusPlus) -> tuple[
        list[Window], np.ndarray]:
    """The CAM++ windows over channel 0's speech and their L2-normalised embeddings (n, 192)."""
    windows = campplus_windows([r for r in speech_regions if r.channel == 0])
    windows = [w for w in windows if w.end_ms <= audio.duration_ms]
    if not windows:
        return windows, np.zeros((0, EMBEDDING_DIM), dtype=np.float32)
    rate = SAMPLE_RATE // 1000
    return windows, model.embed_segments(np.asarray(audio.channels[0], dtype=np.float32),
                                         [(w.start_ms * rate, w.end_ms * rate) for w in windows])


def label_speech_campplus(audio: Audio, speech_regions: list[SpeechRegion], model: CamPlusPlus,
                          max_speakers: int = MAX_SPEAKERS) -> tuple[list[Window], np.ndarray]:
    """The CAM++ windows over channel 0's speech and the speaker cluster (0..k-1, first to speak first) of each."""
    windows, embeddings = campplus_embeddings(audio, speech_regions, model)
    return windows, _first_seen_order(cluster_windows(embeddings, max_speakers))


def speaker_activity(audio: Audio, windows: list[Window], labels: np.ndarray,
                     segmenter: Segmenter) -> sa.SpeakerActivity:
    """Who speaks in each frame of channel 0: the segmentation model's local speakers mapped to the clusters of the
    CAM++ `windows` (`speaker_activity.py`)."""
    return chunk_speaker_activity(segmenter.activity(np.asarray(audio.channels[0], dtype=np.float32)), windows,
                                  labels)


def chunk_speaker_activity(chunks: ChunkActivity, windows: list[Window], labels: np.ndarray) -> sa.SpeakerActivity:
    """`speaker_activity` from the segmentation model's output `chunks`."""
    speakers = int(labels.max()) + 1 if len(labels) else 1
    coverage = sa.window_coverage(chunks.frames(), [(w.start_ms, w.end_ms) for w in windows], labels, speakers)
    by_frame = sa.frame_labels(coverage, np.array([w.center_ms for w in windows]), labels)
    return sa.speaker_activity(chunks, sa.map_local_speakers(chunks, coverage), by_frame, speakers)


def embed_windows(audio: Audio, regions: list[SpeechRegion], encoder: SpeakerEncoder) -> tuple[list[Window],
                                                                                                np.ndarray]:
    """The windows over the speech of channel 0 and their embeddings (n, 256); each region's audio is
    volume-normalised on its own, as the encoder's training utterances were."""
    samples = np.asarray(audio.channels[0], dtype=np.float32)
    windows: list[Window] = []
    parts: list[np.ndarray] = []
    for region in sorted(regions, key=lambda r: r.start_ms):
        spans = region_windows(region.start_ms, min(region.end_ms, audio.duration_ms))
        if not spans:
            continue
        lo = region.start_ms * SAMPLE_RATE // 1000
        wav = normalize_volume(samples[lo : region.end_ms * SAMPLE_RATE // 1000])
        if len(spans) == 1 and spans[0].speech_ms < WINDOW_MS:
            wav = np.tile(wav, 1 + PARTIAL_SAMPLES // max(len(wav), 1))[:PARTIAL_SAMPLES]
        starts = [(w.start_ms - region.start_ms) * SAMPLE_RATE // 1000 // HOP for w in spans]
        parts.append(encoder.embed_partials(wav, starts))
        windows.extend(spans)
    embeddings = np.concatenate(parts) if parts else np.zeros((0, 256), dtype=np.float32)
    return windows, embeddings


def smooth(windows: list[Window], embeddings: np.ndarray) -> np.ndarray:
    """Each embedding averaged with those of the windows overlapping it (its neighbours in the same region):
    3.2 s of context instead of 1.6 s, which the measurements showed steadies the clusters of one voice."""
    out = np.empty_like(embeddings)
    for i, window in enumerate(windows):  # windows are in time order: overlapping ones are at most 2 away
        near = [j for j in range(max(0, i - 2), min(len(windows), i + 3))
                if windows[j].start_ms < window.end_ms and window.start_ms < windows[j].end_ms]
        out[i] = embeddings[near].sum(axis=0)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def cluster(embeddings: np.ndarray, weak: np.ndarray | None = None, threshold: float = DEFAULT_THRESHOLD,
            max_speakers: int = MAX_SPEAKERS) -> np.ndarray:
    """Cluster ids 0..k-1 of L2-normalised `embeddings`, in order of first appearance.

    The windows that are not `weak` are clustered (average linkage, stopped at cosine distance `threshold`),
    tiny clusters are folded into the nearest large one, then every window, weak ones included, takes the
    nearest centroid (one refinement pass).
    """
    n = len(embeddings)
    if n < 2:
        return np.zeros(n, dtype=int)
    strong = ~weak if weak is not None and (~weak).sum() >= 2 else np.ones(n, dtype=bool)
    from scipy.cluster.hierarchy import fcluster, linkage  # ~0.3 s to import: paid by the first mono call only

    tree = linkage(embeddings[strong].astype(np.float64), method="average", metric="cosine")
    labels = fcluster(tree, t=threshold, criterion="distance") - 1
    if labels.max() + 1 > max_speakers:
        labels = fcluster(tree, t=max_speakers, criterion="maxclust") - 1
    labels = _fold_small(embeddings[strong], labels)
    centroids = _centroids(embeddings[strong], labels)
    return _first_seen_order(np.argmax(embeddings @ centroids.T, axis=1))


def _centroids(embeddings: np.ndarray, labels: np.ndarray) -> np.ndarray:
    ids = np.unique(labels)
    means = np.stack([embeddings[labels == i].mean(axis=0) for i in ids])
    return means / np.linalg.norm(means, axis=1, keepdims=True)


def _fold_small(embeddings: np.ndarray, labels: np.ndarray) -> np.ndarray:
    ids, counts = np.unique(labels, return_counts=True)
    big = [i for i, c in zip(ids, counts, strict=True)
           if c >= MIN_CLUSTER_WINDOWS or c >= MIN_CLUSTER_SHARE * len(labels)]
    if not big:  # all tiny (a very short call): keep the largest
        big = [ids[np.argmax(counts)]]
    if len(big) == len(ids):
        return labels
    keep = np.isin(labels, big)
    centroids = _centroids(embeddings[keep], labels[keep])
    kept_ids = np.unique(labels[keep])
    out = labels.copy()
    out[~keep] = kept_ids[np.argmax(embeddings[~keep] @ centroids.T, axis=1)]
    return out


def _first_seen_order(labels: np.ndarray) -> np.ndarray:
    order: dict[int, int] = {}
    for label in labels:
        order.setdefault(int(label), len(order))
    return np.array([order[int(label)] for label in labels], dtype=int)


def speaker_at(centers: np.ndarray, labels: np.ndarray, start_ms: int, end_ms: int) -> int:
    """The cluster of the window whose centre (`centers`, ascending) is nearest to the middle of [start_ms, end_ms]."""
    middle = (start_ms + end_ms) / 2
    i = int(np.searchsorted(centers, middle))
    nearest = min((j for j in (i - 1, i) if 0 <= j < len(centers)), key=lambda j: abs(centers[j] - middle))
    return int(labels[nearest])


@dataclass(frozen=True)
class TurnActivity:
    """Who speaks when as turns (pyannote.audio's pipeline): what `relabel` moves each speaker's segments into."""

    turns: tuple[tuple[tuple[int, int], ...], ...]  # per speaker (0..k-1), its (start_ms, end_ms) in time order

    def regions(self, speaker: int) -> list[tuple[int, int]]:
        return list(self.turns[speaker]) if speaker < len(self.turns) else []

    def overlap_ms(self) -> int:
        """How long two speak at once."""
        edges = sorted((t, step) for spans in self.turns for a, b in spans for t, step in ((a, 1), (b, -1)))
        total, talking, since = 0, 0, 0
        for at, step in edges:
            if talking > 1:
                total += at - since
            talking, since = talking + step, at
        return total


def relabel(segments: list[TranscriptSegment], windows: list[Window], labels: np.ndarray,
            activity: sa.SpeakerActivity | TurnActivity | None = None) -> list[TranscriptSegment]:
    """Segments split by speaker, ordered by start, ids 0..n-1, "speaker-1" the first to speak.

    Each word takes the speaker of the nearest window; with `activity`, each speaker's segments are then moved into
    that speaker's own activity as a stereo channel's are into its voice (`timing.to_speech`), so that turns start
    and end where the voice does and two speakers' segments overlap where they talk at once.
    """
    pieces: list[tuple[int, TranscriptSegment]] = []
    centers = np.array([w.center_ms for w in windows])  # ascending: windows are in time order
    for segment in segments:
        if not windows:
            pieces.append((0, segment.model_copy(update={"words": list(segment.words)})))
        elif segment.words:
            speakers = [speaker_at(centers, labels, w.start_ms, w.end_ms) for w in segment.words]
            pieces.extend(split_segment(segment, speakers))
        else:
            pieces.append((speaker_at(centers, labels, segment.start_ms, segment.end_ms), segment))
    if activity is not None:
        pieces = _follow_voices(pieces, activity)
    pieces.sort(key=lambda item: (item[1].start_ms, item[1].end_ms))
    names: dict[int, str] = {}
    out = []
    for new_id, (cluster_id, segment) in enumerate(pieces):
        name = names.setdefault(cluster_id, speaker_of(len(names)))
        out.append(segment.model_copy(update={"id": new_id, "channel": 0, "speaker": name}))
    return out


def _follow_voices(pieces: list[tuple[int, TranscriptSegment]],
                   activity: sa.SpeakerActivity | TurnActivity) -> list[tuple[int, TranscriptSegment]]:
    """Each speaker's segments (in time order) moved into that speaker's activity, as one channel's into its VAD."""
    out: list[tuple[int, TranscriptSegment]] = []
    for cluster_id in sorted({c for c, _ in pieces}):
        mine = sorted((p for c, p in pieces if c == cluster_id), key=lambda p: p.start_ms)
        voice = [SpeechRegion(0, start, end) for start, end in activity.regions(cluster_id)]
        out.extend((cluster_id, segment) for segment in to_speech(mine, voice))
    return out


def label_speech(audio: Audio, speech_regions: list[SpeechRegion], encoder: SpeakerEncoder | CamPlusPlus,
                 threshold: float = DEFAULT_THRESHOLD, max_speakers: int = MAX_SPEAKERS) -> tuple[list[Window],
                                                                                                np.ndarray]:
    """The windows over channel 0's speech and the speaker cluster (0..k-1, first to speak first) of each:
    CAM++ and spectral clustering for a CamPlusPlus model (`threshold` unused), else GE2E windows clustered
    at `threshold`."""
    if isinstance(encoder, CamPlusPlus):
        return label_speech_campplus(audio, speech_regions, encoder, max_speakers)
    windows, embeddings = embed_windows(audio, [r for r in speech_regions if r.channel == 0], encoder)
    weak = np.array([w.weak for w in windows], dtype=bool)
    return windows, cluster(smooth(windows, embeddings), weak, threshold, max_speakers)


@dataclass(frozen=True)
class SpeakerTurns:
    """Who speaks when in a mono call, found from its audio alone (the pipeline asks for them while Whisper
    transcribes); `assign` gives the transcript's words to them."""

    windows: list[Window]
    labels: np.ndarray  # the speaker (0..k-1) of each window
    activity: sa.SpeakerActivity | TurnActivity | None  # each speaker's own speech, where it was measured
    model: ModelUsed
    method: str
    threshold: float = 0.0
    segmentation: ModelUsed | None = None  # the segmentation model, when it placed the turns


def find_turns(
    audio: Audio,
    speech_regions: list[SpeechRegion],
    encoder: SpeakerEncoder | CamPlusPlus,
    threshold: float = DEFAULT_THRESHOLD,
    max_speakers: int = MAX_SPEAKERS,
    segmenter: Segmenter | None = None,
) -> SpeakerTurns:
    """The speakers of a mono call from its audio: `speech_regions` are channel 0's VAD regions; `encoder` the GE2E
    encoder or the CAM++ model (`label_speech`); `segmenter` (with CAM++ only): the segmentation model that places
    the turns and finds overlapped speech."""
    if isinstance(encoder, CamPlusPlus):
        windows, embeddings = campplus_embeddings(audio, speech_regions, encoder)
        segment = None if segmenter is None else (
            lambda: segmenter.activity(np.asarray(audio.channels[0], dtype=np.float32)))
        return campplus_turns(windows, embeddings, encoder.info, segment,
                              segmenter.info if segmenter is not None else None, max_speakers)
    windows, labels = label_speech(audio, speech_regions, encoder, threshold, max_speakers)
    return SpeakerTurns(windows, labels, None, encoder.info, "ge2e", threshold)


def campplus_turns(windows: list[Window], embeddings: np.ndarray, model: ModelUsed,
                   segment: Callable[[], ChunkActivity] | None, segmentation: ModelUsed | None,
                   max_speakers: int = MAX_SPEAKERS) -> SpeakerTurns:
    """`find_turns` from the CAM++ `windows` and their `embeddings`; `segment` gives the segmentation model's output
    for the call (asked for only when there are turns to place)."""
    labels = _first_seen_order(cluster_windows(embeddings, max_speakers))
    # one voice has no turns to place: the segmentation's wider speech would only add false alarm (fit clips)
    placed = segment is not None and len(labels) > 0 and labels.max() > 0
    activity = chunk_speaker_activity(segment(), windows, labels) if segment is not None and placed else None
    return SpeakerTurns(windows, labels, activity, model, "campplus", 0.0, segmentation if placed else None)


def pipeline_turns(turns: list[Turn], model: ModelUsed) -> SpeakerTurns:
    """The turns of a diarization pipeline (pyannote.audio's) as SpeakerTurns: 1.5 s windows laid over each turn,
    for the words to take the speaker of the nearest, and each speaker's turns as its activity."""
    speakers = list(dict.fromkeys(t.speaker for t in turns))  # first to speak first
    placed = sorted(((w, speakers.index(t.speaker)) for t in turns
                     for w in campplus_windows([SpeechRegion(0, t.start_ms, t.end_ms)])),
                    key=lambda item: item[0].center_ms)
    activity = TurnActivity(tuple(tuple((t.start_ms, t.end_ms) for t in turns if t.speaker == name)
                                  for name in speakers))
    return SpeakerTurns([w for w, _ in placed], np.array([label for _, label in placed], dtype=int), activity,
                        model, "pyannote")


def assign(segments: list[TranscriptSegment], turns: SpeakerTurns) -> tuple[list[TranscriptSegment],
                                                                            DiarizationInfo]:
    """The segments of a mono call relabelled by speaker (split where the speaker changes; `relabel`), and what
    was found. The input segments are not changed."""
    dialogue = relabel(segments, turns.windows, turns.labels, turns.activity)
    found = int(turns.labels.max() + 1) if len(turns.labels) else 1
    return dialogue, DiarizationInfo(
        speakers=len({s.speaker for s in dialogue}) if dialogue else found, windows=len(turns.windows),
        threshold=turns.threshold, model=turns.model, method=turns.method, segmentation=turns.segmentation,
        overlap_ms=turns.activity.overlap_ms() if turns.activity is not None else 0)


def diarize_mono(
    audio: Audio,
    speech_regions: list[SpeechRegion],
    segments: list[TranscriptSegment],
    encoder: SpeakerEncoder | CamPlusPlus,
    threshold: float = DEFAULT_THRESHOLD,
    max_speakers: int = MAX_SPEAKERS,
    segmenter: Segmenter | None = None,
) -> tuple[list[TranscriptSegment], DiarizationInfo]:
    """`find_turns` then `assign`, for a transcript that exists already."""
    return assign(segments, find_turns(audio, speech_regions, encoder, threshold, max_speakers, segmenter))


def diarize_turns(segments: list[TranscriptSegment], turns: list[Turn], model: ModelUsed) -> tuple[
        list[TranscriptSegment], DiarizationInfo]:
    """The segments of a mono call relabelled by the turns of a diarization pipeline (pyannote.audio's): each word
    takes the speaker of the nearest of the 1.5 s windows laid over the turns, and each speaker's segments follow
    that speaker's turns (overlapped speech included), as `diarize_mono` does with its own clusters."""
    return assign(segments, pipeline_turns(turns, model))
