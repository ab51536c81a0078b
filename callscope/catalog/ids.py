"""The one allocator of integer ids (projects, operators, virtual numbers, tags), and the claims that say
which object each id was handed to."""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import select, update

from callscope.catalog.db import Catalog
from callscope.catalog.tables import IdClaim, IdSequence


class Owner(NamedTuple):
    """The object an id belongs to: its account (namespace) and metadata.name."""

    account: str
    name: str


def allocate_id(catalog: Catalog, kind: str) -> int:
    """Return the next id of `kind` (1, 2, 3, ...): unique across all accounts and never reused, across
    threads and processes. The caller records with :func:`claim` which object it gives the id to.

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


def claim(catalog: Catalog, kind: str, object_id: int, owner: Owner) -> Owner:
    """The owner on record of an id, recording `owner` when the id has no claim yet: right after
    allocation, or for an object that got its id before claims existed. Of concurrent claimants the
    first insert wins and every caller reads the same answer."""
    if (on_record := claim_of(catalog, kind, object_id)) is not None:  # the usual case: a read, no write lock
        return on_record
    with catalog.session() as s:  # the insert comes first: no read-to-write lock upgrade on SQLite
        s.execute(catalog.insert(IdClaim).values(kind=kind, id=object_id, account=owner.account, name=owner.name)
                  .on_conflict_do_nothing(index_elements=[IdClaim.kind, IdClaim.id]))
        row = s.execute(select(IdClaim.account, IdClaim.name)
                        .where(IdClaim.kind == kind, IdClaim.id == object_id)).one()
    return Owner(row.account, row.name)


def transfer_claim(catalog: Catalog, kind: str, object_id: int, owner: Owner) -> None:
    """Hand a claimed id to `owner` (the object that held it first, when two accounts' objects carry it)."""
    with catalog.session() as s:
        s.execute(update(IdClaim).where(IdClaim.kind == kind, IdClaim.id == object_id)
                  .values(account=owner.account, name=owner.name))


def claim_of(catalog: Catalog, kind: str, object_id: int) -> Owner | None:
    with catalog.session() as s:
        row = s.execute(select(IdClaim.account, IdClaim.name)
                        .where(IdClaim.kind == kind, IdClaim.id == object_id)).first()
    return Owner(row.account, row.name) if row else None
