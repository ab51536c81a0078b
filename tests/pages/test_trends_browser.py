"""The Trends page in a real headless Chromium against a real `callscope serve`: a chart's bar, clicked or opened
from the keyboard, opens the list of exactly the calls it counts; another account's calls never count.

The calls are written straight into the server's catalog, analysed (their figures recorded) (the models are not what
this tests). With CALLSCOPE_TEST_SHOTS set to a folder, the page is saved there at a desktop's and a phone's
width (trends-desktop.png, trends-phone.png), and the list a bar opens (trends-list-*.png).
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

import pytest

from callscope.catalog.db import Catalog
from tests.catalog.trend_rows import add, fig
from tests.live import start_server
from tests.pages.site import NO_BROWSER, NO_BROWSER_REASON, SHOTS, by_css, make_site, shoot, wait_for
from tests.pages.site import browser_sign_in as sign_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)]

MEMBERS = [("default", "ana@example.com", "Ana Reviewer"), ("other", "otto@example.com", "Otto Other")]
PROJECT = {"apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "support"},
           "spec": {"name": "Support", "language": "en",
                    "goals": [{"id": 1, "name": "Greeting", "description": "The agent greets the caller."},
                              {"id": 2, "name": "Offer further help",
                               "description": "The agent asks whether there is anything else."}]}}
EMOTIONS = ["calm", "happy", "neutral", "angry", "calm", "sad", None]


def day(days_ago: int, hour: int = 12) -> datetime:
    return datetime.combine(datetime.now(UTC).date() - timedelta(days=days_ago), time(hour), UTC)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("trends") / "data"
    server = start_server(data_dir, dispatcher_enabled="false", store_poll_interval="0.05")
    try:
        site = make_site(server, data_dir, MEMBERS, PROJECT)
        catalog = Catalog(f"sqlite:///{(data_dir / 'catalog.db').resolve()}")
        try:
            add(catalog, account="default", project_id=site.project_id, created_at=day(3, 8), name="Morning call",
                found=fig(1.0, 60, 40, "calm", {1: True, 2: True}))
            add(catalog, account="default", project_id=site.project_id, created_at=day(3, 22), name="Evening call",
                found=fig(0.5, 40, 60, "angry", {1: True, 2: False}))
            add(catalog, account="default", project_id=site.project_id, status="pending", created_at=day(3),
                name="Not analysed yet")
            for n in range(28):  # a month of calls, for the charts to show more than one bar
                add(catalog, account="default", project_id=site.project_id, created_at=day(4 + n % 26, 10 + n % 9),
                    name=f"Call {n}", found=fig((n % 5) / 4, 40 + n % 30, 60 - n % 30, EMOTIONS[n % len(EMOTIONS)],
                                                {1: n % 3 > 0, 2: n % 4 > 1}))
            for n in range(5):  # another account, the same project id
                add(catalog, account="other", project_id=site.project_id, created_at=day(3), name=f"Other {n}",
                    found=fig(0.0, 1, 1, "sad", {1: False}))
        finally:
            catalog.dispose()
        yield site
    finally:
        server.stop()


def listed(driver) -> set[str]:
    return {a.text for a in driver.find_elements("css selector", "table.recordings tbody td:first-child a")}


def bar(driver, chart: str, label_end: str):
    """The bar of `chart` (its key) whose label ends with `label_end`, of the day three days ago."""
    name = day(3).strftime("%a ") + str(day(3).day) + day(3).strftime(" %b %Y")
    return by_css(driver, f'#c-{chart} a[aria-label="{name}: {label_end}"]')


def test_a_bar_opens_exactly_the_calls_it_counts(site, driver):
    url = f"{site.url}/trends?project_id={site.project_id}"
    sign_in(driver, site, "ana@example.com", url)
    wait_for(driver, lambda d: by_css(d, "h1").text.startswith("Trends"), what="the Trends page")
    assert "30 calls analysed" in by_css(driver, "p[role=status]").text  # none of the other account's
    bar(driver, "calls", "2 calls analysed").click()
    wait_for(driver, lambda d: "/recordings?" in d.current_url, what="the list")
    assert listed(driver) == {"Morning call", "Evening call"}
    assert by_css(driver, "p[role=status]").text == "2 recordings"

    driver.get(url)  # from the keyboard: the goal chart's bar, focused and opened with Enter
    from selenium.webdriver.common.keys import Keys  # dev extra

    goal = bar(driver, "goal-1", "50% met, 1 of 2 calls")
    goal.send_keys(Keys.ENTER)
    wait_for(driver, lambda d: "/recordings?" in d.current_url, what="the list, from the keyboard")
    assert listed(driver) == {"Morning call", "Evening call"}


def test_another_accounts_member_sees_only_their_calls(site, driver):
    sign_in(driver, site, "otto@example.com", f"{site.url}/trends?project_id={site.project_id}")
    wait_for(driver, lambda d: by_css(d, "h1").text.startswith("Trends"), what="the Trends page")
    assert "5 calls analysed" in by_css(driver, "p[role=status]").text
    bar(driver, "calls", "5 calls analysed").click()
    wait_for(driver, lambda d: "/recordings?" in d.current_url, what="the list")
    assert listed(driver) == {f"Other {n}" for n in range(5)}


@pytest.mark.skipif(not SHOTS, reason="CALLSCOPE_TEST_SHOTS names no folder")
def test_screenshots(site, driver):
    sign_in(driver, site, "ana@example.com", f"{site.url}/trends?project_id={site.project_id}")
    wait_for(driver, lambda d: by_css(d, "h1").text.startswith("Trends"), what="the Trends page")
    shoot(driver, "trends")
    bar(driver, "calls", "2 calls analysed").click()  # and the list it opens
    wait_for(driver, lambda d: "/recordings?" in d.current_url, what="the list")
    shoot(driver, "trends-list")
