"""Pause detection and pause compliance.

`find_pauses` finds the gaps of at least ``min_pause_ms`` where no channel has speech (VAD regions and spoken
words), between two dialogue segments: never before the first speech or after the last. A pause is long from the
project's ``long_pause_threshold_seconds`` (5 s unset), and compliant when not long, or when the segment before it
announced a hold (``hold_phrases``) and it lasts at most ``max_hold_ms``. The rules are ``result.PauseRules``;
``rules_for`` gives a project's. Every rule: docs/analysis.md.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from callscope.analysis.result import Pause, PauseRules, TranscriptSegment
from callscope.analysis.stages.evidence import says, tokens
from callscope.analysis.types import SpeechRegion

if TYPE_CHECKING:
    from callscope.resources.kinds import ProjectSpec

Interval = tuple[int, int]


def rules_for(project: ProjectSpec | None = None, **overrides) -> PauseRules:
    """The rules of a ProjectSpec (or None: the defaults); its long_pause_threshold_seconds sets the threshold."""
    seconds = project.long_pause_threshold_seconds if project else None
    if seconds is not None and "long_pause_threshold_ms" not in overrides:
        overrides["long_pause_threshold_ms"] = seconds * 1000
    return PauseRules(**overrides)


def announces_hold(rules: PauseRules, text: str) -> bool:
    """Whether text contains a hold phrase (case-insensitive, whole words, punctuation ignored)."""
    words = tokens(text)
    return any(says(words, phrase) for phrase in rules.hold_phrases if phrase.strip())


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


def spoken_pieces(segment: TranscriptSegment) -> list[Interval]:
    """The spans a segment was spoken in: its words' spans, or its own span when it has no words."""
    if segment.words:
        return [(w.start_ms, w.end_ms) for w in segment.words]
    return [(segment.start_ms, segment.end_ms)]


def find_pauses(
    dialogue: Sequence[TranscriptSegment], speech: Sequence[SpeechRegion], duration_ms: int,
    rules: PauseRules | None = None,
) -> list[Pause]:
    """The pauses of a call, ordered by start (see the module docstring for the rules)."""
    rules = rules or PauseRules()
    pieces = [(start, end, seg.id) for seg in dialogue for start, end in spoken_pieces(seg)]
    if not pieces:
        return []
    limit = max(duration_ms, max(end for _, end, _ in pieces), max((r.end_ms for r in speech), default=0))
    spans = union([(max(0, s), min(limit, e)) for s, e, _ in pieces]
                  + [(max(0, r.start_ms), min(limit, r.end_ms)) for r in speech])
    last_spoken_end = max(end for _, end, _ in pieces)
    # the piece said last before a gap, found by bisection: an hour's call has thousands of gaps and words
    by_end = sorted((end, seg_id) for _, end, seg_id in pieces)
    ends = [end for end, _ in by_end]
    by_id: dict[int, TranscriptSegment] = {}
    for seg in dialogue:
        by_id.setdefault(seg.id, seg)
    findings: list[Pause] = []
    for (_, gap_start), (gap_end, _) in pairwise(spans):
        if gap_end - gap_start < rules.min_pause_ms or last_spoken_end < gap_end:
            continue  # too short, or nothing is said after it (trailing silence with only noise in VAD)
        said = bisect_right(ends, gap_start)
        if not said:
            continue  # nothing said before it: leading silence with only noise in VAD
        _, after_id = by_end[said - 1]
        segment = by_id[after_id]
        long = gap_end - gap_start >= rules.long_pause_threshold_ms
        compliant = not long or (announces_hold(rules, segment.text) and gap_end - gap_start <= rules.max_hold_ms)
        findings.append(Pause(start_ms=gap_start, end_ms=gap_end, duration_ms=gap_end - gap_start, compliant=compliant,
                              after_dialogue_id=after_id, long=long))
    return findings
