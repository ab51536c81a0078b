"""A call's scorecards as they stand: the automatic ones of its analysis (analysis/stages/scorecard.py scores them
when the analysis is stored) with reviewers' overrides put over them. Pure: the catalog keeps the overrides (one row
per change: who, when, from, to, comment) and the review marks, and hands them in here; the automatic answers stay in
the analysis document, so an override never loses one, and a reanalysed call keeps its overrides the same way."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from callscope.analysis import stored
from callscope.analysis.readouts import RecordingScorecard
from callscope.analysis.result import AnswerChange, ScorecardAnswerValue, ScorecardResult
from callscope.analysis.stages.scorecard import (
    LLM_NOTE_NO_MODEL,
    AnswerOverride,
    apply_overrides,
    checked_answer,
    recompute,
    score_call,
)
from callscope.analysis.stored import Completion
from callscope.resources.scorecards import Question, ScorecardForm


@dataclass(frozen=True)
class Form:
    """A form as a call is scored with it: its id, name, version and questions."""

    scorecard_id: int
    name: str
    version: int
    form: ScorecardForm


@dataclass(frozen=True)
class Override:
    """A reviewer's change of one answer, as the catalog keeps it."""

    scorecard_id: int
    question_id: str
    change: AnswerChange


@dataclass(frozen=True)
class Mark:
    """Who marked a call's scorecard reviewed, and when (None: nobody yet)."""

    by: str | None = None
    at: datetime | None = None


def score(forms: Sequence[Form], completion: Completion, llm: Any | None = None
          ) -> tuple[Completion, list[ScorecardResult]]:
    """The completion with its call scored against each form (its results document's ``scorecards``)."""
    results, cards = score_results(forms, completion.results, completion.transcript, llm)
    return replace(completion, results=results), cards


def score_results(forms: Sequence[Form], results: dict[str, Any], transcript: dict[str, Any] | None,
                  llm: Any | None = None) -> tuple[dict[str, Any], list[ScorecardResult]]:
    """An analysis's documents scored against each form: the results document with its ``scorecards``, and the
    cards. A card the analysis scored with the form's version is kept (with the language model's answers); a form
    made or changed since is scored here, from what the analysis found; without `llm`, its ``llm`` questions keep
    the model's answers of the analysis's card of the same form (a rescoring asks no model)."""
    if not forms:
        return {**results, "scorecards": []}, []
    result = stored.read(results, transcript)
    done = {(c.scorecard_id, c.version): c for c in result.scorecards}
    earlier = {c.scorecard_id: c for c in result.scorecards}
    cards = []
    for f in forms:
        card = done.get((f.scorecard_id, f.version))
        if card is None:
            card = score_call(f.form, result, scorecard_id=f.scorecard_id, name=f.name, version=f.version, llm=llm)
            if llm is None and f.scorecard_id in earlier:
                card = _model_answers_kept(f.form, card, earlier[f.scorecard_id])
        cards.append(card)
    return {**results, "scorecards": [c.model_dump(mode="json") for c in cards]}, cards


def _model_answers_kept(form: ScorecardForm, card: ScorecardResult, earlier: ScorecardResult) -> ScorecardResult:
    """The card with the language model's answers of an earlier card of the same call kept, for the questions the
    model would have been asked (answered n/a for want of a model) that it answered then."""
    asked = {a.question_id: a for a in earlier.answers if a.source == "llm" and a.note != LLM_NOTE_NO_MODEL}
    answers = [a.model_copy(update={name: getattr(asked[a.question_id], name)
                                    for name in ("answer", "automatic", "evidence", "note")})
               if a.source == "llm" and a.note == LLM_NOTE_NO_MODEL and a.question_id in asked else a
               for a in card.answers]
    return recompute(form, card.model_copy(update={"answers": answers}))


def stored_cards(results: dict[str, Any] | None) -> list[ScorecardResult]:
    """The scorecards of an analysis document (none in one stored before scorecards)."""
    return [ScorecardResult.model_validate(c) for c in (results or {}).get("scorecards", [])]


def _takes(question: Question, value: ScorecardAnswerValue) -> bool:
    """Whether an override is still an answer the question (of a later version of the form) takes."""
    if value is None:
        return False
    try:
        checked_answer(question, value)
    except ValueError:
        return False
    return True


def _with_overrides(form: ScorecardForm, card: ScorecardResult, history: dict[str, list[AnswerChange]]
                    ) -> ScorecardResult:
    answers = []
    for answer in card.answers:
        changes = history.get(answer.question_id)
        question = form.question(answer.question_id)
        if changes and question is not None and _takes(question, changes[-1].to_answer):
            answer = answer.model_copy(update={"answer": changes[-1].to_answer, "overridden": True,
                                               "history": changes})
        answers.append(answer)
    return recompute(form, card.model_copy(update={"answers": answers}))


def standing(cards: Sequence[ScorecardResult], forms: dict[int, ScorecardForm], overrides: Sequence[Override],
             marks: dict[int, Mark]) -> list[RecordingScorecard]:
    """The cards with the latest override of each question put over them, recomputed with their form (a card whose
    form is gone, or that has no override, shows as it was scored), and their review marks. `overrides`: oldest
    first."""
    history: dict[int, dict[str, list[AnswerChange]]] = defaultdict(lambda: defaultdict(list))
    for o in overrides:
        history[o.scorecard_id][o.question_id].append(o.change)
    out = []
    for card in cards:
        form = forms.get(card.scorecard_id)
        if form is not None and card.scorecard_id in history:
            card = _with_overrides(form, card, history[card.scorecard_id])
        mark = marks.get(card.scorecard_id, Mark())
        out.append(RecordingScorecard(**dict(card), reviewed_by=mark.by, reviewed_at=mark.at))
    return out


def review(form: ScorecardForm, card: RecordingScorecard, answers: Sequence[AnswerOverride], *, by: str,
           at: datetime) -> tuple[ScorecardResult, list[Override]]:
    """A reviewer's answers over a card as it stands: the card recomputed, and the overrides to keep (ValidationFailed
    naming each wrong answer, from analysis/stages/scorecard.py)."""
    after = apply_overrides(form, card, answers, by=by, at=at)
    chosen = {a.question_id for a in answers}
    return after, [Override(card.scorecard_id, a.question_id, a.history[-1])
                   for a in after.answers if a.question_id in chosen]


def overrides_of(rows: Sequence[Any]) -> list[Override]:
    """The catalog's rows of answers' changes (callscope/catalog/tables.py ScorecardAnswerChange: the answers as
    JSON), oldest first, as overrides."""
    return [Override(r.scorecard_id, r.question_id, AnswerChange(
        by=r.changed_by, at=r.changed_at, from_answer=json.loads(r.from_answer), to_answer=json.loads(r.to_answer),
        comment=r.comment or "")) for r in rows]


def marks_of(rows: dict[int, Any]) -> dict[int, Mark]:
    """The catalog's recording_scorecards rows by form id, as review marks."""
    return {form: Mark(r.reviewed_by, r.reviewed_at) for form, r in rows.items()}
