"""A live call's page in a real headless Chromium against a real `callscope serve`: a gateway (websocket-client on the
generic endpoint, with the project's API key) streams a two-party call of espeak-ng speech in real time; a member
signed in finds it marked live on the recordings list, opens it from the keyboard and watches the transcript grow
(finals from both speakers), the greeting goal tick and the cancellation alert come; the page fits a phone's width.
When the call ends the page turns, without a reload, into the ordinary recording page once the full analysis is
stored. The live and the batch analysis run the smallest Whisper the project ships (tiny.en)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.analysis import speech
from tests.live import start_server
from tests.live_calls.sound import TwoParty, two_party
from tests.pages.site import NO_BROWSER, NO_BROWSER_REASON, Site, by_css, make_site, shoot, wait_for
from tests.pages.site import browser_sign_in as sign_in

websocket = pytest.importorskip("websocket", reason="websocket-client is not installed")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON),
              pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)]

MEMBER = "ana@example.com"
SCRIPT = [("agent", 0.3, "Thank you for calling Acme support. How can I help you?"),
          ("customer", 0.6, "Hello. I want to cancel my subscription, please."),
          ("agent", 0.8, "I can help you with that today.")]
PROJECT = {"apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "support"},
           "spec": {"name": "Support", "language": "en", "live": True,
                    "goals": [{"id": 1, "name": "Greeting", "description": "The agent thanks the caller for calling.",
                               "phrases": ["thank you for calling"], "speaker": "agent", "withinSeconds": 30}],
                    "liveAlerts": [{"name": "Cancellation", "phrases": ["cancel my subscription"],
                                    "speaker": "customer"}]}}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("live-page") / "data"
    server = start_server(data_dir, whisper_model="tiny.en", llm_enabled="false", analysis_executor="inline",
                          dispatcher_slots="1", dispatcher_poll_seconds="0.3", analysis_threads="1",
                          store_poll_interval="0.05")
    try:
        yield make_site(server, data_dir, [("default", MEMBER, "Ana Supervisor")], PROJECT)
    finally:
        server.stop()


class Gateway:
    """The call's audio sent as a gateway sends it: 16-bit stereo frames of 100 ms, in real time, then `stop`."""

    def __init__(self, site: Site, project_id: int) -> None:
        self.ws = websocket.create_connection(f"{site.url.replace('http://', 'ws://')}/api/v1/public/live",
                                              header=[f"Authorization: Bearer {site.key}"], timeout=120)
        self.ws.send(json.dumps({"type": "start", "project_id": project_id, "name": "Call with Jane",
                                 "encoding": "pcm16", "sample_rate": 16000, "channels": 2}))
        self.public_id = json.loads(self.ws.recv())["recording"]["public_id"]

    def stream(self, call: TwoParty) -> threading.Thread:
        def send() -> None:
            agent, customer = call.pcm16()
            step, began = speech.RATE // 10, time.monotonic()
            for i, at in enumerate(range(0, len(agent), step)):
                frame = bytearray(4 * len(agent[at:at + step]))
                frame[0::4], frame[1::4] = agent[at:at + step].tobytes()[0::2], agent[at:at + step].tobytes()[1::2]
                frame[2::4], frame[3::4] = (customer[at:at + step].tobytes()[0::2],
                                            customer[at:at + step].tobytes()[1::2])
                self.ws.send_binary(bytes(frame))
                time.sleep(max(0.0, began + (i + 1) * 0.1 - time.monotonic()))
            self.ws.send(json.dumps({"type": "stop"}))

        thread = threading.Thread(target=send, daemon=True)
        thread.start()
        return thread


# Counts what the page shows only for a moment: a partial added (then replaced by its final) and a speaker marked
# as speaking (until the utterance ends).
WATCH = """window.seen = {partial: 0, talking: 0};
new MutationObserver(function (records) { records.forEach(function (r) {
  if (r.type === "childList") {
    r.addedNodes.forEach(function (n) { if (n.classList && n.classList.contains("partial")) seen.partial++; });
  } else if (r.target.classList.contains("talking")) { seen.talking++; }
}); }).observe(document.getElementById("main"),
               {childList: true, subtree: true, attributes: true, attributeFilter: ["class"]});"""


def texts(driver, selector: str) -> list[str]:
    return [e.text for e in driver.find_elements("css selector", selector)]


def test_a_supervisor_follows_a_live_call_until_it_is_the_analysed_recording(site: Site, driver):
    from selenium.webdriver.common.keys import Keys  # the dev extra, as site.browser's

    sign_in(driver, site, MEMBER, f"{site.url}/recordings")
    gateway = Gateway(site, site.project_id)
    sending = gateway.stream(two_party(SCRIPT, tail=2.0))
    try:
        driver.get(f"{site.url}/recordings")
        link = by_css(driver, f'.live-calls a[href="/recordings/{gateway.public_id}"]')
        assert link.text == "Call with Jane"
        row = link.find_element("xpath", "./ancestor::tr")
        assert "Live" in row.find_element("css selector", ".status-live").text
        shoot(driver, "recordings-with-a-live-call")
        link.send_keys(Keys.ENTER)  # from the keyboard
        wait_for(driver, lambda d: d.current_url == f"{site.url}/recordings/{gateway.public_id}", what="the live page")
        assert by_css(driver, "#main").get_attribute("data-status") == "live"
        driver.execute_script(WATCH)
        goal = by_css(driver, '#live-goals li[data-goal-id="1"]')
        assert "pending" in goal.get_attribute("class").split()

        wait_for(driver, lambda d: "met" in goal.get_attribute("class").split(), timeout=90, what="the goal ticked")
        assert goal.find_element("css selector", ".badge").text.startswith("Met at 0:0")
        assert "thank you for calling" in goal.find_element("css selector", ".evidence").text.lower()
        first = texts(driver, "#live-segments .seg.final")
        assert first and "thank you for calling" in first[0].lower()
        wait_for(driver, lambda d: len(texts(d, "#live-segments .seg.final")) > len(first), timeout=90,
                 what="the transcript growing")
        wait_for(driver, lambda d: any("Cancellation" in t for t in texts(d, "#live-alerts li")), timeout=90,
                 what="the cancellation alert")
        [alert] = texts(driver, "#live-alerts li")
        assert "Customer said" in alert and "cancel my subscription" in alert.lower()
        seen = driver.execute_script("return window.seen")
        assert seen["partial"] and seen["talking"], seen  # words while being said, and who said them
        roles = {e.get_attribute("class") for e in driver.find_elements("css selector", "#live-segments .seg")}
        assert any("sp0" in r for r in roles) and any("sp1" in r for r in roles), roles  # agent and customer
        shoot(driver, "live-call")
    finally:
        sending.join(120)

    wait_for(driver, lambda d: by_css(d, "#status-badge").text in ("ended", "pending", "processing", "completed"),
             timeout=60, what="the call's end")
    said = " ".join(texts(driver, "#live-segments .seg.final")).lower()
    assert "subscription" in said and not driver.find_elements("css selector", "#live-partials .seg")
    wait_for(driver, lambda d: d.execute_script("return document.documentElement.dataset.ready") == "completed",
             timeout=400, what="the analysed recording swapped in")
    assert by_css(driver, "#main").get_attribute("data-status") == "completed"
    assert driver.find_elements("css selector", "#segments .seg") and by_css(driver, "audio#audio")
    gateway.ws.close()
