"""No-5xx fuzzing of the members' pages (issue 23), as tests/api fuzzes the REST API: every form and query field,
the recording ids of the paths and the two cookies, each given NUL and other control characters, percent-escapes
that are no UTF-8, overlong values, integers past BIGINT and values of the wrong type, on SQLite and on PostgreSQL.

Table-driven, so every run tries the same inputs (it prints how many: about 1,600 per catalog). Every answer must be a
2xx, a redirect to a local ASCII path, or a 4xx in its route's error shape: the pages' HTML error page, or JSON for
the state the recording page's script polls."""

from __future__ import annotations

from urllib.parse import unquote_to_bytes

import pytest

from tests.pages.conftest import csrf_of

# Query-string and form-body text: percent-escapes reach the server as sent, bytes that are no UTF-8 included.
VALUES = [
    "", "%00", "a%00b", "%01", "%1B", "%7F", "%C2%85", "%0D%0A", "%09", "%20",  # control characters, blanks
    "%FF", "%C3%28", "%ED%A0%80", "%F4%90%80%80", "%C0%AF", "%", "%G1", "%25",  # no UTF-8, broken escapes
    "%E2%80%AE", "%F0%9F%98%80", "%C3%A9", "%EF%BC%91", "%D9%A1",  # bidi override, emoji, full-width and Arabic 1
    "x" * 5000, "%C3%A9" * 1500, "%00" * 1000, "1" * 5000,  # overlong
    "0", "-1", "1", "99999999999999999999", "-99999999999999999999", "9223372036854775807", "9223372036854775808",
    "1e400", "1.5", "1e3", "NaN", "inf", "0x10",  # integers past BIGINT, and what is no integer
    "true", "null", "%5B%5D", "%7B%7D", "2026-02-30", "99999-01-01", "0000-00-00", "9999-12-31", "1700000000",
    "%27%20OR%201%3D1--", "%3Cscript%3E", "+", "%2F%2Fevil.example", "%5C%5Cevil", "https%3A%2F%2Fevil.example%2F",
    "%2F%C3%A9", "%2Frecordings%00", "all", "shared", "completed", "default",
    "a%00@b.c", "a@b.c%00", "a%1B@b.c", "a%FF@b.c", "a@b@c", "x" * 400 + "@b.c",  # nearly an email address
]
LIST_FIELDS = ["view", "project_id", "status", "tag_id", "operator_id", "called_from", "called_to", "added_from",
               "added_to", "analysed", "q", "page"]
TRENDS_FIELDS = ["project_id", "operator_id", "start", "end"]
# Shapes no form of ours sends: repeated, bare and bracketed fields in the list's query string.
ODD_QUERIES = ["project_id=1&project_id=x", "project_id", "tag_id[]=1", "page=1&page=99999999999999999999",
               "q=a&q=%00", "&&&", "=", "==x", "%00=1", "view=all&" * 200]
FORM = "application/x-www-form-urlencoded"
SIGNED_OUT = {"Cookie": "callscope_session=none-such"}  # a token of the right shape that no session has


@pytest.fixture
def settings_overrides() -> dict:
    """No sign-in limit in the way: each request goes as deep as its input lets it."""
    return {"sign_in_per_client_per_hour": 1_000_000, "sign_in_per_email_per_hour": 1_000_000}


def _problem(resp, errors: str) -> str | None:
    """What is wrong with an answer, if anything; `errors` is the route's error shape (html or json)."""
    status, kind = resp.status_code, resp.headers.get("content-type", "")
    if status >= 500:
        return "5xx"
    if 300 <= status < 400:
        location = resp.headers.get("location", "")
        return None if location.isascii() and location.startswith("/") and not location.startswith("//") \
            else f"redirect to {location!r}"
    if status < 400:
        return None
    if errors == "json":
        return None if kind.startswith("application/json") and resp.json().keys() & {"error", "errors"} else "not JSON"
    return None if kind.startswith("text/html") and "<h1>" in resp.text and 'role="alert"' in resp.text \
        else "not the HTML error page"


def _cookie(value: str) -> bytes:
    """A raw cookie value: the bytes the escapes stand for, less those that would end the header or the cookie."""
    return bytes(b for b in unquote_to_bytes(value) if b not in b"\r\n;")


async def test_no_page_field_answers_5xx(member, runtime):
    nonce_csrf = csrf_of((await member.get("/sign-in/link", params={"token": "abc"})).text)
    session_csrf = csrf_of((await member.get("/accounts")).text)
    cases: list[tuple[str, str, str, bytes | None, dict]] = []  # method, url, error shape, body, headers

    def form(path: str, body: str, **headers) -> None:
        cases.append(("POST", path, "html", body.encode(), {"Content-Type": FORM, **headers}))

    for value in VALUES:
        cases += [("GET", f"/recordings?{field}={value}", "html", None, {}) for field in LIST_FIELDS]
        cases += [("GET", f"/trends?{field}={value}", "html", None, {}) for field in TRENDS_FIELDS]
        cases += [("GET", f"/sign-in?next={value}", "html", None, {}),
                  ("GET", f"/sign-in?next={value}", "html", None, SIGNED_OUT),  # the form, `next` in it
                  ("GET", f"/recordings?q={value}", "html", None, SIGNED_OUT),  # sent to sign in, to come back
                  ("GET", f"/sign-in/link?token={value}", "html", None, {})]
        form("/sign-in", f"csrf={nonce_csrf}&email={value}&next=/recordings")
        form("/sign-in", f"csrf={nonce_csrf}&email=a@b.c&next={value}")
        form("/sign-in", f"csrf={value}&email=a@b.c")
        form("/sign-in/link", f"csrf={nonce_csrf}&token={value}")
        form("/sign-in/link", f"csrf={value}&token=abc")
        form("/accounts", f"csrf={session_csrf}&account={value}")
        form("/accounts", f"csrf={value}&account=default")
        form("/sign-out", f"csrf={value}")  # never the right token: the member stays signed in
        if "%2F" not in value:  # one path segment
            cases += [("GET", f"/recordings/{value}", "html", None, {}),
                      ("GET", f"/recordings/{value}/state", "json", None, {})]
        cases.append(("GET", "/recordings", "html", None, {"Cookie": b"callscope_session=" + _cookie(value)}))
        form("/sign-in", f"csrf={nonce_csrf}&email=a@b.c", Cookie=b"callscope_signin_nonce=" + _cookie(value))
    cases += [("GET", f"/recordings?{query}", "html", None, {}) for query in ODD_QUERIES]
    for body, content_type in [(b"\xff\xfe=\xff", FORM), (b"csrf=x&" * 60, FORM), (b"e=" + b"x" * 20_000, FORM),
                               (b'{"csrf": "x", "email": "a@b.c"}', "application/json"),
                               (b"--b\r\nContent-Disposition: form-data; name=csrf\r\n\r\nx\r\n--b--",
                                "multipart/form-data; boundary=b")]:
        for path in ("/sign-in", "/sign-in/link", "/accounts", "/sign-out"):
            cases.append(("POST", path, "html", body, {"Content-Type": content_type}))

    failures = []
    for method, url, errors, body, headers in cases:
        resp = await member.request(method, url, content=body, headers=headers)
        if problem := _problem(resp, errors):
            failures.append(f"{method} {url[:120]} {body[:80] if body else ''}: {resp.status_code} {problem}")
    print(f"members' pages on {runtime.ctx.settings.catalog_url.split(':')[0]}: {len(cases)} inputs, "
          f"{sum(f.endswith('5xx') for f in failures)} 5xx")
    assert failures == []
    assert (await member.get("/recordings")).status_code == 200  # the fuzz ran signed in throughout


SETTINGS_FORMS = {  # each admin form and its fields (the webhook's `summary` stands for every section checkbox)
    "/settings/api-keys": ["name", "read", "write", "delete", "project_id", "expires_on"],
    "/settings/members": ["email", "name", "role"],
    "/settings/members/role": ["email", "role"],
    "/settings/members/lock": ["email"],
    "/settings/members/remove": ["email"],
    "/settings/webhooks/1": ["url", "summary"],
    "/settings/webhooks/1/rotate": ["overlap_hours"],
    "/settings/processing/1": ["language", "goal_language", "summary_language", "long_pause_threshold_seconds",
                               "retention_days", "transcription_hints", "transcription", "goals", "categories",
                               "fields"],
}


async def test_no_admin_page_field_answers_5xx(runtime, pages):
    """The admins' pages (Settings, upload) as the members' above: every path segment and form field, each value."""
    from callscope.services import accounts, keys, projects
    from callscope.services.context import Principal
    from tests.pages.test_settings_rules import ADMIN, signed_in

    await accounts.add_member(runtime.ctx, "default", ADMIN, "Ada", "admin")
    await keys.create_key(runtime.ctx, "default", "ci", ["read"])
    owner = Principal(account="default", key_name="t", key_uid="t", permissions=frozenset({"read", "write"}))
    await projects.create_project(runtime.ctx, owner, {"name": "Support", "language": "en"})
    admin = await signed_in(runtime, pages, ADMIN)
    token = csrf_of((await admin.get("/settings/api-keys")).text)
    cases: list[tuple[str, str, bytes | None, dict]] = []  # method, url, body, headers
    for value in VALUES:
        if "%2F" not in value:  # one path segment
            cases += [("GET", path.format(value), None, {}) for path in (
                "/settings/api-keys/{}", "/settings/api-keys/{}/revoke", "/settings/webhooks/{}",
                "/settings/webhooks/1/deliveries/{}", "/settings/processing/{}")]
            cases.append(("POST", f"/settings/api-keys/{value}/revoke", f"csrf={token}".encode(),
                          {"Content-Type": FORM}))
        cases.append(("GET", f"/upload?project_id={value}", None, {}))
        for path, fields in SETTINGS_FORMS.items():
            cases += [("POST", path, f"csrf={token}&{field}={value}".encode(), {"Content-Type": FORM})
                      for field in fields]
            cases.append(("POST", path, f"csrf={value}".encode(), {"Content-Type": FORM}))
        cases.append(("POST", "/upload", f"csrf={token}&project_id={value}".encode(), {"Content-Type": FORM}))
    for path in [*SETTINGS_FORMS, "/upload"]:
        cases += [("POST", path, b"\xff\xfe=\xff", {"Content-Type": FORM}),
                  ("POST", path, b"e=" + b"x" * 20_000, {"Content-Type": FORM}),
                  ("POST", path, b"--b\r\nContent-Disposition: form-data; name=csrf\r\n\r\nx\r\n--b--",
                   {"Content-Type": "multipart/form-data; boundary=b"})]

    failures = []
    for method, url, body, headers in cases:
        resp = await admin.request(method, url, content=body, headers=headers)
        upload = url.startswith("/upload") and method == "POST"  # it answers a script in JSON, a form in HTML
        if problem := ("5xx" if resp.status_code >= 500 else None) if upload else _problem(resp, "html"):
            failures.append(f"{method} {url[:120]} {body[:80] if body else ''}: {resp.status_code} {problem}")
    print(f"admins' pages on {runtime.ctx.settings.catalog_url.split(':')[0]}: {len(cases)} inputs, "
          f"{sum(f.endswith('5xx') for f in failures)} 5xx")
    assert failures == [], "\n".join(failures)
    assert keys.get_key(runtime.ctx, "default", "ci").spec.revoked is False  # no odd token passed for the admin's
