"""Storing the outcome of an analysis job: a completed analysis, or a failure a user can read.

Completion: the transcript document goes to the blob store under a NEW key per version
(``accounts/<account>/recordings/<public_id>/transcript-v<n>.json``, beside the audio, so deleting or purging a
recording removes it with the audio); then ONE transaction checks the job's lease is still ours, upserts the
``analyses`` row (version n), replaces the call's search entries (its segments, with their vectors embedded before
the transaction) and the moments where it matched its project's trackers (callscope/services/trackers.py), moves
the recording to ``completed`` with its counters, ends the job and writes the ``recording.analyzed`` webhook event.
Readers see the old analysis or the new one, never a mix. After the commit the previous transcript blob is deleted;
if the transaction did not commit (lease lost), the new blob is.

Audio redaction: the work stored the redacted copy of the audio under a key of its own; the same transaction makes
it the recording's audio (``audio_redaction`` done: served from then on), and after the commit the audio it
replaced is deleted, unless CALLSCOPE_REDACTION_KEEP_ORIGINAL_AUDIO keeps the unredacted audio (never served). A
crash between the commit and the delete leaves the replaced audio unreferenced, never served, and the orphan sweep
deletes it; a crash before the commit leaves the recording unserved (``pending``) and its job to be taken again.

Failure: the job ends ``failed`` and the recording ``failed``, plus the webhook event, in one transaction. A failed
re-analysis of a completed recording keeps it ``completed`` with its old results (stage ``reanalysis_failed``, the
reason in ``status_reason``) and sends no event: nothing about it changed.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from datetime import datetime

import structlog
from sqlalchemy.orm import Session

from callscope.analysis.stored import Completion
from callscope.catalog import analyses as analysis_rows
from callscope.catalog import jobs, search, trackers, trend_sums
from callscope.catalog import recordings as recording_rows
from callscope.catalog.jobs import Claimed
from callscope.catalog.tables import Recording
from callscope.metrics import (
    AUDIO_ANALYZED,
    JOB_ATTEMPTS,
    JOBS_COMPLETED,
    JOBS_FAILED,
    LEASE_LOSSES,
    RECORDINGS_ANALYZED,
    REDACTIONS,
    UPLOAD_TO_COMPLETED,
    account_label,
)
from callscope.resources import Project
from callscope.services import draft_transcripts, scope, search_index
from callscope.services.context import Context
from callscope.services.recordings import blob_prefix
from callscope.services.trackers import Prepared, of_project
from callscope.services.webhooks import enqueue_recording_analyzed
from callscope.statuses import AudioRedaction, RecordingStatus
from callscope.workers import scorecards

log = structlog.get_logger()


def transcript_key(account: str, public_id: str, version: int) -> str:
    return f"{blob_prefix(account, public_id)}transcript-v{version}.json"


def redacted_audio_key(account: str, public_id: str, job_id: int) -> str:
    return f"{blob_prefix(account, public_id)}audio-redacted-{job_id}.flac"


@dataclass(frozen=True)
class RedactedAudio:
    key: str
    size_bytes: int
    keep_original: bool  # CALLSCOPE_REDACTION_KEEP_ORIGINAL_AUDIO


def _swap_audio(session: Session, recording_id: int, audio: RedactedAudio, now: datetime) -> str | None:
    """Make the redacted copy the recording's audio; the key of the audio it replaces, to delete after the commit
    (None: nothing, or the unredacted audio kept)."""
    recording = recording_rows.by_id(session, recording_id)
    if recording is None:
        return None
    replaced, original = recording.blob_key, recording.original_blob_key
    if audio.keep_original and original is None and recording.audio_redaction != AudioRedaction.DONE:
        replaced, original = None, recording.blob_key  # the audio as uploaded: kept, never served
    recording_rows.replace_audio(session, recording_id, audio.key, "flac", audio.size_bytes, original, now)
    return replaced if replaced != audio.key else None


def _project_spec(ctx: Context, recording: Recording):
    project = scope.by_id(ctx, Project, recording.account, recording.project_id)
    return project.spec if project is not None else None


@dataclass(frozen=True)
class _Committed:
    replaced_audio: str | None  # the audio the redacted copy replaced, to delete


def _commit_completion(session: Session, claimed: Claimed, current: analysis_rows.Current, key: str,
                       completion: Completion, entries: search_index.SearchEntries, tracked: Prepared,
                       min_similarity: float, audio: RedactedAudio | None, project, now: datetime,
                       scoring: scorecards.Scoring) -> _Committed | None:
    """One transaction: the lease still ours, the analysis row, search entries and trackers matched, the scorecards'
    scores (reviewers' overrides kept), the recording's counters and redacted audio, the job's end, the event. None
    when the lease was lost."""
    if not jobs.holds_lease(session, claimed):
        return None
    if not analysis_rows.store(session, claimed.recording_id, current.version, key, completion.results, now):
        return None  # written meanwhile by another owner: ours is stale
    search.index(session, claimed.recording_id, entries.call, entries.vectors)
    trackers.record_call(session, claimed.recording_id, current.recording.account, current.recording.project_id,
                         tracked.matchers, tracked.digest, min_similarity)
    scored = scorecards.store_scores(session, claimed.recording_id, scoring)
    replaced = _swap_audio(session, claimed.recording_id, audio, now) if audio is not None else None
    jobs.move_recording(session, claimed.recording_id, claimed.kind, {
        "status": RecordingStatus.COMPLETED, "status_reason": None, "stage": "done", "progress": 100,
        "dialogues_count": completion.dialogues_count, "pauses_detected": completion.pauses_detected,
        "goals_evaluated": completion.goals_evaluated, "quality_score": completion.quality_score, "updated_at": now})
    trend_sums.record(session, claimed.recording_id, completion.figures)
    if not jobs.finish(session, claimed, "done", now):
        raise jobs.IllegalTransition("lease lost inside the completion transaction")
    recording = recording_rows.by_id(session, claimed.recording_id)
    if recording is not None:  # moved above, in this transaction: it is there
        readouts = {**completion.readouts, "scorecards": [c.model_dump(mode="json") for c in scored]}
        enqueue_recording_analyzed(session, recording=recording, project=project, readouts=readouts, now=now)
    return _Committed(replaced)


async def complete(ctx: Context, claimed: Claimed, completion: Completion, redacted_audio_key: str | None = None
                   ) -> bool:
    """Store a finished analysis (and the redacted copy of its audio the work stored under ``redacted_audio_key``)
    and complete its recording; False (nothing written) when the lease was lost."""
    current = await ctx.catalog.read(analysis_rows.current, claimed.recording_id)
    written = [redacted_audio_key] if redacted_audio_key else []
    if current is None:
        await _delete(ctx, written)
        return False  # the recording was deleted meanwhile (its job went with it)
    recording = current.recording
    audio = None
    if redacted_audio_key is not None:
        size = await ctx.blobs.size(redacted_audio_key)
        if size is None:
            raise RuntimeError("the redacted copy of the audio was not stored")
        audio = RedactedAudio(redacted_audio_key, size, ctx.settings.redaction_keep_original_audio)
    key = transcript_key(recording.account, recording.public_id, current.version + 1)
    written.append(key)
    async with ctx.blobs.writer(key) as writer:
        await writer.write(json.dumps(completion.transcript, separators=(",", ":")).encode())
        await writer.commit()
    project = _project_spec(ctx, recording)
    completion, scoring = scorecards.scored(ctx, recording, completion)
    try:
        entries = await search_index.entries(ctx, completion.results, completion.transcript, recording.language)
        tracked = await of_project(ctx, project)
    except BaseException:
        await _delete(ctx, written)
        raise
    # Shielded: a dispatcher stopped now (its task cancelled) cannot tell whether the transaction, running on in its
    # thread, committed; the blobs are kept then (the orphan sweep removes them if it did not), never deleted under a
    # catalog that names them.
    commit = asyncio.ensure_future(ctx.catalog.write(
        _commit_completion, claimed, current, key, completion, entries, tracked, ctx.settings.search_min_similarity,
        audio, project, ctx.clock(), scoring))
    try:
        committed = await asyncio.shield(commit)
    except asyncio.CancelledError:
        raise
    except Exception:
        await _delete(ctx, written)
        raise
    if committed is None:
        await _delete(ctx, written)
        LEASE_LOSSES.inc()
        log.warning("analysis_discarded_lease_lost", job_id=claimed.id, recording_id=claimed.recording_id)
        return False
    if current.transcript_key and current.transcript_key != key:
        await ctx.blobs.delete(current.transcript_key)
    if claimed.kind == jobs.ANALYZE:  # only a first analysis shows its transcript early
        await draft_transcripts.drop(ctx, recording)
    if committed.replaced_audio is not None:
        await ctx.blobs.delete(committed.replaced_audio)
    for entity, spans in completion.redactions.items():
        REDACTIONS.labels(entity=entity).inc(spans)
    _count_completed(claimed, recording, ctx.clock())
    log.info("recording_analyzed", recording_id=claimed.recording_id, public_id=recording.public_id,
             version=current.version + 1, kind=claimed.kind, attempts=claimed.attempts, redacted=completion.redactions)
    return True


def _count_completed(claimed: Claimed, recording: Recording, now: datetime) -> None:
    """The metrics of a stored analysis, counted once, by the dispatcher whose transaction committed it."""
    JOBS_COMPLETED.labels(claimed.kind).inc()
    JOB_ATTEMPTS.observe(claimed.attempts)
    if claimed.kind == jobs.ANALYZE:  # a re-analysis's upload is long past: its wait says nothing
        UPLOAD_TO_COMPLETED.observe((now - recording.created_at).total_seconds())
    account = account_label(recording.account)
    RECORDINGS_ANALYZED.labels(account).inc()
    AUDIO_ANALYZED.labels(account).inc(recording.duration_ms / 1000)


async def _delete(ctx: Context, keys: list[str]) -> None:
    for key in keys:
        await ctx.blobs.delete(key)


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
    session.refresh(recording)  # as moved, for the event
    enqueue_recording_analyzed(session, recording=recording, project=project, readouts=None, now=now)
    return True


async def fail(ctx: Context, claimed: Claimed, reason: str, cause: str = "error") -> bool:
    """End the job and fail its recording with ``reason`` (one line a user can read), counted under ``cause`` (one of
    metrics.FAILURE_REASONS); False when the lease was lost."""
    reason = " ".join(reason.split())[:2000] or "analysis failed"
    current = await ctx.catalog.read(analysis_rows.current, claimed.recording_id)
    project = _project_spec(ctx, current.recording) if current else None
    done = await ctx.catalog.write(_commit_failure, claimed, reason, project, ctx.clock())
    if current is not None and claimed.kind == jobs.ANALYZE:
        await draft_transcripts.drop(ctx, current.recording)
    if done:
        JOBS_FAILED.labels(claimed.kind, cause).inc()
        JOB_ATTEMPTS.observe(claimed.attempts)
        log.info("recording_failed", recording_id=claimed.recording_id, kind=claimed.kind, reason=reason)
    return done
