"""A project-scoped key sees inside other objects only what it may see on its own: a number's operators, an
operator's projects and numbers, a recording's operator, project and tags, a recording's shares. The world: projects
Sales (the key's) and Support; operators `mine` (Sales), `hidden` (Support only) and `loose` (no project), all three
attached to a Sales number; recordings of Sales answered by `hidden` and by `mine`."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

HIDDEN = {"name": "Hidden Harper", "phone_number": "+14155550199", "email": "harper@support.example"}
LOOSE = {"name": "Loose Lou", "phone_number": "+14155550177", "email": "lou@nowhere.example"}


@pytest.fixture
def settings_overrides():
    return {"virtual_number_purchase_paused": False}


@dataclass
class World:
    sales: dict
    support: dict
    scoped: dict[str, str]
    mine: dict
    hidden: dict
    loose: dict
    number: dict
    answered_by_hidden: dict
    answered_by_mine: dict
    sales_tag: dict


@pytest.fixture
async def world(client, admin, make_key, create_project, create_operator, upload, wav) -> World:
    sales, support = await create_project("Sales"), await create_project("Support")
    scoped = await make_key(project_id=sales["id"])
    mine = await create_operator("Mine Mary", phone_number="+14155550101", project_id=sales["id"])
    hidden = await create_operator(**HIDDEN, project_id=support["id"])
    loose = await create_operator(**LOOSE)
    phone = (await client.get("/virtual_numbers/available", headers=admin)).json()["data"][0]["phone_number"]
    resp = await client.post("/virtual_numbers/purchase", json={"phone_number": phone}, headers=scoped)
    assert resp.status_code == 201, resp.text
    number = resp.json()["data"]
    for operator in (hidden, mine, loose):
        resp = await client.post(f"/virtual_numbers/{number['id']}/add_operator", json={"operator_id": operator["id"]},
                                 headers=admin)
        assert resp.status_code == 200, resp.text
    tag = (await client.post("/tags", json={"name": "VIP", "project_id": sales["id"]}, headers=admin)).json()["data"]
    recordings = []
    for operator in (hidden, mine):
        resp = await upload(wav, project_id=sales["id"], operator_id=operator["id"], **{"tag_ids[]": [str(tag["id"])]})
        assert resp.status_code == 201, resp.text
        recordings.append(resp.json()["data"])
    return World(sales, support, scoped, mine, hidden, loose, number, *recordings, tag)


def assert_hides_the_others(resp) -> None:
    assert resp.status_code == 200, resp.text
    for secret in (*HIDDEN.values(), *LOOSE.values()):
        assert secret not in resp.text


async def test_a_numbers_operators_are_those_the_key_can_see(client, admin, world):
    number_path = f"/virtual_numbers/{world.number['id']}"
    listed = await client.get("/virtual_numbers", headers=world.scoped)
    assert_hides_the_others(listed)
    [item] = listed.json()["data"]
    assert [o["id"] for o in item["operators"]] == [world.mine["id"]] and item["operators_count"] == 1

    detail = await client.get(number_path, headers=world.scoped)
    assert_hides_the_others(detail)
    operators = detail.json()["data"]["operators"]
    # the place in the routing order stays the number's own
    assert [(o["id"], o["priority"]) for o in operators] == [(world.mine["id"], 1)]
    assert world.hidden["id"] not in [o["id"] for o in detail.json()["data"]["available_operators"]]

    # every answer in the detail form: the update and both operator changes
    assert_hides_the_others(await client.patch(number_path, json={"name": "Front desk"}, headers=world.scoped))
    spare = await client.post(f"{number_path}/add_operator", json={"phone_number": "+14155550133"},
                              headers=world.scoped)
    assert_hides_the_others(spare)
    spare_id = next(o["id"] for o in spare.json()["data"]["operators"] if o["phone_number"] == "+14155550133")
    assert_hides_the_others(await client.delete(f"{number_path}/remove_operator", params={"operator_id": spare_id},
                                                headers=world.scoped))

    # an account-wide key sees them all, in routing order
    full = (await client.get(number_path, headers=admin)).json()["data"]["operators"]
    assert [o["id"] for o in full] == [world.hidden["id"], world.mine["id"], world.loose["id"]]
    assert (await client.get("/virtual_numbers", headers=admin)).json()["data"][0]["operators_count"] == 3


async def test_a_scoped_key_cannot_detach_an_operator_it_cannot_see(client, admin, world):
    number_path = f"/virtual_numbers/{world.number['id']}"
    for operator in (world.hidden, world.loose):
        resp = await client.delete(f"{number_path}/remove_operator", params={"operator_id": operator["id"]},
                                   headers=world.scoped)
        assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})
    attached = (await client.get(number_path, headers=admin)).json()["data"]["operators"]
    assert [o["id"] for o in attached] == [world.hidden["id"], world.mine["id"], world.loose["id"]]


async def test_an_operators_projects_and_numbers_are_those_the_key_can_see(client, admin, world):
    resp = await client.post(f"/operators/{world.mine['id']}/add_project", json={"project_id": world.support["id"]},
                             headers=admin)
    assert resp.status_code == 200 and len(resp.json()["data"]["recording_project_ids"]) == 2
    detail = await client.get(f"/operators/{world.mine['id']}", headers=world.scoped)
    assert detail.json()["data"]["recording_project_ids"] == [world.sales["id"]]
    assert [n["id"] for n in detail.json()["data"]["virtual_numbers"]] == [world.number["id"]]
    [item] = (await client.get("/operators", headers=world.scoped)).json()["data"]
    assert item["recording_project_ids"] == [world.sales["id"]] and item["virtual_numbers_count"] == 1


async def test_a_recordings_operator_outside_the_keys_scope_shows_as_none(client, admin, world):
    hidden_rec, mine_rec = world.answered_by_hidden["public_id"], world.answered_by_mine["public_id"]
    assert (await client.get(f"/recordings/{hidden_rec}", headers=admin)).json()["data"]["operator_id"] == \
        world.hidden["id"]
    single = (await client.get(f"/recordings/{hidden_rec}", headers=world.scoped)).json()["data"]
    assert single["operator_id"] is None
    assert (single["project_id"], single["tag_ids"]) == (world.sales["id"], [world.sales_tag["id"]])
    listed = {r["public_id"]: r for r in (await client.get("/recordings", headers=world.scoped)).json()["data"]}
    assert listed[hidden_rec]["operator_id"] is None and listed[mine_rec]["operator_id"] == world.mine["id"]
    # nor does filtering by it tell which of the key's recordings that operator answered
    by_hidden = await client.get("/recordings", params={"operator_id": world.hidden["id"]}, headers=world.scoped)
    assert (by_hidden.json()["data"], by_hidden.json()["meta"]["total_count"]) == ([], 0)
    by_mine = await client.get("/recordings", params={"operator_id": world.mine["id"]}, headers=world.scoped)
    assert [r["public_id"] for r in by_mine.json()["data"]] == [mine_rec]
    by_hidden = await client.get("/recordings", params={"operator_id": world.hidden["id"]}, headers=admin)
    assert [r["public_id"] for r in by_hidden.json()["data"]] == [hidden_rec]
    patched = await client.patch(f"/recordings/{hidden_rec}", json={"name": "Renamed"}, headers=world.scoped)
    assert patched.status_code == 200 and patched.json()["data"]["operator_id"] is None
    # the filter values list the same operators as the key's GET /operators
    options = (await client.get("/recordings/filters", headers=world.scoped)).json()["data"]
    assert [o["id"] for o in options["operators"]] == [world.mine["id"]]
    assert [p["id"] for p in options["projects"]] == [world.sales["id"]]


async def test_a_recordings_shares_are_read_through_the_recordings_scope(client, admin, make_key, world, wav, upload):
    other = (await upload(wav, project_id=world.support["id"])).json()["data"]
    for rec in (world.answered_by_mine, other):
        resp = await client.post(f"/recordings/{rec['public_id']}/shares", json={"everyone": True}, headers=admin)
        assert resp.status_code == 201, resp.text
    assert len((await client.get(f"/recordings/{world.answered_by_mine['public_id']}/shares",
                                 headers=world.scoped)).json()["data"]) == 1
    resp = await client.get(f"/recordings/{other['public_id']}/shares", headers=world.scoped)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})
