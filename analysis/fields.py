"""The fields stage: values extracted from the call (callscope.resources.kinds.ExtractedField), typed, validated
and shown with the words they come from. A value that cannot be shown in the transcript is null, never guessed.

Per type:

* **phone**, **email**, **date**, **number**: the values said in the call (spoken.py converts spoken forms and
  validates each type); a date is given as ISO 8601 (YYYY-MM-DD), anchored by `reference_date` (the call's
  date) when it has no year or is relative.
* **boolean**, **string**: only from a language model (below); without one the value is null.
* **enum**: one of the field's values, case-insensitively, returned as declared; from a language model, or
  without one from the values said in the call (as below).

Which mention: phone, email, date and number are found by the rules of spoken.py; when a call has several
different ones, the one said in (or right after a question with) the words of the field's name and
description wins; when that does not single one out, a language model may choose among them (it cannot
add one); without a model the value is null.

The language model (when given) proposes boolean, string and enum values with a JSON schema, with the
transcript words that state the value. A string or enum value is kept only when it (or its spoken form) is
said in the transcript (`where_said`), and its evidence is where it is said: the small model often quotes
the wrong line. A boolean has no words of its own: it is kept only when the words the model quotes are in
the transcript (`evidence.quote_in_transcript`), and they are its evidence.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any

from .evidence import SENTENCE, excerpt, quote_in_transcript, token_spans, tokens, word_time
from .language_model import LanguageModelError
from .result import Evidence, ExtractedValue, TranscriptSegment
from .spoken import Mention, date_mentions, digit_runs, email_mentions, number_mentions, phone_mentions, spoken_digits
from .summary import transcript_budget, transcript_prompt

if TYPE_CHECKING:
    from callscope.resources.kinds import ExtractedField

log = logging.getLogger(__name__)

MAX_EVIDENCE = 3
MAX_CHOICES = 10

# Words of a field's name and description that say nothing about where its value is.
_STOP = set("""a an the of to in on at by for from with and or if is are was were be been it its this that these
those what which who whom whose when where why how any some as their there they them his her he she you your
our we us i me my mine not no yes do does did has have had will would can could should may might must
mentioned mention said say says given give gives stated state call caller customer customers agent operator
client person value number whether during conversation""".split())


# --- which mention ------------------------------------------------------------------------------------


def _stem(word: str) -> str:
    word = word[:-2] if word.endswith("'s") else word
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 4 else word


def field_words(field: ExtractedField) -> set[str]:
    """The words of a field's name and description that point at its value."""
    words = tokens(field.name.replace("_", " ")) + tokens(field.description)
    return {_stem(w) for w in words if w not in _STOP and not w.isdigit()}


def _relevance(mention: Mention, words: set[str], segments: Sequence[TranscriptSegment]) -> float:
    """How close the field's words are to a mention: 1 for each in its sentence, 0.5 in the rest of its
    segment, 0.25 in the segment before it (the question it answers)."""
    def stems(text: str) -> set[str]:
        return {_stem(w) for w in tokens(text)} & words

    text = mention.segment.text
    sentence = next((m.group() for m in SENTENCE.finditer(text) if m.start() <= mention.start < m.end()), text)
    own, segment = stems(sentence), stems(text)
    index = next((i for i, s in enumerate(segments) if s is mention.segment), 0)
    before = stems(segments[index - 1].text) if index else set()
    return len(own) + 0.5 * len(segment - own) + 0.25 * len(before - segment)


def choose(field: ExtractedField, mentions: Sequence[Mention], segments: Sequence[TranscriptSegment]
           ) -> tuple[Any, list[Mention], list[Any]]:
    """(value, its mentions, []) when the evidence singles out one value, else (None, [], the candidate values
    in order of relevance) for a model to choose from. A number or a date must also be said with (or right
    after) words of the field: calls are full of numbers and dates that are something else."""
    if not mentions:
        return None, [], []
    words = field_words(field)
    by_value: dict[Any, list[Mention]] = {}
    for m in mentions:
        by_value.setdefault(m.value, []).append(m)
    ranked = sorted(by_value, key=lambda v: (-max(_relevance(m, words, segments) for m in by_value[v]),
                                             -len(by_value[v])))
    top = [max(_relevance(m, words, segments) for m in by_value[v]) for v in ranked[:2]]
    if field.type in ("number", "date") and top[0] == 0:
        return None, [], ranked[:MAX_CHOICES]
    if len(ranked) == 1 or top[0] > top[1]:
        return ranked[0], by_value[ranked[0]], []
    return None, [], ranked[:MAX_CHOICES]


# --- the language model -------------------------------------------------------------------------------


def proposal_schema(field: ExtractedField) -> dict:
    value: dict = {"boolean": {"type": "boolean"}, "enum": {"type": "string", "enum": list(field.values)}}.get(
        field.type, {"type": "string", "maxLength": 200})
    return {"type": "object", "properties": {"found": {"type": "boolean"}, "value": value,
                                             "quote": {"type": "string", "maxLength": 300}},
            "required": ["found", "value", "quote"], "additionalProperties": False}


def _choice_schema(choices: Sequence[str]) -> dict:
    return {"type": "object", "properties": {"value": {"type": "string", "enum": [*choices, "none"]}},
            "required": ["value"], "additionalProperties": False}


def _display(value: Any) -> str:
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def where_said(value: str, segments: Sequence[TranscriptSegment]) -> list[Mention]:
    """Where a value is said in the transcript: its words in a row in one segment (word endings -s, -es, -ed,
    -ing aside), or, for a value of 4 or more letters and digits, those characters in a row once spaces and
    punctuation are left out ("A C M E" says "ACME"), in the text or with its spoken digits as digits
    ("five eight two one three" says "58213")."""
    wanted = [_stem(w) for w in tokens(value)]
    compact = re.sub(r"[\W_]+", "", spoken_digits(value).lower())
    out = []
    for segment in segments:
        spans = token_spans(segment.text)
        said = [_stem(w) for w, _, _ in spans]
        at = next((i for i in range(len(said) - len(wanted) + 1) if wanted and said[i:i + len(wanted)] == wanted), -1)
        if at >= 0:
            out.append(Mention(value, segment, spans[at][1], spans[at + len(wanted) - 1][2]))
            continue
        if len(compact) < 4:
            continue
        chars, owners = "", []  # the segment's letters and digits, and the span of the word each is from
        for w, start, end in spans:
            letters = re.sub(r"[\W_]+", "", w)
            chars, owners = chars + letters, owners + [(start, end)] * len(letters)
        found = chars.find(compact)
        if found >= 0:
            span = (owners[found][0], owners[found + len(compact) - 1][1])
        elif compact in re.sub(r"[\W_]+", "", spoken_digits(segment.text).lower()):
            run = next((r for r in digit_runs(segment.text) if r.digits and r.digits in compact), None)
            span = (run.start, run.end) if run else (spans[0][1], spans[-1][2])
        else:
            continue
        out.append(Mention(value, segment, *span))
    return out


def supported(value: str, segments: Sequence[TranscriptSegment]) -> bool:
    """Whether a value (or its spoken form) is said in the transcript (see where_said)."""
    return bool(where_said(value, segments))


def _propose(field: ExtractedField, segments: Sequence[TranscriptSegment], llm: Any,
             prefix: str) -> tuple[Any, list[Evidence]]:
    """The model's value and the evidence for it, or (None, []) when it is not kept. A string or enum value must be
    said in the transcript, and its evidence is where it is said (the small model often quotes the wrong line);
    a boolean has no words of its own, so the words the model quotes must be in the transcript."""
    kind = {"boolean": "true or false", "enum": "one of " + ", ".join(field.values)}.get(field.type, "text")
    prompt = prefix + (
        f'Field "{field.name}" ({kind}): {field.description}\n'
        "If the call states this, set found to true, value to it (for text, in the words of the call) and quote "
        "to the words of the transcript that state it, copied exactly. If the call does not state it, set found "
        "to false and quote to an empty string.")
    answer = llm.generate_json(prompt, proposal_schema(field), max_tokens=160)
    if not answer.get("found"):
        return None, []
    located = quote_in_transcript(str(answer.get("quote", "")), segments)
    value = answer.get("value")
    if field.type == "boolean":
        if not isinstance(value, bool) or located is None:
            log.info("field %s: the model's quote is not in the transcript; dropped", field.name)
            return None, []
        segment, at = located
        quote, _ = excerpt(segment, at, len(tokens(str(answer["quote"]))))
        return value, [Evidence(dialogue_id=segment.id, start_ms=word_time(segment, at), quote=quote)]
    value = " ".join(str(value or "").split())
    if field.type == "enum":
        value = next((v for v in field.values if v.lower() == value.lower()), None)
    mentions = where_said(value, segments) if value else []
    if not mentions:
        log.info("field %s: the model's value is not said in the transcript; dropped", field.name)
        return None, []
    quoted = located[0] if located else None
    mentions.sort(key=lambda m: m.segment is not quoted)  # where the model quoted it first, when it is there
    return value, [m.evidence() for m in mentions[:MAX_EVIDENCE]]


def _choose_with_model(field: ExtractedField, choices: Sequence[Any], llm: Any, prefix: str) -> Any:
    shown = [_display(c) for c in choices]
    prompt = prefix + (
        f'Field "{field.name}": {field.description}\n'
        f"The call mentions these {field.type} values: {', '.join(shown)}. Which one is this field? "
        "Answer none when none of them is.")
    answer = llm.generate_json(prompt, _choice_schema(shown), max_tokens=60)
    picked = answer.get("value")
    return choices[shown.index(picked)] if picked in shown else None


# --- the stage ------------------------------------------------------------------------------------------


def mentions_of(field: ExtractedField, segments: Sequence[TranscriptSegment], region: str,
                reference: date | None) -> list[Mention]:
    """Every value of the field's type that the rules find in the call."""
    if field.type == "phone":
        return [m for s in segments for m in phone_mentions(s, region)]
    if field.type == "email":
        return [m for s in segments for m in email_mentions(s)]
    if field.type == "date":
        return [m for s in segments for m in date_mentions(s, reference, region)]
    if field.type == "number":
        return [m for s in segments for m in number_mentions(s)]
    if field.type == "enum":  # each declared value said in the call
        found = []
        for value in field.values:
            wanted = [_stem(w) for w in tokens(value)]
            for s in segments:
                said = [_stem(w) for w in tokens(s.text)]
                spans = token_spans(s.text)
                for i in range(len(said) - len(wanted) + 1):
                    if wanted and said[i:i + len(wanted)] == wanted:
                        found.append(Mention(value, s, spans[i][1], spans[i + len(wanted) - 1][2]))
        return found
    return []


def _result(field: ExtractedField, value: Any, evidence: Sequence[Evidence]) -> ExtractedValue:
    if isinstance(value, date):
        value = value.isoformat()
    return ExtractedValue(name=field.name, type=field.type, value=value,
                          evidence=list(evidence[:MAX_EVIDENCE]) if value is not None else [])


def extract_field(field: ExtractedField, segments: Sequence[TranscriptSegment], llm: Any | None = None, *,
                  region: str = "US", reference_date: date | None = None,
                  prefix: str | None = None) -> ExtractedValue:
    """One field's value and its evidence (see the module docstring)."""
    if not any(tokens(s.text) for s in segments):
        return _result(field, None, [])
    if llm is not None and prefix is None:
        prefix = transcript_prompt(segments, transcript_budget(llm))
    try:
        if field.type in ("string", "boolean") or (field.type == "enum" and llm is not None):
            # the model reads what rules cannot; without one these stay null (an enum falls to its mentions)
            if llm is not None:
                return _result(field, *_propose(field, segments, llm, prefix or ""))
            return _result(field, None, [])
        mentions = mentions_of(field, segments, region, reference_date)
        value, chosen, choices = choose(field, mentions, segments)
        if value is None and choices and llm is not None:
            value = _choose_with_model(field, choices, llm, prefix or "")
            chosen = [m for m in mentions if m.value == value]
        return _result(field, value, [m.evidence() for m in chosen])
    except LanguageModelError as exc:
        log.warning("field %s: language model failed (%s); value left null", field.name, exc)
        return _result(field, None, [])


def extract_fields(fields: Sequence[ExtractedField], segments: Sequence[TranscriptSegment], llm: Any | None = None, *,
                   region: str = "US", reference_date: date | None = None,
                   roles: Mapping[str, str] | None = None) -> list[ExtractedValue]:
    """Each field's value and evidence, in the order of fields. region: where phone numbers without a country code
    are from; reference_date: the day of the call, which anchors dates without a year and relative ones; roles:
    speaker label -> role, marked in the transcript prefix as the summary and goals mark it (one shared prefix)."""
    prefix = None
    if llm is not None and fields:
        prefix = transcript_prompt(segments, transcript_budget(llm), roles)
    return [extract_field(f, segments, llm, region=region, reference_date=reference_date, prefix=prefix)
            for f in fields]


__all__ = ["extract_fields", "supported"]
