"""A WebSocket handshake to a path no route serves, through a real `callscope serve` and a real WebSocket client:
refused (HTTP 403) with one log line, never a 500 and a traceback (the error handlers once assumed an HTTP response
and raised on the handshake's missing one)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live import LiveServer, start_server

websocket = pytest.importorskip("websocket", reason="websocket-client is not installed")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, Path]]:
    root = tmp_path_factory.mktemp("websocket")
    live = start_server(root / "data", dispatcher_enabled="false", log_level="INFO")
    try:
        yield live, root / f"server-{live.url.rsplit(':', 1)[1]}.log"
    finally:
        live.stop()


@pytest.mark.parametrize("path", ["/api/v1/public/live", "/api/v1/public/projects", "/no/such/path",
                                  "/settings/no-such-page"])
def test_a_websocket_to_a_path_no_route_serves_is_refused_in_one_log_line(served, path):
    server, log = served
    before = log.read_text()
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection(server.url.replace("http://", "ws://") + path, timeout=10)
    assert refused.value.status_code == 403
    assert httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200  # the server is none the worse
    written = log.read_text()[len(before):]
    assert "Traceback" not in written and "unhandled_error" not in written, written
    assert written.count("websocket_refused") == 1, written
