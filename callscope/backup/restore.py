"""`callscope restore FILE`: a service rebuilt from a backup (archive.py) into an empty target, then checked.

Order: the whole archive is read and checked first (every member's SHA-256, the manifest, a schema revision this
Callscope knows), then the target must be empty (the data directory, the catalog database, the store's resources,
the object store), and nothing is written before both hold. Then the resources (their status kept: ids, key
hashes), the Secrets, the catalog (in one transaction: the schema at the archive's revision, the rows, the ids'
sequences, then the migrations to head, so an archive of an older release is upgraded as `callscope migrate`
would), the objects; last the consistency check: every completed recording has its audio and its results, the
webhook history came back whole, and nothing the catalog names is missing from the object store.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import structlog
import yaml
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from alembic.util.exc import CommandError
from sqlalchemy import create_engine, func, inspect, select
from sqlalchemy.engine import Connection
from sqlalchemy.exc import SQLAlchemyError

from callscope import __version__
from callscope.backup import rows
from callscope.backup.archive import MANIFEST, OBJECTS_DIR, OBJECTS_INDEX, ArchiveError, ArchiveReader, Contents
from callscope.backup.progress import Progress
from callscope.backup.take import URL_SIGNING_MEMBER
from callscope.blobs.base import BlobStore
from callscope.blobs.factory import build_blob_store
from callscope.blobs.signing import SECRET_FILE_NAME
from callscope.catalog.db import MIGRATIONS_DIR, Catalog
from callscope.catalog.recordings import blob_keys
from callscope.catalog.tables import Analysis, Recording, WebhookAttempt, WebhookEvent
from callscope.config import Settings
from callscope.errors import CallscopeError, one_line
from callscope.private_files import open_private
from callscope.resources import KINDS
from callscope.statuses import RecordingStatus
from callscope.store.factory import build_secret_store, build_store_backend

log = structlog.get_logger()

CHUNK = 1024 * 1024
SHOWN = 20
_MIGRATION_LOCK_KEY = 0x63616C6C73636F70  # the one Catalog.migrate takes: a server starting meanwhile waits


class TargetNotEmpty(CallscopeError):
    status = 409


class RestoreInconsistent(CallscopeError):
    """The restore finished but the service it made fails the consistency check."""


@dataclass
class RestoreSummary:
    archive_version: str
    source_dialect: str
    source_revision: str
    dialect: str = ""
    revision: str = ""
    rows: int = 0
    tables: int = 0
    recordings: int = 0
    completed: int = 0
    analyses: int = 0
    webhook_events: int = 0
    webhook_attempts: int = 0
    resources: Counter[str] = field(default_factory=Counter)
    secrets: int = 0
    objects: int = 0
    object_bytes: int = 0
    objects_included: bool = True


async def restore_backup(settings: Settings, path: Path, *, progress: Progress | None = None) -> RestoreSummary:
    progress = progress or Progress()
    reader = ArchiveReader(path)
    progress.start("Checking the archive", path.stat().st_size)
    contents = reader.verify(progress.advance)
    progress.finish()
    manifest = contents.manifest
    catalog_part = manifest["catalog"]
    _check_revision(path, catalog_part["revision"], manifest)
    await _check_empty(settings, contents)

    summary = RestoreSummary(manifest.get("callscope_version", "?"), catalog_part["dialect"],
                             catalog_part["revision"], objects_included=bool(manifest.get("objects_included")))
    store = build_store_backend(settings)
    secrets = build_secret_store(settings)
    catalog = Catalog(settings.catalog_url)
    blobs = build_blob_store(settings)
    try:
        uids: dict[str, str] = {}
        loader = _CatalogLoader(catalog, catalog_part, progress)
        object_total = sum(e["size"] or 0 for e in contents.objects) if summary.objects_included else 0
        try:
            for name, handle in reader.members():
                if name.startswith("resources/"):
                    await _restore_resources(store, handle, uids, summary)
                elif name.startswith("secrets/"):
                    account, secret, key = name.removeprefix("secrets/").split("/", 2)
                    await secrets.put(account, secret, key, handle.read().decode().strip())
                    summary.secrets += 1
                elif name == URL_SIGNING_MEMBER:
                    if settings.store == "sqlite" and not settings.url_signing_secret:
                        _write_private(settings.data_dir / SECRET_FILE_NAME, handle)
                elif name.startswith("catalog/"):
                    loader.load(name.removeprefix("catalog/").removesuffix(".jsonl"), handle, uids)
                elif name.startswith(OBJECTS_DIR):
                    if loader.open:
                        summary.revision = loader.commit()
                        progress.start("Restoring objects", object_total)
                    summary.object_bytes += await _restore_object(blobs, name.removeprefix(OBJECTS_DIR), handle,
                                                                  progress)
                    summary.objects += 1
                elif name not in (OBJECTS_INDEX, MANIFEST):
                    raise ArchiveError(f"{path}: unexpected member {name!r}")
            if loader.open:
                summary.revision = loader.commit()
            progress.finish()
        except (CallscopeError, SQLAlchemyError, OSError) as exc:
            cause = one_line(getattr(exc, "orig", None) or exc)
            raise CallscopeError(f"{cause}; the restore stopped part-way (the catalog's transaction was rolled back, "
                                 "what came before it stays): empty the target before trying again") from exc
        finally:
            loader.rollback()
        summary.dialect, summary.rows, summary.tables = catalog.dialect, loader.rows, len(loader.loaded)
        if not summary.objects_included:
            summary.objects = len(contents.objects)
        await _check_consistency(catalog, blobs, summary)
        log.info("restore_checked", archive=str(path), revision=summary.revision, rows=summary.rows,
                 recordings=summary.recordings, completed=summary.completed, objects=summary.objects)
    finally:
        await store.close()
        await secrets.aclose()
        catalog.dispose()
    return summary


def _check_revision(path: Path, revision: str, manifest: dict[str, Any]) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    scripts = ScriptDirectory.from_config(config)
    for head in revision.split(","):
        try:
            known = scripts.get_revision(head)
        except CommandError:
            known = None
        if known is None:
            raise ArchiveError(
                f"{path}: taken from a catalog at schema revision {revision} (Callscope "
                f"{manifest.get('callscope_version', '?')}), newer than this Callscope ({__version__}, schema "
                f"{scripts.get_current_head()}) knows; restore it with the release that took it, or a later one")


async def _check_empty(settings: Settings, contents: Contents) -> None:
    """Refuse a target that holds anything, before anything is written to it."""
    data_dir = settings.data_dir
    embedded = settings.store == "sqlite"
    if embedded and data_dir.is_dir() and any(data_dir.iterdir()):
        found = ", ".join(sorted(p.name for p in data_dir.iterdir())[:5])
        raise TargetNotEmpty(f"the data directory {data_dir} is not empty ({found}): restore needs an empty one; "
                             "name a new directory with CALLSCOPE_DATA_DIR")
    if settings.database_url is None:
        if (data_dir / "catalog.db").exists():
            raise TargetNotEmpty(f"the catalog {data_dir / 'catalog.db'} exists: restore needs an empty data directory")
    else:
        engine = create_engine(settings.database_url)
        try:
            with engine.connect() as conn:
                tables = inspect(conn).get_table_names()
        finally:
            engine.dispose()
        if tables:
            shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            where = Catalog(settings.database_url).url.render_as_string(hide_password=True)
            raise TargetNotEmpty(f"the catalog database {where} is not empty ({len(tables)} tables: {shown}): "
                                 "restore needs an empty database; create a new one and name it with "
                                 "CALLSCOPE_DATABASE_URL")
    if not embedded:
        store = build_store_backend(settings)
        try:
            for cls in KINDS.values():
                found_objects = await store.list(cls)
                if found_objects:
                    raise TargetNotEmpty(f"the cluster already has {cls.PLURAL} ({found_objects[0].namespace}/"
                                         f"{found_objects[0].name}, ...): restore needs a cluster without Callscope "
                                         "resources")
        finally:
            await store.close()
    if contents.manifest.get("objects_included"):
        if settings.blob_store == "filesystem":
            root = data_dir / "blobs"
            present = root.is_dir() and any(root.iterdir())
        else:
            present = bool(await build_blob_store(settings).list_keys())
        if present:
            raise TargetNotEmpty(f"the object store ({_describe(settings)}) is not empty: restore needs an empty one "
                                 "(or an archive taken with --no-objects, whose objects the store already has)")


def _describe(settings: Settings) -> str:
    if settings.blob_store == "s3":
        return f"bucket {settings.s3_bucket}" + (f", prefix {settings.s3_prefix}" if settings.s3_prefix else "")
    return str(settings.data_dir / "blobs")


async def _restore_resources(store, handle: IO[bytes], uids: dict[str, str], summary: RestoreSummary) -> None:
    for document in yaml.safe_load_all(handle.read()):
        if not document:
            continue
        cls = KINDS.get(document.get("kind", ""))
        if cls is None:
            raise ArchiveError(f"the archive holds a resource of kind {document.get('kind')!r}, which this "
                               "Callscope does not know; restore it with the release that took it, or a later one")
        metadata = document.get("metadata", {})
        old_uid = metadata.get("uid")
        metadata.pop("ownerReferences", None)  # the owners' uids are the source's
        created = await store.create(cls.from_dict({**document, "status": {}}))
        if document.get("status"):
            draft = created.model_copy(update={"status": cls.from_dict(document).status})
            created = await store.update_status(draft)
        if old_uid and created.metadata.uid:
            uids[old_uid] = created.metadata.uid
        summary.resources[cls.KIND] += 1


def _write_private(path: Path, handle: IO[bytes]) -> None:
    with os.fdopen(open_private(path, os.O_WRONLY | os.O_TRUNC), "wb") as fh:
        fh.write(handle.read())


async def _restore_object(blobs: BlobStore, key: str, handle: IO[bytes], progress: Progress) -> int:
    async with blobs.writer(key) as writer:
        while chunk := handle.read(CHUNK):
            await writer.write(chunk)
            progress.advance(len(chunk))
        await writer.commit()
        return writer.size


class _CatalogLoader:
    """The catalog's rows into the empty database in one transaction, opened at the first table's member."""

    def __init__(self, catalog: Catalog, part: dict[str, Any], progress: Progress):
        self.catalog, self.part, self.progress = catalog, part, progress
        self.expected = {t["name"]: t for t in part["tables"]}
        self.loaded: dict[str, int] = {}
        self.rows = 0
        self._conn: Connection | None = None
        self._targets: dict[str, Any] = {}

    @property
    def open(self) -> bool:
        return self._conn is not None

    def _begin(self) -> Connection:
        conn = self.catalog.engine.connect()
        conn.begin()
        if self.catalog.dialect == "postgresql":
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK_KEY})")
        self._upgrade(conn, self.part["revision"])
        self._targets = {t.name: t for t in rows.tables(conn)}
        self.progress.start("Restoring the catalog", sum(t["rows"] for t in self.part["tables"]))
        return conn

    def _upgrade(self, conn: Connection, revision: str) -> None:
        config = self.catalog.alembic_config()
        config.attributes["connection"] = conn
        command.upgrade(config, revision)

    def load(self, table: str, handle: IO[bytes], uids: dict[str, str]) -> None:
        if self._conn is None:
            self._conn = self._begin()
        if table not in self.expected:
            raise ArchiveError(f"the archive's table {table} is not in its manifest")
        if table not in self._targets:
            raise ArchiveError(f"the archive's table {table} is not in the schema at revision "
                               f"{self.part['revision']} of this Callscope")
        count = rows.load_rows(self._conn, self._targets[table], self.expected[table]["columns"], handle, uids,
                               self.progress.advance)
        if count != self.expected[table]["rows"]:
            raise ArchiveError(f"the archive's table {table} has {count} rows, its manifest says "
                               f"{self.expected[table]['rows']}")
        self.loaded[table] = count
        self.rows += count

    def commit(self) -> str:
        """Sequences, the migrations to head, commit; the schema's revision after them."""
        conn = self._conn
        assert conn is not None
        missing = set(self.expected) - set(self.loaded)
        if missing:
            raise ArchiveError(f"the archive lacks the rows of {', '.join(sorted(missing))}")
        rows.restart_sequences(conn, [self._targets[t] for t in self.loaded])
        self._upgrade(conn, "head")
        revision = rows.revision(conn) or "?"
        conn.commit()
        conn.close()
        self._conn = None
        self.progress.finish()
        return revision

    def rollback(self) -> None:
        if self._conn is not None:
            self._conn.rollback()
            self._conn.close()
            self._conn = None


async def _check_consistency(catalog: Catalog, blobs: BlobStore, summary: RestoreSummary) -> None:
    """Every completed recording has its audio and its results (its analysis and the transcript object), and every
    object the catalog names (the orphan sweep's list, callscope/catalog/recordings.py) is in the object store."""
    present = set(await blobs.list_keys())
    problems: list[str] = []
    with catalog.session() as session:
        for public_id, status, blob_key, transcript in session.execute(
                select(Recording.public_id, Recording.status, Recording.blob_key, Analysis.transcript_key)
                .outerjoin(Analysis, Analysis.recording_id == Recording.id)):
            summary.recordings += 1
            if status != RecordingStatus.COMPLETED.value:
                continue
            summary.completed += 1
            if blob_key is None:
                problems.append(f"completed recording {public_id} has no audio")
            if transcript is None:
                problems.append(f"completed recording {public_id} has no results")
        named = blob_keys(session)
        summary.analyses = session.scalar(select(func.count()).select_from(Analysis)) or 0
        summary.webhook_events = session.scalar(select(func.count()).select_from(WebhookEvent)) or 0
        summary.webhook_attempts = session.scalar(select(func.count()).select_from(WebhookAttempt)) or 0
    problems += [f"object {key} is named by the catalog but missing from the object store"
                 for key in sorted(named - present)]
    if problems:
        shown = "; ".join(problems[:SHOWN]) + (f"; and {len(problems) - SHOWN} more" if len(problems) > SHOWN else "")
        hint = ("" if summary.objects_included else " The archive was taken with --no-objects: the object store must "
                "already hold the objects (restored by its own replication).")
        raise RestoreInconsistent(f"restored, but the result is not consistent ({len(problems)} problem(s)): "
                                  f"{shown}.{hint}")
