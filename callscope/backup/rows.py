"""The catalog's rows as portable values, so that a backup of SQLite restores into PostgreSQL and back.

Generic over the schema: the tables are reflected from the database (whatever its migration), not taken from the
models, and each engine's own structures are left out, rebuilt by the engine as the rows go back in (SQLite's
virtual and shadow tables, the FTS5 index; PostgreSQL's tsvector and generated columns). A row is a JSON array in the
order of the manifest's columns; values JSON cannot hold are tagged objects: ``{"$b": base64}`` bytes, ``{"$t":
ISO 8601}`` a time (UTC, with its offset where the column has a time zone), ``{"$d": ...}`` a date, ``{"$tm": ...}``
a time of day, ``{"$n": "1.50"}`` a decimal, ``{"$j": ...}`` a JSON column's value.

An object of the blob store is named by a text column whose name is ``blob_key`` or ends in ``_key``
(``recordings.blob_key``, ``recordings.original_blob_key``, ``analyses.transcript_key``): the backup copies what
those name; a new column naming objects follows the rule (tests/backup checks it against the orphan sweep's list).
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import Boolean, Column, DateTime, Integer, MetaData, String, Table, inspect, select, text
from sqlalchemy.dialects.postgresql import TSVECTOR
from sqlalchemy.engine import Connection

ALEMBIC_TABLE = "alembic_version"
BATCH = 1000


def object_columns(table: Table) -> list[str]:
    """The columns of `table` that name objects of the blob store (the module docstring's rule)."""
    return [c.name for c in table.columns
            if (c.name == "blob_key" or c.name.endswith("_key")) and isinstance(c.type, String)]


def revision(conn: Connection) -> str | None:
    """The schema's Alembic revision; None without one (no catalog there)."""
    if ALEMBIC_TABLE not in inspect(conn).get_table_names():
        return None
    heads = [row[0] for row in conn.execute(text(f"SELECT version_num FROM {ALEMBIC_TABLE}"))]
    return ",".join(sorted(heads)) or None


def _engine_owned_sqlite(conn: Connection) -> set[str]:
    """SQLite's virtual tables (FTS5) and the shadow tables they keep their data in: rebuilt by the triggers."""
    return {row[1] for row in conn.exec_driver_sql("PRAGMA table_list") if row[2] in ("virtual", "shadow")}


def tables(conn: Connection) -> list[Table]:
    """The tables holding the catalog's rows, parents before children (foreign keys), as this database has them."""
    names = set(inspect(conn).get_table_names()) - {ALEMBIC_TABLE}
    if conn.dialect.name == "sqlite":
        names -= _engine_owned_sqlite(conn)
    metadata = MetaData()
    metadata.reflect(bind=conn, only=sorted(names))
    return [t for t in metadata.sorted_tables if t.name in names]


def dumped_columns(table: Table) -> list[Column]:
    """The columns whose values a backup keeps: all but what the engine derives from the others."""
    return [c for c in table.columns if c.computed is None and not isinstance(c.type, TSVECTOR)]


def encode(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return {"$b": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, datetime):
        return {"$t": (value.astimezone(UTC) if value.tzinfo else value).isoformat()}
    if isinstance(value, date):
        return {"$d": value.isoformat()}
    if isinstance(value, time):
        return {"$tm": value.isoformat()}
    if isinstance(value, timedelta):
        return {"$s": value.total_seconds()}
    if isinstance(value, Decimal):
        return {"$n": str(value)}
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict | list):
        return {"$j": value}
    raise TypeError(f"a catalog value of type {type(value).__name__} cannot be backed up")


def decode(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    ((tag, raw),) = value.items()
    if tag == "$b":
        return base64.b64decode(raw)
    if tag == "$t":
        return datetime.fromisoformat(raw)
    if tag == "$d":
        return date.fromisoformat(raw)
    if tag == "$tm":
        return time.fromisoformat(raw)
    if tag == "$s":
        return timedelta(seconds=raw)
    if tag == "$n":
        return Decimal(raw)
    if tag == "$j":
        return raw
    raise ValueError(f"unknown value tag {tag!r}")


def dump_rows(conn: Connection, table: Table) -> Iterator[list[Any]]:
    """Every row of `table` as a list of portable values (dumped_columns' order), in key order, streamed."""
    columns = dumped_columns(table)
    query = select(*columns)
    key = list(table.primary_key.columns) or columns
    result = conn.execution_options(stream_results=True, yield_per=BATCH).execute(query.order_by(*key))
    for row in result:
        yield [encode(v) for v in row]


UUID_TEXT = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _converter(column: Column, dialect: str, uids: dict[str, str]) -> Callable[[Any], Any]:
    """Turns a decoded value into what `column` of the target database takes."""
    kind = column.type
    if isinstance(kind, DateTime):
        aware = dialect != "sqlite" and bool(kind.timezone)

        def moment(value: Any) -> Any:
            if not isinstance(value, datetime):
                return value
            if value.tzinfo is None:
                value = value.replace(tzinfo=UTC)
            value = value.astimezone(UTC)
            return value if aware else value.replace(tzinfo=None)
        return moment
    if isinstance(kind, Boolean):
        return lambda value: bool(value) if isinstance(value, int) else value
    if isinstance(kind, Integer):
        return lambda value: int(value) if isinstance(value, bool) else value
    if uids:
        def remapped(value: Any) -> Any:
            if isinstance(value, str) and "-" in value:
                return UUID_TEXT.sub(lambda m: uids.get(m.group(0), m.group(0)), value)
            return value
        return remapped
    return lambda value: value


def load_rows(conn: Connection, table: Table, columns: list[str], lines: Iterable[bytes],
              uids: dict[str, str], progress: Callable[[int], None]) -> int:
    """Insert the dumped `lines` of `table` (their values in the order of `columns`); returns the count.
    `uids`: resource uids of the archive and the ones the target's store gave the same objects, replaced wherever
    a text value names one (an API key's usage is filed under its key's uid)."""
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"table {table.name} has no column {', '.join(missing)} at this revision")
    convert = [_converter(table.columns[c], conn.dialect.name, uids) for c in columns]
    count = 0
    batch: list[dict[str, Any]] = []
    for line in lines:
        if not line.strip():
            continue
        values = json.loads(line)
        batch.append({c: f(decode(v)) for c, f, v in zip(columns, convert, values, strict=True)})
        if len(batch) >= BATCH:
            conn.execute(table.insert(), batch)
            count += len(batch)
            progress(len(batch))
            batch = []
    if batch:
        conn.execute(table.insert(), batch)
        count += len(batch)
        progress(len(batch))
    return count


def restart_sequences(conn: Connection, loaded: Iterable[Table]) -> None:
    """PostgreSQL: each serial or identity column's sequence continues after the largest id restored (the rows came
    with their ids). SQLite takes the next rowid from the table itself."""
    if conn.dialect.name != "postgresql":
        return
    for table in loaded:
        for column in table.columns:
            if not isinstance(column.type, Integer):
                continue
            sequence = conn.execute(text("SELECT pg_get_serial_sequence(:t, :c)"),
                                    {"t": f'"{table.name}"', "c": column.name}).scalar()
            if sequence:
                conn.execute(text(f'SELECT setval(:s, COALESCE((SELECT MAX("{column.name}") FROM "{table.name}"), 0)'
                                  " + 1, false)"), {"s": sequence})
