"""The data directory is readable by the service's user only, made new or left by an earlier version (or a hand)
with wider modes: its SQLite files (store.db: key hashes; catalog.db: member emails, usage) with their write-ahead
log, shared memory and journal, the URL signing key, the Secrets' stand-ins, blobs and emails are 0600, every folder
0700, under the usual umask."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from callscope.blobs.signing import SECRET_FILE_NAME
from callscope.config import Settings
from callscope.mail import Email
from callscope.private_files import SQLITE_SIDE_FILES, open_private, private_dir
from callscope.runtime import opened
from callscope.secret_store import FileSecretStore
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


def tree_modes(data_dir: Path) -> dict[str, int]:
    """Mode of the data directory and of every folder and file under it, by path relative to it."""
    found = {".": stat.S_IMODE(data_dir.stat().st_mode)}
    for path in data_dir.rglob("*"):
        found[str(path.relative_to(data_dir))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def wrong_modes(data_dir: Path) -> dict[str, str]:
    """What is not 0700 (a folder) or 0600 (a file) in the data directory."""
    return {name: oct(mode) for name, mode in tree_modes(data_dir).items()
            if mode != (0o700 if (data_dir / name).is_dir() else 0o600)}


async def fill(data_dir: Path) -> None:
    """Start the runtime and write what it keeps in the data directory: a blob, an email, a Secret, the database
    rows and the URL signing key."""
    settings = Settings(data_dir=data_dir, log_level="WARNING")
    async with opened(settings) as rt:
        await keys.create_key(rt.ctx, "default", "k", ["read"])
        writer = rt.ctx.blobs.writer("accounts/default/recordings/r1/audio.wav")
        await writer.write(b"RIFF")
        await writer.commit()
        rt.ctx.mail.submit(Email(to="ana@example.com", subject="Sign in", text="https://x.test/sign-in/link?token=t"))
        assert await rt.mail.drain(10)
        FileSecretStore(settings.secrets_dir).write("acme", "hooks", "signing-secret", "whsec_abc")


async def test_every_folder_the_service_makes_is_0700_and_every_file_0600(tmp_path):
    data = tmp_path / "data"
    await fill(data)
    names = set(tree_modes(data))
    assert {SECRET_FILE_NAME, "blobs", "outbox", "secrets/acme/hooks/signing-secret"} <= names, names
    assert any(name.startswith("blobs/accounts/default/recordings/r1") for name in names)
    assert any(name.startswith("outbox/") and name.endswith(".eml") for name in names)
    assert wrong_modes(data) == {}


async def test_a_data_directory_widened_by_hand_is_narrowed_on_start_with_a_warning(tmp_path):
    data = tmp_path / "data"
    await fill(data)
    for path in (data, *data.rglob("*")):  # what chmod -R go+rX, or an earlier version, leaves
        path.chmod(0o755 if path.is_dir() else 0o644)
    with capture_logs() as logged:
        async with opened(Settings(data_dir=data, log_level="WARNING")):
            pass
        FileSecretStore(data / "secrets")  # the Secrets are checked where they are opened (the embedded operator)
    narrowed = {entry["path"] for entry in logged if entry["event"] == "private_mode_narrowed"}
    assert {str(data), str(data / SECRET_FILE_NAME), str(data / "blobs"), str(data / "outbox"),
            str(data / "secrets" / "acme" / "hooks" / "signing-secret")} <= narrowed, narrowed
    # Narrowed where it matters: nothing under a 0700 folder can be reached by another user.
    assert {name: mode for name, mode in wrong_modes(data).items()
            if "/" not in name or name.startswith("secrets/")} == {}


def test_narrowing_takes_only_the_group_and_everyone_permissions(tmp_path):
    """A volume's setgid folder keeps its setgid bit, an owner's executable stays executable."""
    folder, script = tmp_path / "shared", tmp_path / "hook.sh"
    folder.mkdir()
    folder.chmod(0o2775)
    script.touch(0o700)
    private_dir(folder)
    open_private(script, os.O_RDONLY)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o2700
    assert stat.S_IMODE(script.stat().st_mode) == 0o700
