"""The one allocator of integer ids (projects, operators, virtual numbers, tags), and the claims that say
which object each id was handed to."""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from callscope.catalog.db import insert
from callscope.catalog.tables import IdClaim, IdSequence


class Owner(NamedTuple):
    """The object an id belongs to: its account (namespace) and metadata.name."""

    account: str
    name: str


def allocate_id(session: Session, kind: str) -> int:
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
        insert(session, IdSequence)
        .values(kind=kind, last_value=1)
        .on_conflict_do_update(
            index_elements=[IdSequence.kind],
            set_={"last_value": IdSequence.last_value + 1},
        )
        .returning(IdSequence.last_value)
    )
    return int(session.execute(stmt).scalar_one())


def claim(session: Session, kind: str, object_id: int, owner: Owner) -> Owner:
    """The owner on record of an id, recording `owner` when the id has no claim yet: right after
    allocation, or for an object that got its id before claims existed. Of concurrent claimants the
    first insert wins and every caller reads the same answer."""
    session.execute(insert(session, IdClaim).values(kind=kind, id=object_id, account=owner.account, name=owner.name)
                    .on_conflict_do_nothing(index_elements=[IdClaim.kind, IdClaim.id]))
    return claim_of(session, kind, object_id)


def transfer_claim(session: Session, kind: str, object_id: int, owner: Owner) -> None:
    """Hand a claimed id to `owner` (the object that held it first, when two accounts' objects carry it)."""
    session.execute(update(IdClaim).where(IdClaim.kind == kind, IdClaim.id == object_id)
                    .values(account=owner.account, name=owner.name))


def claim_of(session: Session, kind: str, object_id: int) -> Owner | None:
    row = session.execute(select(IdClaim.account, IdClaim.name)
                          .where(IdClaim.kind == kind, IdClaim.id == object_id)).first()
    return Owner(row.account, row.name) if row else None
