"""`callscope backup FILE`: one consistent archive (archive.py) of a running service.

Consistency under load: the custom resources are read, then the whole catalog in one read transaction (PostgreSQL:
REPEATABLE READ, one snapshot; SQLite: one read transaction of WAL mode, one snapshot too); then the objects, only
those the catalog read names (an upload committed later is not in the backup, nor needed). Objects are written
before the catalog rows that name them (uploads, analyses), so every object the snapshot names exists unless it
was deleted since the snapshot (a recording deleted, an analysis replaced): then the backup starts again with a new
snapshot, at most ATTEMPTS times. An object the catalog still names but the store lacks is an error naming it.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import structlog
import yaml
from sqlalchemy import text

from callscope import __version__
from callscope.backup import rows
from callscope.backup.archive import FORMAT, FORMAT_VERSION, OBJECTS_DIR, OBJECTS_INDEX, ArchiveWriter
from callscope.backup.progress import Progress
from callscope.blobs.base import BlobStore
from callscope.blobs.factory import build_blob_store
from callscope.blobs.signing import SECRET_FILE_NAME
from callscope.catalog.db import Catalog
from callscope.config import Settings
from callscope.errors import CallscopeError, NotFound
from callscope.resources import KINDS
from callscope.store.factory import build_store_backend

log = structlog.get_logger()

ATTEMPTS = 3
URL_SIGNING_MEMBER = SECRET_FILE_NAME
MISSING_SHOWN = 20


class BackupFailed(CallscopeError):
    pass


class _ChangedUnderUs(Exception):
    """An object the snapshot names was deleted since, and the catalog no longer names it."""


@dataclass
class BackupSummary:
    path: Path
    dialect: str
    revision: str
    rows: dict[str, int] = field(default_factory=dict)
    resources: int = 0
    secrets: int = 0
    objects: int = 0
    object_bytes: int = 0
    objects_included: bool = True
    attempts: int = 1
    size: int = 0


async def take_backup(settings: Settings, path: Path, *, objects: bool = True,
                      progress: Progress | None = None) -> BackupSummary:
    progress = progress or Progress()
    if settings.database_url is None and not (settings.data_dir / "catalog.db").is_file():
        raise BackupFailed(f"no catalog in {settings.data_dir}: nothing to back up (CALLSCOPE_DATA_DIR names "
                           "the data directory, CALLSCOPE_DATABASE_URL a PostgreSQL catalog)")
    catalog = Catalog(settings.catalog_url)
    store = build_store_backend(settings)
    blobs = build_blob_store(settings)
    try:
        for attempt in range(1, ATTEMPTS + 1):
            try:
                summary = await _attempt(settings, catalog, store, blobs, path, objects, progress)
                summary.attempts = attempt
                log.info("backup_written", path=str(path), bytes=summary.size, revision=summary.revision,
                         rows=sum(summary.rows.values()), resources=summary.resources, objects=summary.objects,
                         attempts=attempt)
                return summary
            except _ChangedUnderUs as exc:
                log.info("backup_restarted", attempt=attempt, reason=str(exc))
        raise BackupFailed(f"the catalog kept changing under the backup ({ATTEMPTS} attempts: objects it named were "
                           "deleted before they were copied); try again when fewer recordings are being deleted")
    finally:
        await store.close()
        catalog.dispose()


async def _attempt(settings: Settings, catalog: Catalog, store, blobs: BlobStore, path: Path, objects: bool,
                   progress: Progress) -> BackupSummary:
    writer = ArchiveWriter(path)
    try:
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".callscope-backup-") as folder:
            summary = await _write(settings, catalog, store, blobs, writer, Path(folder), objects, progress)
    except BaseException:
        writer.abort()
        raise
    summary.size = path.stat().st_size
    return summary


async def _write(settings: Settings, catalog: Catalog, store, blobs: BlobStore, writer: ArchiveWriter,
                 folder: Path, objects: bool, progress: Progress) -> BackupSummary:
    resources: dict[str, int] = {}
    for cls in KINDS.values():
        found = await store.list(cls)
        if found:
            writer.add_bytes(f"resources/{cls.KIND}.yaml",
                             yaml.safe_dump_all([o.to_dict() for o in found], sort_keys=False).encode())
        resources[cls.KIND] = len(found)
    secrets = _add_secrets(settings, writer)

    dump = await catalog.run(_dump_catalog, catalog, folder, progress)
    for name in dump.files:
        writer.add_file(f"catalog/{name}.jsonl", folder / f"{name}.jsonl")
        (folder / f"{name}.jsonl").unlink()
    summary = BackupSummary(writer.path, catalog.dialect, dump.revision, rows=dump.rows,
                            resources=sum(resources.values()), secrets=secrets, objects_included=objects)

    index: list[dict[str, object]] = []
    missing: list[str] = []
    progress.start("Copying objects", len(dump.references))
    for key in sorted(dump.references):
        reference = dump.references[key]
        entry: dict[str, object] = {"key": key, "ref": reference, "size": None, "sha256": None}
        if objects:
            copied = await _copy(blobs, key, folder / "object", writer)
            if copied is None:
                if await catalog.run(_still_named, catalog, key, reference):
                    missing.append(f"{key} ({reference})")
                else:
                    raise _ChangedUnderUs(f"{key} was deleted after the snapshot")
            else:
                entry["size"], entry["sha256"] = copied
                summary.objects += 1
                summary.object_bytes += copied[0]
        index.append(entry)
        progress.advance(1)
    progress.finish()
    if missing:
        shown = "; ".join(missing[:MISSING_SHOWN]) + (f"; and {len(missing) - MISSING_SHOWN} more"
                                                      if len(missing) > MISSING_SHOWN else "")
        raise BackupFailed(f"{len(missing)} object(s) the catalog names are missing from the object store: {shown}. "
                           "The backup was not written")
    if not objects:
        summary.objects = len(index)
    writer.add_bytes(OBJECTS_INDEX, "".join(json.dumps(e, sort_keys=True) + "\n" for e in index).encode())
    writer.finish({
        "format": FORMAT, "format_version": FORMAT_VERSION, "callscope_version": __version__,
        "created_at": datetime.now(UTC).isoformat(),
        "catalog": {"dialect": catalog.dialect, "revision": dump.revision, "tables": dump.tables},
        "resources": resources, "secrets": secrets,
        "objects_included": objects, "objects": len(index), "object_bytes": summary.object_bytes,
    })
    return summary


def _add_secrets(settings: Settings, writer: ArchiveWriter) -> int:
    """Embedded: the data directory's Secrets (webhook signing keys, API keys' material) and its URL-signing key. A
    cluster's Secrets are the cluster's to back up (docs/operations.md)."""
    if settings.store != "sqlite":
        return 0
    count = 0
    root = settings.secrets_dir
    for file in sorted(root.rglob("*")) if root.is_dir() else []:
        if file.is_file():
            writer.add_file(f"secrets/{file.relative_to(root).as_posix()}", file)
            count += 1
    signing = settings.data_dir / SECRET_FILE_NAME
    if signing.is_file():
        writer.add_file(URL_SIGNING_MEMBER, signing)
    return count


@dataclass
class _Dump:
    revision: str
    tables: list[dict[str, object]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    references: dict[str, str] = field(default_factory=dict)  # object key: the first table.column naming it


def _dump_catalog(catalog: Catalog, folder: Path, progress: Progress) -> _Dump:
    with catalog.engine.connect() as conn:
        if catalog.dialect == "postgresql":
            conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            if catalog.dialect == "postgresql":
                conn.exec_driver_sql("SET TRANSACTION READ ONLY")
            revision = rows.revision(conn)  # SQLite: the first read takes the transaction's snapshot
            if revision is None:
                raise BackupFailed(f"no catalog schema in {catalog!r}: nothing to back up")
            dump = _Dump(revision)
            found = rows.tables(conn)
            progress.start("Reading the catalog", len(found))
            for table in found:
                columns = rows.dumped_columns(table)
                names = [c.name for c in columns]
                keyed = [(names.index(c), f"{table.name}.{c}") for c in rows.object_columns(table) if c in names]
                count = 0
                with (folder / f"{table.name}.jsonl").open("w", encoding="utf-8") as fh:
                    for row in rows.dump_rows(conn, table):
                        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                        count += 1
                        for position, reference in keyed:
                            if isinstance(row[position], str) and row[position]:
                                dump.references.setdefault(row[position], reference)
                dump.tables.append({"name": table.name, "columns": names, "rows": count})
                dump.files.append(table.name)
                dump.rows[table.name] = count
                progress.advance(1)
            progress.finish()
    return dump


def _still_named(catalog: Catalog, key: str, reference: str) -> bool:
    """Whether the catalog, now, still names the object `key` in the column `reference` (table.column)."""
    table, column = reference.split(".", 1)
    with catalog.connect() as conn:
        return conn.execute(text(f'SELECT 1 FROM "{table}" WHERE "{column}" = :key LIMIT 1'), {"key": key}).first() \
            is not None


async def _copy(blobs: BlobStore, key: str, local: Path, writer: ArchiveWriter) -> tuple[int, str] | None:
    """The object into the archive by way of a local copy (a tar member's size comes before its bytes): its size
    and SHA-256, or None when the store has no such object."""
    try:
        stream = await blobs.open(key)
    except NotFound:
        return None
    digest = hashlib.sha256()
    size = 0
    async with stream:
        with local.open("wb") as fh:
            async for chunk in stream:
                fh.write(chunk)
                digest.update(chunk)
                size += len(chunk)
    writer.add_file(OBJECTS_DIR + key, local, digest.hexdigest())
    local.unlink()
    return size, digest.hexdigest()
