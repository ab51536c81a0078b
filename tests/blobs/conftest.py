"""Fixtures of the blob-store tests.

``s3_endpoint`` (session, in tests/conftest.py): moto's S3 server on 127.0.0.1.
``store``: parametrized over ``filesystem`` (under tmp_path) and ``s3`` (a fresh bucket of that server),
so the behaviour tests run on both through the BlobStore interface. Helpers: blob_helpers.py.
"""

from __future__ import annotations

import pytest
from blob_helpers import make_s3_store

from callscope.blobs.filesystem import FilesystemBlobStore

BACKENDS = ["filesystem", "s3"]


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
