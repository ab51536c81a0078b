"""The data directory readable by this service's user only: it holds key hashes and member emails (the SQLite
files), audio (blobs/), emails with sign-in links (outbox/), the Secrets' stand-ins (secrets/) and the URL signing
key. Every folder the service makes is 0700 and every file 0600, whatever the umask; one that an earlier version or a
hand opened to the group or to everyone is narrowed (those permissions taken away), with a warning, when the service
opens it (on start). A file or folder owned by another user cannot be narrowed and is only reported.

The one place that makes and narrows them: `private_dir`, `open_private`, `private_tree`, `private_sqlite_file`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import structlog

log = structlog.get_logger()

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
OTHERS = 0o077  # the group's and everyone's permissions
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def narrow(path: Path) -> None:
    """Take the group's and everyone's permissions from `path`, saying so (the owner's bits, setgid and sticky stay
    as they are); a missing path is left alone."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        return
    if not mode & OTHERS:
        return
    try:
        path.chmod(mode & ~OTHERS)
    except PermissionError:
        log.warning("private_mode_not_narrowed", path=str(path), mode=oct(mode))
        return
    log.warning("private_mode_narrowed", path=str(path), mode=oct(mode), now=oct(mode & ~OTHERS))


def private_dir(path: Path, *, narrow_existing: bool = True) -> Path:
    """`path` as a folder only its owner can enter: made 0700 with every missing parent (`Path.mkdir(parents=True)`
    would give the parents the umask's mode), and narrowed when it exists open to others. A folder the user named
    for other uses too (a spool directory, the catalog's folder) is made private but never narrowed:
    `narrow_existing=False`."""
    try:
        os.mkdir(path, PRIVATE_DIR_MODE)
    except FileNotFoundError:
        private_dir(path.parent, narrow_existing=False)
        try:
            os.mkdir(path, PRIVATE_DIR_MODE)
        except FileExistsError:  # made at the same time by another thread or process
            pass
    except FileExistsError:
        if not path.is_dir():
            raise NotADirectoryError(f"{path} exists and is not a folder") from None
        if narrow_existing:
            narrow(path)
    return path


def open_private(path: Path, flags: int) -> int:
    """`os.open(path, flags | O_CREAT)` of a file only its owner can read: made 0600 in a private folder, and an
    existing one narrowed (O_TRUNC keeps a file's mode)."""
    private_dir(path.parent)
    fd = os.open(path, flags | os.O_CREAT, PRIVATE_FILE_MODE)
    narrow(path)
    return fd


def private_tree(root: Path) -> None:
    """Narrow `root` and everything under it (a missing root is fine)."""
    for folder, _, files in os.walk(root):
        narrow(Path(folder))
        for name in files:
            narrow(Path(folder, name))


def private_sqlite_file(path: Path) -> None:
    """Create the SQLite database ``path`` with mode 0600 when it is missing, and narrow it and its side files
    (write-ahead log, shared memory, rollback journal) when an earlier version left them readable by others.

    SQLite gives the side files it creates the database file's mode, so they follow it. The database's folder
    may be one the user chose (CALLSCOPE_DATABASE_URL): made private when missing, never narrowed."""
    private_dir(path.parent, narrow_existing=False)
    os.close(os.open(path, os.O_RDONLY | os.O_CREAT, PRIVATE_FILE_MODE))  # an existing file keeps its content
    for file in (path, *(path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_FILES)):
        narrow(file)
