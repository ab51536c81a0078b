"""Virtual numbers: search, purchase (paused by default), forms, settings and attached operators."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import phonenumbers
import pytest

from callscope.catalog.tables import Call
from callscope.services.apply import apply_documents

LIST_FIELDS = {"id", "phone_number", "name", "country_code", "active", "project_id", "operators", "operators_count"}
DETAIL_FIELDS = {"id", "phone_number", "name", "country_code", "active", "project_id", "recording", "routing_strategy",
                 "stats", "operators", "available_operators", "recent_calls"}


@pytest.fixture
def settings_overrides():
    return {"virtual_number_purchase_paused": False}


@pytest.fixture
def buy(client, admin):
    async def buy_number(headers=None, **fields) -> dict:
        candidate = (await client.get("/virtual_numbers/available", headers=admin)).json()["data"]
        owned = {n["phone_number"] for n in (await client.get("/virtual_numbers", headers=admin)).json()["data"]}
        phone = next(c["phone_number"] for c in candidate if c["phone_number"] not in owned)
        resp = await client.post("/virtual_numbers/purchase", json={"phone_number": phone, **fields},
                                 headers=headers or admin)
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]
    return buy_number


async def test_purchase_is_503_while_paused(client, admin, runtime):
    runtime.ctx.settings.virtual_number_purchase_paused = True
    resp = await client.post("/virtual_numbers/purchase", json={"phone_number": "+14155552671"}, headers=admin)
    assert (resp.status_code, resp.json()) == (503, {"error": "virtual_number_purchase_paused"})


async def test_available_defaults_to_us_mobile(client, admin):
    resp = await client.get("/virtual_numbers/available", headers=admin)
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert data
    for c in data:
        assert c["country_code"] == "US" and c["number_type"] == "mobile"
        assert phonenumbers.is_valid_number(phonenumbers.parse(c["phone_number"]))
        assert set(c) >= {"upfront_cost", "monthly_cost", "features", "region_information"}


async def test_available_country_is_case_insensitive(client, admin):
    resp = await client.get("/virtual_numbers/available", params={"country": "gb", "number_type": "local"},
                            headers=admin)
    assert resp.status_code == 200
    assert all(c["country_code"] == "GB" and c["phone_number"].startswith("+44") for c in resp.json()["data"])


async def test_available_bad_number_type_and_provider_rejection_are_422(client, admin):
    resp = await client.get("/virtual_numbers/available", params={"number_type": "satellite"}, headers=admin)
    assert resp.status_code == 422 and resp.json()["errors"]
    resp = await client.get("/virtual_numbers/available", params={"country": "ZZ"}, headers=admin)
    assert resp.status_code == 422 and resp.json()["errors"]


async def test_available_is_allowed_for_scoped_keys(client, make_key, create_project):
    project = await create_project()
    scoped = await make_key(project_id=project["id"])
    assert (await client.get("/virtual_numbers/available", headers=scoped)).status_code == 200


async def test_purchase_requires_phone_number(client, admin):
    resp = await client.post("/virtual_numbers/purchase", json={}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["phone_number is required"]})


async def test_purchase_returns_201_list_item_with_recording_on(client, admin, buy):
    number = await buy(name="Front desk")
    assert set(number) == LIST_FIELDS
    assert number["name"] == "Front desk" and number["project_id"] is None
    assert number["operators"] == [] and number["operators_count"] == 0
    detail = (await client.get(f"/virtual_numbers/{number['id']}", headers=admin)).json()["data"]
    assert detail["recording"] is True and detail["active"] is True and detail["routing_strategy"] == "priority"


async def test_purchase_with_scoped_key_attaches_to_its_project(client, make_key, create_project, buy):
    project = await create_project()
    scoped = await make_key(project_id=project["id"])
    assert (await buy(headers=scoped))["project_id"] == project["id"]


async def test_purchase_twice_is_422(client, admin, buy):
    number = await buy()
    resp = await client.post("/virtual_numbers/purchase", json={"phone_number": number["phone_number"]}, headers=admin)
    assert resp.status_code == 422


async def test_purchase_needs_an_approved_requirement_group_where_documents_are_required(client, admin):
    candidates = (await client.get("/virtual_numbers/available", params={"country": "DE"},
                                   headers=admin)).json()["data"]
    resp = await client.post("/virtual_numbers/purchase", json={"phone_number": candidates[0]["phone_number"]},
                             headers=admin)
    assert (resp.status_code, resp.json()) == (422,
                                               {"errors": ["Requirement group must be approved before purchasing"]})


async def test_purchase_with_approved_requirement_group(client, admin, runtime):
    group = runtime.ctx.provider.add_requirement_group("DE", "approved")
    candidates = (await client.get("/virtual_numbers/available", params={"country": "DE"},
                                   headers=admin)).json()["data"]
    resp = await client.post("/virtual_numbers/purchase", json={"phone_number": candidates[0]["phone_number"],
                                                                "requirement_group_id": group}, headers=admin)
    assert resp.status_code == 201 and resp.json()["data"]["country_code"] == "DE"


async def test_scoped_key_sees_only_its_projects_numbers(client, admin, make_key, create_project, buy):
    project = await create_project()
    scoped = await make_key(project_id=project["id"])
    mine = await buy(headers=scoped)
    other = await buy()
    assert [n["id"] for n in (await client.get("/virtual_numbers", headers=scoped)).json()["data"]] == [mine["id"]]
    assert len((await client.get("/virtual_numbers", headers=admin)).json()["data"]) == 2
    for method, path in (("GET", ""), ("PATCH", ""), ("POST", "/add_operator"), ("DELETE", "/remove_operator")):
        resp = await client.request(method, f"/virtual_numbers/{other['id']}{path}", json={"operator_id": 1},
                                    headers=scoped)
        assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"}), path


async def test_detail_form(client, admin, buy, create_operator):
    number = await buy()
    await create_operator("Inactive", active=False)
    available = await create_operator("Available", phone_number="+14155552671")
    resp = await client.get(f"/virtual_numbers/{number['id']}", headers=admin)
    data = resp.json()["data"]
    assert set(data) == DETAIL_FIELDS
    assert data["stats"] == {"total_calls": 0, "answered_calls": 0, "missed_calls": 0, "average_duration_seconds": 0}
    assert data["recent_calls"] == [] and data["operators"] == []
    assert data["available_operators"] == [{"id": available["id"], "name": "Available",
                                            "phone_number": "+14155552671", "initials": "AV"}]


async def test_update_changes_supplied_fields(client, admin, buy):
    number = await buy()
    resp = await client.patch(f"/virtual_numbers/{number['id']}",
                              json={"name": "Sales line", "active": False, "recording": False,
                                    "routing_strategy": "round_robin"}, headers=admin)
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert (data["name"], data["active"], data["recording"], data["routing_strategy"]) == (
        "Sales line", False, False, "round_robin")
    resp = await client.patch(f"/virtual_numbers/{number['id']}", json={"active": True}, headers=admin)
    assert resp.json()["data"]["routing_strategy"] == "round_robin" and resp.json()["data"]["recording"] is False


async def test_unknown_routing_strategy_is_422(client, admin, buy):
    number = await buy()
    resp = await client.patch(f"/virtual_numbers/{number['id']}", json={"routing_strategy": "random"}, headers=admin)
    assert resp.status_code == 422 and resp.json()["errors"]


async def test_add_operator_appends_at_next_priority_and_reattach_changes_nothing(client, admin, buy, create_operator):
    number = await buy()
    first, second = await create_operator("First"), await create_operator("Second")
    url = f"/virtual_numbers/{number['id']}/add_operator"
    await client.post(url, json={"operator_id": first["id"]}, headers=admin)
    resp = await client.post(url, json={"operator_id": second["id"]}, headers=admin)
    resp = await client.post(url, json={"operator_id": first["id"]}, headers=admin)
    assert resp.status_code == 200
    ops = resp.json()["data"]["operators"]
    assert [(o["id"], o["priority"]) for o in ops] == [(first["id"], 0), (second["id"], 1)]
    assert resp.json()["data"]["available_operators"] == []


async def test_add_operator_shape_b_creates_an_operator(client, admin, buy):
    number = await buy()
    resp = await client.post(f"/virtual_numbers/{number['id']}/add_operator", json={"phone_number": "+14155552671"},
                             headers=admin)
    assert resp.status_code == 200
    op = resp.json()["data"]["operators"][0]
    assert op["name"] == "Operator" and op["phone_number"] == "+14155552671"
    listed = (await client.get("/operators", headers=admin)).json()["data"]
    assert [o["virtual_numbers_count"] for o in listed] == [1]


async def test_add_operator_id_wins_over_phone_number(client, admin, buy, create_operator):
    number = await buy()
    existing = await create_operator("Existing")
    resp = await client.post(f"/virtual_numbers/{number['id']}/add_operator",
                             json={"operator_id": existing["id"], "phone_number": "+14155552671"}, headers=admin)
    assert [o["id"] for o in resp.json()["data"]["operators"]] == [existing["id"]]
    assert len((await client.get("/operators", headers=admin)).json()["data"]) == 1


async def test_add_operator_errors(client, admin, buy, create_operator):
    number = await buy()
    url = f"/virtual_numbers/{number['id']}/add_operator"
    resp = await client.post(url, json={}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["operator_id or phone_number is required"]})
    resp = await client.post(url, json={"phone_number": "123"}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["Phone number is invalid"]})
    resp = await client.post(url, json={"operator_id": 999}, headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})
    resp = await client.post("/virtual_numbers/999/add_operator", json={"operator_id": 1}, headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})


async def test_scoped_key_cannot_attach_an_operator_outside_its_project(client, make_key, create_project, buy,
                                                                        create_operator):
    project = await create_project()
    scoped = await make_key(project_id=project["id"])
    number = await buy(headers=scoped)
    outsider = await create_operator("Outsider")
    resp = await client.post(f"/virtual_numbers/{number['id']}/add_operator", json={"operator_id": outsider["id"]},
                             headers=scoped)
    assert resp.status_code == 404


async def test_remove_operator_by_query_or_body_keeps_the_operator(client, admin, buy, create_operator):
    number = await buy()
    a, b = await create_operator("A"), await create_operator("B")
    for op in (a, b):
        await client.post(f"/virtual_numbers/{number['id']}/add_operator", json={"operator_id": op["id"]},
                          headers=admin)
    url = f"/virtual_numbers/{number['id']}/remove_operator"
    resp = await client.delete(url, params={"operator_id": a["id"]}, headers=admin)
    assert resp.status_code == 200 and [o["id"] for o in resp.json()["data"]["operators"]] == [b["id"]]
    assert [o["priority"] for o in resp.json()["data"]["operators"]] == [0]
    resp = await client.request("DELETE", url, json={"operator_id": b["id"]}, headers=admin)
    assert resp.status_code == 200 and resp.json()["data"]["operators"] == []
    assert (await client.get(f"/operators/{a['id']}", headers=admin)).status_code == 200


async def test_remove_operator_not_attached_is_404_and_missing_id_is_422(client, admin, buy, create_operator):
    number = await buy()
    op = await create_operator()
    url = f"/virtual_numbers/{number['id']}/remove_operator"
    resp = await client.delete(url, params={"operator_id": op["id"]}, headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})
    resp = await client.delete(url, headers=admin)
    assert resp.status_code == 422


async def test_list_item_shows_first_three_operators_and_total(client, admin, buy, create_operator):
    number = await buy()
    for name in ("A1", "B2", "C3", "D4"):
        op = await create_operator(name)
        await client.post(f"/virtual_numbers/{number['id']}/add_operator", json={"operator_id": op["id"]},
                          headers=admin)
    item = (await client.get("/virtual_numbers", headers=admin)).json()["data"][0]
    assert [o["name"] for o in item["operators"]] == ["A1", "B2", "C3"]
    assert set(item["operators"][0]) == {"id", "name", "initials"}
    assert item["operators_count"] == 4


async def test_stats_and_recent_calls_read_call_records(client, admin, buy, runtime):
    number = await buy()
    now = datetime.now(UTC)
    with runtime.catalog.session(write=True) as session:
        for i in range(12):
            session.add(Call(account="default", virtual_number_id=number["id"], phone_number="+14155550100",
                             caller_name=f"Caller {i}", call_status="completed" if i % 3 else "missed",
                             call_duration=60 if i % 3 else 0, direction="inbound", ai_handled=False,
                             transcript_summary=None, created_at=now - timedelta(minutes=i)))
    data = (await client.get(f"/virtual_numbers/{number['id']}", headers=admin)).json()["data"]
    assert data["stats"] == {"total_calls": 12, "answered_calls": 8, "missed_calls": 4, "average_duration_seconds": 60}
    assert len(data["recent_calls"]) == 10
    assert data["recent_calls"][0]["caller_name"] == "Caller 0"


async def test_purchase_of_a_number_another_account_holds_is_refused(client, admin, runtime):
    """The carrier routes an E.164 to one number: a number applied as YAML in another account holds it, and buying
    it here would pay for a number in Conflict that never gets a call."""
    phone = (await client.get("/virtual_numbers/available", headers=admin)).json()["data"][0]["phone_number"]
    await apply_documents(runtime.ctx, [{"apiVersion": "callscope.io/v1alpha1", "kind": "VirtualNumber",
                                         "metadata": {"name": "desk", "namespace": "other"},
                                         "spec": {"phoneNumber": phone, "countryCode": "US"}}], "other")
    await runtime.store.sync()
    resp = await client.post("/virtual_numbers/purchase", json={"phone_number": phone}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["Phone number has already been taken"]})
    assert (await client.get("/virtual_numbers", headers=admin)).json()["data"] == []
