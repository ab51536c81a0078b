"""`callscope backup` under load and `callscope restore` into an empty service, on SQLite + filesystem and on
PostgreSQL + S3 (moto), across the two (a SQLite backup into PostgreSQL and back), and the restores refused: a
target that is not empty, an archive damaged, cut short or from a newer schema."""

from __future__ import annotations

import io
import json
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from callscope.backup import rows
from callscope.catalog.db import Catalog
from callscope.catalog.recordings import blob_keys
from tests.analysis import speech
from tests.backup.world import (
    ANALYSIS,
    Client,
    Target,
    Uploads,
    check_served,
    new_bucket,
    s3_settings,
    set_up,
    spoken_call,
    wait_delivered,
)
from tests.live import WebhookReceiver, start_server

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.skipif(speech.ESPEAK is None, reason=speech.SKIP_REASON)]


@dataclass
class Taken:
    archive: Path
    key: str
    completed: list[str]  # analysed and delivered before the backup began
    during: list[str]  # uploads answered while it ran
    output: str


@pytest.fixture(scope="module")
def audio(tmp_path_factory) -> Path:
    return spoken_call(tmp_path_factory.mktemp("audio") / "call.wav")


def take_under_load(root: Path, target: Target, audio: Path, *extra: str) -> Taken:
    """A service that analysed and delivered two calls, backed up while two clients upload more."""
    receiver = WebhookReceiver()
    server = start_server(target.data_dir, **ANALYSIS, **target.settings)
    try:
        client, project = set_up(server, receiver, root)
        first = [client.upload(audio, project)["public_id"] for _ in range(2)]
        client.wait_completed(first)
        wait_delivered(target.cli, 2)
        archive = root / "backup.tar"
        with Uploads(client, audio, project) as load:
            time.sleep(0.5)
            start = time.monotonic()
            output = target.cli("backup", str(archive), *extra).stdout
            end = time.monotonic()
            time.sleep(0.3)
        during = load.during(start, end)
        assert during, "no upload was answered while the backup ran: not a backup under load"
        return Taken(archive, client.headers["Authorization"].removeprefix("Bearer "), first, during, output)
    finally:
        server.stop()
        receiver.stop()


def restore_and_serve(taken: Taken, target: Target) -> dict[str, int]:
    output = target.cli("restore", str(taken.archive)).stdout
    assert "consistent: every completed recording has its audio and results" in output, output
    server = start_server(target.data_dir, dispatcher_enabled="false", webhook_delivery_enabled="false",
                          **target.settings)
    try:
        return check_served(Client(server, taken.key), target.cli, taken.completed)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def sqlite_taken(tmp_path_factory, audio) -> Taken:
    root = tmp_path_factory.mktemp("sqlite-source")
    taken = take_under_load(root, Target(root / "data"), audio)
    assert "sqlite catalog at" in taken.output and "objects" in taken.output
    return taken


@pytest.fixture(scope="module")
def postgres_source(tmp_path_factory, databases, s3_endpoint) -> Target:
    root = tmp_path_factory.mktemp("postgres-source")
    return Target(root / "data", {"database_url": databases.new(), **s3_settings(s3_endpoint, new_bucket(s3_endpoint))})


@pytest.fixture(scope="module")
def postgres_taken(postgres_source, audio) -> Taken:
    taken = take_under_load(postgres_source.data_dir.parent, postgres_source, audio)
    assert "postgresql catalog at" in taken.output
    return taken


def postgres_s3_target(root: Path, databases, s3_endpoint) -> Target:
    return Target(root / "data", {"database_url": databases.new(), **s3_settings(s3_endpoint, new_bucket(s3_endpoint))})


# ----- restores ------------------------------------------------------------------------------------------------------

def test_a_sqlite_backup_taken_under_load_restores_every_completed_call(sqlite_taken, tmp_path):
    target = Target(tmp_path / "data")
    counts = restore_and_serve(sqlite_taken, target)
    assert counts["completed"] >= len(sqlite_taken.completed)
    assert counts["recordings"] >= len(sqlite_taken.completed) + 1  # uploads of the backup's time came too
    # what the catalog names is what the backup copied: the column rule is the orphan sweep's list
    catalog = Catalog(f"sqlite:///{target.data_dir / 'catalog.db'}")
    try:
        with catalog.session() as session:
            named = blob_keys(session)
            tables = rows.tables(session.connection())
            by_rule = {v for t in tables for c in rows.object_columns(t)
                       for (v,) in session.execute(text(f'SELECT "{c}" FROM "{t.name}" WHERE "{c}" IS NOT NULL'))}
    finally:
        catalog.dispose()
    assert by_rule == named and named
    index = [json.loads(line) for line in _member(sqlite_taken.archive, "objects.jsonl").splitlines()]
    assert {e["key"] for e in index} == named


@pytest.mark.postgres
def test_a_postgres_s3_backup_taken_under_load_restores_every_completed_call(postgres_taken, databases,
                                                                             s3_endpoint, tmp_path):
    counts = restore_and_serve(postgres_taken, postgres_s3_target(tmp_path, databases, s3_endpoint))
    assert counts["completed"] >= len(postgres_taken.completed)


@pytest.mark.postgres
def test_a_sqlite_backup_restores_into_postgres_and_s3(sqlite_taken, databases, s3_endpoint, tmp_path):
    target = postgres_s3_target(tmp_path, databases, s3_endpoint)
    counts = restore_and_serve(sqlite_taken, target)
    assert counts["completed"] >= len(sqlite_taken.completed)
    # ids continue after the restored ones: a new recording gets a new id
    engine = create_engine(target.settings["database_url"])
    try:
        with engine.begin() as conn:
            top = conn.execute(text("SELECT MAX(id) FROM recordings")).scalar()
            following = conn.execute(text("SELECT nextval(pg_get_serial_sequence('recordings', 'id'))")).scalar()
    finally:
        engine.dispose()
    assert following == top + 1


@pytest.mark.postgres
def test_a_postgres_backup_restores_into_sqlite(postgres_taken, tmp_path):
    counts = restore_and_serve(postgres_taken, Target(tmp_path / "data"))
    assert counts["completed"] >= len(postgres_taken.completed)


@pytest.mark.postgres
def test_without_objects_the_archive_names_them_and_restore_checks_the_store_has_them(postgres_source,
                                                                                     postgres_taken, databases,
                                                                                     s3_endpoint, tmp_path):
    archive = tmp_path / "catalog-only.tar"
    output = postgres_source.cli("backup", str(archive), "--no-objects").stdout
    assert "not copied (--no-objects)" in output
    with tarfile.open(archive) as tar:
        assert not any(n.startswith("objects/") for n in tar.getnames())
    # the object store replicated on its own: the source's bucket, with a new database
    same_bucket = Target(tmp_path / "data", {**postgres_source.settings, "database_url": databases.new()})
    output = same_bucket.cli("restore", str(archive)).stdout
    assert "found in the object store (the archive holds none)" in output, output
    # an object store without them: restored, and each missing object named
    empty = postgres_s3_target(tmp_path / "elsewhere", databases, s3_endpoint)
    refused = empty.cli("restore", str(archive), check=False)
    assert refused.returncode == 1
    assert "missing from the object store" in refused.stderr and "/audio" in refused.stderr, refused.stderr
    assert "--no-objects" in refused.stderr


# ----- refusals ------------------------------------------------------------------------------------------------------

def _member(archive: Path, name: str) -> bytes:
    with tarfile.open(archive) as tar:
        handle = tar.extractfile(name)
        assert handle is not None
        return handle.read()


def _refused(target: Target, archive: Path) -> str:
    done = target.cli("restore", str(archive), check=False)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()[-1:]
    return line


def test_a_data_directory_that_is_not_empty_is_refused_and_left_alone(sqlite_taken, tmp_path):
    target = Target(tmp_path / "data")
    target.data_dir.mkdir()
    (target.data_dir / "notes.txt").write_text("mine")
    line = _refused(target, sqlite_taken.archive)
    assert f"the data directory {target.data_dir} is not empty (notes.txt)" in line
    assert sorted(p.name for p in target.data_dir.iterdir()) == ["notes.txt"]


@pytest.mark.postgres
def test_a_database_with_tables_is_refused(sqlite_taken, databases, tmp_path):
    url = databases.new()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE recordings (id integer)"))
    engine.dispose()
    line = _refused(Target(tmp_path / "data", {"database_url": url}), sqlite_taken.archive)
    assert "is not empty (1 tables: recordings)" in line and "restore needs an empty database" in line
    assert not (tmp_path / "data").exists()


@pytest.mark.postgres
def test_a_bucket_with_objects_is_refused(sqlite_taken, databases, s3_endpoint, tmp_path):
    import boto3

    target = postgres_s3_target(tmp_path, databases, s3_endpoint)
    boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1").put_object(
        Bucket=target.settings["s3_bucket"], Key="accounts/x/recordings/y/audio.wav", Body=b"x")
    line = _refused(target, sqlite_taken.archive)
    assert f"the object store (bucket {target.settings['s3_bucket']}) is not empty" in line


def test_a_damaged_object_is_named(sqlite_taken, tmp_path):
    damaged = tmp_path / "damaged.tar"
    data = bytearray(sqlite_taken.archive.read_bytes())
    with tarfile.open(sqlite_taken.archive) as tar:
        member = next(m for m in tar.getmembers() if m.name.startswith("objects/"))
    data[member.offset_data + member.size // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    target = Target(tmp_path / "data")
    line = _refused(target, damaged)
    assert f"member '{member.name}' is corrupt" in line and "cannot be restored" in line
    assert not target.data_dir.exists()


def test_a_truncated_archive_is_refused(sqlite_taken, tmp_path):
    cut = tmp_path / "cut.tar"
    data = sqlite_taken.archive.read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    target = Target(tmp_path / "data")
    line = _refused(target, cut)
    assert "truncated" in line and "cannot be restored" in line
    assert not target.data_dir.exists()


def test_an_archive_from_a_newer_schema_is_refused(sqlite_taken, tmp_path):
    newer = tmp_path / "newer.tar"
    with tarfile.open(sqlite_taken.archive) as source, tarfile.open(newer, "w", format=tarfile.PAX_FORMAT) as out:
        for member in source.getmembers():
            data = source.extractfile(member).read()  # type: ignore[union-attr]
            if member.name == "manifest.json":
                manifest = json.loads(data)
                manifest["catalog"]["revision"] = "0099_from_a_later_release"
                manifest["callscope_version"] = "9.0.0"
                data = json.dumps(manifest).encode()
                member.size = len(data)
            out.addfile(member, io.BytesIO(data))
    target = Target(tmp_path / "data")
    line = _refused(target, newer)
    assert "schema revision 0099_from_a_later_release (Callscope 9.0.0), newer than this Callscope" in line
    assert not target.data_dir.exists()


def test_a_file_that_is_no_backup_is_refused(tmp_path):
    junk = tmp_path / "junk.tar"
    junk.write_bytes(b"not an archive at all" * 100)
    assert "not a Callscope backup (not a tar archive)" in _refused(Target(tmp_path / "data"), junk)


def test_an_object_the_catalog_names_but_the_store_lacks_fails_the_backup_by_name(sqlite_taken, tmp_path):
    source = Target(tmp_path / "data")
    source.cli("restore", str(sqlite_taken.archive))
    audio = sorted((source.data_dir / "blobs").rglob("audio*"))[0]
    audio.unlink()
    key = audio.relative_to(source.data_dir / "blobs").as_posix()
    failed = source.cli("backup", str(tmp_path / "again.tar"), check=False)
    assert failed.returncode == 1
    assert f"1 object(s) the catalog names are missing from the object store: {key} (recordings.blob_key)" \
        in failed.stderr, failed.stderr
    assert not (tmp_path / "again.tar").exists() and not (tmp_path / "again.tar.partial").exists()


async def test_an_object_deleted_after_the_snapshot_with_its_recording_makes_the_backup_start_again(
        sqlite_taken, tmp_path, monkeypatch):
    from callscope.backup import take
    from callscope.config import Settings

    source = Target(tmp_path / "data")
    source.cli("restore", str(sqlite_taken.archive))
    settings = Settings(data_dir=source.data_dir)
    deleted: list[str] = []
    copy = take._copy

    async def deleting_first(blobs, key, local, writer):
        if not deleted and "/audio" in key:  # the recording is deleted between the snapshot and this copy
            catalog = Catalog(settings.catalog_url)
            with catalog.connect() as conn:
                conn.execute(text("DELETE FROM recordings WHERE blob_key = :key"), {"key": key})
            catalog.dispose()
            await blobs.delete(key)
            deleted.append(key)
        return await copy(blobs, key, local, writer)

    monkeypatch.setattr(take, "_copy", deleting_first)
    summary = await take.take_backup(settings, tmp_path / "again.tar")
    assert summary.attempts == 2 and deleted
    index = [json.loads(line) for line in _member(tmp_path / "again.tar", "objects.jsonl").splitlines()]
    assert deleted[0] not in {e["key"] for e in index}
    recordings = _member(tmp_path / "again.tar", "catalog/recordings.jsonl").decode()
    assert deleted[0] not in recordings and recordings.count("\n") == summary.rows["recordings"]
