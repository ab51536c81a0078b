"""The catalog database: engine set-up, Alembic migrations, sessions and a thread bridge for async code.

SQLite (embedded, the default; WAL, and ``BEGIN IMMEDIATE`` transactions from :meth:`Catalog.session` for
read-then-write work) and PostgreSQL are supported. Migrations live in ``callscope/catalog/migrations`` and
:meth:`Catalog.alembic_config` builds Alembic's ``Config`` in code (no ``alembic.ini``). A lost database is
:class:`~callscope.errors.ServiceUnavailable` with a ``Retry-After`` from every session, logged once per outage;
nothing needs restarting when it is back. Details: docs/development.md.
"""

from __future__ import annotations

import asyncio
import contextvars
import fcntl
import functools
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

import structlog
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Table, create_engine, event, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.orm import Session
from sqlalchemy.pool import StaticPool

from callscope.errors import ServiceUnavailable, one_line
from callscope.metrics import CATALOG_OUTAGE_SECONDS, CATALOG_OUTAGES
from callscope.private_files import private_sqlite_file

log = structlog.get_logger()

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"

#: Milliseconds an SQLite connection waits for another process's write lock before giving up.
SQLITE_BUSY_TIMEOUT_MS = 30_000

#: PostgreSQL SQLSTATEs of a server that is gone or takes no work: every connection exception (class 08),
#: administrator or crash shutdown, "the database system is starting up / shutting down", too many connections.
_UNAVAILABLE_SQLSTATES = ("08", "57P01", "57P02", "57P03", "53300")

# Any fixed 64-bit number: the PostgreSQL advisory lock that serialises concurrent `migrate()` calls.
_MIGRATION_LOCK_KEY = 0x63616C6C73636F70  # "callscop"

# Execution option read by the SQLite "begin" listener: start the transaction with BEGIN IMMEDIATE.
_IMMEDIATE = "callscope_sqlite_begin_immediate"

P = ParamSpec("P")
T = TypeVar("T")


def insert(session: Session, table: Table | type) -> Any:
    """The dialect's INSERT construct for `table`: it has ``on_conflict_do_update``/``do_nothing`` on both back ends."""
    dialect = session.get_bind().dialect.name
    if dialect not in ("postgresql", "sqlite"):  # pragma: no cover - only SQLite and PostgreSQL are supported
        raise ValueError(f"unsupported catalog database: {dialect}")
    return (postgresql if dialect == "postgresql" else sqlite).insert(table)


def database_lost(exc: DBAPIError) -> bool:
    """Whether `exc` says the database cannot be reached (rather than that a statement was wrong)."""
    if exc.connection_invalidated:  # the dialect saw the connection break under a statement
        return True
    orig = exc.orig
    if isinstance(orig, sqlite3.Error):
        return "unable to open database file" in str(orig)
    sqlstate = getattr(orig, "sqlstate", None)
    if sqlstate is not None:
        return sqlstate.startswith(_UNAVAILABLE_SQLSTATES)
    # the driver's own failures carry no SQLSTATE: connection refused or timed out, the server closed the connection
    return isinstance(exc, (OperationalError, InterfaceError))


class Catalog:
    """Handle on the catalog database. One per process; safe to share between threads."""

    def __init__(
        self,
        url: str | URL,
        *,
        pool_size: int = 5,
        max_overflow: int = 10,
        max_workers: int | None = None,
        retry_after: int = 5,
        echo: bool = False,
    ):
        self.url: URL = make_url(url)
        self.retry_after = retry_after  # seconds, the Retry-After of the 503 answered while the database is lost
        if self.url.get_backend_name() == "sqlite":
            self.engine = _sqlite_engine(self.url, pool_size=pool_size, max_overflow=max_overflow, echo=echo)
        else:
            connect_args: dict[str, Any] = {}
            if self.url.get_backend_name() == "postgresql":
                connect_args["connect_timeout"] = 10
            self.engine = create_engine(
                self.url,
                pool_size=pool_size,
                max_overflow=max_overflow,
                pool_pre_ping=True,
                pool_recycle=1800,
                connect_args=connect_args,
                echo=echo,
                hide_parameters=True,  # see _sqlite_engine
            )
        # Same pool and listeners; on SQLite its transactions start with BEGIN IMMEDIATE.
        self._write_engine: Engine = self.engine.execution_options(**{_IMMEDIATE: True})
        self._max_workers = max_workers or pool_size + max_overflow
        self._executor: ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._lost_since: float | None = None  # monotonic time of the first failure of the current outage
        self._lost_lock = threading.Lock()
        self._memory_locks: dict[str, threading.Lock] = {}  # `exclusive` on an in-memory database

    def __repr__(self) -> str:
        return f"Catalog({self.url.render_as_string(hide_password=True)!r})"

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return self.engine.dialect.name

    # --- schema -------------------------------------------------------------------------------

    def alembic_config(self) -> Config:
        """An Alembic ``Config`` for this database, built in code (no alembic.ini)."""
        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
        # configparser interpolation: a literal % in the URL (escaped password) must be doubled.
        cfg.set_main_option("sqlalchemy.url", self.url.render_as_string(hide_password=False).replace("%", "%%"))
        return cfg

    def migrate(self, revision: str = "head") -> None:
        """Upgrade the schema to `revision`. Safe to call from several processes at once.

        A schema a newer release migrated (a revision this code does not know) is left as it is, with a warning:
        migrations only add (docs/operations.md, Upgrades), so this release runs on it, and a replica of the
        previous release that restarts during a rollout starts instead of failing."""
        cfg = self.alembic_config()
        # One transaction around the whole upgrade; concurrent migrators queue on a lock (SQLite:
        # BEGIN IMMEDIATE takes the write lock; PostgreSQL: an advisory lock held until commit), and the
        # later ones find alembic_version already at head and do nothing.
        with self._write_engine.begin() as conn:
            if self.dialect == "postgresql":
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK_KEY})")
            current = MigrationContext.configure(conn).get_current_revision()
            if current is not None and current not in {s.revision for s in ScriptDirectory.from_config(cfg)
                                                       .walk_revisions()}:
                log.warning("catalog_schema_newer", revision=current,
                            detail="migrated by a newer Callscope: this release runs on it without migrating")
                return
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, revision)

    # --- sessions -----------------------------------------------------------------------------

    @contextmanager
    def session(self, *, write: bool = False) -> Iterator[Session]:
        """A Session in one transaction: committed when the block ends normally, rolled back otherwise.

        ``write=True`` matters on SQLite only: the transaction takes the write lock up front (BEGIN
        IMMEDIATE). Use it when a transaction reads before it writes; a transaction whose first
        statement writes needs no such care.
        """
        engine = self._write_engine if write else self.engine
        with self._reachable(), Session(engine, expire_on_commit=False) as s, s.begin():
            yield s

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A Core connection in one transaction (commit on success)."""
        with self._reachable(), self.engine.begin() as conn:
            yield conn

    def ping(self) -> bool:
        """True when the database answers a trivial query (for health checks). Never raises."""
        try:
            with self.connect() as conn:
                conn.exec_driver_sql("SELECT 1")
            return True
        except ServiceUnavailable:  # logged once per outage by _reachable
            return False
        except Exception:  # a health check reports, it does not raise
            log.warning("catalog_ping_failed", exc_info=True)
            return False

    @contextmanager
    def _reachable(self) -> Iterator[None]:
        """Raise ServiceUnavailable for a lost database; log the start and the end of each outage once."""
        try:
            yield
        except DBAPIError as exc:
            if not database_lost(exc):
                raise
            with self._lost_lock:
                first = self._lost_since is None
                if first:
                    self._lost_since = time.monotonic()
            if first:
                CATALOG_OUTAGES.inc()
                log.warning("catalog_unavailable", error=one_line(exc.orig or exc), retry_after_s=self.retry_after)
            raise ServiceUnavailable("Callscope cannot reach its database right now; try again in a few seconds.",
                                     self.retry_after) from exc
        if self._lost_since is not None:  # read unlocked: the common case costs nothing
            with self._lost_lock:
                since, self._lost_since = self._lost_since, None
            if since is not None:
                CATALOG_OUTAGE_SECONDS.inc(time.monotonic() - since)
                log.info("catalog_available", outage_s=round(time.monotonic() - since, 1))

    # --- rules that span rows or objects ---------------------------------------------------------

    @asynccontextmanager
    async def exclusive(self, name: str) -> AsyncIterator[None]:
        """Hold the lock `name` for the block, against every process sharing this database.

        For a rule that spans several rows or configuration objects (an account keeps an unlocked admin, a phone
        number belongs to one operator): read, check and write inside the block, and two requests, on one replica
        or several, run one after the other. PostgreSQL: an advisory lock of a transaction of its own; SQLite: an
        exclusive flock on a lock file beside the database, not the database's write lock, so that the block may
        write the catalog itself.
        """
        held = await self.run(self._take_lock, name)
        try:
            yield
        finally:  # not in the catalog's pool, whose threads may all be waiting for locks
            await asyncio.to_thread(self._release_lock, held)

    def _take_lock(self, name: str) -> Connection | int | threading.Lock:
        if self.dialect == "postgresql":
            with self._reachable():
                conn = self.engine.connect()
                try:
                    conn.begin()
                    conn.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:name, 0))"), {"name": name})
                except BaseException:
                    conn.close()
                    raise
            return conn
        database = self.url.database or ""
        if database in ("", ":memory:") or database.startswith("file:"):  # one process: a lock of its own
            with self._executor_lock:
                lock = self._memory_locks.setdefault(name, threading.Lock())
            lock.acquire()
            return lock
        folder = Path(database).expanduser().resolve().parent / "locks"
        folder.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(folder / hashlib.sha256(name.encode()).hexdigest()[:32], os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released by the kernel if this process dies
        except BaseException:
            os.close(fd)
            raise
        return fd

    @staticmethod
    def _release_lock(held: Connection | int | threading.Lock) -> None:
        if isinstance(held, Connection):
            try:
                held.rollback()  # nothing was written in it: ending the transaction frees the lock
            finally:
                held.close()
        elif isinstance(held, int):
            os.close(held)  # closing the last descriptor releases the flock
        else:
            held.release()

    # --- async bridge -------------------------------------------------------------------------

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run blocking `fn(*args, **kwargs)` in the catalog's bounded thread pool and await its result.

        The pool is as large as the connection pool, so waiting for a connection happens in a
        thread, never on the event loop. Context variables (request ids for logging) are carried over.
        """
        loop = asyncio.get_running_loop()
        ctx = contextvars.copy_context()
        call = functools.partial(ctx.run, fn, *args, **kwargs)
        return await loop.run_in_executor(self._get_executor(), call)

    def query(self, fn: Callable[Concatenate[Session, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`fn(session, *args)` in one read transaction: how code reaches the query functions of the
        modules beside this one (async code: :meth:`read`)."""
        with self.session() as session:
            return fn(session, *args, **kwargs)

    def change(self, fn: Callable[Concatenate[Session, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """:meth:`query` for a transaction that writes (BEGIN IMMEDIATE on SQLite: a read before the
        write cannot fail on a lock upgrade). Async code: :meth:`write`."""
        with self.session(write=True) as session:
            return fn(session, *args, **kwargs)

    async def read(self, fn: Callable[Concatenate[Session, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.run(self.query, fn, *args, **kwargs)

    async def write(self, fn: Callable[Concatenate[Session, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        return await self.run(self.change, fn, *args, **kwargs)

    def _get_executor(self) -> ThreadPoolExecutor:
        executor = self._executor
        if executor is None:
            with self._executor_lock:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(self._max_workers, thread_name_prefix="catalog")
                executor = self._executor
        return executor

    def dispose(self) -> None:
        """Close pooled connections and stop the worker threads (a later call starts them again)."""
        with self._executor_lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        self.engine.dispose()


def _ensure_wal(cur: Any) -> None:
    """Switch the database file to WAL (a persistent setting: usually it already is).

    The switch needs an exclusive lock and SQLite may answer "database is locked" at once, without
    waiting for the busy timeout, when other connections are busy with a brand-new file; so retry.
    """
    if str(cur.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal":
        return
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            mode = cur.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() == "wal":
                return
            raise sqlite3.OperationalError(f"could not switch the journal mode to WAL (still {mode})")
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() > deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def _sqlite_engine(url: URL, *, pool_size: int, max_overflow: int, echo: bool) -> Engine:
    # hide_parameters (every engine): a statement's error, logged with its traceback, never shows its values (an
    # analysis's results and its webhook event hold the call's words: summary, quotes, field values)
    database = url.database or ""
    in_memory = database in ("", ":memory:") or url.query.get("mode") == "memory"
    connect_args: dict[str, Any] = {"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
    if in_memory:
        # One shared connection; for tests and experiments only (not for concurrent use).
        engine = create_engine(url, poolclass=StaticPool, connect_args=connect_args, echo=echo,
                               hide_parameters=True)
    else:
        if not database.startswith("file:"):
            # member emails, key usage: owner-only, before SQLite creates the file 0644
            private_sqlite_file(Path(database).expanduser().resolve())
        engine = create_engine(
            url, pool_size=pool_size, max_overflow=max_overflow, connect_args=connect_args, echo=echo,
            hide_parameters=True,
        )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # the driver issues no BEGIN/COMMIT of its own; see _on_begin
        cur = dbapi_conn.cursor()
        try:
            cur.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")  # before WAL: switching may wait
            if not in_memory:
                _ensure_wal(cur)
                cur.execute("PRAGMA synchronous = NORMAL")
            cur.execute("PRAGMA foreign_keys = ON")
        finally:
            cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN IMMEDIATE" if conn.get_execution_options().get(_IMMEDIATE) else "BEGIN")

    return engine
