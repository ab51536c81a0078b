"""Every analysis stored (workers/outcomes.py) scored against the QA forms attached to its call's project: the forms
from the store, the scores and the reviewers' overrides from the catalog, in the transaction that stores the
analysis (analysis/scorecards.py puts them together).

And the rescoring pass (`rescore_changed`, every CALLSCOPE_SCORECARD_RESCORE_INTERVAL_SECONDS): a form changed (a
PATCH, or YAML applied: a new version) scores again, from their stored analyses, the calls of its projects scored
with an older version, RESCORE_BATCH per form and pass, each in its own transaction. Nothing is transcribed again and
no language model is asked (the llm questions keep the model's answers); reviewers' overrides stay, marked as such,
where the new version still takes them."""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from sqlalchemy.orm import Session

from callscope.analysis import scorecards
from callscope.analysis.readouts import RecordingScorecard
from callscope.analysis.result import ScorecardResult
from callscope.analysis.stored import Completion
from callscope.catalog import recordings as recording_rows
from callscope.catalog import scorecards as rows
from callscope.catalog.tables import Recording
from callscope.resources import Project, Scorecard
from callscope.resources.scorecards import ScorecardForm
from callscope.services import analyses, scope
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
    rows.record_scores(session, recording_id, [rows.score_of(c) for c in shown])
    return shown


RESCORE_BATCH = 100  # calls per form and pass: a form of a large project is rescored over a few passes


def _store_rescored(session: Session, recording_id: int, analysis_version: int, results: dict,
                    scoring: Scoring) -> bool:
    if not rows.replace_cards(session, recording_id, analysis_version, results):
        return False
    store_scores(session, recording_id, scoring)
    return True


async def rescore(ctx: Context, recording_id: int) -> bool:
    """The call scored again with its project's forms from its stored analysis; False where it has none (deleted,
    or its transcript gone) or a re-analysis stored a new one meanwhile."""
    recording = await ctx.catalog.read(recording_rows.by_id, recording_id)
    if recording is None:
        return False
    stored = await analyses.load_analysis(ctx, recording)
    if stored is None or stored.transcript is None:
        return False
    forms = forms_for(ctx, recording)
    results, cards = scorecards.score_results(forms, stored.results, stored.transcript)
    return await ctx.catalog.write(_store_rescored, recording_id, stored.row.version, results,
                                   Scoring(cards, {f.scorecard_id: f.form for f in forms}))


async def _rescore_form(ctx: Context, form: Scorecard) -> int:
    projects = [p.status.id for name in form.spec.projects
                if (p := scope.project_named(ctx, form.namespace, name)) is not None and p.status.id is not None]
    if form.status.id is None or not projects:
        return 0
    due = await ctx.catalog.read(rows.stale, form.namespace, projects, form.status.id, form.version, RESCORE_BATCH)
    done = 0
    for recording_id in due:
        try:
            done += await rescore(ctx, recording_id)
        except Exception:  # one call's failure holds up no other; the next pass tries it again
            log.exception("scorecard_rescoring_failed", recording_id=recording_id, scorecard_id=form.status.id)
    return done


async def rescore_changed(ctx: Context) -> int:
    """The rescoring pass over every form of every account: how many calls were scored again."""
    done = 0
    for form in list(ctx.store.cached_list(Scorecard)):
        done += await _rescore_form(ctx, form)
    if done:
        log.info("scorecards_rescored", calls=done)
    return done
