"""/files/{token}, the audio behind a signed URL: any recording name becomes a valid Content-Disposition
(RFC 6266: an ASCII fallback and the UTF-8 `filename*`), HEAD answers GET's headers without a body, and ranges
work with both."""

from __future__ import annotations

from urllib.parse import unquote

import pytest

from callscope.blobs import content_disposition


@pytest.fixture
def signed_path(client, admin, upload, wav, project):
    """Upload `wav` under `name` and return the path of its signed audio URL."""
    async def make(name: str = "call") -> str:
        resp = await upload(wav, project_id=project["id"], name=name)
        assert resp.status_code == 201, resp.text
        rec = resp.json()["data"]
        url = (await client.get(f"/recordings/{rec['public_id']}/audio_url", headers=admin)).json()["data"]["url"]
        return "http://callscope.test/" + url.split("/", 3)[3]
    return make


@pytest.mark.parametrize(("name", "fallback"), [("日本語", "___.wav"), ("Ωmega", "_mega.wav"),
                                                ("café", "caf_.wav")])
async def test_a_name_in_any_script_downloads_with_an_rfc_6266_disposition(client, signed_path, wav, name, fallback):
    resp = await client.get(await signed_path(name))
    assert resp.status_code == 200 and resp.content == wav.read_bytes()
    disposition = resp.headers["content-disposition"]
    assert disposition.isascii()
    assert disposition.startswith(f'attachment; filename="{fallback}"; ')
    encoded = disposition.split("filename*=UTF-8''", 1)[1]
    assert unquote(encoded, encoding="utf-8") == f"{name}.wav"


async def test_an_ascii_name_needs_no_extended_form(client, signed_path):
    resp = await client.get(await signed_path("Call 12.wav"))
    assert resp.headers["content-disposition"] == 'attachment; filename="Call 12.wav"'


@pytest.mark.parametrize(("filename", "expected"), [
    ('say "hi"\\now\r\n.wav', 'attachment; filename="say _hi__now__.wav"; '
                              "filename*=UTF-8''say%20%22hi%22%5Cnow%0D%0A.wav"),
    ("tab\there\x7f.mp3", 'attachment; filename="tab_here_.mp3"; filename*=UTF-8\'\'tab%09here%7F.mp3'),
])
def test_the_fallback_has_no_quotes_backslashes_or_control_characters(filename, expected):
    assert content_disposition(filename) == expected


async def test_head_answers_the_headers_of_get_without_a_body(client, signed_path, wav):
    path = await signed_path("日本語")
    get, head = await client.get(path), await client.head(path)
    assert head.status_code == 200 and head.content == b""
    for name in ("content-length", "content-type", "accept-ranges", "content-disposition", "cache-control"):
        assert head.headers[name] == get.headers[name], name
    assert head.headers["content-length"] == str(wav.stat().st_size)
    assert head.headers["accept-ranges"] == "bytes"


@pytest.mark.parametrize("method", ["GET", "HEAD"])
async def test_ranges_with_get_and_head(client, signed_path, wav, method):
    path, audio = await signed_path(), wav.read_bytes()
    part = await client.request(method, path, headers={"Range": "bytes=10-109"})
    assert part.status_code == 206 and part.headers["content-length"] == "100"
    assert part.headers["content-range"] == f"bytes 10-109/{len(audio)}"
    assert part.content == (audio[10:110] if method == "GET" else b"")
    tail = await client.request(method, path, headers={"Range": "bytes=-20"})
    assert (tail.status_code == 206
            and tail.headers["content-range"] == f"bytes {len(audio) - 20}-{len(audio) - 1}/{len(audio)}")
    assert tail.content == (audio[-20:] if method == "GET" else b"")
    beyond = await client.request(method, path, headers={"Range": f"bytes={len(audio)}-"})
    assert beyond.status_code == 416 and beyond.headers["content-range"] == f"bytes */{len(audio)}"


async def test_head_of_a_bad_token_is_refused_like_get(client, signed_path):
    path = await signed_path()
    tampered = path[:-3] + ("AAA" if not path.endswith("AAA") else "BBB")
    assert (await client.head(tampered)).status_code == (await client.get(tampered)).status_code
