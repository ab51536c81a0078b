"""Stage 4 for mono calls: who spoke when, from speaker embeddings.

A stereo call is split by channel (`dialogue.py`). A mono call holds every party on one channel, so its speech
is cut into 1.6 s windows (0.8 s apart, inside each VAD speech region), each window is embedded with the voice
encoder, and the windows are clustered: agglomerative, average linkage on cosine distance, merged while the
distance stays under `threshold`. The number of speakers is the number of clusters left (one when only one
voice is there); clusters too small to be a party (a cough, a crosstalk window) join the nearest real one.
Each Whisper word then takes the speaker of the window nearest to it, and a segment is split where its words
change speaker.

The default threshold was measured on synthetic espeak-ng calls (`benchmarks/speakers.py`, 5 seeds): at 0.22
all 20 two-voice calls of clearly different variants get 2 speakers, DER 0.042 mean / 0.062 worst (250 ms collar;
the rest is the VAD's edges), and all one-voice calls 1 speaker; 0.2125-0.225 did as well, outside it calls
split or merge. Neighbouring variants whose voiceprints the encoder cannot tell apart (SIMILAR_PAIRS in
tests/analysis/voices.py) merge into one speaker. Real voices differ more than espeak variants but vary more
within a speaker too: re-measure `CALLSCOPE_DIARIZATION_THRESHOLD` on a deployment's own calls.

A pyannote.audio pipeline is the stronger choice where torch and its (gated) weights may be installed; it is
not wired in: it would replace `label_speech` (its turns labelling the windows) and keep `relabel`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .dialogue import speaker_of, split_segment
from .speaker_encoder import HOP, PARTIAL_FRAMES, PARTIAL_SAMPLES, SpeakerEncoder, normalize_volume
from .types import SAMPLE_RATE, Audio, ModelInfo, Segment, SpeechRegion

WINDOW_MS = PARTIAL_FRAMES * HOP * 1000 // SAMPLE_RATE  # 1600
HOP_MS = 800
MIN_REGION_MS = 400  # shorter speech (a click, a breath) is not embedded; its words follow their neighbours
FULL_MS = 1200  # speech under this in a window (resemblyzer's 75 % coverage) gives a weak embedding
DEFAULT_THRESHOLD = 0.22  # cosine distance (1 - similarity) below which clusters merge
MIN_CLUSTER_SHARE = 0.10  # a cluster under this share of the windows and under MIN_CLUSTER_WINDOWS is no party
MIN_CLUSTER_WINDOWS = 5
MAX_SPEAKERS = 8


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
    model: ModelInfo

    @property
    def detail(self) -> str:
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
    starts = list(range(start_ms, end_ms - WINDOW_MS, HOP_MS)) + [end_ms - WINDOW_MS]
    return [Window(s, s + WINDOW_MS) for s in starts]


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
    from scipy.cluster.hierarchy import fcluster, linkage

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


def relabel(segments: list[Segment], windows: list[Window], labels: np.ndarray) -> list[Segment]:
    """Segments split by speaker, ordered by start, ids 0..n-1, "speaker-1" the first to speak."""
    pieces: list[tuple[int, Segment]] = []
    centers = np.array([w.center_ms for w in windows])  # ascending: windows are in time order
    for segment in segments:
        if not windows:
            pieces.append((0, replace(segment, words=list(segment.words))))
        elif segment.words:
            speakers = [speaker_at(centers, labels, w.start_ms, w.end_ms) for w in segment.words]
            pieces.extend(split_segment(segment, speakers))
        else:
            pieces.append((speaker_at(centers, labels, segment.start_ms, segment.end_ms), segment))
    pieces.sort(key=lambda item: (item[1].start_ms, item[1].end_ms))
    names: dict[int, str] = {}
    out = []
    for new_id, (cluster_id, segment) in enumerate(pieces):
        name = names.setdefault(cluster_id, speaker_of(len(names)))
        out.append(replace(segment, id=new_id, channel=0, speaker=name))
    return out


def label_speech(audio: Audio, speech_regions: list[SpeechRegion], encoder: SpeakerEncoder,
                 threshold: float = DEFAULT_THRESHOLD, max_speakers: int = MAX_SPEAKERS) -> tuple[list[Window],
                                                                                                np.ndarray]:
    """The windows over channel 0's speech and the speaker cluster (0..k-1, first to speak first) of each."""
    windows, embeddings = embed_windows(audio, [r for r in speech_regions if r.channel == 0], encoder)
    weak = np.array([w.weak for w in windows], dtype=bool)
    return windows, cluster(smooth(windows, embeddings), weak, threshold, max_speakers)


def diarize_mono(
    audio: Audio,
    speech_regions: list[SpeechRegion],
    segments: list[Segment],
    encoder: SpeakerEncoder,
    threshold: float = DEFAULT_THRESHOLD,
    max_speakers: int = MAX_SPEAKERS,
) -> tuple[list[Segment], DiarizationInfo]:
    """The segments of a mono call relabelled by speaker (split where the speaker changes), and what was found.

    `speech_regions` are channel 0's VAD regions. The input segments are not changed.
    """
    windows, labels = label_speech(audio, speech_regions, encoder, threshold, max_speakers)
    dialogue = relabel(segments, windows, labels)
    speakers = len({s.speaker for s in dialogue}) if dialogue else int(labels.max() + 1 if len(labels) else 1)
    return dialogue, DiarizationInfo(speakers=speakers, windows=len(windows), threshold=threshold, model=encoder.info)
