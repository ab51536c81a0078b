"""The Alembic migrations build exactly the schema the models describe."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect

from callscope.catalog.db import Catalog
from callscope.catalog.tables import ENGINE_SEARCH_TABLES, Base, modelled


@pytest.fixture
def catalog(empty_catalog_url: str) -> Iterator[Catalog]:
    """Migrated here from an empty database (the suite's shared `catalog` starts from a copy of one migrated once)."""
    cat = Catalog(empty_catalog_url)
    cat.migrate()
    try:
        yield cat
    finally:
        cat.dispose()


def test_migrate_creates_the_model_tables(catalog: Catalog) -> None:
    with catalog.engine.connect() as conn:
        tables = set(inspect(conn).get_table_names())
    assert tables - ENGINE_SEARCH_TABLES == set(Base.metadata.tables) | {"alembic_version"}


def test_migrated_schema_matches_the_models(catalog: Catalog) -> None:
    with catalog.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True,
                                                                   "include_object": modelled}), Base.metadata)
    assert diff == []


def test_migrate_twice_is_a_no_op(catalog: Catalog) -> None:
    catalog.migrate()
    with catalog.engine.connect() as conn:
        heads = MigrationContext.configure(conn).get_current_heads()
    assert heads == (_head(catalog),)


def test_ping(catalog: Catalog) -> None:
    assert catalog.ping() is True


def test_ping_false_when_unreachable(tmp_path) -> None:
    # the file does not exist and read-only mode cannot create it
    cat = Catalog(f"sqlite:///file:{tmp_path}/nope/x.db?mode=ro&uri=true")
    try:
        assert cat.ping() is False
    finally:
        cat.dispose()


def test_sqlite_connections_use_wal_and_foreign_keys(tmp_path) -> None:
    cat = Catalog(f"sqlite:///{tmp_path / 'c.db'}")
    try:
        with cat.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 1000
    finally:
        cat.dispose()


async def test_run_executes_in_a_worker_thread(catalog: Catalog) -> None:
    import threading

    main = threading.get_ident()
    assert await catalog.run(threading.get_ident) != main


def test_concurrent_migrations_from_several_catalogs(empty_catalog_url: str) -> None:
    from concurrent.futures import ThreadPoolExecutor

    catalogs = [Catalog(empty_catalog_url) for _ in range(4)]  # as in four processes starting together
    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(Catalog.migrate, catalogs))
        with catalogs[0].engine.connect() as conn:
            assert MigrationContext.configure(conn).get_current_heads() == (_head(catalogs[0]),)
    finally:
        for cat in catalogs:
            cat.dispose()


def _head(catalog: Catalog) -> str:
    """The newest revision in the migrations folder."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(catalog.alembic_config()).get_current_head()


def test_a_schema_a_newer_release_migrated_is_left_as_it_is(catalog: Catalog, capsys) -> None:
    """A replica of the previous release that restarts during a rollout starts on the migrated schema."""
    with catalog.connect() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999_from_a_newer_release'")
    catalog.migrate()
    with catalog.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == "9999_from_a_newer_release"
    assert "catalog_schema_newer" in capsys.readouterr().out
