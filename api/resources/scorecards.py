"""/scorecards, /scorecards/{id} (QA forms) and /recordings/{id}/scorecard (a call's scorecards and their review)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ValidationError

from callscope.api import schemas as s
from callscope.api import scorecard_reviews
from callscope.api.body import messages, parse_json, parse_query
from callscope.api.resources.base import Resource, data, principal_of
from callscope.api.routing import operation
from callscope.errors import ValidationFailed
from callscope.resources import Scorecard
from callscope.resources.scorecards import SOURCES, ScorecardForm
from callscope.services import scope, scorecard_queue, scorecards
from callscope.services.context import Context, Principal

_SCOPE_CHANGE = ("Creates forms of its own project only (it may leave out project_ids); changes or deletes only the "
                 "forms attached to its own project alone (403 for a form other projects share); other forms are 404.")
_FORM_ERRORS = ("A field is invalid or missing, a rule of the form is broken (weights that do not add up to 100, a "
                "repeated question id, a condition cycle, an answer source that cannot answer its question type, "
                "sizes over the limits), or a goal, category or field a question names is missing from an attached "
                "project; each error names its path (`sections.0.questions.1.weight ...`).")


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


class _Errors:
    """A ValidationError's errors in the REST API's words: the answer source's tag left out of each path (pydantic
    puts the variant of a discriminated union in it: `answer.goal.goal_id` reads `answer.goal_id`, as sent), and
    each field snake_case (the resource model names a missing one by its YAML alias, `goalId`)."""

    def __init__(self, exc: ValidationError):
        self.exc = exc

    def errors(self) -> list[Any]:
        out = []
        for error in self.exc.errors():
            loc = list(error["loc"])
            for i, part in enumerate(loc[:-1]):
                if part == "answer" and loc[i + 1] in SOURCES:
                    del loc[i + 1]
                    break
            out.append({**error, "loc": tuple(_CAMEL.sub("_", p).lower() if isinstance(p, str) else p for p in loc)})
        return out


def _form(body: s.ScorecardUpdate) -> dict[str, Any]:
    """The supplied form fields, validated by the resource's own model (the CRD's and `callscope apply`'s rules)."""
    out: dict[str, Any] = {}
    if body.sections is not None:
        try:
            out["sections"] = ScorecardForm.model_validate({"sections": body.sections}).model_dump()["sections"]
        except ValidationError as exc:
            raise ValidationFailed(messages(_Errors(exc))) from None  # type: ignore[arg-type]
    if body.review is not None:
        out["review"] = body.review.model_dump()
    if body.name is not None:
        out["name"] = body.name.strip()
        if not out["name"]:
            raise ValidationFailed("Name can't be blank")
    return out


def detail(ctx: Context, principal: Principal, form: Scorecard) -> s.ScorecardDetail:
    created = form.metadata.creation_timestamp
    ids = (scope.project_id_of(ctx, form.namespace, name) for name in form.spec.projects
           if scope.project_visible(principal, name))
    return s.ScorecardDetail(
        id=form.status.id, name=form.spec.name, version=form.version, project_ids=sorted(i for i in ids if i),
        sections=form.spec.model_dump(mode="json", include={"sections"})["sections"],
        review=s.ScorecardReview(**form.spec.review.model_dump()), created_at=created,
        updated_at=form.status.updated_at or created)


class ScorecardCollection(Resource):
    @operation("List QA forms (scorecards), ordered by name", "read", response=s.ScorecardList, errors=(401, 403),
               name="listScorecards",
               scope="Sees the forms attached to its project only.")
    async def on_get(self, req, resp):
        principal = principal_of(req)
        resp.media = data([detail(self.ctx, principal, f) for f in scorecards.list_scorecards(self.ctx, principal)])

    @operation("Create a QA form (scorecard)", "write", body=s.ScorecardCreate, response=s.Scorecard, status=201,
               errors=(400, 401, 403, 404, 422),
               name="createScorecard",
               description=("Creates a QA form: sections of weighted questions, each answered automatically from what "
                            "the analysis found (a goal, a category, pauses, talk share, interruptions, the longest "
                            "silence or hold, the customer's emotion, an extracted field, a question to the language "
                            "model) or by a reviewer only. Every call of the attached projects analysed from then on "
                            "is scored with it (its results' `scorecards`). The same form can be applied as YAML "
                            "(`kind: Scorecard`, `spec.projects` naming the projects)."),
               scope=_SCOPE_CHANGE,
               error_notes={404: "A project_ids entry names no project the key can see.", 422: _FORM_ERRORS})
    async def on_post(self, req, resp):
        body = await parse_json(req, s.ScorecardCreate, self.body_limit)
        fields = _form(body)
        errors = [f"{key} is required" for key in ("name", "sections") if not fields.get(key)]
        if errors:
            raise ValidationFailed(errors)
        principal = principal_of(req)
        name = fields.pop("name")
        form = await scorecards.create_scorecard(self.ctx, principal, fields, name, body.project_ids)
        resp.status = 201
        resp.media = data(detail(self.ctx, principal, form))


class ScorecardItem(Resource):
    @operation("Get a QA form (scorecard)", "read", response=s.Scorecard, errors=(401, 403, 404),
               name="getScorecard",
               scope="Sees the forms attached to its project only; others are 404.",
               error_notes={404: "No form of that id the key can see."})
    async def on_get(self, req, resp, id: int):
        principal = principal_of(req)
        resp.media = data(detail(self.ctx, principal, scorecards.get_scorecard(self.ctx, principal, id)))

    @operation("Update a QA form (only supplied fields change, each replaced whole)", "write",
               body=s.ScorecardUpdate, response=s.Scorecard, errors=(400, 401, 403, 404, 422),
               name="updateScorecard",
               description=("Changes the supplied fields; `sections`, `review` and `project_ids` are replaced whole. "
                            "Each change makes a new `version`; calls analysed afterwards are scored with it, calls "
                            "scored before keep the version they were scored with until analysed again."),
               scope=_SCOPE_CHANGE,
               error_notes={404: "No form of that id the key can see, or a project_ids entry names no project it can "
                                 "see.", 422: _FORM_ERRORS})
    async def on_patch(self, req, resp, id: int):
        body = await parse_json(req, s.ScorecardUpdate, self.body_limit)
        principal = principal_of(req)
        form = await scorecards.update_scorecard(self.ctx, principal, id, _form(body), body.project_ids)
        resp.media = data(detail(self.ctx, principal, form))

    @operation("Delete a QA form (scorecard)", "write", status=204, errors=(401, 403, 404),
               name="deleteScorecard",
               description=("Deletes the form. Calls scored with it keep their scores (and reviewers' overrides) "
                            "until analysed again."),
               scope=_SCOPE_CHANGE,
               error_notes={404: "No form of that id the key can see."})
    async def on_delete(self, req, resp, id: int):
        await scorecards.delete_scorecard(self.ctx, principal_of(req), id)
        resp.status = 204


class ScorecardQueue(Resource):
    @operation("A QA form's review queue for a period", "read", response=s.ScorecardQueue,
               query=s.ScorecardQueueQuery, errors=(401, 403, 404, 422),
               name="getScorecardQueue",
               description=("The calls of the form's projects waiting for review in one period (the form's "
                            "`review.period`: a week from Monday or a month, UTC), and those reviewed, by whom: per "
                            "project and agent a random sample of `review.calls_per_agent` calls, the same all the "
                            "period (the period's calls already reviewed count first), plus every call that failed "
                            "automatically or scored below `review.below_score`."),
               scope="Lists its own project's calls only.",
               error_notes={404: "No form of that id the key can see, or project_id names none of its projects.",
                            422: "on or project_id is invalid."})
    async def on_get(self, req, resp, id: int):
        query = parse_query(req, s.ScorecardQueueQuery)
        start, end, calls = await scorecard_queue.queue(self.ctx, principal_of(req), id, query.on, query.project_id)
        resp.media = data(s.ScorecardQueueDetail(period_start=start, period_end=end, calls=[
            s.QueuedCall(**dict(vars(w.call)), reasons=w.reasons) for w in calls]))


class RecordingScorecards(Resource):
    @operation("A recording's scorecards, with reviewers' overrides (empty until the analysis has completed)",
               "read", response=s.RecordingScorecardList, errors=(401, 403, 404),
               name="getRecordingScorecards",
               description=("The call scored against each QA form of its project: each answer with its evidence "
                            "(quotes with their times, or the figure it came from), the points it earns, whether a "
                            "reviewer overrode it (the automatic answer and the history kept), each section's score, "
                            "the total in percent and automatic fails; who marked it reviewed."),
               error_notes={404: "No recording of that id the key can see."})
    async def on_get(self, req, resp, id: str):
        cards: list[BaseModel] = [*await scorecard_reviews.recording_scorecards(self.ctx, principal_of(req), id)]
        resp.media = data(cards)

    @operation("Review a recording's scorecard: override answers, mark it reviewed", "write",
               body=s.ScorecardReviewBody, response=s.RecordingScorecardReviewed, errors=(400, 401, 403, 404, 422),
               name="reviewRecordingScorecard",
               description=("Overrides answers of one of the recording's scorecards (each with a comment) and answers "
                            "the scorecard recomputed. Each override is kept in the answer's history (who, when, from, "
                            "to, comment); the automatic answer is never lost, and a reanalysis keeps the overrides. "
                            "`reviewed: true` marks the scorecard reviewed by the caller."),
               error_notes={404: "No recording of that id the key can see.",
                            422: "scorecard_id names no scorecard of the recording (or a deleted form), or an answer "
                                 "is not one its question takes (`answers.0.answer must be yes, no or n/a`)."})
    async def on_patch(self, req, resp, id: str):
        body = await parse_json(req, s.ScorecardReviewBody, self.body_limit)
        if body.scorecard_id is None:
            raise ValidationFailed("scorecard_id is required")
        review = scorecard_reviews.Review(body.scorecard_id, list(body.answers), body.reviewed)
        resp.media = data(await scorecard_reviews.review_as(self.ctx, principal_of(req), id, review))
