"""The recording page's actions in a real headless Chromium against a real `callscope serve`: an admin edits the
call's tags (a new one too), has it analysed again and follows that without a reload, then deletes it (asked first)
and lands on the list as it was; at a phone's width (390 px) the player stays in sight (sticky) while the end of a
long transcript is read and played from, nothing scrolls sideways on the recording page, the list, upload, trends or
any Settings page, and the list's filters are folded so that its calls are on the first screen.

The call is analysed with a hand-written result through the worker's own completion, by a runtime of this process
on the server's data directory (the server runs no dispatcher), as test_search_browser.py does; so is its
re-analysis. With CALLSCOPE_TEST_SHOTS set to a folder, the page is saved there at both widths (site.shoot)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from callscope.analysis import stored
from callscope.catalog import jobs
from callscope.catalog import recordings as recording_rows
from callscope.config import Settings
from callscope.runtime import opened
from callscope.workers import outcomes
from tests.audio_samples import make_audio
from tests.live import start_server
from tests.pages.site import API, NO_BROWSER, NO_BROWSER_REASON, Site, by_css, make_site, shoot, upload, wait_for
from tests.pages.site import browser_sign_in as sign_in
from tests.search.calls import SECONDS, result

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)]

ADMIN = "ada@example.com"
PHONE = (390, 844)
# a long call: 60 lines, the transcript many screens long on a phone
LINES = [("agent" if i % 2 == 0 else "customer",
          f"Line {i}: " + ("I can look into that for you, one moment please." if i % 2 == 0
                           else "My internet keeps dropping every evening since last week."))
         for i in range(60)]
PAGES_AT_PHONE_WIDTH = ["/recordings", "/upload", "/trends", "/settings/api-keys", "/settings/members",
                        "/settings/webhooks", "/settings/processing"]


async def _complete(data_dir: Path, public_id: str, kind: str) -> None:
    async with opened(Settings(data_dir=data_dir, log_level="WARNING")) as rt:
        ctx = rt.ctx
        [job] = await ctx.catalog.write(jobs.claim, 1, "test", 600, ctx.clock(), 3)
        recording = await ctx.catalog.read(recording_rows.by_id, job.recording_id)
        assert (recording.public_id, job.kind) == (public_id, kind)
        assert await outcomes.complete(ctx, job, stored.completion(result(LINES), recording))


def analyse(site: Site, kind: str = jobs.ANALYZE) -> None:
    """Claim the call's job (its analysis, or a re-analysis) and complete it, as the dispatcher would."""
    asyncio.run(_complete(site.data_dir, site.recording, kind))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("actions") / "data"
    server = start_server(data_dir, dispatcher_enabled="false", store_poll_interval="0.05")
    try:
        site = make_site(server, data_dir, [])
        server.cli("members", "add", "--email", ADMIN, "--name", "Ada Admin", "--role", "admin")
        resp = site.api("POST", "/tags", json={"name": "billing", "project_id": site.project_id})
        assert resp.status_code == 201, resp.text
        audio = make_audio(data_dir.parent / "call.wav", "wav", seconds=len(LINES) * SECONDS / 1000)
        site.recording = upload(site, audio, "Line drops every evening")
        analyse(site)
        yield site
    finally:
        server.stop()


def overflow(driver) -> int:
    """How far the page scrolls sideways (0: it fits the window)."""
    return driver.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth")


def test_an_admin_tags_reanalyses_and_deletes_a_call_and_it_all_fits_a_phone(site, driver):
    page = f"{site.url}/recordings/{site.recording}"
    sign_in(driver, site, ADMIN, page)

    # tags: one of the project's ticked, a new one made, both shown at the top
    by_css(driver, "#tags-action summary").click()
    by_css(driver, "#tags-action input[name=tag_id]").click()
    by_css(driver, "#new-tag").send_keys("Call back")
    by_css(driver, "#tags-submit").click()
    wait_for(driver, lambda d: by_css(d, "#action-notice").text == "Tags saved.", what="the tags saved")
    assert [t.text for t in driver.find_elements("css selector", "#tags li")] == ["billing", "Call back"]
    assert "done=" not in driver.current_url  # said once: a reload does not say it again

    # re-analysis: queued, followed on the page, the new results swapped in without a reload
    by_css(driver, "#reanalyse").click()
    wait_for(driver, lambda d: "Queued to be analysed again" in by_css(d, "#action-notice").text, what="queued")
    assert by_css(driver, ".state h2").text == "Analysing this call again"
    assert by_css(driver, "#stage").text == "Waiting to be analysed again"
    driver.execute_script("window.stillTheSamePage = true")
    analyse(site, jobs.REANALYZE)
    wait_for(driver, lambda d: not d.find_elements("css selector", "#main[data-reanalysing], .state"),
             timeout=30, what="the re-analysed page in place")
    assert driver.execute_script("return window.stillTheSamePage") is True
    assert by_css(driver, "#reanalyse") and not driver.find_elements("css selector", "#action-notice")

    # a phone: the player stays in sight while the end of the long transcript is read and played from
    shoot(driver, "recording-actions")  # fits both widths (and saved, with CALLSCOPE_TEST_SHOTS)
    driver.set_window_size(*PHONE)
    assert overflow(driver) <= 0
    last = driver.find_elements("css selector", "#segments .seg")[-1]
    driver.execute_script("arguments[0].scrollIntoView({block: 'end'})", last)
    assert driver.execute_script("return window.scrollY") > 2000  # far below where the player started
    player = by_css(driver, ".player")
    assert driver.execute_script("return getComputedStyle(arguments[0]).position", player) == "sticky"
    box = driver.execute_script("return arguments[0].getBoundingClientRect().toJSON()", player)
    assert box["top"] >= 0 and box["bottom"] <= PHONE[1] / 3, box  # on screen, and leaves the reading room
    last.find_element("css selector", ".ts").click()
    start = int(last.get_attribute("data-start")) / 1000
    wait_for(driver, lambda d: abs(d.execute_script("return document.getElementById('audio').currentTime")
                                   - start) < 1.0, what="the player at the last segment")
    pause = by_css(driver, "#audio")  # its pause control: the player itself, in sight
    assert driver.execute_script("const r = arguments[0].getBoundingClientRect(); "
                                 "return r.top >= 0 && r.bottom <= window.innerHeight", pause)
    for path in PAGES_AT_PHONE_WIDTH:
        driver.get(site.url + path)
        assert overflow(driver) <= 0, f"{path} scrolls sideways at {PHONE[0]} px"
    driver.get(f"{site.url}/recordings")  # the filters folded: the calls on the first screen
    assert not by_css(driver, "#filters-box").get_attribute("open")
    assert by_css(driver, "table.recordings tbody tr").rect["y"] < PHONE[1] - 100  # a call in the first screen
    driver.get(f"{site.url}/recordings?status=completed")  # a filter set: shown
    assert by_css(driver, "#filters-box").get_attribute("open")
    driver.get(page)
    by_css(driver, "#share-action summary").click()
    by_css(driver, "#tags-action summary").click()
    assert overflow(driver) <= 0, "the open share and tags forms scroll sideways"

    # deletion: asked first, then the list as it was left, saying so
    driver.set_window_size(1280, 900)
    driver.get(f"{site.url}/recordings?status=completed")
    by_css(driver, f"a[href^='/recordings/{site.recording}']").click()
    by_css(driver, "#delete").click()
    wait_for(driver, lambda d: by_css(d, "h1").text == "Delete “Line drops every evening”?", what="asked first")
    assert httpx.get(f"{site.url}{API}/recordings/{site.recording}", headers=site.headers).status_code == 200
    by_css(driver, "#confirm-delete").click()
    wait_for(driver, lambda d: d.current_url == f"{site.url}/recordings?status=completed&deleted=1",
             what="back on the list")
    assert "The recording was deleted" in by_css(driver, "#action-notice").text
    assert "Line drops every evening" not in by_css(driver, "main").text
    assert httpx.get(f"{site.url}{API}/recordings/{site.recording}", headers=site.headers).status_code == 404
