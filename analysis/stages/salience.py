"""Salience: the turns of a call that the summary reads, within a fixed budget of characters whatever the call's
length.

A call whose turns fit the budget is read whole. A longer one is read as its opening (where the reason for the
call is said), its closing (what was agreed, how it ended) and, between them, the turns that carry most of the
call's own content: each turn scores the rarity in the call of its content words (inverse turn frequency), so
small talk and the words every turn repeats weigh little, and a turn said again word for word (a repeated
question, a hold message) is read once. One pass counts the words and one scores the turns: the time is linear in
the call's length and the text read is bounded (a 60-minute call reads as much as a 3-minute one).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from callscope.analysis.result import TranscriptSegment
from callscope.analysis.stages.evidence import tokens

# About 300 tokens: at about 25 ms a prompt token on 2 CPUs, 8 s of reading at most.
READ_CHARS = 1200
OPENING_SHARE, CLOSING_SHARE = 0.3, 0.2  # of the budget, kept for the call's first and last turns
TURN_CHARS = 240  # a longer turn is cut to its start: one monologue does not take the whole budget
# Words too common to mark what a turn is about (English; in other languages the rarity weighs alone).
_COMMON = set("""the a an and or but so to of in on at for with from by is are was were be been it its this that
you your i me my we our he she they them his her yes no not okay ok oh um uh well just like really right thank
thanks please hello hi bye goodbye sure""".split())


def content_words(text: str) -> set[str]:
    """The words of `text` that can mark what it is about: longer than two letters and not in _COMMON."""
    return {w for w in tokens(text) if len(w) > 2 and w not in _COMMON}


@dataclass(frozen=True)
class Turn:
    """Consecutive segments of one speaker, as one line."""

    speaker: str
    text: str


def turns_of(segments: Sequence[TranscriptSegment]) -> list[Turn]:
    """The call's turns: consecutive segments of one speaker joined (a turn cut at its pauses), whitespace tidied,
    empty segments left out."""
    out: list[Turn] = []
    for s in segments:
        text = " ".join(s.text.split())
        if text and out and out[-1].speaker == s.speaker:
            out[-1] = Turn(s.speaker, f"{out[-1].text} {text}")
        elif text:
            out.append(Turn(s.speaker, text))
    return out


def _cut(text: str) -> str:
    return text if len(text) <= TURN_CHARS else text[: text.rfind(" ", 0, TURN_CHARS)] + " ..."


def salient_turns(turns: Sequence[Turn], max_chars: int = READ_CHARS) -> list[Turn | None]:
    """The turns to read, in the order said, at most `max_chars` of text; None marks turns left out between two
    read. All of them (uncut) when they fit."""
    if sum(len(t.text) + 1 for t in turns) <= max_chars:
        return list(turns)
    seen: set[str] = set()
    unique = []  # (index, turn cut to TURN_CHARS), a turn said again left out
    for i, turn in enumerate(turns):
        key = " ".join(tokens(turn.text))
        if key not in seen:
            seen.add(key)
            unique.append((i, Turn(turn.speaker, _cut(turn.text))))
    chosen: set[int] = set()
    used = 0

    def take(order, limit: int) -> None:
        nonlocal used
        for k in order:
            size = len(unique[k][1].text) + 1
            if k not in chosen and used + size <= limit:
                chosen.add(k)
                used += size

    take(range(len(unique)), int(max_chars * OPENING_SHARE))
    take(range(len(unique) - 1, -1, -1), used + int(max_chars * CLOSING_SHARE))
    words = [content_words(t.text) for _, t in unique]
    frequency = Counter(w for ws in words for w in ws)
    score = [sum(math.log(len(unique) / frequency[w]) for w in ws) / math.sqrt(1 + len(t.text))
             for ws, (_, t) in zip(words, unique, strict=True)]
    take(sorted(range(len(unique)), key=lambda k: -score[k]), max_chars)
    out: list[Turn | None] = []
    last = -1
    for k in sorted(chosen):
        index, turn = unique[k]
        if index != last + 1:
            out.append(None)
        out.append(turn)
        last = index
    return [*out, None] if last != len(turns) - 1 else out
