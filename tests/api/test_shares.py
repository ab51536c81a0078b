"""Shares: the spec's lifecycle and every error message; conversations; locked and removed members."""

from __future__ import annotations

import email

import pytest

from callscope.services import accounts
from callscope.services import keys as key_service
from tests.api.conftest import catalog_on_both
from tests.audio_samples import make_audio


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    """Every test of this module runs on both catalog databases."""
    return catalog_on_both(request)

@pytest.fixture
async def recording(client, admin, create_project, tmp_path):
    project = await create_project()
    path = make_audio(tmp_path / "c.wav", "wav", seconds=1.0)
    with open(path, "rb") as fh:
        resp = await client.post("/recordings", files={"file": ("c.wav", fh)}, data={"project_id": str(project["id"])},
                                 headers=admin)
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


@pytest.fixture
async def member(runtime):
    await accounts.add_member(runtime.ctx, "default", "ann@example.com", "Ann Lee")
    return "ann@example.com"


async def sent_mail(runtime, settings) -> list[email.message.Message]:
    await runtime.mail.drain(timeout=5)
    outbox = settings.data_dir / "outbox"
    return [email.message_from_bytes(p.read_bytes()) for p in sorted(outbox.glob("*.eml"))] if outbox.exists() else []


def url(rec: dict) -> str:
    return f"/recordings/{rec['public_id']}/shares"


async def test_share_with_a_member_is_201_and_sends_email(client, admin, recording, member, runtime, settings):
    resp = await client.post(url(recording), json={"email": member, "message": "Listen to 2:10 <b>please</b>"},
                             headers=admin)
    assert resp.status_code == 201
    data = resp.json()["data"]
    assert set(data) == {"id", "everyone", "user", "shared_by", "created_at", "url"}
    assert data["everyone"] is False and data["user"] == {"email": member, "name": "Ann Lee"}
    assert data["shared_by"] == {"type": "api_key", "name": "default"}
    assert data["url"] == f"http://127.0.0.1:8080/recordings/{recording['public_id']}"
    mails = await sent_mail(runtime, settings)
    assert len(mails) == 1 and member in mails[0]["To"]
    text = "".join(part.get_payload(decode=True).decode() for part in mails[0].walk()
                   if part.get_content_type() == "text/plain")
    assert "Listen to 2:10 <b>please</b>" in text and data["url"] in text
    # shared through an API key: someone at the account, not a person called by the account's name
    assert "Someone at default shared the call recording" in text and "\ndefault wrote:" not in text


async def test_sharing_again_returns_the_existing_share_with_200_and_no_email(client, admin, recording, member,
                                                                            runtime, settings):
    first = await client.post(url(recording), json={"email": member}, headers=admin)
    again = await client.post(url(recording), json={"email": member.upper()}, headers=admin)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert len(await sent_mail(runtime, settings)) == 1


async def test_notify_false_and_everyone_send_no_email(client, admin, recording, member, runtime, settings):
    assert (await client.post(url(recording), json={"email": member, "notify": False},
                              headers=admin)).status_code == 201
    resp = await client.post(url(recording), json={"everyone": True}, headers=admin)
    assert resp.status_code == 201 and resp.json()["data"]["everyone"] is True and resp.json()["data"]["user"] is None
    assert await sent_mail(runtime, settings) == []


@pytest.mark.parametrize(("body", "status", "message"), [
    ({}, 400, {"error": "Send either email or everyone"}),
    ({"everyone": False}, 400, {"error": "Send either email or everyone"}),
    ({"email": "ann@example.com", "everyone": True}, 400, {"error": "Send either email or everyone"}),
    ({"email": "ann@example.com", "message": 5}, 400, {"error": "message must be a string"}),
    ({"email": "ann@example.com", "message": "x" * 1001}, 422, {"errors": ["message is longer than 1000 characters"]}),
    ({"email": "nobody@example.com"}, 422, {"errors": ["Not a member of this account"]}),
])
async def test_create_errors(client, admin, recording, member, body, status, message):
    resp = await client.post(url(recording), json=body, headers=admin)
    assert (resp.status_code, resp.json()) == (status, message)


async def test_processing_restricted_recording_cannot_be_shared(client, admin, recording, member):
    await client.patch(f"/recordings/{recording['public_id']}", json={"processing_restricted": True}, headers=admin)
    resp = await client.post(url(recording), json={"email": member}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["Recording is processing-restricted"]})


async def test_permissions_and_missing_recording(client, make_key, recording, member):
    resp = await client.post(url(recording), json={"email": member}, headers=await make_key("read"))
    assert (resp.status_code, resp.json()) == (403, {"error": "Write permission required"})
    resp = await client.get(url(recording), headers=await make_key("write"))
    assert (resp.status_code, resp.json()) == (403, {"error": "Read permission required"})
    admin = await make_key()
    for method in ("GET", "POST"):
        resp = await client.request(method, "/recordings/999999/shares", json={"everyone": True}, headers=admin)
        assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})


async def test_list_oldest_first_and_delete(client, admin, recording, member, runtime):
    await accounts.add_member(runtime.ctx, "default", "bob@example.com", "Bob")
    a = (await client.post(url(recording), json={"email": member}, headers=admin)).json()["data"]
    b = (await client.post(url(recording), json={"email": "bob@example.com"}, headers=admin)).json()["data"]
    listed = (await client.get(url(recording), headers=admin)).json()["data"]
    assert [s["id"] for s in listed] == [a["id"], b["id"]]
    resp = await client.delete(f"{url(recording)}/{a['id']}", headers=admin)
    assert resp.status_code == 204 and resp.content == b""
    assert [s["id"] for s in (await client.get(url(recording), headers=admin)).json()["data"]] == [b["id"]]
    resp = await client.delete(f"{url(recording)}/{a['id']}", headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Share not found"})


async def test_removing_a_share_needs_write(client, admin, make_key, recording, member):
    share = (await client.post(url(recording), json={"email": member}, headers=admin)).json()["data"]
    resp = await client.delete(f"{url(recording)}/{share['id']}", headers=await make_key("read,delete"))
    assert (resp.status_code, resp.json()) == (403, {"error": "Write permission required"})


async def test_locked_or_removed_members_lose_access(client, admin, recording, member, runtime):
    await client.post(url(recording), json={"email": member}, headers=admin)
    await accounts.set_member_locked(runtime.ctx, "default", member, True)
    assert (await client.get(url(recording), headers=admin)).json()["data"] == []
    resp = await client.post(url(recording), json={"email": member}, headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["Not a member of this account"]})
    await accounts.set_member_locked(runtime.ctx, "default", member, False)
    assert len((await client.get(url(recording), headers=admin)).json()["data"]) == 1
    await accounts.remove_member(runtime.ctx, "default", member)
    assert (await client.get(url(recording), headers=admin)).json()["data"] == []


async def test_both_legs_of_an_internal_call_list_the_same_shares(client, admin, recording, member, tmp_path):
    path = make_audio(tmp_path / "leg2.wav", "wav", seconds=1.0)
    with open(path, "rb") as fh:
        other = (await client.post("/recordings", files={"file": ("leg2.wav", fh)},
                                   data={"project_id": str(recording["project_id"]),
                                         "conversation_id": recording["public_id"]}, headers=admin)).json()["data"]
    share = (await client.post(url(recording), json={"email": member}, headers=admin)).json()["data"]
    listed = (await client.get(url(other), headers=admin)).json()["data"]
    assert [s["id"] for s in listed] == [share["id"]]
    assert listed[0]["url"].endswith(other["public_id"])
    resp = await client.post(url(other), json={"email": member}, headers=admin)
    assert resp.status_code == 200 and resp.json()["data"]["id"] == share["id"]


async def test_shared_by_type_becomes_null_once_the_key_is_deleted(client, runtime, recording, member):
    obj, key = await key_service.create_key(runtime.ctx, "default", "temp", ["read", "write"])
    headers = {"Authorization": f"Bearer {key}"}
    await client.post(url(recording), json={"email": member}, headers=headers)
    await runtime.store.delete(type(obj), "default", "temp")
    admin = {"Authorization": f"Bearer {(await key_service.create_key(runtime.ctx, 'default', 'adm', ['read']))[1]}"}
    listed = (await client.get(url(recording), headers=admin)).json()["data"]
    assert listed[0]["shared_by"] == {"type": None, "name": "default"}


async def test_deleting_the_recording_deletes_its_shares(client, admin, recording, member, runtime):
    from sqlalchemy import func, select

    from callscope.catalog.tables import Share

    await client.post(url(recording), json={"email": member}, headers=admin)
    await client.delete(f"/recordings/{recording['public_id']}", headers=admin)
    with runtime.catalog.session() as session:
        assert session.scalar(select(func.count()).select_from(Share)) == 0
