"""Storing the outcome of an analysis job, and reading the current analysis of a recording.

Completion: the transcript document goes to the blob store under a NEW key per version
(``accounts/<account>/recordings/<public_id>/transcript-v<n>.json``, beside the audio, so deleting or purging a
recording removes it with the audio); then ONE transaction checks the job's lease is still ours, upserts the
``analyses`` row (version n), moves the recording to ``completed`` with its counters, ends the job and writes the
``recording.analyzed`` webhook event. Readers see the old analysis or the new one, never a mix. After the commit the
previous transcript blob is deleted; if the transaction did not commit (lease lost), the new blob is.

Failure: the job ends ``failed`` and the recording ``failed`` with a reason a user can read, plus the webhook event,
in one transaction. A failed re-analysis of a completed recording keeps it ``completed`` with its old results
(stage ``reanalysis_failed``, the reason in ``status_reason``) and sends no event: nothing about it changed.

The analysis layer hands a result over as a ``Completion`` (analysis/stored.py makes it): plain JSON and
numbers, so that this module stores and sends them without reading an analysis itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.orm import Session

from callscope.catalog import analyses as analysis_rows
from callscope.catalog import jobs
from callscope.catalog import recordings as recording_rows
from callscope.catalog.jobs import Claimed
from callscope.catalog.tables import Analysis, Recording
from callscope.errors import NotFound
from callscope.resources import Project
from callscope.services import scope
from callscope.services.context import Context
from callscope.services.recordings import blob_prefix
from callscope.services.webhooks import enqueue_recording_analyzed
from callscope.statuses import RecordingStatus

log = structlog.get_logger()


def transcript_key(account: str, public_id: str, version: int) -> str:
    return f"{blob_prefix(account, public_id)}transcript-v{version}.json"


@dataclass(frozen=True)
class Completion:
    """A finished analysis as the catalog takes it: the two documents to store, the recording's counters, and the
    analysis sections of the ``recording.analyzed`` event (its read-outs once the recording is completed)."""

    results: dict[str, Any]  # the ``analyses`` row's document
    transcript: dict[str, Any]  # the transcript blob's document
    dialogues_count: int
    pauses_detected: int
    goals_evaluated: bool
    quality_score: float | None  # the mean goal score, None without goals
    readouts: dict[str, Any]


def _project_spec(ctx: Context, recording: Recording):
    project = scope.by_id(ctx, Project, recording.account, recording.project_id)
    return project.spec if project is not None else None


def _commit_completion(session: Session, claimed: Claimed, current: analysis_rows.Current, key: str,
                       completion: Completion, project, now: datetime) -> bool:
    """One transaction: the lease still ours, the analysis row, the recording's counters, the job's end, the event."""
    if not jobs.holds_lease(session, claimed):
        return False
    if not analysis_rows.store(session, claimed.recording_id, current.version, key, completion.results, now):
        return False  # written meanwhile by another owner: ours is stale
    jobs.move_recording(session, claimed.recording_id, claimed.kind, {
        "status": RecordingStatus.COMPLETED, "status_reason": None, "stage": "done", "progress": 100,
        "dialogues_count": completion.dialogues_count, "pauses_detected": completion.pauses_detected,
        "goals_evaluated": completion.goals_evaluated, "quality_score": completion.quality_score, "updated_at": now})
    if not jobs.finish(session, claimed, "done", now):
        raise jobs.IllegalTransition("lease lost inside the completion transaction")
    recording = recording_rows.by_id(session, claimed.recording_id)
    enqueue_recording_analyzed(session, recording=recording, project=project, readouts=completion.readouts,
                               now=now)
    return True


async def complete(ctx: Context, claimed: Claimed, completion: Completion) -> bool:
    """Store a finished analysis and complete its recording; False (nothing written) when the lease was lost."""
    current = await ctx.catalog.read(analysis_rows.current, claimed.recording_id)
    if current is None:
        return False  # the recording was deleted meanwhile (its job went with it)
    recording = current.recording
    key = transcript_key(recording.account, recording.public_id, current.version + 1)
    async with ctx.blobs.writer(key) as writer:
        await writer.write(json.dumps(completion.transcript, separators=(",", ":")).encode())
        await writer.commit()
    project = _project_spec(ctx, recording)
    try:
        done = await ctx.catalog.write(_commit_completion, claimed, current, key, completion, project, ctx.clock())
    except BaseException:
        await ctx.blobs.delete(key)
        raise
    if not done:
        await ctx.blobs.delete(key)
        log.warning("analysis_discarded_lease_lost", job_id=claimed.id, recording_id=claimed.recording_id)
        return False
    if current.transcript_key and current.transcript_key != key:
        await ctx.blobs.delete(current.transcript_key)
    log.info("recording_analyzed", recording_id=claimed.recording_id, public_id=recording.public_id,
             version=current.version + 1, kind=claimed.kind, attempts=claimed.attempts)
    return True


def _commit_failure(session: Session, claimed: Claimed, reason: str, project, now: datetime) -> bool:
    if not jobs.finish(session, claimed, "failed", now, reason):
        return False
    recording = recording_rows.by_id(session, claimed.recording_id)
    if recording is None:
        return True
    if claimed.kind == jobs.REANALYZE and recording.status == RecordingStatus.COMPLETED:
        jobs.move_recording(session, recording.id, claimed.kind, {
            "status": RecordingStatus.COMPLETED, "status_reason": reason, "stage": "reanalysis_failed", "progress": 100,
            "updated_at": now})
        return True
    jobs.move_recording(session, recording.id, claimed.kind, {
        "status": RecordingStatus.FAILED, "status_reason": reason, "stage": "failed", "progress": 0, "updated_at": now})
    recording = recording_rows.by_id(session, recording.id)
    enqueue_recording_analyzed(session, recording=recording, project=project, readouts=None, now=now)
    return True


async def fail(ctx: Context, claimed: Claimed, reason: str) -> bool:
    """End the job and fail its recording with ``reason`` (one line a user can read); False when the lease was lost."""
    reason = " ".join(reason.split())[:2000] or "analysis failed"
    current = await ctx.catalog.read(analysis_rows.current, claimed.recording_id)
    project = _project_spec(ctx, current.recording) if current else None
    done = await ctx.catalog.write(_commit_failure, claimed, reason, project, ctx.clock())
    if done:
        log.info("recording_failed", recording_id=claimed.recording_id, kind=claimed.kind, reason=reason)
    return done


# ----- reading --------------------------------------------------------------------------------

async def load_analysis(ctx: Context, recording: Recording,
                        transcript: bool = True) -> tuple[Analysis | None, dict | None]:
    """The recording's current analysis row and (with ``transcript``) its transcript document; (None, None) before
    the first analysis."""
    for _ in range(3):  # a re-analysis may replace the row (and delete the old blob) between the two reads
        analysis = await ctx.catalog.read(analysis_rows.get, recording.id)
        if analysis is None or not transcript:
            return analysis, None
        try:
            stream = await ctx.blobs.open(analysis.transcript_key)
        except NotFound:
            continue
        async with stream:
            data = b"".join([chunk async for chunk in stream])
        return analysis, json.loads(data)
    return analysis, None


# ----- re-analysis ----------------------------------------------------------------------------

async def reanalyze(ctx: Context, recording_ids: list[int]) -> list[int]:
    """Queue a re-analysis of each completed or failed recording; the ids that got one (others are skipped: not
    finished yet, already queued, or unknown). Results are replaced only when the new analysis completes."""
    return await ctx.catalog.write(jobs.enqueue_many, recording_ids, jobs.REANALYZE, ctx.clock())


async def reanalyze_project(ctx: Context, account: str, project_id: int,
                            statuses: tuple[str, ...] = (RecordingStatus.COMPLETED,)) -> list[int]:
    """Queue a re-analysis of the project's recordings in ``statuses`` (e.g. after its goals changed)."""
    ids = await ctx.catalog.read(recording_rows.ids_in_project, account, project_id, statuses)
    return await reanalyze(ctx, ids)
