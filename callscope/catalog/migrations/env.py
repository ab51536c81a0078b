"""Alembic environment of the catalog database.

Run through ``Catalog.migrate()`` (which passes its open connection in ``config.attributes["connection"]``)
or through ``alembic.command`` with ``Catalog.alembic_config()``; no alembic.ini is involved.
"""

from __future__ import annotations

from typing import Any

from alembic import context
from sqlalchemy import create_engine, pool
from sqlalchemy.engine import Connection

from callscope.catalog.tables import Base, UTCDateTime, modelled

config = context.config
target_metadata = Base.metadata


def _render_item(type_: str, obj: Any, autogen_context: Any) -> str | bool:
    # Autogenerate writes the plain column type into revisions, so they never import application code.
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _configure(**kwargs: Any) -> None:
    context.configure(
        target_metadata=target_metadata,
        compare_type=True,
        render_item=_render_item,
        include_object=modelled,
        **kwargs,
    )


def run_migrations_offline() -> None:
    url = config.get_main_option("sqlalchemy.url")
    _configure(url=url, literal_binds=True, dialect_opts={"paramstyle": "named"},
               render_as_batch=bool(url and url.startswith("sqlite")))
    with context.begin_transaction():
        context.run_migrations()


def _run_with(connection: Connection) -> None:
    # Batch mode lets ALTER-style operations work on SQLite (copy-and-move of the table).
    _configure(connection=connection, render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run_with(connection)
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url"), poolclass=pool.NullPool)
    try:
        with engine.begin() as conn:
            _run_with(conn)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
