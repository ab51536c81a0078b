"""The real `callscope` CLI beside a real `callscope serve` on the same data directory: what the CLI
writes is what the running server enforces and serves, without a restart."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.live import LiveServer, start_server

KEY_LINE = re.compile(r"^cs_live_[A-Za-z0-9]{32}$")
PROJECTS = "/api/v1/public/projects"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("live-cli")
    # keys and usage only: no dispatcher, so no Ray cluster started beside the server
    live = start_server(root / "data", usage_flush_interval="0.5", dispatcher_enabled="false")
    try:
        yield live
    finally:
        live.stop()


def status_of(server: LiveServer, key: str) -> int:
    return httpx.get(f"{server.url}{PROJECTS}", headers={"Authorization": f"Bearer {key}"}, timeout=5).status_code


def eventually(check: Callable[[], bool], within: float, every: float = 0.05) -> bool:
    deadline = time.monotonic() + within
    while True:
        if check():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(every)


def test_key_created_by_the_cli_works_at_once(server):
    key = server.new_key("fresh", "read")
    assert KEY_LINE.match(key), key
    assert status_of(server, key) == 200  # no waiting: the server catches up on an unknown hash


def test_revoked_key_is_refused_within_a_second(server):
    key = server.new_key("to-revoke", "read")
    assert status_of(server, key) == 200
    server.cli("keys", "revoke", "--name", "to-revoke")
    assert eventually(lambda: status_of(server, key) == 401, within=1.0), "revoked key still accepted after 1 s"
    assert status_of(server, key) == 401


def test_regenerated_key_replaces_the_old_one(server):
    old = server.new_key("to-rotate", "read")
    assert status_of(server, old) == 200
    out = server.cli("keys", "regenerate", "--name", "to-rotate")
    new = out.stdout.strip().splitlines()[-1]
    assert KEY_LINE.match(new) and new != old
    assert status_of(server, new) == 200
    assert eventually(lambda: status_of(server, old) == 401, within=1.0), "old key still accepted after 1 s"


def test_project_applied_while_running_is_served_with_its_id(server, tmp_path: Path):
    manifest = tmp_path / "project.yaml"
    manifest.write_text("apiVersion: callscope.io/v1alpha1\nkind: Project\nmetadata:\n  name: live-sales\n"
                        "spec:\n  name: Live Sales\n  language: en\n")
    out = server.cli("apply", "-f", str(manifest))
    assert "project/live-sales created" in out.stdout
    project_id = json.loads(server.cli("get", "project", "live-sales", "-o", "json").stdout)["status"]["id"]
    assert isinstance(project_id, int)
    key = server.new_key("reader", "read")

    def served() -> bool:
        resp = httpx.get(f"{server.url}{PROJECTS}", headers={"Authorization": f"Bearer {key}"}, timeout=5)
        assert resp.status_code == 200, resp.text
        return any(p["id"] == project_id and p["name"] == "Live Sales" for p in resp.json()["data"])

    assert eventually(served, within=2.0), "applied project not served with its integer id"


def test_keys_list_shows_usage_after_requests(server):
    key = server.new_key("counted", "read")
    for _ in range(3):
        assert status_of(server, key) == 200
    time.sleep(1.0)  # two usage flushes at CALLSCOPE_USAGE_FLUSH_INTERVAL=0.5

    def usage() -> dict:
        rows = json.loads(server.cli("keys", "list", "-o", "json").stdout)
        return next(r for r in rows if r["name"] == "counted")

    row = usage()
    if row["total_requests"] < 3:  # a slow machine: one more flush
        time.sleep(1.5)
        row = usage()
    assert row["total_requests"] == 3, row
    assert row["last_used_at"] is not None
    assert sum(row["requests_by_endpoint"].values()) == 3
    assert row["error_rate"] == 0.0
    table = server.cli("keys", "list").stdout.splitlines()
    counted = next(line for line in table if line.split() and line.split()[0] == "counted")
    assert counted.split()[1] == "active" and "3" in counted.split() and "never" not in counted
