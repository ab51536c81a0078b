"""The summary: what the call was about, in a few sentences the transcript supports, phrased by the language model
from a brief of the call.

`summarize` asks the model for a brief of four one-sentence slots (`brief_schema`) about the call read whole or,
past `salience.READ_CHARS`, a digest of salient statements from each of its parts (`summary_prompt`; the same
`transcript_prompt` the goals and fields start with, so llama.cpp evaluates it once). Every sentence is checked
(faithfulness.py); one not supported is replaced by what was said closest to it; a part of a long call the brief says
nothing of is quoted after it. When none is left or the model fails the summary is the call's key sentences.
`SummaryResult.method` and `removed` say which happened. Why: docs/analysis.md, benchmarks/RESULTS.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import structlog

from callscope.analysis.models.language_model import DEFAULT_CONTEXT_TOKENS, LanguageModel, LanguageModelError
from callscope.analysis.result import ModelUsed, TranscriptSegment
from callscope.analysis.stages.entailment import claims_of, entailed
from callscope.analysis.stages.evidence import SENTENCE, Doubts, says, tokens
from callscope.analysis.stages.faithfulness import (
    KEY_MIN_WORDS,
    Support,
    SupportChecker,
    claim_text,
    extractive_summary,
    sentence_ends,
    speaker_name,
    stem,
    unsupported_details,
)
from callscope.analysis.stages.salience import Turn, content_words, salient_turns, turns_of
from callscope.analysis.stages.speakers import phrase_score

log = structlog.get_logger()

CHARS_PER_TOKEN = 3  # conservative: English is about 4 characters a token, many other languages fewer
RESERVE_TOKENS = 1024  # the instruction and the answer of any stage that shares the transcript prefix
# One sentence a slot. A generated token costs about 0.1 s on 2 CPUs: four slots of about 15 tokens and the JSON
# between them; a sentence the cap cuts off is dropped (_whole_sentence).
SLOT_MAX_CHARS = 140
BRIEF_MAX_TOKENS = 180
MIN_WORDS = 3
REPEAT_SHARE = 0.9  # a sentence whose words are this much an earlier sentence's says nothing new (`distinct`)
# What was said that the brief left out, quoted after it (`_Quotes.untold`): the 1.5B model's four slots often miss
# a call's finding or its time ("a technician will come", not when).
UNTOLD_QUOTES = 2
NOVEL_MAX_SIMILARITY = 0.5
NOVEL_MIN_WORDS = 3

# The brief's slots: what each holds, for a call with an agent and for one without.
SERVICE_SLOTS = {"reason": "why the customer called: the problem or request stated",
                 "actions": "what the agent did or found", "outcome": "what was agreed, with when",
                 "next": "what follows (a visit, a message, a callback) or what else was asked"}
PEER_SLOTS = {"speakers": "who speaks, by name, and where they are", "subject": "what they talk about",
              "facts": "the main facts they say", "outcome": "how it ends, or what follows"}

LANGUAGE_NAMES = {
    "ar": "Arabic", "bg": "Bulgarian", "cs": "Czech", "da": "Danish", "de": "German", "el": "Greek",
    "en": "English", "es": "Spanish", "et": "Estonian", "fa": "Persian", "fi": "Finnish", "fr": "French",
    "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "id": "Indonesian", "it": "Italian",
    "ja": "Japanese", "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "ms": "Malay", "nl": "Dutch",
    "no": "Norwegian", "nb": "Norwegian", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian",
    "sk": "Slovak", "sl": "Slovenian", "sr": "Serbian", "sv": "Swedish", "th": "Thai", "tr": "Turkish",
    "uk": "Ukrainian", "vi": "Vietnamese", "zh": "Chinese",
}


def has_agent(roles: Mapping[str, str] | None) -> bool:
    return "agent" in (roles or {}).values()


def named_roles(segments: Sequence[TranscriptSegment], roles: Mapping[str, str] | None) -> dict[str, str]:
    """The roles the model's own sentences may name: the roles stage's where an agent's own words sound like one (an
    agent phrase, speakers.phrase_score: "how can I help", "thank you for calling"), else none ("unknown"). Without
    such words the roles stage still makes the first voice the agent, which made an agent and a caller of two women
    chatting about where they live (pyannote's sample call: "The agent, Diane, informed the caller ..."). Who said
    what is still named by the roles stage's roles (`speaker_names`, quotes), as the recording page names them."""
    roles = dict(roles or {})
    agents = {label for label, role in roles.items() if role == "agent"}
    said = " ".join(s.text for s in segments if s.speaker in agents)
    return roles if agents and phrase_score(said)[0] > 0 else {label: "unknown" for label in roles}


def brief_schema(language: str | None, agent: bool) -> dict:
    """The answer's JSON schema: one sentence a slot. The grammar caps the length; the descriptions (the prompt
    shows them) are where the embedded 1.5B model heeds the language: asked in the instruction alone, it writes
    English."""
    where = f"in {language_name(language)}" if language else "in the language of the transcript"
    slots = SERVICE_SLOTS if agent else PEER_SLOTS
    properties = {name: {"type": "string", "minLength": 1, "maxLength": SLOT_MAX_CHARS,
                         "description": f"one sentence {where}: {what}"} for name, what in slots.items()}
    return {"type": "object", "properties": properties, "required": list(slots), "additionalProperties": False}


@dataclass(frozen=True)
class SummaryResult:
    text: str
    language: str | None
    model: ModelUsed
    # "model": as written; "repaired": unsupported sentences replaced by what was said; "trimmed": removed (no
    # embedder to find what was said); "extractive": the call's key sentences (none of the model's was left).
    method: str = "model"
    removed: tuple[Support, ...] = ()  # the model's sentences the transcript does not support

    @property
    def note(self) -> str:
        """What happened, for `stages`."""
        count = len(self.removed)
        unsupported = f"{count} sentence(s) the transcript does not support"
        return {"model": "", "repaired": f"{unsupported} replaced by what was said",
                "trimmed": f"{unsupported} removed",
                "extractive": f"{unsupported} removed; none was left: the call's key sentences instead"}[self.method]


def language_name(code: str | None) -> str | None:
    """"de-AT" -> "German"; an unknown code is passed through as is; None stays None."""
    if not code:
        return None
    return LANGUAGE_NAMES.get(code.split("-")[0].split("_")[0].lower(), code)


def transcript_budget(llm: LanguageModel) -> int:
    """Characters of transcript a prompt may hold on this model, the same for every stage that shares it."""
    tokens = getattr(llm, "context_tokens", DEFAULT_CONTEXT_TOKENS) - RESERVE_TOKENS
    return max(tokens, 256) * CHARS_PER_TOKEN


def speaker_names(speakers: Sequence[str], roles: Mapping[str, str] | None) -> dict[str, str]:
    """How the prompt names each speaker label: its role when known ("Agent"; "Customer 1", "Customer 2" when two
    hold it), else the label itself. A role is 1 token where "speaker-1 (agent)" was 7, on every line."""
    roles = roles or {}
    holders: dict[str, list[str]] = {}
    for speaker in dict.fromkeys(speakers):
        if roles.get(speaker) in ("agent", "customer"):
            holders.setdefault(roles[speaker], []).append(speaker)
    names = {speaker: speaker for speaker in speakers}
    for role, who in holders.items():
        for n, speaker in enumerate(who, 1):
            names[speaker] = role.capitalize() + (f" {n}" if len(who) > 1 else "")
    return names


def _lines(turns: Sequence[Turn | None], roles: Mapping[str, str] | None) -> list[str]:
    names = speaker_names([t.speaker for t in turns if t is not None], roles)
    return [f"{names[t.speaker]}: {t.text}" if t is not None else "[...]" for t in turns]


def transcript_prompt(
    segments: Sequence[TranscriptSegment], max_chars: int | None = None, roles: Mapping[str, str] | None = None
) -> str:
    """The shared prefix: the transcript, one line per turn; cut in the middle past `max_chars`.

    `roles` (speaker label -> agent/customer/unknown) names the speakers by their known roles ("Agent: ...",
    `speaker_names`). Without them the 1.5B model often takes the agent who says her name for the caller; with
    them it did not.
    Consecutive segments of one speaker (a turn cut at its pauses) are one line: fewer tokens to evaluate.
    """
    lines = _lines(turns_of(segments), roles)
    head = "Transcript of a phone call, one line per turn (speaker: words):\n"
    body = "\n".join(lines)
    if max_chars is not None and len(body) > max_chars:
        body = _cut_middle(lines, max_chars)
    return f"{head}{body}\n[end of transcript]\n"


def _cut_middle(lines: list[str], max_chars: int) -> str:
    """Whole lines from the start and from the end, half the budget each, and a line for the gap."""
    half = max_chars // 2
    start, used = 0, 0
    while start < len(lines) and used + len(lines[start]) + 1 <= half:
        used += len(lines[start]) + 1
        start += 1
    end, used = len(lines), 0
    while end > start and used + len(lines[end - 1]) + 1 <= half:
        used += len(lines[end - 1]) + 1
        end -= 1
    gap = f"[... {end - start} turns in the middle of the call are left out: the call is too long to read whole ...]"
    return "\n".join([*lines[:start], gap, *lines[end:]])


def summary_prompt(segments: Sequence[TranscriptSegment], llm: LanguageModel, roles: Mapping[str, str] | None,
                   embedder: Any | None = None) -> tuple[str, list[Turn], bool]:
    """What the summary reads, the turns in it, and whether turns are left out: the shared transcript prefix when
    the call fits salience.READ_CHARS, else its digest, statements from each of its parts ("[...]" where statements
    are left out; `embedder`: the text model that chooses them, see salience.salient_turns)."""
    read = salient_turns(segments, embedder)
    if None not in read:
        return transcript_prompt(segments, transcript_budget(llm), roles), turns_of(segments), False
    head = "Parts of the transcript of a phone call, one line per turn (speaker: words); [...]: turns left out:\n"
    text = f"{head}" + "\n".join(_lines(read, roles)) + "\n[end of transcript]\n"
    return text, [t for t in read if t is not None], True


def _instruction(language: str | None, agent: bool, excerpt: bool, labelled: bool) -> str:
    """`labelled`: the transcript names speakers Agent or Customer (their roles, as the page shows them)."""
    name = language_name(language) or "the language of the transcript"
    parts = [f"Write a brief of the call above in {name}, one short sentence for each part of the answer.",
             "State only facts from the transcript; add no names, numbers, dates or details it does not contain. "
             "Leave out greetings and goodbyes."]
    if not agent:
        parts.append("Agent and Customer only tell the voices apart: nothing said shows a service call. Name the "
                     "speakers as they name themselves." if labelled else
                     "Nobody in it is an agent or a customer: name the speakers as they name themselves.")
    if excerpt:
        parts.append("Only parts of a long call are shown; write about what is there.")
    return "\n".join(parts)


# Languages that capitalise every noun: a capitalised word is no sign of a name there.
_NOUNS_CAPITALISED = {"de", "lb"}


def _whole_sentence(text: str) -> str:
    """The first sentence of a slot, ended with a full stop where the model left it open; none when the length cap
    cut it off before its end, or when it is too short to say anything ("The speakers.")."""
    text = " ".join(text.split())
    ends = sentence_ends(text)
    sentence = text[: ends[0]].strip() if ends else f"{text.rstrip(',;:')}." if len(text) < SLOT_MAX_CHARS else ""
    return sentence if len(tokens(sentence)) >= MIN_WORDS else ""


def distinct(sentences: Iterable[str]) -> list[str]:
    """The sentences without those that mostly say again what an earlier one said: at least REPEAT_SHARE of their
    words (stems) are in it. The 1.5B model fills slots it has nothing for with the first one's words again ("Maria
    is calling to report a double charge ..." three times over)."""
    kept: list[tuple[str, set[str]]] = []
    for sentence in sentences:
        words = {stem(word) for word in tokens(sentence)}
        if words and not any(len(words & earlier) >= REPEAT_SHARE * len(words) for _, earlier in kept):
            kept.append((sentence, words))
    return [sentence for sentence, _ in kept]


_COURTESIES = ("thank you for calling", "thanks for calling", "hello", "goodbye", "bye", "anything else",
               "have a nice day", "have a great day", "that is all", "that's all", "please hold", "bear with me",
               "no problem", "you're welcome")


def courtesy(sentence: str) -> bool:
    """Whether the sentence greets, takes leave or offers more help (English)."""
    words = tokens(sentence)
    return any(says(words, phrase) for phrase in _COURTESIES)


class _Remembered:
    """The text embedder, each text embedded once for the call: a long call's digest embeds its statements, and the
    faithfulness check, which compares the summary with the same sentences, reads them back."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.vectors: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = [str(t) for t in texts]
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            self.vectors.update(zip(missing, np.asarray(self.embedder.embed(missing), dtype=np.float32), strict=True))
        if not texts:
            return np.asarray(self.embedder.embed([]), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])


class _Quotes:
    """What was said, for repairing a sentence: the sentences of the turns read (at least KEY_MIN_WORDS words, else
    all), each quoted once at most, the one closest in meaning to the unsupported sentence first; each with the part
    of the call it was said in (salience.PARTS), for `parts_untold`. A sentence said only with a word the recogniser
    doubted (evidence.Doubts, of `segments`: the call's) is never quoted; it still counts as said for what the
    summary tells."""

    def __init__(self, turns: Sequence[Turn], embedder: Any, roles: Mapping[str, str] | None,
                 segments: Sequence[TranscriptSegment] = ()) -> None:
        # the part of a long call each was said in; None: read as the call's closing (how it ends, not what its
        # last part is about: "Talk to you next Monday.")
        said = [(t.speaker, m.group().strip(), None if t.closing else t.part) for t in turns
                for m in SENTENCE.finditer(t.text) if tokens(m.group())]
        long = [(who, text, part) for who, text, part in said if len(tokens(text)) >= KEY_MIN_WORDS]
        # a question or a courtesy states nothing ("Could you give me your account number please?", "Thank you for
        # calling ..."): quoted only when nothing else is
        stated = [(who, text, part) for who, text, part in long if not text.endswith("?") and not courtesy(text)]
        first: dict[tuple[str, str], int | None] = {}
        for who, text, part in stated or long or said:
            first.setdefault((who, text), part)
        self.said = [(who, text, part) for (who, text), part in first.items()]
        self.embedder, self.roles = embedder, roles
        self.used: set[int] = set()
        doubts = Doubts(segments)
        self.doubted = {i for i, (who, text, _) in enumerate(self.said) if doubts.only_doubtful(text, who)}
        self._vectors: np.ndarray | None = None

    def _embedded(self) -> np.ndarray:
        if self._vectors is None:
            self._vectors = np.asarray(self.embedder.embed([text for _, text, _ in self.said]), dtype=np.float32)
        return self._vectors

    def _free(self, i: int) -> bool:
        """Whether the i-th sentence may be quoted: not quoted yet, and its words not doubted."""
        return i not in self.used and i not in self.doubted

    def _quote(self, i: int) -> str:
        self.used.add(i)
        who, text, _ = self.said[i]
        return f'{speaker_name(who, self.roles)} said: "{text}"' + ("" if text[-1] in ".!?" else ".")

    def _news(self, summary: Sequence[str]) -> tuple[np.ndarray, list[int]]:
        """For each sentence said: its closeness in meaning to the summary's closest sentence, and how many of its
        content words (stems) the summary lacks."""
        told = {stem(w) for sentence in summary for w in tokens(sentence)}
        closest = ((self._embedded() @ np.asarray(self.embedder.embed(list(summary)), dtype=np.float32).T).max(axis=1)
                   if summary else np.zeros(len(self.said), dtype=np.float32))
        return closest, [len({stem(w) for w in content_words(text)} - told) for _, text, _ in self.said]

    def untold(self, summary: Sequence[str], count: int) -> list[str]:
        """Up to `count` quotes of what was said that the summary's sentences do not say yet: none of them is
        NOVEL_MAX_SIMILARITY close in meaning, and at least NOVEL_MIN_WORDS of its content words are new to
        them; the most new words first, in the order said."""
        if not self.said or not summary or count <= 0:
            return []
        closest, news = self._news(summary)
        fresh = [i for i in range(len(self.said))
                 if self._free(i) and closest[i] < NOVEL_MAX_SIMILARITY and news[i] >= NOVEL_MIN_WORDS]
        return [self._quote(i) for i in sorted(sorted(fresh, key=lambda i: -news[i])[:count])]

    def parts_untold(self, summary: Sequence[str]) -> list[str]:
        """A quote for each part of a long call that the summary says nothing of: it names none of the part's own
        words (content words said in that part and no other: "moving" tells the part about the move, "new" tells
        none) and none of the part's statements is NOVEL_MAX_SIMILARITY close to a sentence of it (the call's
        closing aside). The quote is the part's statement of at least NOVEL_MIN_WORDS content words with the most
        of the part's own words (a part by time can begin with the end of the subject before it), then the most
        words new to the summary, the first said of those; the quotes in the order said. The 1.5B model's brief of an
        hour of four subjects named two of them. `summary`: the model's sentences kept (a repair quote, the closest to
        a sentence that was wrong, tells no part: "Talk to you next Monday.")."""
        if not self.said:
            return []
        closest, news = self._news(summary)
        told = {stem(w) for sentence in summary for w in tokens(sentence)}
        words = [{stem(w) for w in content_words(text)} for _, text, _ in self.said]
        said_in: dict[int | None, set[str]] = {}  # the closing's words (None) are no part's own
        for w, (_, _, part) in zip(words, self.said, strict=True):
            said_in.setdefault(part, set()).update(w)
        picks = []
        for part in sorted(p for p in said_in if p is not None):
            own = said_in[part].difference(*(w for p, w in said_in.items() if p != part))
            mine = [i for i, (_, _, p) in enumerate(self.said) if p == part]
            if own & told or any(closest[i] >= NOVEL_MAX_SIMILARITY for i in mine):
                continue
            fresh = [i for i in mine if self._free(i) and len(words[i]) >= NOVEL_MIN_WORDS]
            if fresh:
                picks.append(max(fresh, key=lambda i: (len(words[i] & own), news[i])))
        return [self._quote(i) for i in sorted(picks)]

    def closest(self, sentence: str) -> str | None:
        if not self.said:
            return None
        similarity = self._embedded() @ np.asarray(self.embedder.embed([claim_text(sentence)]), dtype=np.float32)[0]
        for i in np.argsort(-similarity, kind="stable"):
            if self._free(int(i)):
                return self._quote(int(i))
        return None


def judged(checks: Sequence[Support], llm: LanguageModel, prefix: str, threshold: float) -> list[Support]:
    """`checks`, with each sentence they pass (a quote aside: said word for word) judged claim by claim by the
    language model after `prefix`, the transcript the summary was written from, which its cache still holds
    (entailment.py); a sentence with a claim it finds not stated is unsupported. A judge that fails leaves the checks
    as they were (logged): the similarity checks still hold."""
    asked = [i for i, check in enumerate(checks) if check.supported(threshold) and not check.quoted]
    claims = [claims_of(checks[i].sentence) for i in asked]
    out = list(checks)
    try:
        verdicts = entailed(llm, prefix, [claim for found in claims for claim in found])
    except LanguageModelError:
        log.warning("summary_claims_not_judged", sentences=len(asked))
        return out
    at = 0
    for i, found in zip(asked, claims, strict=True):
        unstated = tuple(claim for claim, stated in zip(found, verdicts[at:at + len(found)], strict=True)
                         if not stated)
        at += len(found)
        if unstated:
            out[i] = replace(checks[i], unstated=unstated)
    return out


def summarize(
    segments: Sequence[TranscriptSegment], language: str | None, llm: LanguageModel,
    roles: Mapping[str, str] | None = None, embedder: Any | None = None, judge: bool = True,
) -> SummaryResult:
    """A summary of the call's brief in `language` (ISO 639-1, a regional tag is cut; None: the transcript's).

    `roles`: speaker label -> agent/customer/unknown, the results' (the roles stage's): the transcript it reads and
    the quotes it adds name the speakers by them, as the recording page does ("Agent", never "speaker-1" for the
    agent). The model's own sentences may name a role only where the agent sounds like one (`named_roles`).
    `embedder`: the text embedder that checks each sentence's meaning against the transcript and finds what was said
    in place of an unsupported one (English only: give it when the summary and the transcript are both English);
    None: names and numbers only, unsupported sentences removed.
    `judge`: the language model also reads each sentence those checks pass, claim by claim (`judged`).

    A call without words has nothing to summarise: the text is empty and the model is not asked.
    Raises LanguageModelError when the model gives no usable answer.
    """
    code = language.split("-")[0].lower() if language else None
    if not any(s.text.strip() for s in segments):
        return SummaryResult(text="", language=code, model=llm.info)
    roles = dict(roles or {})
    named = named_roles(segments, roles)
    agent = has_agent(named)
    embedder = _Remembered(embedder) if embedder is not None else None
    prompt, read, excerpt = summary_prompt(segments, llm, roles, embedder)
    checker = SupportChecker(segments, embedder, names=code not in _NOUNS_CAPITALISED, roles=named)
    labelled = any(role in ("agent", "customer") for role in roles.values())
    answer = llm.generate_json(prompt + "\n" + _instruction(code, agent, excerpt, labelled),
                               brief_schema(code, agent), max_tokens=BRIEF_MAX_TOKENS)
    sentences = distinct(filter(None, (_whole_sentence(str(v)) for v in answer.values())))
    quotes = _Quotes(read, embedder, roles, segments) if embedder is not None else None
    kept: list[str] = []
    told: list[str] = []  # the model's sentences kept: what a part is told by (a repair quote is close to a wrong one)
    removed: list[Support] = []
    checks = checker.check(sentences)
    if judge:
        checks = judged(checks, llm, prompt, checker.threshold)
    for check in checks:
        if check.supported(checker.threshold):
            kept.append(check.sentence)
            told.append(check.sentence)
            continue
        removed.append(check)
        quote = quotes.closest(check.sentence) if quotes else None
        if quote:
            kept.append(quote)
    if quotes is not None:
        # a long call: each part the brief says nothing of quoted first, then what else it left out
        parts = quotes.parts_untold(told) if excerpt else []
        kept += parts
        kept += quotes.untold(kept, UNTOLD_QUOTES - len(parts))
    if not removed:
        return SummaryResult(text=" ".join(kept), language=code, model=llm.info)
    # counts only: the sentences are the model's words about the call (the result keeps them, the log never)
    log.info("summary_sentences_unsupported", unsupported=len(removed), sentences=len(sentences),
             method="repaired" if kept and quotes else "trimmed" if kept else "extractive")
    if kept:
        return SummaryResult(" ".join(kept), code, llm.info, "repaired" if quotes else "trimmed", tuple(removed))
    return SummaryResult(extractive_summary(segments, embedder, roles), code, llm.info, "extractive", tuple(removed))


__all__ = ["SummaryResult", "summarize", "transcript_prompt", "unsupported_details"]
