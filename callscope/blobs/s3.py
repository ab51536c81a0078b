"""Blob store on S3 or any S3-compatible server, through boto3 (whose blocking calls run in worker threads).

A write spools to a local temp file (``local_path``, for probing) and uploads multipart parts as they
fill: memory holds no object and no part (parts are streamed from the spool file), whatever the size.
An object smaller than one part goes up with a single PUT at commit. Completing the multipart upload
(or the PUT) is what makes the object visible: a half-written object never is.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import boto3
import structlog
from botocore.config import Config
from botocore.exceptions import ClientError

from callscope.blobs.base import (
    DEFAULT_CHUNK_SIZE,
    BaseBlobWriter,
    BlobStream,
    ByteRange,
    RangeNotSatisfiable,
    content_disposition,
    resolve_range,
    validate_key,
    validate_prefix,
    write_all,
)
from callscope.errors import NotFound
from callscope.private_files import private_dir

log = structlog.get_logger()

MiB = 1024 * 1024
MIN_PART_SIZE = 5 * MiB  # S3: every part but the last is at least 5 MiB
MAX_PART_SIZE = 5 * 1024 * MiB
MAX_PARTS = 10_000
MAX_PRESIGN_SECONDS = 7 * 86400  # SigV4 limit
SPOOL_SUFFIX = ".spool"
_NOT_FOUND_CODES = {"404", "NoSuchKey", "NotFound", "NoSuchBucket"}
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")


def _error_code(error: ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


class _FileWindow:
    """A read-only, seekable file-like view of ``length`` bytes at ``offset`` of a file descriptor.

    Handed to boto3 as a request body, so a part is streamed from the spool file, never held in memory;
    os.pread keeps it independent of the writer's file position (and of other windows).
    """

    def __init__(self, fd: int, offset: int, length: int):
        self._fd = fd
        self._offset = offset
        self._length = length
        self._pos = 0

    def read(self, size: int | None = -1) -> bytes:
        remaining = self._length - self._pos
        n = remaining if size is None or size < 0 else min(size, remaining)
        if n <= 0:
            return b""
        data = os.pread(self._fd, n, self._offset + self._pos)
        if not data:
            raise OSError("spool file shorter than expected")
        self._pos += len(data)
        return data

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._length}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def __len__(self) -> int:
        return max(0, self._length - self._pos)


class S3BlobWriter(BaseBlobWriter):
    def __init__(self, store: S3BlobStore, key: str, spool_path: Path, fd: int):
        super().__init__(key, spool_path)
        self._store = store
        self._s3_key = store.s3_key(key)
        self._fd = fd
        self._upload_id: str | None = None
        self._etags: dict[int, str] = {}
        self._next_part = 1
        self._scheduled = 0  # bytes handed to part uploads so far
        self._pending: set[asyncio.Task[None]] = set()

    @property
    def upload_id(self) -> str | None:
        return self._upload_id

    @property
    def parts_uploaded(self) -> int:
        return len(self._etags)

    def _part_size(self, number: int) -> int:
        # Parts grow every 1000 parts so that 10,000 parts reach 55,000 × part_size (440 GiB at 8 MiB).
        return min(MAX_PART_SIZE, self._store.part_size * (1 + (number - 1) // 1000))

    async def _do_write(self, chunk: bytes) -> None:
        await self._io(write_all, self._fd, chunk)

    async def _after_write(self) -> None:
        self._reap()
        while self._size - self._scheduled >= self._part_size(self._next_part):
            await self._start_part(self._part_size(self._next_part))

    def _reap(self) -> None:
        """Surface the error of a finished part upload, if any."""
        for task in [t for t in self._pending if t.done()]:
            self._pending.discard(task)
            task.result()

    async def _start_part(self, length: int) -> None:
        if self._next_part > MAX_PARTS:
            raise ValueError("blob too large for a multipart upload")
        if self._upload_id is None:
            response = await self._io(
                self._store.client.create_multipart_upload, Bucket=self._store.bucket, Key=self._s3_key
            )
            self._upload_id = response["UploadId"]
        while len(self._pending) >= self._store.max_parts_in_flight:
            await asyncio.wait(self._pending, return_when=asyncio.FIRST_COMPLETED)
            self._reap()
        number, offset = self._next_part, self._scheduled
        self._next_part += 1
        self._scheduled += length
        self._pending.add(asyncio.create_task(self._upload_part(number, offset, length)))

    async def _upload_part(self, number: int, offset: int, length: int) -> None:
        response = await asyncio.to_thread(
            self._store.client.upload_part,
            Bucket=self._store.bucket,
            Key=self._s3_key,
            UploadId=self._upload_id,
            PartNumber=number,
            Body=_FileWindow(self._fd, offset, length),
            ContentLength=length,
        )
        self._etags[number] = response["ETag"]

    async def _drain(self) -> None:
        """Wait for every part upload; raise the first error. (asyncio.wait: a cancelled caller leaves the
        uploads running, and tracked, for abort to wait on.)"""
        while self._pending:
            await asyncio.wait(self._pending)
            self._reap()

    async def _do_commit(self) -> None:
        store = self._store
        if self._upload_id is not None and self._size > self._scheduled:  # the last, maybe short, part
            number, offset = self._next_part, self._scheduled
            self._next_part += 1
            self._scheduled = self._size
            self._pending.add(asyncio.create_task(self._upload_part(number, offset, self._size - offset)))
        await self._drain()
        if self._upload_id is None:
            body: Any = _FileWindow(self._fd, 0, self._size) if self._size else b""
            await self._io(
                store.client.put_object, Bucket=store.bucket, Key=self._s3_key, Body=body, ContentLength=self._size
            )
        else:
            parts = [{"ETag": etag, "PartNumber": n} for n, etag in sorted(self._etags.items())]
            await self._io(
                store.client.complete_multipart_upload,
                Bucket=store.bucket,
                Key=self._s3_key,
                UploadId=self._upload_id,
                MultipartUpload={"Parts": parts},
            )
            self._upload_id = None
        await asyncio.to_thread(self._remove_spool)

    async def _do_abort(self) -> None:
        # Part uploads read the spool file and must end before it closes and before the abort (a part
        # uploaded after AbortMultipartUpload would survive it).
        await self._io_done()
        if self._pending:
            await asyncio.wait(self._pending)
            self._pending.clear()
        await asyncio.to_thread(self._remove_spool)
        if self._upload_id is not None:
            upload_id, self._upload_id = self._upload_id, None
            try:
                await asyncio.to_thread(
                    self._store.client.abort_multipart_upload,
                    Bucket=self._store.bucket,
                    Key=self._s3_key,
                    UploadId=upload_id,
                )
            except Exception as error:  # noqa: BLE001 - left for sweep_orphans
                if not (isinstance(error, ClientError) and _error_code(error) == "NoSuchUpload"):
                    log.warning("blob_multipart_abort_failed", key=self._s3_key, upload_id=upload_id, error=str(error))

    def _remove_spool(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._local_path)


class S3BlobStore:
    def __init__(
        self,
        bucket: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        prefix: str = "",
        part_size: int = 8 * MiB,
        spool_dir: Path,
        addressing_style: Literal["auto", "path", "virtual"] = "auto",
        max_parts_in_flight: int = 2,
    ):
        if not bucket:
            raise ValueError("an S3 bucket name is required")
        if not MIN_PART_SIZE <= part_size <= MAX_PART_SIZE:
            raise ValueError(f"part_size must be between {MIN_PART_SIZE} and {MAX_PART_SIZE} bytes")
        if max_parts_in_flight < 1:
            raise ValueError("max_parts_in_flight must be at least 1")
        prefix = prefix.strip("/")
        validate_prefix(prefix)
        self.bucket = bucket
        self.prefix = f"{prefix}/" if prefix else ""
        self.part_size = part_size
        self.spool_dir = Path(spool_dir)
        self.max_parts_in_flight = max_parts_in_flight
        config = Config(
            signature_version="s3v4",
            s3={"addressing_style": addressing_style},
            retries={"mode": "standard", "max_attempts": 5},
            max_pool_connections=32,
            connect_timeout=10,
            read_timeout=120,
            # Only the checksums S3 requires: many S3-compatible servers reject the newer default ones.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        # boto3 clients are thread-safe (sessions are not): one client, made once, used from worker threads.
        self.client = boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint_url,
            region_name=region,
            aws_access_key_id=access_key,
            aws_secret_access_key=secret_key,
            config=config,
        )
        self._region = region

    def __repr__(self) -> str:
        return f"S3BlobStore(bucket={self.bucket!r}, prefix={self.prefix!r})"

    def s3_key(self, key: str) -> str:
        return self.prefix + validate_key(key)

    def close(self) -> None:
        self.client.close()

    async def ensure_bucket(self) -> None:
        """Create the bucket when it does not exist (needs the permission to)."""

        def ensure_sync() -> None:
            try:
                self.client.head_bucket(Bucket=self.bucket)
                return
            except ClientError as error:
                if _error_code(error) not in _NOT_FOUND_CODES:
                    raise
            kwargs: dict[str, Any] = {"Bucket": self.bucket}
            if self._region and self._region != "us-east-1":
                kwargs["CreateBucketConfiguration"] = {"LocationConstraint": self._region}
            try:
                self.client.create_bucket(**kwargs)
            except ClientError as error:
                if _error_code(error) != "BucketAlreadyOwnedByYou":
                    raise

        await asyncio.to_thread(ensure_sync)

    def writer(self, key: str) -> S3BlobWriter:
        self.s3_key(key)  # validate before creating anything
        private_dir(self.spool_dir, narrow_existing=False)  # CALLSCOPE_BLOB_SPOOL_DIR may be a shared folder
        fd, name = tempfile.mkstemp(dir=self.spool_dir, prefix="blob-", suffix=SPOOL_SUFFIX)  # O_RDWR, 0600
        return S3BlobWriter(self, key, Path(name), fd)

    async def open(
        self, key: str, range: ByteRange | None = None, *, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> BlobStream:
        s3_key = self.s3_key(key)
        if range is not None:
            resolve_range(range, 2**63)  # the shape checks only

        def open_sync() -> BlobStream:
            kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": s3_key}
            if range is not None:
                kwargs["Range"] = f"bytes={range[0]}-{'' if range[1] is None else range[1]}"
            try:
                response = self.client.get_object(**kwargs)
            except ClientError as error:
                code = _error_code(error)
                if code in _NOT_FOUND_CODES:
                    raise NotFound("Blob not found") from None
                if code == "InvalidRange":
                    size = self._size_sync(s3_key)
                    if size is None:
                        raise NotFound("Blob not found") from None
                    raise RangeNotSatisfiable(size) from None
                raise
            body = response["Body"]
            match = _CONTENT_RANGE.fullmatch(response.get("ContentRange") or "")
            if match:
                start, end, total = (int(g) for g in match.groups())
                length = end - start + 1
            else:  # a whole object: no range asked, or a server that ignored it
                total = int(response["ContentLength"])
                try:
                    start, length = resolve_range(range, total)
                    _skip(body, start)
                except BaseException:
                    body.close()
                    raise
            return BlobStream(
                body.read, body.close, start=start, length=length, total_size=total, chunk_size=chunk_size
            )

        return await asyncio.to_thread(open_sync)

    def _size_sync(self, s3_key: str) -> int | None:
        try:
            response = self.client.head_object(Bucket=self.bucket, Key=s3_key)
        except ClientError as error:
            if _error_code(error) in _NOT_FOUND_CODES:
                return None
            raise
        return int(response["ContentLength"])

    async def size(self, key: str) -> int | None:
        return await asyncio.to_thread(self._size_sync, self.s3_key(key))

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self.client.delete_object, Bucket=self.bucket, Key=self.s3_key(key))

    def _list_sync(self, prefix: str) -> list[dict[str, Any]]:
        paginator = self.client.get_paginator("list_objects_v2")
        objects: list[dict[str, Any]] = []
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix + prefix):
            objects.extend(page.get("Contents", []))
        return objects

    def _delete_many_sync(self, s3_keys: list[str]) -> int:
        for i in range(0, len(s3_keys), 1000):
            batch = s3_keys[i : i + 1000]
            response = self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in batch], "Quiet": True}
            )
            errors = response.get("Errors") or []
            if errors:
                raise OSError(f"S3 could not delete {len(errors)} objects, first: {errors[0]}")
        return len(s3_keys)

    async def delete_prefix(self, prefix: str) -> int:
        if not validate_prefix(prefix):
            raise ValueError("delete_prefix needs a non-empty prefix")

        def delete_sync() -> int:
            return self._delete_many_sync([obj["Key"] for obj in self._list_sync(prefix)])

        return await asyncio.to_thread(delete_sync)

    async def list_keys(self, prefix: str = "") -> list[str]:
        validate_prefix(prefix)
        objects = await asyncio.to_thread(self._list_sync, prefix)
        return sorted(obj["Key"][len(self.prefix) :] for obj in objects)

    async def presigned_url(
        self,
        key: str,
        expires_in: int,
        filename: str | None = None,
        content_type: str | None = None,
        *,
        disposition: str = "attachment",
    ) -> str | None:
        if not 1 <= expires_in <= MAX_PRESIGN_SECONDS:
            raise ValueError(f"expires_in must be between 1 and {MAX_PRESIGN_SECONDS} seconds")
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": self.s3_key(key)}
        if filename:
            params["ResponseContentDisposition"] = content_disposition(filename, disposition)
        if content_type:
            params["ResponseContentType"] = content_type
        # No request is made, but resolving credentials may be (instance metadata): keep it off the loop.
        return await asyncio.to_thread(
            self.client.generate_presigned_url, "get_object", Params=params, ExpiresIn=expires_in, HttpMethod="GET"
        )

    async def sweep_orphans(self, known: Callable[[str], bool], older_than: timedelta) -> int:
        cutoff = datetime.now(UTC) - older_than

        def sweep_sync() -> int:
            removed = 0
            paginator = self.client.get_paginator("list_multipart_uploads")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix):
                for upload in page.get("Uploads", []):
                    if upload["Initiated"] < cutoff:
                        try:
                            self.client.abort_multipart_upload(
                                Bucket=self.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                            )
                            removed += 1
                        except ClientError as error:
                            if _error_code(error) != "NoSuchUpload":
                                raise
            orphans = [
                obj["Key"]
                for obj in self._list_sync("")
                if obj["LastModified"] < cutoff and not known(obj["Key"][len(self.prefix) :])
            ]
            removed += self._delete_many_sync(orphans)
            cutoff_ts = cutoff.timestamp()
            try:
                entries = list(os.scandir(self.spool_dir))
            except FileNotFoundError:
                entries = []
            for entry in entries:
                try:
                    if (
                        entry.name.endswith(SPOOL_SUFFIX)
                        and entry.is_file(follow_symlinks=False)
                        and entry.stat().st_mtime < cutoff_ts
                    ):
                        os.unlink(entry.path)
                        removed += 1
                except FileNotFoundError:
                    continue
            return removed

        return await asyncio.to_thread(sweep_sync)


def _skip(body: Any, n: int) -> None:
    while n > 0:
        data = body.read(min(n, DEFAULT_CHUNK_SIZE))
        if not data:
            raise OSError("object ended before the requested range")
        n -= len(data)

