"""The SQLite files of the data directory (store.db: key hashes; catalog.db: member emails, usage) and their
write-ahead log, shared memory and journal are readable by the service's user only, made new or left by an
earlier version with wider modes."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from callscope.config import Settings
from callscope.private_files import SQLITE_SIDE_FILES
from callscope.runtime import opened
from callscope.services import keys

DATABASES = ("store.db", "catalog.db")


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """022, the usual umask, under which SQLite makes its files 0644."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def modes(data_dir: Path) -> dict[str, int]:
    """Mode of every SQLite file of the data directory, side files included, by name."""
    names = [name + suffix for name in DATABASES for suffix in ("", *SQLITE_SIDE_FILES)]
    return {name: stat.S_IMODE((data_dir / name).stat().st_mode) for name in names if (data_dir / name).exists()}


async def use(data_dir: Path) -> dict[str, int]:
    """Start the runtime, write to both databases, and read the modes while their connections are open (the
    write-ahead log and shared memory files exist then)."""
    async with opened(Settings(data_dir=data_dir, log_level="WARNING")) as rt:
        await keys.create_key(rt.ctx, "default", "k", ["read"])
        with rt.catalog.session() as session:
            session.connection().exec_driver_sql("SELECT 1")
        return modes(data_dir)


async def test_new_databases_and_their_side_files_are_owner_only(tmp_path):
    found = await use(tmp_path / "data")
    assert {"store.db", "store.db-wal", "store.db-shm", "catalog.db", "catalog.db-wal", "catalog.db-shm"} <= set(found)
    assert found == dict.fromkeys(found, 0o600)


async def test_wider_files_of_an_earlier_version_are_narrowed_on_start(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in DATABASES:  # as SQLite makes them under umask 022, the side files left behind as a crash would
        conn = sqlite3.connect(data / name)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.close()
        for suffix in SQLITE_SIDE_FILES:
            (data / (name + suffix)).touch(0o644)
    assert set(modes(data).values()) == {0o644}
    found = await use(data)
    assert found and found == dict.fromkeys(found, 0o600)


async def test_a_new_data_directory_is_owner_only(tmp_path):
    await use(tmp_path / "data")
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
