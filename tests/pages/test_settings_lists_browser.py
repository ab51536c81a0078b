"""A project's goals edited as rows in a real headless Chromium against a real `callscope serve`: an admin creates a
project in the app, opens its goals, adds one without a description (the message beside the field, which has the
focus; nothing saved), writes it and saves (`callscope get projects` shows the goal). With CALLSCOPE_TEST_SHOTS set
the pages are saved there (`goal-rows*.png`)."""

from __future__ import annotations

import json

import pytest

from tests.live import start_server
from tests.pages.site import NO_BROWSER, NO_BROWSER_REASON, Site, browser_sign_in, by_css, shoot, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)]

ADMIN = "ada@example.com"
PATH = "/settings/processing"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("goal-rows") / "data"
    server = start_server(data_dir, dispatcher_enabled="false", store_poll_interval="0.05")
    try:
        server.cli("members", "add", "--email", ADMIN, "--name", "Ada Admin", "--role", "admin")
        yield Site(server, data_dir, server.new_key("pages"), 0)
    finally:
        server.stop()


def goals_of(site: Site, project_id: int) -> list[dict]:
    """The project's goals as `callscope get projects -o json` shows them (the REST detail has no goals)."""
    listed = json.loads(site.server.cli("get", "projects", "-o", "json").stdout)["items"]
    [project] = [p for p in listed if p["status"].get("id") == project_id]
    return project["spec"].get("goals", [])


def test_an_admin_creates_a_project_and_adds_a_goal_as_a_row(site, driver):
    browser_sign_in(driver, site, ADMIN, f"{site.url}{PATH}")
    by_css(driver, "#new-name").send_keys("Support")
    by_css(driver, "#new-language").send_keys("en")
    by_css(driver, "#create-project").click()
    wait_for(driver, lambda d: "Project created" in by_css(d, "#created").text, what="the new project's page")
    project_id = int(driver.current_url.split("/")[-1].split("?")[0])

    by_css(driver, "#edit-goals").click()
    wait_for(driver, lambda d: by_css(d, "h1").text.startswith("Goals: Support"), what="the goals' rows")
    by_css(driver, "#r0-name").send_keys("Greeting")
    by_css(driver, "#r0-phrases").send_keys("thank you for calling")
    by_css(driver, "#save").click()
    wait_for(driver, lambda d: by_css(d, "#form-errors").is_displayed(), what="the errors")
    description = by_css(driver, "#r0-description")
    assert description.get_attribute("aria-invalid") == "true"
    assert driver.switch_to.active_element == description  # the first error's field has the focus
    assert "description" in by_css(driver, "#r0-description-errors").text
    assert goals_of(site, project_id) == []
    shoot(driver, "goal-rows-errors")

    description.send_keys("The agent greets the caller and gives their name.")
    by_css(driver, "#save").click()
    wait_for(driver, lambda d: "Saved." in by_css(d, "#saved").text, what="saved")
    [goal] = goals_of(site, project_id)
    assert (goal["name"], goal["phrases"]) == ("Greeting", ["thank you for calling"])
    assert by_css(driver, "#r0-name").get_attribute("value") == "Greeting"  # shown as a row, a new one below
    shoot(driver, "goal-rows")
