"""The embedded back end: every object in one SQLite file, shared safely by several processes.

Tables ``objects`` (one row per object), ``events`` (one row per change, keyed by a global ``revision``, the
resourceVersion; compacted to ``max_events``, a watch from a compacted revision raises `Gone`) and ``state``. All
SQLite work runs on one worker thread owning the connection; other processes' writes are seen at once by reads and
by watches within ``poll_interval``. Details: docs/development.md.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import sqlite3
import uuid
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import structlog

from callscope.errors import ServiceUnavailable, ValidationFailed
from callscope.private_files import private_sqlite_file
from callscope.resources.meta import Resource
from callscope.store.interface import AlreadyExists, Gone, ObjectNotFound, StaleResourceVersion, WatchEvent
from callscope.store.selectors import parse_selector

R = TypeVar("R", bound=Resource)
T = TypeVar("T")

log = structlog.get_logger()

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    uid TEXT NOT NULL,
    resource_version INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    created TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name)
);
CREATE TABLE IF NOT EXISTS events (
    revision INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_kind ON events (kind, revision);
CREATE TABLE IF NOT EXISTS state (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT OR IGNORE INTO state (key, value) VALUES ('revision', 0);
INSERT OR IGNORE INTO state (key, value) VALUES ('compacted', 0);
"""

_END = object()


class SQLiteWatch:
    """The async iterator `SQLiteStore.watch` returns (one watcher of the shared poller).

    Besides iteration it offers `drained()`: wait until every event dispatched to this watcher so
    far has been taken by the consumer and the consumer asked for the next one, i.e. has been
    processed (used by `CachedStore.sync`)."""

    def __init__(self, store: SQLiteStore, kind: type[Resource], namespace: str | None, rv: str | None):
        self._store = store
        self.kind = kind
        self.namespace = namespace
        self._start_rv = rv
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._started = False
        self._finished = False
        self._outstanding = False
        self._ready = asyncio.Event()  # set once the catch-up (backfill) is done, or on finish
        self.after = 0  # every event with revision <= after has been dispatched to this watcher
        self.backfilling = True

    def __aiter__(self) -> SQLiteWatch:
        return self

    async def __anext__(self) -> WatchEvent:
        if self._outstanding:
            self._outstanding = False
            self._queue.task_done()
        if self._finished and self._queue.empty():
            raise StopAsyncIteration
        if not self._started:
            self._started = True
            try:
                await self._store._start_watch(self)
            except BaseException:
                self._finish()
                raise
        item = await self._queue.get()
        if item is _END:
            self._queue.task_done()
            self._finish()
            raise StopAsyncIteration
        if isinstance(item, BaseException):
            self._queue.task_done()
            self._finish()
            raise item
        self._outstanding = True
        return item

    def _deliver(self, item: Any) -> None:
        if not self._finished:
            self._queue.put_nowait(item)

    def _finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        self._store._unregister(self)
        self._ready.set()
        if self._outstanding:
            self._outstanding = False
            self._queue.task_done()
        while not self._queue.empty():
            self._queue.get_nowait()
            self._queue.task_done()

    async def aclose(self) -> None:
        self._finish()

    async def drained(self) -> None:
        await self._ready.wait()
        await self._queue.join()


class SQLiteStore:
    """`ResourceStore` over a SQLite file; see the module docstring."""

    def __init__(
        self,
        path: Path | str,
        poll_interval: float = 0.25,
        *,
        max_events: int = 10000,
        busy_timeout_ms: int = 10000,
    ):
        if max_events < 1:
            raise ValueError("max_events must be at least 1")
        self.path = Path(path)
        self.poll_interval = poll_interval
        self.max_events = max_events
        self.busy_timeout_ms = busy_timeout_ms
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="callscope-sqlite")
        self._conn: sqlite3.Connection | None = None  # touched only on the worker thread
        self._closed = False
        self._watchers: weakref.WeakSet[SQLiteWatch] = weakref.WeakSet()
        self._poll_task: asyncio.Task[None] | None = None
        self._poll_lock: asyncio.Lock | None = None
        self._wake: asyncio.Event | None = None
        self._last_polled: int | None = None  # revision up to which the shared poller has dispatched

    # -- the worker thread ------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            private_sqlite_file(self.path)  # key hashes: owner-only, before SQLite creates it 0644
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=self.busy_timeout_ms / 1000)
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_ms)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _in_write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = fn(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return result

    def _in_read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._connection()
        conn.execute("BEGIN")  # one snapshot for every statement of fn
        try:
            return fn(conn)
        finally:
            conn.execute("COMMIT")

    async def _run(self, fn: Callable[[], T]) -> T:
        if self._closed:
            raise ServiceUnavailable("the store is closed")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, fn)
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise ServiceUnavailable("the store is busy; retry") from exc
            raise

    async def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        result = await self._run(lambda: self._in_write(fn))
        if self._wake is not None and len(self._watchers):
            self._wake.set()  # local watchers see local writes without waiting for the interval
        return result

    async def _read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._run(lambda: self._in_read(fn))

    @staticmethod
    def _next_revision(conn: sqlite3.Connection) -> int:
        conn.execute("UPDATE state SET value = value + 1 WHERE key = 'revision'")
        return conn.execute("SELECT value FROM state WHERE key = 'revision'").fetchone()[0]

    def _record(self, conn: sqlite3.Connection, rev: int, type_: str, kind: str, ns: str, name: str, body: str) -> None:
        conn.execute(
            "INSERT INTO events (revision, type, kind, namespace, name, body) VALUES (?, ?, ?, ?, ?, ?)",
            (rev, type_, kind, ns, name, body),
        )
        horizon = rev - self.max_events
        if horizon > 0:
            compacted = conn.execute("SELECT value FROM state WHERE key = 'compacted'").fetchone()[0]
            if horizon > compacted:
                conn.execute("DELETE FROM events WHERE revision <= ?", (horizon,))
                conn.execute("UPDATE state SET value = ? WHERE key = 'compacted'", (horizon,))

    @staticmethod
    def _state(conn: sqlite3.Connection) -> tuple[int, int]:
        rows = dict(conn.execute("SELECT key, value FROM state").fetchall())
        return rows["revision"], rows["compacted"]

    # -- reads ----------------------------------------------------------------------------

    async def current_revision(self) -> str:
        return str(await self._read(lambda c: self._state(c)[0]))

    async def get(self, kind: type[R], namespace: str, name: str) -> R:
        def fn(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT body FROM objects WHERE kind = ? AND namespace = ? AND name = ?",
                (kind.KIND, namespace, name),
            ).fetchone()
            return row[0] if row else None

        body = await self._read(fn)
        obj = kind.from_stored(json.loads(body)) if body is not None else None
        if obj is None:
            raise ObjectNotFound(kind.KIND, name)
        return obj

    def _select(self, conn: sqlite3.Connection, kind: type[R], namespace: str | None,
                selector_text: str | None) -> list[R]:
        selector = parse_selector(selector_text)
        if namespace is None:
            rows = conn.execute(
                "SELECT body FROM objects WHERE kind = ? ORDER BY namespace, name", (kind.KIND,)
            ).fetchall()
        else:
            rows = conn.execute(
                "SELECT body FROM objects WHERE kind = ? AND namespace = ? ORDER BY name", (kind.KIND, namespace)
            ).fetchall()
        out: list[R] = []
        for (body,) in rows:
            data = json.loads(body)
            if ((selector.empty or selector.matches(data.get("metadata", {}).get("labels") or {}))
                    and (obj := kind.from_stored(data)) is not None):
                out.append(obj)
        return out

    async def list(
        self, kind: type[R], namespace: str | None = None, label_selector: str | None = None
    ) -> list[R]:
        parse_selector(label_selector)  # syntax errors surface here, before any I/O
        return await self._read(lambda c: self._select(c, kind, namespace, label_selector))

    async def list_with_version(self, kind: type[R], namespace: str | None = None) -> tuple[builtins.list[R], str]:
        def fn(conn: sqlite3.Connection) -> tuple[list[R], str]:
            return self._select(conn, kind, namespace, None), str(self._state(conn)[0])

        return await self._read(fn)

    # -- writes ---------------------------------------------------------------------------

    @staticmethod
    def _require_namespace(obj: Resource) -> str:
        if not obj.metadata.namespace:
            raise ValidationFailed(f"{obj.KIND} {obj.metadata.name!r}: metadata.namespace is required")
        return obj.metadata.namespace

    async def create(self, obj: R) -> R:
        cls = type(obj)
        namespace = self._require_namespace(obj)
        data = obj.to_dict()
        data["status"] = {}  # as with a status subresource, create ignores status
        meta = data["metadata"]
        for field in ("resourceVersion", "uid", "generation", "creationTimestamp", "deletionTimestamp"):
            meta.pop(field, None)

        def fn(conn: sqlite3.Connection) -> R:
            exists = conn.execute(
                "SELECT 1 FROM objects WHERE kind = ? AND namespace = ? AND name = ?",
                (cls.KIND, namespace, obj.name),
            ).fetchone()
            if exists:
                raise AlreadyExists(cls.KIND, obj.name)
            rev = self._next_revision(conn)
            now = datetime.now(UTC).replace(microsecond=0)
            meta.update(uid=str(uuid.uuid4()), resourceVersion=str(rev), generation=1, creationTimestamp=now)
            new = cls.from_dict(data)
            body = json.dumps(new.to_dict())
            conn.execute(
                "INSERT INTO objects (kind, namespace, name, uid, resource_version, generation, created, body)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (cls.KIND, namespace, obj.name, meta["uid"], rev, 1, now.isoformat(), body),
            )
            self._record(conn, rev, "ADDED", cls.KIND, namespace, obj.name, body)
            return new

        return await self._write(fn)

    async def _replace(self, obj: R, change: Callable[[dict[str, Any], dict[str, Any]], None]) -> R:
        """Read-check-modify-write of one object in one IMMEDIATE transaction."""
        cls = type(obj)
        namespace = self._require_namespace(obj)
        wanted_rv = obj.metadata.resource_version
        incoming = obj.to_dict()

        def fn(conn: sqlite3.Connection) -> R:
            row = conn.execute(
                "SELECT resource_version, generation, body FROM objects WHERE kind = ? AND namespace = ? AND name = ?",
                (cls.KIND, namespace, obj.name),
            ).fetchone()
            if row is None:
                raise ObjectNotFound(cls.KIND, obj.name)
            rv, generation, body = row
            if wanted_rv is not None and wanted_rv != str(rv):
                raise StaleResourceVersion(cls.KIND, obj.name)
            current = json.loads(body)
            data = json.loads(body)
            change(data, incoming)
            if data == current:
                return cls.from_dict(current)  # nothing changed: no new revision, no event
            if data.get("spec") != current.get("spec"):
                generation += 1
            new_rev = self._next_revision(conn)
            data["metadata"]["generation"] = generation
            data["metadata"]["resourceVersion"] = str(new_rev)
            new = cls.from_dict(data)
            new_body = json.dumps(new.to_dict())
            conn.execute(
                "UPDATE objects SET resource_version = ?, generation = ?, body = ?"
                " WHERE kind = ? AND namespace = ? AND name = ?",
                (new_rev, generation, new_body, cls.KIND, namespace, obj.name),
            )
            self._record(conn, new_rev, "MODIFIED", cls.KIND, namespace, obj.name, new_body)
            return new

        return await self._write(fn)

    async def update(self, obj: R) -> R:
        def change(data: dict[str, Any], incoming: dict[str, Any]) -> None:
            meta, new_meta = data["metadata"], incoming["metadata"]
            for field, empty in (("labels", {}), ("annotations", {}), ("finalizers", [])):
                meta[field] = new_meta.get(field, empty)
            data["spec"] = incoming["spec"]

        return await self._replace(obj, change)

    async def update_status(self, obj: R) -> R:
        def change(data: dict[str, Any], incoming: dict[str, Any]) -> None:
            data["status"] = incoming.get("status", {})

        return await self._replace(obj, change)

    async def delete(self, kind: type[R], namespace: str, name: str) -> None:
        def fn(conn: sqlite3.Connection) -> None:
            row = conn.execute(
                "SELECT body FROM objects WHERE kind = ? AND namespace = ? AND name = ?",
                (kind.KIND, namespace, name),
            ).fetchone()
            if row is None:
                raise ObjectNotFound(kind.KIND, name)
            rev = self._next_revision(conn)
            data = json.loads(row[0])
            data["metadata"]["resourceVersion"] = str(rev)  # as etcd: a deletion has its own revision
            conn.execute(
                "DELETE FROM objects WHERE kind = ? AND namespace = ? AND name = ?", (kind.KIND, namespace, name)
            )
            self._record(conn, rev, "DELETED", kind.KIND, namespace, name, json.dumps(data))

        await self._write(fn)

    # -- watch ----------------------------------------------------------------------------

    def watch(
        self, kind: type[R], namespace: str | None = None, resource_version: str | None = None
    ) -> SQLiteWatch:
        """Changes after resource_version (None: from now), in order; Gone when it was compacted.

        Errors (Gone) surface on the first `__anext__`. Close the iterator with `aclose()`."""
        return SQLiteWatch(self, kind, namespace, resource_version)

    def _unregister(self, watcher: SQLiteWatch) -> None:
        self._watchers.discard(watcher)

    def _events_after(
        self, conn: sqlite3.Connection, after: int, kinds: dict[str, type[Resource]], namespace: str | None = None
    ) -> tuple[builtins.list[tuple[int, str, str, str, Resource]], int, int]:
        """Events with revision > after of the given kinds (parsed), the current revision, the
        compaction point; in one snapshot."""
        revision, compacted = self._state(conn)
        if not kinds or after >= revision:
            return [], revision, compacted
        marks = ",".join("?" * len(kinds))
        sql = f"SELECT revision, type, kind, namespace, body FROM events WHERE revision > ? AND kind IN ({marks})"
        params: list[Any] = [after, *kinds]
        if namespace is not None:
            sql += " AND namespace = ?"
            params.append(namespace)
        rows = conn.execute(sql + " ORDER BY revision", params).fetchall()
        events = [(rev, t, k, ns, obj) for rev, t, k, ns, body in rows
                  if (obj := kinds[k].from_stored(json.loads(body))) is not None]
        return events, revision, compacted

    def _ensure_poller(self) -> None:
        if self._poll_lock is None:
            self._poll_lock = asyncio.Lock()
            self._wake = asyncio.Event()
        if self._poll_task is None:
            self._poll_task = asyncio.get_running_loop().create_task(self._poll_loop(), name="sqlite-store-poller")

    async def _start_watch(self, w: SQLiteWatch) -> None:
        if self._closed:
            raise ServiceUnavailable("the store is closed")
        if w._start_rv is None:
            w.after = int(await self.current_revision())
        else:
            try:
                w.after = int(w._start_rv)
            except ValueError:
                raise Gone(f"resourceVersion {w._start_rv!r} is not one of this store") from None
        self._watchers.add(w)
        self._ensure_poller()
        if self._last_polled is None:
            self._last_polled = w.after
        # catch up from the file until the shared poller is not ahead of this watcher
        kinds = {w.kind.KIND: w.kind}
        while True:
            events, revision, compacted = await self._read(
                partial(self._events_after, after=w.after, kinds=kinds, namespace=w.namespace))
            if w.after < compacted:
                raise Gone(f"resourceVersion {w.after} is too old (events up to {compacted} were compacted)")
            for _rev, type_, _, _, obj in events:
                w._deliver(WatchEvent(type_, obj))  # type: ignore[arg-type]
            w.after = max(w.after, revision)
            if self._last_polled is None or self._last_polled <= w.after:
                w.backfilling = False
                w._ready.set()
                return

    async def _poll_loop(self) -> None:
        assert self._wake is not None
        try:
            while True:
                if not len(self._watchers) or self._closed:
                    return
                try:
                    await self._poll_once()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.warning("sqlite store poll failed; retrying", path=str(self.path), exc_info=True)
                try:
                    await asyncio.wait_for(self._wake.wait(), self.poll_interval)
                except TimeoutError:
                    pass
                self._wake.clear()
        finally:
            if self._poll_task is asyncio.current_task():
                self._poll_task = None
                self._last_polled = None

    async def _poll_once(self) -> None:
        if self._poll_lock is None:
            return
        async with self._poll_lock:
            after = self._last_polled
            watchers = [w for w in self._watchers if not w._finished]
            if after is None or not watchers:
                return
            kinds = {w.kind.KIND: w.kind for w in watchers}
            events, revision, compacted = await self._read(lambda c: self._events_after(c, after, kinds))
            if self._last_polled is None:  # the poller stopped meanwhile
                return
            lost = compacted > after
            delivered: set[int] = set()
            for w in list(self._watchers):
                if w.backfilling or w._finished:
                    continue
                if lost and w.after < compacted:
                    w._deliver(Gone(f"watch fell behind: events up to {compacted} were compacted"))
                    self._unregister(w)
                    continue
                for i, (rev, type_, kind, ns, obj) in enumerate(events):
                    if rev <= w.after or kind != w.kind.KIND or (w.namespace is not None and ns != w.namespace):
                        continue
                    if i in delivered:  # every watcher gets its own instance
                        obj = obj.model_copy(deep=True)
                    delivered.add(i)
                    w._deliver(WatchEvent(type_, obj))  # type: ignore[arg-type]
                w.after = max(w.after, revision)
            self._last_polled = max(self._last_polled, revision)

    async def poll_now(self) -> None:
        """Poll the events table at once and dispatch what is new to this store's watchers."""
        if self._closed:
            return
        await self._poll_once()

    # -- lifecycle ------------------------------------------------------------------------

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for w in list(self._watchers):
            w._deliver(_END)
        self._watchers = weakref.WeakSet()
        task, self._poll_task = self._poll_task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - closing, whatever the poller ended with
                pass

        def shutdown() -> None:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, shutdown)
        finally:
            self._executor.shutdown(wait=False)
