"""The values that flow between the pipeline stages. Stages are pure functions over these."""

from __future__ import annotations

from dataclasses import dataclass, field

SAMPLE_RATE = 16_000

# The spec's eight emotion classes, in the order results list them.
EMOTIONS = ("happy", "neutral", "calm", "sad", "angry", "fearful", "surprised", "disgust")


@dataclass(frozen=True)
class Audio:
    """Decoded audio: one float32 array (numpy, -1..1) per channel at SAMPLE_RATE."""

    channels: tuple  # tuple[np.ndarray, ...]
    sample_rate: int = SAMPLE_RATE

    @property
    def duration_ms(self) -> int:
        return int(len(self.channels[0]) * 1000 / self.sample_rate) if self.channels else 0


@dataclass(frozen=True)
class SpeechRegion:
    channel: int
    start_ms: int
    end_ms: int


@dataclass(frozen=True)
class Word:
    start_ms: int
    end_ms: int
    text: str
    probability: float


@dataclass
class Segment:
    """One dialogue segment: a speaker's turn with its words."""

    id: int
    channel: int
    speaker: str
    start_ms: int
    end_ms: int
    text: str
    words: list[Word] = field(default_factory=list)
    # Probability of each of EMOTIONS (0..1, summing to 1); empty until the emotion stage ran.
    emotions: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PauseFinding:
    start_ms: int
    end_ms: int
    long: bool
    compliant: bool
    after_segment_id: int

    @property
    def duration_ms(self) -> int:
        return self.end_ms - self.start_ms


@dataclass(frozen=True)
class ModelInfo:
    """Which model a stage used, reported with its results."""

    stage: str
    name: str
    version: str
