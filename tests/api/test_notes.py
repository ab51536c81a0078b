"""Notes on a recording through REST, on SQLite and PostgreSQL: written, listed oldest first with author and time,
deleted by their author or a key with the delete permission; bad input is a 422 in the spec's shape; another
account's (or another project's) recording is 404; a recording's notes go with it."""

from __future__ import annotations

import pytest

from callscope.catalog.tables import RecordingNote
from tests.api.conftest import catalog_on_both, count_rows
from tests.audio_samples import make_audio


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    return catalog_on_both(request)


@pytest.fixture
def store_settings() -> dict:
    """Notes live in the catalog alone: the configuration store makes no difference."""
    return {"store": "sqlite"}


@pytest.fixture
async def recording(client, admin, create_project, tmp_path) -> dict:
    project = await create_project()
    path = make_audio(tmp_path / "c.wav", "wav", seconds=1.0)
    resp = await client.post("/recordings", files={"file": ("c.wav", path.read_bytes())},
                             data={"project_id": str(project["id"])}, headers=admin)
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


def url(rec: dict, note_id: int | None = None) -> str:
    return f"/recordings/{rec['public_id']}/notes" + (f"/{note_id}" if note_id is not None else "")


async def test_notes_are_written_and_listed_oldest_first_with_author_and_time(client, make_key, recording):
    writer = await make_key("read,write")
    first = await client.post(url(recording), json={"text": "  Promised a callback.\nMonday 10:00  "}, headers=writer)
    assert first.status_code == 201, first.text
    note = first.json()["data"]
    assert set(note) == {"id", "text", "author", "created_at"}
    assert note["text"] == "Promised a callback.\nMonday 10:00"  # surrounding spaces dropped, lines kept
    assert note["author"] == {"type": "api_key", "name": "key-2"}  # admin (key-1) uploaded
    second = (await client.post(url(recording), json={"text": "Refund done."}, headers=writer)).json()["data"]
    listed = await client.get(url(recording), headers=await make_key("read"))
    assert listed.status_code == 200
    assert [(n["id"], n["text"]) for n in listed.json()["data"]] == [(note["id"], note["text"]),
                                                                      (second["id"], "Refund done.")]


@pytest.mark.parametrize(("body", "error"), [
    ({"text": ""}, "text must not be empty"),
    ({"text": " \n\t "}, "text must not be empty"),
    ({}, "text is required"),
    ({"text": 5}, "text must be a string"),
    ({"text": "x" * 4001}, "text is too long (maximum is 4000 characters)"),
    ({"text": "bell\x07"}, "text must not contain control characters other than tab and line breaks"),
])
async def test_bad_text_is_a_422_saying_why_and_nothing_is_written(client, admin, recording, runtime, body, error):
    resp = await client.post(url(recording), json=body, headers=admin)
    assert resp.status_code == 422, resp.text
    assert resp.json() == {"errors": [error]}
    assert count_rows(runtime, RecordingNote) == 0


async def test_a_read_key_may_not_write_and_a_key_deletes_only_its_own_without_the_delete_permission(
        client, make_key, recording):
    reader = await make_key("read")
    assert (await client.post(url(recording), json={"text": "x"}, headers=reader)).status_code == 403
    ana, ben = await make_key("read,write"), await make_key("read,write")
    note = (await client.post(url(recording), json={"text": "Ana's"}, headers=ana)).json()["data"]
    refused = await client.delete(url(recording, note["id"]), headers=ben)
    assert refused.status_code == 403
    assert refused.json() == {"error": "Only its author or an admin of the account may delete a note"}
    assert (await client.delete(url(recording, note["id"]), headers=ana)).status_code == 204
    assert (await client.delete(url(recording, note["id"]), headers=ana)).status_code == 404  # gone
    again = (await client.post(url(recording), json={"text": "Ana's again"}, headers=ana)).json()["data"]
    moderator = await make_key("read,write,delete")
    assert (await client.delete(url(recording, again["id"]), headers=moderator)).status_code == 204
    assert (await client.get(url(recording), headers=ana)).json()["data"] == []


async def test_another_accounts_or_projects_recording_and_its_notes_are_not_found(client, admin, make_key,
                                                                                 create_project, recording):
    note = (await client.post(url(recording), json={"text": "Ours"}, headers=admin)).json()["data"]
    other_account = await make_key(account="other")
    elsewhere = await create_project("Elsewhere")
    other_project = await make_key(project_id=elsewhere["id"])
    for outsider in (other_account, other_project):
        assert (await client.get(url(recording), headers=outsider)).status_code == 404
        assert (await client.post(url(recording), json={"text": "Theirs"}, headers=outsider)).status_code == 404
        assert (await client.delete(url(recording, note["id"]), headers=outsider)).status_code == 404
    assert [n["text"] for n in (await client.get(url(recording), headers=admin)).json()["data"]] == ["Ours"]


async def test_a_note_of_another_recording_is_not_found_on_this_one(client, admin, create_project, recording,
                                                                  tmp_path):
    project = await create_project("Second")
    path = make_audio(tmp_path / "d.wav", "wav", seconds=1.0)
    other = (await client.post("/recordings", files={"file": ("d.wav", path.read_bytes())},
                               data={"project_id": str(project["id"])}, headers=admin)).json()["data"]
    theirs = (await client.post(url(other), json={"text": "On the other call"}, headers=admin)).json()["data"]
    resp = await client.delete(url(recording, theirs["id"]), headers=admin)
    assert resp.status_code == 404 and resp.json() == {"error": "No note of that id on this recording"}
    assert len((await client.get(url(other), headers=admin)).json()["data"]) == 1


async def test_a_recordings_notes_are_deleted_with_it(client, admin, recording, runtime):
    await client.post(url(recording), json={"text": "Soon gone"}, headers=admin)
    assert count_rows(runtime, RecordingNote) == 1
    assert (await client.delete(f"/recordings/{recording['public_id']}", headers=admin)).status_code == 204
    assert count_rows(runtime, RecordingNote) == 0
    assert (await client.get(url(recording), headers=admin)).status_code == 404


@pytest.mark.parametrize(("body", "status"), [
    ('{"text": "a\\u0000b"}', 422), ('{"text": "\\ud800"}', 400), (b'{"text": "\xff\xfe"}', 400),
    ('{"text": 99999999999999999999999}', 422), ("\t", 400)])
async def test_nul_non_utf8_and_huge_values_are_4xx_and_write_nothing(client, admin, recording, runtime, body,
                                                                      status):
    resp = await client.post(url(recording), content=body, headers={**admin, "Content-Type": "application/json"})
    assert resp.status_code == status, resp.text
    assert set(resp.json()) <= {"error", "errors"}
    assert count_rows(runtime, RecordingNote) == 0


@pytest.mark.parametrize("note_id", ["99999999999999999999999", "-1", "0", "1e3", "%00"])
async def test_a_note_id_that_is_no_note_is_404_or_422(client, admin, recording, note_id):
    resp = await client.delete(url(recording) + f"/{note_id}", headers=admin)
    assert resp.status_code in (404, 422), (note_id, resp.status_code, resp.text)
