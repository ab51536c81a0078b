"""Retention: the background job that forgets old recordings, run by `callscope serve` (embedded, through
Runtime.start) and by the Kopf operator (a timer on Projects) from this one implementation.

A project with `retentionDays` loses its recordings older than that (by created_at) completely, as
`DELETE /recordings/{id}` would; a project without it keeps them but loses their audio after the default audio
retention (the row is updated before the blob is deleted). Both rules are idempotent. A failed pass is the
condition `Degraded=True` until one succeeds. The rules in full: docs/operations.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import structlog

from callscope.catalog import recordings as recording_rows
from callscope.resources import Account, Condition, Project
from callscope.services.context import Context
from callscope.services.recordings import purge
from callscope.store.interface import ObjectNotFound, StaleResourceVersion

log = structlog.get_logger()

BATCH = 500  # recordings per catalog round trip; a long backlog is worked off in several batches


@dataclass
class RetentionResult:
    deleted: int = 0  # recordings removed completely (rule 1)
    audio_removed: int = 0  # recordings that lost their audio (rule 2)
    failed: dict[tuple[str, str], str] = field(default_factory=dict)  # (account, project) -> error


def audio_retention_days(ctx: Context, account: str) -> int:
    """Days audio is kept in projects without retention_days: the Account's setting, else the default."""
    obj = ctx.store.cached_get(Account, account, account)
    if obj is not None and obj.spec.audio_retention_days:
        return obj.spec.audio_retention_days
    return ctx.settings.default_audio_retention_days


async def purge_project(ctx: Context, project: Project, now: datetime) -> tuple[int, int]:
    """Apply the retention rules to one project: (recordings deleted, recordings whose audio was removed)."""
    account, project_id = project.namespace, project.status.id
    if project_id is None or project.metadata.deletion_timestamp is not None:
        return 0, 0  # no id yet: it has no recordings; being deleted: the finalizer removes everything
    deleted = audio_removed = 0
    if project.spec.retention_days:
        cutoff = now - timedelta(days=project.spec.retention_days)
        while batch := await ctx.catalog.read(recording_rows.created_before, account, project_id, cutoff, BATCH):
            await purge(ctx, account, batch)
            deleted += len(batch)
            if len(batch) < BATCH:
                break
    else:
        cutoff = now - timedelta(days=audio_retention_days(ctx, account))
        while audio := await ctx.catalog.read(recording_rows.audio_created_before, account, project_id, cutoff,
                                              BATCH):
            for recording_id, blob_key, original_key in audio:
                if await ctx.catalog.write(recording_rows.detach_audio, recording_id, blob_key, now):
                    for key in filter(None, (blob_key, original_key)):
                        await ctx.blobs.delete(key)
                    audio_removed += 1
            if len(audio) < BATCH:
                break
    if deleted or audio_removed:
        log.info("retention_applied", account=account, project=project.name, project_id=project_id,
                 recordings_deleted=deleted, audio_removed=audio_removed)
    return deleted, audio_removed


async def mark_degraded(ctx: Context, project: Project, error: str | None) -> None:
    """Record the outcome of a retention pass as the Degraded condition, writing only on a change."""
    current = ctx.store.cached_get(Project, project.namespace, project.name) or project
    old = next((c for c in current.status.conditions if c.type == "Degraded"), None)
    if error is None:
        if old is None or old.status == "False":
            return
        new = Condition(type="Degraded", status="False", reason="RetentionSucceeded", message="")
    else:
        new = Condition(type="Degraded", status="True", reason="RetentionFailed", message=error[:1000])
        if old is not None and (old.status, old.reason, old.message) == (new.status, new.reason, new.message):
            return
    draft = current.model_copy(deep=True)
    draft.status.conditions = [c for c in draft.status.conditions if c.type != "Degraded"] + [
        new.model_copy(update={"last_transition_time": ctx.clock()})]
    try:
        await ctx.store.update_status(draft)
    except (StaleResourceVersion, ObjectNotFound):
        pass  # the next pass records it
    except Exception:
        log.exception("degraded_condition_not_written", account=project.namespace, project=project.name)


async def purge_expired(ctx: Context, now: datetime | None = None) -> RetentionResult:
    """One retention pass over every project of every account; a failing project does not stop the others."""
    now = now or ctx.clock()
    result = RetentionResult()
    for project in list(ctx.store.cached_list(Project)):
        try:
            deleted, audio_removed = await purge_project(ctx, project, now)
        except Exception as exc:
            log.exception("retention_failed", account=project.namespace, project=project.name)
            result.failed[(project.namespace, project.name)] = error = str(exc) or type(exc).__name__
            await mark_degraded(ctx, project, error)
            continue
        await mark_degraded(ctx, project, None)
        result.deleted += deleted
        result.audio_removed += audio_removed
    return result
