"""Projects: every field, form, ordering, scope rule and error of the spec."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from callscope.catalog.tables import ApiKeyUsage, Call

SHORT_FIELDS = {"id", "name", "language", "industry", "created_at", "updated_at"}
DETAIL_FIELDS = SHORT_FIELDS | {
    "description", "goal_language", "summary_language", "long_pause_threshold_seconds", "transcription_hints",
    "retention_days", "quality_baseline_enabled", "quality_baseline_pct", "recordings_count", "virtual_numbers_count",
    "redaction", "trackers", "live", "transcription",
}


async def test_create_returns_201_and_the_detail_form(client, admin):
    body = {"name": "Support", "language": "de", "description": "Inbound", "industry": "retail",
            "long_pause_threshold_seconds": 8, "transcription_hints": "Callscope", "retention_days": 30,
            "quality_baseline_pct": 75.5}
    resp = await client.post("/projects", json=body, headers=admin)
    assert resp.status_code == 201
    data = resp.json()["data"]
    assert set(data) == DETAIL_FIELDS
    assert {k: data[k] for k in body} == body
    assert data["recordings_count"] == 0 and data["virtual_numbers_count"] == 0
    assert data["quality_baseline_enabled"] is False
    assert isinstance(data["id"], int)


async def test_goal_and_summary_language_default_to_language(create_project):
    data = await create_project(language="fr")
    assert data["goal_language"] == "fr" and data["summary_language"] == "fr"


@pytest.mark.parametrize(("body", "message"), [
    ({"language": "en"}, "Name can't be blank"),
    ({"name": "   ", "language": "en"}, "Name can't be blank"),
    ({"name": "X"}, "Language can't be blank"),
    ({"name": "X", "language": "en", "quality_baseline_pct": 101},
     "quality_baseline_pct must be less than or equal to 100"),
    ({"name": "X", "language": "en", "quality_baseline_pct": -1},
     "quality_baseline_pct must be greater than or equal to 0"),
    ({"name": "X", "language": "en", "retention_days": 0}, "retention_days must be greater than or equal to 1"),
    ({"name": "X", "language": "en", "retention_days": 36_501}, "retention_days must be less than or equal to 36500"),
    ({"name": "X", "language": "en", "long_pause_threshold_seconds": 0},
     "long_pause_threshold_seconds must be greater than or equal to 1"),
    ({"name": 5, "language": "en"}, "name must be a string"),
    ({"name": "X", "language": "en", "retention_days": "ten"}, "retention_days must be an integer"),
    ({"name": "X", "language": "en", "quality_baseline_enabled": "yes"}, "quality_baseline_enabled must be a boolean"),
])
async def test_create_validation_is_422_with_errors(client, admin, body, message):
    resp = await client.post("/projects", json=body, headers=admin)
    assert resp.status_code == 422
    assert message in resp.json()["errors"]


async def test_all_validation_errors_are_reported_together(client, admin):
    resp = await client.post("/projects", json={}, headers=admin)
    assert resp.status_code == 422
    assert resp.json() == {"errors": ["Name can't be blank", "Language can't be blank"]}


@pytest.mark.parametrize("body", [b"{not json", b"\t", b" \r\n"])
async def test_malformed_json_is_400(client, admin, body):
    resp = await client.post("/projects", content=body, headers={**admin, "Content-Type": "application/json"})
    assert resp.status_code == 400
    assert resp.json() == {"error": "Malformed JSON in request body"}


async def test_body_that_is_not_an_object_is_422(client, admin):
    resp = await client.post("/projects", json=[1, 2], headers=admin)
    assert resp.status_code == 422
    assert resp.json() == {"errors": ["Request body must be a JSON object"]}


async def test_oversized_body_is_413(client, admin, settings):
    resp = await client.post("/projects", json={"name": "x" * settings.max_json_body_bytes, "language": "en"},
                             headers=admin)
    assert resp.status_code == 413
    assert "error" in resp.json()


async def test_list_is_ordered_by_name_in_short_form(client, admin, create_project):
    for name in ("beta", "Alpha", "gamma"):
        await create_project(name)
    resp = await client.get("/projects", headers=admin)
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert [p["name"] for p in data] == ["Alpha", "beta", "gamma"]
    assert all(set(p) == SHORT_FIELDS for p in data)


async def test_project_scoped_key_lists_only_its_project(client, make_key, create_project):
    await create_project("One")
    two = await create_project("Two")
    scoped = await make_key(project_id=two["id"])
    assert [p["id"] for p in (await client.get("/projects", headers=scoped)).json()["data"]] == [two["id"]]


async def test_get_returns_detail_form(client, admin, create_project):
    project = await create_project()
    resp = await client.get(f"/projects/{project['id']}", headers=admin)
    assert resp.status_code == 200
    assert resp.json()["data"] == project


async def test_get_missing_is_404(client, admin):
    resp = await client.get("/projects/424242", headers=admin)
    assert resp.status_code == 404
    assert resp.json() == {"error": "Resource not found"}


async def test_scoped_key_cannot_see_another_project(client, make_key, create_project):
    one, two = await create_project("One"), await create_project("Two")
    scoped = await make_key(project_id=one["id"])
    assert (await client.get(f"/projects/{two['id']}", headers=scoped)).status_code == 404


async def test_scoped_key_cannot_create_or_delete_projects(client, make_key, create_project):
    project = await create_project()
    scoped = await make_key(project_id=project["id"])
    message = {"error": "Project-scoped API keys cannot create or destroy projects"}
    resp = await client.post("/projects", json={"name": "N", "language": "en"}, headers=scoped)
    assert (resp.status_code, resp.json()) == (403, message)
    resp = await client.delete(f"/projects/{project['id']}", headers=scoped)
    assert (resp.status_code, resp.json()) == (403, message)


async def test_update_changes_only_supplied_fields(client, admin, create_project):
    project = await create_project(description="keep me", retention_days=10)
    resp = await client.patch(f"/projects/{project['id']}", json={"name": "Renamed", "retention_days": None},
                              headers=admin)
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["name"] == "Renamed" and data["retention_days"] is None
    assert data["description"] == "keep me" and data["language"] == project["language"]
    assert data["updated_at"] >= project["updated_at"]


async def test_update_blank_name_is_422(client, admin, create_project):
    project = await create_project()
    resp = await client.patch(f"/projects/{project['id']}", json={"name": ""}, headers=admin)
    assert resp.status_code == 422
    assert resp.json() == {"errors": ["Name can't be blank"]}


async def test_scoped_key_updates_own_project_and_gets_404_for_others(client, make_key, create_project):
    one, two = await create_project("One"), await create_project("Two")
    scoped = await make_key(project_id=one["id"])
    assert (await client.patch(f"/projects/{one['id']}", json={"industry": "x"}, headers=scoped)).status_code == 200
    resp = await client.patch(f"/projects/{two['id']}", json={"industry": "x"}, headers=scoped)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})


async def test_update_missing_is_404(client, admin):
    assert (await client.patch("/projects/999", json={"name": "x"}, headers=admin)).status_code == 404


async def test_delete_is_204_with_empty_body_and_then_gone(client, admin, create_project):
    project = await create_project()
    resp = await client.delete(f"/projects/{project['id']}", headers=admin)
    assert resp.status_code == 204 and resp.content == b""
    assert (await client.get(f"/projects/{project['id']}", headers=admin)).status_code == 404


async def test_delete_missing_is_404(client, admin):
    resp = await client.delete("/projects/999", headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})


async def test_delete_cascades_to_tags_numbers_links_and_scoped_keys(client, admin, make_key, create_project,
                                                                     create_operator, runtime):
    project = await create_project()
    keep = await create_project("Keep")
    operator = await create_operator(project_id=project["id"])
    await client.post(f"/operators/{operator['id']}/add_project", json={"project_id": keep["id"]}, headers=admin)
    tag = (await client.post("/tags", json={"name": "vip", "project_id": project["id"]}, headers=admin)).json()["data"]
    scoped = await make_key(project_id=project["id"])
    runtime.ctx.settings.virtual_number_purchase_paused = False
    candidate = (await client.get("/virtual_numbers/available", headers=admin)).json()["data"][0]
    number = (await client.post("/virtual_numbers/purchase", json={"phone_number": candidate["phone_number"]},
                                headers=scoped)).json()["data"]

    with runtime.ctx.catalog.session() as session:  # a call the number took, and the scoped key's usage
        session.add(Call(account="default", virtual_number_id=number["id"], phone_number="+14155550100",
                         call_status="completed", call_duration=30, direction="inbound",
                         created_at=runtime.ctx.clock()))
    await runtime.usage.flush()
    with runtime.ctx.catalog.session() as session:
        assert {u.key_name for u in session.scalars(select(ApiKeyUsage))} == {"key-1", "key-2"}  # admin, scoped

    assert (await client.delete(f"/projects/{project['id']}", headers=admin)).status_code == 204

    with runtime.ctx.catalog.session() as session:  # the dependent records went with it, the admin key's stayed
        assert session.scalars(select(Call).where(Call.virtual_number_id == number["id"])).all() == []
        assert {u.key_name for u in session.scalars(select(ApiKeyUsage))} == {"key-1"}
    assert (await client.get(f"/virtual_numbers/{number['id']}", headers=admin)).status_code == 404
    assert (await client.get("/tags", params={"project_id": project["id"]}, headers=admin)).status_code == 404
    assert tag["id"] not in [t["id"] for t in (await client.get("/tags", params={"project_id": keep["id"]},
                                                                   headers=admin)).json()["data"]]
    op = (await client.get(f"/operators/{operator['id']}", headers=admin)).json()["data"]
    assert op["recording_project_ids"] == [keep["id"]]
    assert (await client.get("/projects", headers=scoped)).status_code == 401


async def test_virtual_numbers_count_counts_the_projects_numbers(client, admin, make_key, create_project, runtime):
    project = await create_project()
    scoped = await make_key(project_id=project["id"])
    runtime.ctx.settings.virtual_number_purchase_paused = False
    candidates = (await client.get("/virtual_numbers/available", headers=admin)).json()["data"]
    for c in candidates[:2]:
        resp = await client.post("/virtual_numbers/purchase", json={"phone_number": c["phone_number"]}, headers=scoped)
        assert resp.status_code == 201
    data = (await client.get(f"/projects/{project['id']}", headers=admin)).json()["data"]
    assert data["virtual_numbers_count"] == 2
