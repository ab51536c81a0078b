"""Salience: the statements of a call that the summary reads, within a fixed budget of characters whatever the
call's length, taken from every part of it.

A call whose turns fit the budget is read whole. A longer one is read as a digest of its statements (the sentences
said, each cut to STATEMENT_CHARS; one said again is read once): its opening (where the reason for the call is
said), its closing (what was agreed, how it ended) and, between them, an equal share of the budget for each of its
PARTS parts by time (its quarters), so that what the last three quarters of an hour-long call say is read as much
as what its first says. Within a part the statements read first are those closest in meaning to the part's centre
(what the part is mostly about; the text model) and least like a statement already read (a subject said again is
read once), or, without the text model, the rarest words of the call. The text read is bounded (a 60-minute call
reads as much as a 3-minute one); the time is linear in the call's length (each statement embedded once, the same
embeddings the summary's faithfulness check reads).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from callscope.analysis.result import TranscriptSegment
from callscope.analysis.stages.evidence import SENTENCE, tokens

# About 300 tokens: at about 25 ms a prompt token on 2 CPUs, 8 s of reading at most.
READ_CHARS = 1200
OPENING_SHARE, CLOSING_SHARE = 0.25, 0.15  # of the budget, kept for the call's first and last statements
PARTS = 4  # a long call's parts by time, each read for an equal share of the budget: its quarters
STATEMENT_CHARS = 200  # a longer sentence is cut to its start: one long sentence does not take a part's share
MIN_CONTENT_WORDS = 2  # a statement with fewer ("Okay, sounds good.") is read between the opening and closing only
# where its part has nothing else
SAID_AGAIN = 0.9  # cosine similarity to a statement already read: the same said again (a repeated call, ASR variants)
DIVERSITY = 0.5  # how much likeness to a statement already read weighs against closeness to the part's centre
# Words too common to mark what a turn is about (English; in other languages the rarity weighs alone).
_COMMON = set("""the a an and or but so to of in on at for with from by is are was were be been it its this that
you your i me my we our he she they them his her yes no not okay ok oh um uh well just like really right thank
thanks please hello hi bye goodbye sure will would can could should have has had does did there then what""".split())


def content_words(text: str) -> set[str]:
    """The words of `text` that can mark what it is about: longer than two letters and not in _COMMON."""
    return {w for w in tokens(text) if len(w) > 2 and w not in _COMMON}


@dataclass(frozen=True)
class Turn:
    """Consecutive segments of one speaker, as one line (in a digest: consecutive statements read of one turn)."""

    speaker: str
    text: str
    part: int = 0  # the part of the call it was said in (0 .. PARTS - 1, by time); 0 in a call read whole
    closing: bool = False  # read as the call's closing (how it ends), not for its part


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
    if len(text) <= STATEMENT_CHARS:
        return text
    at = text.rfind(" ", 0, STATEMENT_CHARS)
    return text[: at if at > 0 else STATEMENT_CHARS] + " ..."


@dataclass(frozen=True)
class Statement:
    """A sentence said, as a digest reads it."""

    turn: int  # the index of its turn (turns_of)
    speaker: str
    text: str  # cut to STATEMENT_CHARS
    part: int  # the part of the call it was said in: 0 .. parts - 1, by the time its segment starts


def statements(segments: Sequence[TranscriptSegment], parts: int = PARTS) -> list[Statement]:
    """Every sentence of the call's segments in the order said (whitespace tidied, as the faithfulness check splits
    them), with its turn and its part of the call."""
    said = [s for s in segments if s.text.strip()]
    if not said:
        return []
    start, end = min(s.start_ms for s in said), max(s.end_ms for s in said)
    out: list[Statement] = []
    turn, speaker = -1, None
    for s in said:
        if s.speaker != speaker:
            turn, speaker = turn + 1, s.speaker
        part = min(parts - 1, (s.start_ms - start) * parts // max(end - start, 1))
        text = " ".join(s.text.split())
        out += [Statement(turn, s.speaker, _cut(m.group().strip()), part)
                for m in SENTENCE.finditer(text) if tokens(m.group())]
    return out


class _Worth:
    """What reading each statement next is worth: with the text model, its closeness in meaning to its part's centre
    less DIVERSITY times its likeness to the statements read (none at SAID_AGAIN or closer); without it, the rarity
    in the call of its content words (inverse statement frequency, longer statements weighed down)."""

    def __init__(self, found: Sequence[Statement], embedder: Any | None, parts: int) -> None:
        self.vectors: np.ndarray | None = None
        if embedder is not None:
            vectors = np.asarray(embedder.embed([s.text for s in found]), dtype=np.float32)
            part = np.array([s.part for s in found])
            centres = np.zeros((parts, vectors.shape[1]), dtype=np.float32)
            for p in set(part.tolist()):
                centre = vectors[part == p].mean(axis=0)
                centres[p] = centre / max(float(np.linalg.norm(centre)), 1e-9)
            self.base = (vectors * centres[part]).sum(axis=1)
            self.vectors, self.like = vectors, np.zeros(len(found), dtype=np.float32)
        else:
            words = [content_words(s.text) for s in found]
            frequency = Counter(w for ws in words for w in ws)
            self.base = np.array([sum(math.log(len(found) / frequency[w]) for w in ws) / math.sqrt(1 + len(s.text))
                                  for ws, s in zip(words, found, strict=True)], dtype=np.float32)

    def read(self, k: int) -> None:
        if self.vectors is not None:
            self.like = np.maximum(self.like, self.vectors @ self.vectors[k])

    def best(self, candidates: Sequence[int]) -> int | None:
        if self.vectors is None:
            return max(candidates, key=lambda k: self.base[k], default=None)
        fresh = [k for k in candidates if self.like[k] < SAID_AGAIN]
        return max(fresh, key=lambda k: self.base[k] - DIVERSITY * max(float(self.like[k]), 0.0), default=None)


def _choose(found: Sequence[Statement], embedder: Any | None, max_chars: int, parts: int) -> tuple[set[int], set[int]]:
    """The statements of `found` to read, and those of them read as the closing: the opening and the closing, then
    the parts in turn, the part that has read least first, each its most worth reading that fits (_Worth)."""
    sizes = [len(s.text) + 1 for s in found]
    chosen: set[int] = set()
    used = [0] * parts
    total = 0

    def take(k: int) -> None:
        nonlocal total
        chosen.add(k)
        used[found[k].part] += sizes[k]
        total += sizes[k]

    for k in range(len(found)):
        if total + sizes[k] > max_chars * OPENING_SHARE:
            break
        take(k)
    limit = total + max_chars * CLOSING_SHARE
    closing: set[int] = set()
    for k in range(len(found) - 1, -1, -1):
        if k in chosen or total + sizes[k] > limit:
            break
        take(k)
        closing.add(k)
    worth = _Worth(found, embedder, parts)
    for k in chosen:
        worth.read(k)
    left = [k for k in range(len(found)) if k not in chosen]
    rich = [k for k in left if len(content_words(found[k].text)) >= MIN_CONTENT_WORDS]
    waiting = {p: [k for k in rich if found[k].part == p] or [k for k in left if found[k].part == p]
               for p in range(parts)}
    while True:
        fits = {p: [k for k in ks if total + sizes[k] <= max_chars] for p, ks in waiting.items()}
        open_parts = [p for p, ks in fits.items() if ks]
        if not open_parts:
            return chosen, closing
        part = min(open_parts, key=lambda p: (used[p], p))
        best = worth.best(fits[part])
        if best is None:  # what is left of this part was read already, said again
            del waiting[part]
            continue
        take(best)
        worth.read(best)
        waiting[part].remove(best)


def salient_turns(segments: Sequence[TranscriptSegment], embedder: Any | None = None, max_chars: int = READ_CHARS,
                  parts: int = PARTS) -> list[Turn | None]:
    """What to read of the call, in the order said, at most `max_chars` of text: its turns (uncut) when they fit,
    else its digest (see the module's docstring); None marks statements left out between two read. `embedder`: the
    text model that finds each part's statements (English), or None: the rarity of their words."""
    turns = turns_of(segments)
    if sum(len(t.text) + 1 for t in turns) <= max_chars:
        return list(turns)
    said = statements(segments, parts)
    first: dict[str, int] = {}
    for i, statement in enumerate(said):
        first.setdefault(" ".join(tokens(statement.text)), i)
    unique = sorted(first.values())  # positions in `said` of the statements said first
    found = [said[i] for i in unique]
    chosen, closing = ((set(range(len(found))), set()) if sum(len(s.text) + 1 for s in found) <= max_chars
                       else _choose(found, embedder, max_chars, parts))
    out: list[Turn | None] = []
    last = -1
    for k in sorted(chosen):
        position, statement = unique[k], found[k]
        previous = out[-1] if out else None
        if position != last + 1:
            out.append(None)
        elif previous is not None and said[last].turn == statement.turn and previous.closing == (k in closing):
            out[-1] = Turn(statement.speaker, f"{previous.text} {statement.text}", previous.part, previous.closing)
            last = position
            continue
        out.append(Turn(statement.speaker, statement.text, statement.part, k in closing))
        last = position
    return [*out, None] if last != len(said) - 1 else out
