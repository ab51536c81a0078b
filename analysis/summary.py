"""The summary: a short factual summary of the call, written by the language model from the transcript.

The prompt is the transcript first (`transcript_prompt`: one line per turn, "speaker: text"), then the
instruction. Every stage that asks the model about the call (goals, fields, summary) starts its prompt with
the same `transcript_prompt(segments, transcript_budget(llm), roles)`, so llama.cpp evaluates the transcript
once and the later prompts only their own instruction (before the goals and fields also marked the roles, each
stage evaluated the whole transcript again). Speakers are named by their roles ("Agent:", `speaker_names`).

Length: the transcript is cut to what the model's context holds (`transcript_budget`, a conservative
3 characters per token with room kept for the instruction and the answer): the beginning and the end
are kept (who called and why, what was agreed), the middle is replaced by a line saying how many turns
were left out, and the instruction says so.

Faithfulness (faithfulness.py): every sentence of the model's summary is checked against the transcript
(its names and numbers are in it, and, with the text embedder, some stretch of the call is close enough in
meaning). Unsupported sentences never reach the user: they are removed; when none is left the summary is the
call's own key sentences (`extractive_summary`). The model is not asked again: on the benchmark calls a second
answer, told which sentences the transcript does not say, cost as much as the first (13 s on one core for a
30-second call), and on the synthetic support call it was again mostly unsupported. `SummaryResult.method` says
which happened and `removed` holds what was taken out, for the pipeline's `stages` note.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .faithfulness import Support, SupportChecker, extractive_summary, sentence_ends, unsupported_details
from .language_model import DEFAULT_CONTEXT_TOKENS, LanguageModel
from .result import ModelUsed, TranscriptSegment

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 3  # conservative: English is about 4 characters a token, many other languages fewer
RESERVE_TOKENS = 1024  # the instruction and the answer of any stage that shares the transcript prefix
# Four sentences of about 110 characters. A generated token costs about 0.1 s on one core: allowed 700 characters,
# the model wrote up to 145 tokens for a 1-minute call. A sentence the cap cuts off is dropped (_whole_sentences).
SUMMARY_MAX_CHARS = 450
SUMMARY_MAX_TOKENS = 200

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
    # "model": as written; "trimmed": unsupported sentences removed; "extractive": the call's key sentences (the
    # transcript supports none of the model's sentences).
    method: str = "model"
    removed: tuple[Support, ...] = ()  # the model's sentences the transcript does not support

    @property
    def note(self) -> str:
        """What happened, for `stages`."""
        count = len(self.removed)
        removed = f"{count} sentence(s) the transcript does not support removed"
        return {"model": "", "trimmed": removed,
                "extractive": f"{removed}; none was left: the call's key sentences instead"}[self.method]


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


def transcript_prompt(
    segments: Sequence[TranscriptSegment], max_chars: int | None = None, roles: Mapping[str, str] | None = None
) -> str:
    """The shared prefix: the transcript, one line per turn; cut in the middle past `max_chars`.

    `roles` (speaker label -> agent/customer/unknown) names the speakers by their known roles ("Agent: ...",
    `speaker_names`). Without them the 1.5B model often takes the agent who says her name for the caller; with
    them it did not.
    Consecutive segments of one speaker (a turn cut at its pauses) are one line: fewer tokens to evaluate.
    """
    turns: list[tuple[str, str]] = []
    for s in segments:
        text = " ".join(s.text.split())
        if text and turns and turns[-1][0] == s.speaker:
            turns[-1] = (s.speaker, f"{turns[-1][1]} {text}")
        elif text:
            turns.append((s.speaker, text))
    names = speaker_names([speaker for speaker, _ in turns], roles)
    lines = [f"{names[speaker]}: {text}" for speaker, text in turns]
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


def _instruction(language: str | None, cut: bool) -> str:
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
    return "\n".join(parts)


# Languages that capitalise every noun: a capitalised word is no sign of a name there.
_NOUNS_CAPITALISED = {"de", "lb"}


def _whole_sentences(text: str, limit: int = MAX_SENTENCES) -> str:
    """At most `limit` sentences, and no sentence cut off by the length cap (when a whole one is left)."""
    ends = sentence_ends(text)
    if not ends:
        return text
    return text[: ends[min(limit, len(ends)) - 1]].strip()


def summarize(
    segments: Sequence[TranscriptSegment], language: str | None, llm: LanguageModel,
    roles: Mapping[str, str] | None = None, embedder: Any | None = None,
) -> SummaryResult:
    """A 2-4 sentence summary in `language` (ISO 639-1, a regional tag is cut; None: the transcript's).

    `roles`: speaker label -> agent/customer/unknown where the roles stage knows them (see transcript_prompt).
    `embedder`: the text embedder that checks each sentence's meaning against the transcript (English only: give
    it when the summary and the transcript are both English); None: names and numbers only.

    A call without words has nothing to summarise: the text is empty and the model is not asked.
    Raises LanguageModelError when the model gives no usable answer.
    """
    code = language.split("-")[0].lower() if language else None
    if not any(s.text.strip() for s in segments):
        return SummaryResult(text="", language=code, model=llm.info)
    budget = transcript_budget(llm)
    prefix = transcript_prompt(segments, budget, roles)
    cut = len(prefix) < len(transcript_prompt(segments, roles=roles))
    if cut:
        log.info("transcript cut to %d characters for the summary", budget)
    checker = SupportChecker(segments, embedder, names=code not in _NOUNS_CAPITALISED)

    answer = llm.generate_json(prefix + "\n" + _instruction(code, cut), summary_schema(code),
                               max_tokens=SUMMARY_MAX_TOKENS)
    kept, removed = checker.supported_text(_whole_sentences(" ".join(answer["summary"].split())))
    if not removed:
        return SummaryResult(text=" ".join(kept), language=code, model=llm.info)
    log.warning("summary sentences not supported by the transcript: %s", [r.sentence for r in removed])
    if kept:
        return SummaryResult(" ".join(kept), code, llm.info, "trimmed", tuple(removed))
    return SummaryResult(extractive_summary(segments, embedder, roles), code, llm.info, "extractive", tuple(removed))


__all__ = ["SummaryResult", "summarize", "transcript_prompt", "unsupported_details"]
