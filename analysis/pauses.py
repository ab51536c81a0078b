"""Pause detection and pause compliance.

Rules (all times in milliseconds):

1. **Speech** is the union, over every channel, of the VAD speech regions and the spoken pieces of the
   dialogue: each word's span, or the whole segment span for a segment without word timestamps.
2. A **pause** is a gap in that union where no channel has speech, at least ``min_pause_ms`` long
   (default 1000), with a dialogue segment spoken before it and one spoken after it. Silence before the
   first speech and after the last speech (ringing, hanging up) is never a pause.
3. A pause is **long** when it lasts at least ``long_pause_threshold_ms``: the project's
   ``long_pause_threshold_seconds`` × 1000, or 5000 (5 s) when the project sets none.
4. A pause is **compliant** when it is not long, or when it is long *and* the segment before it contains
   one of ``hold_phrases`` (the speaker announced a hold) *and* it lasts at most ``max_hold_ms``
   (default 120000, 2 minutes). Phrases match case-insensitively on whole words, ignoring punctuation.
5. ``after_segment_id`` (``after_dialogue_id`` in the public API) is the id of the segment before the pause:
   the segment owning the last spoken piece that ends at or before the pause starts (ties: the higher id).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from callscope.analysis.evidence import says, tokens
from callscope.analysis.types import PauseFinding, Segment, SpeechRegion
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from callscope.resources.kinds import ProjectSpec

DEFAULT_LONG_PAUSE_THRESHOLD_MS = 5_000
DEFAULT_MAX_HOLD_MS = 120_000
DEFAULT_MIN_PAUSE_MS = 1_000
DEFAULT_HOLD_PHRASES: tuple[str, ...] = (
    "please hold",
    "hold on",
    "hold the line",
    "on hold",
    "one moment",
    "one second",
    "just a moment",
    "just a second",
    "give me a moment",
    "give me a second",
    "let me check",
    "let me look",
    "let me see",
    "bear with me",
)

Interval = tuple[int, int]


class PauseRules(BaseModel):
    """The documented pause rules of a project (see the module docstring)."""

    long_pause_threshold_ms: int = Field(DEFAULT_LONG_PAUSE_THRESHOLD_MS, ge=0)
    max_hold_ms: int = Field(DEFAULT_MAX_HOLD_MS, ge=0)
    min_pause_ms: int = Field(DEFAULT_MIN_PAUSE_MS, ge=1)
    hold_phrases: list[str] = Field(default_factory=lambda: list(DEFAULT_HOLD_PHRASES))

    @classmethod
    def for_project(cls, project: ProjectSpec | None = None, **overrides) -> PauseRules:
        """Rules of a ProjectSpec (or None: the defaults); its long_pause_threshold_seconds sets the threshold."""
        seconds = getattr(project, "long_pause_threshold_seconds", None)
        if seconds is not None and "long_pause_threshold_ms" not in overrides:
            overrides["long_pause_threshold_ms"] = seconds * 1000
        return cls(**overrides)

    def announces_hold(self, text: str) -> bool:
        """Whether text contains a hold phrase (case-insensitive, whole words, punctuation ignored)."""
        words = tokens(text)
        return any(says(words, phrase) for phrase in self.hold_phrases if phrase.strip())


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, non-overlapping union of half-open intervals; empty ones are dropped, touching ones joined."""
    merged: list[list[int]] = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def total(intervals: Iterable[Interval]) -> int:
    """Total length of the union of intervals."""
    return sum(e - s for s, e in union(intervals))


def spoken_pieces(segment: Segment) -> list[Interval]:
    """The spans a segment was spoken in: its words' spans, or its own span when it has no words."""
    if segment.words:
        return [(w.start_ms, w.end_ms) for w in segment.words]
    return [(segment.start_ms, segment.end_ms)]


def find_pauses(
    dialogue: Sequence[Segment], speech: Sequence[SpeechRegion], duration_ms: int, rules: PauseRules | None = None
) -> list[PauseFinding]:
    """The pauses of a call, ordered by start (see the module docstring for the rules)."""
    rules = rules or PauseRules()
    pieces = [(start, end, seg.id) for seg in dialogue for start, end in spoken_pieces(seg)]
    if not pieces:
        return []
    limit = max(duration_ms, max(end for _, end, _ in pieces), max((r.end_ms for r in speech), default=0))
    spans = union([(max(0, s), min(limit, e)) for s, e, _ in pieces]
                  + [(max(0, r.start_ms), min(limit, r.end_ms)) for r in speech])
    last_spoken_end = max(end for _, end, _ in pieces)
    findings: list[PauseFinding] = []
    for (_, gap_start), (gap_end, _) in pairwise(spans):
        if gap_end - gap_start < rules.min_pause_ms or last_spoken_end < gap_end:
            continue  # too short, or nothing is said after it (trailing silence with only noise in VAD)
        before = [(end, seg_id) for _, end, seg_id in pieces if end <= gap_start]
        if not before:
            continue  # nothing said before it: leading silence with only noise in VAD
        _, after_id = max(before)
        segment = next(seg for seg in dialogue if seg.id == after_id)
        long = gap_end - gap_start >= rules.long_pause_threshold_ms
        compliant = not long or (rules.announces_hold(segment.text) and gap_end - gap_start <= rules.max_hold_ms)
        findings.append(PauseFinding(gap_start, gap_end, long, compliant, after_id))
    return findings
