"""Recordings in the catalog: lookup by public or legacy id within the key's scope, listing with filters,
changes, and permanent deletion (audio, results, shares, metadata)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any

import structlog

from callscope.catalog import recordings as recording_rows
from callscope.catalog.recordings import Filters, Found
from callscope.catalog.tables import Recording
from callscope.errors import Forbidden, NotFound, ValidationFailed
from callscope.resources import Operator, Project, Tag
from callscope.services import scope
from callscope.services.context import Context, Principal
from callscope.statuses import RecordingStatus

log = structlog.get_logger()

STATUSES = tuple(RecordingStatus)


def blob_prefix(account: str, public_id: str) -> str:
    return f"accounts/{account}/recordings/{public_id}/"


def audio_key(account: str, public_id: str) -> str:
    return blob_prefix(account, public_id) + "audio"


async def get_recording(ctx: Context, principal: Principal, ref: str) -> Found:
    """A recording by public_id or legacy integer id; 404 when absent or outside the key's scope."""
    found = await ctx.catalog.read(recording_rows.find, principal.scope, ref)
    if found is None:
        raise NotFound()
    return found


# ----- listing -----------------------------------------------------------------------------------

def whole_days(first: date | None, last: date | None) -> tuple[datetime | None, datetime | None]:
    """The instants a range of UTC days runs between, both days included (the pages' date filters)."""
    return (datetime.combine(first, time.min, UTC) if first else None,
            datetime.combine(last, time.max, UTC) if last else None)


def filters_visible(ctx: Context, principal: Principal, f: Filters) -> bool:
    """The list's rule on what its filters may name (the trends keep it too): another project than a project-scoped
    key's is 403; False where nothing could be listed."""
    if f.project_id is not None and principal.scoped and f.project_id != principal.project_id:
        raise Forbidden(scope.PROJECT_MISMATCH)
    # an operator the key cannot see answered none of its recordings, as far as the key can tell
    return f.operator_id is None or scope.visible_operator_id(ctx, principal, f.operator_id) is not None


async def list_recordings(ctx: Context, principal: Principal, f: Filters, offset: int, limit: int):
    if not filters_visible(ctx, principal, f):
        return [], 0
    return await ctx.catalog.read(recording_rows.page, principal.scope, f, offset, limit)


def visible_projects(ctx: Context, principal: Principal) -> list[Project]:
    """The projects a caller may filter recordings on, by name."""
    return sorted((p for p in scope.all_of(ctx, Project, principal.account)
                   if scope.project_visible(principal, p.name)), key=lambda p: p.spec.name.casefold())


def visible_operators(ctx: Context, principal: Principal) -> list[Operator]:
    """The operators a caller may filter recordings on, by name."""
    return sorted((o for o in scope.all_of(ctx, Operator, principal.account) if scope.operator_visible(principal, o)),
                  key=lambda o: o.spec.name.casefold())


async def filter_values(ctx: Context, principal: Principal) -> dict[str, Any]:
    """What a client can filter the list on, within the key's scope."""
    facets = await ctx.catalog.read(recording_rows.facets, principal.scope)
    projects = visible_projects(ctx, principal)
    project_names = {p.name for p in projects}
    return {
        **facets,
        "projects": projects,
        "operators": visible_operators(ctx, principal),
        "tags": sorted((t for t in scope.all_of(ctx, Tag, principal.account) if t.spec.project in project_names),
                       key=lambda t: t.spec.name.casefold()),
    }


# ----- counts for other resources ---------------------------------------------------------------

async def recordings_per_project(ctx: Context, account: str, project_ids: list[int]) -> dict[int, int]:
    return await ctx.catalog.read(recording_rows.count_per_project, account, project_ids)


async def recordings_per_tag(ctx: Context, account: str, tag_ids: list[int]) -> dict[int, int]:
    return await ctx.catalog.read(recording_rows.count_per_tag, account, tag_ids)


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


async def update_recording(ctx: Context, principal: Principal, ref: str, fields: dict[str, Any]) -> Found:
    current = await get_recording(ctx, principal, ref)
    changes: dict[str, Any] = {}
    project = scope.by_id(ctx, Project, principal.account, current.recording.project_id)
    moved = False
    if "project_id" in fields and fields["project_id"] != current.recording.project_id:
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
        changes["processing_restricted"] = fields["processing_restricted"]
    tag_ids = None
    if "tag_ids" in fields:
        if project is None:
            raise NotFound("Project not found")
        tag_ids = check_tags(ctx, principal.account, project, fields["tag_ids"] or [])
    found = await ctx.catalog.write(recording_rows.change, principal.scope, ref, changes, tag_ids, moved, ctx.clock())
    if found is None:
        raise NotFound()
    return found


async def purge(ctx: Context, account: str, recordings: list[Recording]) -> None:
    """Remove the rows first (the recording is gone for every reader at once), then the audio and
    result blobs; a blob left by a crash in between is removed by the orphan sweep."""
    if not recordings:
        return
    await ctx.catalog.write(recording_rows.delete_rows, account, [r.id for r in recordings])
    for recording in recordings:
        await ctx.blobs.delete_prefix(blob_prefix(account, recording.public_id))


async def delete_recording(ctx: Context, principal: Principal, ref: str) -> None:
    found = await get_recording(ctx, principal, ref)
    await purge(ctx, principal.account, [found.recording])
    log.info("recording_deleted", account=principal.account, public_id=found.recording.public_id)


async def delete_project_recordings(ctx: Context, account: str, project_id: int) -> None:
    await purge(ctx, account, await ctx.catalog.read(recording_rows.of_project, account, project_id))


async def remove_tag_everywhere(ctx: Context, account: str, tag_id: int) -> None:
    await ctx.catalog.write(recording_rows.untag, account, tag_id)

