"""Emotions: per dialogue segment, a probability for each of the spec's eight classes (``EMOTIONS``).

A documented heuristic, not a trained classifier (no speech-emotion weights ship on PyPI): `segment_emotions`
scores each segment's text against prototype sentences of each class (with a ``TextEmbedder``; without one, or for
empty text, the uniform distribution) and shifts the mass between high- and low-arousal classes by the segment's
prosody (level, pitch, rate against the same speaker's medians). Each segment's values sum to 1, rounded to 4
decimals. The rules and constants: docs/analysis.md.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from callscope.analysis.result import EMOTIONS, ModelUsed, TranscriptSegment
from callscope.analysis.types import SAMPLE_RATE, Audio

if TYPE_CHECKING:
    from callscope.analysis.models.text_embedding import TextEmbedder

SOURCES = ("text", "prosody")
MODEL_NAME = "text-prototypes+prosody"
RULES_VERSION = "1"

PROTOTYPES: dict[str, tuple[str, ...]] = {
    "happy": (
        "I'm so happy, this is wonderful news!",
        "Thank you so much, you made my day!",
        "That's great, I love it, thanks!",
        "Perfect, I'm really pleased with the service.",
    ),
    "neutral": (
        "I would like to update the address on my account.",
        "My account number is four five six seven.",
        "The invoice was sent on Tuesday.",
        "Can you tell me the current balance?",
        "Hello, thank you for calling, how can I help you?",
        "Please hold for a moment while I check.",
        "Okay, goodbye, have a nice day.",
        "Yes, that's right.",
    ),
    "calm": (
        "No problem, take your time.",
        "That's fine, there's no rush at all.",
        "Okay, I understand, let's go through it step by step.",
        "Alright, everything is under control.",
    ),
    "sad": (
        "I'm so sad, I feel miserable.",
        "Unfortunately my father passed away last week.",
        "I'm really disappointed and heartbroken.",
        "I feel so lonely and down.",
    ),
    "angry": (
        "I'm absolutely furious about this!",
        "I'm sick and tired of your terrible service!",
        "Stop wasting my time, this is completely unacceptable!",
        "I'm so angry, I demand to speak to a manager!",
    ),
    "fearful": (
        "I'm scared someone stole my identity.",
        "I'm really worried I'll lose all my money.",
        "I'm afraid something terrible has happened.",
        "Please help me, I'm frightened and panicking.",
    ),
    "surprised": (
        "Wow, really? I didn't expect that at all!",
        "What? No way, that's unbelievable!",
        "Oh my goodness, I had no idea!",
        "Seriously? That's such a surprise!",
    ),
    "disgust": (
        "That's disgusting, absolutely revolting.",
        "Ugh, the food was rotten and smelled awful.",
        "That's gross, it makes me sick.",
        "I find your behaviour repulsive and vile.",
    ),
}
TEXT_TEMPERATURE = 0.08
NEUTRAL_FLOOR = 0.4
TEXT_SMOOTHING = 0.02

HIGH_AROUSAL = ("angry", "fearful", "surprised", "happy")
LOW_AROUSAL = ("calm", "sad", "neutral")
AROUSAL_GAIN = 1.0

FRAME = 400  # 25 ms
HOP = 160  # 10 ms
F0_MIN, F0_MAX = 60.0, 500.0
TAU_MIN, TAU_MAX = int(SAMPLE_RATE / F0_MAX), math.ceil(SAMPLE_RATE / F0_MIN)
YIN_THRESHOLD = 0.2
VOICED_RANGE_DB = 30.0  # pitch only from frames within this of the segment's loudest frame
MIN_VOICED_FRAMES = 5
MIN_PROSODY_MS = 300
SILENT_DB = -55.0
LEVEL_SCALE_DB = 6.0
PITCH_SCALE_ST = 2.0
SPREAD_SCALE_ST = 2.0
RATE_SCALE = 0.5
WEIGHTS = {"level": 0.35, "pitch": 0.25, "rate": 0.25, "spread": 0.15}


@dataclass(frozen=True)
class Prosody:
    """What was measured of one segment; None where it could not be measured."""

    level_db: float | None = None  # 80th percentile of the frame levels, dBFS
    pitch_st: float | None = None  # median F0, semitones above 100 Hz
    spread_st: float | None = None  # 10-90% spread of F0, semitones
    rate_wps: float | None = None  # words per second


def frame_levels_db(samples: np.ndarray) -> np.ndarray:
    """RMS level of each 25 ms frame (10 ms hop) in dBFS, floored at -100."""
    samples = np.asarray(samples, dtype=np.float32)
    if len(samples) < FRAME:
        samples = np.pad(samples, (0, FRAME - len(samples)))
    frames = np.lib.stride_tricks.sliding_window_view(samples, FRAME)[::HOP]
    rms = np.sqrt(np.mean(frames.astype(np.float64) ** 2, axis=1))
    return 20 * np.log10(np.maximum(rms, 1e-5))


def pitch_track(samples: np.ndarray) -> np.ndarray:
    """F0 in Hz of each frame (25 ms analysis window, 10 ms hop) by YIN; NaN where a frame is unvoiced."""
    samples = np.asarray(samples, dtype=np.float64)
    span = FRAME + TAU_MAX
    if len(samples) < span:
        return np.full(0, np.nan)
    frames = np.lib.stride_tricks.sliding_window_view(samples, span)[::HOP]
    frames = frames - frames.mean(axis=1, keepdims=True)
    size = 1 << (span - 1).bit_length()
    # r[tau] = sum_j x[j] x[j + tau] over the first FRAME samples; e[tau] = energy of x[tau : tau + FRAME]
    r = np.fft.irfft(np.conj(np.fft.rfft(frames[:, :FRAME], size)) * np.fft.rfft(frames, size), size)[:, : TAU_MAX + 1]
    squares = np.concatenate([np.zeros((len(frames), 1)), np.cumsum(frames**2, axis=1)], axis=1)
    e = squares[:, FRAME : FRAME + TAU_MAX + 1] - squares[:, : TAU_MAX + 1]
    d = np.maximum(e[:, :1] + e - 2 * r, 0.0)  # YIN's difference function
    cumulative = np.cumsum(d[:, 1:], axis=1)
    cmnd = np.ones_like(d)
    taus = np.arange(1, TAU_MAX + 1)
    cmnd[:, 1:] = d[:, 1:] * taus / np.maximum(cumulative, 1e-12)
    window = cmnd[:, TAU_MIN : TAU_MAX + 1]
    below = window < YIN_THRESHOLD
    voiced = below.any(axis=1) & (e[:, 0] > 1e-10 * FRAME)  # digital silence has no period
    idx = np.argmax(below, axis=1)
    rows = np.arange(len(frames))
    last = window.shape[1] - 1
    for _ in range(TAU_MAX - TAU_MIN):  # walk down to the local minimum after the first dip under the threshold
        step = (idx < last) & (window[rows, np.minimum(idx + 1, last)] < window[rows, idx])
        if not step.any():
            break
        idx = idx + step
    tau = (idx + TAU_MIN).astype(np.float64)
    # parabolic interpolation around the minimum
    inner = (idx > 0) & (idx < window.shape[1] - 1)
    left = window[rows, np.maximum(idx - 1, 0)]
    mid = window[rows, idx]
    right = window[rows, np.minimum(idx + 1, window.shape[1] - 1)]
    curvature = left - 2 * mid + right
    shift = np.where(inner & (curvature > 1e-12), 0.5 * (left - right) / np.where(curvature > 1e-12, curvature, 1), 0)
    f0 = SAMPLE_RATE / (tau + np.clip(shift, -1, 1))
    # a minimum on the edge of the search range (at 60 or 500 Hz) is no pitch period: unvoiced
    return np.where(voiced & inner, f0, np.nan)


def _word_rate(segment: TranscriptSegment) -> float | None:
    timed = [w for w in segment.words if w.end_ms > w.start_ms]
    if len(timed) >= 2:
        span_ms = max(w.end_ms for w in timed) - min(w.start_ms for w in timed)
        return len(timed) * 1000 / span_ms if span_ms > 0 else None
    count = len(segment.words) or len(segment.text.split())
    duration_ms = segment.end_ms - segment.start_ms
    return count * 1000 / duration_ms if count and duration_ms > 0 else None


def measure(audio: Audio, segment: TranscriptSegment) -> Prosody:
    """The prosody of one segment on its channel (see the module docstring); empty when too short or silent."""
    if not 0 <= segment.channel < len(audio.channels):
        raise ValueError(f"segment {segment.id} is on channel {segment.channel}, the audio has "
                         f"{len(audio.channels)}")
    if segment.end_ms - segment.start_ms < MIN_PROSODY_MS:
        return Prosody()
    channel = audio.channels[segment.channel]
    start = max(0, segment.start_ms * audio.sample_rate // 1000)
    samples = np.asarray(channel[start : max(start, segment.end_ms * audio.sample_rate // 1000)], dtype=np.float32)
    if len(samples) * 1000 < MIN_PROSODY_MS * audio.sample_rate:
        return Prosody()  # the segment runs past the end of the audio
    levels = frame_levels_db(samples)
    level = float(np.percentile(levels, 80))
    if level < SILENT_DB:
        return Prosody()
    f0 = pitch_track(samples)
    loud = levels[: len(f0)] >= max(levels.max() - VOICED_RANGE_DB, SILENT_DB)
    voiced = f0[np.isfinite(f0) & loud]
    pitch = spread = None
    if len(voiced) >= MIN_VOICED_FRAMES:
        semitones = 12 * np.log2(voiced / 100.0)
        pitch = float(np.median(semitones))
        spread = float(np.percentile(semitones, 90) - np.percentile(semitones, 10))
    return Prosody(level_db=level, pitch_st=pitch, spread_st=spread, rate_wps=_word_rate(segment))


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def arousals(audio: Audio, segments: Sequence[TranscriptSegment]) -> list[float]:
    """Arousal of each segment in -1..1 from its prosody relative to its channel and speaker (module docstring)."""
    measured = [measure(audio, s) for s in segments]
    level_ref = {c: _median(p.level_db for s, p in zip(segments, measured, strict=True) if s.channel == c)
                 for c in {s.channel for s in segments}}
    keys = {(s.channel, s.speaker) for s in segments}
    refs = {
        key: {name: _median(getattr(p, name) for s, p in zip(segments, measured, strict=True)
                            if (s.channel, s.speaker) == key)
              for name in ("pitch_st", "spread_st", "rate_wps")}
        for key in keys
    }
    out = []
    for segment, p in zip(segments, measured, strict=True):
        if p.level_db is None:
            out.append(0.0)
            continue
        ref = refs[(segment.channel, segment.speaker)]
        features: dict[str, float] = {"level": (p.level_db - level_ref[segment.channel]) / LEVEL_SCALE_DB}
        if p.pitch_st is not None and ref["pitch_st"] is not None:
            features["pitch"] = (p.pitch_st - ref["pitch_st"]) / PITCH_SCALE_ST
            features["spread"] = (p.spread_st - ref["spread_st"]) / SPREAD_SCALE_ST
        if p.rate_wps is not None and ref["rate_wps"]:
            features["rate"] = math.log2(p.rate_wps / ref["rate_wps"]) / RATE_SCALE
        total = sum(WEIGHTS[k] for k in features)
        value = sum(WEIGHTS[k] * float(np.clip(v, -2.0, 2.0)) for k, v in features.items()) / total
        out.append(math.tanh(value))
    return out


_prototype_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _prototypes(embedder: TextEmbedder) -> tuple[np.ndarray, np.ndarray]:
    """The prototype embeddings (m, dim) and each one's class index (m,), computed once per embedder."""
    cached = _prototype_cache.get(embedder)
    if cached is None:
        pairs = [(EMOTIONS.index(name), text) for name, texts in PROTOTYPES.items() for text in texts]
        cached = (embedder.embed([t for _, t in pairs]), np.array([i for i, _ in pairs]))
        _prototype_cache[embedder] = cached
    return cached


NEGATIVE = frozenset({"angry", "sad", "fearful", "disgust"})  # the emotions a supervisor is alerted to


def text_distributions(texts: Sequence[str], embedder: TextEmbedder | None) -> np.ndarray:
    """(len(texts), 8): each text's distribution over EMOTIONS from its prototype similarities; uniform for an
    empty text or without an embedder."""
    out = np.full((len(texts), len(EMOTIONS)), 1.0 / len(EMOTIONS))
    spoken = [i for i, t in enumerate(texts) if t.strip()]
    if embedder is None or not spoken:
        return out
    prototypes, classes = _prototypes(embedder)
    similarities = embedder.embed([texts[i].strip() for i in spoken]).astype(np.float64) @ prototypes.T.astype(
        np.float64)
    scores = np.full((len(spoken), len(EMOTIONS)), -np.inf)
    for c in range(len(EMOTIONS)):
        scores[:, c] = similarities[:, classes == c].max(axis=1)
    neutral = EMOTIONS.index("neutral")
    scores[:, neutral] = np.maximum(scores[:, neutral], NEUTRAL_FLOOR)
    z = np.exp((scores - scores.max(axis=1, keepdims=True)) / TEXT_TEMPERATURE)
    z /= z.sum(axis=1, keepdims=True)
    out[spoken] = (1 - TEXT_SMOOTHING) * z + TEXT_SMOOTHING / len(EMOTIONS)
    return out


def _shift(distribution: np.ndarray, arousal: float) -> np.ndarray:
    gains = np.array([math.exp(AROUSAL_GAIN * arousal) if e in HIGH_AROUSAL
                      else math.exp(-AROUSAL_GAIN * arousal) if e in LOW_AROUSAL else 1.0 for e in EMOTIONS])
    shifted = distribution * gains
    return shifted / shifted.sum()


def _rounded(distribution: np.ndarray) -> dict[str, float]:
    values = [round(float(v), 4) for v in distribution]
    top = int(np.argmax(values))
    values[top] = round(values[top] + 1.0 - sum(values), 4)
    return dict(zip(EMOTIONS, values, strict=True))


def segment_emotions(
    audio: Audio, segments: Sequence[TranscriptSegment], embedder: TextEmbedder | None
) -> list[dict[str, float]]:
    """One {emotion: probability} per segment, in order, with the keys of EMOTIONS (see the module docstring).
    The segments are not modified."""
    if not segments:
        return []
    text = text_distributions([s.text or "" for s in segments], embedder)
    return [_rounded(_shift(row, a)) for row, a in zip(text, arousals(audio, segments), strict=True)]


def model_info(embedder: TextEmbedder | None) -> ModelUsed:
    """The emotion stage's ModelUsed, naming the sources it used (prosody alone without an embedder)."""
    if embedder is None:
        return ModelUsed(stage="emotion", name="prosody", version=f"rules-{RULES_VERSION}")
    return ModelUsed(stage="emotion", name=MODEL_NAME,
                     version=f"rules-{RULES_VERSION}+{embedder.info.name}@{embedder.info.version}")
