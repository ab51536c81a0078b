"""The upload page's rules over plain HTTP, in process, on SQLite and PostgreSQL, one by one: admins only (404 to
members, on the page and the post); the CSRF token checked before any audio is kept; only the account's projects; the
API's limits and messages (a file over its format's limit, a file that is not audio); the answer to the page's script
(JSON: where to follow the recording) and to a plain form post (the recording's page)."""

from __future__ import annotations

import httpx
import pytest

from callscope.audio.probe import UNSUPPORTED
from callscope.catalog.tables import Recording
from callscope.services import accounts, projects
from callscope.statuses import RecordingStatus
from tests.api.conftest import blob_files, count_rows
from tests.audio_samples import make_audio
from tests.pages.conftest import csrf_of
from tests.pages.test_settings_rules import ADMIN, admin_principal, signed_in

JSON = {"Accept": "application/json"}


@pytest.fixture
def settings_overrides() -> dict:
    return {"upload_limits_mb": {"wav": 1, "mp3": 1, "m4a": 1, "ogg": 1, "webm": 1, "flac": 1}}


@pytest.fixture
async def admin(runtime, pages) -> httpx.AsyncClient:
    await accounts.add_member(runtime.ctx, "default", ADMIN, "Ada", "admin")
    return await signed_in(runtime, pages, ADMIN)


@pytest.fixture
async def project_id(runtime) -> int:
    project = await projects.create_project(runtime.ctx, admin_principal(runtime), {"name": "Support",
                                                                                    "language": "en"})
    return project.status.id


@pytest.fixture
def wav(tmp_path):
    return make_audio(tmp_path / "call.wav", "wav", seconds=2.0)


async def post(client: httpx.AsyncClient, path, project_id: int, csrf: str | None, headers=JSON) -> httpx.Response:
    fields = {"project_id": str(project_id)} | ({"csrf": csrf} if csrf is not None else {})
    return await client.post("/upload", data=fields, headers=headers,
                             files={"file": (path.name, path.read_bytes(), "application/octet-stream")})


async def token(client: httpx.AsyncClient) -> str:
    return csrf_of((await client.get("/upload")).text)


def nothing_kept(runtime, settings) -> bool:
    return count_rows(runtime, Recording) == 0 and blob_files(settings) == []


async def test_the_script_gets_where_to_follow_the_recording(runtime, admin, project_id, wav):
    page = await admin.get("/upload")
    assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]
    assert f'<option value="{project_id}"' in page.text and "WAV up to 1 MB" in page.text
    resp = await post(admin, wav, project_id, csrf_of(page.text))
    assert resp.status_code == 201, resp.text
    got = resp.json()
    assert got["status"] == RecordingStatus.PENDING and got["name"] == "call.wav"
    assert got["url"] == f"/recordings/{got['public_id']}" and got["state"] == f"{got['url']}/state"
    state = await admin.get(got["state"])
    assert state.json()["status"] == RecordingStatus.PENDING  # the recording page's own state, for an admin too


async def test_a_plain_form_post_answers_with_the_recordings_page(runtime, admin, project_id, wav):
    resp = await post(admin, wav, project_id, await token(admin), headers={"Accept": "text/html"})
    assert resp.status_code == 303 and resp.headers["location"].startswith("/recordings/")
    assert (await admin.get(resp.headers["location"])).status_code == 200


async def test_a_member_gets_not_found_on_the_page_and_the_post(runtime, member, project_id, wav, settings):
    token_ = csrf_of((await member.get("/recordings")).text)
    assert (await member.get("/upload")).status_code == 404
    assert (await post(member, wav, project_id, token_)).status_code == 404
    assert nothing_kept(runtime, settings)


async def test_a_signed_out_visitor_is_sent_to_sign_in(pages):
    resp = await pages.get("/upload")
    assert resp.status_code == 303 and resp.headers["location"] == "/sign-in?next=/upload"


@pytest.mark.parametrize("csrf", [None, "", "wrong"])
async def test_a_missing_or_wrong_csrf_token_is_refused_before_any_audio_is_kept(runtime, admin, project_id, wav,
                                                                                settings, csrf):
    resp = await post(admin, wav, project_id, csrf)
    assert resp.status_code == 400
    assert resp.json() == {"error": "This form has expired. Go back, reload the page and try again."}
    assert nothing_kept(runtime, settings)


async def test_another_accounts_project_is_not_found(runtime, admin, wav, settings):
    theirs = await projects.create_project(runtime.ctx, admin_principal(runtime, "other"), {"name": "Theirs",
                                                                                            "language": "en"})
    resp = await post(admin, wav, theirs.status.id, await token(admin))
    assert resp.status_code == 404
    assert nothing_kept(runtime, settings)


async def test_a_file_over_its_formats_limit_is_refused_with_the_apis_message(runtime, admin, project_id, tmp_path,
                                                                              settings):
    big = make_audio(tmp_path / "long.wav", "wav", seconds=40.0)  # about 1.3 MB: over the 1 MB set here
    resp = await post(admin, big, project_id, await token(admin))
    assert (resp.status_code, resp.json()) == (413, {"error": "File is larger than the 1 MB allowed for this format"})
    html = await post(admin, big, project_id, await token(admin), headers={"Accept": "text/html"})
    assert html.status_code == 413 and "File is larger than the 1 MB allowed for this format" in html.text
    assert nothing_kept(runtime, settings)


async def test_a_file_that_is_not_audio_is_refused_with_the_apis_message(runtime, admin, project_id, tmp_path,
                                                                         settings):
    notes = tmp_path / "notes.wav"
    notes.write_bytes(b"just some text, not audio\n" * 20)
    resp = await post(admin, notes, project_id, await token(admin))
    assert (resp.status_code, resp.json()) == (422, {"error": UNSUPPORTED})
    assert nothing_kept(runtime, settings)
