"""QA forms through the REST API, on SQLite and PostgreSQL: created, read, changed (a new version each time) and
deleted as projects are; every analysed call of an attached project scored (its results, its scorecard, the webhook);
each refusal with its path; reviewers' overrides recomputing the score with their history, kept over a reanalysis;
account isolation and project-scoped keys."""

from __future__ import annotations

import copy
import json

import pytest
from sqlalchemy import select

from callscope.catalog.tables import RecordingScorecard, ScorecardAnswerChange, WebhookEvent
from callscope.resources import Project
from callscope.resources.kinds import Webhook
from callscope.services import scope
from callscope.services.objects import change_spec
from tests.scorecards.conftest import FORM, question, section


@pytest.fixture
def catalog_settings(both_catalogs) -> dict:
    return both_catalogs


@pytest.fixture
def create_form(client, admin):
    async def create(project_ids: list[int], sections=FORM, name: str = "Support QA", headers=None) -> dict:
        resp = await client.post("/scorecards", json={"name": name, "project_ids": project_ids, "sections": sections},
                                 headers=headers or admin)
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]
    return create


def answers(card: dict) -> dict[str, object]:
    return {a["question_id"]: a["answer"] for a in card["answers"]}


# ----- the form ------------------------------------------------------------------------------------------------------

async def test_a_form_is_created_read_listed_changed_with_a_new_version_and_deleted(client, admin, project,
                                                                                   create_form):
    made = await create_form([project["id"]])
    assert made["version"] == 1 and made["project_ids"] == [project["id"]] and made["name"] == "Support QA"
    assert made["sections"][1]["questions"][1]["auto_fail"] == "section"
    assert made["review"] == {"calls_per_agent": 5, "period": "month", "below_score": 60.0}
    got = (await client.get(f"/scorecards/{made['id']}", headers=admin)).json()["data"]
    assert got == made
    assert [f["id"] for f in (await client.get("/scorecards", headers=admin)).json()["data"]] == [made["id"]]

    changed = await client.patch(f"/scorecards/{made['id']}", json={"name": "QA v2"}, headers=admin)
    assert changed.status_code == 200, changed.text
    assert changed.json()["data"]["version"] == 2 and changed.json()["data"]["sections"] == made["sections"]
    same = await client.patch(f"/scorecards/{made['id']}", json={"name": "QA v2"}, headers=admin)
    assert same.json()["data"]["version"] == 2  # nothing changed: no new version

    assert (await client.delete(f"/scorecards/{made['id']}", headers=admin)).status_code == 204
    assert (await client.get(f"/scorecards/{made['id']}", headers=admin)).status_code == 404


async def test_deleting_a_project_takes_it_off_its_forms(client, admin, project, analysed_project, create_form):
    other = await analysed_project("Sales")
    made = await create_form([project["id"], other["id"]])
    assert (await client.delete(f"/projects/{other['id']}", headers=admin)).status_code == 204
    assert (await client.get(f"/scorecards/{made['id']}", headers=admin)).json()["data"]["project_ids"] == \
        [project["id"]]


BAD = [
    ([section("A", 50, question("q", 100, {"source": "pauses"}))],
     "sections: the weights of the form's sections must add up to 100 (they add up to 50)"),
    ([section("A", 100, question("q", 101, {"source": "pauses"}))],
     "sections.0.questions.0.weight must be less than or equal to 100"),
    ([section("A", 100, question("q", 100, {"source": "goal"}))],
     "sections.0.questions.0.answer.goal_id is required"),
    ([section("A", 100, question("q", 100, {"source": "telepathy"}))],
     "sections.0.questions.0.answer"),
    ([section("A", 100, question("a", 50, {"source": "pauses"}, applies_when={"question": "b"}),
              question("b", 50, {"source": "pauses"}, applies_when={"question": "a"}))],
     "sections.0.questions.0.applies_when.question: conditions form a cycle: a -> b -> a"),
    ([section("A", 100, question("q", 100, {"source": "goal", "goal_id": 7}))],
     "sections.0.questions.0.answer.goal_id: no goal 7 in project Support"),
    ([section("A", 100, question("q", 100, {"source": "category", "name": "shipping"}))],
     "sections.0.questions.0.answer.name: no category shipping in project Support"),
    ([section("A", 100, question("q", 100, {"source": "field", "name": "contract"}))],
     "sections.0.questions.0.answer.name: no field contract in project Support"),
    ([section("A", 100, question("q", 100, {"source": "pauses"}, applies_when={"category": "vip"}))],
     "sections.0.questions.0.applies_when.category: no category vip in project Support"),
    ([section("A", 100, *[question(f"q{i}", 1 if i else 100 - 200, {"source": "pauses"}) for i in range(201)])],
     "sections.0.questions must have at most 50 items"),
]


@pytest.mark.parametrize("sections, message", BAD)
async def test_each_refusal_names_its_path(client, admin, project, sections, message):
    resp = await client.post("/scorecards", json={"name": "QA", "project_ids": [project["id"]], "sections": sections},
                             headers=admin)
    assert resp.status_code == 422, resp.text
    assert any(e.startswith(message) for e in resp.json()["errors"]), resp.json()["errors"]
    assert (await client.get("/scorecards", headers=admin)).json()["data"] == []


async def test_refusals_of_the_request_itself(client, admin, project):
    for body, message in [
        ({"project_ids": [project["id"]], "sections": FORM}, "name is required"),
        ({"name": "QA", "project_ids": [project["id"]]}, "sections is required"),
        ({"name": "QA", "project_ids": [project["id"]], "sections": []}, "sections must not be empty"),
        ({"name": "QA", "project_ids": [project["id"]], "sections": FORM * 11}, "sections must have at most 20 items"),
    ]:
        resp = await client.post("/scorecards", json=body, headers=admin)
        assert resp.status_code == 422 and message in resp.json()["errors"], (body.keys(), resp.text)
    assert (await client.post("/scorecards", json={"name": "QA", "project_ids": [999], "sections": FORM},
                              headers=admin)).status_code == 404


# ----- scoring -------------------------------------------------------------------------------------------------------

async def test_every_analysed_call_of_an_attached_project_is_scored(client, admin, project, create_form, call,
                                                                   runtime):
    form = await create_form([project["id"]])
    public_id = await call(project["id"], goals={1: True, 2: False})
    results = (await client.get(f"/recordings/{public_id}/results", headers=admin)).json()["data"]
    [card] = results["scorecards"]
    assert (card["scorecard_id"], card["name"], card["version"]) == (form["id"], "Support QA", 1)
    assert answers(card) == {"greeting": "yes", "billing": "yes", "resolved": "no"}
    assert card["auto_failed"] is True  # resolved: no fails its section
    assert [(s["name"], s["score"]) for s in card["sections"]] == [("Opening", 100.0), ("Handling", 0.0)]
    assert card["score"] == 40.0
    assert card["reviewed_by"] is None and not any(a["overridden"] for a in card["answers"])
    got = (await client.get(f"/recordings/{public_id}/scorecard", headers=admin)).json()["data"]
    assert got == results["scorecards"]
    with runtime.catalog.session() as session:  # the review queue's figures
        row = session.scalar(select(RecordingScorecard))
        assert (row.scorecard_id, row.score, row.auto_failed) == (form["id"], 40.0, True)


async def test_a_project_without_forms_has_no_scorecards(client, admin, project, call):
    public_id = await call(project["id"], goals={1: True, 2: True})
    assert (await client.get(f"/recordings/{public_id}/results", headers=admin)).json()["data"]["scorecards"] == []
    assert (await client.get(f"/recordings/{public_id}/scorecard", headers=admin)).json()["data"] == []


async def test_the_webhook_carries_the_scorecards(client, admin, project, create_form, call, runtime):
    form = await create_form([project["id"]])
    stored = scope.by_id(runtime.ctx, Project, "default", project["id"])

    def hook(draft: Project) -> None:
        draft.spec.webhook = Webhook(url="https://hooks.example.com/calls", sections=["metadata", "scorecards"])

    await change_spec(runtime.ctx, stored, hook)
    await runtime.store.sync()
    public_id = await call(project["id"], goals={1: True, 2: True})
    with runtime.catalog.session() as session:
        event = session.scalar(select(WebhookEvent))
        body = json.loads(event.payload) if isinstance(event.payload, str) else event.payload
    [card] = body["data"]["scorecards"]
    assert card["scorecard_id"] == form["id"] and card["score"] == 100.0
    assert card == (await client.get(f"/recordings/{public_id}/scorecard", headers=admin)).json()["data"][0]


# ----- review ---------------------------------------------------------------------------------------------------------

async def test_an_override_recomputes_the_score_keeps_the_automatic_answer_and_the_history(client, admin, project,
                                                                                         create_form, call, runtime):
    form = await create_form([project["id"]])
    public_id = await call(project["id"], goals={1: True, 2: False})
    resp = await client.patch(f"/recordings/{public_id}/scorecard", headers=admin, json={
        "scorecard_id": form["id"], "reviewed": True,
        "answers": [{"question_id": "resolved", "answer": "yes", "comment": "Refund issued: solved."}]})
    assert resp.status_code == 200, resp.text
    card = resp.json()["data"]
    assert card["score"] == 100.0 and card["auto_failed"] is False
    resolved = next(a for a in card["answers"] if a["question_id"] == "resolved")
    assert (resolved["answer"], resolved["automatic"], resolved["overridden"]) == ("yes", "no", True)
    [entry] = resolved["history"]
    assert (entry["by"], entry["from_answer"], entry["to_answer"], entry["comment"]) == \
        ("key-1", "no", "yes", "Refund issued: solved.")
    assert card["reviewed_by"] == "key-1" and card["reviewed_at"] is not None

    again = await client.patch(f"/recordings/{public_id}/scorecard", headers=admin, json={
        "scorecard_id": form["id"], "answers": [{"question_id": "resolved", "answer": "n/a", "comment": "Unclear."}]})
    resolved = next(a for a in again.json()["data"]["answers"] if a["question_id"] == "resolved")
    assert [(h["from_answer"], h["to_answer"]) for h in resolved["history"]] == [("no", "yes"), ("yes", "n/a")]
    assert again.json()["data"]["score"] == 100.0  # n/a leaves the question out
    shown = (await client.get(f"/recordings/{public_id}/results", headers=admin)).json()["data"]["scorecards"][0]
    assert shown == again.json()["data"]
    with runtime.catalog.session() as session:
        assert session.scalar(select(RecordingScorecard.score)) == 100.0
        assert len(session.scalars(select(ScorecardAnswerChange)).all()) == 2


async def test_a_reanalysis_keeps_the_overrides_marked_as_such(client, admin, project, create_form, call, reanalyse):
    form = await create_form([project["id"]])
    public_id = await call(project["id"], goals={1: True, 2: False})
    await client.patch(f"/recordings/{public_id}/scorecard", headers=admin, json={
        "scorecard_id": form["id"], "answers": [{"question_id": "greeting", "answer": "no", "comment": "No name."}]})
    await reanalyse(public_id, goals={1: True, 2: True})  # the new analysis finds the problem solved
    card = (await client.get(f"/recordings/{public_id}/scorecard", headers=admin)).json()["data"][0]
    greeting = next(a for a in card["answers"] if a["question_id"] == "greeting")
    assert (greeting["answer"], greeting["automatic"], greeting["overridden"]) == ("no", "yes", True)
    assert [h["comment"] for h in greeting["history"]] == ["No name."]
    assert answers(card)["resolved"] == "yes" and card["score"] == 60.0  # Opening 0 (the override), Handling 100


@pytest.mark.parametrize("body, message", [
    ({"scorecard_id": 0, "answers": []}, "scorecard_id names no scorecard of this recording (0)"),
    ({"answers": []}, "scorecard_id is required"),
    ({"scorecard_id": "FORM", "answers": [{"question_id": "greeting", "answer": "maybe"}]},
     "answers.0.answer must be yes, no or n/a"),
    ({"scorecard_id": "FORM", "answers": [{"question_id": "nope", "answer": "yes"}]},
     "answers.0.question_id names no question of the form (nope)"),
])
async def test_a_wrong_override_is_refused_and_changes_nothing(client, admin, project, create_form, call, runtime,
                                                              body, message):
    form = await create_form([project["id"]])
    public_id = await call(project["id"], goals={1: True, 2: False})
    body = copy.deepcopy(body)
    if body.get("scorecard_id") == "FORM":
        body["scorecard_id"] = form["id"]
    resp = await client.patch(f"/recordings/{public_id}/scorecard", headers=admin, json=body)
    assert resp.status_code == 422 and message in resp.json()["errors"], resp.text
    with runtime.catalog.session() as session:
        assert session.scalars(select(ScorecardAnswerChange)).all() == []


# ----- who sees and changes what -------------------------------------------------------------------------------------

async def test_keys_need_write_to_review_and_project_keys_see_their_own_forms(client, admin, make_key, project,
                                                                              analysed_project, create_form, call):
    other = await analysed_project("Sales")
    mine = await create_form([project["id"]], name="Mine")
    theirs = await create_form([other["id"]], name="Theirs")
    shared = await create_form([project["id"], other["id"]], name="Shared")
    scoped = await make_key(project_id=project["id"])
    listed = (await client.get("/scorecards", headers=scoped)).json()["data"]
    assert [f["name"] for f in listed] == ["Mine", "Shared"]
    assert next(f for f in listed if f["name"] == "Shared")["project_ids"] == [project["id"]]  # not the other one
    assert (await client.get(f"/scorecards/{theirs['id']}", headers=scoped)).status_code == 404
    assert (await client.patch(f"/scorecards/{theirs['id']}", json={"name": "x"}, headers=scoped)).status_code == 404
    refused = await client.patch(f"/scorecards/{shared['id']}", json={"name": "x"}, headers=scoped)
    assert refused.status_code == 403 and "their own project alone" in refused.json()["error"]
    assert (await client.patch(f"/scorecards/{mine['id']}", json={"name": "Mine 2"}, headers=scoped)).status_code == 200
    made = await client.post("/scorecards", json={"name": "Scoped", "sections": FORM}, headers=scoped)
    assert made.status_code == 201 and made.json()["data"]["project_ids"] == [project["id"]]
    other_project = await client.post("/scorecards", json={"name": "No", "project_ids": [other["id"]],
                                                           "sections": FORM}, headers=scoped)
    assert other_project.status_code == 403

    public_id = await call(project["id"], goals={1: True, 2: True})
    reader = await make_key("read")
    assert (await client.get(f"/recordings/{public_id}/scorecard", headers=reader)).status_code == 200
    refused = await client.patch(f"/recordings/{public_id}/scorecard", headers=reader, json={
        "scorecard_id": mine["id"], "answers": [{"question_id": "greeting", "answer": "no"}]})
    assert refused.status_code == 403 and refused.json()["error"] == "Write permission required"
    assert (await client.post("/scorecards", json={"name": "R", "sections": FORM, "project_ids": [project["id"]]},
                              headers=reader)).status_code == 403
    other_call = await call(other["id"], goals={1: True, 2: True})
    assert (await client.get(f"/recordings/{other_call}/scorecard", headers=scoped)).status_code == 404
    assert (await client.patch(f"/recordings/{other_call}/scorecard", headers=scoped, json={
        "scorecard_id": theirs["id"], "answers": []})).status_code == 404


async def test_another_accounts_key_finds_neither_forms_nor_scorecards(client, admin, make_key, project, create_form,
                                                                       call):
    form = await create_form([project["id"]])
    public_id = await call(project["id"], goals={1: True, 2: True})
    stranger = await make_key(account="other")
    assert (await client.get("/scorecards", headers=stranger)).json()["data"] == []
    for method, path, body in [("GET", f"/scorecards/{form['id']}", None),
                               ("PATCH", f"/scorecards/{form['id']}", {"name": "x"}),
                               ("DELETE", f"/scorecards/{form['id']}", None),
                               ("GET", f"/recordings/{public_id}/scorecard", None),
                               ("PATCH", f"/recordings/{public_id}/scorecard",
                                {"scorecard_id": form["id"], "answers": [{"question_id": "greeting", "answer": "n"}]})]:
        resp = await client.request(method, path, json=body, headers=stranger)
        assert resp.status_code == 404, (method, path, resp.text)
    assert (await client.post("/scorecards", json={"name": "x", "project_ids": [project["id"]], "sections": FORM},
                              headers=stranger)).status_code == 404
