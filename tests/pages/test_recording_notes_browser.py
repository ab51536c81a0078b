"""The recording page's notes in a real headless Chromium against a real `callscope serve`: a member opens the Notes
of a call, writes one over two lines, sees it with their name and its lines, the panel open on the next visit, and
deletes it. With CALLSCOPE_TEST_SHOTS set the page is saved there (`recording-notes*.png`)."""

from __future__ import annotations

import pytest

from tests.audio_samples import make_audio
from tests.live import start_server
from tests.pages.site import NO_BROWSER, NO_BROWSER_REASON, by_css, make_site, shoot, upload, wait_for
from tests.pages.site import browser_sign_in as sign_in

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)]

MEMBER = "ana@example.com"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("notes") / "data"
    server = start_server(data_dir, dispatcher_enabled="false", store_poll_interval="0.05")
    try:
        site = make_site(server, data_dir, [("default", MEMBER, "Ana")])
        site.recording = upload(site, make_audio(data_dir.parent / "call.wav", "wav", seconds=2.0), "Refund call")
        yield site
    finally:
        server.stop()


def test_a_member_writes_a_note_and_deletes_it(site, driver):
    page = f"{site.url}/recordings/{site.recording}"
    sign_in(driver, site, MEMBER, page)
    assert by_css(driver, "#notes").get_attribute("open") is None  # none yet: folded
    by_css(driver, "#notes summary").click()
    by_css(driver, "#note-text").send_keys("Promised a callback.\nMonday 10:00")
    by_css(driver, "#note-submit").click()
    wait_for(driver, lambda d: by_css(d, "#notes-notice").text == "Note added.", what="the note added")
    [note] = driver.find_elements("css selector", "#note-list li")
    assert by_css(driver, "#note-list .note-text").text == "Promised a callback.\nMonday 10:00"
    assert note.text.splitlines()[2].startswith("Ana, ")
    [listed] = site.api("GET", f"/recordings/{site.recording}/notes").json()["data"]
    assert listed["author"] == {"type": "member", "name": "Ana"}
    shoot(driver, "recording-notes")

    driver.get(page)
    assert by_css(driver, "#notes").get_attribute("open") is not None  # notes to read: open
    by_css(driver, "#note-list button[type=submit]").click()
    wait_for(driver, lambda d: by_css(d, "#notes-notice").text == "The note was deleted.", what="the note deleted")
    assert driver.find_elements("css selector", "#note-list") == []
    assert site.api("GET", f"/recordings/{site.recording}/notes").json()["data"] == []
