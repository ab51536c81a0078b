"""The fields stage: values extracted from the call (callscope.resources.kinds.ExtractedField), typed, validated
and shown with the words they come from. A value that cannot be shown in the transcript is null, never guessed.

`extract_fields` takes phone, email, date and number values from what was said (spoken.py), choosing among several
mentions by the field's words; boolean, string and enum values come from the language model (all fields in one
request, `ask_model`) and are kept only when the transcript says them. With the text model the request holds only
the spans of the call that can hold each field (`field_spans`), a bounded number of tokens per field whatever the
call's length, and a field no span is relevant to is not asked. A date is ISO 8601, anchored by `reference_date`.
The rules per type: docs/analysis.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np
import structlog

from callscope.analysis.models.language_model import LanguageModelError
from callscope.analysis.result import Evidence, ExtractedValue, TranscriptSegment
from callscope.analysis.stages.evidence import (
    DOUBTFUL_WORD_PROBABILITY,
    SENTENCE,
    Similarities,
    excerpt,
    query_text,
    quote_in_transcript,
    span_words,
    token_spans,
    tokens,
    word_time,
)
from callscope.analysis.stages.goal_examples import ACTS
from callscope.analysis.stages.salience import READ_CHARS, turns_of
from callscope.analysis.stages.spoken import (
    Mention,
    date_mentions,
    digit_runs,
    email_mentions,
    number_mentions,
    phone_mentions,
    spoken_digits,
)
from callscope.analysis.stages.summary import CHARS_PER_TOKEN, speaker_names, transcript_budget, transcript_prompt

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


# --- where a field can be said -----------------------------------------------------------------------------

FIELD_TOKENS = 256  # transcript tokens read per field asked (CALLSCOPE_LLM_FIELD_TOKENS)
SPAN_BEFORE, SPAN_AFTER = 1, 2  # segments read around a relevant one: the question before it, the answer after it
RELEVANCE_FLOOR = 0.35  # a segment less relevant than this holds no field's value; a field with none is not asked
LEXICAL_WEIGHT = 0.15  # added per word of the field said in a segment (stems compared), for at most MAX_LEXICAL
MAX_LEXICAL = 2
VALUE_WEIGHT = RELEVANCE_FLOOR  # an enum value said in a segment makes it relevant on its own
# A field that asks for a name is also matched against utterances of an introduction ("This is Peter speaking."):
# the text model puts "The first name of the agent who answered." far from "this is Maria speaking" (0.16-0.23).
_NAME_CUE = re.compile(r"\b(?:names?|named|introduc\w*)\b", re.I)
_INTRODUCTIONS = next(act.examples for act in ACTS if act.name == "an introduction")
SPANS_HEAD = ("Transcript of a phone call, only the parts that may hold the fields below, one line per turn "
              "(speaker: words); [...]: turns left out:\n")


class _Relevance:
    """How relevant each segment of a call is to a field: the cosine similarity of its closest sentence (or of the
    segment whole) to the field's name, description and enum values (the text model), plus LEXICAL_WEIGHT for each
    of the field's words it says (`field_words`) and VALUE_WEIGHT when it says one of an enum's values. The
    segments are embedded once for every field."""

    def __init__(self, segments: Sequence[TranscriptSegment], embedder: Any):
        self.segments = segments
        self.similarities = Similarities(embedder, segments)
        at = {id(s): i for i, s in enumerate(segments)}
        self._unit_segment = np.array([at[id(u.segment)] for u in self.similarities.units], dtype=np.int64)
        self._stems = [{_stem(w) for w in tokens(s.text)} for s in segments]

    @staticmethod
    def queries(field: ExtractedField) -> list[str]:
        """What the segments are compared with: the field's name and description (and an enum's values); for a
        field that asks for a name, utterances of an introduction too."""
        text = query_text(field.name, field.description)
        said = list(_INTRODUCTIONS) if _NAME_CUE.search(f"{field.name.replace('_', ' ')} {field.description}") else []
        return [f"{text} ({', '.join(field.values)})" if field.values else text, *said]

    def prepare(self, fields: Sequence[ExtractedField]) -> None:
        self.similarities.prepare([q for f in fields for q in self.queries(f)])  # embedded together: one batch

    def __call__(self, field: ExtractedField) -> tuple[np.ndarray, np.ndarray]:
        """Per segment, its relevance and the unit (index into similarities.units) closest in meaning (-1: none)."""
        n = len(self.segments)
        meaning, best = np.zeros(n, dtype=np.float32), np.full(n, -1, dtype=np.int64)
        closest = np.max([self.similarities(q) for q in self.queries(field)], axis=0)
        for unit, (i, similarity) in enumerate(zip(self._unit_segment, closest, strict=False)):  # no units: none
            if best[i] < 0 or similarity > meaning[i]:
                meaning[i], best[i] = max(float(similarity), 0.0), unit
        words = field_words(field)
        values = [[_stem(w) for w in tokens(v)] for v in field.values]
        lexical = np.zeros(n, dtype=np.float32)
        for i, (stems, segment) in enumerate(zip(self._stems, self.segments, strict=True)):
            lexical[i] = LEXICAL_WEIGHT * min(MAX_LEXICAL, len(stems & words))
            if values and any(all(w in stems for w in v) for v in values if v):
                said = [_stem(w) for w in tokens(segment.text)]
                if any(find_stems(said, v) >= 0 for v in values if v):
                    lexical[i] += VALUE_WEIGHT
        return meaning + lexical, best


def find_stems(said: Sequence[str], wanted: Sequence[str]) -> int:
    """Where the words `wanted` are said in a row in `said` (both stemmed), or -1."""
    return next((i for i in range(len(said) - len(wanted) + 1) if said[i:i + len(wanted)] == list(wanted)), -1)


def _clip(text: str, focus: int, max_chars: int) -> str:
    """text, or its max_chars around character `focus` (a third before it), cut at spaces and marked with "..."."""
    if len(text) <= max_chars:
        return text
    start = max(0, min(focus - max_chars // 3, len(text) - max_chars))
    end = start + max_chars
    if start > 0:
        start = text.find(" ", start) + 1 or start
    if end < len(text):
        end = text.rfind(" ", start, end) if text.rfind(" ", start, end) > start else end
    return ("... " if start > 0 else "") + text[start:end].strip() + (" ..." if end < len(text) else "")


def field_spans(relevance: np.ndarray, anchors: Sequence[int], lengths: Sequence[int], max_chars: int
                ) -> list[int]:
    """The segments to read for one field, in the order chosen: each anchor at least RELEVANCE_FLOOR relevant, the
    most relevant first, then the SPAN_BEFORE segments before it and the SPAN_AFTER after it, while their lines
    (`lengths`, characters) fit max_chars; the first anchor always (its line is clipped to fit). [] when no anchor
    is relevant enough: the field is not asked."""
    ranked = sorted((i for i in dict.fromkeys(anchors) if relevance[i] >= RELEVANCE_FLOOR),
                    key=lambda i: (-relevance[i], i))
    chosen: list[int] = []
    used = 0
    for anchor in ranked:
        if used >= max_chars:
            break
        window = [anchor, *range(anchor - 1, anchor - SPAN_BEFORE - 1, -1), *range(anchor + 1, anchor + SPAN_AFTER + 1)]
        for i in window:
            if 0 <= i < len(lengths) and i not in chosen and lengths[i] and (
                    used + lengths[i] <= max_chars or not chosen):
                chosen.append(i)
                used += min(lengths[i], max_chars)
    return chosen


def spans_prompt(segments: Sequence[TranscriptSegment], focus: Mapping[int, int], roles: Mapping[str, str] | None,
                 max_line: int) -> str:
    """The transcript prefix of the segments in `focus` (index -> the character each is read around, when its text is
    longer than max_line), in time order: consecutive segments of one speaker as one line, "[...]" where segments
    are left out."""
    names = speaker_names([s.speaker for s in segments], roles)
    lines: list[str] = []
    previous: int | None = None
    for i in sorted(focus):
        segment = segments[i]
        text = " ".join(_clip(segment.text, focus[i], max_line).split())
        if previous is not None and i == previous + 1 and segment.speaker == segments[previous].speaker:
            lines[-1] += " " + text
        else:
            if i > (previous + 1 if previous is not None else 0):
                lines.append("[...]")
            lines.append(f"{names[segment.speaker]}: {text}")
        previous = i
    if previous is not None and previous < len(segments) - 1:
        lines.append("[...]")
    return SPANS_HEAD + "\n".join(lines) + "\n[end of transcript]\n"


def _narrowed(asked: Sequence[tuple[int, _Question, list[Mention]]], segments: Sequence[TranscriptSegment],
              embedder: Any, roles: Mapping[str, str] | None, field_tokens: int, whole: str
              ) -> tuple[list[tuple[int, _Question, list[Mention]]], str]:
    """The questions worth asking and the transcript prefix to ask them with: all of them and `whole` (the shared
    transcript prefix) when it is no longer than the spans the fields may read or the summary reads the call whole
    too (salience.py); else the spans of the call relevant to each field (`field_spans`, field_tokens each), one
    prefix for all, a field with no relevant segment left out (null), and a choice among mentions keeping the values
    said in its spans."""
    max_chars = field_tokens * CHARS_PER_TOKEN
    # the summary reads a call this short whole: the same prefix, evaluated once in the language model's KV cache
    summary_reads_whole = sum(len(t.text) + 1 for t in turns_of(segments)) <= READ_CHARS
    if summary_reads_whole or len(whole) <= len(asked) * max_chars:
        return list(asked), whole
    relevance = _Relevance(segments, embedder)
    relevance.prepare([q.field for _, q, _ in asked])
    max_line = max(max_chars // 2, 1)  # a long segment is read around what made it relevant
    names = speaker_names([s.speaker for s in segments], roles)
    lengths = [min(len(names[s.speaker]) + len(s.text.strip()) + 3, max_line + 12) if s.text.strip() else 0
               for s in segments]
    at = {id(s): i for i, s in enumerate(segments)}
    narrowed: list = []
    focus: dict[int, int] = {}
    for i, question, mentions in asked:
        scores, best = relevance(question.field)
        if question.choices:  # the values' own segments, as relevant as they are or as the question before them
            anchors = [at[id(m.segment)] for m in mentions if m.value in question.choices]
            lifted = scores.copy()
            lifted[1:] = np.maximum(scores[1:], scores[:-1])
            chosen = field_spans(lifted, anchors, lengths, max_chars)
        else:
            chosen = field_spans(scores, range(len(segments)), lengths, max_chars)
        if not chosen:
            log.info("field_not_asked", field=question.field.name, reason="no span of the call is relevant to it")
            continue
        if question.choices:
            read = set(chosen)
            said = {m.value for m in mentions if at[id(m.segment)] in read}
            question = _Question(question.field, tuple(c for c in question.choices if c in said))
            for m in mentions:
                if at[id(m.segment)] in read:
                    focus.setdefault(at[id(m.segment)], m.start)
        narrowed.append((i, question, mentions))
        units = relevance.similarities.units
        for j in chosen:
            focus.setdefault(j, units[best[j]].start if best[j] >= 0 else 0)
    return narrowed, spans_prompt(segments, focus, roles, max_line) if narrowed else whole


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


def _sureness(mention: Mention) -> float | None:
    """The recogniser's probability of the least sure word the value is said in there (None: no word timings)."""
    words = span_words(mention.segment, mention.start, mention.end)
    return min(w.probability for w in words) if words else None


def with_confidence(fields: Sequence[ExtractedField], values: Sequence[ExtractedValue],
                    segments: Sequence[TranscriptSegment], *, region: str = "US",
                    reference_date: date | None = None) -> list[ExtractedValue]:
    """The values found (extract_fields' `values`, in the order of `fields`), each with its `confidence`: the
    recogniser's probability of the least sure word where the value is said, at the place it is said most surely.
    Below evidence.DOUBTFUL_WORD_PROBABILITY the value was heard only in doubted words ("maybe $1" for "eighty nine
    dollars"). None where it cannot be told: no value, a boolean (the model's reading of words, not a value said),
    a value not found said, a transcript without word timings."""
    out = []
    for field, found in zip(fields, values, strict=True):
        sureness: list[float] = []
        if found.value is not None and field.type != "boolean":
            mentions = (where_said(str(found.value), segments) if field.type in ("string", "enum") else
                        [m for m in mentions_of(field, segments, region, reference_date)
                         if _display(m.value) == _display(found.value)])
            sureness = [p for m in mentions if (p := _sureness(m)) is not None]
        out.append(found.model_copy(update={"confidence": round(max(sureness), 3) if sureness else None}))
    doubted = sum(1 for v in out if v.confidence is not None and v.confidence < DOUBTFUL_WORD_PROBABILITY)
    if doubted:  # a count only: the names are the project's, the values the call's
        log.info("field_values_doubtful", values=doubted)
    return out


def extract_fields(fields: Sequence[ExtractedField], segments: Sequence[TranscriptSegment], llm: Any | None = None, *,
                   region: str = "US", reference_date: date | None = None,
                   roles: Mapping[str, str] | None = None, embedder: Any | None = None,
                   field_tokens: int = FIELD_TOKENS) -> list[ExtractedValue]:
    """Each field's value and evidence, in the order of fields (see the module docstring). region: where phone
    numbers without a country code are from; reference_date: the day of the call, which anchors dates without a
    year and relative ones; roles: speaker label -> role, named in the transcript prefix as the summary and goals
    name them (one shared prefix). The fields the model is asked about are asked in one request; a model that fails
    leaves them null. embedder (TextEmbedder; an English call): the request holds only the spans relevant to each
    field, at most field_tokens each (`_narrowed`), and a field no span is relevant to is null without asking;
    None: the whole transcript (up to the model's context)."""
    if not any(tokens(s.text) for s in segments):
        return [_result(f, None, []) for f in fields]
    decided = [_by_rules(f, segments, llm, region, reference_date) for f in fields]
    asked = [(i, question, mentions) for i, (_, question, mentions) in enumerate(decided) if question is not None]
    results = [result for result, _, _ in decided]
    prefix = transcript_prompt(segments, transcript_budget(llm), roles) if asked else ""
    if asked and embedder is not None:
        asked, prefix = _narrowed(asked, segments, embedder, roles, field_tokens, prefix)
    if asked:
        try:
            answers = ask_model([q for _, q, _ in asked], llm, prefix)
        except LanguageModelError as exc:
            log.warning("fields_model_failed", error=str(exc), fields=[q.field.name for _, q, _ in asked])
            answers = [{"found": False}] * len(asked)
        for (i, question, mentions), answer in zip(asked, answers, strict=True):
            results[i] = _answered(question, answer, mentions, segments)
    return [r if r is not None else _result(f, None, []) for r, f in zip(results, fields, strict=True)]


__all__ = ["FIELD_TOKENS", "extract_fields", "field_spans", "supported", "with_confidence"]
