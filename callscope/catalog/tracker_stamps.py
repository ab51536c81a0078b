"""Which analysed calls are still to be matched against their project's trackers (callscope/catalog/trackers.py
matches them): each recording's ``trackers_digest``, the digest of the trackers it was matched against (None: no
tracker, which a call never matched also reads as), and ``tracker_sets``, the digest every analysed call of a project
was matched against, so that the tracker pass passes over a project whose calls all are. Apart from the matching,
which reads search's tables, so that recordings.py can leave a moved call to be matched again."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, exists, select, text, tuple_, update
from sqlalchemy.orm import Session

from callscope.catalog import trend_sums
from callscope.catalog.db import insert as upsert
from callscope.catalog.tables import Analysis, Recording, RecordingTracker, TrackerSet

NONE = ""  # the digest of no tracker in tracker_sets (a call's trackers_digest: None)


def unmatched(session: Session, recording_ids: list[int]) -> None:
    """Leave the recordings for the tracker pass to match again (their entries were rewritten, or they moved to
    another project): their moments go (with their part of the sums), and they read as matched against no tracker."""
    projects = select(Recording.account, Recording.project_id).where(Recording.id.in_(recording_ids)).distinct()
    for account, project_id in session.execute(projects).all():
        session.execute(delete(TrackerSet).where(TrackerSet.account == account, TrackerSet.project_id == project_id))
    with trend_sums.regrouping(session, recording_ids):
        session.execute(delete(RecordingTracker).where(RecordingTracker.recording_id.in_(recording_ids)))
        session.execute(update(Recording).where(Recording.id.in_(recording_ids)).values(trackers_digest=None))


def settled(session: Session) -> dict[tuple[str, int], str]:
    """The digest every analysed call of each (account, project) was matched against (NONE: no tracker); a project
    left out: not known."""
    return {(account, project_id): digest
            for account, project_id, digest in session.execute(select(TrackerSet.account, TrackerSet.project_id,
                                                                      TrackerSet.digest))}


def stale(session: Session, account: str, project_id: int, digest: str | None, after: tuple[datetime, int] | None,
          limit: int) -> list[tuple[datetime, int]]:
    """(created_at, id) of the project's analysed recordings not matched against `digest`, after `after` in that
    order: the order of the recordings' (account, project, created_at, id) index, so that a pass over a project reads
    it once. A call never matched reads as matched against no tracker (None): a project without trackers has none
    to match."""
    r = Recording
    query = select(r.created_at, r.id).where(
        r.account == account, r.project_id == project_id, r.trackers_digest.is_distinct_from(digest),
        exists().where(Analysis.recording_id == r.id))
    if after is not None:
        query = query.where(tuple_(r.created_at, r.id) > after)  # each value bound as its column's type
    return [(created_at, rid) for created_at, rid in session.execute(query.order_by(r.created_at, r.id).limit(limit))]


def hold_project(session: Session, account: str, project_id: int, *, settling: bool = False) -> None:
    """Order the transaction against the project's settling until it commits: one call's stamp (shared) against
    :func:`settle` (exclusive), so that a call stamped while the project settles is either seen by its check or
    unsettles it afterwards. PostgreSQL: an advisory lock; SQLite runs one writer at a time already."""
    if session.get_bind().dialect.name == "postgresql":
        lock = "pg_advisory_xact_lock" if settling else "pg_advisory_xact_lock_shared"
        session.execute(text(f"SELECT {lock}(hashtextextended(:name, 0))"),
                        {"name": f"trackers/{account}/{project_id}"})


def settle(session: Session, account: str, project_id: int, digest: str | None) -> bool:
    """Note that every analysed call of the project is matched against `digest`, if none is left to match."""
    hold_project(session, account, project_id, settling=True)
    if stale(session, account, project_id, digest, None, 1):
        return False  # analysed meanwhile against other trackers: the next pass matches it
    statement = upsert(session, TrackerSet).values(account=account, project_id=project_id, digest=digest or NONE)
    session.execute(statement.on_conflict_do_update(index_elements=[TrackerSet.account, TrackerSet.project_id],
                                                    set_={"digest": digest or NONE}))
    return True
