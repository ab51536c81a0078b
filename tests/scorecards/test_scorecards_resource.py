"""The Scorecard resource in YAML (GitOps, `callscope apply`): applied beside its project, reconciled like a Project
(an id, conditions; idempotent), what it names checked against its projects as a condition, the same form in REST,
and the calls of its project scored with it; on both stores of the configuration objects."""

from __future__ import annotations

import pytest
import yaml

from callscope.errors import ValidationFailed
from callscope.operator.handlers import dependents, reconcile
from callscope.resources import Project, Scorecard
from callscope.services.apply import apply_documents, table
from tests.scorecards.conftest import CATEGORIES, FORM, GOALS

PROJECT = {"apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "support"},
           "spec": {"name": "Support", "language": "en", "goals": GOALS, "categories": CATEGORIES}}
FORM_YAML = """
apiVersion: callscope.io/v1alpha1
kind: Scorecard
metadata: {name: support-qa}
spec:
  name: Support QA
  projects: [support]
  sections:
    - name: Opening
      weight: 40
      questions:
        - {id: greeting, text: "Did the agent greet?", weight: 100, answer: {source: goal, goalId: 1}}
    - name: Handling
      weight: 60
      questions:
        - {id: billing, text: "A billing call?", weight: 50, answer: {source: category, name: billing}}
        - {id: resolved, text: "Solved?", weight: 50, autoFail: section, answer: {source: goal, goalId: 2}}
"""


@pytest.fixture(params=["sqlite", "kubernetes"])
def store_settings(request) -> dict:
    if request.param == "kubernetes":
        api = request.getfixturevalue("kube_api")
        return {"store": "kubernetes", "kubeconfig": api.kubeconfig}
    return {"store": "sqlite"}


async def reconciled(runtime, cls, name: str):
    await runtime.store.sync()
    obj = await reconcile(runtime.ctx, runtime.store.cached_get(cls, "default", name))
    await runtime.store.sync()
    return obj


def condition(obj, kind: str):
    return next(c for c in obj.status.conditions if c.type == kind)


async def test_a_form_applied_as_yaml_is_reconciled_shown_in_rest_and_scores_new_calls(runtime, client, admin, call):
    await apply_documents(runtime.ctx, [PROJECT, yaml.safe_load(FORM_YAML)], "default")
    project = await reconciled(runtime, Project, "support")
    form = await reconciled(runtime, Scorecard, "support-qa")
    assert form.status.id is not None and condition(form, "Ready").status == "True"
    assert await reconcile(runtime.ctx, form) == form  # idempotent: nothing more to write
    assert "Support QA v1 support" in table([form])

    got = (await client.get(f"/scorecards/{form.status.id}", headers=admin)).json()["data"]
    assert got["project_ids"] == [project.status.id] and got["version"] == 1
    assert [q["id"] for s in got["sections"] for q in s["questions"]] == ["greeting", "billing", "resolved"]

    public_id = await call(project.status.id, goals={1: True, 2: True})
    [card] = (await client.get(f"/recordings/{public_id}/scorecard", headers=admin)).json()["data"]
    assert card["scorecard_id"] == form.status.id and card["score"] == 100.0


async def test_what_a_form_names_that_its_project_lacks_is_a_condition_until_the_project_has_it(runtime):
    project = {**PROJECT, "spec": {**PROJECT["spec"], "goals": GOALS[:1]}}  # no goal 2
    await apply_documents(runtime.ctx, [project, yaml.safe_load(FORM_YAML)], "default")
    await reconciled(runtime, Project, "support")
    form = await reconciled(runtime, Scorecard, "support-qa")
    assert condition(form, "Ready").status == "False"
    resolved = condition(form, "ReferencesResolved")
    assert resolved.status == "False"
    assert "sections.1.questions.1.answer.goal_id: no goal 2 in project Support" in resolved.message

    await apply_documents(runtime.ctx, [PROJECT], "default")  # the project gains the goal
    changed = await reconciled(runtime, Project, "support")
    assert [d.name for d in dependents(runtime.ctx, changed)] == ["support-qa"]
    form = await reconciled(runtime, Scorecard, "support-qa")
    assert condition(form, "Ready").status == "True"


async def test_a_form_naming_a_missing_project_is_not_ready(runtime):
    await apply_documents(runtime.ctx, [yaml.safe_load(FORM_YAML)], "default")
    form = await reconciled(runtime, Scorecard, "support-qa")
    assert condition(form, "ReferencesResolved").message == "Project 'support' does not exist in account default"


async def test_callscope_apply_refuses_a_broken_form_with_its_path(runtime):
    broken = yaml.safe_load(FORM_YAML)
    broken["spec"]["sections"][0]["weight"] = 30
    broken["spec"]["sections"][1]["questions"][0]["answer"] = {"source": "category"}
    with pytest.raises(ValidationFailed) as refused:
        await apply_documents(runtime.ctx, [broken], "default")
    assert any("spec.sections.1.questions.0.answer.category.name" in e for e in refused.value.errors), \
        refused.value.errors
    assert runtime.store.cached_list(Scorecard, "default") == []


async def test_each_change_through_rest_is_a_new_version(runtime, client, admin, project):
    made = await client.post("/scorecards", json={"name": "QA", "project_ids": [project["id"]], "sections": FORM},
                             headers=admin)
    assert made.status_code == 201, made.text
    form_id = made.json()["data"]["id"]
    versions = [made.json()["data"]["version"]]
    for name in ("QA 2", "QA 3"):
        resp = await client.patch(f"/scorecards/{form_id}", json={"name": name}, headers=admin)
        versions.append(resp.json()["data"]["version"])
    assert versions == [1, 2, 3]
