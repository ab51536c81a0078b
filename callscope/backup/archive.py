"""The backup archive: a POSIX (pax) tar whose members are, in this order,

* ``resources/<Kind>.yaml``: the custom resources of each kind, every account, as ``callscope get -o yaml`` shows them;
* ``secrets/<account>/<name>/<key>``: the embedded Secrets (the data directory's ``secrets/``), and ``url-signing.key``;
* ``catalog/<table>.jsonl``: each catalog table's rows, one JSON array per line (rows.py: portable values);
* ``objects/<key>``: the audio and results objects the catalog names (none with ``--no-objects``);
* ``objects.jsonl``: every object the catalog names, one JSON object per line (key, size, sha256, the column naming
  it), copied or not;
* ``manifest.json``: the format, the Callscope version and schema revision that wrote it, each table's columns and
  row count, the SHA-256 of every member but the objects.

The manifest holds the SHA-256 of every member but the objects, whose own are in ``objects.jsonl``: a damaged
member is named; a truncated archive ends before its manifest. Any tar reads it (``tar tf FILE``). The archive is
written as ``FILE.partial`` and renamed when complete: a backup that fails leaves nothing that looks like one.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from callscope.errors import CallscopeError

FORMAT = "callscope-backup"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
OBJECTS_INDEX = "objects.jsonl"
OBJECTS_DIR = "objects/"
CHUNK = 1024 * 1024


class ArchiveError(CallscopeError):
    """The archive cannot be restored: not one, damaged, truncated, or written by a newer Callscope."""

    status = 422


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class ArchiveWriter:
    """Members added one by one (from a local file or bytes), the manifest last; `finish` renames the file."""

    def __init__(self, path: Path):
        self.path = path
        self.partial = path.with_name(path.name + ".partial")
        self._tar = tarfile.open(self.partial, "w", format=tarfile.PAX_FORMAT)  # noqa: SIM115 - closed in finish
        self.hashes: dict[str, str] = {}  # every member but the objects: the manifest lists them
        self.bytes = 0

    def _info(self, name: str, size: int, sha256: str) -> tarfile.TarInfo:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = size, 0o600, int(time.time())
        return info

    def add_file(self, name: str, local: Path, sha256: str | None = None) -> str:
        sha256 = sha256 or sha256_of(local)
        with local.open("rb") as fh:
            self._tar.addfile(self._info(name, local.stat().st_size, sha256), fh)
        self._count(name, sha256, local.stat().st_size)
        return sha256

    def add_bytes(self, name: str, data: bytes) -> str:
        sha256 = hashlib.sha256(data).hexdigest()
        self._tar.addfile(self._info(name, len(data), sha256), io.BytesIO(data))
        self._count(name, sha256, len(data))
        return sha256

    def _count(self, name: str, sha256: str, size: int) -> None:
        self.bytes += size
        if not name.startswith(OBJECTS_DIR):
            self.hashes[name] = sha256

    def finish(self, manifest: dict[str, Any]) -> None:
        manifest = {**manifest, "members": dict(self.hashes)}
        self.add_bytes(MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
        self._tar.close()
        os.replace(self.partial, self.path)

    def abort(self) -> None:
        try:
            self._tar.close()
        except (OSError, tarfile.TarError):
            pass
        self.partial.unlink(missing_ok=True)


@dataclass
class Contents:
    """What the verifying pass read: the manifest, the objects' index, each member's name in order."""

    manifest: dict[str, Any]
    objects: list[dict[str, Any]]
    names: list[str] = field(default_factory=list)


class ArchiveReader:
    """Two passes over the file: `verify` reads every member and checks it (nothing is restored from an archive that
    fails), `members` then yields them in order for the restore."""

    def __init__(self, path: Path):
        self.path = path
        if not path.is_file():
            raise ArchiveError(f"{path}: no such file")

    def _open(self) -> tarfile.TarFile:
        try:
            return tarfile.open(self.path, "r:*")
        except tarfile.ReadError:
            raise ArchiveError(f"{self.path}: not a Callscope backup (not a tar archive)") from None
        except (OSError, EOFError, tarfile.TarError) as exc:
            raise self._damaged(exc) from None

    def _damaged(self, exc: BaseException) -> ArchiveError:
        detail = " ".join(str(exc).split()) or type(exc).__name__
        return ArchiveError(f"{self.path}: the archive is truncated or corrupt ({detail}); it cannot be restored")

    def _walk(self) -> Iterator[tuple[tarfile.TarInfo, IO[bytes]]]:
        with self._open() as tar:
            try:
                while (info := tar.next()) is not None:
                    if not info.isfile():
                        raise ArchiveError(f"{self.path}: unexpected member {info.name!r}: not a Callscope backup")
                    handle = tar.extractfile(info)
                    assert handle is not None  # a regular file
                    yield info, handle
            except (OSError, EOFError, tarfile.TarError) as exc:
                raise self._damaged(exc) from None

    def verify(self, progress: Callable[[int], None] = lambda n: None) -> Contents:
        manifest: dict[str, Any] | None = None
        objects: list[dict[str, Any]] | None = None
        names: list[str] = []
        seen: dict[str, str] = {}
        for info, handle in self._walk():
            digest = hashlib.sha256()
            data = bytearray() if info.name in (MANIFEST, OBJECTS_INDEX) else None
            try:
                while chunk := handle.read(CHUNK):
                    digest.update(chunk)
                    if data is not None:
                        data += chunk
                    progress(len(chunk))
            except (OSError, EOFError, tarfile.TarError) as exc:
                raise self._damaged(exc) from None
            seen[info.name] = digest.hexdigest()
            names.append(info.name)
            if info.name == MANIFEST and data is not None:
                manifest = _json(self.path, MANIFEST, bytes(data))
            elif info.name == OBJECTS_INDEX and data is not None:
                objects = [_json(self.path, OBJECTS_INDEX, line) for line in bytes(data).splitlines() if line]
        if manifest is None:
            if not names:
                raise ArchiveError(f"{self.path}: not a Callscope backup (empty archive)")
            raise ArchiveError(f"{self.path}: the archive is truncated (it ends before its manifest, after "
                               f"{len(names)} members); it cannot be restored")
        if manifest.get("format") != FORMAT:
            raise ArchiveError(f"{self.path}: not a Callscope backup (no {FORMAT} manifest)")
        version = manifest.get("format_version")
        if not isinstance(version, int) or version > FORMAT_VERSION:
            raise ArchiveError(f"{self.path}: written by Callscope {manifest.get('callscope_version', '?')} in archive "
                               f"format {version}, newer than this Callscope reads ({FORMAT_VERSION}); restore it "
                               "with that version or a newer one")
        expected = dict(manifest.get("members") or {})
        if manifest.get("objects_included"):
            expected.update({OBJECTS_DIR + e["key"]: e["sha256"] for e in objects or []})
        for name, sha256 in expected.items():
            if name not in seen:
                raise ArchiveError(f"{self.path}: member {name!r} is missing; the archive cannot be restored")
            if seen[name] != sha256:
                raise ArchiveError(f"{self.path}: member {name!r} is corrupt (its SHA-256 is not the one the "
                                   "backup recorded); the archive cannot be restored")
        unknown = sorted(set(seen) - set(expected) - {MANIFEST})
        if unknown:
            raise ArchiveError(f"{self.path}: member {unknown[0]!r} is not in the manifest; the archive cannot be "
                               "restored")
        return Contents(manifest, objects or [], names)

    def members(self) -> Iterator[tuple[str, IO[bytes]]]:
        for info, handle in self._walk():
            yield info.name, handle


def _json(path: Path, member: str, data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise ArchiveError(f"{path}: member {member!r} is not valid JSON; the archive is corrupt") from None
