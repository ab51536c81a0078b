"""A project's `redaction` setting through GET, POST and PATCH /projects: read and written, validated with the
spec's `{errors}` 422, turned off with null, invisible to another account, and shown in the OpenAPI document. Every
test runs on both stores and both catalog databases."""

from __future__ import annotations

import pytest

from callscope.resources import Project
from callscope.services import scope
from tests.api.conftest import catalog_on_both

DEFAULTS = {"audio": True, "mode": "precise", "max_answer_seconds": 30}
ALL = ["payment_card", "bank_account", "national_id", "date_of_birth", "email", "phone_number", "person_name",
       "address"]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    return catalog_on_both(request)


async def test_redaction_is_off_by_default_and_set_on_create(client, admin, create_project, runtime):
    assert (await create_project("Plain"))["redaction"] is None
    made = await create_project("Payments", redaction={"entities": ["payment_card", "email"]})
    assert made["redaction"] == {"entities": ["payment_card", "email"], **DEFAULTS}  # audio: true by default
    got = (await client.get(f"/projects/{made['id']}", headers=admin)).json()["data"]
    assert got["redaction"] == made["redaction"]
    # the Project custom resource holds it as spec.redaction
    project = scope.by_id(runtime.ctx, Project, "default", made["id"])
    assert project.model_dump(by_alias=True, mode="json")["spec"]["redaction"] == {
        "entities": ["payment_card", "email"], "audio": True, "mode": "precise", "maxAnswerSeconds": 30}


async def test_patch_sets_replaces_and_null_turns_redaction_off(client, admin, create_project):
    made = await create_project()
    url = f"/projects/{made['id']}"
    strict = {"entities": ALL, "audio": False, "mode": "strict", "max_answer_seconds": 45}
    resp = await client.patch(url, json={"redaction": strict}, headers=admin)
    assert resp.status_code == 200 and resp.json()["data"]["redaction"] == strict
    resp = await client.patch(url, json={"name": "Renamed"}, headers=admin)  # other fields leave it alone
    assert resp.json()["data"]["redaction"] == strict
    resp = await client.patch(url, json={"redaction": {"entities": ["national_id"]}}, headers=admin)  # replaced whole
    assert resp.json()["data"]["redaction"] == {"entities": ["national_id"], **DEFAULTS}
    resp = await client.patch(url, json={"redaction": None}, headers=admin)
    assert resp.status_code == 200 and resp.json()["data"]["redaction"] is None
    assert (await client.get(url, headers=admin)).json()["data"]["redaction"] is None


@pytest.mark.parametrize(("redaction", "message"), [
    ({"entities": ["credit_card"]}, "redaction.entities.0 must be one of: " + ", ".join(ALL)),
    ({"entities": []}, "redaction.entities must not be empty"),
    ({"entities": ["email", "email"]}, "redaction.entities must not repeat an entity"),
    ({}, "redaction.entities is required"),
    ({"entities": "email"}, "redaction.entities must be an array"),
    ({"entities": [5]}, "redaction.entities.0 must be one of: " + ", ".join(ALL)),
    ({"entities": ["email"], "audio": "yes"}, "redaction.audio must be a boolean"),
    ({"entities": ["email"], "mode": "paranoid"}, "redaction.mode must be one of: precise, strict"),
    ({"entities": ["email"], "max_answer_seconds": 2},
     "redaction.max_answer_seconds must be greater than or equal to 5"),
    ({"entities": ["email"], "max_answer_seconds": 600},
     "redaction.max_answer_seconds must be less than or equal to 120"),
    ("on", "redaction must be an object"),
    (["email"], "redaction must be an object"),
])
async def test_bad_redaction_is_422_with_errors_on_create_and_patch(client, admin, create_project, redaction, message):
    resp = await client.post("/projects", json={"name": "X", "language": "en", "redaction": redaction}, headers=admin)
    assert resp.status_code == 422 and resp.json() == {"errors": [message]}
    made = await create_project(redaction={"entities": ["email"]})
    resp = await client.patch(f"/projects/{made['id']}", json={"redaction": redaction}, headers=admin)
    assert resp.status_code == 422 and resp.json() == {"errors": [message]}
    got = (await client.get(f"/projects/{made['id']}", headers=admin)).json()["data"]
    assert got["redaction"] == {"entities": ["email"], **DEFAULTS}  # unchanged


async def test_another_account_cannot_see_or_change_it(client, make_key, create_project):
    made = await create_project(redaction={"entities": ["payment_card"]})
    other = await make_key(account="other")
    assert (await client.get(f"/projects/{made['id']}", headers=other)).status_code == 404
    resp = await client.patch(f"/projects/{made['id']}", json={"redaction": None}, headers=other)
    assert resp.status_code == 404
    assert all(p["id"] != made["id"] for p in (await client.get("/projects", headers=other)).json()["data"])


async def test_the_openapi_document_shows_the_setting(client):
    document = (await client.get("/openapi.json")).json()
    schemas = document["components"]["schemas"]
    shape = schemas["ProjectRedaction"]
    assert shape["properties"]["entities"]["items"]["enum"] == ALL
    assert shape["properties"]["entities"]["minItems"] == 1 and shape["properties"]["entities"]["uniqueItems"]
    assert "redaction" in schemas["ProjectUpdate"]["properties"] and "redaction" in schemas["ProjectDetail"]["required"]


@pytest.mark.parametrize(("redaction", "state"), [
    ({"entities": ["payment_card"]}, "pending"), ({"entities": ["email"], "audio": False}, None), (None, None)])
async def test_an_upload_s_audio_waits_for_its_redaction_where_the_project_redacts_audio(
        client, admin, create_project, upload, wav, redaction, state):
    project = await create_project("Payments", redaction=redaction)
    resp = await upload(wav, project_id=project["id"])
    assert resp.status_code == 201 and resp.json()["data"]["audio_redaction"] == state
    public_id = resp.json()["data"]["public_id"]
    audio = await client.get(f"/recordings/{public_id}/audio_url", headers=admin)
    if state == "pending":  # not served before its redacted copy replaces it
        assert audio.status_code == 404
        assert audio.json() == {"error": "Audio is not available until its redacted copy is stored"}
    else:
        assert audio.status_code == 200 and audio.json()["data"]["url"]
    got = (await client.get(f"/recordings/{public_id}", headers=admin)).json()["data"]
    assert got["audio_redaction"] == state and got["audio_attached"] is True
