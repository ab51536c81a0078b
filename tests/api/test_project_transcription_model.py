"""A project's `transcription.model`: one of the site's Whisper models (CALLSCOPE_WHISPER_MODELS) by name, through
GET, POST and PATCH /projects, `callscope apply` and the reconciler. A name the site does not configure is refused
with the spec's `{errors}` 422 (and by apply) naming the site's models; one applied past them (kubectl) leaves the
project not Ready with that message. Every test runs on both stores and both catalog databases."""

from __future__ import annotations

import pytest

from callscope.errors import ValidationFailed
from callscope.operator.handlers import reconcile
from callscope.resources import ObjectMeta, Project, ProjectSpec
from callscope.resources.kinds import TranscriptionSpec
from callscope.services import scope
from callscope.services.apply import apply_documents
from callscope.store.factory import build_secret_store
from tests.api.conftest import catalog_on_both

UNKNOWN = ("transcription.model 'huge' is not a transcription model of this site: it has large, small "
           "(CALLSCOPE_WHISPER_MODELS)")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    return catalog_on_both(request)


@pytest.fixture
def settings_overrides() -> dict:
    return {"whisper_models": {"large": "/models/whisper-large-v3", "small": "/models/small"}}


async def test_a_project_names_a_site_model_and_null_is_the_default(client, admin, create_project, runtime):
    assert (await create_project("Plain"))["transcription"] is None
    made = await create_project("Payments", transcription={"model": "large"})
    assert made["transcription"] == {"model": "large"}
    url = f"/projects/{made['id']}"
    assert (await client.get(url, headers=admin)).json()["data"]["transcription"] == {"model": "large"}
    project = scope.by_id(runtime.ctx, Project, "default", made["id"])
    assert project.model_dump(by_alias=True, mode="json")["spec"]["transcription"] == {"model": "large"}
    resp = await client.patch(url, json={"transcription": {"model": "small"}}, headers=admin)
    assert resp.status_code == 200 and resp.json()["data"]["transcription"] == {"model": "small"}
    resp = await client.patch(url, json={"transcription": None}, headers=admin)
    assert resp.status_code == 200 and resp.json()["data"]["transcription"] is None


@pytest.mark.parametrize(("transcription", "message"), [
    ({"model": "huge"}, UNKNOWN),
    ({"model": "a b"}, "transcription.model has an invalid format"),
    ({"model": 5}, "transcription.model must be a string"),
    ("large", "transcription must be an object"),
])
async def test_a_model_the_site_lacks_is_422_on_create_and_patch(client, admin, create_project, transcription,
                                                                 message):
    resp = await client.post("/projects", json={"name": "X", "language": "en", "transcription": transcription},
                             headers=admin)
    assert resp.status_code == 422 and resp.json() == {"errors": [message]}
    made = await create_project(transcription={"model": "large"})
    resp = await client.patch(f"/projects/{made['id']}", json={"transcription": transcription}, headers=admin)
    assert resp.status_code == 422 and resp.json() == {"errors": [message]}
    got = (await client.get(f"/projects/{made['id']}", headers=admin)).json()["data"]
    assert got["transcription"] == {"model": "large"}  # unchanged


async def test_another_account_cannot_see_or_change_it(client, make_key, create_project):
    made = await create_project(transcription={"model": "large"})
    other = await make_key(account="other")
    assert (await client.get(f"/projects/{made['id']}", headers=other)).status_code == 404
    resp = await client.patch(f"/projects/{made['id']}", json={"transcription": None}, headers=other)
    assert resp.status_code == 404


def _document(name: str, model: str) -> dict:
    return {"apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": name},
            "spec": {"name": name.title(), "language": "en", "transcription": {"model": model}}}


async def test_apply_refuses_a_model_the_site_lacks_and_writes_nothing(runtime):
    with pytest.raises(ValidationFailed) as refused:
        await apply_documents(runtime.ctx, [_document("fine", "large"), _document("typo", "huge")], "default")
    assert refused.value.errors == [f"Project typo: {UNKNOWN}"]
    await runtime.store.sync()
    assert runtime.store.cached_list(Project, "default") == []  # a bad file changes nothing
    [(applied, _)] = await apply_documents(runtime.ctx, [_document("fine", "large")], "default")
    assert applied.spec.transcription_model == "large"


async def test_a_project_applied_past_the_check_is_not_ready_and_says_why(runtime):
    """kubectl writes to the API server directly: the reconciler says what is wrong (a model the site dropped
    since reads the same)."""
    spec = ProjectSpec(name="Typo", language="en", transcription=TranscriptionSpec(model="huge"))
    await runtime.store.create(Project(metadata=ObjectMeta(name="typo", namespace="default"), spec=spec))
    await runtime.store.sync()
    current = runtime.store.cached_get(Project, "default", "typo")
    done = await reconcile(runtime.ctx, current, build_secret_store(runtime.ctx.settings))
    ready = next(c for c in done.status.conditions if c.type == "Ready")
    assert (ready.status, ready.reason, ready.message) == ("False", "UnresolvedReferences", UNKNOWN)
