"""Faithfulness: whether each sentence a language model wrote about a call (a summary, a goal's explanation) is
supported by the transcript, and the call's own key sentences for when too little of it is.

A sentence is supported when its numbers and names are in the transcript (`unsupported_details`), its meaning is
close to a stretch of the call (``SUPPORT_THRESHOLD``, role words left out) and its content words are the call's
(``PARAPHRASE_SIMILARITY`` allows one new word); without an embedder (not English) only the details are checked.
`extractive_summary`: the call's most central sentences, quoted as said. Rules: docs/analysis.md; the fit and its
figures: benchmarks/RESULTS.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog

from callscope.analysis.result import TranscriptSegment
from callscope.analysis.stages.evidence import SENTENCE, Doubts, doubtful_sentences, tokens, without_role_words

log = structlog.get_logger()

SUPPORT_THRESHOLD = 0.45
KEY_SENTENCES = 3
KEY_MIN_WORDS = 5

_SENTENCE_END = re.compile(r"[.!?…][\"'”’)]*(?=\s|$)|[。！？]")
# A full stop after these ends no sentence: titles, abbreviations, and 1-2 digit ordinals ("am 3. März").
_NOT_AN_END = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Nr|vs|etc|e\.g|i\.e|z\.B)|(?<![\d.,])\d{1,2})\.$")


def sentence_ends(text: str) -> list[int]:
    """Where each sentence of written text ends (character offsets); a title or ordinal's full stop ends none."""
    return [m.end() for m in _SENTENCE_END.finditer(text)
            if text[m.start()] != "." or not _NOT_AN_END.search(text[: m.start() + 1])]


def split_sentences(text: str) -> list[str]:
    """The sentences of written text; text after the last end is a sentence too."""
    out, start = [], 0
    for end in [*sentence_ends(text), len(text)]:
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        start = end
    return out


# --- names and numbers --------------------------------------------------------------------------------------

_NOT_NAMES = {"I", "AM", "PM", "OK"}  # capitalised, yet a paraphrase ("9 AM" for "9 in the morning")
_NUMBER = re.compile(r"\d+(?:[.,:/]\d+)*")
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen " \
    "seventeen eighteen nineteen".split()
_TENS = "twenty thirty forty fifty sixty seventy eighty ninety".split()


def _english_number_words(n: int) -> set[str]:
    if n < 20:
        return {_UNITS[n]}
    if n < 100:
        tens, unit = _TENS[n // 10 - 2], n % 10
        return {tens} if unit == 0 else {f"{tens}-{_UNITS[unit]}", f"{tens} {_UNITS[unit]}"}
    return set()


def unsupported_numbers(summary: str, transcript: str) -> list[str]:
    """The numbers of `summary` that `transcript` does not contain (see unsupported_details), in order."""
    found: list[str] = []
    transcript_lower = transcript.lower()
    transcript_digits = {re.sub(r"\D", "", n) for n in _NUMBER.findall(transcript)}
    for number in _NUMBER.findall(summary):
        digits = re.sub(r"\D", "", number)
        if digits in transcript_digits:
            continue
        if len(digits) <= 2 and any(w in transcript_lower for w in _english_number_words(int(digits))):
            continue
        found.append(number)
    return found


# Spelt-out numbers of a written sentence checked against the words the recogniser was sure of ("one" is a pronoun
# as often as a number).
_NUMBER_WORDS = {*_UNITS[2:], *_TENS, "hundred", "thousand", "million"}


def doubtful_numbers(summary: str, transcript: str, sure: str) -> list[str]:
    """The numbers of `summary` (digits, or spelt out in English) that `transcript` has only in words the recogniser
    doubted: `sure` is the transcript with those words left out (evidence.Doubts.sure), in order."""
    said = {w.lower() for w in _WORD.findall(transcript)}
    sure_words = {w.lower() for w in _WORD.findall(sure)}
    missing = set(unsupported_numbers(summary, transcript))
    spelt = [w for w in _WORD.findall(summary) if w.lower() in _NUMBER_WORDS and w.lower() in said - sure_words]
    return list(dict.fromkeys([*(n for n in unsupported_numbers(summary, sure) if n not in missing), *spelt]))


def unsupported_details(summary: str, transcript: str, names: bool = True) -> list[str]:
    """Numbers and capitalised names in `summary` that `transcript` does not contain, in order of appearance.

    A number is supported when the transcript has the same number (separators ignored) or, below 100, when
    the transcript spells it out in English ("twenty-five"). With `names`, a capitalised word inside a
    sentence is a name to check; it is supported when the transcript has the word in any case.
    """
    found = unsupported_numbers(summary, transcript)
    transcript_words = {w.lower() for w in _WORD.findall(transcript)}
    for sentence in re.split(r"(?<=[.!?])\s+", summary) if names else ():
        for match in list(_WORD.finditer(sentence))[1:]:  # the first word is capitalised anyway
            word = match.group()
            if word[0].isupper() and word not in _NOT_NAMES and word.lower() not in transcript_words:
                found.append(word)
    return list(dict.fromkeys(found))


# --- support by meaning -------------------------------------------------------------------------------------


# Words a sentence about a call may use that its transcript need not: function words, and the vocabulary of
# reporting a call ("the caller asked", "the agent confirmed"). English: the meaning check is English only.
_FUNCTION_WORDS = set("""a an the of to in on at by for from with and or if is are was were be been being it its this
that these those what which who whom whose when where why how any some as their there they them his her he she
you your our we us i me my not no yes do does did has have had will would can could should may might must also then
than so but about into over after before again once only just very too both each other such own same all because
while during themselves himself herself itself call called calls calling caller customer agent said says told
asked asks ask informed inform mentioned discussed explained agreed agree confirmed confirm provided requested
request wanted wants gave give given offered thanked thanking ended end spoke speak talked talk conversation person
party speaker speakers""".split())
# One word the transcript lacks is allowed only in a sentence this close in meaning to it (a paraphrase: "Maria
# took the call", 0.73); the FIT inventions with one new word reach 0.48 at most.
PARAPHRASE_SIMILARITY = 0.70


def stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word  # "moved", "move" -> "mov"


def new_words(sentence: str, transcript_stems: set[str]) -> tuple[str, ...]:
    """The content words of a written sentence whose stems the transcript does not have."""
    words = [w for w in tokens(without_role_words(sentence))
             if len(w) > 2 and not w.isdigit() and w not in _FUNCTION_WORDS]
    return tuple(dict.fromkeys(w for w in words if stem(w) not in transcript_stems))


# Words that give a speaker a part in a service call: true only where the roles stage found an agent.
_SERVICE_ROLE = re.compile(r"\b(agent|operator|caller|customer|client|representative|receptionist)s?\b", re.IGNORECASE)


_REPORTED = re.compile(r'^([^"]{1,40}) said: "([^"]+)"\.?$')


def invented_roles(sentence: str, roles: Mapping[str, str] | None, transcript_stems: set[str]) -> tuple[str, ...]:
    """The role words of a sentence about a call where the roles stage found no agent (peers talking, or speakers
    unknown) that the transcript does not say itself ("All of our representatives are busy" does). `roles` None:
    not known here, not checked."""
    if roles is None or "agent" in roles.values():
        return ()
    words = [m.group(1).lower() for m in _SERVICE_ROLE.finditer(sentence)]
    return tuple(dict.fromkeys(w for w in words if stem(w) not in transcript_stems))


@dataclass(frozen=True)
class Support:
    """One written sentence checked against the transcript."""

    sentence: str
    similarity: float | None  # to the closest stretch of the transcript; None without an embedder
    closest: str  # that stretch ("" without an embedder)
    details: tuple[str, ...]  # numbers and names the transcript does not contain
    new: tuple[str, ...] = ()  # content words the transcript does not have (checked with the meaning)
    roles: tuple[str, ...] = ()  # role words for speakers the call gives no role (invented_roles)
    doubtful: tuple[str, ...] = ()  # numbers the transcript has only in words the recogniser doubted
    quoted: bool = False  # it reports speech said word for word: supported as it stands
    unstated: tuple[str, ...] = ()  # its claims the language model judged the transcript does not state (entailment)

    def supported(self, threshold: float = SUPPORT_THRESHOLD) -> bool:
        return not self.reason(threshold)

    def reason(self, threshold: float = SUPPORT_THRESHOLD) -> str:
        """Why the sentence is not supported (empty when it is)."""
        if self.details:
            return f"the transcript does not contain {', '.join(self.details)}"
        if self.doubtful:
            return f"the recogniser doubted the words of {', '.join(self.doubtful)}"
        if self.roles:
            return f"no speaker of the call is known to be the {', '.join(self.roles)}"
        if self.unstated:
            return "the transcript does not state it (the language model's reading)"
        if self.similarity is None:
            return ""
        if self.similarity < threshold:
            return f"no sentence of the transcript says it (closest similarity {self.similarity:.2f})"
        if len(self.new) > 1 or (self.new and self.similarity < PARAPHRASE_SIMILARITY):
            return f"the transcript does not say {', '.join(self.new)}"
        return ""


def stretches(segments: Sequence[TranscriptSegment]) -> list[str]:
    """What a written sentence is compared with: each sentence of a turn, each turn, each turn with the next."""
    turns = [" ".join(s.text.split()) for s in segments if tokens(s.text)]
    out: list[str] = []
    for i, turn in enumerate(turns):
        sentences = [m.group().strip() for m in SENTENCE.finditer(turn) if tokens(m.group())]
        out += sentences if len(sentences) > 1 else []
        out.append(turn)
        if i + 1 < len(turns):
            out.append(f"{turn} {turns[i + 1]}")
    return list(dict.fromkeys(out))


def claim_text(sentence: str) -> str:
    """A written sentence as it is compared with speech: role words out ("The agent promised..." -> "promised...")."""
    return without_role_words(sentence) or sentence


class SupportChecker:
    """Checks written sentences against one call's transcript; the transcript is embedded once, when first needed."""

    def __init__(self, segments: Sequence[TranscriptSegment], embedder: Any | None, *, names: bool = True,
                 threshold: float = SUPPORT_THRESHOLD, roles: Mapping[str, str] | None = None) -> None:
        """`roles`: speaker label -> agent/customer/unknown, the roles stage's; given, a sentence that names a role
        nobody holds is not supported (invented_roles)."""
        self.embedder = embedder
        self.names = names
        self.roles = roles
        self.threshold = threshold
        self.transcript = "\n".join(s.text for s in segments)
        self.stretches = stretches(segments)
        self.stems = {stem(w) for s in segments for w in tokens(s.text)}
        self.doubts = Doubts(segments)
        self._said = [f" {' '.join(tokens(stretch))} " for stretch in self.stretches]
        self._vectors: np.ndarray | None = None

    def _stretch_vectors(self) -> np.ndarray:
        if self._vectors is None:
            self._vectors = np.asarray(self.embedder.embed(self.stretches), dtype=np.float32)
        return self._vectors

    def _quote(self, sentence: str) -> str | None:
        """The quote of a sentence that reports what was said ('The customer said: "..."') when the transcript has
        its words, in order, in one stretch: speech quoted is supported as it stands, whoever it is said by (the
        name "Speaker 2" is no number of the call)."""
        match = _REPORTED.match(sentence)
        said = f" {' '.join(tokens(match.group(2)))} " if match else ""
        return match.group(2) if match and said.strip() and any(said in s for s in self._said) else None

    def check(self, sentences: Sequence[str]) -> list[Support]:
        """Each sentence's support, in order."""
        quotes = [self._quote(s) for s in sentences]
        if any(quotes):  # speech quoted: only who said it is checked
            return [Support(s, 1.0, q, (), roles=invented_roles(s.split(" said: ")[0], self.roles, self.stems),
                            quoted=True)
                    if q else self.check([s])[0] for s, q in zip(sentences, quotes, strict=True)]
        details = [tuple(unsupported_details(s, self.transcript, names=self.names)) for s in sentences]
        roles = [invented_roles(s, self.roles, self.stems) for s in sentences]
        doubted = [tuple(doubtful_numbers(s, self.transcript, self.doubts.sure)) if self.doubts.any else ()
                   for s in sentences]
        if any(doubted):  # a count only: the numbers are the call's
            log.info("numbers_in_doubtful_words", sentences=sum(map(bool, doubted)))
        if self.embedder is None or not self.stretches or not sentences:
            return [Support(s, None, "", d, roles=r, doubtful=n)
                    for s, d, r, n in zip(sentences, details, roles, doubted, strict=True)]
        claims = np.asarray(self.embedder.embed([claim_text(s) for s in sentences]), dtype=np.float32)
        similarity = claims @ self._stretch_vectors().T
        best = similarity.argmax(axis=1)
        return [Support(s, round(float(similarity[i, best[i]]), 3), self.stretches[best[i]], d,
                        new_words(s, self.stems), r, n)
                for i, (s, d, r, n) in enumerate(zip(sentences, details, roles, doubted, strict=True))]

    def supported_text(self, text: str) -> tuple[list[str], list[Support]]:
        """The sentences of text that are supported, and the checks of those that are not."""
        checks = self.check(split_sentences(text))
        kept = [c.sentence for c in checks if c.supported(self.threshold)]
        return kept, [c for c in checks if not c.supported(self.threshold)]


# --- the extractive summary ---------------------------------------------------------------------------------


def speaker_name(speaker: str, roles: Mapping[str, str] | None) -> str:
    """How a quote names who said it: "The agent", "The customer", else as the recording page names a speaker whose
    role is not known ("Speaker 1" for the label speaker-1)."""
    role = (roles or {}).get(speaker)
    return f"The {role}" if role in ("agent", "customer") else speaker.replace("-", " ").capitalize()


def key_sentences(segments: Sequence[TranscriptSegment], embedder: Any | None,
                  count: int = KEY_SENTENCES) -> list[tuple[TranscriptSegment, str]]:
    """The call's `count` most central sentences of at least KEY_MIN_WORDS words, in the order said. Without an
    embedder, the longest ones. Greetings and goodbyes are short or far from the centre: they are seldom chosen.
    A sentence with a word the recogniser doubted is chosen only when every sentence has one.
    A sentence said again (the same words) is a candidate once: a long call repeats itself, a summary must not."""
    said = [(s, text, doubted) for s in segments for text, doubted in doubtful_sentences(s)
            if len(tokens(text)) >= KEY_MIN_WORDS]
    if not said:  # a call of short sentences: its longest turns
        said = [(s, " ".join(s.text.split()), any(doubted for _, doubted in doubtful_sentences(s)))
                for s in segments if tokens(s.text)]
    # the sentences without a word the recogniser doubted, when there are any (evidence.doubtful)
    found = [(s, text) for s, text, doubted in said if not doubted] or [(s, text) for s, text, _ in said]
    first: dict[str, tuple[TranscriptSegment, str]] = {}
    for s, text in found:
        first.setdefault(" ".join(tokens(text)), (s, text))
    found = list(first.values())
    if len(found) <= count:
        return found
    if embedder is not None:
        vectors = np.asarray(embedder.embed([text for _, text in found]), dtype=np.float32)
        centre = vectors.mean(axis=0)
        strength = vectors @ centre
    else:
        strength = np.array([len(tokens(text)) for _, text in found], dtype=np.float32)
    chosen = sorted(np.argsort(-strength, kind="stable")[:count])
    return [found[i] for i in chosen]


def extractive_summary(segments: Sequence[TranscriptSegment], embedder: Any | None,
                       roles: Mapping[str, str] | None = None, count: int = KEY_SENTENCES) -> str:
    """The key sentences as said, each with who said it: 'The customer said: "..."'. Empty without speech."""
    return " ".join(f'{speaker_name(s.speaker, roles)} said: "{text}"'
                    for s, text in key_sentences(segments, embedder, count))
