"""Behaviour of the blob stores, the same tests on the filesystem and on S3 (moto's server)."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
import tracemalloc
from datetime import timedelta

import httpx
import pytest
from blob_helpers import chunks, leftovers, make_s3_store

from callscope.blobs import BlobStore, BlobWriter, RangeNotSatisfiable
from callscope.blobs.filesystem import FilesystemBlobStore
from callscope.blobs.s3 import S3BlobStore
from callscope.errors import NotFound

MiB = 1024 * 1024
KEY = "accounts/a/recordings/0190a4b2-7c1e-7000-8000-000000000001/audio.mp3"


async def put(store: BlobStore, key: str, data: bytes) -> None:
    async with store.writer(key) as w:
        await w.write(data)
        await w.commit()


async def read(store: BlobStore, key: str, range=None) -> bytes:
    stream = await store.open(key, range)
    return b"".join([chunk async for chunk in stream])


async def s3_etag(store: S3BlobStore, key: str) -> str:
    head = await asyncio.to_thread(store.client.head_object, Bucket=store.bucket, Key=store.s3_key(key))
    return head["ETag"].strip('"')


async def test_protocols(store):
    assert isinstance(store, BlobStore)
    w = store.writer(KEY)
    assert isinstance(w, BlobWriter)
    await w.abort()


async def test_write_commit_read_back(store):
    parts = [b"hello ", b"", b"blob ", b"world"]
    async with store.writer(KEY) as w:
        for part in parts:
            await w.write(part)
        assert w.size == 16
        assert w.local_path.read_bytes() == b"hello blob world"
        # Nothing is visible before the commit.
        assert await store.size(KEY) is None
        assert await store.list_keys() == []
        with pytest.raises(NotFound):
            await store.open(KEY)
        await w.commit()
    assert await store.size(KEY) == 16
    assert await read(store, KEY) == b"hello blob world"
    assert await store.list_keys() == [KEY]
    assert await leftovers(store) == []
    if isinstance(store, S3BlobStore):
        assert not w.local_path.exists()  # the spool copy goes once uploaded
        assert "-" not in await s3_etag(store, KEY)  # small: a single PUT, no multipart upload


async def test_empty_blob(store):
    async with store.writer(KEY) as w:
        await w.commit()
    assert await store.size(KEY) == 0
    assert await read(store, KEY) == b""
    with pytest.raises(RangeNotSatisfiable):
        await store.open(KEY, (0, None))


async def test_commit_replaces_existing_blob(store):
    await put(store, KEY, b"old contents")
    async with store.writer(KEY) as w:
        await w.write(b"new")
        assert await read(store, KEY) == b"old contents"
        await w.commit()
    assert await read(store, KEY) == b"new"


async def test_writer_states(store):
    w = store.writer(KEY)
    await w.write(b"x")
    await w.commit()
    with pytest.raises(RuntimeError):
        await w.write(b"y")
    with pytest.raises(RuntimeError):
        await w.commit()
    await w.abort()  # a no-op after commit
    assert await read(store, KEY) == b"x"


async def test_abort_leaves_nothing(store):
    w = store.writer(KEY)
    for chunk in chunks(10 * MiB):  # past the first part: S3 has started a multipart upload
        await w.write(chunk)
    if isinstance(store, S3BlobStore):
        assert w.upload_id is not None
        assert any(item.startswith("multipart:") for item in await leftovers(store))
    await w.abort()
    await w.abort()  # idempotent
    assert not w.local_path.exists()
    assert await store.size(KEY) is None
    assert await store.list_keys() == []
    assert await leftovers(store) == []
    with pytest.raises(RuntimeError):
        await w.write(b"more")


async def test_exception_inside_context_aborts(store):
    with pytest.raises(ZeroDivisionError):
        async with store.writer(KEY) as w:
            for chunk in chunks(9 * MiB):
                await w.write(chunk)
            1 / 0  # noqa: B018
    assert await store.size(KEY) is None
    assert not w.local_path.exists()
    assert await leftovers(store) == []


async def test_cancelled_upload_leaves_nothing(store):
    """A client that disconnects mid-upload cancels the request task: the write aborts cleanly."""
    past_first_part = asyncio.Event()

    async def upload() -> None:
        async with store.writer(KEY) as w:
            for chunk in chunks(24 * MiB):
                await w.write(chunk)
                if w.size >= 9 * MiB:
                    past_first_part.set()
            await w.commit()

    task = asyncio.create_task(upload())
    await past_first_part.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await store.size(KEY) is None
    assert await leftovers(store) == []


async def test_leaving_context_without_commit_aborts(store):
    async with store.writer(KEY) as w:
        await w.write(b"never committed")
    assert await store.size(KEY) is None
    assert await leftovers(store) == []


async def test_large_streamed_write_is_multipart_and_byte_identical(store):
    total = 30 * MiB
    digest = hashlib.sha256()
    async with store.writer(KEY) as w:
        for chunk in chunks(total, seed=7):
            digest.update(chunk)
            await w.write(chunk)
        assert w.size == total
        local = hashlib.sha256()
        with open(w.local_path, "rb") as f:
            while block := f.read(MiB):
                local.update(block)
        assert local.hexdigest() == digest.hexdigest()
        await w.commit()
    if isinstance(store, S3BlobStore):
        assert w.parts_uploaded == 4  # 3 × 8 MiB + the last 6 MiB
        assert (await s3_etag(store, KEY)).endswith("-4")  # S3's multipart ETag: <md5>-<parts>
    assert await store.size(KEY) == total
    readback = hashlib.sha256()
    async for chunk in await store.open(KEY):
        readback.update(chunk)
    assert readback.hexdigest() == digest.hexdigest()
    assert await leftovers(store) == []


async def test_open_ranges(store):
    data = bytes(range(256)) * 40  # 10240 bytes
    await put(store, KEY, data)
    stream = await store.open(KEY, (0, 9))
    assert (stream.start, stream.end, stream.length, stream.total_size) == (0, 9, 10, 10240)
    assert b"".join([c async for c in stream]) == data[:10]
    assert await read(store, KEY, (100, None)) == data[100:]
    assert await read(store, KEY, (10235, 99999)) == data[10235:]  # clamped to the end
    assert await read(store, KEY, (5000, 5000)) == data[5000:5001]
    stream = await store.open(KEY, (10, 20000), chunk_size=1000)
    pieces = [c async for c in stream]
    assert b"".join(pieces) == data[10:] and max(map(len, pieces)) <= 1000
    assert (stream.end, stream.total_size) == (10239, 10240)
    with pytest.raises(RangeNotSatisfiable) as info:
        await store.open(KEY, (10240, None))
    assert info.value.size == 10240 and info.value.status == 416
    with pytest.raises(ValueError):
        await store.open(KEY, (20, 10))
    with pytest.raises(NotFound):
        await store.open("accounts/a/missing.mp3", (0, 1))
    # A stream closed early releases its file / connection.
    async with await store.open(KEY) as stream:
        assert len(await anext(stream)) > 0
    with pytest.raises(StopAsyncIteration):
        await anext(stream)


async def test_delete_is_idempotent(store):
    await put(store, KEY, b"data")
    await store.delete(KEY)
    assert await store.size(KEY) is None
    await store.delete(KEY)
    await store.delete("accounts/never/was.mp3")
    with pytest.raises(NotFound):
        await store.open(KEY)


async def test_list_keys_and_delete_prefix(store):
    keys = [
        "accounts/a/recordings/1/audio.mp3",
        "accounts/a/recordings/2/audio.wav",
        "accounts/ab/recordings/3/audio.mp3",
        "accounts/b/recordings/4/audio.mp3",
    ]
    for key in keys:
        await put(store, key, key.encode())
    assert await store.list_keys() == sorted(keys)
    assert await store.list_keys("accounts/a/") == keys[:2]
    assert await store.list_keys("accounts/a") == keys[:3]  # a plain string prefix, as in S3
    assert await store.list_keys("accounts/a/recordings/2/audio") == [keys[1]]
    assert await store.list_keys("accounts/c/") == []
    assert await store.delete_prefix("accounts/a/") == 2
    assert await store.list_keys() == keys[2:]
    assert await read(store, keys[2]) == keys[2].encode()
    assert await store.delete_prefix("accounts/a/") == 0
    with pytest.raises(ValueError):
        await store.delete_prefix("")
    if isinstance(store, FilesystemBlobStore):
        assert not (store.root / "accounts" / "a").exists()  # emptied directories are pruned


async def test_presigned_url(store):
    await put(store, KEY, b"ID3 fake mp3 bytes")
    url = await store.presigned_url(KEY, 2, filename="appel 1 – réunion.mp3", content_type="audio/mpeg")
    if isinstance(store, FilesystemBlobStore):
        assert url is None  # the embedded server signs its own URLs
        return
    assert url is not None and "X-Amz-Signature=" in url
    async with httpx.AsyncClient() as client:
        response = await client.get(url)
        assert response.status_code == 200, response.text
        assert response.content == b"ID3 fake mp3 bytes"
        assert response.headers["content-type"] == "audio/mpeg"
        disposition = response.headers["content-disposition"]
        assert disposition.startswith('attachment; filename="appel 1 _ r_union.mp3"')
        assert "filename*=UTF-8''appel%201%20%E2%80%93%20r%C3%A9union.mp3" in disposition
        await asyncio.sleep(2.2)
        expired = await client.get(url)
        assert expired.status_code == 403
        assert b"expired" in expired.content
    with pytest.raises(ValueError):
        await store.presigned_url(KEY, 0)


BAD_KEYS = [
    "",
    "../escape.mp3",
    "accounts/../../etc/passwd",
    "/etc/passwd",
    "accounts//a.mp3",
    "accounts/./a.mp3",
    "accounts/a/",
    ".tmp/x.part",
    "accounts/.hidden",
    "accounts\\..\\x",
    "accounts/a\x00b",
    "a" * 1100,
]


@pytest.mark.parametrize("key", BAD_KEYS)
async def test_unsafe_keys_are_rejected(store, key):
    with pytest.raises(ValueError):
        store.writer(key)
    with pytest.raises(ValueError):
        await store.open(key)
    with pytest.raises(ValueError):
        await store.size(key)
    with pytest.raises(ValueError):
        await store.delete(key)
    with pytest.raises(ValueError):
        await store.presigned_url(key, 60)


async def test_unsafe_prefixes_are_rejected(store):
    for prefix in ["../", "/abs", "a/../b", "a//"]:
        with pytest.raises(ValueError):
            await store.list_keys(prefix)
        with pytest.raises(ValueError):
            await store.delete_prefix(prefix)


async def test_sweep_orphans(store):
    await put(store, "accounts/a/known.mp3", b"kept")
    await put(store, "accounts/a/orphan.mp3", b"swept once old")
    known = {"accounts/a/known.mp3"}.__contains__
    # A write interrupted by a crash: never committed nor aborted.
    crashed = store.writer("accounts/a/crashed.mp3")
    for chunk in chunks(9 * MiB):
        await crashed.write(chunk)
    if isinstance(store, S3BlobStore):
        while crashed.parts_uploaded < 1:  # the first part is on its way
            await asyncio.sleep(0.02)
    assert len(await leftovers(store)) == (2 if isinstance(store, S3BlobStore) else 1)

    # Nothing is old enough yet.
    assert await store.sweep_orphans(known, timedelta(hours=1)) == 0
    assert await store.list_keys() == ["accounts/a/known.mp3", "accounts/a/orphan.mp3"]

    # Age everything by two hours (S3 dates cannot be changed: sweep with a zero age instead).
    old = time.time() - 7200
    root = store.root if isinstance(store, FilesystemBlobStore) else store.spool_dir
    for path in root.rglob("*"):
        os.utime(path, (old, old))
    older_than = timedelta(hours=1) if isinstance(store, FilesystemBlobStore) else timedelta(0)
    removed = await store.sweep_orphans(known, older_than)
    # filesystem: temp file + orphan blob; S3: spool file + multipart upload + orphan object
    assert removed == (2 if isinstance(store, FilesystemBlobStore) else 3)
    assert await leftovers(store) == []
    assert await store.list_keys() == ["accounts/a/known.mp3"]
    assert await read(store, "accounts/a/known.mp3") == b"kept"
    await crashed.abort()  # what is left of the writer cleans up quietly


async def test_memory_stays_flat_filesystem(tmp_path):
    store = FilesystemBlobStore(tmp_path / "blobs")
    chunk = os.urandom(MiB)
    total = 200 * MiB
    tracemalloc.start()
    try:
        async with store.writer(KEY) as w:
            for _ in range(total // MiB):
                await w.write(chunk)
            await w.commit()
        _, write_peak = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        n = 0
        async for piece in await store.open(KEY):
            n += len(piece)
        _, read_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == total == await store.size(KEY)
    assert write_peak < 1 * MiB, write_peak  # measured: ~40 KB
    assert read_peak < 2 * MiB, read_peak  # one 256 KiB chunk at a time


async def test_memory_stays_flat_s3(s3_endpoint, tmp_path):
    store = await make_s3_store(s3_endpoint, tmp_path / "spool", part_size=8 * MiB)
    chunk = os.urandom(MiB)
    total = 200 * MiB
    try:
        tracemalloc.start()
        try:
            async with store.writer(KEY) as w:
                for _ in range(total // MiB):
                    await w.write(chunk)
                await w.commit()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert w.parts_uploaded == 25
        assert await store.size(KEY) == total
        # Parts stream from the spool file: not even one 8 MiB part is in memory (measured: ~2.5 MB).
        assert peak < 8 * MiB, peak
    finally:
        store.close()
