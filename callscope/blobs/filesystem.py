"""Blob store on the local filesystem (embedded mode): ``<root>/<key>``, temp files in ``<root>/.tmp/``.

A write goes to a temp file in ``<root>/.tmp`` (same filesystem as the blobs), and commit fsyncs it and
renames it over ``<root>/<key>``: a reader sees the old blob, or the whole new one, never a part.
Every blocking call runs in a worker thread. Folders are 0700 and files 0600 (mkstemp's): the service's user only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path

from callscope.blobs.base import (
    DEFAULT_CHUNK_SIZE,
    BaseBlobWriter,
    BlobStream,
    ByteRange,
    resolve_range,
    validate_key,
    validate_prefix,
    write_all,
)
from callscope.errors import NotFound
from callscope.private_files import private_dir

TMP_DIR = ".tmp"
TMP_SUFFIX = ".part"


class FilesystemBlobWriter(BaseBlobWriter):
    """Writes to a temp file (which is `local_path`), renamed under the key on commit."""

    def __init__(self, key: str, final_path: Path, tmp_path: Path, fd: int):
        super().__init__(key, tmp_path)
        self._final_path = final_path
        self._tmp_path = tmp_path
        self._fd = fd

    async def _do_write(self, chunk: bytes) -> None:
        await self._io(write_all, self._fd, chunk)

    async def _do_commit(self) -> None:
        await self._io(self._commit_sync)
        self._local_path = self._final_path

    def _commit_sync(self) -> None:
        os.fsync(self._fd)
        self._close_fd()
        for attempt in range(5):
            # A concurrent delete may prune the (empty) parent between mkdir and rename: retry.
            private_dir(self._final_path.parent)
            try:
                os.replace(self._tmp_path, self._final_path)
                break
            except FileNotFoundError:
                if attempt == 4 or not self._tmp_path.exists():
                    raise
        _fsync_dir(self._final_path.parent)

    async def _do_abort(self) -> None:
        await self._io_done()
        await asyncio.to_thread(self._abort_sync)

    def _abort_sync(self) -> None:
        self._close_fd()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._tmp_path)

    def _close_fd(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


class FilesystemBlobStore:
    def __init__(self, root: Path):
        self.root = private_dir(Path(root))  # audio: 0700, narrowed on start when an earlier version made it wider
        self.tmp_dir = self.root / TMP_DIR

    def __repr__(self) -> str:
        return f"FilesystemBlobStore({str(self.root)!r})"

    def path(self, key: str) -> Path:
        """The file of `key` (which may not exist); ValueError for an unsafe key."""
        return self.root.joinpath(*validate_key(key).split("/"))

    def writer(self, key: str) -> FilesystemBlobWriter:
        final_path = self.path(key)
        private_dir(self.tmp_dir)
        fd, name = tempfile.mkstemp(dir=self.tmp_dir, suffix=TMP_SUFFIX)  # mode 0600
        return FilesystemBlobWriter(key, final_path, Path(name), fd)

    async def open(
        self, key: str, range: ByteRange | None = None, *, chunk_size: int = DEFAULT_CHUNK_SIZE
    ) -> BlobStream:
        path = self.path(key)

        def open_sync() -> BlobStream:
            try:
                f = open(path, "rb")  # noqa: SIM115 - closed by the stream
            except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
                raise NotFound("Blob not found") from None
            try:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode):
                    raise NotFound("Blob not found")
                start, length = resolve_range(range, st.st_size)
                f.seek(start)
            except BaseException:
                f.close()
                raise
            return BlobStream(
                f.read, f.close, start=start, length=length, total_size=st.st_size, chunk_size=chunk_size
            )

        return await asyncio.to_thread(open_sync)

    async def size(self, key: str) -> int | None:
        path = self.path(key)

        def size_sync() -> int | None:
            try:
                st = os.stat(path)
            except (FileNotFoundError, NotADirectoryError):
                return None
            return st.st_size if stat.S_ISREG(st.st_mode) else None

        return await asyncio.to_thread(size_sync)

    async def delete(self, key: str) -> None:
        path = self.path(key)
        await asyncio.to_thread(self._delete_sync, path)

    def _delete_sync(self, path: Path) -> bool:
        try:
            os.unlink(path)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return False
        self._prune(path.parent)
        return True

    def _prune(self, directory: Path) -> None:
        """Remove empty directories from `directory` up to (not including) the root."""
        root = self.root
        while directory != root and root in directory.parents:
            try:
                directory.rmdir()
            except OSError:
                return
            directory = directory.parent

    async def delete_prefix(self, prefix: str) -> int:
        if not validate_prefix(prefix):
            raise ValueError("delete_prefix needs a non-empty prefix")

        def delete_sync() -> int:
            return sum(self._delete_sync(self.path(key)) for key, _ in self._walk(prefix))

        return await asyncio.to_thread(delete_sync)

    async def list_keys(self, prefix: str = "") -> list[str]:
        validate_prefix(prefix)
        return await asyncio.to_thread(lambda: sorted(key for key, _ in self._walk(prefix)))

    def _walk(self, prefix: str) -> Iterator[tuple[str, float]]:
        """(key, mtime) of the regular files whose key starts with `prefix` (symlinks are not followed)."""
        head, _, _ = prefix.rpartition("/")
        start = self.root.joinpath(*head.split("/")) if head else self.root
        base = f"{head}/" if head else ""

        def scan(directory: Path, rel: str) -> Iterator[tuple[str, float]]:
            try:
                entries = list(os.scandir(directory))
            except (FileNotFoundError, NotADirectoryError):
                return
            for entry in entries:
                if entry.name.startswith("."):  # .tmp and anything that cannot be a key
                    continue
                key = rel + entry.name
                if entry.is_dir(follow_symlinks=False):
                    if key.startswith(prefix) or prefix.startswith(key + "/"):
                        yield from scan(Path(entry.path), key + "/")
                elif entry.is_file(follow_symlinks=False) and key.startswith(prefix):
                    try:
                        yield key, entry.stat(follow_symlinks=False).st_mtime
                    except FileNotFoundError:
                        continue

        yield from scan(start, base)

    async def presigned_url(
        self,
        key: str,
        expires_in: int,
        filename: str | None = None,
        content_type: str | None = None,
        *,
        disposition: str = "attachment",
    ) -> str | None:
        validate_key(key)
        return None  # the embedded server signs its own URLs (callscope.blobs.signing)

    async def sweep_orphans(self, known: Callable[[str], bool], older_than: timedelta) -> int:
        cutoff = time.time() - older_than.total_seconds()

        def sweep_sync() -> int:
            removed = 0
            try:
                entries = list(os.scandir(self.tmp_dir))
            except FileNotFoundError:
                entries = []
            for entry in entries:
                try:
                    if entry.is_file(follow_symlinks=False) and entry.stat().st_mtime < cutoff:
                        os.unlink(entry.path)
                        removed += 1
                except FileNotFoundError:
                    continue
            for key, mtime in list(self._walk("")):
                if mtime < cutoff and not known(key):
                    removed += self._delete_sync(self.path(key))
            return removed

        return await asyncio.to_thread(sweep_sync)


def _fsync_dir(directory: Path) -> None:
    """Persist a rename (best effort: not every platform can open a directory)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
