"""Recording uploads against a real `callscope serve`: a client that vanishes mid-upload leaves no recording
and no audio behind, and the server goes on taking uploads."""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.audio_samples import make_audio, make_large_wav
from tests.live import LiveServer, start_server

API = "/api/v1/public"
BOUNDARY = "----callscope-interrupted-upload"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("live-recordings")
    live = start_server(root / "data", dispatcher_enabled="false")  # uploads only: no Ray, no analysis
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module")
def headers(server) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.new_key('uploader')}"}


@pytest.fixture(scope="module")
def project_id(server, headers) -> int:
    resp = httpx.post(f"{server.url}{API}/projects", json={"name": "Live", "language": "en"}, headers=headers,
                      timeout=10)
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]["id"]


def blob_files(server: LiveServer) -> list[Path]:
    """Blobs and temp files (the store's .tmp folder) under $CALLSCOPE_DATA_DIR/blobs."""
    root = Path(server.env["CALLSCOPE_DATA_DIR"]) / "blobs"
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def total_count(server: LiveServer, headers: dict[str, str]) -> int:
    resp = httpx.get(f"{server.url}{API}/recordings", headers=headers, timeout=10)
    assert resp.status_code == 200, resp.text
    return resp.json()["meta"]["total_count"]


def eventually(check: Callable[[], bool], within: float, every: float = 0.1) -> bool:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(every)
    return True


def interrupted_upload(server: LiveServer, headers: dict[str, str], project_id: int, audio: bytes,
                       announced: int, sent: int) -> None:
    """POST a multipart upload announcing `announced` bytes, send the first `sent` bytes of the file part, then
    reset the connection."""
    head = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"project_id\"\r\n\r\n{project_id}\r\n"
            f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"call.wav\"\r\n"
            "Content-Type: audio/wav\r\n\r\n").encode()
    host, port = server.url.removeprefix("http://").split(":")
    request = (f"POST {API}/recordings HTTP/1.1\r\nHost: {host}:{port}\r\n"
               f"Authorization: {headers['Authorization']}\r\n"
               f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n"
               f"Content-Length: {announced}\r\n\r\n").encode()
    sock = socket.create_connection((host, int(port)), timeout=10)
    try:
        sock.sendall(request + head)
        view = memoryview(audio[:sent])
        for i in range(0, len(view), 64 * 1024):
            sock.sendall(view[i:i + 64 * 1024])
        # The server streams what it got into the blob store's temp file: the upload really is under way.
        assert eventually(lambda: blob_files(server) != [], within=5), "the upload never reached the blob store"
        time.sleep(0.2)
    finally:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with a RST
        sock.close()


def test_interrupted_upload_leaves_no_recording_and_no_blob(server, headers, project_id, tmp_path):
    audio = make_large_wav(tmp_path / "big.wav", 5_000_000).read_bytes()
    interrupted_upload(server, headers, project_id, audio, announced=len(audio) + 400, sent=1_000_000)
    assert eventually(lambda: blob_files(server) == [], within=5), blob_files(server)
    assert total_count(server, headers) == 0
    assert server.process.poll() is None  # the server is still up


def test_upload_after_an_interrupted_one_still_works(server, headers, project_id, tmp_path):
    audio = make_large_wav(tmp_path / "big.wav", 5_000_000).read_bytes()
    interrupted_upload(server, headers, project_id, audio, announced=len(audio) + 400, sent=1_000_000)
    assert eventually(lambda: blob_files(server) == [], within=5), blob_files(server)
    wav = make_audio(tmp_path / "call.wav", "wav", seconds=2.0)
    with open(wav, "rb") as fh:
        resp = httpx.post(f"{server.url}{API}/recordings", files={"file": ("call.wav", fh)},
                          data={"project_id": str(project_id)}, headers=headers, timeout=30)
    assert resp.status_code == 201, resp.text
    assert total_count(server, headers) == 1
    assert len(blob_files(server)) == 1


def test_audio_url_points_at_the_port_served(server, headers, project_id, tmp_path):
    """`callscope serve --port` on a port other than 8080, no CALLSCOPE_PUBLIC_BASE_URL: the link reaches this
    server (it used to name the default port)."""
    assert "CALLSCOPE_PUBLIC_BASE_URL" not in server.env and not server.url.endswith(":8080")
    wav = make_audio(tmp_path / "call.wav", "wav", seconds=1.0)
    with open(wav, "rb") as fh:
        rec = httpx.post(f"{server.url}{API}/recordings", files={"file": ("call.wav", fh)},
                         data={"project_id": str(project_id)}, headers=headers, timeout=30).json()["data"]
    url = httpx.get(f"{server.url}{API}/recordings/{rec['public_id']}/audio_url", headers=headers,
                    timeout=10).json()["data"]["url"]
    assert url.startswith(f"{server.url}/files/")
    audio = httpx.get(url, timeout=10)
    assert audio.status_code == 200 and audio.content == wav.read_bytes()
