"""Recordings' scorecards as they stand, and reviews: reviewers' overrides of the answers (analysis/scorecards.py
puts the analysis's automatic answers and the overrides the catalog keeps together).

Who may review: an API key with the write permission (the operation table says so), or a member whose role is
reviewer or admin (`review_as_member`, for the recording page); another account's recording is not found, as for
any reader. A review runs in one catalog transaction, so two reviewers never lose one another's changes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.orm import Session

from callscope.analysis import scorecards
from callscope.analysis.readouts import RecordingScorecard
from callscope.analysis.result import ScorecardResult
from callscope.analysis.stages.scorecard import AnswerOverride
from callscope.catalog import scorecards as rows
from callscope.catalog.tables import Recording, ScorecardAnswerChange
from callscope.errors import Forbidden, ValidationFailed
from callscope.resources import Scorecard
from callscope.resources.scorecards import ScorecardForm
from callscope.services import analyses, recordings, scope
from callscope.services.context import Context, Principal
from callscope.services.member_auth import SignedIn, open_recording

REVIEWERS_ONLY = "Only the account's reviewers and admins may review calls"
REVIEW_ROLES = ("reviewer", "admin")


def _forms(ctx: Context, account: str, cards: Sequence[ScorecardResult]) -> dict[int, ScorecardForm]:
    found = (scope.by_id(ctx, Scorecard, account, c.scorecard_id) for c in cards)
    return {f.status.id: f.spec for f in found if f is not None and f.status.id is not None}


def _standing(session: Session, recording_id: int, cards: Sequence[ScorecardResult],
              forms: dict[int, ScorecardForm]) -> list[RecordingScorecard]:
    return scorecards.standing(cards, forms, scorecards.overrides_of(rows.changes(session, recording_id)),
                               scorecards.marks_of(rows.of_recording(session, recording_id)))


async def _cards(ctx: Context, recording: Recording) -> list[ScorecardResult]:
    analysis = await analyses.load_analysis(ctx, recording, transcript=False)
    return scorecards.stored_cards(analysis.results if analysis is not None else None)


async def of_recording(ctx: Context, recording: Recording, cards: Sequence[ScorecardResult] | None = None
                       ) -> list[RecordingScorecard]:
    """The recording's scorecards as they stand (empty before its first analysis). `cards`: its analysis's, where
    the caller read them already."""
    cards = await _cards(ctx, recording) if cards is None else cards
    if not cards:
        return []
    return await ctx.catalog.read(_standing, recording.id, cards, _forms(ctx, recording.account, cards))


async def recording_scorecards(ctx: Context, principal: Principal, ref: str) -> list[RecordingScorecard]:
    return await of_recording(ctx, (await recordings.get_recording(ctx, principal, ref)).recording)


@dataclass(frozen=True)
class Review:
    """What a reviewer sends: answers to override (each with a comment) and whether the call is now reviewed."""

    scorecard_id: int
    answers: list[AnswerOverride] = field(default_factory=list)
    reviewed: bool = False


def _review(session: Session, recording_id: int, card: ScorecardResult, form: ScorecardForm, review: Review,
            by: str, now: datetime) -> RecordingScorecard:
    """The card as it stands, the overrides applied (ValidationFailed naming each wrong answer: nothing written), the
    changes and the score stored, the reviewed mark set where asked."""
    forms = {card.scorecard_id: form}
    [current] = _standing(session, recording_id, [card], forms)
    after, overrides = scorecards.review(form, current, review.answers, by=by, at=now)
    rows.review(session, recording_id, rows.score_of(after), [
        ScorecardAnswerChange(recording_id=recording_id, scorecard_id=o.scorecard_id, question_id=o.question_id,
                              from_answer=json.dumps(o.change.from_answer), to_answer=json.dumps(o.change.to_answer),
                              comment=o.change.comment or None, changed_by=o.change.by, changed_at=o.change.at)
        for o in overrides], by if review.reviewed else None, now)
    [shown] = _standing(session, recording_id, [card], forms)
    return shown


def _reviewer(principal: Principal) -> str:
    """Who a history names: a member's email, or an API key's name."""
    return principal.key_name.removeprefix("member:")


async def review_as(ctx: Context, principal: Principal, ref: str, review: Review) -> RecordingScorecard:
    """Override answers of a recording's scorecard (and mark it reviewed): the scorecard recomputed."""
    recording = (await recordings.get_recording(ctx, principal, ref)).recording
    card = next((c for c in await _cards(ctx, recording) if c.scorecard_id == review.scorecard_id), None)
    if card is None:
        raise ValidationFailed(f"scorecard_id names no scorecard of this recording ({review.scorecard_id})")
    form = scope.by_id(ctx, Scorecard, recording.account, review.scorecard_id)
    if form is None:
        raise ValidationFailed(f"scorecard_id names a form that was deleted ({review.scorecard_id})")
    return await ctx.catalog.write(_review, recording.id, card, form.spec, review, _reviewer(principal), ctx.clock())


def may_review(person: SignedIn, account: str) -> bool:
    return any(m.namespace == account and m.spec.role in REVIEW_ROLES for m in person.members)


async def review_as_member(ctx: Context, person: SignedIn, ref: str, review: Review) -> RecordingScorecard:
    """A member's review (the recording page's): a recording of one of their accounts (any other is not found),
    where their role is reviewer or admin (Forbidden otherwise)."""
    principal, _ = await open_recording(ctx, person, ref)
    if not may_review(person, principal.account):
        raise Forbidden(REVIEWERS_ONLY)
    return await review_as(ctx, principal, ref, review)
