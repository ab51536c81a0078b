"""Input limits at the API's edge (callscope/validation.py, api/schemas.py): values longer than their column,
NUL and other control characters, language tags that are not BCP 47, offsets past BIGINT. On PostgreSQL each
of these once answered 500 (after the whole audio had streamed in, for uploads); SQLite stored them silently.
Every case runs on both catalogs."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import AsyncIterator

import pytest
from pydantic import ValidationError

from callscope.catalog.tables import Recording
from callscope.resources.kinds import TagSpec
from callscope.validation import NON_BLANK_DISPLAY_LINE
from tests.api.conftest import blob_files, catalog_on_both, count_rows

BOUNDARY = "limits-boundary"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_settings(request) -> dict:
    return catalog_on_both(request)


@pytest.fixture
def store_settings() -> dict:
    """The limits are the API's, whichever store holds the objects (tests/api covers both stores elsewhere)."""
    return {"store": "sqlite"}


def names_field(resp, field: str) -> bool:
    return resp.status_code == 422 and any(message.startswith(field) for message in resp.json()["errors"])


# ----- recording uploads ------------------------------------------------------------------------------

@pytest.mark.parametrize(("field", "value"), [
    ("external_id", "e" * 300),
    ("external_id", "crm\x00-1"),
    ("language", "en-US-x-abcd-efgh"),  # 17 characters, one more than the column
    ("language", "zz-notalang-verylong"),
    ("language", "en_US"),
    ("language", "en\x00"),
    ("recording_source", "s" * 65),
    ("recording_source", "pbx\x1b"),
    ("name", "call\x00"),
    ("name", "n" * 256),
    ("conversation_id", "c" * 37),
    ("called_at", "9999-12-31T23:59:59-23:59"),  # in UTC past year 9999
])
async def test_upload_field_beyond_its_column_or_with_control_characters_is_422(upload, wav, project, runtime,
                                                                                settings, field, value):
    resp = await upload(wav, project_id=project["id"], **{field: value})
    assert names_field(resp, field), resp.text
    assert count_rows(runtime, Recording) == 0 and blob_files(settings) == []


@pytest.mark.parametrize("filename", ["call\x00.wav", "call\x1b.wav", "c" * 252 + ".wav"])
async def test_upload_file_name_with_nul_or_beyond_its_column_is_422(client, admin, wav, project, runtime, filename):
    # by hand: httpx would percent-encode the control characters of a file name
    body = (f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="project_id"\r\n\r\n{project["id"]}\r\n'
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="{filename}"\r\n\r\n'
            ).encode() + wav.read_bytes() + f"\r\n--{BOUNDARY}--\r\n".encode()
    resp = await client.post("/recordings", content=body,
                             headers={**admin, "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
    assert names_field(resp, "file name"), resp.text
    assert count_rows(runtime, Recording) == 0


async def test_values_at_the_limits_are_stored(upload, wav, project, runtime):
    resp = await upload(wav, project_id=project["id"], external_id="e" * 255, language="EN-us",
                        recording_source="s" * 64, name="n" * 255, filename="f" * 251 + ".wav")
    assert resp.status_code == 201, resp.text
    data = resp.json()["data"]
    assert (data["external_id"], data["language"], data["recording_source"], data["name"]) == (
        "e" * 255, "en-US", "s" * 64, "n" * 255)


async def _multipart(fields: dict[str, str], pulled: list[int], chunks: int) -> AsyncIterator[bytes]:
    head = "".join(f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
                   for k, v in fields.items())
    yield (head + f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\n'
                  "Content-Type: audio/wav\r\n\r\n").encode()
    for i in range(chunks):
        pulled.append(i)
        yield b"\0" * (1 << 20)
    yield f"\r\n--{BOUNDARY}--\r\n".encode()


@pytest.mark.parametrize("fields", [{"external_id": "x" * 300}, {"language": "zz-notalang-verylong"},
                                    {"recording_source": "s\x00"}, {"operator_id": "abc"}])
async def test_fields_sent_before_the_file_are_refused_before_the_audio_streams_in(client, admin, project, fields,
                                                                                   settings):
    pulled: list[int] = []
    resp = await client.post("/recordings", content=_multipart({"project_id": str(project["id"]), **fields},
                                                                pulled, chunks=64),
                             headers={**admin, "Content-Type": f"multipart/form-data; boundary={BOUNDARY}"})
    assert names_field(resp, next(iter(fields))), resp.text
    assert len(pulled) <= 2, f"{len(pulled)} MiB of audio read before the refusal"
    assert blob_files(settings) == []


# ----- the recordings list ----------------------------------------------------------------------------

@pytest.mark.parametrize(("params", "field"), [
    ({"q": "\x00"}, "q"),
    ({"external_id": "a\x00b"}, "external_id"),
    ({"language": "en\x00"}, "language"),
    ({"q": "q" * 256}, "q"),
    ({"page": str(2**63 - 1)}, "page"),
    ({"page": "92233720368547759"}, "page"),  # one more than the largest page whose offset fits BIGINT
    ({"per_page": str(2**63)}, "per_page"),
    ({"created_to": ""}, "created_to"),
    ({"min_duration_ms": ""}, "min_duration_ms"),
    ({"called_from": "0001-01-01T00:00:00+23:59"}, "called_from"),
])
async def test_list_query_values_the_database_would_refuse_are_422(client, admin, params, field):
    resp = await client.get("/recordings", params=params, headers=admin)
    assert names_field(resp, field), resp.text


async def test_the_last_page_whose_offset_fits_is_an_empty_page(client, admin):
    resp = await client.get("/recordings", params={"page": str((2**63 - 1) // 100), "per_page": "100"}, headers=admin)
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"] == [] and resp.json()["meta"]["current_page"] == (2**63 - 1) // 100


async def test_language_filter_is_case_insensitive(client, admin, upload, wav, project):
    await upload(wav, project_id=project["id"], language="pt-br")
    resp = await client.get("/recordings", params={"language": "PT-BR"}, headers=admin)
    assert [r["language"] for r in resp.json()["data"]] == ["pt-BR"]


# ----- changing a recording ---------------------------------------------------------------------------

@pytest.mark.parametrize(("body", "field"), [
    ({"name": "x\x00"}, "name"), ({"name": "x" * 256}, "name"), ({"name": None}, "name"),
    ({"project_id": None}, "project_id"), ({"processing_restricted": None}, "processing_restricted"),
    ({"called_at": "9999-12-31T23:59:59-01:00"}, "called_at"),
])
async def test_patch_values_the_database_would_refuse_are_422(client, admin, upload, wav, project, body, field):
    rec = (await upload(wav, project_id=project["id"])).json()["data"]
    resp = await client.patch(f"/recordings/{rec['public_id']}", json=body, headers=admin)
    assert names_field(resp, field), resp.text


async def test_share_ids_beyond_bigint_are_not_found(client, admin, upload, wav, project):
    rec = (await upload(wav, project_id=project["id"])).json()["data"]
    resp = await client.delete(f"/recordings/{rec['public_id']}/shares/{2**63}", headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Resource not found"})


# ----- objects: projects, operators, tags, virtual numbers ---------------------------------------------

@pytest.mark.parametrize(("body", "field"), [
    ({"name": "Sales\x00"}, "name"),
    ({"name": "x" * 100_000}, "name"),
    ({"name": "Sales\nTeam"}, "name"),
    ({"language": "zz-notalang-verylong"}, "language"),
    ({"language": "en\x00"}, "language"),
    ({"language": "en_US"}, "language"),
    ({"goal_language": "tlh_Latn"}, "goal_language"),
    ({"summary_language": "e"}, "summary_language"),
    ({"transcription_hints": "x" * 500_000}, "transcription_hints"),
    ({"description": "d" * 4001}, "description"),
    ({"description": "bell\x07"}, "description"),
    ({"industry": "i" * 256}, "industry"),
])
async def test_project_fields_beyond_their_limits_are_422(client, admin, body, field):
    resp = await client.post("/projects", json={"name": "Sales", "language": "en", **body}, headers=admin)
    assert names_field(resp, field), resp.text


async def test_project_language_that_breaks_uploads_cannot_be_set(client, admin, create_project, upload, wav):
    project = await create_project()
    resp = await client.patch(f"/projects/{project['id']}", json={"language": "zz-notalang-verylong"}, headers=admin)
    assert names_field(resp, "language"), resp.text
    assert (await upload(wav, project_id=project["id"])).status_code == 201


async def test_project_text_keeps_line_breaks_and_languages_their_conventional_case(client, admin):
    resp = await client.post("/projects", json={"name": " Sales ", "language": "ZH-hant-tw", "summary_language": "EN",
                                                "description": "Line one\n\tLine two", "transcription_hints": "a\r\nb"},
                             headers=admin)
    assert resp.status_code == 201, resp.text
    data = resp.json()["data"]
    assert (data["name"], data["language"], data["summary_language"]) == ("Sales", "zh-Hant-TW", "en")
    assert data["description"] == "Line one\n\tLine two"


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "Jane\x00"}, "name"), ({"name": "J" * 256}, "name"), ({"external_id": "e\x00"}, "external_id"),
    ({"external_id": "e" * 256}, "external_id"), ({"email": "jane@example.com\x00"}, "email"),
    ({"phone_number": "+1 415\x00"}, "phone_number"),
])
async def test_operator_fields_beyond_their_limits_are_422(client, admin, body, field):
    resp = await client.post("/operators", json={"name": "Jane Doe", **body}, headers=admin)
    assert names_field(resp, field), resp.text


@pytest.mark.parametrize("name", ["vip\x00", "v" * 256, "a\tb"])
async def test_tag_names_beyond_their_limits_are_422(client, admin, project, name):
    resp = await client.post("/tags", json={"name": name, "project_id": project["id"]}, headers=admin)
    assert names_field(resp, "name"), resp.text


SPOOFED_NAMES = ["Sales\u202e", "Ann\u202eeiluJ", "Sa\u200bles", "\u2066Sales\u2069", "Sales\ufeff", "Sa\u00adles",
                 "Sales\U000e0041", "Sales\u2028Team"]


@pytest.mark.parametrize("name", SPOOFED_NAMES)
async def test_display_names_with_invisible_formatting_characters_are_422(client, admin, project, name):
    """A bidirectional override (U+202E) or another invisible character lets a name look like another one."""
    tries = [("/projects", {"name": name, "language": "en"}), ("/operators", {"name": name}),
             ("/tags", {"name": name, "project_id": project["id"]}), (f"/projects/{project['id']}", {"name": name})]
    for path, body in tries:
        send = client.patch if path.startswith("/projects/") else client.post
        resp = await send(path, json=body, headers=admin)
        assert names_field(resp, "name"), (path, resp.text)
        assert "invisible formatting characters" in resp.text, resp.text


def test_every_invisible_formatting_character_is_refused_in_display_names():
    """Every format character (Unicode category Cf) of this Python's database but ZWNJ and ZWJ, and the line and
    paragraph separators, by the pattern (Python's re, as JSON Schema validators read it) and by the resource model
    (pydantic's own regex engine)."""
    refused = [c for c in map(chr, range(0x110000)) if unicodedata.category(c) in ("Cf", "Zl", "Zp")
               and c not in "\u200c\u200d"]
    assert len(refused) > 150
    for char in refused:
        assert not re.fullmatch(NON_BLANK_DISPLAY_LINE, f"A{char}B"), f"U+{ord(char):04X}"
        with pytest.raises(ValidationError):
            TagSpec(name=f"A{char}B", project="p")
    assert TagSpec(name="A\u200cB\u200dC", project="p").name == "A\u200cB\u200dC"


@pytest.mark.parametrize("name", ["می\u200cخواهم", "👩\u200d💻 Support", "Zoë Ødegård", "客服", "हिन्दी"])
async def test_display_names_in_every_script_are_kept(client, admin, name):
    """The zero-width non-joiner and joiner stay: Persian, the Indic scripts and emoji sequences are spelt with them."""
    resp = await client.post("/projects", json={"name": name, "language": "en"}, headers=admin)
    assert resp.status_code == 201 and resp.json()["data"]["name"] == name, resp.text


async def test_integers_written_with_an_exponent_are_integers(client, admin):
    resp = await client.post("/projects", json={"name": "Sales", "language": "en", "retention_days": 3e1},
                             headers=admin)
    assert resp.status_code == 201 and resp.json()["data"]["retention_days"] == 30
    resp = await client.post("/tags", json={"name": "vip", "project_id": 1e11}, headers=admin)
    assert (resp.status_code, resp.json()) == (404, {"error": "Project not found"})


async def test_query_integers_written_as_json_schema_counts_them_are_integers(client, admin, project):
    resp = await client.get("/tags", params={"project_id": f"{project['id']}.0"}, headers=admin)
    assert resp.status_code == 200, resp.text
    resp = await client.get("/recordings", params={"page": "2e0", "per_page": "1.5"}, headers=admin)
    assert names_field(resp, "per_page") and not names_field(resp, "page"), resp.text
