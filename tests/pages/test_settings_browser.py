"""The Settings pages in a real headless Chromium against a real `callscope serve`: an admin signs in from the
emailed link, creates a key that works against the API at once, watches its usage rise, revokes it (the API then
answers 401); a key applied by a GitOps tool is read-only; members are invited, locked and unlocked; a plain
member finds no Settings at all (404 on every page and form). Every page fits a phone's width.

With CALLSCOPE_TEST_SHOTS set to a folder, each page is also saved there as a screenshot at a desktop's and a
phone's width (`<page>-desktop.png`, `<page>-phone.png`), for people to look at.
"""

from __future__ import annotations

import json

import httpx
import pytest

from tests.live import start_server
from tests.pages.site import (
    API,
    NO_BROWSER,
    NO_BROWSER_REASON,
    Site,
    browser_sign_in,
    by_css,
    csrf_of,
    shoot,
    sign_in,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)]

ADMIN, MEMBER = "ada@example.com", "bob@example.com"
KEYS = "/settings/api-keys"
SYNCED = {"apiVersion": "callscope.io/v1alpha1", "kind": "ApiKey",
          "metadata": {"name": "synced", "labels": {"app.kubernetes.io/managed-by": "argocd"}},
          "spec": {"permissions": ["read"]}}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("settings") / "data"
    server = start_server(data_dir, dispatcher_enabled="false", store_poll_interval="0.05",
                          usage_flush_interval="0.2")
    try:
        server.cli("members", "add", "--email", ADMIN, "--name", "Ada Admin", "--role", "admin")
        server.cli("members", "add", "--email", MEMBER, "--name", "Bob Member")
        server.cli("keys", "create", "--account", "other", "--name", "theirs", "--permissions", "read")
        key = server.new_key("pages")
        resp = httpx.post(f"{server.url}{API}/projects", headers={"Authorization": f"Bearer {key}"},
                          json={"name": "Support", "language": "en"})
        assert resp.status_code == 201, resp.text
        synced = data_dir.parent / "synced.yaml"
        synced.write_text(json.dumps(SYNCED))
        server.cli("apply", "-f", str(synced))
        yield Site(server, data_dir, key, resp.json()["data"]["id"])
    finally:
        server.stop()


def api_status(site: Site, key: str, path: str = "/projects") -> int:
    return httpx.get(f"{site.url}{API}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=30).status_code


def test_an_admin_creates_a_key_that_works_sees_its_usage_and_revokes_it(site, driver):
    browser_sign_in(driver, site, ADMIN, f"{site.url}{KEYS}")
    assert by_css(driver, "h1").text.startswith("API keys")
    assert by_css(driver, "nav[aria-label=Main] a[href='/settings/api-keys']").text == "Settings"
    rows = [r.text for r in driver.find_elements("css selector", "table.keys tbody tr")]
    assert any(r.startswith("pages") for r in rows) and not any("theirs" in r for r in rows)
    shoot(driver, "api-keys")

    by_css(driver, "#k-name").send_keys("ci-upload")
    by_css(driver, "#k-write").click()  # read is ticked already
    by_css(driver, f"#k-project option[value='{site.project_id}']").click()
    driver.execute_script("document.getElementById('k-expires').value = '2999-12-31'")
    by_css(driver, "#k-name").submit()  # Enter in the form, as from the keyboard
    wait_for(driver, lambda d: "shown only this once" in d.page_source, what="the new key")
    key = by_css(driver, "#new-key").get_attribute("value")
    copy = by_css(driver, "button.copy")
    assert copy.is_displayed()  # the script is there (served by the app, allowed by the CSP)
    copy.click()
    wait_for(driver, lambda d: by_css(d, "[data-copied-for='new-key']").text != "", what="copy answered")
    shoot(driver, "api-key-created")

    assert api_status(site, key) == 200  # works at once
    for _ in range(3):
        assert api_status(site, key) == 200
    assert api_status(site, key, "/recordings/no-such-recording") == 404

    driver.get(f"{site.url}{KEYS}/ci-upload")
    assert key not in driver.page_source  # shown once, never again

    def counted(d) -> bool:
        d.refresh()
        return by_css(d, "#total-requests").text == "5"

    wait_for(driver, counted, timeout=20, what="the usage counted")
    figures = by_css(driver, "#hour-figures tbody tr").text.split()
    assert figures[-3:] == ["5", "1", "20.0%"]
    assert "GET /projects" in by_css(driver, "table.bars").text
    shoot(driver, "api-key-usage")

    by_css(driver, "a[href$='/ci-upload/revoke']").click()
    wait_for(driver, lambda d: by_css(d, "h1").text.startswith("Revoke key ci-upload?"), what="the confirmation")
    shoot(driver, "api-key-revoke-confirm")
    by_css(driver, "#confirm-action").click()
    wait_for(driver, lambda d: d.current_url.endswith(f"{KEYS}/ci-upload") and "revoked" in
             by_css(d, ".meta").text, what="the key revoked")
    assert api_status(site, key) == 401


def test_a_key_applied_by_gitops_is_read_only(site, driver):
    browser_sign_in(driver, site, ADMIN, f"{site.url}{KEYS}/synced")
    note = by_css(driver, "#read-only").text
    assert "argocd" in note and "app.kubernetes.io/managed-by" in note
    assert not driver.find_elements("css selector", "a[href$='/synced/revoke'], a[href$='/synced/regenerate']")
    shoot(driver, "api-key-gitops")
    driver.get(f"{site.url}{KEYS}/synced/revoke")
    assert by_css(driver, "h1").text == "Not possible" and "Managed by argocd" in by_css(driver, ".error").text


def test_an_admin_invites_locks_and_unlocks_a_member(site, driver):
    browser_sign_in(driver, site, ADMIN, f"{site.url}/settings/members")
    by_css(driver, "#m-email").send_keys("cy@example.com")
    by_css(driver, "#m-name").send_keys("Cy New")
    by_css(driver, "#m-role-member").click()
    by_css(driver, "#m-name").submit()
    wait_for(driver, lambda d: "emailed a sign-in link" in d.page_source, what="the invitation")
    assert site.sign_in_link("cy@example.com")
    row = next(r for r in driver.find_elements("css selector", "table.members tbody tr") if "cy@example.com" in r.text)
    row.find_element("css selector", "form[action$='/lock'] button").click()
    wait_for(driver, lambda d: any("cy@example.com" in r.text and "locked" in r.text
                                   for r in d.find_elements("css selector", "table.members tbody tr")),
             what="locked")
    shoot(driver, "members")
    row = next(r for r in driver.find_elements("css selector", "table.members tbody tr") if "cy@example.com" in r.text)
    row.find_element("css selector", "form[action$='/unlock'] button").click()
    wait_for(driver, lambda d: any("cy@example.com" in r.text and "invited" in r.text  # unlocked, never signed in
                                   for r in d.find_elements("css selector", "table.members tbody tr")),
             what="unlocked")
    row = next(r for r in driver.find_elements("css selector", "table.members tbody tr") if "cy@example.com" in r.text)
    row.find_element("css selector", "form[action$='/remove'] button").click()
    wait_for(driver, lambda d: by_css(d, "h1").text.startswith("Remove cy@example.com?"), what="the confirmation")
    shoot(driver, "member-remove-confirm")


def test_a_member_finds_no_settings(site, driver):
    browser_sign_in(driver, site, MEMBER, f"{site.url}/recordings")
    assert not driver.find_elements("css selector", "a[href^='/settings']")
    for path in ("/settings", KEYS, f"{KEYS}/pages", f"{KEYS}/pages/revoke", "/settings/members"):
        driver.get(f"{site.url}{path}")
        assert by_css(driver, "h1").text == "Not found", path
    shoot(driver, "member-not-found")
    client, _ = sign_in(site, MEMBER)
    token = csrf_of(client.get("/recordings").text)
    for path in (KEYS, f"{KEYS}/pages/revoke", f"{KEYS}/pages/regenerate", "/settings/members",
                 "/settings/members/role", "/settings/members/lock", "/settings/members/remove"):
        resp = client.post(path, data={"csrf": token, "name": "x", "read": "on", "email": ADMIN, "role": "member"})
        assert resp.status_code == 404, path
    assert api_status(site, site.key) == 200  # the key they tried to revoke still works
