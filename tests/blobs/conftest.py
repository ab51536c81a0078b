"""Fixtures of the blob-store tests.

``s3_endpoint`` (session): moto's S3 server (``moto_server.py``, a ThreadedMotoServer in a child process)
on 127.0.0.1 and a free port, with dummy AWS credentials in the environment.
``store``: parametrized over ``filesystem`` (under tmp_path) and ``s3`` (a fresh bucket of that server),
so the behaviour tests run on both through the BlobStore interface. Helpers: blob_helpers.py.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from blob_helpers import make_s3_store

from callscope.blobs.filesystem import FilesystemBlobStore

HERE = Path(__file__).parent
BACKENDS = ["filesystem", "s3"]


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    if importlib.util.find_spec("moto") is None:
        pytest.skip("moto[server] is not installed")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            mp.setenv(name, value)
        mp.delenv("AWS_PROFILE", raising=False)
        process = subprocess.Popen(
            [sys.executable, str(HERE / "moto_server.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        try:
            port = process.stdout.readline().strip()
            if not port.isdigit():
                pytest.fail(f"moto server did not start (exit code {process.poll()})")
            yield f"http://127.0.0.1:{port}"
        finally:
            process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()


@pytest.fixture(params=BACKENDS)
async def store(request, tmp_path):
    if request.param == "filesystem":
        yield FilesystemBlobStore(tmp_path / "blobs")
        return
    endpoint = request.getfixturevalue("s3_endpoint")
    s3 = await make_s3_store(endpoint, tmp_path / "spool")
    try:
        yield s3
    finally:
        s3.close()
