"""The Settings pages, the upload page and the Trends page: each one's weight (HTML + CSS + JS bytes, as served and
gzipped) and its time to interactive in headless Chromium, measured on a real `callscope serve`.

An admin of a small account (two keys, one project with three goals, a category and a field) opens each page; the
weight is the page's HTML plus the stylesheet and scripts it links (gzip level 6 for every part: the HTML as the
server compresses it, the static files as a proxy would); the times are Navigation Timing's domInteractive and
loadEventEnd from navigation start, the median of the warm loads (a first, cold pass over every page primes the
browser's cache and the server).

    .venv/bin/python -P benchmarks/pages.py [--runs 7]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # tests.live, tests.pages.site

from tests.live import start_server  # noqa: E402
from tests.pages.site import API, NO_BROWSER, NO_BROWSER_REASON, Site, browser, sign_in  # noqa: E402

ADMIN = "ada@example.com"
GOALS = [{"id": i, "name": f"Goal {i}", "description": f"The agent does thing {i}.", "phrases": [f"thing {i}"]}
         for i in (1, 2, 3)]
PROJECT = {"apiVersion": "callscope.io/v1alpha1", "kind": "Project", "metadata": {"name": "support"},
           "spec": {"name": "Support", "language": "en", "longPauseThresholdSeconds": 3, "retentionDays": 365,
                    "goals": GOALS, "categories": [{"name": "Billing", "keywords": ["invoice"]}],
                    "fields": [{"name": "plan", "description": "The plan asked about.", "type": "string"}]}}


def say(line: str = "") -> None:
    print(line, flush=True)


def weight(client: httpx.Client, path: str) -> tuple[int, int]:
    """(bytes, gzipped bytes) of the page's HTML and the CSS and JS it links."""
    html = client.get(path, headers={"Accept-Encoding": "identity"})
    assert html.status_code == 200, (path, html.status_code)
    parts = [html.content] + [client.get(asset).content
                              for asset in re.findall(r'(?:src|href)="(/static/[^"]+)"', html.text)]
    return sum(map(len, parts)), sum(len(gzip.compress(p, compresslevel=6)) for p in parts)


def timings(driver, url: str) -> dict[str, float]:
    driver.get(url)
    return driver.execute_script("""
        const nav = performance.getEntriesByType('navigation')[0];
        return {interactive: nav.domInteractive, loaded: nav.loadEventEnd};""")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="warm loads of each page")
    args = parser.parse_args(argv)
    if NO_BROWSER:
        sys.exit(NO_BROWSER_REASON)
    tmp = Path(tempfile.mkdtemp(prefix="cs-pages-bench-"))
    data_dir = tmp / "data"
    server = start_server(data_dir, dispatcher_enabled="false", store_poll_interval="0.05")
    try:
        server.cli("members", "add", "--email", ADMIN, "--name", "Ada Admin", "--role", "admin")
        key = server.new_key("pages")
        server.new_key("ci")
        (tmp / "project.yaml").write_text(json.dumps(PROJECT))
        server.cli("apply", "-f", str(tmp / "project.yaml"))
        site = Site(server, data_dir, key, 0)
        project_id = next(p["id"] for p in httpx.get(f"{server.url}{API}/projects",
                                                     headers=site.headers).json()["data"])
        client, _ = sign_in(site, ADMIN)
        pages = {"API keys": "/settings/api-keys", "a key": "/settings/api-keys/pages",
                 "members": "/settings/members", "webhooks": "/settings/webhooks",
                 "webhook (a project's)": f"/settings/webhooks/{project_id}",
                 "processing": "/settings/processing", "processing (a project's)": f"/settings/processing/{project_id}",
                 "upload": "/upload", "trends": "/trends"}
        pages = {name: path for name, path in pages.items() if client.get(path).status_code == 200}  # present now
        driver = browser()
        try:
            driver.get(f"{server.url}/static/pages.css")
            driver.add_cookie({"name": "callscope_session", "value": client.cookies["callscope_session"], "path": "/"})
            for path in pages.values():  # one cold pass over every page: the browser's cache and the server warm up
                timings(driver, f"{server.url}{path}")
            say("| page | path | bytes | gzipped | DOM interactive (ms) | load end (ms) |")
            say("|---|---|---:|---:|---:|---:|")
            for name, path in pages.items():
                raw, zipped = weight(client, path)
                runs = [timings(driver, f"{server.url}{path}") for _ in range(args.runs)]
                interactive = statistics.median(r["interactive"] for r in runs)
                loaded = statistics.median(r["loaded"] for r in runs)
                say(f"| {name} | `{path}` | {raw:,} | {zipped:,} | {interactive:.0f} | {loaded:.0f} |")
        finally:
            driver.quit()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
