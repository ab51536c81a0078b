"""The recording page's scorecards panel: each form the call was scored on, beside the transcript (its total, its
sections' scores, automatic fails, each answer with its evidence and its history). The account's reviewers and
admins override answers and mark the call reviewed there (recording_actions.ScorecardAction, through the service of
PATCH /recordings/{id}/scorecard); other members see the scores read-only."""

from __future__ import annotations

from dataclasses import dataclass

from callscope.analysis.readouts import RecordingScorecard
from callscope.analysis.result import ScorecardAnswer
from callscope.api import scorecard_reviews
from callscope.catalog.tables import Recording
from callscope.resources import Scorecard
from callscope.resources.scorecards import Question
from callscope.services import scope
from callscope.services.context import Context
from callscope.services.member_auth import SignedIn

NA = "n/a"


@dataclass(frozen=True)
class AnswerRow:
    """One answer as the panel shows it: the question (None where the form no longer has it: read-only), its
    section, and the answers a reviewer may choose (empty for a number question: typed)."""

    answer: ScorecardAnswer
    question: Question | None
    section: str
    choices: list[str]


@dataclass(frozen=True)
class CardView:
    card: RecordingScorecard
    rows: list[AnswerRow]
    form_exists: bool  # a form deleted since keeps its scores, read-only


@dataclass(frozen=True)
class ScorecardPanel:
    cards: list[CardView]
    may_review: bool


def _choices(question: Question) -> list[str]:
    if question.type == "yes_no":
        return ["yes", "no", NA]
    if question.type == "choice":
        return [o.value for o in question.options] + [NA]
    return []


def _card_view(card: RecordingScorecard, form: Scorecard | None) -> CardView:
    sections = ({p.question.id: form.spec.sections[p.section].name for p in form.spec.placed()}
                if form is not None else {})
    rows = []
    for answer in card.answers:
        question = form.spec.question(answer.question_id) if form is not None else None
        rows.append(AnswerRow(answer, question, sections.get(answer.question_id, ""),
                              _choices(question) if question is not None else []))
    return CardView(card, rows, form is not None)


async def scorecard_panel(ctx: Context, person: SignedIn, account: str, recording: Recording) -> ScorecardPanel:
    cards = await scorecard_reviews.of_recording(ctx, recording)
    return ScorecardPanel([_card_view(c, scope.by_id(ctx, Scorecard, account, c.scorecard_id)) for c in cards],
                          scorecard_reviews.may_review(person, account))
