"""The blob-store interface: streamed, atomic writes of large objects (call audio) and streamed reads.

A write goes through ``async with store.writer(key) as w``: ``await w.write(chunk)``, a complete local copy at
``w.local_path``, then ``await w.commit()`` makes the blob appear under `key` at once; an exception or leaving the
block without ``commit()`` aborts and leaves nothing. ``await store.open(key, range=(start, end))`` raises
:class:`~callscope.errors.NotFound` or :class:`RangeNotSatisfiable` before any byte, then streams; ``aclose()`` it
when not read to the end. An example: docs/development.md.
"""

from __future__ import annotations

import abc
import asyncio
import os
import urllib.parse
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar, runtime_checkable

from callscope.errors import CallscopeError

T = TypeVar("T")

DEFAULT_CHUNK_SIZE = 256 * 1024
MAX_KEY_BYTES = 1024

ByteRange = tuple[int, int | None]
"""(start, end) of a read, both inclusive like an HTTP ``Range: bytes=start-end``; end None: to the end."""


class RangeNotSatisfiable(CallscopeError):
    """The requested range starts at or past the end of the blob (HTTP 416, ``Content-Range: bytes */size``)."""

    status = 416

    def __init__(self, size: int):
        super().__init__("Requested range not satisfiable")
        self.size = size


@runtime_checkable
class BlobWriter(Protocol):
    """One streamed write; see the module docstring. Not safe for concurrent use by several tasks."""

    @property
    def size(self) -> int:
        """Bytes written so far."""
        ...

    @property
    def local_path(self) -> Path:
        """A complete local copy of what has been written so far (valid until commit/abort)."""
        ...

    async def write(self, chunk: bytes) -> None: ...

    async def commit(self) -> None:
        """Make the blob visible under its key, atomically (replacing an existing blob)."""
        ...

    async def abort(self) -> None:
        """Drop the write; leaves nothing behind. Idempotent; a no-op after commit."""
        ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


@runtime_checkable
class BlobStore(Protocol):
    """Keys are relative, ``/``-separated paths (``accounts/a/recordings/<uuid>/audio.mp3``); see validate_key."""

    def writer(self, key: str) -> BlobWriter: ...

    async def open(
        self, key: str, range: ByteRange | None = None, *, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> BlobStream:
        """A stream of the blob's bytes (or of a range). Raises NotFound / RangeNotSatisfiable up front."""
        ...

    async def size(self, key: str) -> int | None:
        """The blob's size in bytes; None when absent."""
        ...

    async def delete(self, key: str) -> None:
        """Delete the blob; no error when absent."""
        ...

    async def delete_prefix(self, prefix: str) -> int:
        """Delete every blob whose key starts with `prefix` (a plain string prefix, like S3's); returns the count."""
        ...

    async def list_keys(self, prefix: str = "") -> list[str]:
        """Keys starting with `prefix`, sorted."""
        ...

    async def presigned_url(
        self,
        key: str,
        expires_in: int,
        filename: str | None = None,
        content_type: str | None = None,
        *,
        disposition: str = "attachment",
    ) -> str | None:
        """A URL anyone may GET the blob from for `expires_in` seconds; None when the store cannot make one
        (the filesystem store: the embedded server signs its own URLs, see callscope.blobs.signing)."""
        ...

    async def sweep_orphans(self, known: Callable[[str], bool], older_than: timedelta) -> int:
        """Delete crash leftovers older than `older_than`: temp/spool files, incomplete multipart uploads, and
        committed blobs for which ``known(key)`` is False. `known` is called from a worker thread.
        `older_than` must exceed the longest upload (an S3 multipart object is dated from the upload's start).
        Returns the number of things deleted."""
        ...


class BlobStream(AsyncIterator[bytes]):
    """Async iterator over ``length`` bytes of a blob, read with blocking calls run in worker threads.

    ``start``/``end`` (inclusive) and ``total_size`` give what an HTTP server needs for Content-Range.
    """

    def __init__(
        self,
        read: Callable[[int], bytes],
        close: Callable[[], None],
        *,
        start: int,
        length: int,
        total_size: int,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
    ):
        if chunk_size <= 0:
            raise ValueError("chunk_size must be positive")
        self._read = read
        self._close = close
        self._remaining = length
        self._chunk_size = chunk_size
        self._closed = False
        self.start = start
        self.length = length
        self.end = start + length - 1
        self.total_size = total_size

    def __aiter__(self) -> BlobStream:
        return self

    async def __anext__(self) -> bytes:
        if self._remaining <= 0 or self._closed:
            await self.aclose()
            raise StopAsyncIteration
        try:
            data = await asyncio.to_thread(self._read, min(self._chunk_size, self._remaining))
        except BaseException:
            await self.aclose()
            raise
        if not data:
            await self.aclose()
            raise OSError(f"blob ended {self._remaining} bytes early")
        if len(data) > self._remaining:  # never more than asked for
            data = data[: self._remaining]
        self._remaining -= len(data)
        return data

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await asyncio.to_thread(self._close)

    async def __aenter__(self) -> BlobStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def resolve_range(range: ByteRange | None, total: int) -> tuple[int, int]:
    """(start, length) of `range` in a blob of `total` bytes; raises RangeNotSatisfiable / ValueError."""
    if range is None:
        return 0, total
    start, end = range
    if start < 0 or (end is not None and end < start):
        raise ValueError(f"invalid byte range {range!r}")
    if start >= total:
        raise RangeNotSatisfiable(total)
    last = total - 1 if end is None else min(end, total - 1)
    return start, last - start + 1


def validate_key(key: str) -> str:
    """Return `key` if it is a safe relative key, else raise ValueError.

    Segments are non-empty, not ``.``/``..``/hidden (``.x``: reserved for temp files), without NUL,
    control characters or backslashes; no leading ``/``; at most 1024 UTF-8 bytes.
    """
    _check_path(key, allow_partial=False)
    return key


def validate_prefix(prefix: str) -> str:
    """Like validate_key, but the prefix may be empty, end with ``/``, or stop mid-segment."""
    if prefix:
        _check_path(prefix, allow_partial=True)
    return prefix


def _check_path(value: str, *, allow_partial: bool) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError("blob key must be a non-empty string")
    if len(value.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise ValueError("blob key too long")
    if value.startswith("/") or os.path.isabs(value):
        raise ValueError(f"blob key must be relative: {value!r}")
    if "\\" in value or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        raise ValueError(f"blob key contains a forbidden character: {value!r}")
    segments = value.split("/")
    if allow_partial and segments[-1] == "":
        segments = segments[:-1]
    for segment in segments:
        if segment == "" or segment.startswith("."):
            raise ValueError(f"invalid blob key: {value!r}")


def content_disposition(filename: str, disposition: str = "attachment") -> str:
    """A Content-Disposition value with an ASCII fallback and the RFC 6266 ``filename*`` UTF-8 form."""
    if disposition not in ("attachment", "inline"):
        raise ValueError("disposition must be 'attachment' or 'inline'")
    fallback = "".join(c if 0x20 <= ord(c) < 0x7F and c not in '"\\' else "_" for c in filename) or "download"
    value = f'{disposition}; filename="{fallback}"'
    if fallback != filename:
        value += f"; filename*=UTF-8''{urllib.parse.quote(filename, safe='')}"
    return value


def write_all(fd: int, data: bytes | memoryview) -> None:
    """os.write until every byte is written (os.write may write fewer)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class BaseBlobWriter(abc.ABC):
    """State machine shared by the writers: open → committed | aborted; subclasses fill in the _do_* steps."""

    def __init__(self, key: str, local_path: Path):
        self.key = key
        self._local_path = local_path
        self._size = 0
        self._state = "open"
        self._io_task: asyncio.Future[Any] | None = None

    @property
    def size(self) -> int:
        return self._size

    @property
    def local_path(self) -> Path:
        return self._local_path

    @property
    def committed(self) -> bool:
        return self._state == "committed"

    async def write(self, chunk: bytes) -> None:
        if self._state != "open":
            raise RuntimeError(f"write to a {self._state} blob writer")
        if not chunk:
            return
        try:
            await self._do_write(chunk)
            self._size += len(chunk)
            await self._after_write()
        except BaseException:
            await self.abort()
            raise

    async def commit(self) -> None:
        if self._state != "open":
            raise RuntimeError(f"commit of a {self._state} blob writer")
        self._state = "committing"
        try:
            await self._do_commit()
        except BaseException:
            self._state = "open"
            await self.abort()
            raise
        self._state = "committed"

    async def abort(self) -> None:
        if self._state in ("committed", "aborted"):
            return
        self._state = "aborted"
        await self._do_abort()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._state != "committed":
            await self.abort()

    async def _io(self, func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """Run a blocking call in a worker thread. A cancelled caller does not stop the thread: _io_done
        waits for it, so that abort never closes a file descriptor a thread still uses."""
        task = asyncio.ensure_future(asyncio.to_thread(func, *args, **kwargs))
        self._io_task = task
        return await asyncio.shield(task)

    async def _io_done(self) -> None:
        task = self._io_task
        if task is not None and not task.done():
            await asyncio.wait([task])

    @abc.abstractmethod
    async def _do_write(self, chunk: bytes) -> None: ...

    async def _after_write(self) -> None:  # noqa: B027 - a hook: most stores need nothing after a write
        """Called after each write with `size` updated (S3: start part uploads)."""

    @abc.abstractmethod
    async def _do_commit(self) -> None: ...

    @abc.abstractmethod
    async def _do_abort(self) -> None: ...
