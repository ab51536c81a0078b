"""The summary: a short factual summary of the call, written by the language model from the transcript.

The prompt is the transcript first (`transcript_prompt`: one line per turn, "speaker: text"), then the
instruction. Every stage that asks the model about the call starts its prompt with the same
`transcript_prompt(segments, transcript_budget(llm))`, so llama.cpp evaluates the transcript once and
the later prompts only their own instruction.

Length: the transcript is cut to what the model's context holds (`transcript_budget`, a conservative
3 characters per token with room kept for the instruction and the answer): the beginning and the end
are kept (who called and why, what was agreed), the middle is replaced by a line saying how many turns
were left out, and the instruction says so.

Invention: the answer is constrained to JSON with a length cap; numbers and capitalised names in the
summary that appear nowhere in the transcript are a sign of invention (`unsupported_details`). When
there are some, the model is asked once more, told which; what is still unsupported after that is
reported with the result (`SummaryResult.unsupported`) rather than hidden.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .language_model import DEFAULT_CONTEXT_TOKENS, LanguageModel
from .result import ModelUsed, TranscriptSegment

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 3  # conservative: English is about 4 characters a token, many other languages fewer
RESERVE_TOKENS = 1024  # the instruction and the answer of any stage that shares the transcript prefix
SUMMARY_MAX_CHARS = 700
SUMMARY_MAX_TOKENS = 320

LANGUAGE_NAMES = {
    "ar": "Arabic", "bg": "Bulgarian", "cs": "Czech", "da": "Danish", "de": "German", "el": "Greek",
    "en": "English", "es": "Spanish", "et": "Estonian", "fa": "Persian", "fi": "Finnish", "fr": "French",
    "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "id": "Indonesian", "it": "Italian",
    "ja": "Japanese", "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "ms": "Malay", "nl": "Dutch",
    "no": "Norwegian", "nb": "Norwegian", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian",
    "sk": "Slovak", "sl": "Slovenian", "sr": "Serbian", "sv": "Swedish", "th": "Thai", "tr": "Turkish",
    "uk": "Ukrainian", "vi": "Vietnamese", "zh": "Chinese",
}

MAX_SENTENCES = 4


def summary_schema(language: str | None) -> dict:
    """The answer's JSON schema. The grammar caps the length; the description (the prompt shows the schema)
    is where the embedded 1.5B model heeds the language: asked in the instruction alone, it writes English."""
    where = f"written in {language_name(language)}" if language else "written in the language of the transcript"
    summary = {"type": "string", "minLength": 1, "maxLength": SUMMARY_MAX_CHARS,
               "description": f"A factual summary of the call in 2 to {MAX_SENTENCES} sentences, {where}"}
    return {"type": "object", "properties": {"summary": summary}, "required": ["summary"], "additionalProperties": False}


@dataclass(frozen=True)
class SummaryResult:
    text: str
    language: str | None
    model: ModelUsed
    # Numbers or names in the text that the transcript does not contain (a sign of invention); normally empty.
    unsupported: tuple[str, ...] = ()


def language_name(code: str | None) -> str | None:
    """"de-AT" -> "German"; an unknown code is passed through as is; None stays None."""
    if not code:
        return None
    return LANGUAGE_NAMES.get(code.split("-")[0].split("_")[0].lower(), code)


def transcript_budget(llm: LanguageModel) -> int:
    """Characters of transcript a prompt may hold on this model, the same for every stage that shares it."""
    tokens = getattr(llm, "context_tokens", DEFAULT_CONTEXT_TOKENS) - RESERVE_TOKENS
    return max(tokens, 256) * CHARS_PER_TOKEN


def _label(speaker: str, roles: Mapping[str, str] | None) -> str:
    role = (roles or {}).get(speaker)
    return f"{speaker} ({role})" if role in ("agent", "customer") else speaker


def transcript_prompt(
    segments: Sequence[TranscriptSegment], max_chars: int | None = None, roles: Mapping[str, str] | None = None
) -> str:
    """The shared prefix: the transcript, one line per turn; cut in the middle past `max_chars`.

    `roles` (speaker label -> agent/customer/unknown) marks the known roles: "speaker-1 (agent): ...". Without
    them the 1.5B model often takes the agent who says her name for the caller; with them it did not.
    """
    lines = [f"{_label(s.speaker, roles)}: {' '.join(s.text.split())}" for s in segments if s.text.strip()]
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


def _instruction(language: str | None, cut: bool, unsupported: Sequence[str] = ()) -> str:
    # Wording chosen on written calls: asked for "the caller" and "the agent", or told that a label is not a
    # role, the 1.5B model mixed up who is who more often than with this.
    name = language_name(language) or "the language of the transcript"
    parts = [
        f"Summarise the call above in 2 to {MAX_SENTENCES} sentences, in {name}: why the caller called, "
        "what was done, and what was agreed or left open.",
        "State only facts from the transcript; add no names, numbers, dates or details it does not contain. "
        "Leave out greetings and goodbyes.",
    ]
    if cut:
        parts.append("Part of the middle of the call is left out; summarise what is there.")
    if unsupported:
        parts.append(
            f"A previous summary mentioned {', '.join(unsupported)}, which the transcript does not contain: "
            "leave out anything the transcript does not say."
        )
    return "\n".join(parts)


# Languages that capitalise every noun: a capitalised word is no sign of a name there.
_NOUNS_CAPITALISED = {"de", "lb"}
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)]*(?=\s|$)|[。！？]")
# A full stop after these ends no sentence: titles, abbreviations, and 1-2 digit ordinals ("am 3. März").
_NOT_AN_END = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Dr|St|Nr|vs|etc|e\.g|i\.e|z\.B)|(?<![\d.,])\d{1,2})\.$")


def _whole_sentences(text: str, limit: int = MAX_SENTENCES) -> str:
    """At most `limit` sentences, and no sentence cut off by the length cap (when a whole one is left)."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text)
            if text[m.start()] != "." or not _NOT_AN_END.search(text[: m.start() + 1])]
    if not ends:
        return text
    return text[: ends[min(limit, len(ends)) - 1]].strip()


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


def unsupported_details(summary: str, transcript: str, names: bool = True) -> list[str]:
    """Numbers and capitalised names in `summary` that `transcript` does not contain, in order of appearance.

    A number is supported when the transcript has the same number (separators ignored) or, below 100, when
    the transcript spells it out in English ("twenty-five"). With `names`, a capitalised word inside a
    sentence is a name to check; it is supported when the transcript has the word in any case.
    """
    found: list[str] = []
    transcript_lower = transcript.lower()
    transcript_digits = {re.sub(r"\D", "", n) for n in _NUMBER.findall(transcript)}
    transcript_words = {w.lower() for w in _WORD.findall(transcript)}
    for number in _NUMBER.findall(summary):
        digits = re.sub(r"\D", "", number)
        if digits in transcript_digits:
            continue
        if len(digits) <= 2 and any(w in transcript_lower for w in _english_number_words(int(digits))):
            continue
        found.append(number)
    for sentence in re.split(r"(?<=[.!?])\s+", summary) if names else ():
        for match in list(_WORD.finditer(sentence))[1:]:  # the first word is capitalised anyway
            word = match.group()
            if word[0].isupper() and word not in _NOT_NAMES and word.lower() not in transcript_words:
                found.append(word)
    return list(dict.fromkeys(found))


def summarize(
    segments: Sequence[TranscriptSegment], language: str | None, llm: LanguageModel,
    roles: Mapping[str, str] | None = None,
) -> SummaryResult:
    """A 2-4 sentence summary in `language` (ISO 639-1, a regional tag is cut; None: the transcript's).

    `roles`: speaker label -> agent/customer/unknown where the roles stage knows them (see transcript_prompt).

    A call without words has nothing to summarise: the text is empty and the model is not asked.
    Raises LanguageModelError when the model gives no usable answer.
    """
    code = language.split("-")[0].lower() if language else None
    if not any(s.text.strip() for s in segments):
        return SummaryResult(text="", language=code, model=llm.info)
    budget = transcript_budget(llm)
    prefix = transcript_prompt(segments, budget, roles)
    full = transcript_prompt(segments, roles=roles)
    cut = len(prefix) < len(full)
    if cut:
        log.info("transcript of %d characters cut to %d for the summary", len(full), budget)

    def ask(unsupported: Sequence[str] = ()) -> tuple[str, list[str]]:
        answer = llm.generate_json(prefix + "\n" + _instruction(code, cut, unsupported), summary_schema(code),
                                   max_tokens=SUMMARY_MAX_TOKENS)
        text = _whole_sentences(" ".join(answer["summary"].split()))
        return text, unsupported_details(text, full, names=code not in _NOUNS_CAPITALISED)

    text, unsupported = ask()
    if unsupported:
        log.warning("summary mentions %s, absent from the transcript; asking again", unsupported)
        retry_text, retry_unsupported = ask(unsupported)
        if len(retry_unsupported) <= len(unsupported):
            text, unsupported = retry_text, retry_unsupported
    return SummaryResult(text=text, language=code, model=llm.info, unsupported=tuple(unsupported))
