"""The sign-in and access rules of the members' pages, over real HTTP against a real `callscope serve`: one-time
links, expiry, the same answer for every address, rate limits, CSRF, sessions ended by sign-out or by locking, and
the recording page refused to everyone but the active members of its account."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from sqlalchemy import create_engine, update

from callscope.catalog import jobs
from callscope.catalog.tables import SignInLink
from callscope.config import Settings
from callscope.runtime import opened
from callscope.workers import outcomes
from tests.audio_samples import make_audio
from tests.live import start_server
from tests.pages.site import API, Site, csrf_of, make_site, sign_in, upload

MEMBERS = [("default", "ana@example.com", "Ana Reviewer"), ("default", "lou@example.com", "Lou Locked"),
           ("other", "otto@example.com", "Otto Other"), ("default", "max@example.com", "Max Multi"),
           ("other", "max@example.com", "Max Multi")]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Site:
    data_dir = tmp_path_factory.mktemp("pages") / "data"
    server = start_server(data_dir, dispatcher_enabled="false", store_poll_interval="0.05",
                          sign_in_per_email_per_hour="100", sign_in_per_client_per_hour="1000")
    try:
        site = make_site(server, data_dir, MEMBERS)
        audio = make_audio(data_dir.parent / "call.wav", "wav", seconds=2.0)
        site.failing = upload(site, audio, "Call that will fail")  # first in the job queue: see the failed test
        site.recording = upload(site, audio, "Renewal call with ACME")
        yield site
    finally:
        server.stop()


def page_of(site: Site) -> str:
    return f"/recordings/{site.recording}"


def ask_for_link(client: httpx.Client, address: str) -> httpx.Response:
    form = client.get("/sign-in")
    return client.post("/sign-in", data={"email": address, "csrf": csrf_of(form.text), "next": "/recordings"})


def test_an_active_member_signs_in_and_lands_on_the_page_they_asked_for(site):
    anonymous = httpx.get(f"{site.url}{page_of(site)}")
    assert anonymous.status_code == 303 and anonymous.headers["location"] == f"/sign-in?next={page_of(site)}"
    client, landed = sign_in(site, "ana@example.com", page_of(site))
    assert landed == page_of(site)
    resp = client.get(page_of(site))
    assert resp.status_code == 200 and "Renewal call with ACME" in resp.text
    assert (resp.headers["cache-control"] == "no-store"
            and "script-src 'self'" in resp.headers["content-security-policy"])
    [cookie] = [c for c in client.cookies.jar if c.name == "callscope_session"]
    assert cookie.has_nonstandard_attr("HttpOnly") and cookie.path == "/"


def test_the_landing_page_is_always_one_of_ours(site):
    client, landed = sign_in(site, "ana@example.com", "//evil.example/phish")
    assert landed == "/recordings" and client.get(landed).status_code == 200
    resp = httpx.get(f"{site.url}/sign-in", params={"next": "https://evil.example/"}, cookies=client.cookies)
    assert resp.status_code == 303 and resp.headers["location"] == "/recordings"


def test_a_link_signs_in_once(site):
    client = httpx.Client(base_url=site.url)
    assert ask_for_link(client, "ana@example.com").status_code == 200
    link = site.sign_in_link("ana@example.com")
    token = link.split("token=", 1)[1]
    csrf = csrf_of(client.get(link.removeprefix(site.url)).text)
    assert client.post("/sign-in/link", data={"token": token, "csrf": csrf}).status_code == 303
    again = httpx.Client(base_url=site.url)
    csrf = csrf_of(again.get(link.removeprefix(site.url)).text)
    resp = again.post("/sign-in/link", data={"token": token, "csrf": csrf})
    assert resp.status_code == 401 and "already used" in resp.text and "callscope_session" not in again.cookies


def test_an_expired_link_signs_nobody_in(site):
    client = httpx.Client(base_url=site.url)
    ask_for_link(client, "ana@example.com")
    link = site.sign_in_link("ana@example.com")
    engine = create_engine(f"sqlite:///{site.data_dir / 'catalog.db'}")
    with engine.begin() as conn:  # the link's minutes have passed
        conn.execute(update(SignInLink).where(SignInLink.used_at.is_(None))
                     .values(expires_at=datetime.now(UTC) - timedelta(seconds=1)))
    engine.dispose()
    csrf = csrf_of(client.get(link.removeprefix(site.url)).text)
    resp = client.post("/sign-in/link", data={"token": link.split("token=", 1)[1], "csrf": csrf})
    assert resp.status_code == 401 and "expired" in resp.text


def test_known_unknown_and_locked_addresses_get_the_same_answer_and_only_members_get_mail(site):
    site.server.cli("members", "lock", "--email", "lou@example.com")
    try:
        answers = {}
        for address in ("ana@example.com", "nobody@example.com", "lou@example.com"):
            resp = ask_for_link(httpx.Client(base_url=site.url), address)
            answers[address] = (resp.status_code, resp.text.replace(address, "ADDRESS"))
        assert len(set(answers.values())) == 1 and answers["ana@example.com"][0] == 200
        assert site.sign_in_link("ana@example.com")
        assert site.no_mail("nobody@example.com") and site.no_mail("lou@example.com")
    finally:
        site.server.cli("members", "unlock", "--email", "lou@example.com")


def test_forms_without_their_csrf_token_are_refused(site):
    client = httpx.Client(base_url=site.url)
    resp = client.post("/sign-in", data={"email": "ana@example.com", "next": "/recordings"})
    assert resp.status_code == 400 and site.no_mail("ana@example.com")
    ask_for_link(client, "ana@example.com")
    link = site.sign_in_link("ana@example.com")
    token = link.split("token=", 1)[1]
    stranger = httpx.Client(base_url=site.url)  # a page elsewhere posting the token: no nonce cookie of ours
    assert stranger.post("/sign-in/link", data={"token": token, "csrf": "x" * 64}).status_code == 400
    csrf = csrf_of(client.get(link.removeprefix(site.url)).text)
    assert client.post("/sign-in/link", data={"token": token, "csrf": csrf}).status_code == 303  # still unused
    assert client.post("/sign-out", data={"csrf": "forged"}).status_code == 400
    assert client.get(page_of(site)).status_code == 200  # still signed in


def test_sign_out_ends_the_session_on_the_server(site):
    client, _ = sign_in(site, "ana@example.com")
    session = client.cookies["callscope_session"]
    csrf = csrf_of(client.get("/recordings").text)
    resp = client.post("/sign-out", data={"csrf": csrf})
    assert resp.status_code == 200 and "Signed out" in resp.text
    replayed = httpx.get(f"{site.url}{page_of(site)}", cookies={"callscope_session": session})
    assert replayed.status_code == 303 and replayed.headers["location"].startswith("/sign-in")


def test_a_locked_member_is_thrown_out_on_the_next_request(site):
    client, _ = sign_in(site, "lou@example.com")
    assert client.get(page_of(site)).status_code == 200
    site.server.cli("members", "lock", "--email", "lou@example.com")
    try:
        time.sleep(0.5)  # the server's object cache follows the store (CALLSCOPE_STORE_POLL_INTERVAL)
        resp = client.get(page_of(site))
        assert resp.status_code == 303 and resp.headers["location"].startswith("/sign-in")
        assert "Renewal call" not in resp.text
    finally:
        site.server.cli("members", "unlock", "--email", "lou@example.com")
    time.sleep(0.5)
    assert client.get(page_of(site)).status_code == 303  # unlocking does not bring a thrown-out session back


def test_a_member_of_another_account_gets_not_found(site):
    client, _ = sign_in(site, "otto@example.com")
    assert client.get("/recordings").status_code == 200
    resp = client.get(page_of(site))
    assert resp.status_code == 404 and "Renewal call" not in resp.text
    assert client.get(f"{page_of(site)}/state").status_code == 404


def test_an_api_key_cannot_open_the_page(site):
    resp = httpx.get(f"{site.url}{page_of(site)}", headers=site.headers)
    assert resp.status_code == 303 and "Renewal call" not in resp.text
    assert httpx.get(f"{site.url}{page_of(site)}/state", headers=site.headers).status_code == 401
    paths = httpx.get(f"{site.url}{API}/openapi.json").json()["paths"]
    assert not [p for p in paths if not p.startswith(API)]  # the pages are no API operations


def test_a_member_of_several_accounts_chooses_one(site):
    client, _ = sign_in(site, "max@example.com")
    resp = client.get("/recordings")
    assert resp.status_code == 303 and resp.headers["location"] == "/accounts"
    choose = client.get("/accounts")
    assert "default" in choose.text and "other" in choose.text
    assert client.post("/accounts", data={"account": "nope", "csrf": csrf_of(choose.text)}).status_code == 404
    assert client.post("/accounts", data={"account": "other", "csrf": csrf_of(choose.text)}).status_code == 303
    listed = client.get("/recordings")
    assert listed.status_code == 200 and "· other" in listed.text and "Renewal call" not in listed.text
    assert client.get(page_of(site)).status_code == 200  # still a member of the recording's account


def test_the_list_filters_and_shows_what_was_shared(site):
    client, _ = sign_in(site, "ana@example.com")
    assert "Renewal call with ACME" in client.get("/recordings", params={"q": "acme"}).text
    assert "Renewal call" not in client.get("/recordings", params={"q": "nothing-like-it"}).text
    assert "Renewal call" not in client.get("/recordings", params={"status": "completed"}).text
    assert client.get("/recordings", params={"status": "bogus"}).status_code == 422
    assert client.get("/recordings", params={"q": "acme\x00"}).status_code == 422  # as the API: never to the database
    assert client.get("/recordings", params={"q": "a" * 1000}).status_code == 422
    assert "Renewal call" not in client.get("/recordings", params={"view": "shared"}).text
    resp = site.api("POST", f"/recordings/{site.recording}/shares", json={"email": "ana@example.com"})
    assert resp.status_code == 201 and resp.json()["data"]["url"] == f"{site.url}{page_of(site)}"
    assert f"{site.url}{page_of(site)}" in site.new_mail("ana@example.com")
    assert "Renewal call with ACME" in client.get("/recordings", params={"view": "shared"}).text


async def test_a_failed_recording_shows_why(site):
    async with opened(Settings(data_dir=site.data_dir, log_level="WARNING")) as rt:  # the dispatcher's part
        [claimed] = await rt.ctx.catalog.write(jobs.claim, 1, "test", 60, rt.ctx.clock(), 3)
        assert await outcomes.fail(rt.ctx, claimed, "the audio has no speech in it")
    client, _ = sign_in(site, "ana@example.com")
    resp = client.get(f"/recordings/{site.failing}")
    assert resp.status_code == 200 and "Analysis failed" in resp.text and "the audio has no speech in it" in resp.text
    state = client.get(f"/recordings/{site.failing}/state").json()
    assert state["status"] == "failed" and state["status_reason"] == "the audio has no speech in it"


def test_sign_in_is_rate_limited_and_the_cookie_is_secure_behind_https(tmp_path: Path):
    data_dir = tmp_path / "data"
    server = start_server(data_dir, dispatcher_enabled="false", sign_in_per_email_per_hour="2",
                          sign_in_per_client_per_hour="4", public_base_url="https://calls.example.com")
    try:
        site = make_site(server, data_dir, [("default", "ana@example.com", "Ana")])
        form = httpx.get(f"{site.url}/sign-in")
        assert "Secure" in form.headers["set-cookie"]  # a client that is not on https never sends it back: by hand
        nonce = {"Cookie": form.headers["set-cookie"].split(";", 1)[0]}

        def ask(address: str) -> int:
            return httpx.post(f"{site.url}/sign-in", headers=nonce,
                              data={"email": address, "csrf": csrf_of(form.text)}).status_code

        assert [ask("ana@example.com") for _ in range(3)] == [200, 200, 429]  # per address
        assert [ask("someone@example.com"), ask("else@example.com")] == [200, 429]  # per client
        link = site.sign_in_link("ana@example.com")
        assert link.startswith("https://calls.example.com/sign-in/link?token=")
        resp = httpx.post(f"{site.url}/sign-in/link", headers=nonce,
                          data={"token": link.split("token=", 1)[1], "csrf": csrf_of(form.text)})
        cookie = resp.headers["set-cookie"]
        assert resp.status_code == 303 and cookie.startswith("callscope_session=")
        assert all(flag in cookie for flag in ("Secure", "HttpOnly", "SameSite=Lax"))
    finally:
        server.stop()


@pytest.mark.parametrize(("trusted", "expected"), [
    ("", [200, 429, 429, 429]),  # by default no proxy is believed, loopback included: the forged header is ignored
    ("127.0.0.1", [200, 200, 429, 200]),  # a trusted proxy's header names the client: each has its own count
])
def test_the_client_limit_counts_forwarded_addresses_only_from_trusted_proxies(tmp_path: Path, trusted, expected):
    server = start_server(tmp_path / "data", dispatcher_enabled="false", sign_in_per_client_per_hour="1",
                          trusted_proxies=trusted)
    try:
        client = httpx.Client(base_url=server.url, timeout=30)
        csrf = csrf_of(client.get("/sign-in").text)

        def ask(forwarded_for: str | None) -> int:
            headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
            return client.post("/sign-in", headers=headers, data={"email": "ana@example.com", "csrf": csrf}).status_code

        assert [ask(None), ask("10.9.9.9"), ask("10.9.9.9"), ask("10.9.9.8")] == expected
    finally:
        server.stop()
