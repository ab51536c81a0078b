"""The interactive API reference at /docs against a real `callscope serve`: public, Swagger UI's own files served by
the service (no CDN), the service's OpenAPI document drawn in a real headless Chromium without a Content-Security-
Policy violation, and an operation tried with an API key."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.live import start_server
from tests.pages.site import NO_BROWSER, NO_BROWSER_REASON, by_css, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

# Every violation of the page's Content-Security-Policy, recorded before any of the page's scripts runs.
WATCH_CSP = ("window.violations = []; document.addEventListener('securitypolicyviolation', "
             "(e) => window.violations.push(e.violatedDirective + ' ' + e.blockedURI));")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data_dir = tmp_path_factory.mktemp("reference") / "data"
    running = start_server(data_dir, llm_enabled="false")
    try:
        yield running
    finally:
        running.stop()


def test_the_reference_is_public_and_serves_swagger_ui_from_the_service(server) -> None:
    page = httpx.get(f"{server.url}/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "style-src 'self' 'unsafe-inline'" in policy
    files = re.findall(r'(?:src|href)="(/docs/swagger-ui/[^"]+)"', page.text)
    assert len(files) == 2
    for path in files:
        served = httpx.get(server.url + path)
        assert served.status_code == 200 and len(served.content) > 100_000
        assert "immutable" in served.headers["cache-control"]
    assert httpx.get(f"{server.url}/docs/swagger-ui/index.html").status_code == 404  # those two files only
    assert not re.search(r'(?:src|href)="https?://', page.text)  # nothing from another origin


@pytest.mark.skipif(NO_BROWSER, reason=NO_BROWSER_REASON)
def test_a_reader_finds_an_operation_and_tries_it_with_a_key(server, driver) -> None:
    key = server.new_key("reader")
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH_CSP})
    driver.get(f"{server.url}/docs#/search/searchRecordings")
    operation = wait_for(driver, lambda d: by_css(d, "#operations-search-searchRecordings"), what="the operation")
    assert "/api/v1/public/search" in operation.text
    by_css(driver, "button.authorize").click()
    by_css(driver, ".auth-container input").send_keys(key)
    by_css(driver, ".auth-btn-wrapper button.authorize").click()
    by_css(driver, "button.btn-done").click()
    by_css(operation, ".try-out__btn").click()
    by_css(operation, "input[placeholder=q]").send_keys("refund")
    by_css(operation, "button.execute").click()
    status = wait_for(driver, lambda d: by_css(operation, ".live-responses-table tbody .response-col_status"),
                      what="the answer")
    assert status.text.strip() == "200"
    assert driver.execute_script("return window.violations") == []
