"""Finding evidence in a transcript, shared by goals, categories and fields: words and phrases said (case and
punctuation aside), verbatim quotes, sentences, and similarity by meaning to a query (the text embedder).

Every piece of evidence points at a dialogue segment, the time it was said and the words quoted (`result.Evidence`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from callscope.analysis.result import TranscriptSegment, TranscriptWord

# A word the recogniser gave a probability below this is doubtful: a sentence with one is never quoted, and a number
# said only in doubtful words supports no summary sentence and makes a field's value uncertain. Fitted on the FIT
# clips of the real-speech set (benchmarks/doubtful_words.py; the figures: benchmarks/RESULTS.md).
DOUBTFUL_WORD_PROBABILITY = 0.5
SIMILARITY_FLOOR = 0.10  # about the median similarity of unrelated (goal, sentence) pairs
SIMILARITY_CEILING = 0.70  # above the 90th percentile of the positives: certainly about the goal
QUOTE_MAX_CHARS = 240

# Role words make a description read as an instruction; without them it reads closer to the speech.
_ROLE_WORDS = re.compile(
    r"\b(?:the |their |a |an )?(?:agent|operator|caller|customer|client|representative|rep|receptionist|"
    r"patient|user|employee|staff member|speaker)(?:'s|s)?\b", re.IGNORECASE)
_TOKEN = re.compile(r"[\w']+")
# A redaction token ("[PAYMENT_CARD]", redaction.token) is one word with its brackets: its span covers them, so that
# a quote cut at word boundaries keeps the token whole.
_BRACKETED = re.compile(r"\[[A-Z]+(?:_[A-Z]+)*\]")
# A sentence ends at . ! or ? followed by a space or the end ("$49.99" and "e.g.x" do not end one).
SENTENCE = re.compile(r"(?:[^.!?]|[.!?]+(?=[^\s.!?]))+[.!?]*")
# Double or single quotes, straight or curly; a single quote opens only after a non-letter and closes only
# before one, so the apostrophes of "I'm" or "agents'" are not quotes.
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”|‘([^’]+)’|(?<!\w)'(.+?)'(?!\w)")


def _clean(text: str) -> str:
    # Same-length replacements only: token spans must stay valid in the original text.
    return text.lower().replace("’", "'").replace("‘", "'")


def tokens(text: str) -> list[str]:
    """Normalised words: lowercase, punctuation dropped, apostrophes kept inside words ("don't")."""
    return [t for t in (m.group().strip("'") for m in _TOKEN.finditer(_clean(text))) if t]


def says(words: Sequence[str], phrase: str) -> int:
    """How often the phrase is said in `words` (tokens of a text): whole words, case and punctuation aside."""
    wanted, count = tokens(phrase), 0
    at = find_words(words, wanted)
    while at >= 0:
        count += 1
        at = find_words(words, wanted, at + len(wanted))
    return count


def token_spans(text: str) -> list[tuple[str, int, int]]:
    """(normalised word, start, end) of each word of text; start/end index the original text. A redaction token's
    span includes its brackets (the word is still its name: "payment_card")."""
    bracketed = {m.start() + 1: (m.start(), m.end()) for m in _BRACKETED.finditer(text)}
    out = []
    for m in _TOKEN.finditer(_clean(text)):
        word = m.group()
        lead = len(word) - len(word.lstrip("'"))
        word = word.strip("'")
        if word:
            start, end = m.start() + lead, m.start() + lead + len(word)
            whole = bracketed.get(start)
            out.append((word, *(whole if whole is not None and whole[1] == end + 1 else (start, end))))
    return out


def find_words(haystack: Sequence[str], needle: Sequence[str], start: int = 0) -> int:
    """Index of the first occurrence of the word sequence needle in haystack at or after start; -1 if none."""
    n = len(needle)
    if not n:
        return -1
    for i in range(start, len(haystack) - n + 1):
        if list(haystack[i:i + n]) == list(needle):
            return i
    return -1


def word_time(segment: TranscriptSegment, index: int) -> int:
    """When the index-th word of segment.text was said: its word timing when the words line up with the
    text, else the segment's start."""
    if segment.words:
        timed = [(t, w.start_ms) for w in segment.words for t in tokens(w.text)]
        if len(timed) == len(tokens(segment.text)) and 0 <= index < len(timed):
            return timed[index][1]
    return segment.start_ms


def doubtful(word: TranscriptWord) -> bool:
    """Whether the recogniser doubted the word (its probability is below DOUBTFUL_WORD_PROBABILITY)."""
    return word.probability < DOUBTFUL_WORD_PROBABILITY


def token_words(segment: TranscriptSegment) -> list[TranscriptWord | None]:
    """For each token of segment.text (`tokens`), the word of segment.words it was said in: the words walked in
    order, each matched to the next tokens that are its own; None for a token no word has (a segment without words,
    a text edited after recognition)."""
    said = tokens(segment.text)
    out: list[TranscriptWord | None] = [None] * len(said)
    at = 0
    for word in segment.words:
        for token in tokens(word.text):
            found = next((i for i in range(at, min(at + 3, len(said))) if said[i] == token), -1)
            if found >= 0:
                out[found], at = word, found + 1
    return out


def sentence_words(segment: TranscriptSegment) -> list[tuple[str, list[TranscriptWord]]]:
    """Each sentence of segment.text (SENTENCE, those with words) and the words of segment.words said in it."""
    owners = token_words(segment)
    out, at = [], 0
    for m in SENTENCE.finditer(segment.text):
        count = len(tokens(m.group()))
        if count:
            words = [w for w in owners[at:at + count] if w is not None]
            out.append((m.group().strip(), list({id(w): w for w in words}.values())))
            at += count
    return out


def span_words(segment: TranscriptSegment, start: int, end: int) -> list[TranscriptWord]:
    """The words of segment.words said in the characters start..end of segment.text (a value found there)."""
    words = [w for (_, s, e), w in zip(token_spans(segment.text), token_words(segment), strict=True)
             if w is not None and s < end and e > start]
    return list({id(w): w for w in words}.values())


def doubtful_sentences(segment: TranscriptSegment) -> list[tuple[str, bool]]:
    """Each sentence of segment.text (as `sentence_words`) and whether a word of it is doubtful; a segment without
    words (a written transcript) has none."""
    return [(text, any(doubtful(w) for w in words)) for text, words in sentence_words(segment)]


class Doubts:
    """Where a call's recogniser doubted its words, looked up by what was said: each speaker's turns (consecutive
    segments of one speaker) as tokens, each token doubtful or not; and `sure`, the transcript without them."""

    def __init__(self, segments: Sequence[TranscriptSegment]) -> None:
        self.turns: list[tuple[str, list[str], list[bool]]] = []
        sure = []
        for segment in segments:
            said = tokens(segment.text)
            flags = [w is not None and doubtful(w) for w in token_words(segment)]
            text = segment.text
            for (_, start, end), doubted in zip(token_spans(segment.text), flags, strict=True):
                text = text[:start] + " " * (end - start) + text[end:] if doubted else text
            sure.append(text)
            if self.turns and self.turns[-1][0] == segment.speaker:
                self.turns[-1][1].extend(said)
                self.turns[-1][2].extend(flags)
            elif said:
                self.turns.append((segment.speaker, said, flags))
        self.any = any(any(flags) for _, _, flags in self.turns)
        self.sure = "\n".join(sure)  # the transcript (one line a segment), each doubtful word blanked out

    def only_doubtful(self, text: str, speaker: str | None = None) -> bool:
        """Whether the words of text are said (in a row, by `speaker` when given) only where a word of them is
        doubtful: said once with none of them doubtful, or not found, they are not."""
        wanted = tokens(text)
        if not self.any or not wanted:
            return False
        found = False
        for who, said, flags in self.turns:
            if speaker is not None and who != speaker:
                continue
            at = find_words(said, wanted)
            while at >= 0:
                if not any(flags[at:at + len(wanted)]):
                    return False
                found = True
                at = find_words(said, wanted, at + 1)
        return found


def quote_locations(quote: str, segments: Sequence[TranscriptSegment]) -> list[tuple[TranscriptSegment, int]]:
    """Every (segment, index of its first word) where quote is said word for word (case, punctuation and
    spacing aside) within one segment."""
    wanted = tokens(quote)
    found = []
    for segment in segments if wanted else ():
        words = tokens(segment.text)
        at = find_words(words, wanted)
        while at >= 0:
            found.append((segment, at))
            at = find_words(words, wanted, at + 1)
    return found


def quote_in_transcript(quote: str, segments: Sequence[TranscriptSegment]) -> tuple[TranscriptSegment, int] | None:
    """The first segment that says quote word for word (see quote_locations) and the index of its first word
    there; None when no single segment does."""
    found = quote_locations(quote, segments)
    return found[0] if found else None


def quoted_strings(text: str) -> list[str]:
    """The strings text puts in quotes (double or single, straight or curly)."""
    return [next(g for g in groups if g) for groups in _QUOTED.findall(text)]


def clock(ms: int) -> str:
    """0:05, 12:40, 1:02:03."""
    seconds = max(0, ms) // 1000
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def without_role_words(text: str) -> str:
    """text without role words ("the agent", "the customer"...), spaces tidied."""
    return " ".join(_ROLE_WORDS.sub(" ", text).split())


def query_text(name: str, description: str) -> str:
    """What a goal or category is matched by meaning against: its name and its description without role words."""
    described = without_role_words(description)
    title = name.replace("_", " ").replace("-", " ").strip()
    return f"{title}: {described}" if described else title


def similarity_score(similarity: float, threshold: float, floor: float = SIMILARITY_FLOOR,
                     ceiling: float = SIMILARITY_CEILING) -> float:
    """Similarity mapped to 0..1 with floor -> 0, threshold -> 0.5 and ceiling -> 1 (linear between)."""
    floor, ceiling = min(floor, threshold), max(ceiling, threshold)
    if similarity >= threshold:
        value = 0.5 + 0.5 * (similarity - threshold) / max(ceiling - threshold, 1e-9)
    else:
        value = 0.5 * (similarity - floor) / max(threshold - floor, 1e-9)
    return round(float(min(1.0, max(0.0, value))), 3)


@dataclass(frozen=True)
class Unit:
    """A stretch of one segment matched as a whole: one sentence, or the whole segment."""

    segment: TranscriptSegment
    first: int  # index of its first word in tokens(segment.text)
    start: int  # character span in segment.text
    end: int

    @property
    def text(self) -> str:
        return self.segment.text[self.start:self.end].strip()


def units(segments: Sequence[TranscriptSegment]) -> list[Unit]:
    """The sentences of every segment, and each segment of more than one sentence whole."""
    out: list[Unit] = []
    for segment in segments:
        spans = token_spans(segment.text)
        if not spans:
            continue
        sentences = [m for m in SENTENCE.finditer(segment.text) if tokens(m.group())]
        for m in sentences:
            first = next(i for i, (_, s, _) in enumerate(spans) if s >= m.start())
            out.append(Unit(segment, first, m.start(), m.end()))
        if len(sentences) > 1:
            out.append(Unit(segment, 0, 0, len(segment.text)))
    return out


def excerpt(segment: TranscriptSegment, first: int, count: int) -> tuple[str, int]:
    """A verbatim quote of segment.text holding words first..first+count-1: their sentence, narrowed to
    QUOTE_MAX_CHARS at word boundaries; and the index of the quote's first word."""
    text, spans = segment.text, token_spans(segment.text)
    last = min(first + count, len(spans)) - 1
    lo, hi = spans[first][1], spans[last][2]
    for m in SENTENCE.finditer(text):
        if m.start() <= spans[first][1] < m.end():
            lo = m.start()
        if m.start() < spans[last][2] <= m.end():
            hi = m.end()
    inside = [i for i, (_, s, e) in enumerate(spans) if s >= lo and e <= hi]
    a, b = inside[0], inside[-1]
    sentence_end = hi

    def width() -> int:
        return (sentence_end if b == inside[-1] else spans[b][2]) - spans[a][1]

    while width() > QUOTE_MAX_CHARS and (a < first or b > last):
        if b > last and (b - last >= first - a):
            b -= 1
        else:
            a += 1
    while width() > QUOTE_MAX_CHARS and b > a:  # the matched words alone are too long: keep their start
        b -= 1
    end = sentence_end if b == inside[-1] else spans[b][2]
    return text[spans[a][1]:end].strip(), a


class Similarities:
    """Cosine similarity of query texts to the units of a call. The units are embedded once, when first
    needed; queries given to `prepare` are embedded together (one call per text costs far more than one row)."""

    def __init__(self, embedder: Any | None, segments: Sequence[TranscriptSegment]):
        self.embedder = embedder
        self.units = units(segments)
        self._vectors: np.ndarray | None = None
        self._queries: dict[str, np.ndarray] = {}

    def prepare(self, queries: Sequence[str]) -> None:
        missing = list(dict.fromkeys(q for q in queries if q not in self._queries))
        if self.embedder is not None and self.units and missing:
            texts = missing if self._vectors is not None else [u.text for u in self.units] + missing
            vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
            if self._vectors is None:
                self._vectors, vectors = vectors[:len(self.units)], vectors[len(self.units):]
            self._queries.update(zip(missing, vectors, strict=True))

    def __call__(self, query: str) -> np.ndarray:
        """Similarity of query to each unit (same order as self.units); empty without an embedder."""
        if self.embedder is None or not self.units:
            return np.zeros(0, dtype=np.float32)
        self.prepare([query])
        return self._vectors @ self._queries[query]


def threshold_of(min_similarity: float | None, default: float) -> float | None:
    """The similarity a match by meaning needs; None when matching by meaning is off (1 or more)."""
    value = default if min_similarity is None else min_similarity
    return None if value >= 1 else value
