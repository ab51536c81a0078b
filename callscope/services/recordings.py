"""Recordings in the catalog: lookup by public or legacy id within the key's scope, listing with filters,
changes, and permanent deletion (audio, results, shares, metadata)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session

from callscope.catalog.tables import Recording, RecordingTag, Share
from callscope.errors import Forbidden, NotFound, ValidationFailed
from callscope.identifiers import parse_uuid
from callscope.resources import Operator, Project, Tag
from callscope.services import scope
from callscope.services.context import Context, Principal

log = structlog.get_logger()

STATUSES = ("pending", "processing", "completed", "failed")
_DIGITS = re.compile(r"^\d{1,18}$")


def blob_prefix(account: str, public_id: str) -> str:
    return f"accounts/{account}/recordings/{public_id}/"


def audio_key(account: str, public_id: str) -> str:
    return blob_prefix(account, public_id) + "audio"


def _by_ref(session: Session, principal: Principal, ref: str) -> Recording | None:
    query = select(Recording)
    if _DIGITS.match(ref):
        query = query.where(Recording.id == int(ref))
    elif (uid := parse_uuid(ref)) is not None:
        query = query.where(Recording.public_id == str(uid))
    else:
        return None
    return session.scalars(scope.recordings_in_scope(query, principal)).first()


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


@dataclass
class Found:
    recording: Recording
    tag_ids: list[int]


def _load(catalog, principal: Principal, ref: str) -> Found:
    with catalog.session() as session:
        recording = _by_ref(session, principal, ref)
        if recording is None:
            raise NotFound()
        return Found(recording, tag_ids_of(session, [recording.id])[recording.id])


async def get_recording(ctx: Context, principal: Principal, ref: str) -> Found:
    """A recording by public_id or legacy integer id; 404 when absent or outside the key's scope."""
    return await ctx.catalog.run(_load, ctx.catalog, principal, ref)


# ----- listing -----------------------------------------------------------------------------------

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


def _filtered(principal: Principal, f: Filters):
    query = scope.recordings_in_scope(select(Recording), principal)
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
    if f.q:
        pattern = "%" + f.q.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        query = query.where(func.lower(Recording.name).like(pattern, escape="\\"))
    if f.tag_ids:  # any of the tags; IN (subquery) lets the planner start from the tag index
        query = query.where(Recording.id.in_(select(RecordingTag.recording_id)
                                             .where(RecordingTag.tag_id.in_(f.tag_ids))))
    return query


def _list(catalog, principal: Principal, f: Filters, offset: int, limit: int) -> tuple[list[Found], int]:
    query = _filtered(principal, f)
    with catalog.session() as session:
        total = session.scalar(query.with_only_columns(func.count(), maintain_column_froms=True))
        rows = list(session.scalars(query.order_by(Recording.created_at.desc(), Recording.id.desc())
                                    .offset(offset).limit(limit)))
        tags = tag_ids_of(session, [r.id for r in rows])
    return [Found(r, tags[r.id]) for r in rows], total


async def list_recordings(ctx: Context, principal: Principal, f: Filters, offset: int, limit: int):
    if f.status is not None and f.status not in STATUSES:
        raise ValidationFailed(f"status must be one of: {', '.join(STATUSES)}")
    if f.project_id is not None and principal.scoped and f.project_id != principal.project_id:
        raise Forbidden(scope.PROJECT_MISMATCH)
    return await ctx.catalog.run(_list, ctx.catalog, principal, f, offset, limit)


def _facets(catalog, principal: Principal) -> dict[str, Any]:
    base = scope.recordings_in_scope(select(Recording), principal).subquery()
    with catalog.session() as session:
        languages = sorted(session.scalars(select(base.c.language).distinct()))
        statuses = dict(session.execute(select(base.c.status, func.count()).group_by(base.c.status)).all())
        called = session.execute(select(func.min(base.c.called_at), func.max(base.c.called_at))).one()
        created = session.execute(select(func.min(base.c.created_at), func.max(base.c.created_at))).one()
        duration = session.execute(select(func.min(base.c.duration_ms), func.max(base.c.duration_ms))).one()
    return {"languages": languages, "status_counts": statuses, "called_at": called, "created_at": created,
            "duration_ms": duration}


async def filter_values(ctx: Context, principal: Principal) -> dict[str, Any]:
    """What a client can filter the list on, within the key's scope."""
    facets = await ctx.catalog.run(_facets, ctx.catalog, principal)
    projects = [p for p in scope.all_of(ctx, Project, principal.account)
                if not principal.scoped or p.name == principal.project]
    project_names = {p.name for p in projects}
    return {
        **facets,
        "projects": sorted(projects, key=lambda p: p.spec.name.casefold()),
        "operators": sorted((o for o in scope.all_of(ctx, Operator, principal.account)
                             if scope.operator_visible(principal, o)), key=lambda o: o.spec.name.casefold()),
        "tags": sorted((t for t in scope.all_of(ctx, Tag, principal.account) if t.spec.project in project_names),
                       key=lambda t: t.spec.name.casefold()),
    }


# ----- counts for other resources ---------------------------------------------------------------

def _counts(catalog, account: str, column, ids: list[int], join_tags: bool) -> dict[int, int]:
    if not ids:
        return {}
    with catalog.session() as session:
        if join_tags:
            query = (select(RecordingTag.tag_id, func.count()).join(Recording, Recording.id == RecordingTag.recording_id)
                     .where(Recording.account == account, RecordingTag.tag_id.in_(ids)).group_by(RecordingTag.tag_id))
        else:
            query = (select(column, func.count()).where(Recording.account == account, column.in_(ids))
                     .group_by(column))
        return dict(session.execute(query).all())


async def recordings_per_project(ctx: Context, account: str, project_ids: list[int]) -> dict[int, int]:
    return await ctx.catalog.run(_counts, ctx.catalog, account, Recording.project_id, project_ids, False)


async def recordings_per_tag(ctx: Context, account: str, tag_ids: list[int]) -> dict[int, int]:
    return await ctx.catalog.run(_counts, ctx.catalog, account, None, tag_ids, True)


# ----- changes ----------------------------------------------------------------------------------

def check_tags(ctx: Context, account: str, project: Project, tag_ids: list[int]) -> list[int]:
    bad = [t for t in tag_ids if (tag := scope.by_id(ctx, Tag, account, t)) is None or tag.spec.project != project.name]
    if bad:
        raise ValidationFailed(f"tag_ids {', '.join(map(str, bad))} are not tags of project {project.status.id}")
    return sorted(set(tag_ids))


def check_operator(ctx: Context, principal: Principal, operator_id: int | None) -> int | None:
    """An operator the key can see (a project-scoped key: one linked to its project); any other id gets the
    same answer as one that does not exist."""
    if operator_id is not None:
        operator = scope.by_id(ctx, Operator, principal.account, operator_id)
        if operator is None or not scope.operator_visible(principal, operator):
            raise ValidationFailed("operator_id is not an operator this API key can see")
    return operator_id


def _apply_patch(catalog, principal: Principal, ref: str, changes: dict[str, Any], tag_ids: list[int] | None,
                 moved: bool, now: datetime) -> Found:
    with catalog.session(write=True) as session:
        recording = _by_ref(session, principal, ref)
        if recording is None:
            raise NotFound()
        for key, value in changes.items():
            setattr(recording, key, value)
        recording.updated_at = now
        if moved and tag_ids is None:  # tags belong to projects: a move drops the old project's tags
            session.execute(delete(RecordingTag).where(RecordingTag.recording_id == recording.id))
        if tag_ids is not None:
            session.execute(delete(RecordingTag).where(RecordingTag.recording_id == recording.id))
            session.add_all(RecordingTag(recording_id=recording.id, tag_id=t) for t in tag_ids)
        session.flush()
        return Found(recording, tag_ids_of(session, [recording.id])[recording.id])


async def update_recording(ctx: Context, principal: Principal, ref: str, fields: dict[str, Any]) -> Found:
    current = await get_recording(ctx, principal, ref)
    changes: dict[str, Any] = {}
    project = scope.by_id(ctx, Project, principal.account, current.recording.project_id)
    moved = False
    if "project_id" in fields and fields["project_id"] != current.recording.project_id:
        if fields["project_id"] is None:
            raise ValidationFailed("project_id can't be null")
        if principal.scoped:
            raise Forbidden(scope.PROJECT_MISMATCH)
        project = scope.by_id(ctx, Project, principal.account, fields["project_id"])
        if project is None:
            raise NotFound("Project not found")
        changes["project_id"], moved = fields["project_id"], True
    if "name" in fields:
        name = (fields["name"] or "").strip()
        if not name:
            raise ValidationFailed("Name can't be blank")
        changes["name"] = name[:255]
    if "operator_id" in fields:
        changes["operator_id"] = check_operator(ctx, principal, fields["operator_id"])
    if "called_at" in fields:
        changes["called_at"] = fields["called_at"]
    if "processing_restricted" in fields:
        if fields["processing_restricted"] is None:
            raise ValidationFailed("processing_restricted must be a boolean")
        changes["processing_restricted"] = fields["processing_restricted"]
    tag_ids = None
    if "tag_ids" in fields:
        if project is None:
            raise NotFound("Project not found")
        tag_ids = check_tags(ctx, principal.account, project, fields["tag_ids"] or [])
    return await ctx.catalog.run(_apply_patch, ctx.catalog, principal, ref, changes, tag_ids, moved, ctx.clock())


def _delete_rows(catalog, account: str, recording_ids: list[int]) -> None:
    with catalog.session(write=True) as session:
        conversations = set(session.scalars(select(Recording.conversation_id).where(Recording.id.in_(recording_ids))))
        session.execute(delete(RecordingTag).where(RecordingTag.recording_id.in_(recording_ids)))
        session.execute(delete(Recording).where(Recording.account == account, Recording.id.in_(recording_ids)))
        still_used = set(session.scalars(select(Recording.conversation_id)
                                         .where(Recording.conversation_id.in_(conversations))))
        orphaned = conversations - still_used
        if orphaned:  # shares belong to the conversation; they go with its last recording
            session.execute(delete(Share).where(Share.conversation_id.in_(orphaned)))


async def purge(ctx: Context, account: str, recordings: list[Recording]) -> None:
    """Remove the rows first (the recording is gone for every reader at once), then the audio and
    result blobs; a blob left by a crash in between is removed by the orphan sweep."""
    if not recordings:
        return
    await ctx.catalog.run(_delete_rows, ctx.catalog, account, [r.id for r in recordings])
    for recording in recordings:
        await ctx.blobs.delete_prefix(blob_prefix(account, recording.public_id))


async def delete_recording(ctx: Context, principal: Principal, ref: str) -> None:
    found = await get_recording(ctx, principal, ref)
    await purge(ctx, principal.account, [found.recording])
    log.info("recording_deleted", account=principal.account, public_id=found.recording.public_id)


def _project_recordings(catalog, account: str, project_id: int) -> list[Recording]:
    with catalog.session() as session:
        return list(session.scalars(select(Recording).where(Recording.account == account,
                                                             Recording.project_id == project_id)))


async def delete_project_recordings(ctx: Context, account: str, project_id: int) -> None:
    await purge(ctx, account, await ctx.catalog.run(_project_recordings, ctx.catalog, account, project_id))


def _untag(catalog, account: str, tag_id: int) -> None:
    with catalog.session(write=True) as session:
        session.execute(delete(RecordingTag).where(
            RecordingTag.tag_id == tag_id,
            RecordingTag.recording_id.in_(select(Recording.id).where(Recording.account == account))))


async def remove_tag_everywhere(ctx: Context, account: str, tag_id: int) -> None:
    await ctx.catalog.run(_untag, ctx.catalog, account, tag_id)

