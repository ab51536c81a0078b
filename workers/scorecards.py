"""Every analysis stored (workers/outcomes.py) scored against the QA forms attached to its call's project: the forms
from the store, the scores and the reviewers' overrides from the catalog, in the transaction that stores the
analysis (analysis/scorecards.py puts them together)."""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from sqlalchemy.orm import Session

from callscope.analysis import scorecards
from callscope.analysis.readouts import RecordingScorecard
from callscope.analysis.result import ScorecardResult
from callscope.analysis.stored import Completion
from callscope.catalog import scorecards as rows
from callscope.catalog.tables import Recording
from callscope.resources import Project
from callscope.resources.scorecards import ScorecardForm
from callscope.services import scope
from callscope.services.context import Context
from callscope.services.scorecards import forms_of_project

log = structlog.get_logger()


@dataclass(frozen=True)
class Scoring:
    """The scorecards of an analysis about to be stored, and the forms they were scored with (by id)."""

    cards: list[ScorecardResult]
    forms: dict[int, ScorecardForm]
    failed: bool = False  # scoring failed: the call's scores in the catalog (and review marks) are left as they are


def forms_for(ctx: Context, recording: Recording) -> list[scorecards.Form]:
    project = scope.by_id(ctx, Project, recording.account, recording.project_id)
    found = forms_of_project(ctx, recording.account, project.name) if project is not None else []
    return [scorecards.Form(f.status.id, f.spec.name, f.version, f.spec) for f in found if f.status.id is not None]


def scored(ctx: Context, recording: Recording, completion: Completion) -> tuple[Completion, Scoring]:
    """The call scored against its project's forms. A form that cannot score it (a bug, never the call's fault) is
    logged, and the analysis is stored without scorecards rather than lost."""
    forms = forms_for(ctx, recording)
    try:
        completion, cards = scorecards.score(forms, completion)
    except Exception:
        log.exception("scorecard_scoring_failed", recording_id=recording.id)
        return completion, Scoring([], {}, failed=True)
    return completion, Scoring(cards, {f.scorecard_id: f.form for f in forms})


def store_scores(session: Session, recording_id: int, scoring: Scoring) -> list[RecordingScorecard]:
    """In the transaction that stores the analysis: its scorecards with the reviewers' overrides kept (as the
    webhook sends them), and their scores for the review queue."""
    if scoring.failed:
        return []
    shown = scorecards.standing(scoring.cards, scoring.forms,
                                scorecards.overrides_of(rows.changes(session, recording_id)),
                                scorecards.marks_of(rows.of_recording(session, recording_id)))
    rows.record_scores(session, recording_id, [rows.Score(c.scorecard_id, c.score, c.auto_failed) for c in shown])
    return shown
