"""What the pages do with input no browser of ours sends (issue 23): ids past the catalog's BIGINT, non-ASCII CSRF
tokens, control characters in an email address, non-ASCII landing paths, cookies and link tokens we never made.
Each once answered 500 (or reached the catalog unchecked); every test runs on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from callscope.catalog.tables import SignInLink
from callscope.services.member_auth import HOME_PATH, NEXT_MAX, safe_next
from tests.pages.conftest import MEMBER, csrf_of, email_link

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def is_error_page(resp, status: int) -> bool:
    return resp.status_code == status and resp.headers["content-type"].startswith("text/html") \
        and "<h1>" in resp.text


def link_rows(runtime) -> int:
    with runtime.catalog.session() as session:
        return session.scalar(select(func.count()).select_from(SignInLink))


@pytest.mark.parametrize("field", ["project_id", "tag_id"])
async def test_a_list_filter_id_past_bigint_is_422_as_in_the_api(member, field):
    resp = await member.get(f"/recordings?{field}=99999999999999999999")
    assert is_error_page(resp, 422) and f"{field} is out of range" in resp.text
    assert (await member.get(f"/recordings?{field}=9223372036854775807")).status_code == 200  # the largest BIGINT


async def test_the_filter_form_sent_with_its_fields_blank_lists_everything(member):
    resp = await member.get("/recordings?q=&project_id=&status=&tag_id=&called_from=&called_to=")  # as browsers send it
    assert resp.status_code == 200


async def test_a_csrf_token_that_is_not_ascii_is_400_before_sign_in(pages):
    await pages.get("/sign-in")  # the nonce cookie
    for path in ("/sign-in", "/sign-in/link"):
        resp = await pages.post(path, content="csrf=%C3%A9&email=a@b.c&token=abc", headers=FORM)
        assert is_error_page(resp, 400), (path, resp.status_code)


async def test_a_csrf_token_that_is_not_ascii_is_400_signed_in(member):
    for path in ("/sign-out", "/accounts"):
        resp = await member.post(path, content="csrf=%C3%A9&account=default", headers=FORM)
        assert is_error_page(resp, 400), (path, resp.status_code)
    assert (await member.get("/recordings")).status_code == 200  # still signed in


@pytest.mark.parametrize("email", ["a\x00@b.c", "a\x1b@b.c", "a@b\x85.c", "a" * 320 + "@b.c", "a b@c.d", "@b.c"])
async def test_an_email_address_with_control_characters_or_too_long_is_422_and_stored_nowhere(pages, runtime, email):
    csrf = csrf_of((await pages.get("/sign-in")).text)
    resp = await pages.post("/sign-in", data={"csrf": csrf, "email": email})
    assert resp.status_code == 422 and "Enter your email address." in resp.text
    assert link_rows(runtime) == 0


async def test_an_email_address_in_surrounding_spaces_still_signs_in(pages, runtime):
    csrf = csrf_of((await pages.get("/sign-in")).text)
    resp = await pages.post("/sign-in", data={"csrf": csrf, "email": "  Ana@Example.com "})
    assert resp.status_code == 200 and link_rows(runtime) == 1


async def test_a_signed_in_member_is_sent_on_to_a_non_ascii_path_percent_encoded(member):
    resp = await member.get("/sign-in", params={"next": "/été?q=a%20b"})
    assert resp.status_code == 303 and resp.headers["location"] == "/%C3%A9t%C3%A9?q=a%20b"
    resp = await member.get("/sign-in?next=/%FF")  # not UTF-8: read as U+FFFD
    assert resp.status_code == 303 and resp.headers["location"] == "/%EF%BF%BD"


async def test_the_landing_path_a_link_keeps_is_percent_encoded(pages, runtime):
    csrf = csrf_of((await pages.get("/sign-in")).text)
    resp = await pages.post("/sign-in", data={"csrf": csrf, "email": "ana@example.com", "next": "/é"})
    assert resp.status_code == 200
    with runtime.catalog.session() as session:
        assert session.scalar(select(SignInLink.next_path)) == "/%C3%A9"


@pytest.mark.parametrize(("path", "landing"), [
    ("/recordings/abc?view=shared", "/recordings/abc?view=shared"),
    ("/recordings?q=a%20b", "/recordings?q=a%20b"),  # already encoded: left as it is
    ("/é", "/%C3%A9"),
    ("/a b", HOME_PATH), ("/a\x00", HOME_PATH), ("/a\x85", HOME_PATH),
    ("//evil.example/", HOME_PATH), ("/\\evil.example/", HOME_PATH), ("https://evil.example/", HOME_PATH),
    ("/" + "é" * (NEXT_MAX // 6 + 1), HOME_PATH),  # fits as text, not once encoded
    (None, HOME_PATH), ("", HOME_PATH),
])
def test_safe_next_is_a_local_percent_encoded_path_that_fits_its_column(path, landing):
    assert safe_next(path) == landing and len(safe_next(path)) <= NEXT_MAX


async def test_pages_refuse_to_be_framed(pages):
    for resp in (await pages.get("/sign-in"), await pages.get("/sign-in/link?token=%00")):
        assert resp.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in resp.headers["content-security-policy"]


@pytest.mark.parametrize("token", ["%00", "%FF", "a" * 65, "abc%20def", ""])
async def test_a_link_token_we_never_made_is_refused_before_any_lookup(pages, token):
    resp = await pages.get(f"/sign-in/link?token={token}")
    assert is_error_page(resp, 401) and "invalid" in resp.text
    csrf = csrf_of((await pages.get("/sign-in")).text)
    resp = await pages.post("/sign-in/link", content=f"csrf={csrf}&token={token}", headers=FORM)
    assert is_error_page(resp, 401)


async def test_a_link_lands_on_its_encoded_path_once(member, runtime):
    token = await email_link(runtime, MEMBER, "/%C3%A9")
    csrf = csrf_of((await member.get("/sign-in/link", params={"token": token})).text)
    resp = await member.post("/sign-in/link", data={"token": token, "csrf": csrf})
    assert resp.status_code == 303 and resp.headers["location"] == "/%C3%A9"
    assert (await member.post("/sign-in/link", data={"token": token, "csrf": csrf})).status_code == 401


@pytest.mark.parametrize("cookie", [b"\x00", "\u00e9".encode(), b"\xff", b"a" * 8000, b"a+b/c="])
async def test_cookies_we_never_made_are_no_session_and_no_nonce(pages, cookie):
    headers = {"Cookie": b"callscope_session=" + cookie + b"; callscope_signin_nonce=" + cookie}
    resp = await pages.get("/recordings", headers=headers)
    assert resp.status_code == 303 and resp.headers["location"].startswith("/sign-in")
    resp = await pages.get("/sign-in", headers=headers)
    assert resp.status_code == 200 and "callscope_signin_nonce=" in resp.headers["set-cookie"]  # a new, good one
    resp = await pages.post("/sign-in", content=f"csrf={csrf_of(resp.text)}&email=a@b.c".encode(),
                            headers={**headers, **FORM})
    assert is_error_page(resp, 400)  # the form's token is bound to the new nonce, not to what was sent
