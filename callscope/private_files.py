"""SQLite databases readable by this service's user only: the store and the catalog hold key hashes and member
emails (blobs, Secrets and the URL signing key are written 0600 where they are made)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import structlog

log = structlog.get_logger()

OWNER_ONLY = 0o600
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def private_sqlite_file(path: Path) -> None:
    """Create the SQLite database ``path`` with mode 0600 when it is missing, and narrow it and its side files
    (write-ahead log, shared memory, rollback journal) to 0600 when an earlier version left them readable by others.

    SQLite gives the side files it creates the database file's mode, so they follow it; a file owned by another
    user cannot be narrowed and is only reported."""
    path.parent.mkdir(parents=True, exist_ok=True)
    os.close(os.open(path, os.O_RDONLY | os.O_CREAT, OWNER_ONLY))  # an existing file keeps its content and mode
    for file in (path, *(path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_FILES)):
        try:
            mode = stat.S_IMODE(file.stat().st_mode)
            if mode & ~OWNER_ONLY:
                file.chmod(OWNER_ONLY)
        except FileNotFoundError:
            continue
        except PermissionError:
            log.warning("sqlite_file_not_private", path=str(file), mode=oct(mode))
