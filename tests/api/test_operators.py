"""Operators: fields, initials, E.164 normalisation, uniqueness, scope and project links."""

from __future__ import annotations

import pytest

LIST_FIELDS = {"id", "name", "phone_number", "email", "active", "external_id", "initials", "virtual_numbers_count",
               "recording_project_ids"}


async def test_create_returns_200_with_the_spec_fields(client, admin):
    resp = await client.post("/operators", json={"name": "Jane Doe", "external_id": "crm-1",
                                                 "phone_number": "+14155552671", "email": "jane@example.com"},
                             headers=admin)
    assert resp.status_code == 200  # the spec documents 200, not 201
    data = resp.json()["data"]
    assert data["name"] == "Jane Doe" and data["external_id"] == "crm-1"
    assert data["phone_number"] == "+14155552671" and data["email"] == "jane@example.com"
    assert data["active"] is True and data["initials"] == "JD"
    assert data["recording_project_ids"] == [] and data["virtual_numbers"] == []


@pytest.mark.parametrize(("name", "initials"), [("Jane Doe", "JD"), ("jean claude van damme", "JD"),
                                                 ("Madonna", "MA"), ("Élodie Çelik", "ÉÇ")])
async def test_initials_derive_from_name(create_operator, name, initials):
    assert (await create_operator(name))["initials"] == initials


@pytest.mark.parametrize("raw", ["(415) 555-2671", "415.555.2671", "+1 415 555 2671", "1-415-555-2671"])
async def test_phone_number_is_normalised_to_e164(create_operator, raw):
    assert (await create_operator(phone_number=raw))["phone_number"] == "+14155552671"


@pytest.mark.parametrize(("body", "message"), [
    ({"name": ""}, "Name can't be blank"),
    ({}, "Name can't be blank"),
    ({"name": "A", "phone_number": "12"}, "Phone number is invalid"),
    ({"name": "A", "phone_number": "not a phone"}, "Phone number is invalid"),
])
async def test_create_validation(client, admin, body, message):
    resp = await client.post("/operators", json=body, headers=admin)
    assert resp.status_code == 422
    assert message in resp.json()["errors"]


async def test_external_id_is_unique_per_account(client, admin, make_key, create_operator):
    await create_operator(external_id="crm-7")
    resp = await client.post("/operators", json={"name": "B", "external_id": "crm-7"}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["External has already been taken"]})
    other_account = await make_key(account="other")
    assert (await client.post("/operators", json={"name": "B", "external_id": "crm-7"},
                              headers=other_account)).status_code == 200


async def test_phone_number_is_unique_per_account_after_normalisation(client, admin, create_operator):
    await create_operator(phone_number="+14155552671")
    resp = await client.post("/operators", json={"name": "B", "phone_number": "(415) 555-2671"}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["Phone number has already been taken"]})


async def test_create_with_project_id_links(client, admin, create_project, create_operator):
    project = await create_project()
    assert (await create_operator(project_id=project["id"]))["recording_project_ids"] == [project["id"]]


async def test_create_with_unknown_project_is_404_project_not_found(client, admin):
    resp = await client.post("/operators", json={"name": "A", "project_id": 999}, headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Project not found"})


async def test_scoped_key_creates_and_auto_links(client, make_key, create_project):
    project = await create_project()
    scoped = await make_key(project_id=project["id"])
    resp = await client.post("/operators", json={"name": "A"}, headers=scoped)
    assert resp.status_code == 200
    assert resp.json()["data"]["recording_project_ids"] == [project["id"]]


async def test_scoped_key_with_another_project_id_is_403(client, make_key, create_project):
    one, two = await create_project("One"), await create_project("Two")
    scoped = await make_key(project_id=one["id"])
    resp = await client.post("/operators", json={"name": "A", "project_id": two["id"]}, headers=scoped)
    assert (resp.status_code, resp.json()) == (403, {"error": "project_id does not match this API key's project"})


async def test_list_is_sorted_by_name_and_includes_unlinked_for_account_keys(client, admin, create_project,
                                                                             create_operator):
    project = await create_project()
    await create_operator("zed", project_id=project["id"])
    await create_operator("Amy")
    data = (await client.get("/operators", headers=admin)).json()["data"]
    assert [o["name"] for o in data] == ["Amy", "zed"]
    assert all(set(o) == LIST_FIELDS for o in data)
    assert data[0]["recording_project_ids"] == [] and data[1]["recording_project_ids"] == [project["id"]]


async def test_scoped_key_lists_only_linked_operators(client, make_key, create_project, create_operator):
    project = await create_project()
    linked = await create_operator("Linked", project_id=project["id"])
    await create_operator("Unlinked")
    scoped = await make_key(project_id=project["id"])
    assert [o["id"] for o in (await client.get("/operators", headers=scoped)).json()["data"]] == [linked["id"]]


async def test_get_and_scoped_404_for_unlinked(client, admin, make_key, create_project, create_operator):
    project = await create_project()
    operator = await create_operator()
    assert (await client.get(f"/operators/{operator['id']}", headers=admin)).json()["data"] == operator
    scoped = await make_key(project_id=project["id"])
    resp = await client.get(f"/operators/{operator['id']}", headers=scoped)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})


async def test_update_changes_only_supplied_fields_and_null_email_clears(client, admin, create_operator):
    operator = await create_operator(email="a@example.com", external_id="x1")
    resp = await client.patch(f"/operators/{operator['id']}",
                              json={"email": None, "phone_number": "415-555-2671", "active": False}, headers=admin)
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data["email"] is None and data["phone_number"] == "+14155552671" and data["active"] is False
    assert data["name"] == operator["name"] and data["external_id"] == "x1"


async def test_update_validation(client, admin, create_operator):
    first = await create_operator("A", phone_number="+14155552671")
    second = await create_operator("B")
    resp = await client.patch(f"/operators/{second['id']}", json={"phone_number": "+1 415 555 2671"}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["Phone number has already been taken"]})
    resp = await client.patch(f"/operators/{second['id']}", json={"phone_number": "999"}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["Phone number is invalid"]})
    resp = await client.patch(f"/operators/{second['id']}", json={"name": " "}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["Name can't be blank"]})
    # re-saving one's own number is not a conflict
    assert (await client.patch(f"/operators/{first['id']}", json={"phone_number": "+14155552671"},
                               headers=admin)).status_code == 200


async def test_scoped_key_update_of_unlinked_operator_is_404(client, make_key, create_project, create_operator):
    project = await create_project()
    operator = await create_operator()
    scoped = await make_key(project_id=project["id"])
    assert (await client.patch(f"/operators/{operator['id']}", json={"name": "X"}, headers=scoped)).status_code == 404


async def test_add_project_links_idempotently(client, admin, create_project, create_operator):
    project = await create_project()
    operator = await create_operator()
    for _ in range(2):
        resp = await client.post(f"/operators/{operator['id']}/add_project", json={"project_id": project["id"]},
                                 headers=admin)
        assert resp.status_code == 200
        assert resp.json()["data"]["recording_project_ids"] == [project["id"]]
        assert "virtual_numbers" in resp.json()["data"]


@pytest.mark.parametrize("method,suffix", [("POST", "add_project"), ("DELETE", "remove_project")])
async def test_link_rules(client, admin, make_key, create_project, create_operator, method, suffix):
    one, two = await create_project("One"), await create_project("Two")
    operator = await create_operator(project_id=one["id"])
    url = f"/operators/{operator['id']}/{suffix}"
    resp = await client.request(method, url, json={}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["project_id is required for account-wide API keys"]})
    resp = await client.request(method, url, json={"project_id": 999}, headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Project not found"})
    scoped = await make_key(project_id=one["id"])
    resp = await client.request(method, url, json={"project_id": two["id"]}, headers=scoped)
    assert (resp.status_code, resp.json()) == (403, {"error": "project_id does not match this API key's project"})
    resp = await client.request(method, f"/operators/999/{suffix}", json={"project_id": one["id"]}, headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})


async def test_remove_project_takes_project_id_from_query_or_body_and_keeps_operator(client, admin, create_project,
                                                                                     create_operator):
    one, two = await create_project("One"), await create_project("Two")
    operator = await create_operator(project_id=one["id"])
    await client.post(f"/operators/{operator['id']}/add_project", json={"project_id": two["id"]}, headers=admin)
    resp = await client.delete(f"/operators/{operator['id']}/remove_project", params={"project_id": one["id"]},
                               headers=admin)
    assert resp.json()["data"]["recording_project_ids"] == [two["id"]]
    resp = await client.request("DELETE", f"/operators/{operator['id']}/remove_project",
                                json={"project_id": two["id"]}, headers=admin)
    assert resp.status_code == 200 and resp.json()["data"]["recording_project_ids"] == []
    assert (await client.get(f"/operators/{operator['id']}", headers=admin)).status_code == 200


async def test_scoped_key_may_omit_project_id_on_links(client, make_key, create_project, create_operator):
    project = await create_project()
    operator = await create_operator(project_id=project["id"])
    scoped = await make_key(project_id=project["id"])
    resp = await client.post(f"/operators/{operator['id']}/add_project", headers=scoped)
    assert resp.status_code == 200 and resp.json()["data"]["recording_project_ids"] == [project["id"]]
    resp = await client.delete(f"/operators/{operator['id']}/remove_project", headers=scoped)
    assert resp.status_code == 200 and resp.json()["data"]["recording_project_ids"] == []


async def test_concurrent_creates_with_one_external_id_make_one_operator(client, admin):
    import asyncio

    responses = await asyncio.gather(*(client.post("/operators", json={"name": f"P{i}", "external_id": "dup"},
                                                   headers=admin) for i in range(6)))
    assert sorted(r.status_code for r in responses) == [200] + [422] * 5


async def test_two_api_processes_cannot_both_create_one_external_id(runtime, settings, admin):
    import asyncio

    import httpx

    from callscope.api.app import create_app
    from callscope.runtime import Runtime
    from tests.api.conftest import BASE

    other = Runtime(settings)
    await other.start(background=False)
    try:
        apps = [create_app(rt.ctx, rt.usage) for rt in (runtime, other)]
        clients = [httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) for app in apps]
        responses = await asyncio.gather(*(clients[i % 2].post("/operators", json={"name": f"P{i}", "external_id": "x"},
                                                               headers=admin) for i in range(6)))
        for http in clients:
            await http.aclose()
    finally:
        await other.stop()
    assert sorted(r.status_code for r in responses) == [200] + [422] * 5
