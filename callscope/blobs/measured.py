"""The object store's failures, counted by operation (``callscope_object_storage_errors_total``): every store the
service builds is wrapped, so a bucket that refuses writes or a filesystem that fills shows on /metrics before
users report it. What the store raises on purpose (NotFound, RangeNotSatisfiable: CallscopeError) is an answer, not
a failure, and is not counted."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from callscope.blobs.base import BlobStore, BlobWriter
from callscope.errors import CallscopeError
from callscope.metrics import OBJECT_STORAGE_ERRORS, OBJECT_STORAGE_OPERATIONS

OPERATIONS = [o for o in OBJECT_STORAGE_OPERATIONS if o not in ("write", "commit")]  # the store's; those: writers'


def _counted(operation: str, call: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(call)
    async def counted(*args: Any, **kwargs: Any) -> Any:
        try:
            return await call(*args, **kwargs)
        except CallscopeError:
            raise
        except Exception:
            OBJECT_STORAGE_ERRORS.labels(operation).inc()
            raise

    return counted


class MeasuredWriter:
    """A writer whose writes and commit count their failures (``write``, ``commit``)."""

    def __init__(self, inner: BlobWriter) -> None:
        self._inner = inner
        self._write = _counted("write", inner.write)
        self._commit = _counted("commit", inner.commit)

    async def write(self, chunk: bytes) -> None:
        await self._write(chunk)

    async def commit(self) -> None:
        await self._commit()

    @property
    def size(self) -> int:
        return self._inner.size

    @property
    def local_path(self) -> Path:
        return self._inner.local_path

    async def abort(self) -> None:
        await self._inner.abort()

    async def __aenter__(self) -> MeasuredWriter:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._inner.__aexit__(*exc)


class MeasuredBlobStore:
    """``inner`` with the failures of OPERATIONS and of its writers counted; everything else passes through."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner
        for operation in OPERATIONS:
            setattr(self, operation, _counted(operation, getattr(inner, operation)))

    def writer(self, key: str) -> BlobWriter:
        return MeasuredWriter(self.inner.writer(key))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
