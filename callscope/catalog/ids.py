"""The one allocator of integer ids (projects, operators, virtual numbers, tags, recordings, ...)."""

from __future__ import annotations

from callscope.catalog.db import Catalog
from callscope.catalog.tables import IdSequence


def allocate_id(catalog: Catalog, kind: str) -> int:
    """Return the next id of `kind` (1, 2, 3, ...): unique and never reused, across threads and processes.

    Why this is correct: the whole allocation is ONE statement,

        INSERT INTO id_sequences (kind, last_value) VALUES (:kind, 1)
        ON CONFLICT (kind) DO UPDATE SET last_value = id_sequences.last_value + 1
        RETURNING last_value

    committed before the value is returned.

    * PostgreSQL: INSERT ... ON CONFLICT DO UPDATE is atomic per row. The update locks the row; a
      concurrent allocator of the same kind waits for that lock and, once the first transaction
      commits, re-evaluates ``last_value + 1`` against the committed row (READ COMMITTED re-check),
      so two transactions can never read the same old value. When two callers race to create the
      first row, the unique primary key lets exactly one insert win; the other sees the conflict
      and takes the update path. No read-then-write gap exists for another caller to slip into.
    * SQLite: a write statement runs under the database-wide write lock, which one connection of one
      process holds at a time; other writers wait for it (busy timeout) and then see the committed
      value. The statement is its own transaction's first statement, so a waiting transaction has
      no stale snapshot to upgrade from.
    * Never reused: last_value only grows, and a value is handed out only after its increment has
      committed. A transaction that rolls back returns nothing, so a skipped number is at worst a
      gap, never a duplicate. Rows are never deleted.
    """
    stmt = (
        catalog.insert(IdSequence)
        .values(kind=kind, last_value=1)
        .on_conflict_do_update(
            index_elements=[IdSequence.kind],
            set_={"last_value": IdSequence.last_value + 1},
        )
        .returning(IdSequence.last_value)
    )
    with catalog.session() as s:
        value = s.execute(stmt).scalar_one()
    return int(value)


async def allocate_id_async(catalog: Catalog, kind: str) -> int:
    """:func:`allocate_id` for async callers (runs in the catalog's thread pool)."""
    return await catalog.run(allocate_id, catalog, kind)
