"""Search across calls in a real headless Chromium against a real `callscope serve`: a member types words into the
recordings list's search box and presses Enter, opens a hit from the keyboard, and the recording page has its player
at the hit's start with that segment marked, in view and focused; the list, the results and the page opened at the
moment fit a phone's width (site.shoot, which also saves them with CALLSCOPE_TEST_SHOTS).

The call (42 s of real audio) is analysed with a hand-written result through the worker's own completion, by a
runtime of this process on the server's data directory (the server runs no dispatcher), as
benchmarks/recording_page.py does; both load the text embedding model, so the search is the default hybrid one."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from callscope.analysis import stored
from callscope.catalog import jobs
from callscope.catalog import recordings as recording_rows
from callscope.config import Settings
from callscope.runtime import opened
from callscope.workers import outcomes
from tests.audio_samples import make_audio
from tests.live import start_server
from tests.pages.site import NO_BROWSER, NO_BROWSER_REASON, Site, by_css, make_site, shoot, upload, wait_for
from tests.pages.site import browser_sign_in as sign_in
from tests.search.calls import SECONDS, result

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)]

MEMBER = "ana@example.com"
LINES = [("agent", "Thank you for calling Acme support, how can I help?"),
         ("customer", "My internet keeps dropping every evening."),
         ("agent", "Let me check your line for you."),
         ("customer", "It has been like this for a week now."),
         ("agent", "I see an outage in your area, it is fixed tonight."),
         ("customer", "Then I want a credit on my next invoice."),
         ("agent", "Of course, the credit will be on your next invoice."),
         ("customer", "Thank you, goodbye.")]
SOUGHT = "credit"  # said in segments 5 and 6


async def analyse(data_dir: Path, public_id: str) -> None:
    """Claim the call's job and complete it with LINES, as the dispatcher would."""
    async with opened(Settings(data_dir=data_dir, log_level="WARNING")) as rt:
        ctx = rt.ctx
        [job] = await ctx.catalog.write(jobs.claim, 1, "test", 600, ctx.clock(), 3)
        recording = await ctx.catalog.read(recording_rows.by_id, job.recording_id)
        assert recording.public_id == public_id
        assert await outcomes.complete(ctx, job, stored.completion(result(LINES), recording))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("search") / "data"
    server = start_server(data_dir, dispatcher_enabled="false", store_poll_interval="0.05")
    try:
        site = make_site(server, data_dir, [("default", MEMBER, "Ana Reviewer")])
        audio = make_audio(data_dir.parent / "call.wav", "wav", seconds=len(LINES) * SECONDS / 1000 + 2)
        site.recording = upload(site, audio, "Line drops, credit asked")
        asyncio.run(analyse(data_dir, site.recording))
        yield site
    finally:
        server.stop()


def in_view(driver, element) -> bool:
    return driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight", element)


def test_a_query_typed_in_the_list_opens_the_call_at_the_moment_found(site: Site, driver):
    from selenium.webdriver.common.keys import Keys  # the dev extra, as site.browser's

    sign_in(driver, site, MEMBER, f"{site.url}/recordings")
    shoot(driver, "recordings-with-search-box")
    box = by_css(driver, "form.search-box #s-q")
    box.send_keys(SOUGHT, Keys.ENTER)
    wait_for(driver, lambda d: d.find_elements("css selector", ".hits .hit-card"), timeout=90,
             what="the results (the server loads the text embedding model for the first query)")
    assert driver.current_url == f"{site.url}/search?q={SOUGHT}"
    cards = driver.find_elements("css selector", ".hits .hit-card")
    found = [c for c in cards if [m.text for m in c.find_elements("css selector", "mark")] == [SOUGHT]]
    assert len(found) == 2  # both segments saying it; meaning may add others, without a mark
    assert by_css(driver, "#s-q").get_attribute("value") == SOUGHT
    link = found[0].find_element("css selector", "a.hit-link")
    href = link.get_attribute("href")
    start = float(href.rsplit("#t=", 1)[1])
    assert href.startswith(f"{site.url}/recordings/{site.recording}#t=") and start in (25.0, 30.0)
    assert link.text == f"Line drops, credit asked at 0:{int(start):02d}"
    shoot(driver, "search-results")

    link.send_keys(Keys.ENTER)  # from the keyboard
    wait_for(driver, lambda d: d.execute_script("return document.getElementById('audio').readyState") >= 1,
             what="audio metadata")
    wait_for(driver, lambda d: abs(d.execute_script("return document.getElementById('audio').currentTime") - start)
             < 0.05, what="the player at the hit's start")
    segment = by_css(driver, f'#segments .seg[data-start="{int(start * 1000)}"]')
    assert "moment" in segment.get_attribute("class").split() and SOUGHT in segment.text
    assert len(driver.find_elements("css selector", "#segments .seg.moment")) == 1
    wait_for(driver, lambda d: in_view(d, segment), what="the segment in view")
    assert driver.execute_script("return document.activeElement.closest('.seg') === arguments[0]", segment)
    assert driver.execute_script("return document.getElementById('audio').paused")  # it waits to be played
    shoot(driver, "recording-page-at-search-hit")
