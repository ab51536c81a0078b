"""The figures of one analysed call that the account's trends add up (callscope/catalog/trends.py), read from the
analysis documents as stored (analysis/stored.py): the worker computes them when it stores an analysis, the catalog
migration that added them from the stored results of older ones. Shared code, so both can use the one reading."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CallFigures:
    pause_compliance: float  # share of the call's pauses that were compliant (a short one always is); 1 without any
    agent_talk_ms: int
    customer_talk_ms: int
    emotion: str | None  # the emotion that prevails over the call's speech; None where no segment has emotions
    goals: dict[int, bool]  # goal id -> met, of the goals that applied to the call


def figures(results: dict[str, Any], segments: list[dict[str, Any]] | None) -> CallFigures:
    """The figures of a results document and its transcript's segments (None: not at hand, so no emotion)."""
    pauses = results.get("pauses") or []
    talk: dict[str, int] = defaultdict(int)
    for speaker in results.get("speakers") or []:
        talk[speaker.get("role", "unknown")] += int(speaker.get("talk_ms") or 0)
    return CallFigures(
        pause_compliance=sum(1 for p in pauses if p.get("compliant")) / len(pauses) if pauses else 1.0,
        agent_talk_ms=talk["agent"], customer_talk_ms=talk["customer"],
        emotion=_prevailing_emotion(segments or []),
        goals={int(g["goal_id"]): bool(g["met"]) for g in results.get("goals") or [] if g.get("applicable", True)})


def _prevailing_emotion(segments: list[dict[str, Any]]) -> str | None:
    """The emotion with the most probability-weighted speaking time: a long calm turn outweighs a short angry one."""
    weight: dict[str, float] = defaultdict(float)
    for segment in segments:
        length = max(int(segment.get("end_ms", 0)) - int(segment.get("start_ms", 0)), 1)
        for emotion, probability in (segment.get("emotions") or {}).items():
            weight[emotion] += float(probability) * length
    return max(weight, key=weight.__getitem__) if weight else None
