"""The audio the stages read: decoded samples and where speech is. What they find is part of the result
(result.py)."""

from __future__ import annotations

from dataclasses import dataclass

from callscope.validation import AUTO_LANGUAGE

SAMPLE_RATE = 16_000


def language_code(language: str | None) -> str | None:
    """The language of a BCP 47 tag, lower case ("en-US" -> "en", "pt_BR" -> "pt"); None, "" or "auto" (not fixed:
    the model identifies it) -> None."""
    if not language or language.lower() == AUTO_LANGUAGE:  # "auto": the model identifies the language
        return None
    return language.replace("_", "-").split("-")[0].lower() or None


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
