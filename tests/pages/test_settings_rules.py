"""The Settings pages' rules over plain HTTP, in process, on SQLite and PostgreSQL: only an account's admins reach
them (404 to members, on every page and form); every form refuses a missing or wrong CSRF token; the key form's
rules one by one; the tenant boundary (another account's key, project or member is not found); a key managed by a
GitOps tool is read-only; the members' role, lock, unlock, remove and the last-admin rule."""

from __future__ import annotations

import email
import email.policy
import re
from urllib.parse import unquote

import httpx
import pytest

from callscope.resources import ApiKey, ApiKeySpec, ObjectMeta
from callscope.services import accounts, key_settings, keys, projects
from callscope.services.context import Principal
from tests.pages.conftest import MEMBER, csrf_of, email_link

ADMIN = "ada@example.com"
KEYS = "/settings/api-keys"
SETTINGS_GETS = ["/settings", KEYS, f"{KEYS}/ci", f"{KEYS}/ci/revoke", f"{KEYS}/ci/regenerate", "/settings/members"]
SETTINGS_POSTS = [KEYS, f"{KEYS}/ci/revoke", f"{KEYS}/ci/regenerate", "/settings/members", "/settings/members/role",
                  "/settings/members/lock", "/settings/members/unlock", "/settings/members/remove"]


async def signed_in(runtime, app_client: httpx.AsyncClient, address: str) -> httpx.AsyncClient:
    token = await email_link(runtime, address)
    confirm = await app_client.get("/sign-in/link", params={"token": token})
    resp = await app_client.post("/sign-in/link", data={"token": token, "csrf": csrf_of(confirm.text)})
    assert resp.status_code == 303, resp.text
    return app_client


@pytest.fixture
async def admin(runtime, pages) -> httpx.AsyncClient:
    """Signed in as the admin of `default`, which has a key `ci` and a project; `other` has a key and a project."""
    await accounts.add_member(runtime.ctx, "default", ADMIN, "Ada", "admin")
    await keys.create_key(runtime.ctx, "default", "ci", ["read"])
    await keys.create_key(runtime.ctx, "other", "theirs", ["read"])
    return await signed_in(runtime, pages, ADMIN)


async def csrf(client: httpx.AsyncClient, path: str = KEYS) -> str:
    return csrf_of((await client.get(path)).text)


async def create(client: httpx.AsyncClient, **fields) -> httpx.Response:
    return await client.post(KEYS, data={"csrf": await csrf(client), "name": "new-key", "read": "on", **fields})


# ----- who reaches Settings -------------------------------------------------------------------------------------


async def test_a_member_gets_not_found_on_every_settings_page_and_form(runtime, member):
    await keys.create_key(runtime.ctx, "default", "ci", ["read"])
    home = await member.get("/recordings")
    assert "/settings" not in home.text  # no link to what they cannot open
    token = csrf_of(home.text)
    for path in SETTINGS_GETS:
        assert (await member.get(path)).status_code == 404, path
    for path in SETTINGS_POSTS:
        resp = await member.post(path, data={"csrf": token, "email": MEMBER, "name": "x", "read": "on"})
        assert resp.status_code == 404, path
    assert keys.get_key(runtime.ctx, "default", "ci").spec.revoked is False


async def test_a_signed_out_visitor_is_sent_to_sign_in(pages):
    for path in SETTINGS_GETS:
        resp = await pages.get(path)
        assert resp.status_code == 303 and resp.headers["location"].startswith("/sign-in?next="), path


def every_settings_page(project_id: int) -> tuple[list[str], list[str]]:
    """(the pages a GET opens, the forms a POST sends) of Settings, and the admins' upload page."""
    hook, processing = f"/settings/webhooks/{project_id}", f"/settings/processing/{project_id}"
    gets = [*SETTINGS_GETS, "/settings/webhooks", hook, f"{hook}/rotate", f"{hook}/deliveries/1",
            "/settings/processing", processing, "/upload"]
    posts = [*SETTINGS_POSTS, hook, f"{hook}/rotate", f"{hook}/deliveries/1/redeliver", processing, "/upload"]
    return gets, posts


async def test_settings_send_the_signed_out_to_sign_in_and_back_and_are_not_found_by_members(runtime, admin, pages):
    """What docs/operations.md says: a signed-out visitor of any Settings page or form (an admin following a bookmark,
    or whose session ended while a form was open) is sent to sign in and then back to a page a GET opens, never to an
    address only a POST answers (405); a signed-in member gets 404 from every one, as for a page that is not there."""
    project = await projects.create_project(runtime.ctx, admin_principal(runtime), _project_body("Support"))
    gets, posts = every_settings_page(project.status.id)
    app = pages._transport.app
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=str(pages.base_url)) as anonymous:
        for method, path in [*(("GET", p) for p in gets), *(("POST", p) for p in posts)]:
            resp = await anonymous.request(method, path, data={"csrf": "x"} if method == "POST" else None)
            assert resp.status_code == 303, (method, path, resp.status_code)
            location = resp.headers["location"]
            assert location.startswith("/sign-in?next="), (method, path, location)
            back = unquote(location.removeprefix("/sign-in?next="))
            assert back == path or (method == "POST" and path.startswith(back + "/")), (method, path, back)
            after = await admin.get(back)  # where the admin lands once signed in (delivery 1 does not exist)
            expected = 404 if "/deliveries/" in back else 303 if back == "/settings" else 200  # /settings: keys
            assert after.status_code == expected, (method, path, back, after)
        await accounts.add_member(runtime.ctx, "default", MEMBER, "Ana")
        member = await signed_in(runtime, anonymous, MEMBER)
        token = csrf_of((await member.get("/recordings")).text)
        for method, path in [*(("GET", p) for p in gets), *(("POST", p) for p in posts)]:
            resp = await member.request(method, path, data={"csrf": token} if method == "POST" else None)
            assert resp.status_code == 404 and "There is no page here" in resp.text, (method, path)


async def test_an_admin_sees_settings_with_the_pages_headers(admin):
    home = await admin.get("/recordings")
    assert 'href="/settings/api-keys"' in home.text
    resp = await admin.get(KEYS)
    assert resp.status_code == 200
    assert "script-src 'self'" in resp.headers["content-security-policy"]
    assert resp.headers["cache-control"] == "no-store"
    assert ">ci</a>" in resp.text and "theirs" not in resp.text  # the account's keys only


# ----- CSRF ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", SETTINGS_POSTS)
@pytest.mark.parametrize("token", [None, "wrong", "é"])
async def test_every_settings_form_refuses_a_missing_or_wrong_csrf_token(runtime, admin, path, token):
    data = {"name": "new-key", "read": "on", "email": ADMIN, "role": "member", "confirmed": "yes"}
    if token is not None:
        data["csrf"] = token
    resp = await admin.post(path, data=data)
    assert resp.status_code == 400 and "form has expired" in resp.text, path
    assert [k.name for k in keys.list_keys(runtime.ctx, "default")] == ["ci"]
    assert keys.get_key(runtime.ctx, "default", "ci").spec.revoked is False
    assert accounts.find_member(runtime.ctx, "default", ADMIN).spec.role == "admin"


# ----- the key form ----------------------------------------------------------------------------------------------


async def test_a_key_made_on_the_page_is_shown_once_and_works_at_once(runtime, admin):
    project = await projects.create_project(runtime.ctx, admin_principal(runtime), _project_body("Support"))
    resp = await create(admin, write="on", project_id=str(project.status.id), expires_on="2999-01-01")
    assert resp.status_code == 201, resp.text
    key = _shown_key(resp.text)
    obj = keys.get_key(runtime.ctx, "default", "new-key")
    assert obj.spec.permissions == ["read", "write"] and obj.spec.project == project.name
    assert obj.spec.expires_at.isoformat() == "2999-01-01T00:00:00+00:00"
    principal = await keys.authenticate(runtime.ctx, f"Bearer {key}")
    assert principal.key_name == "new-key" and principal.project_id == project.status.id
    listing = (await admin.get(KEYS)).text
    assert key not in listing and key not in (await admin.get(f"{KEYS}/new-key")).text  # never shown again


async def test_a_keys_usage_shows_by_endpoint_and_by_hour(runtime, admin):
    key = _shown_key((await create(admin)).text)
    bearer = {"Authorization": f"Bearer {key}"}
    for path in ("/projects", "/projects", "/recordings/nope"):
        await admin.get(f"/api/v1/public{path}", headers=bearer)
    await runtime.usage.flush()
    page = (await admin.get(f"{KEYS}/new-key")).text
    assert '<dd id="total-requests">3</dd>' in page
    assert "GET /projects" in page and "33.3%" in page  # one request of three failed
    hour = runtime.ctx.clock().strftime("%Y-%m-%d %H:00")
    assert re.search(rf"{hour}</time></td><td class=\"num\">3</td><td class=\"num\">1</td>", page), page
    listing = (await admin.get(KEYS)).text
    assert re.search(r'new-key</a>.*?<td class="num" data-label="Requests">3</td>', listing, re.S)


@pytest.mark.parametrize("fields, problem", [
    ({"read": ""}, "at least one permission"),  # nothing ticked
    ({"read": "maybe"}, "read"),
    ({"admin": "on"}, "admin"),  # no such permission
    ({"expires_on": "2020-01-01"}, "after today"),
    ({"expires_on": "tomorrow"}, "expires_on"),
    ({"project_id": "999999"}, "Project not found"),
    ({"project_id": "x"}, "project_id"),
    ({"name": "Not A Name"}, "key name"),
    ({"name": "ci"}, "already exists"),
    ({"name": "a\x00b"}, "key name"),
])
async def test_the_key_form_refuses_bad_input_and_says_why(runtime, admin, fields, problem):
    resp = await create(admin, **fields)
    assert resp.status_code == 422, resp.text
    assert problem.lower() in resp.text.lower()
    assert 'role="alert"' in resp.text and 'id="k-name"' in resp.text  # the form again, with the reason
    assert [k.name for k in keys.list_keys(runtime.ctx, "default")] == ["ci"]


async def test_another_accounts_project_is_not_found(runtime, admin):
    theirs = await projects.create_project(runtime.ctx, admin_principal(runtime, "other"), _project_body("Theirs"))
    resp = await create(admin, project_id=str(theirs.status.id))
    assert resp.status_code == 422 and "Project not found" in resp.text


async def test_another_accounts_key_is_not_found(runtime, admin):
    token = await csrf(admin)
    assert (await admin.get(f"{KEYS}/theirs")).status_code == 404
    for action in ("revoke", "regenerate"):
        assert (await admin.get(f"{KEYS}/theirs/{action}")).status_code == 404
        assert (await admin.post(f"{KEYS}/theirs/{action}", data={"csrf": token})).status_code == 404
    theirs = keys.get_key(runtime.ctx, "other", "theirs")
    assert theirs.spec.revoked is False and theirs.status.key_hash is not None


async def test_revoke_and_regenerate_ask_first_then_act(runtime, admin):
    confirm = await admin.get(f"{KEYS}/ci/regenerate")
    assert confirm.status_code == 200 and 'action="/settings/api-keys/ci/regenerate"' in confirm.text
    old_hash = keys.get_key(runtime.ctx, "default", "ci").status.key_hash
    resp = await admin.post(f"{KEYS}/ci/regenerate", data={"csrf": csrf_of(confirm.text)})
    assert resp.status_code == 200
    new = _shown_key(resp.text)
    assert keys.get_key(runtime.ctx, "default", "ci").status.key_hash == keys.hash_key(new) != old_hash
    confirm = await admin.get(f"{KEYS}/ci/revoke")
    resp = await admin.post(f"{KEYS}/ci/revoke", data={"csrf": csrf_of(confirm.text)})
    assert resp.status_code == 303 and resp.headers["location"] == f"{KEYS}/ci"
    assert keys.get_key(runtime.ctx, "default", "ci").spec.revoked is True
    assert "revoked" in (await admin.get(f"{KEYS}/ci")).text


async def test_a_revoked_key_is_not_regenerated(runtime, admin):
    """Regenerating a revoked key answered "Copy the key now" with a key every request then refused (401)."""
    token = await csrf(admin)
    assert (await admin.post(f"{KEYS}/ci/revoke", data={"csrf": token})).status_code == 303
    revoked = keys.get_key(runtime.ctx, "default", "ci")
    confirm = await admin.get(f"{KEYS}/ci/regenerate")
    assert confirm.status_code == 409 and "is revoked" in confirm.text and "/ci/regenerate\"" not in confirm.text
    resp = await admin.post(f"{KEYS}/ci/regenerate", data={"csrf": token})
    assert resp.status_code == 409, resp.text
    assert "is revoked" in resp.text and "create a new key" in resp.text and 'id="new-key"' not in resp.text
    after = keys.get_key(runtime.ctx, "default", "ci")
    assert after.spec.revoked is True and after.status.key_hash == revoked.status.key_hash
    script = await admin.post(f"{KEYS}/ci/regenerate", data={"csrf": token}, headers={"Accept": "application/json"})
    assert script.status_code == 409 and "is revoked" in script.json()["error"]


async def test_an_expired_key_is_not_regenerated(runtime, admin):
    obj = ApiKey(metadata=ObjectMeta(name="old", namespace="default"),
                 spec=ApiKeySpec(permissions=["read"], expires_at=runtime.ctx.clock().replace(year=2001)))
    await runtime.ctx.store.create(obj)
    resp = await admin.post(f"{KEYS}/old/regenerate", data={"csrf": await csrf(admin)})
    assert resp.status_code == 409 and "expired" in resp.text and 'id="new-key"' not in resp.text


@pytest.mark.parametrize("labels, managers", [
    ({"app.kubernetes.io/managed-by": "argocd"}, []),
    ({}, [{"manager": "kustomize-controller", "operation": "Apply"}]),
])
async def test_a_key_managed_by_gitops_is_read_only(runtime, admin, labels, managers):
    obj = ApiKey(metadata=ObjectMeta(name="synced", namespace="default", labels=labels, managed_fields=managers),
                 spec=ApiKeySpec(permissions=["read"]))
    await runtime.ctx.store.create(obj)
    if managers:  # the SQLite store records no field managers: as the Kubernetes API would have them
        runtime.ctx.store.cached_get(ApiKey, "default", "synced").metadata.managed_fields = obj.metadata.managed_fields
    page = await admin.get(f"{KEYS}/synced")
    assert "Read-only here" in page.text and "/synced/revoke" not in page.text
    assert ("argocd" if labels else "kustomize-controller") in page.text
    token = csrf_of(page.text)
    for action in ("revoke", "regenerate"):
        assert (await admin.get(f"{KEYS}/synced/{action}")).status_code == 409
        assert (await admin.post(f"{KEYS}/synced/{action}", data={"csrf": token})).status_code == 409
    assert keys.get_key(runtime.ctx, "default", "synced").spec.revoked is False


def test_only_other_writers_of_the_spec_make_a_key_read_only():
    def key(labels: dict, managers: list[dict]) -> ApiKey:
        return ApiKey(metadata=ObjectMeta(name="k", namespace="a", labels=labels, managed_fields=managers),
                      spec=ApiKeySpec(permissions=["read"]))

    ours = {"manager": "callscope", "operation": "Update"}
    assert key_settings.managed_elsewhere(key({}, [])) is None
    assert key_settings.managed_elsewhere(key({"app.kubernetes.io/managed-by": "callscope"}, [ours])) is None
    assert key_settings.managed_elsewhere(key({}, [ours, {"manager": "kopf", "subresource": "status"}])) is None
    assert "kubectl" in key_settings.managed_elsewhere(key({}, [ours, {"manager": "kubectl", "operation": "Apply"}]))
    assert "Helm" in key_settings.managed_elsewhere(key({"app.kubernetes.io/managed-by": "Helm"}, []))
    assert "managedFields" not in key({}, [ours]).to_dict()["metadata"]  # read, never written back


async def test_the_reconcilers_status_writes_leave_a_key_editable(runtime, admin):
    page = await admin.get(f"{KEYS}/ci")
    assert "Read-only" not in page.text and f"{KEYS}/ci/revoke" in page.text


# ----- members ---------------------------------------------------------------------------------------------------


async def test_an_invited_member_is_added_and_emailed_a_link(runtime, settings, admin):
    token = await csrf(admin, "/settings/members")
    resp = await admin.post("/settings/members", data={"csrf": token, "email": "Bo@Example.com", "name": "Bo",
                                                       "role": "admin"})
    assert resp.status_code == 201, resp.text
    member = accounts.find_member(runtime.ctx, "default", "bo@example.com")
    assert member.spec.role == "admin" and "emailed a sign-in link" in resp.text
    await runtime.mail.drain(timeout=5)
    mails = [email.message_from_bytes(p.read_bytes(), policy=email.policy.default)
             for p in (settings.data_dir / "outbox").glob("*.eml")]
    [invitation] = [m for m in mails if m["To"] == "Bo <bo@example.com>"]
    # an invitation, not the sign-in mail a member asks for: who invited them where, as what, and what then
    text = invitation.get_body(preferencelist=("plain",)).get_content()
    assert invitation["Subject"].endswith("invited you to default on Callscope")
    assert "added you to default on Callscope, as an admin." in text and "/sign-in/link?token=" in text
    assert "If you did not ask for it" not in text and "ask for a new one at http://" in text
    # invited, not active, until they sign in; the admin who signed in is active, with the day
    page = (await admin.get("/settings/members")).text
    bo = re.search(r"<td[^>]*>bo@example.com</td>.*?</tr>", page, re.S)[0]
    assert "invited" in bo and "never signed in" in bo and ">active<" not in bo
    ada = re.search(rf"<td[^>]*>{ADMIN}.*?</tr>", page, re.S)[0]
    assert ">active<" in ada and "signed in <time" in ada


@pytest.mark.parametrize("fields, problem", [
    ({"email": "not-an-address"}, "email"),
    ({"email": ADMIN}, "already a member"),
    ({"role": "owner"}, "role"),
    ({"name": " "}, "name"),
    # what a To: header would carry as markup or take apart otherwise; a local part that needs SMTPUTF8
    ({"email": '"><i>q@x.test'}, "email is not an email address"),
    ({"email": "r<b>@x.test"}, "email is not an email address"),
    ({"email": "bo smith@x.test"}, "email is not an email address"),
    ({"email": "jö@x.test"}, "email is not an email address"),
    ({"email": "bo@x.test, eve@y.test"}, "email is not an email address"),
    # a name that displays as another: a bidirectional override, invisible characters
    ({"name": "Bo\u202e"}, "name must not be blank or contain control characters or invisible"),
    ({"name": "Admin\u202enimdA"}, "invisible formatting characters"),
    ({"name": "B\u200bo"}, "invisible formatting characters"),
    ({"name": "\u2067Bo\u2069"}, "invisible formatting characters"),
    ({"name": "Bo\U000e0041"}, "invisible formatting characters"),
])
async def test_the_invite_form_refuses_bad_input(runtime, settings, admin, fields, problem):
    data = {"csrf": await csrf(admin, "/settings/members"), "email": "bo@example.com", "name": "Bo", **fields}
    resp = await admin.post("/settings/members", data=data)
    assert resp.status_code == 422 and problem in resp.text.lower(), resp.text
    assert [m.spec.email for m in accounts.list_members(runtime.ctx, "default")] == [ADMIN]
    await runtime.mail.drain(timeout=5)
    assert not list((settings.data_dir / "outbox").glob("*.eml"))  # nobody was mailed


async def test_role_lock_unlock_and_remove(runtime, admin):
    await accounts.add_member(runtime.ctx, "default", "bo@example.com", "Bo")
    token = await csrf(admin, "/settings/members")

    async def act(action: str, **fields) -> httpx.Response:
        return await admin.post(f"/settings/members/{action}", data={"csrf": token, "email": "bo@example.com",
                                                                     **fields})

    def said(resp: httpx.Response, notice: str) -> bool:  # the members' page again, saying what was done
        return resp.status_code == 200 and f'<p class="note" role="status">{notice}</p>' in resp.text

    assert said(await act("role", role="admin"), "bo@example.com is now an admin.")
    assert accounts.find_member(runtime.ctx, "default", "bo@example.com").spec.role == "admin"
    assert said(await act("lock"), "bo@example.com is locked: signed out everywhere, and cannot sign in.")
    assert accounts.find_member(runtime.ctx, "default", "bo@example.com").spec.locked is True
    assert said(await act("unlock"), "bo@example.com is unlocked and may sign in again.")
    assert accounts.find_member(runtime.ctx, "default", "bo@example.com").spec.locked is False
    confirm = await act("remove")
    assert confirm.status_code == 200 and 'name="confirmed" value="yes"' in confirm.text
    assert accounts.find_member(runtime.ctx, "default", "bo@example.com") is not None
    assert said(await act("remove", confirmed="yes"), "bo@example.com was removed from the account.")
    assert accounts.find_member(runtime.ctx, "default", "bo@example.com") is None


@pytest.mark.parametrize("action, fields", [("role", {"role": "member"}), ("lock", {}),
                                            ("remove", {"confirmed": "yes"})])
async def test_the_account_keeps_an_unlocked_admin(runtime, admin, action, fields):
    token = await csrf(admin, "/settings/members")
    resp = await admin.post(f"/settings/members/{action}", data={"csrf": token, "email": ADMIN, **fields})
    assert resp.status_code == 409 and "unlocked admin" in resp.text
    # the members' page, saying why, with its forms: not a page without a way on
    assert 'id="member-problem"' in resp.text and 'action="/settings/members/role"' in resp.text
    assert accounts.find_member(runtime.ctx, "default", ADMIN).spec == accounts.find_member(
        runtime.ctx, "default", ADMIN).spec.model_copy(update={"role": "admin", "locked": False})


async def test_another_accounts_member_is_not_found(runtime, admin):
    await accounts.add_member(runtime.ctx, "other", "otto@example.com", "Otto")
    token = await csrf(admin, "/settings/members")
    for action in ("role", "lock", "unlock", "remove"):
        resp = await admin.post(f"/settings/members/{action}", data={"csrf": token, "email": "otto@example.com",
                                                                     "role": "admin", "confirmed": "yes"})
        assert resp.status_code == 404, action
    otto = accounts.find_member(runtime.ctx, "other", "otto@example.com")
    assert (otto.spec.role, otto.spec.locked) == ("member", False)


# ----- helpers ---------------------------------------------------------------------------------------------------


def _shown_key(html: str) -> str:
    return re.search(r'id="new-key" class="secret" readonly value="([^"]+)"', html).group(1)


def admin_principal(runtime, account: str = "default") -> Principal:
    return Principal(account=account, key_name="test", key_uid="test", permissions=frozenset({"read", "write"}))


def _project_body(name: str) -> dict:
    return {"name": name, "language": "en"}
