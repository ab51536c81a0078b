"""Settings → Webhooks in a real headless Chromium against a real `callscope serve` delivering to a receiver on
loopback: an admin sets a project's endpoint and sections on the page, a delivery the receiver refused shows in the
log with its status code, attempt count and latency, *Redeliver* sends it again (a second attempt in the log, the
receiver got the same webhook-id twice) and stays offered once it is delivered; *Send test event* shows the
receiver's answer on the page; the signing secret made and then rotated on the page is shown once, and while the overlap
lasts each delivery verifies with the old secret and with the new one.

With CALLSCOPE_TEST_SHOTS set to a folder, each page is saved there at a desktop's and a phone's width
(`webhooks*-desktop.png`, `webhooks*-phone.png`).
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

from callscope import webhook_signing
from callscope.catalog import outbox
from callscope.catalog.db import Catalog
from tests.live import WebhookReceiver, start_server
from tests.pages.site import NO_BROWSER, NO_BROWSER_REASON, Site, browser_sign_in, by_css, make_site, shoot, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300), pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)]

ADMIN = "ada@example.com"
HOOKS = "/settings/webhooks"


@pytest.fixture(scope="module")
def receiver():
    endpoint = WebhookReceiver()
    yield endpoint
    endpoint.stop()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("webhooks") / "data"
    server = start_server(data_dir, dispatcher_enabled="false", store_poll_interval="0.05", webhook_allow_http="true",
                          webhook_allow_private_addresses="true", webhook_poll_seconds="0.1")
    try:
        server.cli("members", "add", "--email", ADMIN, "--name", "Ada Admin", "--role", "admin")
        yield make_site(server, data_dir, [])
    finally:
        server.stop()


def send_event(site: Site, url: str, recording_id: int) -> None:
    """A recording.analyzed event in the server's outbox, as an analysis' completion writes one."""
    catalog = Catalog(f"sqlite:///{(site.data_dir / 'catalog.db').resolve()}")
    try:
        with catalog.session(write=True) as session:
            outbox.add(session, "default", site.project_id, recording_id, "recording.analyzed", url,
                       {"type": "recording.analyzed", "data": {"recording_id": recording_id}}, datetime.now(UTC))
    finally:
        catalog.dispose()


def set_endpoint(driver, url: str) -> None:
    """On a project's webhook page: the endpoint `url` with the summary section, saved."""
    from selenium.webdriver.support.expected_conditions import staleness_of  # dev extra, as in site.py

    field = by_css(driver, "#w-url")
    field.clear()
    field.send_keys(url)
    if not by_css(driver, "#w-summary").is_selected():
        by_css(driver, "#w-summary").click()
    field.submit()
    wait_for(driver, lambda d: staleness_of(field)(d), what="the page the form answers with")
    assert by_css(driver, "#w-url").get_attribute("value") == url and not driver.find_elements("id", "form-errors")


def attempt_rows(driver) -> list[str]:
    driver.refresh()
    return [r.text for r in driver.find_elements("css selector", "#attempt-log tbody tr")]


def test_an_admin_sets_the_endpoint_and_redelivers_a_refused_delivery(site, driver, receiver):
    browser_sign_in(driver, site, ADMIN, f"{site.url}{HOOKS}")
    assert by_css(driver, "nav.tabs a[aria-current]").text == "Webhooks"
    by_css(driver, f"a[href='{HOOKS}/{site.project_id}']").click()
    wait_for(driver, lambda d: by_css(d, "h1").text.startswith("Webhook of Support"), what="the project's webhook")
    set_endpoint(driver, receiver.url)
    assert by_css(driver, "#w-summary").is_selected() and not by_css(driver, "#w-goals").is_selected()
    shoot(driver, "webhooks-project-empty")

    receiver.status = 400  # the receiver refuses the first delivery: failed at once
    send_event(site, receiver.url, 11)

    def logged(d) -> bool:
        d.refresh()
        return "failed" in by_css(d, "table.deliveries tbody").text
    wait_for(driver, logged, what="the refused delivery in the log")
    row = by_css(driver, "table.deliveries tbody tr")
    assert "400" in row.text and by_css(row, ".delivery-recording").text == "deleted recording"  # no recording 11
    assert by_css(row, ".delivery-attempts").text == "1"
    driver.get(f"{site.url}{HOOKS}")
    assert receiver.url in by_css(driver, "table.webhooks").text and "summary" in by_css(driver, "table.webhooks").text
    shoot(driver, "webhooks")
    driver.back()
    by_css(driver, "table.deliveries tbody tr a").click()
    wait_for(driver, lambda d: by_css(d, "h1").text.startswith("Delivery #"), what="the delivery")
    [first] = attempt_rows(driver)
    assert "400" in first and " ms" in first

    receiver.status = 200
    by_css(driver, "#redeliver").click()
    wait_for(driver, lambda d: len(attempt_rows(d)) == 2 and by_css(d, "#delivery-state").text == "delivered",
             what="the redelivery recorded")
    assert "200" in attempt_rows(driver)[1]
    assert by_css(driver, "#redeliver").is_displayed()  # a delivered one may be asked for again
    assert len(receiver.deliveries) == 2
    assert receiver.deliveries[0][0]["webhook-id"] == receiver.deliveries[1][0]["webhook-id"]  # the same event
    assert "webhook-signature" not in receiver.deliveries[1][0]  # no secret yet
    shoot(driver, "webhooks-delivery")


def test_send_test_event_shows_the_endpoints_answer_on_the_page(site, driver, receiver):
    browser_sign_in(driver, site, ADMIN, f"{site.url}{HOOKS}/{site.project_id}")
    set_endpoint(driver, receiver.url)
    receiver.status, receiver.answer, sent = 418, b"short and stout", len(receiver.deliveries)
    try:
        by_css(driver, "#send-test").click()
        wait_for(driver, lambda d: d.find_elements("id", "test-result"), what="the test event's result")
    finally:
        receiver.status, receiver.answer = 200, b""
    result = by_css(driver, "#test-result").text
    assert "HTTP 418" in result and " ms" in result and "short and stout" in result
    assert by_css(driver, "#w-url").get_attribute("value") == receiver.url  # the page as it is, around the result
    headers, body = receiver.deliveries[sent]
    assert json.loads(body)["type"] == "webhook.test" and headers["webhook-id"].startswith("msg_test_")
    shoot(driver, "webhooks-test-event")


def test_a_secret_made_and_rotated_on_the_page_signs_with_both_during_the_overlap(site, driver, receiver):
    browser_sign_in(driver, site, ADMIN, f"{site.url}{HOOKS}/{site.project_id}")
    set_endpoint(driver, receiver.url)  # its own, whatever the test before left

    def new_secret(hours: str | None) -> str:
        """The first secret (`hours` None: nothing to overlap, nothing said of an old one), or a rotation."""
        rotate = f"a[href='{HOOKS}/{site.project_id}/rotate']"
        if not driver.find_elements("css selector", rotate):  # say what the page showed instead (seen once, loaded)
            pytest.fail(f"no rotate link on {driver.current_url}: {by_css(driver, 'main').text[:2000]}")
        by_css(driver, rotate).click()
        question = "New signing secret for" if hours is not None else "Sign the deliveries of"
        wait_for(driver, lambda d: by_css(d, "h1").text.startswith(question), what="the question")
        if hours is None:
            assert not driver.find_elements("css selector", "#overlap")
            assert "old" not in by_css(driver, ".panel").text
            shoot(driver, "webhooks-first-secret")
        else:
            field = by_css(driver, "#overlap")
            assert field.get_attribute("value") == "24"
            field.clear()
            field.send_keys(hours)
            shoot(driver, "webhooks-rotate")
        by_css(driver, "#confirm-action").click()
        wait_for(driver, lambda d: "shown only this once" in d.page_source, what="the new secret")
        return by_css(driver, "#new-secret").get_attribute("value")

    first = new_secret(None)
    by_css(driver, f"a[href='{HOOKS}/{site.project_id}']").click()
    second = new_secret("24")
    assert first != second and "signs too until" in by_css(driver, "section.once").text
    shoot(driver, "webhooks-secret")
    driver.get(f"{site.url}{HOOKS}/{site.project_id}")
    assert second not in driver.page_source and "signs too until" in by_css(driver, "#overlap").text

    receiver.status, before = 200, len(receiver.deliveries)
    send_event(site, receiver.url, 12)
    deadline = time.monotonic() + 20
    while len(receiver.deliveries) == before and time.monotonic() < deadline:
        time.sleep(0.1)
    headers, body = receiver.deliveries[-1]
    assert json.loads(body)["data"]["recording_id"] == 12
    assert len(headers["webhook-signature"].split()) == 2
    for secret in (second, first):  # a receiver still on the old secret and one already on the new both accept
        webhook_signing.verify(secret, headers, body, time.time())
    driver.refresh()  # the log with both deliveries
    shoot(driver, "webhooks-project")
