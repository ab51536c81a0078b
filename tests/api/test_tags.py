"""Tags: scope rules, name rules, idempotent create, palette colours, delete."""

from __future__ import annotations

from callscope.services.tags import PALETTE


async def test_list_requires_project_id_for_account_wide_keys(client, admin):
    resp = await client.get("/tags", headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["project_id is required for account-wide API keys"]})


async def test_list_unknown_project_is_404(client, admin):
    resp = await client.get("/tags", params={"project_id": 999}, headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Project not found"})


async def test_scoped_key_may_omit_project_id_but_not_pass_another(client, make_key, create_project):
    one, two = await create_project("One"), await create_project("Two")
    scoped = await make_key(project_id=one["id"])
    await client.post("/tags", json={"name": "mine"}, headers=scoped)
    resp = await client.get("/tags", headers=scoped)
    assert resp.status_code == 200 and [t["name"] for t in resp.json()["data"]] == ["mine"]
    resp = await client.get("/tags", params={"project_id": two["id"]}, headers=scoped)
    assert (resp.status_code, resp.json()) == (403, {"error": "project_id does not match this API key's project"})
    resp = await client.post("/tags", json={"name": "x", "project_id": two["id"]}, headers=scoped)
    assert (resp.status_code, resp.json()) == (403, {"error": "project_id does not match this API key's project"})


async def test_create_returns_201_with_fields_and_list_orders_by_name(client, admin, create_project):
    project = await create_project()
    created = []
    for name in ("zeta", "Alpha", "mid"):
        resp = await client.post("/tags", json={"name": name, "project_id": project["id"]}, headers=admin)
        assert resp.status_code == 201
        created.append(resp.json()["data"])
    assert set(created[0]) == {"id", "name", "color", "project_id", "recordings_count"}
    assert created[0]["project_id"] == project["id"] and created[0]["recordings_count"] == 0
    listed = (await client.get("/tags", params={"project_id": project["id"]}, headers=admin)).json()["data"]
    assert [t["name"] for t in listed] == ["Alpha", "mid", "zeta"]


async def test_create_strips_whitespace(client, admin, create_project):
    project = await create_project()
    resp = await client.post("/tags", json={"name": "  vip  ", "project_id": project["id"]}, headers=admin)
    assert resp.json()["data"]["name"] == "vip"


async def test_create_is_idempotent_on_name_case_insensitively(client, admin, create_project):
    project = await create_project()
    first = (await client.post("/tags", json={"name": "VIP", "project_id": project["id"]},
                               headers=admin)).json()["data"]
    resp = await client.post("/tags", json={"name": " vip ", "project_id": project["id"]}, headers=admin)
    assert resp.status_code == 200
    assert resp.json()["data"] == first


async def test_same_name_in_another_project_is_another_tag(client, admin, create_project):
    one, two = await create_project("One"), await create_project("Two")
    a = await client.post("/tags", json={"name": "vip", "project_id": one["id"]}, headers=admin)
    b = await client.post("/tags", json={"name": "vip", "project_id": two["id"]}, headers=admin)
    assert a.status_code == b.status_code == 201 and a.json()["data"]["id"] != b.json()["data"]["id"]


async def test_name_is_required(client, admin, create_project):
    project = await create_project()
    for body in ({"project_id": project["id"]}, {"name": "", "project_id": project["id"]},
                 {"name": "   ", "project_id": project["id"]}):
        resp = await client.post("/tags", json=body, headers=admin)
        assert (resp.status_code, resp.json()) == (422, {"errors": ["name is required"]})


async def test_create_rules_on_project_id(client, admin):
    resp = await client.post("/tags", json={"name": "x"}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["project_id is required for account-wide API keys"]})
    resp = await client.post("/tags", json={"name": "x", "project_id": 999}, headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Project not found"})


async def test_colours_come_from_the_palette_distinct_for_ten_and_cannot_be_set(client, admin, create_project):
    project = await create_project()
    colours = []
    for i in range(11):
        resp = await client.post("/tags", json={"name": f"t{i}", "project_id": project["id"], "color": "#000000"},
                                 headers=admin)
        colours.append(resp.json()["data"]["color"])
    assert all(c in PALETTE for c in colours)
    assert len(set(colours[:10])) == 10
    assert "#000000" not in colours


async def test_palette_is_per_project(client, admin, create_project):
    one, two = await create_project("One"), await create_project("Two")
    a = (await client.post("/tags", json={"name": "a", "project_id": one["id"]}, headers=admin)).json()["data"]
    b = (await client.post("/tags", json={"name": "b", "project_id": two["id"]}, headers=admin)).json()["data"]
    assert a["color"] == b["color"] == PALETTE[0]


async def test_delete_is_204_and_removes_the_tag(client, admin, create_project):
    project = await create_project()
    tag = (await client.post("/tags", json={"name": "x", "project_id": project["id"]}, headers=admin)).json()["data"]
    resp = await client.delete(f"/tags/{tag['id']}", headers=admin)
    assert resp.status_code == 204 and resp.content == b""
    assert (await client.get("/tags", params={"project_id": project["id"]}, headers=admin)).json()["data"] == []
    assert (await client.delete(f"/tags/{tag['id']}", headers=admin)).status_code == 404


async def test_scoped_key_cannot_delete_another_projects_tag(client, admin, make_key, create_project):
    one, two = await create_project("One"), await create_project("Two")
    tag = (await client.post("/tags", json={"name": "x", "project_id": two["id"]}, headers=admin)).json()["data"]
    scoped = await make_key(project_id=one["id"])
    resp = await client.delete(f"/tags/{tag['id']}", headers=scoped)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})


async def test_concurrent_creates_of_one_name_make_one_tag(client, admin, create_project):
    import asyncio

    project = await create_project()
    responses = await asyncio.gather(*(client.post("/tags", json={"name": "Race", "project_id": project["id"]},
                                                   headers=admin) for _ in range(8)))
    assert sorted(r.status_code for r in responses) == [200] * 7 + [201]
    assert len({r.json()["data"]["id"] for r in responses}) == 1


async def test_two_api_processes_creating_one_tag_make_one_tag(runtime, settings, admin, create_project):
    """Separate API processes share no lock: the store's name uniqueness must decide."""
    import asyncio

    import httpx

    from callscope.api.app import create_app
    from callscope.runtime import Runtime
    from tests.api.conftest import BASE

    project = await create_project()
    other = Runtime(settings)
    await other.start(background=False)
    try:
        apps = [create_app(rt.ctx, rt.usage) for rt in (runtime, other)]
        clients = [httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE) for app in apps]
        responses = await asyncio.gather(*(clients[i % 2].post("/tags",
                                                               json={"name": "Race", "project_id": project["id"]},
                                                               headers=admin) for i in range(6)))
        for http in clients:
            await http.aclose()
    finally:
        await other.stop()
    assert sorted(r.status_code for r in responses) == [200] * 5 + [201]
    assert len({r.json()["data"]["id"] for r in responses}) == 1
