"""The recording page in a real headless Chromium against a real `callscope serve`: sign-in by emailed link from a
share email, a processing recording turning completed without a reload, seeking the player from the transcript and
from a goal's evidence, and the page refused to a member of another account, to a signed-out visitor and to a
member locked while signed in.

One stereo call (espeak-ng speech, one speaker per channel) is analysed once for the module: the server that shows
the pages runs no dispatcher, so the call stays pending until a second server on the same data directory (the
dispatcher, inline executor) is started by the first test that needs it completed.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from tests.analysis import speech
from tests.live import LiveServer, start_server
from tests.pages.site import NO_BROWSER, NO_BROWSER_REASON, Site, by_css, make_site, upload, wait_for
from tests.pages.site import browser_sign_in as sign_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400),
              pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON),
              pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)]

AGENT_OPENING = "Thank you for calling Acme support."
CUSTOMER = "My internet connection keeps dropping every evening."
AGENT_CLOSING = "I have reset your line. Is there anything else I can help with?"
MEMBERS = [("default", "ana@example.com", "Ana Reviewer"), ("default", "lou@example.com", "Lou Locked"),
           ("other", "otto@example.com", "Otto Other")]
PROJECT = {"apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "support"},
           "spec": {"name": "Support", "language": "en", "longPauseThresholdSeconds": 2,
                    "goals": [{"id": 1, "name": "Offer further help", "speaker": "agent",
                               "description": "The agent asks whether there is anything else to help with.",
                               "phrases": ["anything else"]},
                              {"id": 2, "name": "Hold etiquette", "speaker": "agent",
                               "description": "The agent thanks the caller for holding.",
                               "phrases": ["thank you for holding"], "appliesWhen": {"phrases": ["please hold"]}},
                              {"id": 3, "name": "Silence explained", "speaker": "agent",
                               "description": "The agent says why the line went quiet.",
                               "phrases": ["sorry for the wait"], "appliesWhen": {"longPause": True}}]}}


def stereo_call(path):
    """Agent on channel 1, customer on channel 2, a 3-second silence before the agent's closing line."""
    opening, complaint, closing = (speech.speak(t) for t in (AGENT_OPENING, CUSTOMER, AGENT_CLOSING))
    lead, wait = speech.silence(0.4), speech.silence(3.0)
    agent = np.concatenate([lead, opening, np.zeros_like(complaint), wait, closing, lead])
    customer = np.concatenate([lead, np.zeros_like(opening), complaint])
    return speech.write(path, [agent, speech.pad_to(customer, len(agent))])


class World:
    def __init__(self, site: Site):
        self.site = site
        self.dispatcher: LiveServer | None = None

    def analyse(self) -> None:
        """Start the dispatcher (once) and wait until the call is completed."""
        if self.dispatcher is None:
            self.dispatcher = start_server(self.site.data_dir, analysis_executor="inline", llm_enabled="false",
                                           dispatcher_poll_seconds="0.3", store_poll_interval="0.05")
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            status = self.site.api("GET", f"/recordings/{self.site.recording}").json()["data"]["status"]
            if status in ("completed", "failed"):
                break
            time.sleep(0.5)
        assert status == "completed"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("page") / "data"
    server = start_server(data_dir, dispatcher_enabled="false", store_poll_interval="0.05")
    world = None
    try:
        site = make_site(server, data_dir, MEMBERS, PROJECT)
        site.recording = upload(site, stereo_call(data_dir.parent / "call.wav"), "Line keeps dropping")
        world = World(site)
        yield world
    finally:
        if world is not None and world.dispatcher is not None:
            world.dispatcher.stop()
        server.stop()


def page_url(world: World) -> str:
    return f"{world.site.url}/recordings/{world.site.recording}"


def audio_ready(driver) -> None:
    wait_for(driver, lambda d: d.execute_script("return document.getElementById('audio').readyState") >= 1,
             what="audio metadata")


def current_time(driver) -> float:
    return driver.execute_script("return document.getElementById('audio').currentTime")


def test_the_share_email_link_leads_through_sign_in_to_the_page(world, driver):
    site = world.site
    resp = site.api("POST", f"/recordings/{site.recording}/shares", json={"email": "ana@example.com"})
    assert resp.status_code == 201
    [url] = [u for u in site.new_mail("ana@example.com") if "/recordings/" in u]
    assert url == page_url(world)
    sign_in(driver, site, "ana@example.com", url)
    assert by_css(driver, "h1").text == "Line keeps dropping"


def test_a_processing_recording_turns_completed_without_a_reload(world, driver):
    if driver.current_url != page_url(world):
        sign_in(driver, world.site, "ana@example.com", page_url(world))
    if world.dispatcher is not None:
        pytest.skip("the call was analysed before this test ran")
    assert by_css(driver, "#status-badge").text == "pending" and by_css(driver, "#progress")
    driver.execute_script("window.stillTheSamePage = true")
    world.analyse()
    wait_for(driver, lambda d: d.execute_script("return document.documentElement.dataset.ready") == "completed",
             timeout=30, what="the page to show the completed analysis")
    assert driver.execute_script("return window.stillTheSamePage") is True  # no navigation happened
    assert by_css(driver, "#status-badge").text == "completed"
    texts = [e.text for e in driver.find_elements("css selector", "#segments .seg .text")]
    assert min(speech.wer(CUSTOMER, t) for t in texts) < 0.35


def test_clicking_a_segment_or_a_word_seeks_the_player(world, driver):
    world.analyse()
    sign_in(driver, world.site, "ana@example.com", page_url(world))
    audio_ready(driver)
    segments = driver.find_elements("css selector", "#segments .seg")
    assert len(segments) >= 2 and len({s.get_attribute("class").split()[1] for s in segments}) == 2  # two speakers
    later = segments[-1]
    start = int(later.get_attribute("data-start")) / 1000
    assert start > 3
    later.find_element("css selector", ".ts").click()
    wait_for(driver, lambda d: abs(current_time(d) - start) < 1.0, what="the player at the segment")
    wait_for(driver, lambda d: "current" in later.get_attribute("class"), what="the segment highlighted")
    first = segments[0]
    word = first.find_elements("css selector", ".text span")[2]
    offset = int(first.get_attribute("data-w").split(",")[2])
    word_at = (int(first.get_attribute("data-start")) + offset) / 1000
    word.click()
    wait_for(driver, lambda d: abs(current_time(d) - word_at) < 0.8, what="the player at the word")
    assert word_at < start - 1  # a different place than before
    by_css(driver, "#search").send_keys("internet")
    matched = [s for s in segments if "hit" in s.get_attribute("class").split()]
    assert [s.find_element("css selector", ".who").text for s in matched] == ["Customer"]
    assert by_css(driver, "#hits").text.startswith("1 match")


def test_a_goals_evidence_seeks_the_player(world, driver):
    world.analyse()
    sign_in(driver, world.site, "ana@example.com", page_url(world))
    audio_ready(driver)
    goal = by_css(driver, ".goal")
    assert "Offer further help" in goal.text and "Met" in goal.text
    quote = goal.find_element("css selector", "button.quote")
    assert "anything else" in quote.text.lower()
    at = int(quote.get_attribute("data-seek")) / 1000
    assert at > 3
    quote.click()
    wait_for(driver, lambda d: abs(current_time(d) - at) < 1.0, what="the player at the evidence")
    assert by_css(driver, ".gap.long")  # the 3-second silence is a long pause (threshold 2 s)
    cards = driver.find_elements("css selector", ".goal")
    # no hold in the call: not applicable, not "Not met"; the long silence happened: that goal applies, unmet
    assert "Hold etiquette" in cards[1].text and "Not applicable" in cards[1].text and "Not met" not in cards[1].text
    assert "Silence explained" in cards[2].text and "Not met" in cards[2].text


def test_an_expired_audio_url_is_renewed(world, driver):
    world.analyse()
    sign_in(driver, world.site, "ana@example.com", page_url(world))
    audio_ready(driver)
    driver.execute_script("document.getElementById('audio').src = location.origin + '/files/expired.token'")
    wait_for(driver, lambda d: d.execute_script(
        "const a = document.getElementById('audio'); return !a.src.includes('expired') && a.readyState >= 1"),
        what="a fresh audio URL in the player")


def test_a_signed_out_visitor_and_a_member_of_another_account_never_see_the_recording(world, driver):
    site = world.site
    driver.get(f"{site.url}/sign-in")
    driver.delete_all_cookies()
    driver.get(page_url(world))
    assert "/sign-in?next=" in driver.current_url and "Line keeps dropping" not in driver.page_source
    sign_in(driver, site, "otto@example.com", f"{site.url}/recordings")
    driver.get(page_url(world))
    assert by_css(driver, "h1").text == "Not found" and "Line keeps dropping" not in driver.page_source


def test_a_locked_member_is_thrown_out(world, driver):
    site = world.site
    sign_in(driver, site, "lou@example.com", page_url(world))
    assert by_css(driver, "h1").text == "Line keeps dropping"
    site.server.cli("members", "lock", "--email", "lou@example.com")
    time.sleep(0.5)
    driver.refresh()
    assert "/sign-in?next=" in driver.current_url and "Line keeps dropping" not in driver.page_source
