"""A real `callscope serve` process on a free loopback port, and the real `callscope` CLI beside it."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

CLI = shutil.which("callscope", path=str(Path(sys.executable).parent)) or "callscope"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LiveServer:
    url: str
    env: dict[str, str]
    process: subprocess.Popen

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run([CLI, *args], env=self.env, capture_output=True, text=True, check=check, timeout=60)

    def new_key(self, name: str, permissions: str = "read,write,delete", *extra: str) -> str:
        out = self.cli("keys", "create", "--name", name, "--permissions", permissions, *extra)
        return out.stdout.strip().splitlines()[-1]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_server(data_dir: Path, **settings: str) -> LiveServer:
    port = free_port()
    env = {**os.environ, "CALLSCOPE_DATA_DIR": str(data_dir), "CALLSCOPE_LOG_LEVEL": "WARNING",
           **{f"CALLSCOPE_{k.upper()}": v for k, v in settings.items()}}
    log = open(data_dir.parent / f"server-{port}.log", "w")  # noqa: SIM115 - kept open for the server's life
    process = subprocess.Popen([CLI, "serve", "--host", "127.0.0.1", "--port", str(port)], env=env,
                               stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"callscope serve exited with {process.returncode}; see {log.name}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return LiveServer(url, env, process)
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError("callscope serve did not become healthy in 30 s")


class WebhookReceiver:
    """The customer's endpoint on loopback: keeps every delivery's headers (lower-case names) and raw body,
    answers `status` (200 unless a test changes it) with the body `answer` (none unless a test sets one)."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[dict[str, str], bytes]] = []
        self.status = 200
        self.answer = b""
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.deliveries.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(outer.status)
                self.send_header("Content-Length", str(len(outer.answer)))
                self.end_headers()
                self.wfile.write(outer.answer)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks/callscope"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
