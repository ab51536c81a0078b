"""Settings → Processing in a real headless Chromium against a real `callscope serve`: an admin reads the account's
settings, opens a project, sends a bad pause threshold and a goal without a description (each error beside its field,
nothing saved), corrects them and saves (the API's GET /projects/{id} shows the change); a project applied by a
GitOps tool is read-only. Every page fits a phone's width; with CALLSCOPE_TEST_SHOTS set they are saved there
(`processing*.png`)."""

from __future__ import annotations

import json

import pytest

from tests.live import start_server
from tests.pages.site import NO_BROWSER, NO_BROWSER_REASON, Site, browser_sign_in, by_css, shoot, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)]

ADMIN = "ada@example.com"
PATH = "/settings/processing"
GOAL = {"id": 1, "name": "Greeting", "description": "The agent greets the caller.", "phrases": ["good morning"]}
SYNCED = {"apiVersion": "callscope.io/v1alpha1", "kind": "Project",
          "metadata": {"name": "synced", "labels": {"app.kubernetes.io/managed-by": "argocd"}},
          "spec": {"name": "Synced", "language": "en", "goals": [GOAL]}}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("processing") / "data"
    server = start_server(data_dir, dispatcher_enabled="false", store_poll_interval="0.05")
    try:
        server.cli("members", "add", "--email", ADMIN, "--name", "Ada Admin", "--role", "admin")
        site = Site(server, data_dir, server.new_key("pages"), 0)
        resp = site.api("POST", "/projects", json={"name": "Support", "language": "en"})
        assert resp.status_code == 201, resp.text
        site.project_id = resp.json()["data"]["id"]
        synced = data_dir.parent / "synced.yaml"
        synced.write_text(json.dumps(SYNCED))
        server.cli("apply", "-f", str(synced))
        yield site
    finally:
        server.stop()


def test_an_admin_corrects_what_the_form_refuses_and_saves(site, driver):
    browser_sign_in(driver, site, ADMIN, f"{site.url}{PATH}")
    assert by_css(driver, "nav.tabs a[aria-current=page]").text == "Processing"
    assert "WAV 500 MB" in by_css(driver, "#account-settings").text
    wait_for(driver, lambda d: "Synced" in by_css(d, "table.processing").text, what="the applied project numbered")
    shoot(driver, "processing")

    by_css(driver, f"a[href='{PATH}/{site.project_id}']").click()
    wait_for(driver, lambda d: by_css(d, "h1").text.startswith("Processing: Support"), what="the project's form")
    pause, goals = by_css(driver, "#long_pause_threshold_seconds"), by_css(driver, "#goals")
    pause.send_keys("0")
    goals.send_keys('[{"id": 1, "name": "Greeting"}]')
    by_css(driver, ".processing-form button[type=submit]").click()
    wait_for(driver, lambda d: by_css(d, "#form-errors").is_displayed(), what="the errors")
    assert "greater than or equal to 1" in by_css(driver, "#long_pause_threshold_seconds-errors").text
    assert "goals: item 1: description is required" in by_css(driver, "#goals-errors").text
    assert by_css(driver, "#goals").get_attribute("aria-invalid") == "true"
    assert site.api("GET", f"/projects/{site.project_id}").json()["data"]["long_pause_threshold_seconds"] is None
    shoot(driver, "processing-errors")

    pause = by_css(driver, "#long_pause_threshold_seconds")
    pause.clear()
    pause.send_keys("3")
    goals = by_css(driver, "#goals")
    goals.clear()
    goals.send_keys(json.dumps([GOAL]))
    by_css(driver, ".processing-form button[type=submit]").click()
    wait_for(driver, lambda d: "Saved." in by_css(d, "#saved").text, what="saved")
    got = site.api("GET", f"/projects/{site.project_id}").json()["data"]
    assert got["long_pause_threshold_seconds"] == 3
    shoot(driver, "processing-project")


def test_a_project_applied_by_gitops_is_read_only(site, driver):
    driver.get(f"{site.url}{PATH}")
    driver.find_element("link text", "Synced").click()
    wait_for(driver, lambda d: "Read-only here" in by_css(d, "#read-only").text, what="the read-only note")
    assert "argocd" in by_css(driver, "#read-only").text
    assert not by_css(driver, "#language").is_enabled()
    shoot(driver, "processing-gitops")
