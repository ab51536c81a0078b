"""Helpers of the blob-store tests."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Iterator
from pathlib import Path

from callscope.blobs.filesystem import FilesystemBlobStore
from callscope.blobs.s3 import S3BlobStore


async def make_s3_store(endpoint: str, spool_dir: Path, **kwargs) -> S3BlobStore:
    store = S3BlobStore(
        f"blobs-{uuid.uuid4().hex[:12]}",
        endpoint_url=endpoint,
        region="us-east-1",
        access_key="testing",
        secret_key="testing",
        spool_dir=spool_dir,
        addressing_style="path",
        **kwargs,
    )
    await store.ensure_bucket()
    return store


async def leftovers(store) -> list[str]:
    """Temp files, spool files and incomplete multipart uploads of `store`."""
    if isinstance(store, FilesystemBlobStore):
        return sorted(str(p) for p in store.tmp_dir.glob("*")) if store.tmp_dir.exists() else []
    spool = sorted(str(p) for p in store.spool_dir.glob("*")) if store.spool_dir.exists() else []
    response = await asyncio.to_thread(store.client.list_multipart_uploads, Bucket=store.bucket)
    return spool + [f"multipart:{u['Key']}:{u['UploadId']}" for u in response.get("Uploads", [])]


def chunks(total: int, size: int = 1024 * 1024, seed: int = 0) -> Iterator[bytes]:
    """Deterministic pseudo-random data, `total` bytes in chunks of `size`."""
    rng = random.Random(seed)
    while total > 0:
        n = min(size, total)
        yield rng.randbytes(n)
        total -= n
