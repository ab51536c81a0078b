"""Recordings and their tags (tables ``recordings``, ``recording_tags``): lookups in a caller's scope, the
filtered list, facets and counts, changes, deletion, and the reads of the background jobs.

Every query that finds recordings for a caller narrows them with :func:`in_scope`; every other query takes
the account (or a recording's own row id, which is unique across accounts).
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session

from callscope.catalog import jobs, tracker_stamps, trend_sums
from callscope.catalog.tables import Analysis, Recording, RecordingTag, Share
from callscope.identifiers import parse_uuid
from callscope.statuses import AudioRedaction, RecordingStatus

_LEGACY_ID = re.compile(r"^\d{1,18}$")


class Scope(NamedTuple):
    """What a caller may see: one account, and one project for a project-scoped key (None: every project)."""

    account: str
    project_id: int | None = None


@dataclass
class Found:
    recording: Recording
    tag_ids: list[int]


@dataclass
class Filters:
    project_id: int | None = None
    status: str | None = None
    operator_id: int | None = None
    language: str | None = None
    tag_ids: list[int] = field(default_factory=list)
    called_from: datetime | None = None
    called_to: datetime | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    min_duration_ms: int | None = None
    max_duration_ms: int | None = None
    q: str | None = None
    external_id: str | None = None
    analysed: bool = False  # only recordings whose analysis wrote their figures: those the trends count


def in_scope(query, scope: Scope, account=Recording.account, project_id=Recording.project_id):
    """The one scope rule of recordings: the account, and the project of a project-scoped key (`account` and
    `project_id`: the columns of a table of their sums, callscope/catalog/trends.py)."""
    query = query.where(account == scope.account)
    if scope.project_id is not None:
        query = query.where(project_id == scope.project_id)
    return query


def _where_ref(query, ref: str):
    """Narrow to the recording a path names: legacy integer id or public_id (None for neither)."""
    if _LEGACY_ID.match(ref):
        return query.where(Recording.id == int(ref))
    if (uid := parse_uuid(ref)) is not None:
        return query.where(Recording.public_id == str(uid))
    return None


def tag_ids_of(session: Session, recording_ids: list[int]) -> dict[int, list[int]]:
    """Tag ids of many recordings in one query (no N+1)."""
    out: dict[int, list[int]] = {rid: [] for rid in recording_ids}
    if recording_ids:
        rows = session.execute(select(RecordingTag.recording_id, RecordingTag.tag_id)
                               .where(RecordingTag.recording_id.in_(recording_ids))
                               .order_by(RecordingTag.tag_id))
        for recording_id, tag_id in rows:
            out[recording_id].append(tag_id)
    return out


def _found(session: Session, recording: Recording | None) -> Found | None:
    return Found(recording, tag_ids_of(session, [recording.id])[recording.id]) if recording is not None else None


def _by_ref(session: Session, scope: Scope, ref: str, *, lock: bool = False) -> Recording | None:
    query = _where_ref(select(Recording), ref)
    if query is None:
        return None
    query = in_scope(query, scope)
    return session.scalars(query.with_for_update() if lock else query).first()


def find(session: Session, scope: Scope, ref: str) -> Found | None:
    """A recording by public_id or legacy id, within the scope."""
    return _found(session, _by_ref(session, scope, ref))


def find_by_external_id(session: Session, scope: Scope, project_id: int, external_id: str) -> Found | None:
    """The recording an idempotent upload repeats: (account, project_id, external_id) is unique."""
    return _found(session, session.scalars(in_scope(select(Recording), scope).where(
        Recording.project_id == project_id, Recording.external_id == external_id)).first())


def conversation_of(session: Session, scope: Scope, public_id: str) -> str | None:
    """The conversation of a recording in the scope; None for one outside it, as for one that does not exist."""
    if parse_uuid(public_id) is None:
        return None
    return session.scalar(in_scope(select(Recording.conversation_id), scope).where(Recording.public_id == public_id))


def ids_of(session: Session, account: str, refs: tuple[str, ...]) -> tuple[list[int], list[str]]:
    """Row ids of the recordings that public ids / legacy ids name in the account, and the refs not found."""
    found, missing = [], []
    for ref in refs:
        query = _where_ref(select(Recording.id), ref)
        rid = session.scalar(in_scope(query, Scope(account))) if query is not None else None
        (found.append(rid) if rid is not None else missing.append(ref))
    return found, missing


def by_blob(session: Session, key: str) -> Recording | None:
    """The recording whose audio is the blob `key` (blob keys start with the account)."""
    return session.scalars(select(Recording).where(Recording.blob_key == key)).first()


def by_id(session: Session, recording_id: int) -> Recording | None:
    """The row as stored now (also after UPDATE statements earlier in the same transaction)."""
    return session.get(Recording, recording_id, populate_existing=True)


# ----- listing -----------------------------------------------------------------------------------

def filtered(scope: Scope, f: Filters):
    """The scope's recordings that pass the filters (the list's query; the trends add up the same rows)."""
    query = in_scope(select(Recording), scope)
    if f.project_id is not None:
        query = query.where(Recording.project_id == f.project_id)
    for column, value in ((Recording.status, f.status), (Recording.operator_id, f.operator_id),
                          (Recording.language, f.language), (Recording.external_id, f.external_id)):
        if value is not None:
            query = query.where(column == value)
    for column, low, high in ((Recording.called_at, f.called_from, f.called_to),
                              (Recording.created_at, f.created_from, f.created_to),
                              (Recording.duration_ms, f.min_duration_ms, f.max_duration_ms)):
        if low is not None:
            query = query.where(column >= low)
        if high is not None:
            query = query.where(column <= high)
    if f.analysed:
        query = query.where(Recording.pause_compliance.is_not(None))
    if f.q:
        pattern = "%" + f.q.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        query = query.where(func.lower(Recording.name).like(pattern, escape="\\"))
    if f.tag_ids:  # any of the tags; IN (subquery) lets the planner start from the tag index
        query = query.where(Recording.id.in_(select(RecordingTag.recording_id)
                                             .where(RecordingTag.tag_id.in_(f.tag_ids))))
    return query


def page(session: Session, scope: Scope, f: Filters, offset: int, limit: int) -> tuple[list[Found], int]:
    """One page of the filtered list, newest first, and the total count."""
    query = filtered(scope, f)
    total = session.scalar(query.with_only_columns(func.count(), maintain_column_froms=True))
    rows = list(session.scalars(query.order_by(Recording.created_at.desc(), Recording.id.desc())
                                .offset(offset).limit(limit)))
    tags = tag_ids_of(session, [r.id for r in rows])
    return [Found(r, tags[r.id]) for r in rows], total


def facets(session: Session, scope: Scope) -> dict[str, Any]:
    """Languages, status counts and the ranges of dates and durations among the scope's recordings."""
    base = in_scope(select(Recording), scope).subquery()
    languages = sorted(session.scalars(select(base.c.language).distinct()))
    statuses: dict[str, int] = dict(
        session.execute(select(base.c.status, func.count()).group_by(base.c.status)).all())
    called = session.execute(select(func.min(base.c.called_at), func.max(base.c.called_at))).one()
    created = session.execute(select(func.min(base.c.created_at), func.max(base.c.created_at))).one()
    duration = session.execute(select(func.min(base.c.duration_ms), func.max(base.c.duration_ms))).one()
    return {"languages": languages, "status_counts": statuses, "called_at": called, "created_at": created,
            "duration_ms": duration}


def count_per_project(session: Session, account: str, project_ids: list[int]) -> dict[int, int]:
    if not project_ids:
        return {}
    return dict(session.execute(select(Recording.project_id, func.count())
                                .where(Recording.account == account, Recording.project_id.in_(project_ids))
                                .group_by(Recording.project_id)).all())


def count_per_tag(session: Session, account: str, tag_ids: list[int]) -> dict[int, int]:
    if not tag_ids:
        return {}
    return dict(session.execute(select(RecordingTag.tag_id, func.count())
                                .join(Recording, Recording.id == RecordingTag.recording_id)
                                .where(Recording.account == account, RecordingTag.tag_id.in_(tag_ids))
                                .group_by(RecordingTag.tag_id)).all())


def ids_in_project(session: Session, account: str, project_id: int, statuses: tuple[str, ...]) -> list[int]:
    return list(session.scalars(select(Recording.id).where(
        Recording.account == account, Recording.project_id == project_id, Recording.status.in_(statuses))
        .order_by(Recording.id)))


def of_project(session: Session, account: str, project_id: int) -> list[Recording]:
    return list(session.scalars(select(Recording).where(Recording.account == account,
                                                         Recording.project_id == project_id)))


def quality_scores(session: Session, account: str, project_id: int) -> list[float]:
    """Quality scores of the project's completed recordings that have one."""
    return list(session.scalars(select(Recording.quality_score).where(
        Recording.account == account, Recording.project_id == project_id, Recording.status == RecordingStatus.COMPLETED,
        Recording.quality_score.is_not(None))))


def created_before(session: Session, account: str, project_id: int, cutoff: datetime, limit: int) -> list[Recording]:
    return list(session.scalars(
        select(Recording).where(Recording.account == account, Recording.project_id == project_id,
                                Recording.created_at < cutoff).order_by(Recording.id).limit(limit)))


def audio_created_before(session: Session, account: str, project_id: int, cutoff: datetime,
                         limit: int) -> list[tuple[int, str, str | None]]:
    """(row id, audio blob key, kept unredacted audio's key) of the project's recordings older than `cutoff` that
    still have audio."""
    return [(row[0], str(row[1]), row[2]) for row in session.execute(
        select(Recording.id, Recording.blob_key, Recording.original_blob_key).where(
            Recording.account == account, Recording.project_id == project_id, Recording.created_at < cutoff,
            Recording.blob_key.is_not(None)).order_by(Recording.id).limit(limit))]


def blob_keys(session: Session) -> set[str]:
    """Every blob key a recording or an analysis points at (the orphan sweep keeps these)."""
    audio = set(session.scalars(select(Recording.blob_key).where(Recording.blob_key.is_not(None))))
    kept = set(session.scalars(select(Recording.original_blob_key).where(Recording.original_blob_key.is_not(None))))
    return audio | kept | set(session.scalars(select(Analysis.transcript_key)))


# ----- changes ----------------------------------------------------------------------------------

def insert(session: Session, row: Recording, tag_ids: list[int], now: datetime) -> Found:
    """A new recording, its tags and its analysis job, in the caller's transaction."""
    session.add(row)
    session.flush()
    session.add_all(RecordingTag(recording_id=row.id, tag_id=t) for t in tag_ids)
    jobs.enqueue(session, row.id, jobs.ANALYZE, now)
    return Found(row, tag_ids)


def change(session: Session, scope: Scope, ref: str, changes: dict[str, Any], tag_ids: list[int] | None,
           moved: bool, now: datetime) -> Found | None:
    """Write `changes` onto the recording; replace its tags with `tag_ids` (None: keep them, unless the
    recording `moved` to another project, whose tags they are not). The row is locked as it is read: a
    recording deleted meanwhile is not found (PostgreSQL; SQLite's write transactions run one at a time)."""
    recording = _by_ref(session, scope, ref, lock=True)
    if recording is None:
        return None
    regroups = changes.keys() & {"project_id", "operator_id"}  # what the trends sum it under
    with trend_sums.regrouping(session, [recording.id]) if regroups else nullcontext():
        for key, value in changes.items():
            setattr(recording, key, value)
        recording.updated_at = now
    if moved:  # the other project's trackers: matched against the new project's by the tracker pass
        tracker_stamps.unmatched(session, [recording.id])
    if moved or tag_ids is not None:
        session.execute(delete(RecordingTag).where(RecordingTag.recording_id == recording.id))
    if tag_ids is not None:
        session.add_all(RecordingTag(recording_id=recording.id, tag_id=t) for t in tag_ids)
    session.flush()
    return _found(session, recording)


def delete_rows(session: Session, account: str, recording_ids: list[int]) -> None:
    """Delete recordings of the account with their tags; shares go with a conversation's last recording."""
    conversations = set(session.scalars(select(Recording.conversation_id).where(
        Recording.account == account, Recording.id.in_(recording_ids))))
    owned = select(Recording.id).where(Recording.account == account, Recording.id.in_(recording_ids))
    trend_sums.withdraw(session, session.scalars(owned))
    session.execute(delete(RecordingTag).where(RecordingTag.recording_id.in_(owned)))
    session.execute(delete(Recording).where(Recording.account == account, Recording.id.in_(recording_ids)))
    still_used = set(session.scalars(select(Recording.conversation_id).where(
        Recording.account == account, Recording.conversation_id.in_(conversations))))
    if orphaned := conversations - still_used:
        session.execute(delete(Share).where(Share.account == account, Share.conversation_id.in_(orphaned)))


def untag(session: Session, account: str, tag_id: int) -> None:
    """Take a (deleted) tag off every recording of the account."""
    session.execute(delete(RecordingTag).where(
        RecordingTag.tag_id == tag_id,
        RecordingTag.recording_id.in_(select(Recording.id).where(Recording.account == account))))


def detach_audio(session: Session, recording_id: int, blob_key: str, now: datetime) -> bool:
    """Forget the audio of one recording, its kept unredacted audio included (compare-and-set on its key); whether
    this call did it."""
    result = session.execute(update(Recording).where(Recording.id == recording_id, Recording.blob_key == blob_key)
                             .values(blob_key=None, original_blob_key=None, updated_at=now))
    return result.rowcount == 1


def replace_audio(session: Session, recording_id: int, key: str, audio_format: str, size_bytes: int,
                  original_key: str | None, now: datetime) -> None:
    """The recording's audio becomes its redacted copy ``key`` (served from now on); ``original_key``: the
    unredacted audio kept beside it, or None."""
    session.execute(update(Recording).where(Recording.id == recording_id).values(
        blob_key=key, audio_format=audio_format, size_bytes=size_bytes, original_blob_key=original_key,
        audio_redaction=AudioRedaction.DONE, updated_at=now))


def mark_audio_unredacted(session: Session, recording_id: int, now: datetime) -> None:
    """The recording's audio is to be redacted: not served until the redacted copy replaces it (a copy already
    redacted stays served: its re-analysis reads the kept original or the copy, and serves a new copy)."""
    session.execute(update(Recording).where(Recording.id == recording_id,
                                            or_(Recording.audio_redaction.is_(None),
                                                Recording.audio_redaction != AudioRedaction.DONE))
                    .values(audio_redaction=AudioRedaction.PENDING, updated_at=now))
