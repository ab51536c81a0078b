"""Rescoring when a form changes (workers/scorecards.py `rescore_changed`, the background pass every
CALLSCOPE_SCORECARD_RESCORE_INTERVAL_SECONDS), on SQLite and PostgreSQL: a PATCH makes a new version, and the pass
scores the calls of the form's projects again from their stored analyses (no job, no new analysis version, the same
transcript), the automatic answers recomputed and the reviewers' overrides kept, marked as such; calls scored before
versions were kept are scored again too (their Trends figures written); without a model, the language model's
answers of the call's earlier card are kept."""

from __future__ import annotations

import copy

import pytest
from sqlalchemy import select, update

from callscope.analysis import scorecards, stored
from callscope.catalog.tables import Analysis, Job, RecordingScorecard, RecordingScorecardPart
from callscope.workers.scorecards import rescore_changed
from tests.analysis.scripted_model import ScriptedModel
from tests.scorecards.conftest import FORM, recording_id
from tests.scorecards.test_scoring import LLM_FORM, call, form, q


@pytest.fixture
def catalog_settings(both_catalogs) -> dict:
    return both_catalogs


def changed_form() -> list[dict]:
    """FORM with Opening weighing 20 and Handling 80, and `resolved` no longer failing its section."""
    sections = copy.deepcopy(FORM)
    sections[0]["weight"], sections[1]["weight"] = 20, 80
    del sections[1]["questions"][1]["auto_fail"]
    return sections


def analysis_row(runtime, public_id: str) -> tuple[int, str]:
    with runtime.catalog.session() as session:
        row = session.get(Analysis, recording_id(runtime, public_id))
        return row.version, row.transcript_key


async def test_a_changed_form_rescores_its_calls_keeping_the_overrides(runtime, client, admin, project, call):
    made = await client.post("/scorecards", json={"name": "QA", "project_ids": [project["id"]], "sections": FORM},
                             headers=admin)
    form_id = made.json()["data"]["id"]
    public_id = await call(project["id"], goals={1: True, 2: False})
    override = {"scorecard_id": form_id, "answers": [{"question_id": "greeting", "answer": "no",
                                                      "comment": "No name."}]}
    reviewed = await client.patch(f"/recordings/{public_id}/scorecard", json=override, headers=admin)
    assert reviewed.json()["data"]["score"] == 0.0  # greeting overridden; Handling failed by `resolved`
    before = analysis_row(runtime, public_id)

    patched = await client.patch(f"/scorecards/{form_id}", json={"sections": changed_form()}, headers=admin)
    assert patched.json()["data"]["version"] == 2
    await runtime.store.sync()
    assert await rescore_changed(runtime.ctx) == 1

    [card] = (await client.get(f"/recordings/{public_id}/scorecard", headers=admin)).json()["data"]
    assert (card["version"], card["score"], card["auto_failed"]) == (2, 40.0, False)  # 0.2 * 0 + 0.8 * 50
    greeting = next(a for a in card["answers"] if a["question_id"] == "greeting")
    assert (greeting["answer"], greeting["automatic"], greeting["overridden"]) == ("no", "yes", True)
    assert greeting["history"][0]["comment"] == "No name."
    [result_card] = (await client.get(f"/recordings/{public_id}/results", headers=admin)).json()["data"]["scorecards"]
    assert result_card["version"] == 2 and result_card["score"] == 40.0
    assert analysis_row(runtime, public_id) == before  # nothing analysed or transcribed again
    with runtime.catalog.session() as session:
        assert session.scalars(select(Job.kind)).all() == ["analyze"]  # only the call's own analysis
        assert session.scalar(select(RecordingScorecard.version)) == 2
    assert await rescore_changed(runtime.ctx) == 0  # nothing left to rescore


async def test_calls_scored_before_versions_were_kept_are_scored_again(runtime, client, admin, project, call):
    made = await client.post("/scorecards", json={"name": "QA", "project_ids": [project["id"]], "sections": FORM},
                             headers=admin)
    public_id = await call(project["id"], goals={1: True, 2: True})
    rid = recording_id(runtime, public_id)

    def as_before_0018(session) -> None:
        session.execute(update(RecordingScorecard).values(version=None))
        session.query(RecordingScorecardPart).delete()

    await runtime.ctx.catalog.write(as_before_0018)
    assert await rescore_changed(runtime.ctx) == 1
    with runtime.catalog.session() as session:
        parts = {(p.kind, p.name): p.score for p in session.scalars(
            select(RecordingScorecardPart).where(RecordingScorecardPart.recording_id == rid))}
        assert session.scalar(select(RecordingScorecard.version)) == made.json()["data"]["version"]
    assert parts == {("section", "Opening"): 100.0, ("section", "Handling"): 100.0, ("question", "greeting"): 100.0,
                     ("question", "billing"): 100.0, ("question", "resolved"): 100.0}


def test_a_rescoring_keeps_the_language_models_answers():
    """Pure: the stored analysis scored again with a new version of its form, without a model."""
    asked = ScriptedModel(verdicts=[["yes", "no", "no"]])
    first = scorecards.Form(7, "QA", 1, form(*LLM_FORM))
    results, transcript = stored.documents(call())
    results, _ = scorecards.score_results([first], results, transcript, asked)
    second = scorecards.Form(7, "QA", 2, form(*LLM_FORM, q("billing", {"source": "category", "name": "billing"},
                                                           0)))
    _, [card] = scorecards.score_results([second], results, transcript)
    answers = {a.question_id: (a.answer, a.note) for a in card.answers}
    assert answers["refund"][0] == "yes" and answers["promise"][0] == "no" and answers["billing"][0] == "yes"
    assert card.version == 2 and card.score == 40.0
