"""Recordings: streamed upload with probing, idempotency, scope rules, listing and filters, changes,
deletion, audio URLs and the analysis read-outs, rule by rule."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from callscope.catalog.tables import Job, Recording
from tests.api.conftest import blob_files, catalog_on_both, count_rows
from tests.audio_samples import make_audio, truncate

RECORDING_FIELDS = {
    "public_id", "name", "status", "language", "duration_ms", "created_at", "updated_at", "dialogues_count",
    "goals_evaluated", "pauses_detected", "audio_attached", "project_id", "external_id", "called_at",
    "recording_source", "operator_id", "tag_ids", "processing_restricted", "stage", "progress", "status_reason",
    "audio_format", "size_bytes", "audio_redaction",
}



@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    """Every test of this module runs on both catalog databases."""
    return catalog_on_both(request)

# ----- upload ---------------------------------------------------------------------------------

async def test_upload_returns_201_with_every_field(upload, wav, project):
    resp = await upload(wav, project_id=project["id"], external_id="crm-1", recording_source="pbx",
                        called_at="2026-11-01T10:00:00Z")
    assert resp.status_code == 201, resp.text
    data = resp.json()["data"]
    assert set(data) == RECORDING_FIELDS and "id" not in data
    assert uuid.UUID(data["public_id"]).version == 7
    assert data["status"] == "pending" and data["audio_attached"] is True
    assert abs(data["duration_ms"] - 2000) <= 100
    assert data["language"] == "de"  # the project's default
    assert data["name"] == "call.wav" and data["project_id"] == project["id"]
    assert (data["external_id"], data["recording_source"]) == ("crm-1", "pbx")
    assert data["called_at"].startswith("2026-11-01T10:00:00")
    assert data["audio_format"] == "wav" and data["size_bytes"] == wav.stat().st_size


@pytest.mark.parametrize("fmt", ["mp3", "wav", "flac", "m4a", "ogg", "webm"])
async def test_every_accepted_format_is_probed(upload, project, tmp_path, fmt):
    path = make_audio(tmp_path / f"a.{fmt}", fmt, seconds=3.0, channels=2)
    resp = await upload(path, project_id=project["id"])
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["audio_format"] == fmt
    assert abs(resp.json()["data"]["duration_ms"] - 3000) <= 150


async def test_extension_is_not_trusted(upload, wav, project):
    resp = await upload(wav, project_id=project["id"], filename="looks-like.mp3")
    assert resp.status_code == 201 and resp.json()["data"]["audio_format"] == "wav"


@pytest.mark.parametrize(("content", "message"), [
    (b"", "File is empty"),
    (b"just some text, not audio\n" * 20,
     "Unsupported audio format: accepted formats are MP3, WAV, FLAC, M4A, OGG and WebM"),
])
async def test_bad_files_are_422_and_leave_nothing(upload, project, tmp_path, settings, runtime, content, message):
    path = tmp_path / "bad.wav"
    path.write_bytes(content)
    resp = await upload(path, project_id=project["id"])
    assert (resp.status_code, resp.json()) == (422, {"errors": [message]})
    assert blob_files(settings) == [] and count_rows(runtime, Recording) == 0


async def test_truncated_file_is_422(upload, project, tmp_path, settings):
    path = truncate(make_audio(tmp_path / "t.wav", "wav", seconds=4.0), 0.5)
    resp = await upload(path, project_id=project["id"])
    assert (resp.status_code, resp.json()) == (422, {"errors": ["Audio file is truncated or corrupt"]})
    assert blob_files(settings) == []


async def test_missing_file_is_422_and_non_multipart_is_400(client, admin, upload, project):
    resp = await client.post("/recordings", data={"project_id": str(project["id"])}, files={"other": ("x", b"1")},
                             headers=admin)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["file is required"]})
    resp = await client.post("/recordings", json={"project_id": project["id"]}, headers=admin)
    assert resp.status_code == 400


async def test_account_wide_key_needs_project_id(upload, wav):
    resp = await upload(wav)
    assert (resp.status_code, resp.json()) == (422, {"errors": ["project_id is required for account-wide API keys"]})


async def test_unknown_project_is_404(upload, wav):
    resp = await upload(wav, project_id=999)
    assert (resp.status_code, resp.json()) == (404, {"error": "Project not found"})


async def test_scoped_key_mismatch_is_403_and_omitted_project_is_its_own(upload, wav, make_key, create_project):
    one, two = await create_project("One"), await create_project("Two")
    scoped = await make_key(project_id=one["id"])
    resp = await upload(wav, headers=scoped, project_id=two["id"])
    assert (resp.status_code, resp.json()) == (403, {"error": "project_id does not match this API key's project"})
    resp = await upload(wav, headers=scoped)
    assert resp.status_code == 201 and resp.json()["data"]["project_id"] == one["id"]


async def test_operator_may_be_any_operator_of_the_account(upload, wav, project, create_operator):
    unlinked = await create_operator("Unlinked")
    resp = await upload(wav, project_id=project["id"], operator_id=unlinked["id"])
    assert resp.status_code == 201 and resp.json()["data"]["operator_id"] == unlinked["id"]
    resp = await upload(wav, project_id=project["id"], operator_id=999)
    assert resp.status_code == 422


async def test_tags_must_belong_to_the_project(client, admin, upload, wav, project, create_project):
    other = await create_project("Other")
    mine = (await client.post("/tags", json={"name": "a", "project_id": project["id"]}, headers=admin)).json()["data"]
    theirs = (await client.post("/tags", json={"name": "b", "project_id": other["id"]}, headers=admin)).json()["data"]
    resp = await upload(wav, project_id=project["id"], **{"tag_ids[]": [str(mine["id"])]})
    assert resp.status_code == 201 and resp.json()["data"]["tag_ids"] == [mine["id"]]
    resp = await upload(wav, project_id=project["id"], **{"tag_ids[]": [str(mine["id"]), str(theirs["id"])]})
    assert resp.status_code == 422


async def test_wrongly_typed_fields_are_422(upload, wav, project):
    for fields, message in (({"project_id": "abc"}, "project_id must be an integer"),
                            ({"project_id": project["id"], "called_at": "yesterday"},
                             "called_at must be an ISO 8601 timestamp")):
        resp = await upload(wav, **fields)
        assert (resp.status_code, resp.json()) == (422, {"errors": [message]})


async def test_upload_is_idempotent_on_project_and_external_id(upload, wav, project, runtime, settings):
    first = await upload(wav, project_id=project["id"], external_id="ext-1")
    again = await upload(wav, project_id=project["id"], external_id="ext-1", name="other name")
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["data"] == first.json()["data"]
    assert count_rows(runtime, Recording) == 1 and len(blob_files(settings)) == 1


async def test_same_external_id_in_another_project_is_another_recording(upload, wav, project, create_project):
    other = await create_project("Other")
    a = await upload(wav, project_id=project["id"], external_id="same")
    b = await upload(wav, project_id=other["id"], external_id="same")
    assert a.status_code == b.status_code == 201 and a.json()["data"]["public_id"] != b.json()["data"]["public_id"]


async def test_racing_uploads_of_one_external_id_make_one_recording(upload, wav, project, runtime, settings):
    responses = await asyncio.gather(*(upload(wav, project_id=project["id"], external_id="race") for _ in range(5)))
    assert sorted(r.status_code for r in responses) == [200, 200, 200, 200, 201]
    assert len({r.json()["data"]["public_id"] for r in responses}) == 1
    assert count_rows(runtime, Recording) == 1 and len(blob_files(settings)) == 1


async def test_recording_and_its_job_are_written_together(upload, wav, project, runtime):
    await upload(wav, project_id=project["id"])
    with runtime.catalog.session() as session:
        job = session.scalars(select(Job)).one()
        assert (job.kind, job.state) == ("analyze", "queued")


@pytest.mark.parametrize("settings_overrides", [{"upload_limits_mb": {"wav": 1, "mp3": 1, "m4a": 1, "ogg": 1,
                                                                      "webm": 1, "flac": 1}}])
async def test_oversize_upload_is_413_and_leaves_nothing(upload, project, tmp_path, settings, runtime):
    path = make_audio(tmp_path / "long.wav", "wav", seconds=40.0)  # 16 kHz mono 16-bit: about 1.3 MB
    resp = await upload(path, project_id=project["id"])
    assert resp.status_code == 413
    assert "error" in resp.json()
    assert blob_files(settings) == [] and count_rows(runtime, Recording) == 0


# ----- reading --------------------------------------------------------------------------------

@pytest.fixture
def uploaded(upload, wav, project):
    async def make(**fields) -> dict:
        resp = await upload(wav, project_id=fields.pop("project_id", project["id"]), **fields)
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]
    return make


async def legacy_id(client, admin, public_id: str) -> int:
    return (await client.get(f"/recordings/{public_id}/results", headers=admin)).json()["data"]["recording_id"]


async def test_get_by_public_id_and_by_legacy_id(client, admin, uploaded):
    rec = await uploaded()
    by_public = await client.get(f"/recordings/{rec['public_id']}", headers=admin)
    by_legacy = await client.get(f"/recordings/{await legacy_id(client, admin, rec['public_id'])}", headers=admin)
    assert by_public.status_code == by_legacy.status_code == 200
    assert by_public.json() == by_legacy.json() == {"data": rec}


@pytest.mark.parametrize("ref", ["999999", "268bf881-98ee-4652-8474-33f92a6dbca8", "not-an-id"])
async def test_unknown_recording_is_404(client, admin, ref):
    resp = await client.get(f"/recordings/{ref}", headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})


async def test_out_of_scope_recordings_are_404(client, make_key, uploaded, create_project):
    rec = await uploaded()
    other_project = await create_project("Elsewhere")
    for headers in (await make_key(account="other"), await make_key(project_id=other_project["id"])):
        for path in ("", "/audio_url", "/transcription", "/results", "/summary", "/shares"):
            resp = await client.get(f"/recordings/{rec['public_id']}{path}", headers=headers)
            assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"}), path


async def test_list_pagination_and_meta(client, admin, uploaded):
    made = [await uploaded(name=f"r{i}") for i in range(5)]
    resp = await client.get("/recordings", params={"per_page": 2, "page": 2}, headers=admin)
    body = resp.json()
    assert body["meta"] == {"current_page": 2, "per_page": 2, "total_pages": 3, "total_count": 5}
    assert [r["name"] for r in body["data"]] == ["r2", "r1"]  # newest first
    assert (await client.get("/recordings", headers=admin)).json()["meta"]["per_page"] == 20
    assert (await client.get("/recordings", params={"per_page": 500}, headers=admin)).json()["meta"]["per_page"] == 100
    assert {r["public_id"] for r in (await client.get("/recordings", headers=admin)).json()["data"]} == {
        r["public_id"] for r in made}


async def test_list_tag_filter_matches_any(client, admin, uploaded, project):
    a = (await client.post("/tags", json={"name": "a", "project_id": project["id"]}, headers=admin)).json()["data"]
    b = (await client.post("/tags", json={"name": "b", "project_id": project["id"]}, headers=admin)).json()["data"]
    with_a = await uploaded(**{"tag_ids[]": [str(a["id"])]})
    with_b = await uploaded(**{"tag_ids[]": [str(b["id"])]})
    await uploaded()
    resp = await client.get("/recordings", params=[("tag_ids[]", a["id"]), ("tag_ids[]", b["id"])], headers=admin)
    assert {r["public_id"] for r in resp.json()["data"]} == {with_a["public_id"], with_b["public_id"]}
    resp = await client.get("/recordings", params={"tag_ids[]": a["id"]}, headers=admin)
    assert [r["public_id"] for r in resp.json()["data"]] == [with_a["public_id"]]


async def test_list_filters(client, admin, uploaded, create_operator, create_project, tmp_path, upload):
    op = await create_operator()
    other = await create_project("Other", language="fr")
    first = await uploaded(name="Alpha call", operator_id=op["id"], called_at="2026-01-05T10:00:00Z")
    second = await uploaded(name="beta", language="en", called_at="2026-03-05T10:00:00Z")
    long = make_audio(tmp_path / "long.wav", "wav", seconds=6.0)
    third = (await upload(long, project_id=other["id"])).json()["data"]

    async def ids(**params) -> set[str]:
        resp = await client.get("/recordings", params=params, headers=admin)
        assert resp.status_code == 200, resp.text
        return {r["public_id"] for r in resp.json()["data"]}

    assert await ids(project_id=other["id"]) == {third["public_id"]}
    assert await ids(operator_id=op["id"]) == {first["public_id"]}
    assert await ids(language="en") == {second["public_id"]}
    assert await ids(language="fr") == {third["public_id"]}
    assert await ids(status="pending") == {first["public_id"], second["public_id"], third["public_id"]}
    assert await ids(status="completed") == set()
    assert await ids(called_from="2026-02-01T00:00:00Z") == {second["public_id"]}
    assert await ids(called_to="2026-02-01T00:00:00Z") == {first["public_id"]}
    assert await ids(min_duration_ms=5000) == {third["public_id"]}
    assert await ids(max_duration_ms=5000) == {first["public_id"], second["public_id"]}
    assert await ids(q="ALPHA") == {first["public_id"]}
    assert await ids(q="%") == set()
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    assert await ids(created_from=future) == set()
    assert len(await ids(created_to=future)) == 3


async def test_list_rejects_bad_filters(client, admin):
    for params in ({"status": "done"}, {"page": 0}, {"called_from": "soon"}, {"project_id": "x"}):
        assert (await client.get("/recordings", params=params, headers=admin)).status_code == 422


async def test_scoped_key_lists_only_its_project(client, make_key, uploaded, create_project):
    other = await create_project("Other")
    mine = await uploaded()
    await uploaded(project_id=other["id"])
    scoped = await make_key(project_id=mine["project_id"])
    assert [r["public_id"] for r in (await client.get("/recordings", headers=scoped)).json()["data"]] == [
        mine["public_id"]]
    resp = await client.get("/recordings", params={"project_id": other["id"]}, headers=scoped)
    assert resp.status_code == 403


async def test_filters_endpoint(client, admin, uploaded, project, create_operator):
    op = await create_operator("Ann")
    tag = (await client.post("/tags", json={"name": "vip", "project_id": project["id"]}, headers=admin)).json()["data"]
    await uploaded(operator_id=op["id"], called_at="2026-01-05T10:00:00Z")
    data = (await client.get("/recordings/filters", headers=admin)).json()["data"]
    assert data["projects"] == [{"id": project["id"], "name": project["name"]}]
    assert data["operators"] == [{"id": op["id"], "name": "Ann"}]
    assert data["tags"][0]["id"] == tag["id"]
    assert data["statuses"] == ["pending", "processing", "completed", "failed"]
    assert data["status_counts"] == {"pending": 1} and data["languages"] == ["de"]
    assert data["called_at"]["min"].startswith("2026-01-05")


# ----- changing ---------------------------------------------------------------------------------

async def test_patch_fields(client, admin, uploaded, project, create_operator):
    rec = await uploaded()
    op = await create_operator()
    tag = (await client.post("/tags", json={"name": "t", "project_id": project["id"]}, headers=admin)).json()["data"]
    resp = await client.patch(f"/recordings/{rec['public_id']}", headers=admin, json={
        "name": "Renamed", "operator_id": op["id"], "called_at": "2026-02-02T08:00:00Z", "tag_ids": [tag["id"]],
        "processing_restricted": True})
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert (data["name"], data["operator_id"], data["tag_ids"], data["processing_restricted"]) == (
        "Renamed", op["id"], [tag["id"]], True)
    assert data["called_at"].startswith("2026-02-02T08:00:00")
    resp = await client.patch(f"/recordings/{rec['public_id']}", json={"tag_ids": []}, headers=admin)
    assert resp.json()["data"]["tag_ids"] == []


async def test_patch_move_rules(client, admin, make_key, uploaded, project, create_project):
    other = await create_project("Other")
    tag = (await client.post("/tags", json={"name": "t", "project_id": project["id"]}, headers=admin)).json()["data"]
    rec = await uploaded(**{"tag_ids[]": [str(tag["id"])]})
    scoped = await make_key(project_id=project["id"])
    resp = await client.patch(f"/recordings/{rec['public_id']}", json={"project_id": other["id"]}, headers=scoped)
    assert (resp.status_code, resp.json()) == (403, {"error": "project_id does not match this API key's project"})
    resp = await client.patch(f"/recordings/{rec['public_id']}", json={"project_id": 999}, headers=admin)
    assert resp.status_code == 404
    resp = await client.patch(f"/recordings/{rec['public_id']}", json={"project_id": other["id"]}, headers=admin)
    assert resp.status_code == 200
    assert resp.json()["data"]["project_id"] == other["id"] and resp.json()["data"]["tag_ids"] == []
    # the scoped key of the old project no longer sees it
    assert (await client.get(f"/recordings/{rec['public_id']}", headers=scoped)).status_code == 404


async def test_patch_validation(client, admin, uploaded, create_project):
    rec = await uploaded()
    other = await create_project("Other")
    foreign = (await client.post("/tags", json={"name": "x", "project_id": other["id"]}, headers=admin)).json()["data"]
    for body in ({"name": " "}, {"operator_id": 999}, {"tag_ids": [foreign["id"]]}, {"tag_ids": ["a"]},
                 {"processing_restricted": "yes"}):
        resp = await client.patch(f"/recordings/{rec['public_id']}", json=body, headers=admin)
        assert resp.status_code == 422, body


async def test_delete_removes_everything(client, admin, uploaded, settings, runtime):
    rec = await uploaded()
    assert len(blob_files(settings)) == 1
    resp = await client.delete(f"/recordings/{rec['public_id']}", headers=admin)
    assert resp.status_code == 204 and resp.content == b""
    assert (await client.get(f"/recordings/{rec['public_id']}", headers=admin)).status_code == 404
    assert blob_files(settings) == []
    assert count_rows(runtime, Recording) == count_rows(runtime, Job) == 0
    assert (await client.delete(f"/recordings/{rec['public_id']}", headers=admin)).status_code == 404


async def test_delete_needs_delete_permission(client, make_key, uploaded):
    rec = await uploaded()
    resp = await client.delete(f"/recordings/{rec['public_id']}", headers=await make_key("read,write"))
    assert (resp.status_code, resp.json()) == (403, {"error": "Delete permission required"})


async def test_deleting_a_project_deletes_its_recordings(client, admin, uploaded, project, settings, runtime):
    await uploaded()
    await uploaded()
    assert (await client.delete(f"/projects/{project['id']}", headers=admin)).status_code == 204
    assert count_rows(runtime, Recording) == 0 and blob_files(settings) == []


async def test_counts_on_projects_and_tags(client, admin, uploaded, project):
    tag = (await client.post("/tags", json={"name": "t", "project_id": project["id"]}, headers=admin)).json()["data"]
    await uploaded(**{"tag_ids[]": [str(tag["id"])]})
    await uploaded()
    detail = (await client.get(f"/projects/{project['id']}", headers=admin)).json()["data"]
    assert detail["recordings_count"] == 2
    tags = (await client.get("/tags", params={"project_id": project["id"]}, headers=admin)).json()["data"]
    assert tags[0]["recordings_count"] == 1
    await client.delete(f"/tags/{tag['id']}", headers=admin)
    rec_list = (await client.get("/recordings", headers=admin)).json()["data"]
    assert all(r["tag_ids"] == [] for r in rec_list)


# ----- audio URL and read-outs --------------------------------------------------------------------

async def test_audio_url_serves_the_original_bytes_until_deleted(client, admin, uploaded, wav):
    rec = await uploaded()
    resp = await client.get(f"/recordings/{rec['public_id']}/audio_url", headers=admin)
    assert resp.status_code == 200
    data = resp.json()["data"]
    assert datetime.fromisoformat(data["expires_at"]) > datetime.now(UTC)
    path = "/" + data["url"].split("/", 3)[3]
    audio = await client.get(f"http://callscope.test{path}")
    assert audio.status_code == 200 and audio.content == wav.read_bytes()
    assert audio.headers["content-type"] == "audio/wav"
    part = await client.get(f"http://callscope.test{path}", headers={"Range": "bytes=0-99"})
    assert part.status_code == 206 and part.content == wav.read_bytes()[:100]
    await client.delete(f"/recordings/{rec['public_id']}", headers=admin)
    assert (await client.get(f"http://callscope.test{path}")).status_code == 404


@pytest.mark.parametrize("settings_overrides", [{"audio_url_ttl_seconds": 10}])
async def test_audio_url_stops_working_after_expiry(client, admin, uploaded, runtime):
    rec = await uploaded()
    url = (await client.get(f"/recordings/{rec['public_id']}/audio_url", headers=admin)).json()["data"]["url"]
    path = "/" + url.split("/", 3)[3]
    assert (await client.get(f"http://callscope.test{path}")).status_code == 200
    later = datetime.now(UTC) + timedelta(seconds=11)
    runtime.ctx.clock = lambda: later
    assert (await client.get(f"http://callscope.test{path}")).status_code == 403
    tampered = path[:-3] + ("AAA" if not path.endswith("AAA") else "BBB")
    assert (await client.get(f"http://callscope.test{tampered}")).status_code in (403, 404)


async def test_read_outs_before_analysis(client, admin, uploaded):
    rec = await uploaded()
    ref = rec["public_id"]
    results = (await client.get(f"/recordings/{ref}/results", headers=admin)).json()["data"]
    assert isinstance(results["recording_id"], int)
    assert results == {"recording_id": results["recording_id"], "status": "pending", "goals": [], "pauses": [],
                       "categories": [], "extracted_data": [], "speakers": [], "characteristics": None, "models": [],
                       "redaction": None, "trackers": [], "analyzed_at": None, "live": None, "scorecards": []}
    transcription = (await client.get(f"/recordings/{ref}/transcription", headers=admin)).json()["data"]
    assert transcription["status"] == "pending" and transcription["segments"] == []
    assert transcription["redaction"] is None
    summary = (await client.get(f"/recordings/{ref}/summary", headers=admin)).json()["data"]
    assert summary["status"] == "pending" and summary["summary"] is None
