"""Shared fixtures.

External services (skipped cleanly, with the reason, when unreachable):

* ``postgres_url`` (session): a fresh, uniquely named PostgreSQL database created for the test session
  on the server of ``CALLSCOPE_TEST_POSTGRES_URL`` (default ``postgresql+psycopg://postgres@127.0.0.1:5432/test``)
  and dropped at the end.
* ``redis_url`` (session): ``CALLSCOPE_TEST_REDIS_URL`` (default ``redis://127.0.0.1:6379/15``). Tests share
  the database: use unique key names (e.g. ``unique_name``); keys should carry a TTL.

Catalog database:

* ``clean_postgres_url``: ``postgres_url``, emptied (alembic_version included) before and after the test.
* ``empty_catalog_url``: parametrized over ``sqlite`` (a file in tmp_path) and ``postgres`` (``clean_postgres_url``):
  a database without the schema, for the tests of the migrations themselves.
* ``catalog_url``: the same two, already migrated and without rows: a copy of a SQLite catalog migrated once per
  session, and a second session database on PostgreSQL (``migrated_postgres_url``) whose rows are deleted before
  each test. Running the migrations takes a quarter to half a second, and hundreds of tests need a catalog.
* ``catalog``: a :class:`callscope.catalog.db.Catalog` on ``catalog_url``, disposed after the test.
* ``runtime`` (below) starts on a copy of the migrated SQLite catalog too, where its settings name no database.

S3: ``s3_endpoint`` (session): moto's S3 server (tests/blobs/moto_server.py, a ThreadedMotoServer in a child
process) on 127.0.0.1 and a free port, with dummy AWS credentials in the environment.

Parallel workers (`make test`, pytest-xdist with --dist loadgroup): two chains run one test after another on one
worker each, and first, so that they are not the tail of the run: the Ray clusters (``xdist_group("ray")``) and
the embedded language model (``xdist_group("language_model")``); two of either at once would each take twice as
long and the clusters' fault timings would not hold. A test that uses a module- or class-scoped fixture (a started
server, a browser) goes with the rest of its module, so that the fixture is set up once; the others are spread
one by one.

Tests needing a service should also carry the ``postgres`` / ``redis`` marker (see pyproject.toml) so
``-m "not postgres"`` can deselect them; ``catalog_url`` adds the marker to its postgres case itself.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog
from sqlalchemy.engine import make_url

from callscope.catalog.db import Catalog

DEFAULT_TEST_POSTGRES_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
DEFAULT_TEST_REDIS_URL = "redis://127.0.0.1:6379/15"


# The chains of tests that run one after another on one xdist worker (their modules mark them
# `xdist_group(NAME)`), started first so that they are not the tail of the run: two Ray clusters at once, or two
# language-model runs, would each take twice as long and the clusters' fault timings would not hold.
CHAINS = ("ray", "language_model")


def _runs_with_its_module(item: pytest.Item) -> bool:
    """Whether the test uses a module- or class-scoped fixture (a started server, a browser): set up once per
    worker, so the module's tests go to one worker together."""
    fixtures = item._fixtureinfo.name2fixturedefs.values()  # type: ignore[attr-defined]
    return any(defs[-1].scope in ("module", "class") for defs in fixtures if defs)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """On xdist workers (`make test TEST_WORKERS=N`, --dist loadgroup): each test's group, and an order whose
    long chains come first (Makefile: --no-loadscope-reorder keeps it)."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None and _runs_with_its_module(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))

    def rank(item: pytest.Item) -> int:
        group = item.get_closest_marker("xdist_group")
        if group is not None and group.args[0] in CHAINS:
            return CHAINS.index(group.args[0])
        return len(CHAINS) + (item.get_closest_marker("slow") is None)

    items.sort(key=rank)


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """A command run in process (click's CliRunner) configures logging for the whole process, as a command does
    (warnings only, unless --verbose): each test gets back the configuration it started with, so that no test reads
    the log lines another test's command turned off."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture
def unique_name() -> str:
    """A name no other test (or test run) uses: for buckets, keys, accounts."""
    return f"t-{uuid.uuid4().hex[:12]}"


# --- an embedded Runtime -----------------------------------------------------------------------------


@pytest.fixture
async def runtime(settings, sqlite_catalog_template):
    """A started Runtime (stores, catalog, blobs, mail; no background loops) on the folder's `settings`."""
    from callscope.runtime import Runtime

    if settings.database_url is None:
        copy_sqlite_catalog(sqlite_catalog_template, settings.data_dir / "catalog.db")
    rt = Runtime(settings)
    await rt.start(background=False)
    yield rt
    await rt.stop()


# --- the embedded analysis models ------------------------------------------------------------------------


@pytest.fixture(scope="session")
def embedded_models() -> dict:
    """The embedded transcriber, speaker analyser and text embedder, loaded once for the session (per xdist worker):
    `Pipeline(settings, **embedded_models)` for a test whose settings keep the default models. Loading them takes
    longer than analysing a short call."""
    from callscope.analysis.runtime.pipeline import load_model
    from callscope.config import Settings

    return {name: load_model(name, Settings()) for name in ("transcriber", "speakers", "embedder")}


# --- PostgreSQL -------------------------------------------------------------------------------------


def _pg_connect(url):  # psycopg connection to the database named in `url`
    import psycopg

    return psycopg.connect(
        host=url.host or "127.0.0.1",
        port=url.port or 5432,
        user=url.username,
        password=url.password,
        dbname=url.database or "postgres",
        autocommit=True,
        connect_timeout=3,
    )


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a fresh PostgreSQL database for this test session (dropped at the end)."""
    server = make_url(os.environ.get("CALLSCOPE_TEST_POSTGRES_URL", DEFAULT_TEST_POSTGRES_URL))
    try:
        admin = _pg_connect(server)
    except Exception as exc:  # noqa: BLE001 - any failure to connect means "no PostgreSQL here"
        pytest.skip(f"PostgreSQL unreachable at {server.render_as_string(hide_password=True)}: {exc}")
    name = f"callscope_test_{uuid.uuid4().hex[:12]}"
    try:
        admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        admin.close()
    try:
        yield server.set(database=name).render_as_string(hide_password=False)
    finally:
        with _pg_connect(server) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _reset_postgres(url: str) -> None:
    """Drop everything the test created (tables, alembic_version, types) by recreating the public schema."""
    with _pg_connect(make_url(url)) as conn:
        conn.execute("SET lock_timeout = '10s'")
        conn.execute("DROP SCHEMA public CASCADE")
        conn.execute("CREATE SCHEMA public")


# --- Redis ------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def redis_url() -> str:
    """URL of the test Redis database; skips when Redis does not answer."""
    import redis

    url = os.environ.get("CALLSCOPE_TEST_REDIS_URL", DEFAULT_TEST_REDIS_URL)
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"Redis unreachable at {url}: {exc}")
    return url


# --- catalog database -------------------------------------------------------------------------------


@pytest.fixture
def clean_postgres_url(postgres_url: str) -> Iterator[str]:
    """The session PostgreSQL database, empty at the start of the test and emptied again after it."""
    _reset_postgres(postgres_url)  # in case an earlier test was interrupted before its teardown
    try:
        yield postgres_url
    finally:
        _reset_postgres(postgres_url)


@pytest.fixture(scope="session")
def sqlite_catalog_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite catalog migrated once for the session (per xdist worker): tests start on copies of it."""
    path = tmp_path_factory.mktemp("catalog-template") / "catalog.db"
    template = Catalog(f"sqlite:///{path}")
    template.migrate()
    template.dispose()
    return path


def copy_sqlite_catalog(template: Path, path: Path) -> None:
    """The migrated template at `path`, unless a catalog is there already (a test that made its own)."""
    if not path.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # private, as the runtime makes them
        shutil.copyfile(template, path)
        path.chmod(0o600)


@pytest.fixture(scope="session")
def migrated_postgres_url(postgres_url: str) -> Iterator[str]:
    """A second session database, migrated once; ``clean_postgres_url`` drops the schema of the first."""
    url = make_url(postgres_url)
    name = f"{url.database}_migrated"
    with _pg_connect(url) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    migrated = url.set(database=name).render_as_string(hide_password=False)
    template = Catalog(migrated)
    template.migrate()
    template.dispose()
    try:
        yield migrated
    finally:
        with _pg_connect(url) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _delete_rows(url: str) -> None:
    """Every table emptied (children before parents) and every sequence restarted, the schema kept. Connections an
    earlier test left open are ended first: one idle in a transaction would hold its locks."""
    from callscope.catalog.tables import Base

    with _pg_connect(make_url(url)) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                     "WHERE datname = current_database() AND pid <> pg_backend_pid()")
        with conn.transaction():
            for table in reversed(Base.metadata.sorted_tables):
                conn.execute(f'DELETE FROM "{table.name}"')
            for (sequence,) in conn.execute("SELECT sequencename FROM pg_sequences WHERE schemaname = 'public'"):
                conn.execute(f'ALTER SEQUENCE "{sequence}" RESTART')


@pytest.fixture
def emptied_postgres_url(migrated_postgres_url: str) -> str:
    """``migrated_postgres_url`` with no rows: a migrated catalog on PostgreSQL, as a fresh one would be."""
    _delete_rows(migrated_postgres_url)
    return migrated_postgres_url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database without the catalog's schema, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'catalog.db'}"
    return request.getfixturevalue("clean_postgres_url")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated catalog database without rows, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        copy_sqlite_catalog(request.getfixturevalue("sqlite_catalog_template"), tmp_path / "catalog.db")
        return f"sqlite:///{tmp_path / 'catalog.db'}"
    return request.getfixturevalue("emptied_postgres_url")


@pytest.fixture
def catalog(catalog_url: str) -> Iterator[Catalog]:
    """A Catalog on ``catalog_url`` (migrated: its migrate() finds the schema at head)."""
    cat = Catalog(catalog_url)
    cat.migrate()
    try:
        yield cat
    finally:
        cat.dispose()


# --- S3 (moto) ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    if importlib.util.find_spec("moto") is None:
        pytest.skip("moto[server] is not installed")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }.items():
            mp.setenv(name, value)
        mp.delenv("AWS_PROFILE", raising=False)
        process = subprocess.Popen(
            [sys.executable, str(Path(__file__).parent / "blobs" / "moto_server.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        try:
            port = process.stdout.readline().strip()
            if not port.isdigit():
                pytest.fail(f"moto server did not start (exit code {process.poll()})")
            yield f"http://127.0.0.1:{port}"
        finally:
            process.stdin.close()
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()
