"""The fields stage: values extracted from the call (callscope.resources.kinds.ExtractedField), typed, validated
and shown with the words they come from. A value that cannot be shown in the transcript is null, never guessed.

`extract_fields` takes phone, email, date and number values from what was said (spoken.py), choosing among several
mentions by the field's words; boolean, string and enum values come from the language model (all fields in one
request, `ask_model`) and are kept only when the transcript says them. A date is ISO 8601, anchored by
`reference_date`. The rules per type: docs/analysis.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import structlog

from callscope.analysis.models.language_model import LanguageModelError
from callscope.analysis.result import Evidence, ExtractedValue, TranscriptSegment
from callscope.analysis.stages.evidence import SENTENCE, excerpt, quote_in_transcript, token_spans, tokens, word_time
from callscope.analysis.stages.spoken import (
    Mention,
    date_mentions,
    digit_runs,
    email_mentions,
    number_mentions,
    phone_mentions,
    spoken_digits,
)
from callscope.analysis.stages.summary import transcript_budget, transcript_prompt

if TYPE_CHECKING:
    from callscope.resources.kinds import ExtractedField

log = structlog.get_logger()

MAX_EVIDENCE = 3
MAX_CHOICES = 10
PROPOSAL_TOKENS = 160  # the answer's cap for a proposed value (a boolean's with its quote)
CHOICE_TOKENS = 30  # for a choice among the values found

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


def _relevance(mention: Mention, words: set[str], previous: Mapping[int, TranscriptSegment]) -> float:
    """How close the field's words are to a mention: 1 for each in its sentence, 0.5 in the rest of its
    segment, 0.25 in the segment before it (the question it answers)."""
    def stems(text: str) -> set[str]:
        return {_stem(w) for w in tokens(text)} & words

    text = mention.segment.text
    sentence = next((m.group() for m in SENTENCE.finditer(text) if m.start() <= mention.start < m.end()), text)
    own, segment = stems(sentence), stems(text)
    before = stems(previous[id(mention.segment)].text) if id(mention.segment) in previous else set()
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
    # each segment's previous one, looked up (not searched for: an hour's call has thousands, and as many mentions)
    previous = {id(s): p for p, s in pairwise(segments)}
    relevance = {v: max(_relevance(m, words, previous) for m in by_value[v]) for v in by_value}
    ranked = sorted(by_value, key=lambda v: (-relevance[v], -len(by_value[v])))
    top = [relevance[v] for v in ranked[:2]]
    if field.type in ("number", "date") and top[0] == 0:
        return None, [], ranked[:MAX_CHOICES]
    if len(ranked) == 1 or top[0] > top[1]:
        return ranked[0], by_value[ranked[0]], []
    return None, [], ranked[:MAX_CHOICES]


# --- the language model -------------------------------------------------------------------------------


def proposal_schema(field: ExtractedField) -> dict:
    """found, value and, for a boolean, the quote that states it: a string or enum value is its own evidence (it must
    be said), so its quote would be tokens generated for nothing (about 15, 1 s on 2 CPUs)."""
    value: dict = {"boolean": {"type": "boolean"}, "enum": {"type": "string", "enum": list(field.values)}}.get(
        field.type, {"type": "string", "maxLength": 200})
    properties = {"found": {"type": "boolean"}, "value": value}
    if field.type == "boolean":
        properties["quote"] = {"type": "string", "maxLength": 300}
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


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
        # the segment's letters and digits, and the span of the word each is from
        chars = ""
        owners: list[tuple[int, int]] = []
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


def _kept(field: ExtractedField, answer: Mapping[str, Any], segments: Sequence[TranscriptSegment]
          ) -> tuple[Any, list[Evidence]]:
    """The model's proposed value and the evidence for it, or (None, []) when it is not kept. A string or enum value
    must be said in the transcript, and its evidence is where it is said; a boolean has no words of its own, so the
    words the model quotes must be in the transcript."""
    if not answer.get("found"):
        return None, []
    value = answer.get("value")
    if field.type == "boolean":
        located = quote_in_transcript(str(answer.get("quote", "")), segments)
        if not isinstance(value, bool) or located is None:
            log.info("field_value_dropped", field=field.name, reason="the model's quote is not in the transcript")
            return None, []
        segment, at = located
        quote, _ = excerpt(segment, at, len(tokens(str(answer["quote"]))))
        return value, [Evidence(dialogue_id=segment.id, start_ms=word_time(segment, at), quote=quote)]
    value = " ".join(str(value or "").split())
    if field.type == "enum":
        value = next((v for v in field.values if v.lower() == value.lower()), None)
    mentions = where_said(value, segments) if value else []
    if not mentions:
        log.info("field_value_dropped", field=field.name, reason="the model's value is not said in the transcript")
        return None, []
    return value, [m.evidence() for m in mentions[:MAX_EVIDENCE]]


@dataclass(frozen=True)
class _Question:
    """What the model is asked about one field: to propose its value, or to choose among the values the rules
    found (`choices`)."""

    field: ExtractedField
    choices: tuple[Any, ...] = ()

    @property
    def shown(self) -> list[str]:
        return [_display(c) for c in self.choices]

    def schema(self) -> dict:
        return _choice_schema(self.shown) if self.choices else proposal_schema(self.field)

    def line(self, key: str) -> str:
        if self.choices:
            return (f'{key}: field "{self.field.name}": {self.field.description} The call mentions these '
                    f"{self.field.type} values: {', '.join(self.shown)}. Which one is this field? none when none is.\n")
        kind = {"boolean": "true or false", "enum": "one of " + ", ".join(self.field.values)}.get(self.field.type,
                                                                                                "text")
        return f'{key}: field "{self.field.name}" ({kind}): {self.field.description}\n'


def ask_model(questions: Sequence[_Question], llm: Any, prefix: str) -> list[Mapping[str, Any]]:
    """Every question in one request (the transcript prefix and the chat template evaluated once, one answer); the
    answers in the order of the questions."""
    keys = [f"field_{i}" for i in range(1, len(questions) + 1)]
    schema = {"type": "object", "properties": {k: q.schema() for k, q in zip(keys, questions, strict=True)},
              "required": keys, "additionalProperties": False}
    prompt = prefix + "".join(q.line(k) for k, q in zip(keys, questions, strict=True)) + (
        "For each field to find: if the call states it, set found to true and value to it (for text, in the words of "
        "the call; for true or false, quote the words of the transcript that state it, copied exactly); "
        "if it does not, set found to false. For a field with values mentioned, value is one of them.")
    budget = sum(CHOICE_TOKENS if q.choices else PROPOSAL_TOKENS for q in questions)
    answer = llm.generate_json(prompt, schema, max_tokens=budget)
    return [answer.get(k, {}) for k in keys]


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


def _by_rules(field: ExtractedField, segments: Sequence[TranscriptSegment], llm: Any | None, region: str,
              reference: date | None) -> tuple[ExtractedValue | None, _Question | None, list[Mention]]:
    """The field's result when the rules decide it; else the question for the model (None without one: the value
    is null) and the mentions its answer may pick from."""
    if field.type in ("string", "boolean") or (field.type == "enum" and llm is not None):
        # the model reads what rules cannot; without one these stay null (an enum falls to its mentions)
        return (None, _Question(field), []) if llm is not None else (_result(field, None, []), None, [])
    mentions = mentions_of(field, segments, region, reference)
    value, chosen, choices = choose(field, mentions, segments)
    if value is None and choices and llm is not None:
        return None, _Question(field, tuple(choices)), mentions
    return _result(field, value, [m.evidence() for m in chosen]), None, []


def _answered(question: _Question, answer: Mapping[str, Any], mentions: Sequence[Mention],
              segments: Sequence[TranscriptSegment]) -> ExtractedValue:
    if not question.choices:
        return _result(question.field, *_kept(question.field, answer, segments))
    picked = answer.get("value")
    value = question.choices[question.shown.index(picked)] if picked in question.shown else None
    return _result(question.field, value, [m.evidence() for m in mentions if m.value == value])


def extract_fields(fields: Sequence[ExtractedField], segments: Sequence[TranscriptSegment], llm: Any | None = None, *,
                   region: str = "US", reference_date: date | None = None,
                   roles: Mapping[str, str] | None = None) -> list[ExtractedValue]:
    """Each field's value and evidence, in the order of fields (see the module docstring). region: where phone
    numbers without a country code are from; reference_date: the day of the call, which anchors dates without a
    year and relative ones; roles: speaker label -> role, named in the transcript prefix as the summary and goals
    name them (one shared prefix). The fields the model is asked about are asked in one request; a model that fails
    leaves them null."""
    if not any(tokens(s.text) for s in segments):
        return [_result(f, None, []) for f in fields]
    decided = [_by_rules(f, segments, llm, region, reference_date) for f in fields]
    asked = [(i, question, mentions) for i, (_, question, mentions) in enumerate(decided) if question is not None]
    results = [result for result, _, _ in decided]
    if asked:
        try:
            answers = ask_model([q for _, q, _ in asked], llm,
                                transcript_prompt(segments, transcript_budget(llm), roles))
        except LanguageModelError as exc:
            log.warning("fields_model_failed", error=str(exc), fields=[q.field.name for _, q, _ in asked])
            answers = [{"found": False}] * len(asked)
        for (i, question, mentions), answer in zip(asked, answers, strict=True):
            results[i] = _answered(question, answer, mentions, segments)
    return [r if r is not None else _result(f, None, []) for r, f in zip(results, fields, strict=True)]


__all__ = ["extract_fields", "supported"]
