"""The upload page in a real headless Chromium against a real `callscope serve` that analyses (inline executor, no
language model): an admin chooses three files at once, then picks another project (nothing is sent before Upload
is clicked, and the project picked last is the one the calls go to); the call's row shows its project, its upload's
progress, then its processing stage until `completed`, and links to its recording page; a file that is not audio and
one over its format's size limit are refused with the API's messages. A member finds no upload page.

With CALLSCOPE_TEST_SHOTS set to a folder, the page is saved there at a desktop's and a phone's width while the call
uploads (Chromium's network throttling slows it to a few seconds), while it is processing and once it is completed
(`upload-*.png`).
"""

from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest
from selenium.webdriver.support.ui import Select

from callscope.audio.probe import UNSUPPORTED
from tests.analysis import speech
from tests.audio_samples import make_audio
from tests.live import start_server
from tests.pages.site import (
    NO_BROWSER,
    NO_BROWSER_REASON,
    Site,
    browser_sign_in,
    by_css,
    shoot,
    sign_in,
    upload,
    wait_for,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400),
              pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON),
              pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)]

ADMIN, MEMBER = "ada@example.com", "bob@example.com"
UPLOAD_BYTES_PER_S = 100_000
LIMITS_MB = {"wav": 2, "mp3": 2, "m4a": 2, "ogg": 2, "webm": 2, "flac": 2}
# Counts the upload progress events each XMLHttpRequest sends, as the page's script receives them.
COUNT_PROGRESS = """
window.progressEvents = [];
const open = XMLHttpRequest.prototype.open;
XMLHttpRequest.prototype.open = function () {
  this.upload.addEventListener("progress", (e) => window.progressEvents.push([e.loaded, e.total]));
  return open.apply(this, arguments);
};"""


def throttle(driver, upload_bytes_per_s: int) -> None:
    """Chromium's network throttling of uploads (DevTools protocol); -1 lifts it."""
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
        "offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": upload_bytes_per_s})


def percent(text: str) -> int:
    return int(text[:-1]) if re.fullmatch(r"\d+%", text) else -1


def short_call(path):
    """Agent on channel 1, customer on channel 2: a few seconds of espeak-ng speech."""
    agent, customer = speech.speak("Thank you for calling Acme support."), speech.speak("My line keeps dropping.")
    lead = speech.silence(0.3)
    left = np.concatenate([lead, agent, np.zeros_like(customer), lead])
    right = np.concatenate([lead, np.zeros_like(agent), customer])
    return speech.write(path, [left, speech.pad_to(right, len(left))])


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("upload") / "data"
    server = start_server(data_dir, analysis_executor="inline", llm_enabled="false", dispatcher_poll_seconds="0.3",
                          store_poll_interval="0.05", upload_limits_mb=json.dumps(LIMITS_MB))
    try:
        server.cli("members", "add", "--email", ADMIN, "--name", "Ada Admin", "--role", "admin")
        server.cli("members", "add", "--email", MEMBER, "--name", "Bob Member")
        key = server.new_key("pages")
        site = Site(server, data_dir, key, 0)
        resp = site.api("POST", "/projects", json={"name": "Support", "language": "en",
                                                   "long_pause_threshold_seconds": 2})
        assert resp.status_code == 201, resp.text
        site.project_id = resp.json()["data"]["id"]
        assert site.api("POST", "/projects", json={"name": "Billing", "language": "en"}).status_code == 201
        yield site
    finally:
        server.stop()


def test_an_admin_uploads_two_files_sees_progress_then_the_call_completed(site, driver, tmp_path):
    call = short_call(tmp_path / "call.wav")
    notes = tmp_path / "notes.txt"
    notes.write_text("not audio at all\n" * 100)
    long = make_audio(tmp_path / "long.wav", "wav", seconds=70.0)  # 2.2 MB: over the 2 MB set for WAV here
    browser_sign_in(driver, site, ADMIN, f"{site.url}/upload")
    assert by_css(driver, "nav[aria-label=Main] a[href='/upload']").text == "Upload"
    assert by_css(driver, "#u-file").get_attribute("multiple") is not None  # the script is there (CSP allows it)
    driver.execute_script(COUNT_PROGRESS)
    throttle(driver, UPLOAD_BYTES_PER_S)  # a few seconds' upload: its progress is seen passing, not only its end

    assert by_css(driver, "#u-project option:checked").text == "Billing"  # the first project by name
    by_css(driver, "#u-file").send_keys(f"{call}\n{notes}\n{long}")  # chosen at once: each uploads on its own

    rows = lambda d: d.find_elements("css selector", "#uploads tbody tr")  # noqa: E731 - read again each time
    time.sleep(1.5)  # choosing sends nothing: the project may still change
    assert rows(driver) == [] and site.api("GET", "/recordings").json()["data"] == []
    Select(by_css(driver, "#u-project")).select_by_visible_text("Support")
    by_css(driver, "#upload-form button[type=submit]").click()
    wait_for(driver, lambda d: len(rows(d)) == 3, what="a row per file")
    assert [by_css(row, "td[data-label=Project]").text for row in rows(driver)] == ["Support"] * 3
    wait_for(driver, lambda d: 0 < percent(by_css(rows(d)[0], ".pct").text) < 100, what="the upload part-way")
    shoot(driver, "upload-progress")
    wait_for(driver, lambda d: by_css(rows(d)[0], ".pct").text == "100%", what="the upload's end")
    throttle(driver, -1)
    wait_for(driver, lambda d: rows(d)[1].get_attribute("data-status") == "failed", timeout=30,
             what="the text file refused")
    assert by_css(rows(driver)[1], ".status").text == f"refused: {UNSUPPORTED}"  # the API's messages
    wait_for(driver, lambda d: rows(d)[2].get_attribute("data-status") == "failed", timeout=30,
             what="the long file refused")
    assert by_css(rows(driver)[2], ".status").text == "refused: File is larger than the 2 MB allowed for this format"
    first = rows(driver)[0]
    assert by_css(first, ".pct").text == "100%"
    assert by_css(first, "progress").get_attribute("value") == "100"
    events = driver.execute_script("return window.progressEvents")
    assert events and events[-1][0] == events[-1][1] and events[0][1] >= call.stat().st_size  # the upload's own

    wait_for(driver, lambda d: rows(d)[0].get_attribute("data-status") in ("pending", "processing", "completed"),
             what="the call stored")
    link = by_css(rows(driver)[0], "a")
    public_id = link.get_attribute("href").rsplit("/", 1)[1]
    wait_for(driver, lambda d: rows(d)[0].get_attribute("data-status") in ("processing", "completed"), timeout=300,
             what="the analysis started")
    if rows(driver)[0].get_attribute("data-status") == "processing":  # its stage, unless it was quicker than a poll
        assert by_css(rows(driver)[0], ".status").text.startswith("processing")
        shoot(driver, "upload-processing")
    wait_for(driver, lambda d: rows(d)[0].get_attribute("data-status") == "completed", timeout=300,
             what="the call completed without a reload")
    assert "completed" in by_css(rows(driver)[0], ".status").text
    shoot(driver, "upload-completed")

    got = site.api("GET", f"/recordings/{public_id}").json()["data"]
    assert got["status"] == "completed" and got["project_id"] == site.project_id and got["name"] == "call.wav"
    by_css(rows(driver)[0], "a").click()
    wait_for(driver, lambda d: d.current_url.endswith(f"/recordings/{public_id}"), what="the recording page")


def test_a_member_finds_no_upload_page(site):
    client, _ = sign_in(site, MEMBER)
    home = client.get("/recordings")
    assert 'href="/upload"' not in home.text
    assert client.get("/upload").status_code == 404


def test_the_list_follows_a_call_in_progress_until_it_is_completed(site, driver, tmp_path):
    public_id = upload(site, short_call(tmp_path / "again.wav"), "Followed call")
    browser_sign_in(driver, site, ADMIN, f"{site.url}/recordings")
    badge = lambda d: by_css(d, f"a[href^='/recordings/{public_id}']").find_element(  # noqa: E731
        "xpath", "ancestor::tr").find_element("css selector", ".status")
    assert badge(driver).get_attribute("data-state") == f"/recordings/{public_id}/state"
    driver.execute_script("window.notReloaded = true")
    wait_for(driver, lambda d: badge(d).text.startswith("processing · ") or badge(d).text == "completed",
             timeout=120, what="the stage as a reader names it")
    said = badge(driver).text
    assert said == "completed" or not any(name in said for name in (" asr", " vad", " diarization"))
    wait_for(driver, lambda d: badge(d).text == "completed", timeout=300, what="the call completed")
    assert driver.execute_script("return window.notReloaded") is True  # the list updated itself in place
