"""A call scored against a QA form (issue 43): each question answered from what the analysis found, with its
evidence; the sections' and the form's scores; automatic fails. Pure functions of the form and the result.

`score_call` answers every question (`answer_question`: one source each, callscope/resources/scorecards.py), and
`recompute` adds them up: a question's share is its points over its full points; a section's score (0 to 100) is
its questions' and subsections' shares by their weights, those answered n/a (or not at all) left out of the
denominator; the form's score is its sections' by their weights, the same way. An answer that earns no points on
a question with an automatic fail sets its section (``section``) or the whole score (``form``) to 0.

Reviewers' overrides (`apply_overrides`) replace an answer and keep the automatic one and the history; `recompute`
decides again whether questions whose condition names another question apply, and the scores. `carry_overrides`
keeps a reviewer's answers over a new automatic scoring (a reanalysed call).

The ``llm`` questions go to the language model after the shared transcript prefix, each read as the probability of
"yes" from one answer token (no text written: the claim judge's way, entailment.py); a yes quotes the sentence closest
to the question in meaning. Without a model they are n/a.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import structlog
from pydantic import BaseModel, ConfigDict, Field

from callscope.analysis.models.language_model import LanguageModelError
from callscope.analysis.result import (
    AnalysisResult,
    AnswerChange,
    Evidence,
    ScorecardAnswer,
    ScorecardAnswerValue,
    ScorecardEvidence,
    ScorecardResult,
    SectionScore,
    SubsectionScore,
    TranscriptSegment,
)
from callscope.analysis.stages.evidence import (
    QUOTE_MAX_CHARS,
    SIMILARITY_FLOOR,
    Similarities,
    excerpt,
    says,
    tokens,
    without_role_words,
    word_time,
)
from callscope.analysis.stages.pauses import announces_hold
from callscope.analysis.stages.summary import transcript_budget, transcript_prompt
from callscope.errors import ValidationFailed, one_line
from callscope.resources.scorecards import (
    CategoryAnswer,
    EmotionAnswer,
    FieldAnswer,
    GoalAnswer,
    HoldAnswer,
    InterruptionsAnswer,
    LlmAnswer,
    LongestSilenceAnswer,
    ManualAnswer,
    PausesAnswer,
    Question,
    QuestionCondition,
    ScorecardForm,
    TalkShareAnswer,
    order_of_answering,
)

log = structlog.get_logger()

NA = "n/a"
END_TURNS = 3  # an emotion question about the end of the call reads the role's last turns
PAUSES_SHOWN = 3  # pauses quoted as evidence of a pause answer
# The language model's answer is its probability of "yes" read from one answer token (as the claim judge reads it,
# entailment.py): every token it writes costs a step of the model, the analysis's largest cost after the recognition.
LLM_INSTRUCTION = ("Below is a question a supervisor asks about the call above. Answer \"yes\" only if the "
                   "transcript shows it; answer \"no\" if it does not.\n\nQuestion: ")
LLM_ASK = "\nAnswer yes or no."
# The P(yes) at and above which the answer is yes: the middle of the gap between the "no" (at most 0.61) and "yes"
# (at least 0.92) answers of the fit calls of benchmarks/scorecards.py (its first ten; the figures: RESULTS.md).
LLM_YES_PROBABILITY = 0.75
_ROLE_NAMES = re.compile(r"\b(?:(agent|operator|representative|rep)|(customer|caller|client))s?\b", re.IGNORECASE)
LLM_NOTE_NO_MODEL = "no language model is configured"


@dataclass
class Automatic:
    """What a source says about one call: an answer (yes/no/n/a, an option, a number) and why."""

    answer: ScorecardAnswerValue
    evidence: list[ScorecardEvidence] = field(default_factory=list)
    note: str = ""


# ----- evidence ---------------------------------------------------------------------------------------------------

def _seconds(ms: int | None) -> float | None:
    return None if ms is None else round(ms / 1000, 3)


def figure(text: str, start_ms: int | None = None, end_ms: int | None = None) -> ScorecardEvidence:
    return ScorecardEvidence(text=text, start=_seconds(start_ms), end=_seconds(end_ms))


def _quoted(evidence: Sequence[Evidence], segments: Sequence[TranscriptSegment]) -> list[ScorecardEvidence]:
    """A stage's evidence (a quote, its segment and start) as a scorecard's: the end is its segment's."""
    ends = {s.id: s.end_ms for s in segments}
    return [ScorecardEvidence(text=e.quote, start=_seconds(e.start_ms), end=_seconds(ends.get(e.dialogue_id)))
            for e in evidence]


def _segment_evidence(segment: TranscriptSegment, text: str | None = None) -> ScorecardEvidence:
    said = text or segment.text.strip()
    if len(said) > QUOTE_MAX_CHARS:
        said = said[:QUOTE_MAX_CHARS].rsplit(" ", 1)[0]
    return ScorecardEvidence(text=said, start=_seconds(segment.start_ms), end=_seconds(segment.end_ms))


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _within(value: float, lo: float | None, hi: float | None) -> bool:
    return (lo is None or value >= lo) and (hi is None or value <= hi)


def _bounds(lo: float | None, hi: float | None, unit: str = "") -> str:
    parts = ([f"at least {lo:g}{unit}"] if lo is not None else []) + ([f"at most {hi:g}{unit}"] if hi is not None
                                                                      else [])
    return " and ".join(parts)


# ----- the sources ------------------------------------------------------------------------------------------------

def _roles(result: AnalysisResult) -> dict[str, str]:
    return {s.label: s.role for s in result.speakers}


def _goal(question: Question, source: GoalAnswer, result: AnalysisResult) -> Automatic:
    goal = next((g for g in result.goals if g.goal_id == source.goal_id), None)
    if goal is None:
        return Automatic(NA, note=f"goal {source.goal_id} was not evaluated in this call")
    if not goal.applicable:
        return Automatic(NA, note=f"{goal.goal_name}: its situation did not occur", evidence=[])
    return Automatic(_yes(goal.met), _quoted(goal.evidence, result.segments) or [figure(goal.explanation)])


def _category(question: Question, source: CategoryAnswer, result: AnalysisResult) -> Automatic:
    wanted = source.name.casefold()
    category = next((c for c in result.categories if c.name.casefold() == wanted), None)
    if category is None:
        return Automatic(NA, note=f"category {source.name} was not evaluated in this call")
    evidence = _quoted(category.evidence, result.segments) if category.matched else [
        figure(f"{category.name} not found (score {category.score:.2f})")]
    return Automatic(_yes(category.matched == (source.yes_when == "found")), evidence)


def _pauses(question: Question, source: PausesAnswer, result: AnalysisResult) -> Automatic:
    wrong = [p for p in result.pauses if not p.compliant]
    if question.type == "number":
        answer: ScorecardAnswerValue = float(len(wrong))
    else:
        answer = _yes(not wrong)
    if not wrong:
        return Automatic(answer, [figure(f"{len(result.pauses)} pause(s), all within the pause rules (long from "
                                         f"{result.pause_rules.long_pause_threshold_ms / 1000:g} s)")])
    shown = sorted(wrong, key=lambda p: -p.duration_ms)[:PAUSES_SHOWN]
    return Automatic(answer, [figure(f"{p.duration_ms / 1000:.1f} s of silence, not announced as a hold or too long",
                                     p.start_ms, p.end_ms) for p in sorted(shown, key=lambda p: p.start_ms)],
                     note=f"{len(wrong)} of {len(result.pauses)} pause(s) broke the pause rules")


def _talk_share(question: Question, source: TalkShareAnswer, result: AnalysisResult) -> Automatic:
    total = sum(s.talk_ms for s in result.speakers)
    mine = sum(s.talk_ms for s in result.speakers if s.role == source.role)
    if not any(s.role == source.role for s in result.speakers):
        return Automatic(NA, note=f"no {source.role} was identified in this call")
    if total <= 0:
        return Automatic(NA, note="nobody talked")
    share = mine / total
    text = f"{source.role} talked {share:.0%} of the talk time ({mine / 1000:.0f} of {total / 1000:.0f} s)"
    if question.type == "number":
        return Automatic(round(share, 4), [figure(text)])
    return Automatic(_yes(_within(share, source.min, source.max)), [figure(f"{text}; asked: "
                                                                            f"{_bounds(source.min, source.max)}")])


def _interruptions(question: Question, source: InterruptionsAnswer, result: AnalysisResult) -> Automatic:
    roles = _roles(result)
    counted = [s for s in result.characteristics.speakers
               if source.role == "any" or roles.get(s.speaker) == source.role]
    if source.role != "any" and not counted:
        return Automatic(NA, note=f"no {source.role} was identified in this call")
    count = sum(s.interruptions for s in counted)
    text = f"{source.role if source.role != 'any' else 'the speakers'} interrupted {count} time(s)"
    if question.type == "number":
        return Automatic(float(count), [figure(text)])
    assert source.max is not None  # the form's rules: a yes/no question from interruptions has max
    return Automatic(_yes(count <= source.max), [figure(f"{text}; asked: at most {source.max}")])


def _longest(question: Question, seconds: float | None, limit: float | None, what: str,
             span: tuple[int, int] | None) -> Automatic:
    assert seconds is not None
    text = f"longest {what}: {seconds:.1f} s"
    evidence = [figure(text, *span)] if span else [figure(text)]
    if question.type == "number":
        return Automatic(round(seconds, 3), evidence)
    assert limit is not None  # the form's rules: a yes/no question from a silence or hold has max_seconds
    return Automatic(_yes(seconds <= limit), [figure(f"{text}; asked: at most {limit:g} s", *span) if span
                                              else figure(f"{text}; asked: at most {limit:g} s")])


def _longest_silence(question: Question, source: LongestSilenceAnswer, result: AnalysisResult) -> Automatic:
    longest = max(result.pauses, key=lambda p: p.duration_ms, default=None)
    if longest is None:
        return _longest(question, 0.0, source.max_seconds, "silence (no pause)", None)
    return _longest(question, longest.duration_ms / 1000, source.max_seconds, "silence",
                    (longest.start_ms, longest.end_ms))


def _hold(question: Question, source: HoldAnswer, result: AnalysisResult) -> Automatic:
    texts = {s.id: s.text for s in result.segments}
    holds = [p for p in result.pauses if announces_hold(result.pause_rules, texts.get(p.after_dialogue_id, ""))]
    if not holds:
        return Automatic(NA, note="the call had no hold")
    longest = max(holds, key=lambda p: p.duration_ms)
    return _longest(question, longest.duration_ms / 1000, source.max_seconds, "hold",
                    (longest.start_ms, longest.end_ms))


def _emotion(question: Question, source: EmotionAnswer, result: AnalysisResult) -> Automatic:
    roles = _roles(result)
    turns = [s for s in result.segments if s.emotions and (s.role if s.role != "unknown"
                                                          else roles.get(s.speaker)) == source.role]
    if source.part == "end":
        turns = turns[-END_TURNS:]
    weights = [max(s.end_ms - s.start_ms, 1) for s in turns]
    if not turns:
        return Automatic(NA, note=f"no emotion was measured in the {source.role}'s speech")
    where = "at the end of the call" if source.part == "end" else "over the call"
    if question.type == "choice":
        means = {e: sum(w * s.emotions.get(e, 0.0) for s, w in zip(turns, weights, strict=True)) / sum(weights)
                 for e in {e for s in turns for e in s.emotions}}
        prevailing = max(means, key=lambda e: means[e])
        option = next((o.value for o in question.options if o.value.casefold() == prevailing), None)
        return Automatic(option if option is not None else NA,
                         [figure(f"the {source.role}'s prevailing emotion {where}: {prevailing} "
                                 f"({means[prevailing]:.0%})")],
                         note="" if option is not None else f"{prevailing} is none of the options")
    shares = [sum(s.emotions.get(e, 0.0) for e in source.emotions) for s in turns]
    share = sum(w * v for w, v in zip(weights, shares, strict=True)) / sum(weights)
    named = ", ".join(source.emotions)
    peak = max(range(len(turns)), key=lambda i: shares[i])
    evidence = [figure(f"the {source.role} sounded {named} {share:.0%} of the time {where}"),
                _segment_evidence(turns[peak])]
    if question.type == "number":
        return Automatic(round(share, 4), evidence)
    return Automatic(_yes(_within(share, source.min, source.max)), evidence,
                     note=f"asked: {_bounds(source.min, source.max)}")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _same(value: Any, expected: str) -> bool:
    if isinstance(value, bool):
        return expected.strip().casefold() == ("true" if value else "false")
    a, b = _number(value), _number(expected)
    if a is not None and b is not None:
        return a == b
    return str(value).strip().casefold() == expected.strip().casefold()


def _field(question: Question, source: FieldAnswer, result: AnalysisResult) -> Automatic:
    found = next((f for f in result.extracted_data if f.name == source.name), None)
    if found is None:
        return Automatic(NA, note=f"field {source.name} was not extracted in this call")
    compares = source.equals is not None or source.min is not None or source.max is not None
    if found.value is None:
        if question.type == "yes_no" and not compares:
            return Automatic("no", [figure(f"no {source.name} was found")])
        return Automatic(NA, note=f"no {source.name} was found")
    evidence = [*_quoted(found.evidence, result.segments), figure(f"{source.name}: {found.value}")]
    if question.type == "choice":
        option = next((o.value for o in question.options if _same(found.value, o.value)), None)
        return Automatic(option if option is not None else NA, evidence,
                         note="" if option is not None else f"{found.value} is none of the options")
    number = _number(found.value)
    if question.type == "number":
        return Automatic(number if number is not None else NA, evidence,
                         note="" if number is not None else f"{source.name} is not a number")
    if source.equals is not None:
        return Automatic(_yes(_same(found.value, source.equals)), evidence, note=f"asked: {source.equals}")
    if compares:
        if number is None:
            return Automatic(NA, evidence, note=f"{source.name} is not a number")
        return Automatic(_yes(_within(number, source.min, source.max)), evidence,
                         note=f"asked: {_bounds(source.min, source.max)}")
    return Automatic("yes", evidence)


Source = Callable[[Question, Any, AnalysisResult], Automatic]
SOURCES: dict[type, Source] = {
    GoalAnswer: _goal, CategoryAnswer: _category, PausesAnswer: _pauses, TalkShareAnswer: _talk_share,
    InterruptionsAnswer: _interruptions, LongestSilenceAnswer: _longest_silence, HoldAnswer: _hold,
    EmotionAnswer: _emotion, FieldAnswer: _field,
}


def answer_question(question: Question, result: AnalysisResult) -> Automatic:
    """The automatic answer of a question whose source reads the result (not llm, not manual)."""
    return SOURCES[type(question.answer)](question, question.answer, result)


# ----- the language model -----------------------------------------------------------------------------------------

def llm_head(segments: Sequence[TranscriptSegment], roles: dict[str, str], llm: Any) -> str:
    """The shared transcript prefix (the summary's, the goals' and the claim judge's: a local model finds it in its
    KV cache), then the instruction every question shares."""
    return transcript_prompt(segments, transcript_budget(llm), roles) + "\n" + LLM_INSTRUCTION


def ask_model(questions: Sequence[Question], result: AnalysisResult, llm: Any | None,
              embedder: Any | None = None) -> dict[str, Automatic]:
    """The llm questions' answers by question id, each read from the model's probability of "yes" after the shared
    head (one answer token, not sampled); n/a with the reason without a model or when it fails. A yes quotes the
    sentence closest in meaning to the question (`embedder`, the text model; none without it)."""
    if not questions:
        return {}
    if llm is None:
        return {q.id: Automatic(NA, note=LLM_NOTE_NO_MODEL) for q in questions}
    if not result.segments:
        return {q.id: Automatic(NA, note="no speech to ask about") for q in questions}
    prompts = [q.answer.prompt for q in questions if isinstance(q.answer, LlmAnswer)]
    try:
        shares = llm.yes_probabilities(llm_head(result.segments, _roles(result), llm),
                                       [f"{prompt}{LLM_ASK}" for prompt in prompts])
    except LanguageModelError as exc:
        log.warning("scorecard_llm_failed", error=one_line(exc))
        return {q.id: Automatic(NA, note=f"the language model failed ({one_line(exc)})") for q in questions}
    similarities = Similarities(embedder, result.segments)
    similarities.prepare([without_role_words(prompt) for prompt in prompts])
    out: dict[str, Automatic] = {}
    for question, prompt, share in zip(questions, prompts, shares, strict=True):
        verdict = "yes" if share >= LLM_YES_PROBABILITY else "no"
        evidence = _closest_sentence(similarities, prompt) if verdict == "yes" else []
        out[question.id] = Automatic(verdict, evidence, note=f"the language model's answer (P(yes) {share:.2f})")
    return out


def _closest_sentence(similarities: Similarities, prompt: str) -> list[ScorecardEvidence]:
    """The sentence of the call closest in meaning to the question, when it is at least loosely related to it; of
    the role the question is about where it names one (a customer's "I am angry" is no agent's apology)."""
    scores = similarities(without_role_words(prompt))
    role = asked_role(prompt)
    if role is not None and len(scores):
        scores = np.where([u.segment.role == role for u in similarities.units], scores, -1.0)
    if not len(scores) or float(scores.max()) < SIMILARITY_FLOOR:
        return []
    unit = similarities.units[int(scores.argmax())]
    text, first = excerpt(unit.segment, unit.first, len(tokens(unit.text)))
    return [ScorecardEvidence(text=text, start=_seconds(word_time(unit.segment, first)),
                              end=_seconds(unit.segment.end_ms))]


def asked_role(prompt: str) -> str | None:
    """The role a question is about: the first it names, its subject ("Did the agent apologise to the customer?")."""
    found = _ROLE_NAMES.search(prompt)
    return None if found is None else "agent" if found.group(1) else "customer"


# ----- conditions -------------------------------------------------------------------------------------------------

def call_condition(condition: QuestionCondition | None, result: AnalysisResult, said: list[str]) -> bool:
    """Whether the parts of a condition about the call hold (every part given; phrases: any of them said)."""
    if condition is None:
        return True
    if condition.phrases and not any(says(said, p) for p in condition.phrases):
        return False
    if condition.long_pause and not any(p.long for p in result.pauses):
        return False
    if condition.category is not None and not any(
            c.matched and c.name.casefold() == condition.category.casefold() for c in result.categories):
        return False
    if condition.goal_id is not None and not any(
            g.goal_id == condition.goal_id and g.met and g.applicable for g in result.goals):
        return False
    return condition.field is None or any(
        f.name == condition.field and f.value is not None for f in result.extracted_data)


def _answer_matches(answer: ScorecardAnswerValue, wanted: Sequence[str]) -> bool:
    return isinstance(answer, str) and answer.casefold() in {w.casefold() for w in wanted}


# ----- scoring ----------------------------------------------------------------------------------------------------

def points_of(question: Question, answer: ScorecardAnswerValue) -> float | None:
    """The points an answer earns on its question; None for n/a and unanswered."""
    if answer is None or answer == NA:
        return None
    if question.type == "yes_no":
        return 1.0 if answer == "yes" else 0.0
    if question.type == "choice":
        return next((float(o.points) for o in question.options
                     if isinstance(answer, str) and o.value.casefold() == answer.casefold()), 0.0)
    value = _number(answer)
    if value is None:
        return None
    return next((float(r.points) for r in question.ranges if _within(value, r.min, r.max)), 0.0)


def score_call(form: ScorecardForm, result: AnalysisResult, *, scorecard_id: int, name: str, version: int,
               llm: Any | None = None, embedder: Any | None = None) -> ScorecardResult:
    """The call scored against the form (see the module docstring). `llm`: the analysis's language model
    (models/language_model.py), None where none is configured: the llm questions are then n/a. `embedder`: the
    text model that finds a yes's evidence."""
    said = tokens(" ".join(s.text for s in result.segments))
    conditions = {q.id: call_condition(q.applies_when, result, said) for q in form.questions()}
    automatic: dict[str, Automatic] = {}
    asked: list[Question] = []
    for question in form.questions():
        if isinstance(question.answer, ManualAnswer):
            automatic[question.id] = Automatic(None, note="answered by a reviewer")
        elif isinstance(question.answer, LlmAnswer):
            if conditions[question.id]:
                asked.append(question)  # not asked where the call itself rules it out: the model's time is the cost
            else:
                automatic[question.id] = Automatic(NA, note="not asked: the question does not apply")
        else:
            automatic[question.id] = answer_question(question, result)
    automatic.update(ask_model(asked, result, llm, embedder))
    answers = [ScorecardAnswer(
        question_id=q.id, answer=automatic[q.id].answer, points=None, max_points=q.max_points,
        source=q.answer.source, evidence=automatic[q.id].evidence, note=automatic[q.id].note,
        automatic=automatic[q.id].answer, call_condition=conditions[q.id]) for q in form.questions()]
    card = ScorecardResult(scorecard_id=scorecard_id, name=name, version=version, score=None, auto_failed=False,
                           sections=[], answers=answers)
    return recompute(form, card)


def _answer_now(question: Question, answer: ScorecardAnswer, applicable: bool) -> ScorecardAnswerValue:
    if answer.overridden:
        return answer.answer  # the reviewer's, whatever the condition says
    return answer.automatic if applicable else NA


@dataclass
class _Tally:
    """Weighted shares of what was answered in one place (a section, a subsection, the form)."""

    weighted: float = 0.0
    weights: float = 0.0
    failed: bool = False

    def add(self, weight: float, share: float | None) -> None:
        if share is not None and weight > 0:
            self.weighted += weight * share
            self.weights += weight

    @property
    def share(self) -> float | None:
        """0 to 1, unrounded (what the level above adds up); None when nothing here was answered."""
        if self.failed:
            return 0.0
        return self.weighted / self.weights if self.weights else None

    @property
    def score(self) -> float | None:
        """0 to 100, as results show it."""
        share = self.share
        return None if share is None else round(100 * share, 1)


def recompute(form: ScorecardForm, card: ScorecardResult) -> ScorecardResult:
    """The card's answers and scores as they stand now: whether each question applies (a condition naming another
    question reads that one's current answer), each answer (a reviewer's where overridden, else the automatic one,
    n/a where it does not apply), its points, the sections' and the form's scores and automatic fails. Answers of
    questions the form no longer has are dropped; questions it gained are unanswered."""
    given = {a.question_id: a for a in card.answers}
    current: dict[str, ScorecardAnswer] = {}
    for question in order_of_answering(form):
        answer = given.get(question.id) or ScorecardAnswer(
            question_id=question.id, answer=None, points=None, max_points=question.max_points,
            source=question.answer.source, note="not scored with this version of the form", automatic=None)
        condition = question.applies_when
        applicable = answer.call_condition
        if applicable and condition is not None and condition.question is not None:
            before = current.get(condition.question)
            applicable = before is not None and _answer_matches(before.answer, condition.answers)
        value = _answer_now(question, answer, applicable)
        current[question.id] = answer.model_copy(update={
            "answer": value, "points": points_of(question, value), "max_points": question.max_points,
            "applicable": applicable})
    form_tally = _Tally()
    sections: list[SectionScore] = []
    for section in form.sections:
        tally = _Tally()
        _add_questions(tally, section.questions, current, form_tally)
        subscores: list[SubsectionScore] = []
        for sub in section.sections:
            sub_tally = _Tally()
            _add_questions(sub_tally, sub.questions, current, form_tally)
            subscores.append(SubsectionScore(name=sub.name, score=sub_tally.score, auto_failed=sub_tally.failed))
            tally.add(sub.weight, sub_tally.share)
        sections.append(SectionScore(name=section.name, score=tally.score, auto_failed=tally.failed,
                                     sections=subscores))
        form_tally.add(section.weight, tally.share)
    auto_failed = form_tally.failed or any(s.auto_failed or any(u.auto_failed for u in s.sections) for s in sections)
    return card.model_copy(update={
        "score": form_tally.score, "auto_failed": auto_failed, "sections": sections,
        "answers": [current[q.id] for q in form.questions()]})


def _add_questions(tally: _Tally, questions: Sequence[Question], answers: dict[str, ScorecardAnswer],
                   form_tally: _Tally) -> None:
    for question in questions:
        answer = answers[question.id]
        if answer.points is None:
            continue
        tally.add(question.weight, answer.points / question.max_points)
        if answer.points == 0 and question.auto_fail == "section":
            tally.failed = True
        elif answer.points == 0 and question.auto_fail == "form":
            form_tally.failed = True


# ----- overrides --------------------------------------------------------------------------------------------------

class AnswerOverride(BaseModel):
    """A reviewer's answer to one question (PATCH /recordings/{public_id}/scorecard's `answers`)."""

    model_config = ConfigDict(extra="forbid")

    question_id: str = Field(max_length=63)
    answer: str | float = Field(description="yes, no or n/a; an option; a number.")
    comment: str = Field("", max_length=2000)


def checked_answer(question: Question, answer: str | float) -> ScorecardAnswerValue:
    """The override as the question takes it (yes/no/n/a, an option as the form spells it, a number), or ValueError
    saying what the question takes."""
    if isinstance(answer, str) and answer.strip().casefold() == NA:
        return NA
    if question.type == "yes_no":
        if isinstance(answer, str) and answer.strip().casefold() in ("yes", "no"):
            return answer.strip().casefold()
        raise ValueError("must be yes, no or n/a")
    if question.type == "choice":
        option = next((o.value for o in question.options
                       if isinstance(answer, str) and o.value.casefold() == answer.strip().casefold()), None)
        if option is None:
            raise ValueError("must be one of: " + ", ".join([o.value for o in question.options] + [NA]))
        return option
    number = _number(answer) if not isinstance(answer, str) or answer.strip() else None
    if number is None or abs(number) > 1e15:
        raise ValueError("must be a number or n/a")
    return number


def apply_overrides(form: ScorecardForm, card: ScorecardResult, overrides: Sequence[AnswerOverride], *, by: str,
                    at: datetime) -> ScorecardResult:
    """The card with the reviewer's answers: each marked overridden, its automatic answer kept, a history entry
    (who, when, from, to, comment) added; then recomputed. ValidationFailed naming each wrong answer by its index
    (``answers.0.answer must be yes, no or n/a``), and nothing changed."""
    errors: list[str] = []
    chosen: dict[str, tuple[ScorecardAnswerValue, str]] = {}
    seen: set[str] = set()
    for i, override in enumerate(overrides):
        question = form.question(override.question_id)
        if question is None:
            errors.append(f"answers.{i}.question_id names no question of the form ({override.question_id})")
            continue
        if override.question_id in seen:
            errors.append(f"answers.{i}.question_id must not repeat a question ({override.question_id})")
            continue
        seen.add(override.question_id)
        try:
            chosen[question.id] = (checked_answer(question, override.answer), override.comment.strip())
        except ValueError as exc:
            errors.append(f"answers.{i}.answer {exc}")
    if errors:
        raise ValidationFailed(errors)
    card = recompute(form, card)  # every question of the form has its answer
    changed = []
    for answer in card.answers:
        if answer.question_id not in chosen:
            changed.append(answer)
            continue
        value, comment = chosen[answer.question_id]
        entry = AnswerChange(by=by, at=at, from_answer=answer.answer, to_answer=value, comment=comment)
        changed.append(answer.model_copy(update={"answer": value, "overridden": True,
                                                 "history": [*answer.history, entry]}))
    return recompute(form, card.model_copy(update={"answers": changed}))


def carry_overrides(form: ScorecardForm, new: ScorecardResult, old: ScorecardResult) -> ScorecardResult:
    """A new automatic scoring (a reanalysed call) with the reviewers' answers of the old one kept, marked
    overridden, with their history; recomputed."""
    kept: dict[str, ScorecardAnswer] = {}
    for answer in old.answers:
        question = form.question(answer.question_id)
        if answer.overridden and question is not None and _still_an_answer(question, answer.answer):
            kept[answer.question_id] = answer
    answers = [a.model_copy(update={"answer": kept[a.question_id].answer, "overridden": True,
                                    "history": kept[a.question_id].history})
               if a.question_id in kept else a for a in new.answers]
    return recompute(form, new.model_copy(update={"answers": answers}))


def _still_an_answer(question: Question, answer: ScorecardAnswerValue) -> bool:
    """Whether a reviewer's answer is one the question (of a newer version of the form) still takes."""
    if answer is None:
        return False
    try:
        checked_answer(question, answer)
    except ValueError:
        return False
    return True
