"""What the page tests share: a real `callscope serve` with members, a project and a recording; the links the
server emails (read from its outbox folder, the embedded stand-in for SMTP); sign-in over plain HTTP; and the
system's headless Chromium (Debian `chromium` + `chromium-driver`) driven by Selenium."""

from __future__ import annotations

import email
import email.policy
import json
import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.live import LiveServer

API = "/api/v1/public"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
NO_BROWSER = not (Path(CHROMEDRIVER).exists() and Path(CHROMIUM).exists())
NO_BROWSER_REASON = "no headless Chromium here (apt-get install chromium chromium-driver)"
_URL = re.compile(r"https?://\S+")


@dataclass
class Site:
    server: LiveServer
    data_dir: Path
    key: str
    project_id: int
    recording: str = ""  # public_id of the module's recording
    failing: str = ""  # public_id of a recording whose analysis fails
    seen_mail: set[str] = field(default_factory=set)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    def api(self, method: str, path: str, **kwargs) -> httpx.Response:
        return httpx.request(method, f"{self.url}{API}{path}", headers=self.headers, timeout=30, **kwargs)

    def new_mail(self, to: str, timeout: float = 10.0) -> list[str]:
        """The links in emails to `to` that arrived since last asked (the mail queue sends in the background)."""
        deadline = time.monotonic() + timeout
        while True:
            links = []
            for path in sorted((self.data_dir / "outbox").glob("*.eml")):
                if path.name in self.seen_mail:
                    continue
                msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
                if to.lower() in str(msg["To"]).lower():
                    self.seen_mail.add(path.name)
                    links += _URL.findall(msg.get_body(("plain",)).get_content())
            if links or time.monotonic() > deadline:
                return links
            time.sleep(0.1)

    def no_mail(self, to: str) -> bool:
        return not self.new_mail(to, timeout=1.0)

    def sign_in_link(self, to: str) -> str:
        links = [u for u in self.new_mail(to) if "/sign-in/link" in u]
        assert links, f"no sign-in email for {to}"
        return links[-1]


def make_site(server: LiveServer, data_dir: Path, members: list[tuple[str, str, str]],
              project: dict | None = None) -> Site:
    """A key, a project (through the API, or this Project object through `callscope apply`) and members
    (account, email, name) on a started server."""
    for account, address, name in members:
        server.cli("members", "add", "--account", account, "--email", address, "--name", name)
    key = server.new_key("pages")
    headers = {"Authorization": f"Bearer {key}"}
    if project is None:
        resp = httpx.post(f"{server.url}{API}/projects", headers=headers, json={"name": "Support", "language": "en"})
        assert resp.status_code == 201, resp.text
        return Site(server, data_dir, key, resp.json()["data"]["id"])
    path = data_dir.parent / "project.yaml"
    path.write_text(json.dumps(project))
    server.cli("apply", "-f", str(path))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the embedded operator numbers the project
        listed = httpx.get(f"{server.url}{API}/projects", headers=headers).json()["data"]
        if found := [p["id"] for p in listed if p["name"] == project["spec"]["name"]]:
            return Site(server, data_dir, key, found[0])
        time.sleep(0.2)
    raise AssertionError("the project got no id")


def upload(site: Site, path: Path, name: str) -> str:
    resp = site.api("POST", "/recordings", data={"project_id": str(site.project_id), "name": name},
                    files={"file": (path.name, path.read_bytes(), "application/octet-stream")})
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]["public_id"]


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', html).group(1)


def sign_in(site: Site, address: str, next_path: str = "/recordings") -> tuple[httpx.Client, str]:
    """A client signed in as `address` through the real flow (form, emailed link, confirmation), and where the
    sign-in sent it."""
    client = httpx.Client(base_url=site.url, timeout=30)
    form = client.get("/sign-in", params={"next": next_path})
    resp = client.post("/sign-in", data={"email": address, "next": next_path, "csrf": csrf_of(form.text)})
    assert resp.status_code == 200, resp.text
    link = site.sign_in_link(address)
    page = client.get(link.removeprefix(site.url))
    token = link.split("token=", 1)[1]
    resp = client.post("/sign-in/link", data={"token": token, "csrf": csrf_of(page.text)})
    assert resp.status_code == 303, resp.text
    return client, resp.headers["location"]


def browser():
    """Headless Chromium through the system's chromedriver; skips where none is installed."""
    if NO_BROWSER:
        pytest.skip(NO_BROWSER_REASON)
    from selenium import webdriver  # only the browser tests need Selenium (the dev extra)
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--mute-audio",
                "--autoplay-policy=no-user-gesture-required", "--window-size=1280,900"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def wait_for(driver, condition, timeout: float = 20.0, what: str = "condition"):
    """Poll `condition(driver)`; an element of a page being navigated away from (stale) or not there yet counts as
    not yet."""
    from selenium.common.exceptions import (  # dev extra
        NoSuchElementException,
        StaleElementReferenceException,
        WebDriverException,
    )
    from selenium.webdriver.support.ui import WebDriverWait

    def met(d) -> bool:
        try:
            return condition(d)
        except WebDriverException as exc:
            # ChromeDriver 156 reports an element whose page was replaced mid-read as an inspector error, not stale
            if "does not belong to the document" in str(exc):
                return False
            raise

    return WebDriverWait(driver, timeout, poll_frequency=0.1,
                         ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)
                         ).until(met, message=what)


def by_css(driver, selector: str):
    return driver.find_element("css selector", selector)


def browser_sign_in(driver, site: Site, address: str, url: str) -> None:
    """Through the browser: the page sends the visitor to sign in, the emailed link brings them back to it."""
    driver.get(f"{site.url}/sign-in")
    driver.delete_all_cookies()
    driver.get(url)
    assert "/sign-in?next=" in driver.current_url
    by_css(driver, "#email").send_keys(address)
    by_css(driver, "form.stack button[type=submit]").click()
    wait_for(driver, lambda d: "Check your email" in d.find_element("css selector", "h1").text, what="link sent")
    driver.get(site.sign_in_link(address))
    by_css(driver, "#confirm").click()
    wait_for(driver, lambda d: d.current_url == url and d.execute_script("return document.readyState") == "complete",
             what=f"landing on {url}")


SHOTS = os.environ.get("CALLSCOPE_TEST_SHOTS")  # a folder: the browser tests save their pages there
WIDTHS = {"desktop": (1280, 900), "phone": (390, 844)}


def shoot(driver, name: str) -> None:
    """Check the page fits a phone's width (no sideways scrolling of the page) and, with SHOTS, save it whole at
    both widths (`<name>-desktop.png`, `<name>-phone.png`)."""
    for label, (width, height) in WIDTHS.items():
        driver.set_window_size(width, height)
        overflow = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{name} scrolls sideways at {width}px"
        if SHOTS:
            Path(SHOTS).mkdir(parents=True, exist_ok=True)
            whole = driver.execute_script("return document.documentElement.scrollHeight")
            driver.set_window_size(width, min(max(height, whole + 140), 4000))  # the window's frame: not the page's
            driver.save_screenshot(str(Path(SHOTS) / f"{name}-{label}.png"))
    driver.set_window_size(*WIDTHS["desktop"])
